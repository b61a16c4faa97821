#include "model/tuner/acceptance_model.h"

#include <algorithm>
#include <cmath>

#include "model/analysis.h"

namespace perfloom::tuner {

const std::array<std::string, kAcceptanceFeatureCount>& acceptance_feature_names() {
  static const std::array<std::string, kAcceptanceFeatureCount> names = [] {
    std::array<std::string, kAcceptanceFeatureCount> n;
    std::size_t i = 0;
    for (const auto& v : learned_names()) n[i++] = v;
    for (const char* v : {"acceptance:log2_tiles_m", "acceptance:log2_tiles_n"}) n[i++] = v;
    return n;
  }();
  return names;
}

std::array<float, kAcceptanceFeatureCount> acceptance_features(const GemmShape& s, const TileConfig& t,
                                                               const WaveFeatures& f) {
  std::array<float, kAcceptanceFeatureCount> row{};
  const auto l = learned_features(s, t, f);
  std::copy(l.begin(), l.end(), row.begin());
  std::size_t i = kLearnedCount;
  row[i++] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(1, f.grid.tiles_m))));
  row[i++] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(1, f.grid.tiles_n))));
  return row;
}

AcceptanceModel fit_acceptance_model(const std::vector<AcceptanceSample>& samples, const GpuSpec& gpu,
                                     const SlotsByCluster& slots, const AcceptanceFitOptions& opt) {
  AcceptanceModel m;
  std::vector<float> x, y;
  x.reserve(samples.size() * kAcceptanceFeatureCount);
  y.reserve(samples.size());
  for (const auto& s : samples) {
    const WaveFeatures f = wave_features(s.shape, s.config, hardware_rates(gpu, s.shape.dtype), slots);
    const auto r = acceptance_features(s.shape, s.config, f);
    x.insert(x.end(), r.begin(), r.end());
    y.push_back(s.accepted ? 0.0f : 1.0f);
    m.refused += s.accepted ? 0 : 1;
  }
  m.points = static_cast<int>(y.size());
  if (m.refused < 20 || m.points - m.refused < 20) return AcceptanceModel{};
  m.booster = std::make_shared<XgbBooster>(XgbBooster::train(x, y.size(), kAcceptanceFeatureCount, y, {},
                                                             {{"objective", "binary:logistic"},
                                                              {"max_depth", std::to_string(opt.depth)},
                                                              {"eta", std::to_string(opt.eta)},
                                                              {"subsample", "0.8"},
                                                              {"colsample_bytree", "0.8"},
                                                              {"min_child_weight", "2"},
                                                              {"tree_method", "hist"},
                                                              {"seed", "0"},
                                                              {"nthread", "1"}},
                                                             opt.rounds));
  return m;
}

std::vector<double> refusal_probabilities(const AcceptanceModel& model, const GemmShape& shape,
                                          const std::vector<TileConfig>& configs,
                                          const std::vector<WaveFeatures>& features) {
  std::vector<double> out(configs.size(), NAN);
  if (!model.booster || configs.empty()) return out;
  const std::vector<float> p = predict_each_config(*model.booster, shape, configs, features, acceptance_features);
  for (std::size_t i = 0; i < configs.size(); ++i) out[i] = p[i];
  return out;
}

}  // namespace perfloom::tuner
