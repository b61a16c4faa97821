// `perfloom train` and `perfloom eval --holdout-gpu ID`: the learned models, rebuilt from the
// measurements a fresh clone carries (data), and their honest cross-GPU accuracy.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/classify/kernel_classifier.h"
#include "model/features.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "model/resources.h"
#include "model/training.h"
#include "storage/collector_csv.h"
#include "storage/public_datasets.h"

namespace perfloom::app {

namespace {

// The training measurements: --data DIR, else $PERFLOOM_DATA, else data/ of the current folder
// when it is a perfloom data folder (a clone's root). Never a path of the machine that built it.
std::filesystem::path dataRoot(const QCommandLineParser& args) {
  if (args.isSet("data")) return args.value("data").toStdString();
  if (const char* env = std::getenv("PERFLOOM_DATA"); env && *env) return env;
  if (std::filesystem::is_regular_file("data/MANIFEST.tsv")) return "data";
  throw std::invalid_argument(
      "no training data: give --data DIR (the measurements, data/ in a clone of perfloom) or set $PERFLOOM_DATA");
}

// Every measurement under the data root: the public datasets and the collector's own CSVs.
std::vector<TrainingSample> loadSamples(const std::filesystem::path& root, const GpuDatabase& gpus) {
  std::vector<TrainingSample> samples;
  auto sink = [&](storage::MeasuredKernel&& m) {
    if (predictor_training_exclusion(m.note)) return;
    samples.push_back({std::move(m.kernel), std::move(m.gpu_id), m.latency_us, std::move(m.dataset)});
  };
  if (std::filesystem::is_directory(root / "public")) storage::visit_public_datasets(root / "public", gpus, sink);
  storage::visit_collector_folder(root, gpus, sink);
  if (samples.empty()) throw std::runtime_error(root.string() + ": no measurements found");
  add_untiled_copies(samples);
  return samples;
}

TrainOptions trainOptions(const QCommandLineParser& args) {
  TrainOptions o;
  if (args.isSet("rounds")) o.rounds = args.value("rounds").toInt();
  if (o.rounds <= 0) throw std::invalid_argument("--rounds must be a positive number");
  if (args.isSet("seed")) {
    bool ok = false;
    o.seed = args.value("seed").toInt(&ok);
    if (!ok || o.seed < 0) throw std::invalid_argument("--seed must be a non-negative whole number");
  }
  return o;
}

// The GPUs an --holdout-arch value names: an `architecture` of the GPU files ("ampere",
// "blackwell"; any case), or a compute capability written smXY or sm_XY ("sm89", "sm100",
// "sm120"), which separates the parts that share an architecture name but not their SMs
// (datacenter Blackwell sm100/sm103 against the RTX Blackwell sm120).
std::set<std::string> gpusOfArchitecture(const GpuDatabase& gpus, const std::string& arch) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  auto sm = [](const std::string& cc) {  // "12.0" -> "sm120"
    std::string digits;
    std::copy_if(cc.begin(), cc.end(), std::back_inserter(digits), [](unsigned char c) { return std::isdigit(c); });
    return digits.empty() ? std::string() : "sm" + digits;
  };
  std::string want = lower(arch);
  if (want.rfind("sm_", 0) == 0) want.erase(2, 1);
  std::set<std::string> held, names, capabilities;
  for (const auto& g : gpus.all()) {
    names.insert(lower(g.architecture));
    if (!sm(g.compute_capability).empty()) capabilities.insert(sm(g.compute_capability));
    if (lower(g.architecture) == want || sm(g.compute_capability) == want) held.insert(g.id);
  }
  if (held.empty()) {
    auto join = [](const std::set<std::string>& v) {
      std::string out;
      for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    throw std::invalid_argument("no GPU of architecture \"" + arch + "\": give an architecture (" + join(names) +
                                ") or a compute capability (" + join(capabilities) + ")");
  }
  return held;
}

std::string pct(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v << "%";
  return os.str();
}

// "x1.34": a median predicted / measured time (above 1: the predictions are too slow).
std::string ratio_text(double v) {
  std::ostringstream os;
  os << "x" << std::fixed << std::setprecision(2) << v;
  return os.str();
}

}  // namespace

int cmdTrain(CliContext& ctx, const QCommandLineParser& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const TrainOptions opts = trainOptions(args);  // bad options fail before the data is read
  const auto root = dataRoot(args);
  std::map<std::string, std::size_t> skipped;
  const auto rows = prepare_rows(loadSamples(root, ctx.gpus), ctx.gpus, &skipped);
  std::cerr << "perfloom train: " << rows.size() << " measured kernels from " << root.string() << "\n";
  auto models = train_family_models(rows, opts);
  std::set<std::string> gpus_used;
  for (const auto& r : rows) gpus_used.insert(r.gpu_id);
  nlohmann::json extra = {
      {"data_hash", training_data_hash(rows)},
      {"data_root", root.filename().empty() ? root.parent_path().filename().string() : root.filename().string()},
      {"training_gpus", gpus_used},
      {"skipped", skipped},
      {"achievable_defaults",
       [&] {
         // The cross-generation tier's fractions these models were trained with.
         const AchievableFractions& f = ctx.gpus.default_fractions();
         return nlohmann::json{{"from", f.from},     {"dram", f.dram},     {"l2", f.l2},
                               {"fma", f.fma},       {"sfu", f.sfu},       {"smem", f.smem},
                               {"launch", f.launch}, {"tensor", f.tensor}, {"tensor_any", f.tensor_any}};
       }()},
      {"calibrated_gpus",
       [&] {
         nlohmann::json c = nlohmann::json::object();
         for (const auto& g : ctx.gpus.all())
           if (const Calibration* cal = ctx.gpus.calibration(g.id)) c[g.id] = cal->file;
         return c;
       }()},
      {"options", {{"rounds", opts.rounds}, {"seed", opts.seed}, {"max_depth", 8}, {"eta", 0.08}}}};
  LearnedPredictor predictor(std::move(models), {});
  const std::filesystem::path out =
      args.isSet("out") ? std::filesystem::path(args.value("out").toStdString()) : resources_dir() / "models";
  predictor.save(out, extra);
  auto saved = LearnedPredictor::load(out);  // what the tools will read, checked
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (ctx.json) {
    std::cout << saved->manifest().dump(2) << "\n";
  } else {
    for (auto& [fam, info] : saved->manifest()["families"].items())
      std::cout << fam << ": " << info["train_rows"] << " rows, held-out MAPE "
                << pct(info["calibration_mape"].get<double>())
                << (info.contains("unseen_gpus")
                        ? "; for GPUs not in training, a booster without the GPU's rate features: " +
                              pct(info["unseen_gpus"]["calibration_mape"].get<double>())
                        : std::string())
                << "\n";
    std::cout << "models written to " << out.string() << " in " << std::fixed << std::setprecision(1) << secs << " s\n";
  }
  return 0;
}

int cmdEval(CliContext& ctx, const QCommandLineParser& args) {
  if (!args.isSet("holdout-gpu") && !args.isSet("holdout-arch")) {
    std::cerr << "perfloom eval: needs --holdout-gpu ID or --holdout-arch ARCH\n";
    return 2;
  }
  const TrainOptions opts = trainOptions(args);  // bad options fail before the data is read
  std::set<std::string> held;
  std::string what;
  if (args.isSet("holdout-gpu")) {
    const GpuSpec& g = ctx.gpus.get(args.value("holdout-gpu").toStdString());
    held.insert(g.id);
    what = g.id;
  } else {
    what = args.value("holdout-arch").toStdString();
    held = gpusOfArchitecture(ctx.gpus, what);
  }
  // The held-out GPUs' calibrations never reach the training GPUs (the default fractions average
  // the others'), so the training rows are the same with and without --no-target-calibration; only
  // the held-out GPUs' rates differ: their measured ones (target-measured tier) or the datasheet x
  // the default fractions (cross-generation tier).
  GpuDatabase gpus = ctx.gpus;
  gpus.exclude_from_defaults(held);
  const bool target_calibration = !args.isSet("no-target-calibration");
  std::vector<std::string> calibrated;
  for (const auto& id : held) {
    if (!target_calibration) gpus.remove_calibration(id);
    if (const Calibration* c = gpus.calibration(id)) calibrated.push_back(id + ": " + c->file);
  }
  const auto rows = prepare_rows(loadSamples(dataRoot(args), gpus), gpus, nullptr);
  std::vector<PreparedRow> train, test;
  for (const auto& r : rows) (held.count(r.gpu_id) ? test : train).push_back(r);
  if (test.empty()) throw std::runtime_error("no measurements of " + what + " to evaluate on");
  TrainOptions eval_opts = opts;
  eval_opts.unseen_gpu_interval = false;  // eval scores predictions, not intervals
  auto models = train_family_models(train, eval_opts);
  std::map<Family, const FamilyModel*> by_family;
  for (const auto& m : models) by_family[m.family] = &m;

  // Baselines, fitted on the training GPUs only: the roofline time over a fixed per-family
  // efficiency, and Habitat-style scaling of the same kernel measured on another GPU by the
  // ratio of the two GPUs' roofline times (bandwidth, clock, SMs and tensor rate all inside it).
  std::map<Family, std::vector<double>> eff;
  std::map<std::string, const PreparedRow*> measured_elsewhere;
  for (const auto& r : train) {
    eff[r.family].push_back(r.roofline_us / r.measured_us);
    measured_elsewhere.emplace(r.key, &r);
  }
  std::map<Family, double> eff_median;
  for (auto& [f, v] : eff) {
    std::sort(v.begin(), v.end());
    eff_median[f] = v[v.size() / 2];
  }
  struct Acc {
    std::vector<double> learned, roofline, habitat, habitat_measured, measured;
  };
  std::map<Family, Acc> acc;
  // The learned model's error per source of the held-out rows (sources disagree with each other).
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_source;  // predicted, measured
  // The same per family and implementation class of the kernel (its impl_class feature).
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_implementation;
  const std::size_t cols = feature_names().size();
  std::map<Family, std::vector<const PreparedRow*>> test_by_family;
  for (const auto& r : test) test_by_family[r.family].push_back(&r);
  // --rows: one line per held-out kernel, for breaking the error down further than per source.
  std::ofstream rows_out;
  if (args.isSet("rows")) {
    const std::string path = args.value("rows").toStdString();
    rows_out.open(path);
    if (!rows_out) throw std::runtime_error(path + ": cannot open for writing (--rows)");
    rows_out << "gpu,dataset,family,key,measured_us,predicted_us,roofline_us,roofline_baseline_us,"
                "achievable_roofline_us,ceiling_us";
    for (auto name : feature_names()) rows_out << ',' << name;  // what the model read
    rows_out << '\n';
    rows_out << std::setprecision(6);
  }
  for (auto& [fam, rs] : test_by_family) {
    Acc& a = acc[fam];
    std::vector<float> X;
    for (const auto* r : rs) {
      X.insert(X.end(), r->features.begin(), r->features.end());
      if (by_family.count(fam)) by_family[fam]->prepare_features(X.data() + X.size() - cols);
    }
    std::vector<float> y;
    // Every held-out GPU is absent from training: the booster that serves such GPUs answers.
    if (by_family.count(fam))
      y = by_family[fam]->fit_for(rs.front()->gpu_id).booster.predict(X.data(), rs.size(), cols);
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const PreparedRow& r = *rs[i];
      a.measured.push_back(r.measured_us);
      const double roof = r.roofline_us / (eff_median.count(fam) ? eff_median[fam] : 0.5);
      a.roofline.push_back(roof);
      a.learned.push_back(y.empty()
                              ? roof
                              : std::max(r.ceiling_us, learned_time_us(r.achievable_roofline_us, r.launch_offset_us,
                                                                       static_cast<double>(y[i]))));
      // key: "op|dtype|shape..." (training.h)
      const std::string dtype =
          r.key.substr(r.key.find('|') + 1, r.key.find('|', r.key.find('|') + 1) - r.key.find('|') - 1);
      auto& src = by_source[std::string(family_name(fam)) + " " + r.dataset + " " + dtype];
      src.first.push_back(a.learned.back());
      src.second.push_back(r.measured_us);
      auto& impl = by_implementation[std::string(family_name(fam)) + " " +
                                     implementation_class_name(static_cast<int>(r.features[impl_class_feature_index()]))];
      impl.first.push_back(a.learned.back());
      impl.second.push_back(r.measured_us);
      if (rows_out.is_open()) {
        rows_out << r.gpu_id << ',' << r.dataset << ',' << family_name(fam) << ',' << r.key << ',' << r.measured_us
                 << ',' << a.learned.back() << ',' << r.roofline_us << ',' << roof << ','
                 << r.achievable_roofline_us << ','
                 << r.ceiling_us;
        for (float v : r.features) rows_out << ',' << v;
        rows_out << '\n';
      }
      auto other = measured_elsewhere.find(r.key);
      if (other != measured_elsewhere.end()) {
        a.habitat.push_back(other->second->measured_us * r.roofline_us / other->second->roofline_us);
        a.habitat_measured.push_back(r.measured_us);
      }
    }
  }
  const std::string tier = calibrated.empty() ? "cross-generation" : "target-measured";
  nlohmann::json out = {{"holdout", what},
                        {"held_out_gpus", held},
                        {"train_rows", train.size()},
                        {"test_rows", test.size()},
                        {"tier", tier},
                        {"target_calibrations", calibrated},
                        {"default_fractions_from", gpus.default_fractions().from},
                        {"families", nlohmann::json::object()}};
  if (!ctx.json)
    std::cout << "held out: " << what << " (" << test.size() << " kernels; trained on " << train.size() << ")\n"
              << "tier: " << tier
              << (calibrated.empty() ? std::string(" (datasheet x the default fractions)")
                                     : " (" +
                                           [&] {
                                             std::string j;
                                             for (const auto& c : calibrated) j += (j.empty() ? "" : "; ") + c;
                                             return j;
                                           }() +
                                           ")")
              << "\n"
              << std::left << std::setw(13) << "family" << std::right << std::setw(8) << "kernels" << std::setw(10)
              << "MAPE" << std::setw(10) << "median" << std::setw(10) << "p90" << std::setw(11) << "pred/meas"
              << std::setw(12) << "roofline" << std::setw(12) << "habitat" << std::setw(10) << "covered\n";
  for (auto& [fam, a] : acc) {
    const ErrorStats l = error_stats(a.learned, a.measured), rf = error_stats(a.roofline, a.measured),
                     h = error_stats(a.habitat, a.habitat_measured);
    out["families"][std::string(family_name(fam))] = {
        {"kernels", l.n},
        {"learned",
         {{"mape", l.mape}, {"median_ape", l.median_ape}, {"p90_ape", l.p90_ape}, {"median_ratio", l.median_ratio}}},
        {"roofline",
         {{"mape", rf.mape},
          {"median_ape", rf.median_ape},
          {"p90_ape", rf.p90_ape},
          {"median_ratio", rf.median_ratio}}},
        {"habitat", {{"mape", h.mape}, {"median_ape", h.median_ape}, {"p90_ape", h.p90_ape}, {"kernels", h.n}}}};
    if (!ctx.json)
      std::cout << std::left << std::setw(13) << family_name(fam) << std::right << std::setw(8) << l.n << std::setw(10)
                << pct(l.mape) << std::setw(10) << pct(l.median_ape) << std::setw(10) << pct(l.p90_ape) << std::setw(11)
                << ratio_text(l.median_ratio) << std::setw(12) << pct(rf.mape) << std::setw(12)
                << (h.n ? pct(h.mape) : "-") << std::setw(9)
                << pct(100.0 * h.n / std::max<std::size_t>(1, l.n)) << "\n";
  }
  if (!ctx.json) std::cout << "\nby source (learned):\n";
  for (const auto& [name, pm] : by_source) {
    const ErrorStats s = error_stats(pm.first, pm.second);
    out["by_source"][name] = {{"kernels", s.n}, {"mape", s.mape}, {"median_ape", s.median_ape}, {"p90_ape", s.p90_ape}};
    if (!ctx.json)
      std::cout << "  " << std::left << std::setw(64) << name << std::right << std::setw(8) << s.n << std::setw(10)
                << pct(s.mape) << std::setw(10) << pct(s.median_ape) << std::setw(10) << pct(s.p90_ape) << "\n";
  }
  if (!ctx.json) std::cout << "\nby implementation (learned):\n";
  for (const auto& [name, pm] : by_implementation) {
    const ErrorStats s = error_stats(pm.first, pm.second);
    out["by_implementation"][name] = {
        {"kernels", s.n}, {"mape", s.mape}, {"median_ape", s.median_ape}, {"p90_ape", s.p90_ape}};
    if (!ctx.json)
      std::cout << "  " << std::left << std::setw(64) << name << std::right << std::setw(8) << s.n << std::setw(10)
                << pct(s.mape) << std::setw(10) << pct(s.median_ape) << std::setw(10) << pct(s.p90_ape) << "\n";
  }
  if (ctx.json) std::cout << out.dump(2) << "\n";
  if (args.isSet("save-models")) {  // the held-out models, for evaluations that need a model that never saw the GPU
    std::set<std::string> gpus_used;
    for (const auto& r : train) gpus_used.insert(r.gpu_id);
    const std::filesystem::path dir = args.value("save-models").toStdString();
    LearnedPredictor(std::move(models), {})
        .save(dir, {{"data_hash", training_data_hash(train)},
                    {"training_gpus", gpus_used},
                    {"held_out", held},
                    {"options", {{"rounds", opts.rounds}, {"seed", opts.seed}, {"max_depth", 8}, {"eta", 0.08}}}});
    LearnedPredictor::load(dir);  // refuses what it cannot read back
    if (!ctx.json) std::cout << "models trained without " << what << " written to " << dir.string() << "\n";
  }
  return 0;
}

}  // namespace perfloom::app
