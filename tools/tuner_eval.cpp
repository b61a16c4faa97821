// perfloom-tuner-eval: the timing plans and the check of a wave-tuner refit (model/tuner/).
//
// A refit of one GPU's table (resources/tuner/<gpu-id>.json.gz) goes round this loop, each plan timed on
// the GPU by tools/collector/run_plan_on_gpu.sh (tools/collector/README.md):
//
//   1. --lists-plan GPU OUT.csv COUNT SEED [--m-min M] [--m-max M]
//        a timed-lists round: at COUNT new random GEMMs per dtype the table fits, every configuration
//        `perfloom tune` ranks with the current table, each GEMM's list in a shuffled order, tagged
//        "table K" (K: its rank). Keep it as DIR/<gpu-id>/NAME_plan.csv(.gz), time it with
//        `run_plan_on_gpu.sh --plan NAME --repeat 2 --heuristic-n 8` and put NAME.csv.gz in
//        DIR/<gpu-id>/lists/, which perfloom-tuner-fit learns (tools/tuner_sweep.h read_lists).
//        --m-min / --m-max draw M log-uniform in that band (default 1 to 10,000).
//   2. perfloom-tuner-fit --out NEW_DIR GPU   refits the table with the new lists.
//   3. --tables-check-plan GPU OUT.csv COUNT SEED OLD.json[.gz] NEW.json[.gz]
//        the two tables side by side: at COUNT new random GEMMs per dtype, the first 3 `perfloom tune`
//        answers with each table (with the options it names), tagged "old K" and "refit K"; the two tables
//        take turns going first, GEMM by GEMM, since at large GEMMs what ran just before moves a latency.
//        Time it with `run_plan_on_gpu.sh --plan NAME --repeat 3 --heuristic-n 8`.
//   4. --acceptance-check GPU RUN.csv...
//        the acceptance model (model/tuner/acceptance_model.h) trained as perfloom-tuner-fit trains it, on
//        the plan runs of DIR/<gpu-id>/lists/ and lists_held/, scored on other plan runs (RUN.csv, e.g. the
//        side-by-side check of step 3, whose plan file lies in DIR/<gpu-id>/): the refused plan points it
//        predicts and the accepted ones it wrongly refuses; then, per table the run timed ("old", "refit":
//        the plan's tags), how often its first choice is within 3% of the fastest configuration timed at
//        the GEMM (a refused first choice counts as a miss), as timed and with the first choices the model
//        predicts refused moved behind the others. The "as timed" lines are the side-by-side score.
//
// Usage: perfloom-tuner-eval [--data DIR] MODE ...   (DIR: the measured data, default data)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "model/analysis.h"
#include "model/gpu_database.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/sampling_plan.h"
#include "model/tuner/tuner.h"
#include "tools/tuner_sweep.h"

using namespace perfloom;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: perfloom-tuner-eval [--data DIR] --lists-plan GPU OUT.csv COUNT SEED [--m-min M] [--m-max M]\n"
    "       perfloom-tuner-eval [--data DIR] --tables-check-plan GPU OUT.csv COUNT SEED OLD.json[.gz] NEW.json[.gz]\n"
    "       perfloom-tuner-eval [--data DIR] --acceptance-check GPU RUN.csv...\n"
    "  --lists-plan: every configuration `perfloom tune` ranks at COUNT random GEMMs per dtype (a timed-lists round)\n"
    "  --tables-check-plan: the first 3 of two tables at COUNT random GEMMs per dtype (a side-by-side check)\n"
    "  --acceptance-check: the acceptance model trained on DIR/GPU/lists/ and lists_held/, scored on the runs,\n"
    "                      and each table's first choice in them against the fastest timed\n";

// A timing plan to `out`, with one line on stderr: "OUT: N configurations <what>"; 1 where it cannot be written.
int write_plan(const fs::path& out, const std::vector<tuner::PlanPoint>& points, const std::string& what) {
  std::ofstream os(out);
  os << tuner::plan_to_csv(points);
  if (!os) {
    std::cerr << "perfloom-tuner-eval: cannot write " << out.string() << "\n";
    return 1;
  }
  std::cerr << out.string() << ": " << points.size() << " configurations " << what << "\n";
  return 0;
}

