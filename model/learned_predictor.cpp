#include "model/learned_predictor.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <future>
#include <sstream>
#include <unordered_map>

#include "model/compressed_text.h"
#include "model/families/family_models.h"
#include "model/features.h"
#include "model/file_reader.h"
#include "model/hash.h"
#include "model/json_fields.h"
#include "model/resources.h"
#include "model/training.h"

namespace perfloom {

namespace {
constexpr const char* kSchema = "perfloom-models/1";

// The file's text; gzip-compressed files (the shipped *.json.gz) are inflated, plain ones read as they are.
std::string read_file(const std::filesystem::path& p) {
  try {
    return read_file_guarded(p, file_limits::learned_model);
  } catch (const FileReadError& e) {
    throw ModelLoadError(e.what());
  }
}

// One booster of a family: its file and the fields of its manifest entry (`info`).
BoosterFit load_fit(const std::filesystem::path& dir, const nlohmann::json& info, const std::string& default_file,
                    std::size_t features) {
  BoosterFit fit;
  const auto file = dir / info.value("file", default_file);
  try {
    fit.booster = XgbBooster::load_json(read_file(file), file.string());
  } catch (const XgbError& e) {
    throw ModelLoadError(e.what());
  }
  if (fit.booster.num_features() != features)
    throw ModelLoadError(file.string() + ": expects " + std::to_string(fit.booster.num_features()) +
                         " features, this build computes " + std::to_string(features));
  // One thread: simulations and the planner predict a kernel at a time, where waking an OpenMP team
  // costs more than the prediction (perfloom-bench-plan: 59 s wall on 2 cores with the team, 20 s
  // without); the results are the same either way.
  fit.booster.set_param("nthread", "1");
  fit.log_q10 = info.value("log_residual_q10", 0.0);
  fit.log_q90 = info.value("log_residual_q90", 0.0);
  fit.calibration_mape = info.value("calibration_mape", 0.0);
  fit.features_not_learned = info.value("features_not_learned", std::vector<std::string>{});
  return fit;
}

// Writes `<stem>.json.gz` into `dir` and returns its manifest fields; `hash` goes on over its JSON.
nlohmann::json save_fit(const std::filesystem::path& dir, const std::string& stem, const BoosterFit& fit,
                        uint64_t& hash) {
  // Compressed: the JSON is 5–7 MB per family, and the repository ships it.
  const std::string file = stem + ".json.gz";
  const std::string json = fit.booster.save_json();
  hash = fnv1a(json, hash);
  std::ofstream os(dir / file, std::ios::binary);
  if (!(os << gzip_text(json))) throw std::runtime_error((dir / file).string() + ": cannot be written");
  return {{"file", file},
          {"calibration_mape", fit.calibration_mape},
          {"log_residual_q10", fit.log_q10},
          {"log_residual_q90", fit.log_q90},
          {"features_not_learned", fit.features_not_learned}};
}
}  // namespace

LearnedPredictor::LearnedPredictor(std::vector<FamilyModel> models, nlohmann::json manifest)
    : manifest_(std::move(manifest)) {
  for (auto& m : models) {
    Family f = m.family;
    models_.emplace(f, std::move(m));
  }
}

std::unique_ptr<LearnedPredictor> LearnedPredictor::load(const std::filesystem::path& dir) {
  const auto manifest_path = dir / "manifest.json";
  // Depth-bounded, with a bounded message (model/json_fields.h): the folder may be anyone's.
  nlohmann::json manifest = parse_json_object(
      read_file(manifest_path), manifest_path.string(),
      [](const std::string& file, const std::string&, const std::string& reason) {
        throw ModelLoadError(file + ": " + reason);
      },
      "a perfloom model manifest");
  if (!manifest.contains("families") || !manifest["families"].is_object())
    throw ModelLoadError(manifest_path.string() +
                         ": not a perfloom model manifest (expected an object with \"families\")");
  if (!manifest.contains("schema") || manifest["schema"] != kSchema)
    throw ModelLoadError(manifest_path.string() + ": schema is " +
                         (manifest.contains("schema") ? json_excerpt(manifest["schema"]) : "missing") + ", expected " +
                         kSchema);
  if (manifest.value("feature_version", -1) != kFeatureVersion)
    throw ModelLoadError(manifest_path.string() + ": trained on feature version " +
                         std::to_string(manifest.value("feature_version", -1)) + ", this build computes version " +
                         std::to_string(kFeatureVersion) + "; run `perfloom train`");
  std::vector<std::string> names;
  for (auto n : feature_names()) names.emplace_back(n);
  if (manifest.value("features", nlohmann::json::array()) != nlohmann::json(names))
    throw ModelLoadError(manifest_path.string() +
                         ": trained on other features than this build computes; run `perfloom train`");
  // Every booster file is inflated and parsed on its own thread (7 files, ~1 s in series here);
  // the first failure is reported once all have finished.
  struct Pending {
    FamilyModel model;
    std::future<BoosterFit> trained, unseen;
  };
  std::vector<Pending> pending;
  for (auto& [fname, info] : manifest.at("families").items()) {
    auto fam = parse_family(fname);
    if (!fam) throw ModelLoadError(manifest_path.string() + ": unknown family " + quote_excerpt(fname));
    Pending p;
    p.model.family = *fam;
    p.model.train_rows = info.value("train_rows", 0);
    p.model.calibration_rows = info.value("calibration_rows", 0);
    p.model.rows_by_gpu = info.value("rows_by_gpu", std::map<std::string, std::size_t>{});
    p.model.implementation_classes = info.value("implementation_classes", std::set<int>{});
    if (info.contains("unseen_gpu_log_residual_q10") && info.contains("unseen_gpu_log_residual_q90"))
      p.model.unseen_gpu_log_q10_q90 = std::make_pair(info["unseen_gpu_log_residual_q10"].get<double>(),
                                                      info["unseen_gpu_log_residual_q90"].get<double>());
    p.trained = std::async(std::launch::async, load_fit, dir, info, fname + ".json", names.size());
    if (info.contains("unseen_gpus"))
      p.unseen =
          std::async(std::launch::async, load_fit, dir, info["unseen_gpus"], fname + "_unseen_gpus.json", names.size());
    pending.push_back(std::move(p));
  }
  std::vector<FamilyModel> models;
  for (auto& p : pending) {
    p.model.trained_gpus = p.trained.get();
    if (p.unseen.valid()) p.model.unseen_gpus = p.unseen.get();
    models.push_back(std::move(p.model));
  }
  // A family measured on GPUs of one fold only (the moe booster: the H200's fused-MoE sweep) has no
  // residuals of a GPU held out of it, and its own held-out kernels say nothing of another GPU. For
  // a GPU not in its training it borrows the widest such interval the other families measured.
  std::optional<std::pair<double, double>> widest;
  for (const auto& m : models)
    if (m.unseen_gpu_log_q10_q90)
      widest = widest ? std::make_pair(std::min(widest->first, m.unseen_gpu_log_q10_q90->first),
                                       std::max(widest->second, m.unseen_gpu_log_q10_q90->second))
                      : *m.unseen_gpu_log_q10_q90;
  for (auto& m : models)
    if (!m.unseen_gpu_log_q10_q90 && widest)
      m.unseen_gpu_log_q10_q90 = std::make_pair(std::min(widest->first, m.trained_gpus.log_q10),
                                                std::max(widest->second, m.trained_gpus.log_q90));
  return std::make_unique<LearnedPredictor>(std::move(models), std::move(manifest));
}

void LearnedPredictor::save(const std::filesystem::path& dir, const nlohmann::json& extra) const {
  std::filesystem::create_directories(dir);
  nlohmann::json manifest = extra;
  manifest["schema"] = kSchema;
  manifest["feature_version"] = kFeatureVersion;
  std::vector<std::string> names;
  for (auto n : feature_names()) names.emplace_back(n);
  manifest["features"] = names;
  manifest["families"] = nlohmann::json::object();
  uint64_t models_hash = kFnv1aOffset;
  for (const auto& [fam, m] : models_) {
    const std::string fname(family_name(fam));
    nlohmann::json info = save_fit(dir, fname, m.trained_gpus, models_hash);
    info["train_rows"] = m.train_rows;
    info["calibration_rows"] = m.calibration_rows;
    info["rows_by_gpu"] = m.rows_by_gpu;
    info["implementation_classes"] = m.implementation_classes;
    if (m.unseen_gpu_log_q10_q90) {
      // The interval for GPUs not in training, from folds by GPU (FamilyModel::unseen_gpu_log_q10_q90).
      info["unseen_gpu_log_residual_q10"] = m.unseen_gpu_log_q10_q90->first;
      info["unseen_gpu_log_residual_q90"] = m.unseen_gpu_log_q10_q90->second;
    }
    if (m.unseen_gpus) info["unseen_gpus"] = save_fit(dir, fname + "_unseen_gpus", *m.unseen_gpus, models_hash);
    manifest["families"][fname] = info;
  }
  // What the predictions depend on besides the features: cached predictions are keyed by it.
  std::ostringstream hash;
  hash << "fnv1a64:" << std::hex << models_hash;
  manifest["models_hash"] = hash.str();
  std::ofstream(dir / "manifest.json") << manifest.dump(2) << "\n";
}

std::vector<Prediction> LearnedPredictor::predict_batch(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                                        std::vector<std::string>* errors) const {
  // Traces repeat the same kernels thousands of times: predict each distinct one once.
  std::unordered_map<std::string, std::size_t> first;
  std::vector<std::size_t> source(kernels.size());
  std::vector<KernelDesc> unique;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    // Everything the analysis reads from a kernel is in the key: equal keys give equal predictions.
    auto [it, inserted] = first.emplace(kernel_key(kernels[i], KernelKeyDetail::prediction), unique.size());
    if (inserted) unique.push_back(kernels[i]);
    source[i] = it->second;
  }
  std::vector<std::string> unique_errors;
  std::vector<Prediction> unique_out = predict_distinct(unique, gpu, errors ? &unique_errors : nullptr);
  std::vector<Prediction> out(kernels.size());
  if (errors) errors->assign(kernels.size(), "");
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    out[i] = unique_out[source[i]];
    if (errors) (*errors)[i] = unique_errors[source[i]];
  }
  return out;
}

