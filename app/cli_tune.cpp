// `perfloom tune --gemm M,N,K --dtype DT --gpu ID [--top K] [--json]` (CONTRACT.md): ranked tile
// configurations with predicted latency, waves, last-wave fill and the reason, from the wave
// tuner (model/tuner/). `perfloom tune --plan --dtype DT --gpu ID [--out PLAN.csv]` writes the
// sparse sampling plan along wave boundaries for the collector; with `--gemm M,N,K` (repeatable) and
// `--top K` (default 3 there) `--plan` writes those GEMMs' first K configurations as a collector plan
// instead, to time them on the GPU and keep the fastest; `perfloom tune --timed FILE` reads that
// measurement back and names each GEMM's fastest. `perfloom tune --moe E,N,H,topk --dtype bf16|fp8|fp8-block
// --gpu ID [--tokens T,...] [--top K] [--json] [--out DIR]` ranks fused-MoE kernel configurations per
// token count (model/tuner/moe_tuner.h) and writes the configuration file vLLM and SGLang read.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"
#include "model/learned_predictor.h"
#include "model/tuner/moe_tuner.h"
#include "model/tuner/sampling_plan.h"
#include "model/tuner/tuner.h"
#include "storage/collector_csv.h"

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

// The learned models, loaded only where the query uses them (no table fit for the dtype: they rank a
// tile-swept architecture's candidates or scale the analytical ranking; tuner::uses_learned_predictor);
// null elsewhere. A loading problem is warned about.
std::shared_ptr<const KernelPredictor> rankingPredictor(const tuner::TunerTable* table, Dtype dtype) {
  if (!tuner::uses_learned_predictor(table, dtype)) return nullptr;
  std::string warning;
  std::shared_ptr<const KernelPredictor> predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom tune: " << warning << "\n";
  return predictor;
}

int usage(const std::string& why) {
  std::cerr
      << "perfloom tune: " << why
      << "\n  perfloom tune --gemm M,N,K --dtype DT --gpu ID [--top K] [--json]"
         "\n  perfloom tune --moe E,N,H,topk --dtype bf16|fp8|fp8-block --gpu ID [--tokens T,...] [--top K] [--json] "
         "[--out DIR]"
         "\n  perfloom tune --gemm M,N,K [--gemm M,N,K ...] --dtype DT --gpu ID [--top K] --plan [--out PLAN.csv]"
         "\n  perfloom tune --timed TIMED.csv [--json]   (perfloom-collect's measurement of such a plan)"
         "\n  perfloom tune --plan --dtype DT --gpu ID [--out PLAN.csv]\n";
  return 2;
}

// A plan CSV to --out (std::runtime_error naming the file when it cannot be written), else to stdout.
void writePlan(const QCommandLineParser& args, const std::string& csv) {
  if (!args.isSet("out")) {
    std::cout << csv;
    return;
  }
  const std::string out = args.value("out").toStdString();
  std::ofstream os(out);
  if (!(os << csv)) throw std::runtime_error(out + ": cannot be written");
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
  const auto plan =
      tuner::plan_wave_samples(gpu, dtype, configs, opt, table ? table->slots_by_cluster : tuner::SlotsByCluster{});
  writePlan(args, tuner::plan_to_csv(plan));
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
  const std::shared_ptr<const KernelPredictor> predictor = rankingPredictor(table, dtype);
  std::vector<tuner::PlanPoint> points;
  std::string method;
  for (const auto& shape : shapes) {
    const tuner::TuneResult r = tuner::tune_gemm(shape, gpu, top, table, predictor.get());
    method = r.method;
    for (auto& p : tuner::timing_plan(shape, r.ranked, top)) points.push_back(std::move(p));
  }
  writePlan(args, tuner::plan_to_csv(points));
  const std::string file = args.isSet("out") ? args.value("out").toStdString() : "PLAN.csv";
  std::cerr << "perfloom tune: " << points.size() << " configurations of " << shapes.size() << " GEMM"
            << (shapes.size() == 1 ? "" : "s") << " on " << gpu.id << " (the first " << top << " of each, method "
            << method
            << ", with the custom options named), a collector plan; time them on the GPU with\n"
               "  perfloom-collect --sweep plan --plan "
            << file
            << " --heuristic-n 1 --repeat 3 --out timed.csv\n"
               "and read each GEMM's fastest back with perfloom tune --timed timed.csv\n";
  return 0;
}

