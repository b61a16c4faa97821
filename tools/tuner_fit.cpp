// perfloom-tuner-fit: fits the wave tuner's tables (model/tuner/) from the collector's cuBLASLt
// tile-configuration measurements and writes resources/tuner/<gpu-id>.json.gz, which perfloom reads
// at run time (model/resources.h).
//
// Usage: perfloom-tuner-fit [--data DIR] [--out DIR] [--csv NAME]... [--tiles-only] [--no-picks] [--no-lists]
//                           [--no-variants | --variants-only] [--no-acceptance | --acceptance-only]
//                           [--dump-ranker DIR] [GPU-ID...]
//   --data DIR  the measured data (default: data)
//   --out DIR   where the tables go (default: resources/tuner)
//   --csv NAME  a file of DIR/<gpu-id>/ in the tiles.csv format to fit on; repeat it to fit on
//               several together (then none of the default files below is read).
//   Default files of DIR/<gpu-id>/, each where it exists:
//     tiles.csv and tiles_more/*.csv   the exhaustive tile sweeps (`perfloom-collect --sweep tiles
//               [--seed S]`); a shape measured by two of them keeps the first file's rows
//               (tools/tuner_sweep.h read_exhaustive). --tiles-only: tiles.csv alone.
//     tiles_plan.csv   the points of the sparse sampling plan (`perfloom-collect --sweep plan`).
//     tuner_picks.csv and picks/*.csv   re-measurements of the table path's own first three at the
//               exhaustive shapes, learned where the sweep did not measure them (read_picks).
//               --no-picks leaves them out.
//     lists/*.csv   timed query lists at new shapes (`perfloom-tuner-eval --lists-plan`, timed by
//               tools/collector/run_plan_on_gpu.sh; read_lists). --no-lists leaves them out.
//     variants.csv   configurations timed with every cuBLASLt custom option they accept
//               (`run_plan_on_gpu.sh --variants`): the table's variant model
//               (model/tuner/variant_model.h). --no-variants leaves it out; --variants-only refits
//               only the variant model of the table already in --out.
//     lists/, lists_held/ and their plans (NAME_plan.csv, named in each run's `# plan_files=`):
//               which planned configurations cuBLASLt refused at which shapes, the table's
//               acceptance model (model/tuner/acceptance_model.h; read_acceptance).
//               --no-acceptance leaves it out; --acceptance-only refits only the acceptance model
//               of the table already in --out.
//   --dump-ranker DIR  also write DIR/<gpu-id>_ranker_groups.csv: every query group the chooser is
//               trained on, its inputs as the fit computes them (tools/tuner_sweep.h write_ranker_group).
//   GPU-ID      the GPUs to fit (default: every folder of DIR with the first file)
// The fit is deterministic: the rows enter in file order (the files in the order given).
// Only nvjet rows (cuBLASLt's sm90 kernels) enter the fit: the other algorithms a sweep also
// measures (magma SIMT, CUTLASS sm80) are not modelled.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <tuple>

#include "model/compressed_text.h"
#include "model/gpu_database.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/tuner_fit.h"
#include "model/tuner/variant_model.h"
#include "tools/tuner_sweep.h"