std::vector<Prediction> LearnedPredictor::predict_distinct(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                                           std::vector<std::string>* errors) const {
  std::vector<Prediction> out(kernels.size());
  if (errors) errors->assign(kernels.size(), "");
  std::map<Family, std::vector<std::size_t>> by_family;
  std::map<Family, std::vector<float>> features;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    Prediction& p = out[i];
    try {
      p.analysis = analyze_kernel(kernels[i], gpu);
    } catch (const UnsupportedKernel& e) {
      if (!errors) throw;
      (*errors)[i] = e.what();
      continue;
    }
    p.family = p.analysis.family;
    p.ceiling_us = p.analysis.ceiling_us;
    p.bound = p.analysis.bound;
    if (const auto m = models_.find(p.family); m != models_.end()) {
      auto f = make_features(kernels[i], gpu, p.analysis);
      m->second.prepare_features(f.data());
      auto& fv = features[p.family];
      fv.insert(fv.end(), f.begin(), f.end());
      by_family[p.family].push_back(i);
    } else {
      // No measurements of this family trained a model: the roofline baseline answers.
      Prediction r = predict_roofline(kernels[i], gpu);
      if (r.method == "roofline")
        r.method = "roofline (no learned model for " + std::string(family_name(p.family)) + ")";
      p = std::move(r);
    }
  }
  const std::size_t cols = feature_names().size();
  for (auto& [fam, idx] : by_family) {
    const FamilyModel& m = models_.at(fam);
    const BoosterFit& fit = m.fit_for(gpu.id);
    const char* method = m.scope_for(gpu.id) == GpuScope::unseen ? "xgboost (GPU not in training)" : "xgboost";
    const auto interval = m.interval_for(gpu.id);
    auto y = fit.booster.predict(features[fam].data(), idx.size(), cols);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      Prediction& p = out[idx[j]];
      p.pred_us = std::max(p.ceiling_us, learned_time_us(p.analysis.achievable_roofline_us, p.analysis.launch_offset_us,
                                                         static_cast<double>(y[j])));
      p.lo_us = std::max(p.ceiling_us, p.pred_us * std::exp(interval.first));
      p.hi_us = std::max(p.lo_us, p.pred_us * std::exp(interval.second));
      p.method = method;
    }
  }
  return out;
}

