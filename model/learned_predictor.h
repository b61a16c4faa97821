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
  // Many kernels on one GPU in one call to each booster: the fast path for traces and lists.
  // Entries that cannot be predicted carry their reason in `errors` (same index), else "".
  std::vector<Prediction> predict_batch(const std::vector<KernelDesc>& kernels, const GpuSpec& gpu,
                                        std::vector<std::string>* errors) const;
  std::string name() const override { return "xgboost"; }
  const nlohmann::json& manifest() const { return manifest_; }
  bool has_family(Family f) const { return models_.count(f) > 0; }
  // What the models know of a GPU, per family: its rows in training (0: none) and which booster
  // answers it.
  struct GpuCoverage {
    Family family = Family::unknown;
    std::size_t training_rows = 0;
    GpuScope scope = GpuScope::trained;
    bool one_booster = false;  // the family has no separate booster for GPUs not in training
  };
  std::vector<GpuCoverage> coverage(const std::string& gpu_id) const;

 private:
  std::vector<Prediction> predict_distinct(const std::vector<KernelDesc>& kernels, const GpuSpec& gpu,
                                           std::vector<std::string>* errors) const;
  std::map<Family, FamilyModel> models_;
  nlohmann::json manifest_;
};

// The predictor the tools use: the learned models from resources/models when they load, else the
// roofline baseline; `warning` says why the learned models were not used.
std::shared_ptr<const KernelPredictor> make_default_predictor(std::string* warning);

}  // namespace perfloom