using namespace perfloom;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  fs::path data = fs::path("data");
  fs::path out = fs::path("resources/tuner");
  fs::path dump_ranker;
  std::vector<std::string> ids;
  std::vector<std::string> csv_names;
  bool csv_given = false, with_more = true, with_picks = true, with_lists = true, with_variants = true,
       variants_only = false, with_acceptance = true, acceptance_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--dump-ranker" && i + 1 < argc)
      dump_ranker = argv[++i];
    else if (a == "--tiles-only")
      with_more = false;
    else if (a == "--no-picks")
      with_picks = false;
    else if (a == "--no-lists")
      with_lists = false;
    else if (a == "--no-variants")
      with_variants = false;
    else if (a == "--variants-only")
      variants_only = true;
    else if (a == "--no-acceptance")
      with_acceptance = false;
    else if (a == "--acceptance-only")
      acceptance_only = true;
    else if (a == "--csv" && i + 1 < argc) {
      csv_names.push_back(argv[++i]);
      csv_given = true;
    } else if (a == "-h" || a == "--help") {
      std::cout
          << "perfloom-tuner-fit [--data DIR] [--out DIR] [--csv NAME]... [--tiles-only] [--no-picks] [--no-lists]\n"
             "                   [--no-variants | --variants-only] [--no-acceptance | --acceptance-only]\n"
             "                   [--dump-ranker DIR] [GPU-ID...]\n"
             "  default: fit on DIR/<gpu>/tiles.csv and DIR/<gpu>/tiles_plan.csv (where it exists) together;\n"
             "  --tiles-only: DIR/<gpu>/tiles.csv alone as the exhaustive sweep (default: also tiles_more/*.csv)\n"
             "  --no-picks: without DIR/<gpu>/tuner_picks.csv and picks/, the table path's measured choices (default: "
             "with them)\n"
             "  --no-lists: without DIR/<gpu>/lists/, the timed query lists at new shapes (default: with them)\n"
             "  --no-variants: without the variant model (default: fitted on DIR/<gpu>/variants.csv where it exists)\n"
             "  --variants-only: refit only the variant model of the table in --out\n"
             "  --no-acceptance: without the acceptance model (default: fitted on DIR/<gpu>/lists/, lists_held/ and "
             "their plans)\n"
             "  --acceptance-only: refit only the acceptance model of the table in --out\n"
             "  --dump-ranker DIR: also write DIR/<gpu>_ranker_groups.csv, the chooser's training groups\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "perfloom-tuner-fit: unknown option " << a << "\n";
      return 2;
    } else
      ids.push_back(a);
  }
  if (!csv_given) csv_names = {"tiles.csv", "tiles_plan.csv"};
  if (ids.empty() && fs::is_directory(data))
    for (const auto& e : fs::directory_iterator(data))
      if (fs::exists(bench::data_file(e.path(), csv_names.front()))) ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end());
  if (ids.empty()) {
    std::cerr << "perfloom-tuner-fit: no " << (data / "<gpu-id>" / csv_names.front()).string() << " found\n";
    return 2;
  }
  try {
    const GpuDatabase gpus = GpuDatabase::builtin();
    fs::create_directories(out);
    // The variant model from DIR/<id>/variants.csv(.gz), where it exists (`slots` as the table's), and
    // what to add to the table's source about it.
    auto fit_variants = [&](const std::string& id, const GpuSpec& gpu, const tuner::SlotsByCluster& slots,
                            std::string& what) {
      tuner::VariantModel model;
      const fs::path file = bench::data_file(data / id, "variants.csv");
      if (!with_variants || !fs::exists(file)) return model;
      const bench::VariantData v = bench::read_variants(file.string());
      model = tuner::fit_variant_model(v.samples, gpu, slots);
      if (model.booster)
        what = "; data/" + id + "/" + file.filename().string() + ": variant model on " + std::to_string(model.points) +
               " (shape, configuration) points of " + std::to_string(v.shapes.size()) + " shapes";
      return model;
    };
    // Removes the part of a table's source that begins with `marker`, up to the next file's part ("; data/")
    // or the end: what --variants-only and --acceptance-only replace.
    auto drop_source_part = [](std::string& source, const std::string& marker) {
      const auto at = source.find(marker);
      if (at == std::string::npos) return;
      const auto next = source.find("; data/", at + 2);
      source.erase(at, next == std::string::npos ? std::string::npos : next - at);
    };
    // The acceptance model from the plan runs of DIR/<id>/lists/ and lists_held/ (read_acceptance; `slots` as the
    // table's), and what to add to the table's source about it.
    auto fit_acceptance = [&](const std::string& id, const GpuSpec& gpu, const tuner::SlotsByCluster& slots,
                              std::string& what) {
      tuner::AcceptanceModel model;
      if (!with_acceptance) return model;
      const bench::AcceptanceData a = bench::read_acceptance(data / id, bench::acceptance_runs(data / id));
      for (const auto& m : a.missing_plans)
        std::cerr << "perfloom-tuner-fit: no plan file, run left out of the acceptance model: " << m << "\n";
      model = tuner::fit_acceptance_model(a.samples, gpu, slots);
      if (model.booster)
        what = "; data/" + id + "/lists/ and lists_held/: acceptance model on " + std::to_string(model.points) +
               " plan points of " + std::to_string(a.files.size()) + " runs, " + std::to_string(model.refused) +
               " refused by cuBLASLt";
      return model;
    };
    auto write_table = [&](const std::string& id, const tuner::TunerTable& table) {
      const fs::path file = out / (id + ".json.gz");
      std::ofstream os(file, std::ios::binary);
      if (!os) throw std::runtime_error(file.string() + ": cannot be written");
      os << gzip_text(tuner::tuner_table_to_json(table));
      if (!os.flush()) throw std::runtime_error(file.string() + ": cannot be written");
      return file;
    };
    for (const auto& id : ids) {
      const GpuSpec& gpu = gpus.get(id);
      // --variants-only / --acceptance-only: that model of the table in --out refitted, the rest kept as it is.
      if (variants_only || acceptance_only) {
        const fs::path file = out / (id + ".json.gz");
        tuner::TunerTable table = tuner::parse_tuner_table(bench::read_text(file.string()), file.string());
        tuner::check_table_matches(table, gpu);
        std::string what;
        if (variants_only) {
          table.variants = fit_variants(id, gpu, table.slots_by_cluster, what);
          drop_source_part(table.source, "; data/" + id + "/variants.csv");
          std::cout << id << ": variant model on " << table.variants.points << " points\n";
        }
        if (acceptance_only) {
          std::string accepted_what;
          table.acceptance = fit_acceptance(id, gpu, table.slots_by_cluster, accepted_what);
          drop_source_part(table.source, "; data/" + id + "/lists/ and lists_held/: acceptance model");
          what += accepted_what;
          std::cout << id << ": acceptance model on " << table.acceptance.points << " points ("
                    << table.acceptance.refused << " refused)\n";
        }
        table.source += what;
        std::cout << id << ": -> " << write_table(id, table).string() << "\n";
        continue;
      }
      std::vector<tuner::TunerSample> samples;
      std::set<std::tuple<int, int64_t, int64_t, int64_t>> all_shapes;
      std::string source;
      for (std::size_t f = 0; f < csv_names.size(); ++f) {
        const fs::path csv = bench::data_file(data / id, csv_names[f]);
        // The default's second file is optional; a file named with --csv is not.
        if (!csv_given && f > 0 && !fs::exists(csv)) continue;
        // The default's first file: every exhaustive sweep of the folder (tiles.csv alone with --tiles-only).
        const bench::Sweep sweep =
            !csv_given && f == 0 ? bench::read_exhaustive(data / id, with_more) : bench::read_sweep(csv.string());
        const std::vector<std::string> names =
            sweep.files.empty() ? std::vector<std::string>{csv_names[f]} : sweep.files;
        for (std::size_t part = 0; part < names.size(); ++part) {
          std::set<std::tuple<int, int64_t, int64_t, int64_t>> seen;
          std::size_t points = 0;
          for (const auto& r : sweep.rows) {
            if (!r.modelled || static_cast<std::size_t>(r.file) != part) continue;
            samples.push_back(r.sample);
            ++points;
            seen.emplace(static_cast<int>(r.sample.shape.dtype), r.sample.shape.M, r.sample.shape.N, r.sample.shape.K);
          }
          all_shapes.insert(seen.begin(), seen.end());
          const auto env = [&](const char* k) {
            auto it = sweep.environment.find(k);
            return it == sweep.environment.end() ? std::string("?") : it->second;
          };
          // The environment is the first file's (tiles.csv's); the extra sweeps name their file only.
          source += (source.empty() ? "" : "; ") +
                    ("data/" + id + "/" + names[part] + ": " + std::to_string(points) + " nvjet points of " +
                     std::to_string(seen.size()) + " shapes" +
                     (part == 0 ? ", cuBLASLt " + env("cublaslt_version") + ", " + env("date") : ""));
        }
        if (sweep.duplicate_shapes)
          source +=
              " (" + std::to_string(sweep.duplicate_shapes) + " shapes measured again by a later file: first kept)";
        // With the default files, unless --no-picks: the table path's own measured choices at the
        // exhaustive shapes (tools/tuner_sweep.h read_picks), configurations the sweep did not measure there.
        if (!csv_given && f == 0 && with_picks) {
          const auto picks = bench::read_picks(data / id, sweep);
          for (const auto& r : picks) samples.push_back(r.sample);
          if (!picks.empty())
            source += "; data/" + id + "/{" + bench::picks_files_present(data / id) +
                      "}: " + std::to_string(picks.size()) +
                      " measured choices of the table path outside the sweep's configurations";
        }
        // With the default files, unless --no-lists: the timed query lists at new shapes (read_lists).
        if (!csv_given && f == 0 && with_lists) {
          const auto lists = bench::read_lists(data / id, sweep);
          std::set<std::tuple<int, int64_t, int64_t, int64_t>> seen;
          for (const auto& r : lists) {
            samples.push_back(r.sample);
            seen.emplace(static_cast<int>(r.sample.shape.dtype), r.sample.shape.M, r.sample.shape.N, r.sample.shape.K);
          }
          all_shapes.insert(seen.begin(), seen.end());
          if (!lists.empty()) {
            std::string names;
            for (const auto& n : bench::lists_files(data / id)) names += (names.empty() ? "" : ", ") + n;
            source += "; data/" + id + "/{" + names + "}: " + std::to_string(lists.size()) +
                      " timed query-list points of " + std::to_string(seen.size()) + " new shapes";
          }
        }
      }
      const std::size_t shapes = all_shapes.size();
      std::string what;
      const tuner::SlotsByCluster slots =
          tuner::measured_slots(samples, gpu);  // the table's (fit_tuner_table measures the same)
      tuner::VariantModel variants = fit_variants(id, gpu, slots, what);
      tuner::FitOptions options;
      std::ofstream dump;
      const fs::path dump_file = dump_ranker / (id + "_ranker_groups.csv");
      if (!dump_ranker.empty()) {
        fs::create_directories(dump_ranker);
        dump.open(dump_file);
        if (!dump) throw std::runtime_error(dump_file.string() + ": cannot be written");
        dump.precision(7);
        bool header = true;
        options.on_ranker_group = [&](const tuner::FitOptions::RankerGroup& g) {
          bench::write_ranker_group(dump, g.shape, g.fold, g.configs, g.features, g.pred_us, g.score, g.ratio, header);
          header = false;
        };
      }
      tuner::TunerTable table = tuner::fit_tuner_table(samples, gpu, options, source + what);
      if (dump.is_open() && !dump.flush()) throw std::runtime_error(dump_file.string() + ": cannot be written");
      table.variants = std::move(variants);
      std::string accepted_what;
      table.acceptance = fit_acceptance(id, gpu, slots, accepted_what);
      table.source += accepted_what;
      const fs::path file = write_table(id, table);
      fs::remove(out / (id + ".json"));  // an uncompressed table of the same GPU would be read first (tuner_table.cpp)
      std::cout << id << ": " << samples.size() << " points, " << shapes << " shapes ->" << file.string() << " (";
      bool first = true;
      for (const auto& [g, gt] : table.groups) {
        std::cout << (first ? "" : "; ") << g << ": " << gt.classes.size() << " classes, " << gt.buckets.size()
                  << " buckets";
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
