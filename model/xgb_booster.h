#pragma once
// A thin RAII wrapper over the XGBoost C API (Debian's libxgboost 1.7): train on a dense float
// matrix, predict in place, save and load as JSON. Every failure carries XGBoost's own message.
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfloom {

class XgbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class XgbBooster {
 public:
  XgbBooster();
  ~XgbBooster();
  XgbBooster(XgbBooster&&) noexcept;
  XgbBooster& operator=(XgbBooster&&) noexcept;
  XgbBooster(const XgbBooster&) = delete;
  XgbBooster& operator=(const XgbBooster&) = delete;

  // Trains `rounds` boosting rounds on rows x cols (row-major) with labels and optional weights.
  // `groups` (optional, for the rank:* objectives): the sizes of consecutive query groups of rows.
  static XgbBooster train(const std::vector<float>& features, std::size_t rows, std::size_t cols,
                          const std::vector<float>& labels, const std::vector<float>& weights,
                          const std::map<std::string, std::string>& params, int rounds,
                          const std::vector<unsigned>& groups = {});
  // Loads a model saved by save_json(); `label` names it in errors.
  static XgbBooster load_json(const std::string& json_text, const std::string& label);
  std::string save_json() const;

  // One prediction per row. Thread-safe.
  std::vector<float> predict(const float* features, std::size_t rows, std::size_t cols) const;
  std::size_t num_features() const;
  // Sets one of XGBoost's parameters on a trained or loaded booster, e.g. "nthread" to "1" where
  // predictions come in small batches and a thread team would cost more than it saves.
  void set_param(const std::string& name, const std::string& value);
  bool empty() const { return handle_ == nullptr; }

 private:
  void* handle_ = nullptr;
  std::unique_ptr<std::mutex> mutex_;
};

}  // namespace perfloom
