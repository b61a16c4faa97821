// Fits the wave tuner's tables (model/tuner/) from the collector's cuBLASLt tile-configuration
// sweeps and writes resources/tuner/<gpu-id>.json, which the build embeds (model/CMakeLists.txt).
// Rebuild after running it so that `perfloom tune` picks the new tables up.
//
// Usage: perfloom-tuner-fit [--data DIR] [--out DIR] [--csv NAME] [GPU-ID...]
//   --data DIR  the measured data (default: bench/data); DIR/<gpu-id>/tiles.csv is read
//   --csv NAME  another file of DIR/<gpu-id>/ in the same format, e.g. tiles_plan.csv (the points
//               of a sampling plan, `perfloom-collect --sweep plan`)
//   --out DIR   where the tables go (default: resources/tuner)
//   GPU-ID      the GPUs to fit (default: every folder of DIR with a tiles.csv)
// Only nvjet rows (cuBLASLt's sm90 kernels) enter the fit: the other algorithms the sweep also
// measured (magma SIMT, CUTLASS sm80) never came within 3% of the best and are not modelled.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <tuple>

#include "bench/tuner_sweep.h"
#include "model/gpu_database.h"
#include "model/tuner/tuner_fit.h"

using namespace perfloom;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  fs::path data = fs::path(PERFLOOM_SOURCE_DIR) / "bench/data";
  fs::path out = fs::path(PERFLOOM_SOURCE_DIR) / "resources/tuner";
  std::vector<std::string> ids;
  std::string csv_name = "tiles.csv";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--csv" && i + 1 < argc) csv_name = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::cout << "perfloom-tuner-fit [--data DIR] [--out DIR] [--csv NAME] [GPU-ID...]\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "perfloom-tuner-fit: unknown option " << a << "\n";
      return 2;
    } else ids.push_back(a);
  }
  if (ids.empty() && fs::is_directory(data))
    for (const auto& e : fs::directory_iterator(data))
      if (fs::exists(e.path() / csv_name)) ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end());
  if (ids.empty()) {
    std::cerr << "perfloom-tuner-fit: no " << (data / "<gpu-id>" / csv_name).string() << " found\n";
    return 2;
  }
  try {
    const GpuDatabase gpus = GpuDatabase::builtin();
    fs::create_directories(out);
    for (const auto& id : ids) {
      const GpuSpec& gpu = gpus.get(id);
      const fs::path csv = data / id / csv_name;
      const bench::Sweep sweep = bench::read_sweep(csv.string());
      std::vector<tuner::TunerSample> samples;
      std::size_t shapes = 0;
      {
        std::set<std::tuple<int, int64_t, int64_t, int64_t>> seen;
        for (const auto& r : sweep.rows) {
          if (!r.modelled) continue;
          samples.push_back(r.sample);
          seen.emplace(static_cast<int>(r.sample.shape.dtype), r.sample.shape.M, r.sample.shape.N, r.sample.shape.K);
        }
        shapes = seen.size();
      }
      const auto env = [&](const char* k) {
        auto it = sweep.environment.find(k);
        return it == sweep.environment.end() ? std::string("?") : it->second;
      };
      const std::string source = "bench/data/" + id + "/" + csv_name + ": " + std::to_string(samples.size()) + " nvjet points of " +
                                 std::to_string(shapes) + " shapes, cuBLASLt " + env("cublaslt_version") + ", " +
                                 env("date");
      const tuner::TunerTable table = tuner::fit_tuner_table(samples, gpu, {}, source);
      const fs::path file = out / (id + ".json");
      std::ofstream os(file);
      if (!os) throw std::runtime_error(file.string() + ": cannot be written");
      os << tuner::tuner_table_to_json(table);
      std::cout << id << ": " << samples.size() << " points, " << shapes << " shapes ->" << file.string() << " (";
      bool first = true;
      for (const auto& [g, gt] : table.groups) {
        std::cout << (first ? "" : "; ") << g << ": " << gt.classes.size() << " classes, " << gt.buckets.size() << " buckets";
        first = false;
      }
      std::cout << "; slots by cluster size:";
      for (const auto& [cs, s] : table.slots_by_cluster) std::cout << " " << cs << "->" << s;
      std::cout << ")\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "perfloom-tuner-fit: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