// `--timed FILE`: the collector's measurement of a timing plan (perfloom-collect --sweep plan --plan
// PLAN.csv, PLAN from `--gemm ... --plan`), per GEMM the fastest configuration timed, against the
// tuner's first choice and cuBLASLt's default (the plan's rows are "plan:CONFIG tune K ... [custom=C]",
// cuBLASLt's heuristic results "plan:heuristic"; the median of each one's repetitions).
int runTimed(CliContext& ctx, const QCommandLineParser& args) {
  const std::string path = args.value("timed").toStdString();
  struct Timed {
    std::string gpu;
    std::map<std::string, std::vector<double>> runs;  // "CONFIG cC" (tune K's) or "heuristic R"
    std::map<std::string, int> tune_rank;             // "CONFIG cC" -> K
  };
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, Timed>
      shapes;  // (dtype, M, N, K), file order kept below
  std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> order;
  storage::DatasetLoadReport report;
  storage::visit_collector_csv(
      path, ctx.gpus,
      [&](storage::MeasuredKernel&& m) {
        if (m.kernel.op != Op::gemm) return;
        auto field = [&](const std::string& key) {
          const std::size_t at = m.note.find(key + "=");
          if (at == std::string::npos) return std::string();
          const std::size_t from = at + key.size() + 1;
          return m.note.substr(from, m.note.find(';', from) - from);
        };
        const std::string source = field("source");
        if (source.rfind("plan:", 0) != 0) return;
        const std::tuple<std::string, int64_t, int64_t, int64_t> key{
            std::string(dtype_name(m.kernel.dtype)), m.kernel.shape.M, m.kernel.shape.N, m.kernel.shape.K};
        auto [it, fresh] = shapes.try_emplace(key);
        if (fresh) order.push_back(key);
        Timed& t = it->second;
        t.gpu = m.gpu_id;
        if (source.rfind("plan:heuristic", 0) == 0) {
          t.runs["heuristic " + field("heuristic_rank")].push_back(m.latency_us);
          return;
        }
        const std::string config = source.substr(5, source.find(' ', 5) - 5);
        const std::size_t tune = source.find(" tune ");
        if (tune == std::string::npos) return;  // another plan's configuration
        const std::size_t c = source.find(" custom=");
        const std::string name =
            config + (c == std::string::npos ? "" : " c" + source.substr(c + 8, source.find(' ', c + 8) - c - 8));
        t.runs[name].push_back(m.latency_us);
        t.tune_rank[name] = std::atoi(source.c_str() + tune + 6);
      },
      &report);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  nlohmann::json out = nlohmann::json::array();
  std::size_t with_tune = 0;
  for (const auto& key : order) {
    const Timed& t = shapes.at(key);
    if (t.tune_rank.empty()) continue;
    ++with_tune;
    std::string best, first;
    double best_us = INFINITY, first_us = NAN, default_us = NAN, heuristics_us = INFINITY;
    for (const auto& [name, runs] : t.runs) {
      const double us = median(runs);
      if (us < best_us) best_us = us, best = name;
      if (auto r = t.tune_rank.find(name); r != t.tune_rank.end() && r->second == 1) first_us = us, first = name;
      if (name == "heuristic 1") default_us = us;
      if (name.rfind("heuristic ", 0) == 0) heuristics_us = std::min(heuristics_us, us);
    }
    const auto& [dt, M, N, K] = key;
    nlohmann::json j = {{"gpu", t.gpu},
                        {"gemm", {{"M", M}, {"N", N}, {"K", K}, {"dtype", dt}}},
                        {"fastest", best},
                        {"fastest_us", best_us}};
    if (auto r = t.tune_rank.find(best); r != t.tune_rank.end()) j["fastest_tune_rank"] = r->second;
    if (std::isfinite(first_us)) j["first_choice"] = first, j["first_choice_us"] = first_us;
    if (std::isfinite(default_us)) j["cublaslt_default_us"] = default_us;
    if (std::isfinite(heuristics_us)) j["cublaslt_heuristics_fastest_us"] = heuristics_us;
    out.push_back(j);
  }
  if (with_tune == 0)
    throw std::invalid_argument(path +
                                ": no row of a timing plan (source \"plan:CONFIG tune K ...\"); time the plan of "
                                "`perfloom tune --gemm ... --plan` with perfloom-collect --sweep plan --plan PLAN.csv");
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  auto us = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) ? fixed(j[k].get<double>(), 2) : std::string("-");
  };
  std::cout << std::left << std::setw(9) << "gpu" << std::setw(9) << "dtype" << std::setw(22) << "M x N x K"
            << std::setw(36) << "fastest timed" << std::right << std::setw(10) << "us" << std::setw(12) << "first us"
            << std::setw(12) << "default us" << std::setw(10) << "vs dflt"
            << "\n";
  for (const auto& j : out) {
    const auto& g = j["gemm"];
    const std::string shape = std::to_string(g["M"].get<int64_t>()) + "x" + std::to_string(g["N"].get<int64_t>()) +
                              "x" + std::to_string(g["K"].get<int64_t>());
    std::string fastest = j["fastest"].get<std::string>();
    if (fastest.rfind("heuristic ", 0) == 0)
      fastest.insert(0, "cuBLASLt ");
    else if (j.contains("fastest_tune_rank"))
      fastest += " (tune " + std::to_string(j["fastest_tune_rank"].get<int>()) + ")";
    std::cout << std::left << std::setw(9) << j["gpu"].get<std::string>() << std::setw(9)
              << g["dtype"].get<std::string>() << std::setw(22) << shape << std::setw(36) << fastest << std::right
              << std::setw(10) << us(j, "fastest_us") << std::setw(12) << us(j, "first_choice_us") << std::setw(12)
              << us(j, "cublaslt_default_us") << std::setw(10)
              << (j.contains("cublaslt_default_us")
                      ? fixed(j["cublaslt_default_us"].get<double>() / j["fastest_us"].get<double>(), 3) + "x"
                      : std::string("-"))
              << "\n";
  }
  std::cout << "(configurations in perfloom's orientation, M first, \" cC\" the custom option they were timed with; "
               "the median of\n"
               " each one's runs; \"default\": cuBLASLt's first heuristic result, where the run timed it)\n";
  if (report.skipped) std::cerr << "perfloom tune: " << path << ": " << report.skipped << " rows skipped\n";
  return 0;
}

