#include "model/tuner/variant_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "model/analysis.h"

namespace perfloom::tuner {

const std::array<std::string, kVariantFeatureCount>& variant_feature_names() {
  static const std::array<std::string, kVariantFeatureCount> names = [] {
    std::array<std::string, kVariantFeatureCount> n;
    std::size_t i = 0;
    for (const auto& v : learned_names()) n[i++] = v;
    for (const char* v : {"variant:log2_tiles_m", "variant:log2_tiles_n", "variant:custom_bit0", "variant:custom_bit1",
                          "variant:custom_bit2"})
      n[i++] = v;
    return n;
  }();
  return names;
}

std::array<float, kVariantFeatureCount> variant_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f,
                                                         int custom) {
  std::array<float, kVariantFeatureCount> row{};
  const auto l = learned_features(s, t, f);
  std::copy(l.begin(), l.end(), row.begin());
  std::size_t i = kLearnedCount;
  row[i++] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(1, f.grid.tiles_m))));
  row[i++] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(1, f.grid.tiles_n))));
  for (int b = 0; b < 3; ++b) row[i++] = static_cast<float>((custom >> b) & 1);
  return row;
}

namespace {

// What an nvjet kernel's name says of its variant (nvjet_variant_label, nvjet_custom_option).
struct NvjetName {
  bool nvjet = false;
  bool raster_v = false, raster_h = false;  // "_v_" / "_h_"
  bool coop = false;                        // coopA or coopB
  std::string order;                        // the operand order: the name's last three letters (TNT / TNN), else empty
};
NvjetName parse_nvjet_name(const std::string& kernel_name) {
  NvjetName n;
  const std::string k = kernel_name.substr(0, kernel_name.find(' '));
  if (k.rfind("nvjet", 0) != 0) return n;
  n.nvjet = true;
  n.raster_v = k.find("_v_") != std::string::npos;
  n.raster_h = k.find("_h_") != std::string::npos;
  n.coop = k.find("coopA") != std::string::npos || k.find("coopB") != std::string::npos;
  const std::size_t u = k.find_last_of('_');
  if (u != std::string::npos && k.size() - u - 1 == 3) n.order = k.substr(u + 1);
  return n;
}

}  // namespace

std::string nvjet_variant_label(const std::string& kernel_name) {
  const NvjetName n = parse_nvjet_name(kernel_name);
  if (!n.nvjet) return {};
  std::string label;
  if (n.raster_v) label = "raster v";
  if (n.raster_h) label = "raster h";
  if (n.coop) label += std::string(label.empty() ? "" : ", ") + "cooperative";
  if (!n.order.empty()) label += std::string(label.empty() ? "" : ", ") + n.order;
  return label;
}

int nvjet_custom_option(const std::string& kernel_name) {
  const NvjetName n = parse_nvjet_name(kernel_name);
  if (!n.nvjet || n.raster_h == n.raster_v || (n.order != "TNT" && n.order != "TNN")) return -1;
  return (n.order == "TNT" ? 1 : 0) | (n.raster_h ? 2 : 0) | (n.coop ? 4 : 0);
}

namespace {

WaveFeatures features_for(const GemmShape& shape, const TileConfig& config, const GpuSpec& gpu,
                          const SlotsByCluster& slots) {
  const HardwareRates hw = hardware_rates(gpu, shape.dtype);
  return wave_features(shape, config, hw, slots);
}

}  // namespace

