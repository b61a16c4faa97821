// `perfloom tune --gemm M,N,K --dtype DT --gpu ID [--top K] [--json]` (CONTRACT.md): ranked tile
// configurations with predicted latency, waves, last-wave fill and the reason, from the wave
// tuner (model/tuner/). `perfloom tune --plan --dtype DT --gpu ID [--out PLAN.csv]` writes the
// sparse sampling plan along wave boundaries for the collector; with `--gemm M,N,K` (repeatable) and
// `--top K` (default 3 there) `--plan` writes those GEMMs' first K configurations as a collector plan
// instead, to time them on the GPU and keep the fastest.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"
#include "model/tuner/sampling_plan.h"
#include "model/learned_predictor.h"
#include "model/tuner/tuner.h"

namespace perfloom::app {

namespace {

// "4096,4096,4096" (also 4096x4096x4096) into M, N, K.
std::optional<std::array<int64_t, 3>> parseGemm(const QString& text) {
  QString t = text;
  t.replace('x', ',').replace('X', ',');
  const QStringList parts = t.split(',');
  if (parts.size() != 3) return std::nullopt;
  std::array<int64_t, 3> v{};
  for (int i = 0; i < 3; ++i) {
    bool ok = false;
    v[static_cast<std::size_t>(i)] = parts[i].trimmed().toLongLong(&ok);
    if (!ok || v[static_cast<std::size_t>(i)] <= 0) return std::nullopt;
  }
  return v;
}

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

std::string cublasTile(const TileConfig& t) { return std::to_string(t.tile_n) + "x" + std::to_string(t.tile_m); }
std::string cublasCluster(const TileConfig& t) {
  return std::to_string(std::max(1, t.cluster_n)) + "x" + std::to_string(std::max(1, t.cluster_m)) + "x1";
}

int usage(const std::string& why) {
  std::cerr << "perfloom tune: " << why
            << "\n  perfloom tune --gemm M,N,K --dtype DT --gpu ID [--top K] [--json]"
               "\n  perfloom tune --gemm M,N,K [--gemm M,N,K ...] --dtype DT --gpu ID [--top K] --plan [--out PLAN.csv]"
               "\n  perfloom tune --plan --dtype DT --gpu ID [--out PLAN.csv]\n";
  return 2;
}

int runPlan(CliContext& ctx, const QCommandLineParser& args, const GpuSpec& gpu, Dtype dtype) {
  // The configurations to sample: those the GPU's table has seen win, or the analytical model's.
  std::vector<TileConfig> configs;
  std::string origin;
  const tuner::TunerTable* table = tuner::bundled_tuner_table(gpu);
  const tuner::GroupTable* group = nullptr;
  if (table)
    if (auto it = table->groups.find(tuner::dtype_group(dtype)); it != table->groups.end()) group = &it->second;
  if (group) {
    std::set<std::string> seen;
    auto add = [&](const TileConfig& c) {
      if (seen.insert(tuner::config_to_string(c)).second) configs.push_back(c);
    };
    // The most frequent winners first, then every bucket's best, second best, ...
    for (const auto& c : group->common) add(c);
    for (std::size_t rank = 0;; ++rank) {
      bool any = false;
      for (const auto& [key, list] : group->buckets)
        if (rank < list.size()) {
          add(list[rank]);
          any = true;
        }
      if (!any) break;
    }
    origin = "the configurations that won in " + gpu.id + "'s tuner table";
  } else {
    configs = gemm_tile_candidates(gpu, dtype);
    origin = "the analytical model's candidate tiles (no " + gpu.id + " table for this dtype)";
  }
  const auto max_configs = static_cast<std::size_t>(cliInteger(args, "max-configs", 64, 1));
  if (configs.size() > max_configs) configs.resize(max_configs);
  tuner::PlanOptions opt;
  opt.max_waves = static_cast<int>(cliInteger(args, "max-waves", opt.max_waves, 1));
  const auto plan = tuner::plan_wave_samples(gpu, dtype, configs, opt, table ? table->slots_by_cluster : tuner::SlotsByCluster{});
  const std::string csv = tuner::plan_to_csv(plan);
  if (args.isSet("out")) {
    std::ofstream os(args.value("out").toStdString());
    if (!os) throw std::runtime_error(args.value("out").toStdString() + ": cannot be written");
    os << csv;
  } else {
    std::cout << csv;
  }
  std::cerr << "perfloom tune: " << plan.size() << " points for " << configs.size() << " configurations (" << origin
            << "), " << opt.k_iters.size() << " K-loop lengths at " << opt.max_waves << " wave boundaries each\n";
  (void)ctx;
  return 0;
}

// `--plan` with `--gemm` (one or more): each GEMM's first `top` configurations, with the custom option
// the table names, as a collector plan (sampling_plan.h timing_plan): three runs per GEMM on the GPU
// (`perfloom-collect --sweep plan`) instead of an exhaustive search.
int runTopPlan(const QCommandLineParser& args, const GpuSpec& gpu, Dtype dtype, std::size_t top) {
  std::vector<tuner::GemmShape> shapes;
  for (const QString& g : args.values("gemm")) {
    const auto mnk = parseGemm(g);
    if (!mnk) return usage("--gemm wants three positive integers M,N,K, got '" + g.toStdString() + "'");
    shapes.push_back({(*mnk)[0], (*mnk)[1], (*mnk)[2], dtype});
  }
  const tuner::TunerTable* table = tuner::bundled_tuner_table(gpu);
  std::shared_ptr<const KernelPredictor> predictor;
  std::string warning;
  if (tuner::ranks_with_learned_predictor(table, gpu, dtype)) predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom tune: " << warning << "\n";
  std::vector<tuner::PlanPoint> points;
  std::string method;
  for (const auto& shape : shapes) {
    const tuner::TuneResult r = tuner::tune_gemm(shape, gpu, top, table, predictor.get());
    method = r.method;
    for (auto& p : tuner::timing_plan(shape, r.ranked, top)) points.push_back(std::move(p));
  }
  const std::string csv = tuner::plan_to_csv(points);
  const std::string out = args.isSet("out") ? args.value("out").toStdString() : std::string();
  if (!out.empty()) {
    std::ofstream os(out);
    if (!(os << csv)) throw std::runtime_error(out + ": cannot be written");
  } else {
    std::cout << csv;
  }
  const std::string file = out.empty() ? "PLAN.csv" : out;
  std::cerr << "perfloom tune: " << points.size() << " configurations of " << shapes.size() << " GEMM" << (shapes.size() == 1 ? "" : "s")
            << " on " << gpu.id << " (the first " << top << " of each, method " << method
            << ", with the custom options named), a collector plan; time them on the GPU with\n"
               "  perfloom-collect --sweep plan --plan "
            << file << " --heuristic-n 1 --repeat 3 --out timed.csv\n"
               "and keep each GEMM's fastest (its rows' source names the configuration and its rank, \"tune K\")\n";
  return 0;
}

}  // namespace

int cmdTune(CliContext& ctx, const QCommandLineParser& args) {
  const bool plan = args.isSet("plan");
  if (!plan && !args.isSet("gemm")) return usage("needs --gemm M,N,K (or --plan)");
  if (!args.isSet("dtype")) return usage("needs --dtype (fp16, bf16, fp8e4m3, tf32, ...)");
  if (!args.isSet("gpu")) return usage("needs --gpu ID; perfloom gpus lists the ids");
  const auto dtype = parse_dtype(args.value("dtype").toStdString());
  if (!dtype) return usage("unknown --dtype '" + args.value("dtype").toStdString() + "' (fp32 tf32 fp16 bf16 fp8e4m3 fp8e5m2 int8)");
  const GpuSpec* gpu = nullptr;
  try {
    gpu = &ctx.gpus.get(args.value("gpu").toStdString());
  } catch (const std::invalid_argument& e) {
    std::cerr << "perfloom tune: " << e.what() << "\n";
    return 2;
  }
  try {
    if (plan && args.isSet("gemm")) return runTopPlan(args, *gpu, *dtype, static_cast<std::size_t>(cliInteger(args, "top", 3, 1)));
    if (plan) return runPlan(ctx, args, *gpu, *dtype);
    const auto mnk = parseGemm(args.value("gemm"));
    if (!mnk) return usage("--gemm wants three positive integers M,N,K, got '" + args.value("gemm").toStdString() + "'");
    const int64_t top = cliInteger(args, "top", 5, 1);
    const tuner::GemmShape shape{(*mnk)[0], (*mnk)[1], (*mnk)[2], *dtype};
    // The learned models are loaded only where they rank (a tile-swept architecture without a table fit).
    const tuner::TunerTable* table = tuner::bundled_tuner_table(*gpu);
    std::shared_ptr<const KernelPredictor> predictor;
    std::string warning;
    if (tuner::ranks_with_learned_predictor(table, *gpu, shape.dtype)) predictor = make_default_predictor(&warning);
    if (!warning.empty()) std::cerr << "perfloom tune: " << warning << "\n";
    const tuner::TuneResult r = tuner::tune_gemm(shape, *gpu, static_cast<std::size_t>(top), table, predictor.get());
    if (ctx.json) {
      nlohmann::json j;
      j["gpu"] = gpu->id;
      j["gpu_name"] = gpu->name;
      j["gemm"] = {{"M", shape.M}, {"N", shape.N}, {"K", shape.K}, {"dtype", std::string(dtype_name(shape.dtype))}};
      j["method"] = r.method;
      j["note"] = r.note;
      j["ranked_by"] = r.ranked_by;
      j["configs"] = nlohmann::json::array();
      int rank = 1;
      for (const auto& c : r.ranked) {
        const TileConfig& t = c.config;
        nlohmann::json o = {{"rank", rank++},
                            {"config", tuner::config_to_string(t)},
                            {"tile_m", t.tile_m},
                            {"tile_n", t.tile_n},
                            {"tile_k", t.tile_k},
                            {"split_k", std::max(1, t.split_k)},
                            {"cluster_m", std::max(1, t.cluster_m)},
                            {"cluster_n", std::max(1, t.cluster_n)},
                            {"stages", t.stages},
                            {"cublaslt_tile", cublasTile(t)},
                            {"cublaslt_cluster", cublasCluster(t)},
                            {"pred_us", c.pred_us},
                            {"score", c.score},
                            {"rank_score", c.rank_score},
                            {"waves", c.grid.waves},
                            {"last_wave_fill", c.grid.last_wave_fill},
                            {"ctas", c.grid.ctas},
                            {"cluster_ctas", c.grid.cluster_ctas},
                            {"slots", c.grid.slot_count},
                            {"k_iters", c.grid.k_iters},
                            {"reason", c.reason}};
        if (c.class_samples >= 0) o["class_samples"] = c.class_samples;
        if (c.custom_option >= 0) {
          o["cublaslt_custom_option"] = c.custom_option;
          o["variant"] = c.variant;
        }
        j["configs"].push_back(o);
      }
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::cout << "GEMM " << shape.M << "x" << shape.N << "x" << shape.K << " " << dtype_name(shape.dtype) << " on " << gpu->id
              << " (" << gpu->name << "), method: " << r.method << "\n  " << r.note << "\n";
    // The custom option column where the table's variant model names one (variant_model.h).
    const bool options = std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& c) { return c.custom_option >= 0; });
    std::cout << std::left << std::setw(6) << "rank" << std::setw(15) << "tile MxNxK" << std::setw(7) << "split"
              << std::setw(9) << "cluster" << std::right << std::setw(11) << "pred_us" << std::setw(7) << "waves"
              << std::setw(7) << "fill" << (options ? "  option" : "") << "  reason\n";
    int rank = 1;
    for (const auto& c : r.ranked) {
      const TileConfig& t = c.config;
      std::cout << std::left << std::setw(6) << rank++
                << std::setw(15) << (std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + "x" + std::to_string(t.tile_k))
                << std::setw(7) << std::max(1, t.split_k)
                << std::setw(9) << (std::to_string(std::max(1, t.cluster_m)) + "x" + std::to_string(std::max(1, t.cluster_n)))
                << std::right << std::setw(11) << fixed(c.pred_us, 2) << std::setw(7) << c.grid.waves << std::setw(6)
                << static_cast<int>(std::lround(c.grid.last_wave_fill * 100)) << "%  ";
      if (options) std::cout << std::left << std::setw(8) << (c.custom_option >= 0 ? "c" + std::to_string(c.custom_option) : "-");
      std::cout << c.reason << "\n";
    }
    if (options) {
      std::map<int, std::string> shown;
      for (const auto& c : r.ranked)
        if (c.custom_option >= 0) shown[c.custom_option] = c.variant;
      std::string legend;
      for (const auto& [o, v] : shown) legend += (legend.empty() ? "" : "; ") + ("c" + std::to_string(o)) + (v.empty() ? "" : " " + v);
      std::cout << "(option: cuBLASLt's custom option to set, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, the kernel variant the\n"
                   " table's variant model predicts fastest; its kernels showed: " << legend << ")\n";
    }
    std::cout << "(tile and cluster in perfloom's orientation, M first; cuBLASLt names them N first: --json gives both)\n";
    if (r.ranked_by == "chooser")
      std::cout << "(ranked by the table's learned chooser, not by pred_us: configurations predicted within a few percent\n"
                   " of each other are a tie to time, not an order)\n";
    if (r.method == "wave-table")
      std::cout << "(cuBLASLt may refuse a configuration set on its first heuristic result and take it on a later one:\n"
                   " README, \"Running a tuner configuration with cuBLASLt\")\n";
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "perfloom tune: " << e.what() << "\n";
    return 2;
  } catch (const UnsupportedKernel& e) {
    std::cerr << "perfloom tune: " << e.what() << "\n";
    return 2;
  } catch (const tuner::TunerTableError& e) {
    std::cerr << "perfloom tune: tuner table unusable: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace perfloom::app