// `--lists-plan`: every configuration `perfloom tune` ranks at each GEMM (tune_gemm with the table in the resources,
// each with the option the variant model names), tagged "table K". The collector times a GEMM's points in the plan's
// order, and at large GEMMs what ran just before moves a latency by several percent, so each GEMM's list is written
// in a shuffled order (std::mt19937(seed)): the timing position does not follow the table's ranking, which the labels
// would otherwise learn. The tags keep the rank.
int lists_plan(const GpuSpec& gpu, const fs::path& out, int count, unsigned seed, double m_min, double m_max) {
  const tuner::TunerTable* table = tuner::bundled_tuner_table(gpu);
  if (!table) {
    std::cerr << "perfloom-tuner-eval: no bundled table for " << gpu.id << "\n";
    return 1;
  }
  const std::vector<tuner::GemmShape> gemms =
      bench::random_gemms(bench::table_dtypes(*table), count, seed, m_min, m_max);
  std::mt19937 order(seed);
  std::vector<tuner::PlanPoint> points;
  for (const auto& shape : gemms) {
    const tuner::TuneResult r = tuner::tune_gemm(shape, gpu, SIZE_MAX, table);
    auto list = tuner::timing_plan(shape, r.ranked, r.ranked.size(), "table");
    std::shuffle(list.begin(), list.end(), order);
    for (auto& p : list) points.push_back(std::move(p));
  }
  return write_plan(out, points,
                    "of " + std::to_string(gemms.size()) + " random GEMMs (seed " + std::to_string(seed) +
                        (m_min > 1 ? ", M from " + std::to_string(std::llround(m_min)) : std::string()) +
                        (m_max < 10000 ? ", M to " + std::to_string(std::llround(m_max)) : std::string()) + ")");
}

// `--tables-check-plan`: per GEMM the first 3 `perfloom tune` answers with each table (tune_gemm, with the options it
// names), tagged "old K" and "refit K". The two tables take turns going first (random_gemms interleaves the dtypes,
// so each dtype's GEMMs alternate too).
int tables_check_plan(const GpuSpec& gpu, const fs::path& out, int count, unsigned seed, const std::string& old_file,
                      const std::string& new_file) {
  const tuner::TunerTable old_table = tuner::parse_tuner_table(bench::read_text(old_file), old_file);
  const tuner::TunerTable new_table = tuner::parse_tuner_table(bench::read_text(new_file), new_file);
  tuner::check_table_matches(old_table, gpu);
  tuner::check_table_matches(new_table, gpu);
  std::vector<tuner::PlanPoint> points;
  const auto gemms = bench::random_gemms(bench::table_dtypes(old_table), count, seed);
  using Labelled = std::pair<std::string, const tuner::TunerTable*>;
  const std::size_t dtypes = bench::table_dtypes(old_table).size();
  for (std::size_t g = 0; g < gemms.size(); ++g) {
    std::vector<Labelled> turns{{"old", &old_table}, {"refit", &new_table}};
    if ((g / dtypes) % 2 == 1) std::swap(turns[0], turns[1]);
    for (const auto& [label, table] : turns) {
      const tuner::TuneResult r = tuner::tune_gemm(gemms[g], gpu, 3, table);
      for (auto& p : tuner::timing_plan(gemms[g], r.ranked, 3, label)) points.push_back(std::move(p));
    }
  }
  return write_plan(out, points,
                    "of " + std::to_string(gemms.size()) + " random GEMMs (seed " + std::to_string(seed) + ")");
}