// A comma-separated list of positive integers ("1,2,4"), or nothing when one is not.
std::optional<std::vector<int64_t>> parsePositiveList(const QString& text) {
  std::vector<int64_t> out;
  for (const QString& part : text.split(',')) {
    bool ok = false;
    const int64_t v = part.trimmed().toLongLong(&ok);
    if (!ok || v <= 0) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

std::optional<tuner::MoeDtype> parseMoeDtype(const std::string& d) {
  if (d == "bf16" || d == "bfloat16") return tuner::MoeDtype::bf16;
  if (d == "fp8" || d == "fp8e4m3" || d == "fp8_w8a8") return tuner::MoeDtype::fp8;
  if (d == "fp8-block" || d == "fp8_block") return tuner::MoeDtype::fp8_block;
  return std::nullopt;
}

nlohmann::ordered_json moeConfigKeys(const tuner::MoeConfig& c) {
  nlohmann::ordered_json o;
  for (const auto& [key, value] : tuner::moe_config_keys(c)) o[key] = value;
  return o;
}

nlohmann::ordered_json moeGemmJson(const tuner::MoeGemmEstimate& g) {
  return {{"pred_us", g.pred_us},         {"ctas", g.ctas},       {"ctas_per_sm", g.ctas_per_sm},
          {"slots", g.cta_slots},         {"waves", g.waves},     {"last_wave_fill", g.last_wave_fill},
          {"padded_rows", g.padded_rows}, {"k_iters", g.k_iters}, {"bound", g.bound}};
}

nlohmann::ordered_json moeCandidateJson(const tuner::MoeCandidate& c, double default_us, std::size_t rank = 0) {
  nlohmann::ordered_json o;
  if (rank > 0) o["rank"] = rank;
  o.update(moeConfigKeys(c.config));
  o["config"] = tuner::moe_config_to_string(c.config);
  o["pred_us"] = c.pred_us;
  o["speedup_vs_default"] = default_us / c.pred_us;
  o["gate_up"] = moeGemmJson(c.gate_up);
  o["down"] = moeGemmJson(c.down);
  o["reason"] = c.reason;
  return o;
}

// `--moe E,N,H,topk`: the fused-MoE configurations ranked per token count, and with --out DIR vLLM's
// configuration file of each token count's first.
int runMoe(CliContext& ctx, const QCommandLineParser& args, const GpuSpec& gpu) {
  const QString spec = args.value("moe");
  const auto v = parsePositiveList(spec);
  if (!v || v->size() != 4)
    return usage(
        "--moe wants four positive integers E,N,H,topk (experts, intermediate size per expert as vLLM's N, "
        "hidden size, experts per token), got '" +
        spec.toStdString() + "'");
  const tuner::MoeShape shape{(*v)[0], (*v)[1], (*v)[2], (*v)[3]};
  const std::string dtype_text = args.value("dtype").toStdString();
  const auto dtype = parseMoeDtype(dtype_text);
  if (!dtype) return usage("--moe takes --dtype bf16, fp8 or fp8-block, got '" + dtype_text + "'");
  std::vector<int64_t> tokens = tuner::vllm_moe_token_counts();
  if (args.isSet("tokens")) {
    const auto t = parsePositiveList(args.value("tokens"));
    if (!t) return usage("--tokens wants positive integers T,..., got '" + args.value("tokens").toStdString() + "'");
    tokens = *t;
  }
  tuner::MoeEfficiencies eff;
  if (args.isSet("moe-efficiency")) {
    const QStringList parts = args.value("moe-efficiency").split(',');
    std::array<double, 3> e{};
    bool ok = parts.size() == 3;
    for (int i = 0; ok && i < 3; ++i) {
      e[static_cast<std::size_t>(i)] = parts[i].trimmed().toDouble(&ok);
      ok = ok && e[static_cast<std::size_t>(i)] > 0 && e[static_cast<std::size_t>(i)] <= 1;
    }
    if (!ok)
      return usage("--moe-efficiency wants three fractions in (0, 1] TENSOR16,TENSOR8,DRAM, got '" +
                   args.value("moe-efficiency").toStdString() + "'");
    eff = {e[0], e[1], e[2]};
  }
  const auto top = static_cast<std::size_t>(cliInteger(args, "top", 5, 1));
  const std::vector<tuner::MoeTokenResult> results = tuner::tune_moe(shape, *dtype, gpu, tokens, eff);
  const std::size_t space = results.empty() ? 0 : results.front().ranked.size();
  const std::string file = tuner::vllm_moe_config_file_name(shape, *dtype, gpu);

  std::string written;
  if (args.isSet("out")) {
    const std::filesystem::path dir = args.value("out").toStdString();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error(dir.string() + ": cannot create the folder (" + ec.message() + ")");
    written = (dir / file).string();
    tuner::write_vllm_moe_config(dir / file, results);  // the Tuner view's "Export vLLM config…" too
  }

  if (ctx.json) {
    nlohmann::ordered_json j;
    j["gpu"] = gpu.id;
    j["gpu_name"] = gpu.name;
    j["moe"] = {
        {"E", shape.E}, {"N", shape.N}, {"H", shape.H}, {"topk", shape.topk}, {"dtype", tuner::moe_dtype_name(*dtype)}};
    j["method"] = "analytical";
    j["ranked_by"] = "pred_us";
    j["device_name"] = tuner::vllm_device_name(gpu);
    j["config_file"] = file;
    if (!written.empty()) j["written"] = written;
    j["space"] = space;
    j["efficiencies"] = {{"tensor_16bit", eff.tensor_16bit}, {"tensor_8bit", eff.tensor_8bit}, {"dram", eff.dram}};
    j["tokens"] = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json t;
      t["tokens"] = r.tokens;
      t["engine_default"] = moeCandidateJson(r.engine_default, r.engine_default.pred_us);
      t["configs"] = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < std::min(top, r.ranked.size()); ++i) {
        t["configs"].push_back(moeCandidateJson(r.ranked[i], r.engine_default.pred_us, i + 1));
      }
      j["tokens"].push_back(std::move(t));
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "fused MoE E=" << shape.E << " N=" << shape.N << " H=" << shape.H << " topk=" << shape.topk << " "
            << tuner::moe_dtype_name(*dtype) << " on " << gpu.id << " (" << gpu.name << "), method: analytical, "
            << space << " configurations of the engines' space\n";
  std::cout << std::left << std::setw(8) << "tokens" << std::setw(6) << "rank" << std::setw(22) << "M x N x K /group"
            << std::setw(7) << "warps" << std::setw(7) << "stages" << std::right << std::setw(11) << "pred_us"
            << std::setw(9) << "vs dflt"
            << "  reason\n";
  for (const auto& r : results) {
    auto row = [&](const std::string& rank, const tuner::MoeCandidate& c) {
      const tuner::MoeConfig& k = c.config;
      std::cout << std::left << std::setw(8) << r.tokens << std::setw(6) << rank << std::setw(22)
                << (std::to_string(k.block_m) + "x" + std::to_string(k.block_n) + "x" + std::to_string(k.block_k) +
                    " /" + std::to_string(k.group_m))
                << std::setw(7) << k.num_warps << std::setw(7) << k.num_stages << std::right << std::setw(11)
                << fixed(c.pred_us, 2) << std::setw(8) << fixed(r.engine_default.pred_us / c.pred_us, 2) << "x  "
                << c.reason << "\n";
    };
    for (std::size_t i = 0; i < std::min(top, r.ranked.size()); ++i) row(std::to_string(i + 1), r.ranked[i]);
    row("dflt", r.engine_default);
  }
  std::cout << "(one configuration serves both GEMMs, gate-up H -> 2N and down N -> H, as the engines run it;\n"
               " pred_us is their sum; \"dflt\": vLLM's default heuristic without a tuned file; reason: each GEMM's\n"
               " waves, the last wave's fill and its largest term)\n";
  if (!written.empty())
    std::cout << "wrote " << written << " (each token count's first; vLLM reads it from "
              << "VLLM_TUNED_CONFIG_FOLDER or its fused_moe/configs folder)\n";
  else
    std::cout << "(--out DIR writes " << file << ")\n";
  return 0;
}

}  // namespace

int cmdTune(CliContext& ctx, const QCommandLineParser& args) {
  if (args.isSet("timed")) {
    try {
      return runTimed(ctx, args);
    } catch (const std::exception& e) {
      std::cerr << "perfloom tune: " << e.what() << "\n";
      return 2;
    }
  }
  const bool plan = args.isSet("plan");
  if (args.isSet("moe")) {
    if (!args.isSet("dtype")) return usage("--moe needs --dtype bf16, fp8 or fp8-block");
    if (!args.isSet("gpu")) return usage("needs --gpu ID; perfloom gpus lists the ids");
    if (plan || args.isSet("gemm")) return usage("--moe takes neither --gemm nor --plan");
    try {
      return runMoe(ctx, args, ctx.gpus.get(args.value("gpu").toStdString()));
    } catch (const std::exception& e) {
      std::cerr << "perfloom tune: " << e.what() << "\n";
      return 2;
    }
  }
  if (!plan && !args.isSet("gemm")) return usage("needs --gemm M,N,K (or --plan)");
  if (!args.isSet("dtype")) return usage("needs --dtype (fp16, bf16, fp8e4m3, tf32, ...)");
  if (!args.isSet("gpu")) return usage("needs --gpu ID; perfloom gpus lists the ids");
  const auto dtype = parse_dtype(args.value("dtype").toStdString());
  if (!dtype)
    return usage("unknown --dtype '" + args.value("dtype").toStdString() +
                 "' (fp32 tf32 fp16 bf16 fp8e4m3 fp8e5m2 int8)");
  const GpuSpec* gpu = nullptr;
  try {
    gpu = &ctx.gpus.get(args.value("gpu").toStdString());
  } catch (const std::invalid_argument& e) {
    std::cerr << "perfloom tune: " << e.what() << "\n";
    return 2;
  }
  try {
    if (plan && args.isSet("gemm"))
      return runTopPlan(args, *gpu, *dtype, static_cast<std::size_t>(cliInteger(args, "top", 3, 1)));
    if (plan) return runPlan(ctx, args, *gpu, *dtype);
    const auto mnk = parseGemm(args.value("gemm"));
    if (!mnk)
      return usage("--gemm wants three positive integers M,N,K, got '" + args.value("gemm").toStdString() + "'");
    const int64_t top = cliInteger(args, "top", 5, 1);
    const tuner::GemmShape shape{(*mnk)[0], (*mnk)[1], (*mnk)[2], *dtype};
    const tuner::TunerTable* table = tuner::bundled_tuner_table(*gpu);
    const std::shared_ptr<const KernelPredictor> predictor = rankingPredictor(table, shape.dtype);
    const tuner::TuneResult r = tuner::tune_gemm(shape, *gpu, static_cast<std::size_t>(top), table, predictor.get());
    if (ctx.json) {
      nlohmann::json j;
      j["gpu"] = gpu->id;
      j["gpu_name"] = gpu->name;
      j["gemm"] = {{"M", shape.M}, {"N", shape.N}, {"K", shape.K}, {"dtype", std::string(dtype_name(shape.dtype))}};
      j["method"] = r.method;
      j["note"] = r.note;
      j["ranked_by"] = r.ranked_by;
      if (std::isfinite(r.anchor_us)) j["anchor_us"] = r.anchor_us;
      if (std::isfinite(r.refusal_threshold)) j["refusal_threshold"] = r.refusal_threshold;
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
                            {"waves", c.grid.waves},
                            {"last_wave_fill", c.grid.last_wave_fill},
                            {"ctas", c.grid.ctas},
                            {"cluster_ctas", c.grid.cluster_ctas},
                            {"slots", c.grid.slot_count},
                            {"k_iters", c.grid.k_iters},
                            {"reason", c.reason}};
        if (!std::isnan(c.rank_score)) o["rank_score"] = c.rank_score;  // none beyond the chooser's kChooserRows
        if (c.class_samples >= 0) o["class_samples"] = c.class_samples;
        if (std::isfinite(c.lo_us) && std::isfinite(c.hi_us)) {
          o["lo_us"] = c.lo_us;
          o["hi_us"] = c.hi_us;
        }
        if (std::isfinite(c.refusal_p)) o["refusal_p"] = c.refusal_p;  // the table's acceptance model
        if (c.custom_option >= 0) {
          o["cublaslt_custom_option"] = c.custom_option;
          o["variant"] = c.variant;
        }
        j["configs"].push_back(o);
      }
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::cout << "GEMM " << shape.M << "x" << shape.N << "x" << shape.K << " " << dtype_name(shape.dtype) << " on "
              << gpu->id << " (" << gpu->name << "), method: " << r.method << "\n  " << r.note << "\n";
    // The custom option column where the table's variant model names one (variant_model.h).
    const bool options =
        std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& c) { return c.custom_option >= 0; });
    std::cout << std::left << std::setw(6) << "rank" << std::setw(15) << "tile MxNxK" << std::setw(7) << "split"
              << std::setw(9) << "cluster" << std::right << std::setw(11) << "pred_us" << std::setw(18) << "80% range"
              << std::setw(7) << "waves" << std::setw(7) << "fill" << (options ? "  option" : "") << "  reason\n";
    int rank = 1;
    for (const auto& c : r.ranked) {
      const TileConfig& t = c.config;
      std::cout << std::left << std::setw(6) << rank++ << std::setw(15)
                << (std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + "x" + std::to_string(t.tile_k))
                << std::setw(7) << std::max(1, t.split_k) << std::setw(9)
                << (std::to_string(std::max(1, t.cluster_m)) + "x" + std::to_string(std::max(1, t.cluster_n)))
                << std::right << std::setw(11) << fixed(c.pred_us, 2) << std::setw(18)
                << (std::isfinite(c.lo_us) && std::isfinite(c.hi_us) ? fixed(c.lo_us, 1) + "-" + fixed(c.hi_us, 1)
                                                                     : std::string("-"))
                << std::setw(7) << c.grid.waves << std::setw(6)
                << static_cast<int>(std::lround(c.grid.last_wave_fill * 100)) << "%  ";
      if (options)
        std::cout << std::left << std::setw(8) << (c.custom_option >= 0 ? "c" + std::to_string(c.custom_option) : "-");
      std::cout << c.reason << "\n";
    }
    if (options) {
      std::map<int, std::string> shown;
      for (const auto& c : r.ranked)
        if (c.custom_option >= 0) shown[c.custom_option] = c.variant;
      std::string legend;
      for (const auto& [o, v] : shown)
        legend += (legend.empty() ? "" : "; ") + ("c" + std::to_string(o)) + (v.empty() ? "" : " " + v);
      std::cout
          << "(option: cuBLASLt's custom option to set, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, the kernel variant the\n"
             " table's variant model predicts fastest; its kernels showed: "
          << legend << ")\n";
    }
    std::cout
        << "(tile and cluster in perfloom's orientation, M first; cuBLASLt names them N first: --json gives both)\n";
    if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& c) { return std::isfinite(c.lo_us); }))
      std::cout
          << (r.method == "wave-table"
                  ? "(80% range: where 80% of measured latencies fell around the table's predictions of near-best\n"
                    " configurations at shapes it had not seen)\n"
                  : "(80% range: the predictor's interval, p10..p90 of measured over predicted)\n");
    if (r.ranked_by == "chooser")
      std::cout
          << "(ranked by the table's learned chooser, not by pred_us: configurations predicted within a few percent\n"
             " of each other are a tie to time, not an order)\n";
    if (r.method == "wave-table")
      std::cout
          << "(cuBLASLt may refuse a configuration set on its first heuristic result and take it on a later one:\n"
             " docs/cli.md, \"Running a tuner configuration with cuBLASLt\")\n";
    if (std::any_of(r.ranked.begin(), r.ranked.end(),
                    [&](const auto& c) { return tuner::likely_refused(c, r.refusal_threshold); }))
      std::cout << "(likely refuses: the table's acceptance model, learned from the collector's runs, predicts that "
                   "cuBLASLt\n"
                   " refuses the configuration at this shape; such configurations rank after the others; --json: "
                   "refusal_p)\n";
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
