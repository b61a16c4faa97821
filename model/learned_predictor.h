#pragma once
// The learned predictor: per family an XGBoost booster on the analytical features predicts
// log(measured / roofline time at the achievable rates, model/calibration.h); the interval comes
// from held-out residual quantiles (80%).
// Model files live in a folder with a manifest (resources/models/manifest.json).
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/predictor.h"
#include "model/training.h"

namespace perfloom {

class ModelLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LearnedPredictor : public KernelPredictor {
 public:
  LearnedPredictor(std::vector<FamilyModel> models, nlohmann::json manifest);

  // Reads manifest.json and one model file per family. Refuses (ModelLoadError, naming the file
  // and the reason) a missing or corrupt file, another schema, or models trained on other features.
  static std::unique_ptr<LearnedPredictor> load(const std::filesystem::path& dir);
  // Writes the models and the manifest (with `extra` merged in) into `dir`.
  void save(const std::filesystem::path& dir, const nlohmann::json& extra) const;

  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override;
  // Many kernels on one GPU in one call to each booster: the fast path for traces and lists. A
  // kernel repeated in `kernels` is predicted once.
  std::vector<Prediction> predict_batch(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                        std::vector<std::string>* errors) const override;
  std::string name() const override { return "xgboost"; }
  // "xgboost/<models hash>/f<feature version>": the models' own hash where the manifest has one
  // (retraining on the same data with another recipe changes the predictions, not the data hash),
  // else the training data's.
  std::string version() const override;
  bool is_learned() const override { return true; }
  std::vector<GpuCoverage> coverage(const std::string& gpu_id) const override;
  const nlohmann::json& manifest() const { return manifest_; }
  bool has_family(Family f) const { return models_.count(f) > 0; }

 private:
  std::vector<Prediction> predict_distinct(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                           std::vector<std::string>* errors) const;
  std::map<Family, FamilyModel> models_;
  nlohmann::json manifest_;
};

// The predictor the tools use: the learned models from resources/models when they load, else the
// roofline baseline; `warning` says why the learned models were not used.
std::shared_ptr<const KernelPredictor> make_default_predictor(std::string* warning);

}  // namespace perfloom