std::string LearnedPredictor::version() const {
  return "xgboost/" + manifest_.value("models_hash", manifest_.value("data_hash", std::string("unknown"))) + "/f" +
         std::to_string(manifest_.value("feature_version", 0));
}

std::vector<GpuCoverage> LearnedPredictor::coverage(const std::string& gpu_id) const {
  std::vector<GpuCoverage> out;
  for (const auto& [fam, m] : models_) {
    auto rows = m.rows_by_gpu.find(gpu_id);
    out.push_back({fam, rows == m.rows_by_gpu.end() ? 0 : rows->second, m.scope_for(gpu_id), !m.unseen_gpus});
  }
  return out;
}

Prediction LearnedPredictor::predict(const KernelDesc& k, const GpuSpec& gpu) const {
  return predict_distinct(std::span<const KernelDesc>(&k, 1), gpu, nullptr).front();
}

std::shared_ptr<const KernelPredictor> make_default_predictor(std::string* warning) {
  const auto dir = resources_dir() / "models";
  try {
    return LearnedPredictor::load(dir);
  } catch (const std::exception& e) {
    if (warning)
      *warning = std::string("learned models not used (") + e.what() + "); predictions are the roofline baseline";
    return std::make_shared<RooflinePredictor>();
  }
}

}  // namespace perfloom