// `--acceptance-check`: see the top of this file. A configuration's latency at a GEMM is the median of all its
// repetitions there, whichever table listed it; the fastest is the least such median over everything timed at the
// GEMM (cuBLASLt's own heuristic results included). The wave features use the bundled table's measured slots.
int acceptance_check(const GpuSpec& gpu, const fs::path& dir, const std::vector<std::string>& runs) {
  const tuner::TunerTable* table = tuner::bundled_tuner_table(gpu);
  if (!table) {
    std::cerr << "perfloom-tuner-eval: no bundled table for " << gpu.id << "\n";
    return 1;
  }
  const std::vector<fs::path> test_runs(runs.begin(), runs.end());
  const bench::AcceptanceData train = bench::read_acceptance(dir, bench::acceptance_runs(dir));
  const tuner::AcceptanceModel model = tuner::fit_acceptance_model(train.samples, gpu, table->slots_by_cluster);
  std::cout << gpu.id << ": acceptance model on " << model.points << " plan points of " << train.files.size()
            << " runs (" << model.refused << " refused)\n";
  if (!model.booster) {
    std::cerr << "perfloom-tuner-eval: too few refused or accepted points to train on\n";
    return 1;
  }
  auto features = [&](const tuner::GemmShape& shape, const TileConfig& c) {
    return tuner::wave_features(shape, c, hardware_rates(gpu, shape.dtype), table->slots_by_cluster);
  };
  auto p_refused = [&](const tuner::GemmShape& shape, const TileConfig& c) {
    return tuner::refusal_probabilities(model, shape, {c}, {features(shape, c)}).front();
  };
  const bench::AcceptanceData test = bench::read_acceptance(dir, test_runs);
  for (const auto& m : test.missing_plans) std::cerr << "perfloom-tuner-eval: no plan file: " << m << "\n";
  std::vector<std::pair<double, bool>> scored;  // (p, refused)
  for (const auto& s : test.samples) scored.emplace_back(p_refused(s.shape, s.config), !s.accepted);
  std::size_t refused = 0;
  for (const auto& [p, r] : scored) refused += r;
  // AUC: the share of (refused, accepted) pairs the model orders right (ties: half).
  std::vector<std::pair<double, bool>> sorted = scored;
  std::sort(sorted.begin(), sorted.end());
  double rank_sum = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j].first == sorted[i].first) ++j;
    const double mid = 0.5 * static_cast<double>(i + j + 1);
    for (std::size_t k = i; k < j; ++k)
      if (sorted[k].second) rank_sum += mid;
    i = j;
  }
  const double n1 = static_cast<double>(refused), n0 = static_cast<double>(scored.size() - refused);
  std::cout << "held out: " << scored.size() << " plan points of " << test.files.size() << " runs, " << refused
            << " refused; AUC " << std::fixed << std::setprecision(3) << (rank_sum - n1 * (n1 + 1) / 2) / (n1 * n0)
            << "\n";
  for (double thr : {0.3, 0.5, 0.7}) {
    std::size_t caught = 0, false_alarms = 0;
    for (const auto& [p, r] : scored) {
      if (p >= thr && r) ++caught;
      if (p >= thr && !r) ++false_alarms;
    }
    std::cout << "  threshold " << std::setprecision(1) << thr << ": refused points predicted refused " << caught
              << " of " << refused << ", accepted points predicted refused " << false_alarms << " of "
              << scored.size() - refused << "\n";
  }
  // The first choices.
  using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t>;
  struct Count {
    std::size_t shapes = 0, refused = 0, within = 0, moved = 0;
  };
  std::map<std::string, std::map<double, Count>> by_label;  // label -> threshold (0: as timed) -> counts
  for (const auto& run : test_runs) {
    const bench::Sweep sweep = bench::read_sweep(run.string());
    std::map<ShapeKey, std::map<std::string, std::vector<double>>> lat;  // shape -> identity -> latencies
    for (const auto& r : sweep.rows) {
      const ShapeKey k{static_cast<int>(r.sample.shape.dtype), r.sample.shape.M, r.sample.shape.N, r.sample.shape.K};
      const std::string config = bench::plan_point_config(r.source);
      const std::string id = config.empty() ? "h" + std::to_string(r.sample.heuristic_rank) : config;
      lat[k][id].push_back(r.sample.latency_us);
    }
    std::map<ShapeKey, std::map<std::string, std::map<int, std::string>>> lists;  // shape -> label -> rank -> config
    for (const fs::path& plan : bench::run_plan_files(dir, sweep)) {
      if (!fs::exists(plan)) continue;  // named above (missing_plans)
      for (const bench::PlanRow& row : bench::read_plan_rows(plan)) {
        std::istringstream tags(row.why);
        std::string tag;
        while (std::getline(tags, tag, ';')) {
          std::istringstream t(tag);
          std::string label;
          int rank = 0;
          if (t >> label >> rank && rank >= 1) lists[row.shape][label][rank] = row.config;
        }
      }
    }
    for (const auto& [shape, labels] : lists) {
      const auto at = lat.find(shape);
      if (at == lat.end()) continue;  // not reached
      std::map<std::string, double> med;
      double best = INFINITY;
      for (const auto& [id, v] : at->second) best = std::min(best, med[id] = bench::median(v));
      const auto& [dt, M, N, K] = shape;
      const tuner::GemmShape gs{M, N, K, static_cast<Dtype>(dt)};
      for (const auto& [label, ranks] : labels) {
        if (!ranks.count(1)) continue;
        std::vector<double> p;  // per listed configuration, in rank order
        for (const auto& [rank, config] : ranks) p.push_back(p_refused(gs, tuner::config_from_string(config)));
        for (double thr : {0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}) {
          std::string first = ranks.at(1);
          if (thr > 0) {
            std::size_t i = 0;
            for (const auto& [rank, config] : ranks)
              if (p[i++] < thr) {
                first = config;
                break;
              }
          }
          Count& c = by_label[label][thr];
          ++c.shapes;
          c.moved += first != ranks.at(1);
          const auto m = med.find(first);
          if (m == med.end())
            ++c.refused;
          else if (m->second <= 1.03 * best)
            ++c.within;
        }
      }
    }
  }
  for (const auto& [label, by_thr] : by_label)
    for (const auto& [thr, c] : by_thr) {
      std::cout << "first choice '" << label << "' "
                << (thr == 0 ? std::string("as timed") : "threshold " + std::to_string(thr).substr(0, 3)) << ": "
                << c.shapes << " GEMMs, moved " << c.moved << ", refused " << c.refused
                << ", within 3% of the fastest timed " << c.within << " (" << std::setprecision(1)
                << 100.0 * static_cast<double>(c.within) / static_cast<double>(c.shapes) << "%)\n";
    }
  return 0;
}

