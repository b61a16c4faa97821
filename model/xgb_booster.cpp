#include "model/xgb_booster.h"

#include <xgboost/c_api.h>
#include <cmath>
#include <cstdint>
#include <string>

#include "model/json_fields.h"

namespace perfloom {

namespace {
void check(int rc, const std::string& what) {
  if (rc != 0) throw XgbError("XGBoost " + what + ": " + XGBGetLastError());
}
}  // namespace

XgbBooster::XgbBooster() : mutex_(std::make_unique<std::mutex>()) {}
XgbBooster::~XgbBooster() {
  if (handle_) XGBoosterFree(handle_);
}
XgbBooster::XgbBooster(XgbBooster&& o) noexcept : handle_(o.handle_), mutex_(std::move(o.mutex_)) {
  o.handle_ = nullptr;
}
XgbBooster& XgbBooster::operator=(XgbBooster&& o) noexcept {
  if (this != &o) {
    if (handle_) XGBoosterFree(handle_);
    handle_ = o.handle_;
    mutex_ = std::move(o.mutex_);
    o.handle_ = nullptr;
  }
  return *this;
}

XgbBooster XgbBooster::train(const std::vector<float>& features, std::size_t rows, std::size_t cols,
                             const std::vector<float>& labels, const std::vector<float>& weights,
                             const std::map<std::string, std::string>& params, int rounds,
                             const std::vector<unsigned>& groups) {
  if (rows == 0 || features.size() != rows * cols || labels.size() != rows)
    throw XgbError("XGBoost training: inconsistent matrix (" + std::to_string(rows) + " rows, " + std::to_string(cols) +
                   " columns, " + std::to_string(features.size()) + " values)");
  DMatrixHandle dm = nullptr;
  check(XGDMatrixCreateFromMat(features.data(), rows, cols, NAN, &dm), "matrix");
  std::unique_ptr<void, int (*)(DMatrixHandle)> dm_guard(dm, XGDMatrixFree);
  check(XGDMatrixSetFloatInfo(dm, "label", labels.data(), rows), "labels");
  if (!weights.empty()) check(XGDMatrixSetFloatInfo(dm, "weight", weights.data(), rows), "weights");
  if (!groups.empty()) {
    std::size_t total = 0;
    for (unsigned g : groups) total += g;
    if (total != rows)
      throw XgbError("XGBoost training: query groups cover " + std::to_string(total) + " of " + std::to_string(rows) +
                     " rows");
    check(XGDMatrixSetUIntInfo(dm, "group", groups.data(), groups.size()), "groups");
  }
  XgbBooster b;
  check(XGBoosterCreate(&dm, 1, &b.handle_), "create");
  for (const auto& [k, v] : params) check(XGBoosterSetParam(b.handle_, k.c_str(), v.c_str()), "parameter " + k);
  for (int i = 0; i < rounds; ++i) check(XGBoosterUpdateOneIter(b.handle_, i, dm), "round " + std::to_string(i));
  return b;
}

XgbBooster XgbBooster::load_json(const std::string& json_text, const std::string& label) {
  // XGBoost's JSON reader recurses once per level: a file nested 100,000 deep would overflow the
  // stack. Its own models nest about 10 levels.
  if (json_nests_deeper_than(json_text, kMaxJsonDepth))
    throw XgbError(label + ": not a usable XGBoost model: nests deeper than " + std::to_string(kMaxJsonDepth) +
                   " levels");
  XgbBooster b;
  check(XGBoosterCreate(nullptr, 0, &b.handle_), "create");
  if (XGBoosterLoadModelFromBuffer(b.handle_, json_text.data(), json_text.size()) != 0)
    throw XgbError(label + ": not a usable XGBoost model: " + XGBGetLastError());
  return b;
}

std::string XgbBooster::save_json() const {
  bst_ulong len = 0;
  const char* data = nullptr;
  std::lock_guard<std::mutex> lock(*mutex_);
  check(XGBoosterSaveModelToBuffer(handle_, R"({"format": "json"})", &len, &data), "save");
  return std::string(data, len);
}

std::vector<float> XgbBooster::predict(const float* features, std::size_t rows, std::size_t cols) const {
  if (rows == 0) return {};
  const std::string array = R"({"data": [)" + std::to_string(reinterpret_cast<std::uintptr_t>(features)) +
                            R"(, true], "shape": [)" + std::to_string(rows) + ", " + std::to_string(cols) +
                            R"(], "typestr": "<f4", "version": 3})";
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false, "cache_id": 0, "missing": -3.4e38})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  std::lock_guard<std::mutex> lock(*mutex_);
  check(XGBoosterPredictFromDense(handle_, array.c_str(), config, nullptr, &shape, &dim, &out), "prediction");
  return std::vector<float>(out, out + rows);
}

void XgbBooster::set_param(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(*mutex_);
  check(XGBoosterSetParam(handle_, name.c_str(), value.c_str()), "parameter " + name);
}

std::size_t XgbBooster::num_features() const {
  bst_ulong n = 0;
  check(XGBoosterGetNumFeature(handle_, &n), "feature count");
  return n;
}

}  // namespace perfloom
