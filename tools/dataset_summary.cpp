// perfloom-dataset-summary: loads the public measured-kernel datasets (data/public by
// default) and prints how many kernels each (dataset, gpu, op, dtype) holds, then one line per file
// with its rows kept and skipped and the reasons. It streams, so memory stays small.
//
//   perfloom-dataset-summary [ROOT] [--files]
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/gpu_database.h"
#include "storage/public_datasets.h"

int main(int argc, char** argv) {
  std::filesystem::path root = std::filesystem::path("data/public");
  bool per_file = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--files")
      per_file = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [ROOT] [--files]\n  ROOT defaults to %s\n", argv[0], root.string().c_str());
      return 0;
    } else
      root = a;
  }
  try {
    const perfloom::GpuDatabase gpus = perfloom::GpuDatabase::builtin();
    using Key = std::tuple<std::string, std::string, std::string, std::string>;
    std::map<Key, std::size_t> counts;
    std::vector<perfloom::storage::DatasetLoadReport> reports;
    perfloom::storage::visit_public_datasets(
        root, gpus,
        [&](perfloom::storage::MeasuredKernel&& k) {
          ++counts[{k.dataset, k.gpu_id, std::string(perfloom::op_name(k.kernel.op)),
                    std::string(perfloom::dtype_name(k.kernel.dtype))}];
        },
        &reports);

    std::printf("%-64s %-16s %-14s %-8s %8s\n", "dataset", "gpu", "op", "dtype", "kernels");
    std::size_t total = 0;
    for (const auto& [key, n] : counts) {
      const auto& [dataset, gpu, op, dtype] = key;
      std::printf("%-64s %-16s %-14s %-8s %8zu\n", dataset.c_str(), gpu.c_str(), op.c_str(), dtype.c_str(), n);
      total += n;
    }
    std::size_t rows = 0, skipped = 0;
    for (const auto& r : reports) rows += r.rows, skipped += r.skipped;
    std::printf("\n%zu kernels from %zu rows of %zu files; %zu rows (or Vidur row-ops) skipped\n", total, rows,
                reports.size(), skipped);

    std::map<std::string, std::size_t> reasons;
    for (const auto& r : reports)
      for (const auto& [why, n] : r.skip_counts) reasons[why] += n;
    if (!reasons.empty()) std::printf("\nskipped, by reason:\n");
    for (const auto& [why, n] : reasons) std::printf("%8zu  %s\n", n, why.c_str());

    if (per_file) {
      std::printf("\n%8s %8s %8s  file\n", "rows", "kept", "skipped");
      for (const auto& r : reports) {
        std::printf("%8zu %8zu %8zu  %s\n", r.rows, r.kept, r.skipped,
                    std::filesystem::relative(r.file, root).string().c_str());
        for (const auto& why : r.skip_reasons) std::printf("%28s%s\n", "", why.c_str());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfloom-dataset-summary: %s\n", e.what());
    return 1;
  }
}