// COUNT as a positive number of GEMMs per dtype; 0, with the mode named on stderr, otherwise.
int parse_count(const char* text, const std::string& mode) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > 1000000) {
    std::cerr << "perfloom-tuner-eval: " << mode << ": COUNT must be a positive number of GEMMs per dtype, not '"
              << text << "'\n";
    return 0;
  }
  return static_cast<int>(v);
}

int run(int argc, char** argv) {
  fs::path data = fs::path("data");
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else
      break;
  }
  if (i >= argc) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string mode = argv[i];
  const std::vector<std::string> args(argv + i + 1, argv + argc);
  const GpuDatabase gpus = GpuDatabase::builtin();
  if (mode == "--lists-plan" && args.size() >= 4) {
    const int count = parse_count(args[2].c_str(), mode);
    if (count == 0) return 2;
    const unsigned seed = static_cast<unsigned>(std::strtoul(args[3].c_str(), nullptr, 10));
    double m_min = 1, m_max = 10000;
    for (std::size_t j = 4; j < args.size(); j += 2) {
      const std::string& flag = args[j];
      if ((flag != "--m-min" && flag != "--m-max") || j + 1 >= args.size()) {
        std::cerr << "perfloom-tuner-eval: --lists-plan: unexpected '" << flag << "'\n" << kUsage;
        return 2;
      }
      char* end = nullptr;
      const double v = std::strtod(args[j + 1].c_str(), &end);
      if (end == args[j + 1].c_str() || *end != '\0' || !(v >= 1 && v <= 10000)) {
        std::cerr << "perfloom-tuner-eval: --lists-plan: " << flag << " must be a number from 1 to 10,000, not '"
                  << args[j + 1] << "'\n";
        return 2;
      }
      (flag == "--m-min" ? m_min : m_max) = v;
    }
    if (!(m_min < m_max)) {
      std::cerr << "perfloom-tuner-eval: --lists-plan: --m-min (" << m_min << ") must be below --m-max (" << m_max
                << ")\n";
      return 2;
    }
    return lists_plan(gpus.get(args[0]), args[1], count, seed, m_min, m_max);
  }
  if (mode == "--tables-check-plan" && args.size() == 6) {
    const int count = parse_count(args[2].c_str(), mode);
    if (count == 0) return 2;
    const unsigned seed = static_cast<unsigned>(std::strtoul(args[3].c_str(), nullptr, 10));
    return tables_check_plan(gpus.get(args[0]), args[1], count, seed, args[4], args[5]);
  }
  if (mode == "--acceptance-check" && args.size() >= 2)
    return acceptance_check(gpus.get(args[0]), data / args[0], std::vector<std::string>(args.begin() + 1, args.end()));
  std::cerr << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "perfloom-tuner-eval: " << e.what() << "\n";
    return 1;
  }
}