VariantModel fit_variant_model(const std::vector<VariantSample>& samples, const GpuSpec& gpu,
                               const SlotsByCluster& slots, const VariantFitOptions& opt) {
  VariantModel m;
  // Points: (shape, exact configuration) -> the options timed there.
  using PointKey = std::tuple<int, int64_t, int64_t, int64_t, ConfigKey>;
  std::map<PointKey, std::vector<const VariantSample*>> points;
  std::map<int, std::map<std::string, int>> label_counts;
  for (const auto& s : samples) {
    if (!(s.latency_us > 0) || !std::isfinite(s.latency_us) || s.custom < 0) continue;
    points[{static_cast<int>(s.shape.dtype), s.shape.M, s.shape.N, s.shape.K, config_key(s.config)}].push_back(&s);
    auto& acc = m.accepted[dtype_group(s.shape.dtype)][config_key(s.config)];
    if (std::find(acc.begin(), acc.end(), s.custom) == acc.end())
      acc.insert(std::upper_bound(acc.begin(), acc.end(), s.custom), s.custom);
    if (const std::string l = nvjet_variant_label(s.kernel); !l.empty()) ++label_counts[s.custom][l];
  }
  for (const auto& [custom, counts] : label_counts)
    m.labels[custom] = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                         return a.second < b.second;
                       })->first;
  std::vector<float> x, y;
  for (const auto& [key, rows] : points) {
    std::set<int> customs;
    for (const VariantSample* s : rows) customs.insert(s->custom);
    if (customs.size() < 2) continue;
    double best = INFINITY;
    for (const VariantSample* s : rows) best = std::min(best, s->latency_us);
    const WaveFeatures f = features_for(rows.front()->shape, rows.front()->config, gpu, slots);
    for (const VariantSample* s : rows) {
      const auto r = variant_features(s->shape, s->config, f, s->custom);
      x.insert(x.end(), r.begin(), r.end());
      y.push_back(static_cast<float>(std::log(s->latency_us / best)));
    }
    ++m.points;
  }
  if (m.points < 20) {
    m.points = 0;
    return m;
  }
  m.booster = std::make_shared<XgbBooster>(XgbBooster::train(x, y.size(), kVariantFeatureCount, y, {},
                                                             {{"objective", "reg:squarederror"},
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

namespace {

// The options the model may name for `config`: those cuBLASLt accepted for it where it was measured,
// else those every measured configuration of the same tile (and split-K or not) was accepted with,
// whatever its cluster; empty: none.
std::vector<int> accepted_options(const VariantModel& model, const GemmShape& shape, const TileConfig& config) {
  const auto g = model.accepted.find(dtype_group(shape.dtype));
  if (g == model.accepted.end()) return {};
  const ConfigKey want = config_key(config);
  if (const auto a = g->second.find(want); a != g->second.end()) return a->second;
  std::vector<int> customs;
  bool any = false;
  for (const auto& [k, v] : g->second) {
    if (k.tile_m != want.tile_m || k.tile_n != want.tile_n || k.tile_k != want.tile_k ||
        (k.split_k > 1) != (want.split_k > 1))
      continue;
    if (!any) {
      customs = v;
    } else {
      std::vector<int> both;
      std::set_intersection(customs.begin(), customs.end(), v.begin(), v.end(), std::back_inserter(both));
      customs = std::move(both);
    }
    any = true;
  }
  return customs;
}

// The model's input rows of `config` at `shape`, one per option of `options`, appended to `rows`;
// returns how many.
std::size_t append_option_rows(std::vector<float>& rows, const GemmShape& shape, const TileConfig& config,
                               const std::vector<int>& options, const GpuSpec& gpu, const SlotsByCluster& slots) {
  const WaveFeatures f = features_for(shape, config, gpu, slots);
  for (int custom : options) {
    const auto r = variant_features(shape, config, f, custom);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return options.size();
}

}  // namespace

std::vector<int> choose_variants(const VariantModel& model, const GpuSpec& gpu, const SlotsByCluster& slots,
                                 const GemmShape& shape, const std::vector<TileConfig>& configs) {
  std::vector<int> out(configs.size(), -1);
  if (!model.booster) return out;
  std::vector<std::vector<int>> options(configs.size());
  std::vector<float> rows;
  std::size_t n = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    options[i] = accepted_options(model, shape, configs[i]);
    if (options[i].size() == 1) out[i] = options[i].front();
    if (options[i].size() < 2) continue;
    n += append_option_rows(rows, shape, configs[i], options[i], gpu, slots);
  }
  if (n == 0) return out;
  const std::vector<float> p = model.booster->predict(rows.data(), n, kVariantFeatureCount);  // one batched call
  std::size_t at = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (options[i].size() < 2) continue;
    const auto first = p.begin() + static_cast<std::ptrdiff_t>(at),
               last = first + static_cast<std::ptrdiff_t>(options[i].size());
    out[i] = options[i][static_cast<std::size_t>(std::min_element(first, last) - first)];
    at += options[i].size();
  }
  return out;
}

std::size_t to_fastest_option(std::vector<TunerSample>& samples, const VariantModel& model, const GpuSpec& gpu,
                              const SlotsByCluster& slots) {
  if (!model.booster) return 0;
  // Per sample its options (its own first), their feature rows in one batch.
  std::vector<std::pair<std::size_t, std::size_t>> spans(samples.size(), {0, 0});  // first row, options
  std::vector<float> rows;
  std::size_t n = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const TunerSample& s = samples[i];
    if (s.custom_option < 0) continue;
    std::vector<int> options = accepted_options(model, s.shape, s.config);
    options.erase(std::remove(options.begin(), options.end(), s.custom_option), options.end());
    if (options.empty()) continue;
    options.insert(options.begin(), s.custom_option);
    spans[i] = {n, options.size()};
    n += append_option_rows(rows, s.shape, s.config, options, gpu, slots);
  }
  if (n == 0) return 0;
  const std::vector<float> p = model.booster->predict(rows.data(), n, kVariantFeatureCount);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto [at, count] = spans[i];
    if (count == 0) continue;
    const auto first = p.begin() + static_cast<std::ptrdiff_t>(at);
    const double excess =
        static_cast<double>(first[0]) - *std::min_element(first, first + static_cast<std::ptrdiff_t>(count));
    if (excess <= 0) continue;
    samples[i].latency_us /= std::exp(excess);
    ++changed;
  }
  return changed;
}

int choose_variant(const VariantModel& model, const GpuSpec& gpu, const SlotsByCluster& slots, const GemmShape& shape,
                   const TileConfig& config) {
  return choose_variants(model, gpu, slots, shape, {config}).front();
}

}  // namespace perfloom::tuner
