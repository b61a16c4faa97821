#include "model/tuner/tuner_table.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "model/compressed_text.h"
#include "model/resources.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/variant_model.h"

namespace perfloom::tuner {

void index_catalogue(GroupTable& group) {
  group.catalogue.clear();
  std::set<ConfigKey> seen;
  auto add = [&](const TileConfig& c) {
    if (!seen.insert(config_key(c)).second) return;
    TileConfig t = c;
    t.stages = 0;
    group.catalogue.push_back(t);
  };
  for (const auto& [key, configs] : group.buckets)
    for (const auto& c : configs) add(c);
  for (const auto& w : group.winners)
    for (const auto& c : w.configs) add(c);
  for (const auto& c : group.common) add(c);
}

using nlohmann::json;

namespace {
// 2: the wave grid counts whole clusters (WaveGrid::cluster_ctas); a table fitted on the unpadded
// grid of schema 1 would rank with coefficients of other features, so it is refused.
constexpr std::string_view kSchema = "perfloom-tuner/2";

[[noreturn]] void fail(const std::string& label, const std::string& field, const std::string& reason) {
  throw TunerTableError(label + (field.empty() ? "" : ": field '" + field + "'") + ": " + reason);
}

std::optional<int> parse_positive(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string tile_text(const TileClassKey& k) {
  return std::to_string(k.tile_m) + "x" + std::to_string(k.tile_n) + "x" + std::to_string(k.tile_k);
}

json coef_json(const Coefficients& c) {
  // Seven significant digits: far below the model's error, and a third of the text.
  json a = json::array();
  for (double v : c) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v);
    a.push_back(std::strtod(buf, nullptr));
  }
  return a;
}

Coefficients coef_from(const json& j, const std::string& label, const std::string& field) {
  if (!j.is_array()) fail(label, field, "is not an array of numbers");
  if (j.size() != kFeatureCount)
    fail(label, field, "has " + std::to_string(j.size()) + " coefficients, this build's model has " +
                           std::to_string(kFeatureCount));
  Coefficients c{};
  for (std::size_t i = 0; i < kFeatureCount; ++i) {
    if (!j[i].is_number()) fail(label, field, "coefficient " + std::to_string(i) + " is not a number");
    c[i] = j[i].get<double>();
    if (!std::isfinite(c[i])) fail(label, field, "coefficient " + std::to_string(i) + " is not finite");
  }
  return c;
}

const json& need(const json& obj, const char* key, const std::string& label, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(label, where.empty() ? key : where + "." + key, "is missing");
  return *it;
}

int need_int(const json& obj, const char* key, const std::string& label, const std::string& where, int min) {
  const json& v = need(obj, key, label, where);
  const std::string f = where.empty() ? key : where + "." + key;
  if (!v.is_number_integer()) fail(label, f, "is not an integer");
  const auto x = v.get<int64_t>();
  if (x < min) fail(label, f, "is " + std::to_string(x) + ", below " + std::to_string(min));
  return static_cast<int>(x);
}

// The names of a model's inputs, as a table stores them.
template <class Names>
json names_json(const Names& names) {
  json a = json::array();
  for (const auto& n : names) a.push_back(std::string(n));
  return a;
}

// Refuses a model whose stored input names (`field`) are not this build's: it was trained on other features.
void expect_names(const json& found, const json& expected, const std::string& label, const std::string& field,
                  const std::string& model) {
  if (found != expected)
    fail(label, field, "are " + found.dump() + ", this build's " + model + " uses " + expected.dump() +
                           "; refit the table with perfloom-tuner-fit");
}

// An XGBoost model of a table (the learned residual, the chooser, the variant model): a JSON object
// that XGBoost loads and that takes `features` inputs; predicted on one thread (a query predicts a few
// dozen rows: one thread is faster than a team).
std::shared_ptr<const XgbBooster> load_booster(const json& m, const std::string& label, const std::string& field,
                                               std::size_t features) {
  if (!m.is_object()) fail(label, field, "is not an XGBoost model (a JSON object)");
  try {
    auto b = std::make_shared<XgbBooster>(XgbBooster::load_json(m.dump(), label + ": " + field));
    if (b->num_features() != features)
      fail(label, field, "takes " + std::to_string(b->num_features()) + " features, expected " + std::to_string(features));
    b->set_param("nthread", "1");
    return b;
  } catch (const XgbError& e) {
    fail(label, field, e.what());
  }
}

// config_key_string of an exact configuration (tile, split-K, cluster).
std::string config_key_text(const ConfigKey& k) {
  TileConfig t;
  t.tile_m = k.tile_m;
  t.tile_n = k.tile_n;
  t.tile_k = k.tile_k;
  t.split_k = k.split_k;
  t.cluster_m = k.cluster_m;
  t.cluster_n = k.cluster_n;
  return config_key_string(t);
}
}  // namespace

ConfigKey config_key(const TileConfig& t) {
  return {t.tile_m, t.tile_n, t.tile_k, std::max(1, t.split_k), std::max(1, t.cluster_m), std::max(1, t.cluster_n)};
}

std::string config_key_string(const TileConfig& t) {
  TileConfig c = t;
  c.stages = 0;
  return config_to_string(c);
}

double group_latency(const GroupTable& group, const GemmShape& shape, const TileConfig& config, const WaveFeatures& f,
                     int* class_samples, bool with_correction) {
  const Coefficients* coef = &group.global;
  int samples = 0;
  if (auto it = group.classes.find(class_of(config)); it != group.classes.end()) {
    coef = &it->second.coef;
    samples = it->second.samples;
  }
  if (class_samples) *class_samples = samples;
  double lat = 0;
  for (std::size_t i = 0; i < kFeatureCount; ++i) lat += (*coef)[i] * f.x[i];
  // A linear fit can dip below what the hardware allows far from its data: never below 80% of the
  // compulsory DRAM time or a microsecond.
  lat = std::max({lat, 0.8 * f.x[kDramFeature], 1.0});
  if (!with_correction) return lat;
  const auto z = residual_features(shape, config, f);
  double log_corr = 0;
  for (std::size_t i = 0; i < kResidualCount; ++i) log_corr += group.residual[i] * z[i];
  double factor = std::exp(std::clamp(log_corr, -1.0, 1.0));
  if (!group.config_factor.empty())
    if (auto it = group.config_factor.find(config_key(config)); it != group.config_factor.end()) factor *= it->second;
  return std::max(1.0, lat * factor);
}

std::vector<double> learned_factors(const GroupTable& group, const GemmShape& shape, const std::vector<TileConfig>& configs,
                                    const std::vector<WaveFeatures>& features) {
  std::vector<double> out(configs.size(), 1.0);
  if (!group.learned || configs.empty()) return out;
  const std::vector<float> p = predict_each_config(*group.learned, shape, configs, features, learned_features);
  for (std::size_t i = 0; i < configs.size(); ++i) out[i] = std::exp(std::clamp(static_cast<double>(p[i]), -1.0, 1.0));
  return out;
}

const std::array<std::string, kRankerCount>& ranker_names() {
  static const std::array<std::string, kRankerCount> names = [] {
    std::array<std::string, kRankerCount> n;
    std::size_t i = 0;
    for (const auto& v : learned_names()) n[i++] = v;
    for (const char* v : {"model:log_pred_gap", "model:log_score_gap", "model:score_rank"}) n[i++] = v;
    return n;
  }();
  return names;
}

std::vector<float> ranker_rows(const GemmShape& shape, const std::vector<TileConfig>& configs,
                               const std::vector<WaveFeatures>& features, const std::vector<double>& pred_us,
                               const std::vector<double>& score) {
  const std::size_t n = configs.size();
  std::vector<float> rows;
  rows.reserve(n * kRankerCount);
  if (n == 0) return rows;
  double min_lp = INFINITY, min_ls = INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    min_lp = std::min(min_lp, std::log(pred_us[i]));
    min_ls = std::min(min_ls, std::log(score[i]));
  }
  std::vector<std::size_t> order(n), pos(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
  for (std::size_t r = 0; r < n; ++r) pos[order[r]] = r;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = learned_features(shape, configs[i], features[i]);
    rows.insert(rows.end(), x.begin(), x.end());
    rows.push_back(static_cast<float>(std::log(pred_us[i]) - min_lp));
    rows.push_back(static_cast<float>(std::log(score[i]) - min_ls));
    rows.push_back(static_cast<float>(std::min<std::size_t>(pos[i], 10)));
  }
  return rows;
}

TileClassKey class_of(const TileConfig& t) { return {t.tile_m, t.tile_n, t.tile_k, t.split_k > 1}; }

BucketKey bucket_of(int64_t M, int64_t N, int64_t K) {
  auto octave = [](int64_t x) { return x <= 1 ? 0 : static_cast<int>(std::floor(std::log2(static_cast<double>(x)))); };
  return {octave(M), octave(N), octave(K)};
}

std::string config_to_string(const TileConfig& t) {
  std::string s = std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + "x" + std::to_string(t.tile_k) + "/s" +
                  std::to_string(std::max(1, t.split_k)) + "/c" + std::to_string(std::max(1, t.cluster_m)) + "x" +
                  std::to_string(std::max(1, t.cluster_n));
  if (t.stages > 0) s += "/st" + std::to_string(t.stages);
  return s;
}

TileConfig config_from_string(std::string_view text) {
  auto bad = [&](const std::string& why) -> TileConfig {
    throw TunerTableError("configuration '" + std::string(text) + "': " + why +
                          " (expected MxNxK/sS/cAxB[/stN], e.g. 128x256x64/s1/c1x2)");
  };
  const auto parts = split(text, '/');
  if (parts.size() < 3 || parts.size() > 4) return bad("wrong number of '/' parts");
  const auto dims = split(parts[0], 'x');
  if (dims.size() != 3) return bad("tile is not MxNxK");
  TileConfig t;
  auto m = parse_positive(dims[0]), n = parse_positive(dims[1]), k = parse_positive(dims[2]);
  if (!m || !n || !k) return bad("tile sizes must be positive integers");
  t.tile_m = *m;
  t.tile_n = *n;
  t.tile_k = *k;
  if (parts[1].size() < 2 || parts[1][0] != 's') return bad("split-K part is not sN");
  auto s = parse_positive(parts[1].substr(1));
  if (!s) return bad("split-K must be a positive integer");
  t.split_k = *s;
  if (parts[2].size() < 2 || parts[2][0] != 'c') return bad("cluster part is not cAxB");
  const auto cl = split(parts[2].substr(1), 'x');
  if (cl.size() != 2) return bad("cluster part is not cAxB");
  auto cm = parse_positive(cl[0]), cn = parse_positive(cl[1]);
  if (!cm || !cn) return bad("cluster sizes must be positive integers");
  t.cluster_m = *cm;
  t.cluster_n = *cn;
  if (parts.size() == 4) {
    if (parts[3].size() < 3 || parts[3].substr(0, 2) != "st") return bad("stages part is not stN");
    auto st = parse_positive(parts[3].substr(2));
    if (!st) return bad("stages must be a positive integer");
    t.stages = *st;
  }
  return t;
}

std::string tuner_table_to_json(const TunerTable& table) {
  // Hand-laid out: one line per class and per bucket keeps the file small and diffable.
  auto q = [](const std::string& s) { return json(s).dump(); };
  std::ostringstream os;
  os << "{\n \"schema\": " << q(std::string(kSchema)) << ",\n \"gpu\": " << q(table.gpu_id)
     << ",\n \"sm_count\": " << table.sm_count << ",\n \"source\": " << q(table.source) << ",\n \"features\": [";
  for (std::size_t i = 0; i < kFeatureCount; ++i) os << (i ? ", " : "") << q(std::string(feature_names()[i]));
  os << "],\n \"support_penalty\": " << json(table.support_penalty).dump() << ",\n \"slots_by_cluster\": {";
  bool first = true;
  for (const auto& [cs, slots] : table.slots_by_cluster) {
    os << (first ? "" : ", ") << q(std::to_string(cs)) << ": " << slots;
    first = false;
  }
  os << "},\n \"groups\": {";
  first = true;
  for (const auto& [name, g] : table.groups) {
    os << (first ? "" : ",") << "\n  " << q(name) << ": {\n   \"shapes\": " << g.shapes << ", \"samples\": " << g.samples
       << ",\n   \"global\": " << coef_json(g.global).dump() << ",\n   \"classes\": [";
    first = false;
    bool f2 = true;
    for (const auto& [key, fit] : g.classes) {
      json c = {{"tile", tile_text(key)}, {"split", key.split}, {"samples", fit.samples}, {"coef", coef_json(fit.coef)}};
      os << (f2 ? "\n    " : ",\n    ") << c.dump();
      f2 = false;
    }
    os << "\n   ],\n   \"buckets\": [";
    f2 = true;
    for (const auto& [key, configs] : g.buckets) {
      json c = json::array();
      for (const auto& t : configs) c.push_back(config_to_string(t));
      json b = {{"m", key.m}, {"n", key.n}, {"k", key.k}, {"configs", c}};
      os << (f2 ? "\n    " : ",\n    ") << b.dump();
      f2 = false;
    }
    json common = json::array();
    for (const auto& t : g.common) common.push_back(config_to_string(t));
    os << "\n   ],\n   \"common\": " << common.dump();
    if (!g.winners.empty()) {
      os << ",\n   \"winners\": [";  // [M, N, K, configuration...] per measured shape
      f2 = true;
      for (const auto& w : g.winners) {
        json row = {w.M, w.N, w.K};
        for (const auto& t : w.configs) row.push_back(config_to_string(t));
        os << (f2 ? "\n    " : ",\n    ") << row.dump();
        f2 = false;
      }
      os << "\n   ]";
    }
    if (std::any_of(g.residual.begin(), g.residual.end(), [](double v) { return v != 0; })) {
      json names = json::array(), vals = json::array();
      for (std::size_t i = 0; i < kResidualCount; ++i) {
        names.push_back(std::string(residual_names()[i]));
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.7g", g.residual[i]);
        vals.push_back(std::strtod(buf, nullptr));
      }
      os << ",\n   \"residual_features\": " << names.dump() << ",\n   \"residual\": " << vals.dump();
    }
    if (!g.config_factor.empty()) {
      os << ",\n   \"config_factor\": {";
      bool f3 = true;
      for (const auto& [k, v] : g.config_factor) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.5g", v);
        os << (f3 ? "\n    " : ",\n    ") << q(config_key_text(k)) << ": " << buf;
        f3 = false;
      }
      os << "\n   }";
    }
    if (g.interval.rows > 0) {
      char lo[32], hi[32];
      std::snprintf(lo, sizeof lo, "%.5g", g.interval.lo_log);
      std::snprintf(hi, sizeof hi, "%.5g", g.interval.hi_log);
      os << ",\n   \"interval\": {\"p10_log_ratio\": " << lo << ", \"p90_log_ratio\": " << hi << ", \"rows\": " << g.interval.rows << "}";
    }
    if (g.learned)
      os << ",\n   \"learned_features\": " << names_json(learned_names()).dump() << ",\n   \"learned\": " << g.learned->save_json();
    os << "\n  }";
  }
  os << "\n }";
  if (table.ranker.booster) {
    os << ",\n \"ranker\": {\"objective\": " << q(table.ranker.objective) << ", \"grading\": " << q(table.ranker.grading)
       << ", \"shapes\": " << table.ranker.shapes << ",\n  \"features\": " << names_json(ranker_names()).dump()
       << ",\n  \"model\": " << table.ranker.booster->save_json() << "}";
  }
  if (table.variants.booster) {
    const VariantModel& v = table.variants;
    json labels = json::object(), accepted = json::object();
    for (const auto& [c, l] : v.labels) labels[std::to_string(c)] = l;
    for (const auto& [group, configs] : v.accepted) {
      json g = json::object();
      for (const auto& [k, customs] : configs) g[config_key_text(k)] = customs;
      accepted[group] = std::move(g);
    }
    os << ",\n \"variants\": {\"points\": " << v.points << ",\n  \"features\": " << names_json(variant_feature_names()).dump()
       << ",\n  \"labels\": " << labels.dump() << ",\n  \"accepted\": " << accepted.dump()
       << ",\n  \"model\": " << v.booster->save_json() << "}";
  }
  if (table.acceptance.booster) {
    const AcceptanceModel& a = table.acceptance;
    char thr[32];
    std::snprintf(thr, sizeof thr, "%.6g", a.threshold);
    os << ",\n \"acceptance\": {\"points\": " << a.points << ", \"refused\": " << a.refused << ", \"threshold\": " << thr
       << ",\n  \"features\": " << names_json(acceptance_feature_names()).dump() << ",\n  \"model\": " << a.booster->save_json()
       << "}";
  }
  os << "\n}\n";
  return os.str();
}

TunerTable parse_tuner_table(std::string_view json_text, const std::string& label) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(label, "", std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) fail(label, "", "is not a JSON object");
  const json& schema = need(j, "schema", label, "");
  if (!schema.is_string() || schema.get<std::string>() != kSchema)
    fail(label, "schema", "is " + schema.dump() + ", expected \"" + std::string(kSchema) + "\"");
  TunerTable t;
  t.label = label;
  const json& gpu = need(j, "gpu", label, "");
  if (!gpu.is_string() || gpu.get<std::string>().empty()) fail(label, "gpu", "is not a GPU id");
  t.gpu_id = gpu.get<std::string>();
  t.sm_count = need_int(j, "sm_count", label, "", 1);
  if (auto it = j.find("source"); it != j.end() && it->is_string()) t.source = it->get<std::string>();
  expect_names(need(j, "features", label, ""), names_json(feature_names()), label, "features", "model");
  const json& pen = need(j, "support_penalty", label, "");
  if (!pen.is_number() || !std::isfinite(pen.get<double>()) || pen.get<double>() < 0)
    fail(label, "support_penalty", "must be a non-negative number");
  t.support_penalty = pen.get<double>();
  if (auto it = j.find("slots_by_cluster"); it != j.end()) {
    if (!it->is_object()) fail(label, "slots_by_cluster", "is not an object");
    for (auto s = it->begin(); s != it->end(); ++s) {
      auto cs = parse_positive(s.key());
      if (!cs || !s.value().is_number_integer() || s.value().get<int64_t>() <= 0)
        fail(label, "slots_by_cluster." + s.key(), "must map a positive cluster size to a positive CTA count");
      t.slots_by_cluster[*cs] = s.value().get<int>();
    }
  }
  const json& groups = need(j, "groups", label, "");
  if (!groups.is_object() || groups.empty()) fail(label, "groups", "must be a non-empty object");
  for (auto g = groups.begin(); g != groups.end(); ++g) {
    const std::string where = "groups." + g.key();
    const json& gj = g.value();
    if (!gj.is_object()) fail(label, where, "is not an object");
    GroupTable gt;
    gt.shapes = need_int(gj, "shapes", label, where, 0);
    gt.samples = need_int(gj, "samples", label, where, 0);
    gt.global = coef_from(need(gj, "global", label, where), label, where + ".global");
    const json& classes = need(gj, "classes", label, where);
    if (!classes.is_array()) fail(label, where + ".classes", "is not an array");
    for (std::size_t i = 0; i < classes.size(); ++i) {
      const std::string cw = where + ".classes[" + std::to_string(i) + "]";
      const json& c = classes[i];
      if (!c.is_object()) fail(label, cw, "is not an object");
      const json& tile = need(c, "tile", label, cw);
      if (!tile.is_string()) fail(label, cw + ".tile", "is not a string");
      TileConfig tc;
      try {
        tc = config_from_string(tile.get<std::string>() + "/s1/c1x1");
      } catch (const TunerTableError& e) {
        fail(label, cw + ".tile", e.what());
      }
      const json& split = need(c, "split", label, cw);
      if (!split.is_boolean()) fail(label, cw + ".split", "is not true/false");
      TileClassKey key{tc.tile_m, tc.tile_n, tc.tile_k, split.get<bool>()};
      ClassFit fit;
      fit.samples = need_int(c, "samples", label, cw, 0);
      fit.coef = coef_from(need(c, "coef", label, cw), label, cw + ".coef");
      if (!gt.classes.emplace(key, fit).second) fail(label, cw, "repeats class " + tile.get<std::string>());
    }
    auto configs_from = [&](const json& arr, const std::string& w) {
      if (!arr.is_array()) fail(label, w, "is not an array");
      std::vector<TileConfig> out;
      for (std::size_t i = 0; i < arr.size(); ++i) {
        if (!arr[i].is_string()) fail(label, w + "[" + std::to_string(i) + "]", "is not a string");
        try {
          out.push_back(config_from_string(arr[i].get<std::string>()));
        } catch (const TunerTableError& e) {
          fail(label, w + "[" + std::to_string(i) + "]", e.what());
        }
      }
      return out;
    };
    const json& buckets = need(gj, "buckets", label, where);
    if (!buckets.is_array()) fail(label, where + ".buckets", "is not an array");
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const std::string bw = where + ".buckets[" + std::to_string(i) + "]";
      const json& b = buckets[i];
      if (!b.is_object()) fail(label, bw, "is not an object");
      BucketKey key{need_int(b, "m", label, bw, 0), need_int(b, "n", label, bw, 0), need_int(b, "k", label, bw, 0)};
      auto configs = configs_from(need(b, "configs", label, bw), bw + ".configs");
      if (configs.empty()) fail(label, bw + ".configs", "is empty");
      if (!gt.buckets.emplace(key, std::move(configs)).second) fail(label, bw, "repeats a bucket");
    }
    gt.common = configs_from(need(gj, "common", label, where), where + ".common");
    if (auto it = gj.find("winners"); it != gj.end()) {
      if (!it->is_array()) fail(label, where + ".winners", "is not an array");
      for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string ww = where + ".winners[" + std::to_string(i) + "]";
        const json& row = (*it)[i];
        if (!row.is_array() || row.size() < 4)
          fail(label, ww, "is not [M, N, K, configuration...] with at least one configuration");
        for (int d = 0; d < 3; ++d)
          if (!row[d].is_number_integer() || row[d].get<int64_t>() <= 0)
            fail(label, ww + "[" + std::to_string(d) + "]", "is not a positive integer");
        gt.winners.emplace_back(row[0].get<int64_t>(), row[1].get<int64_t>(), row[2].get<int64_t>(),
                                configs_from(json(row.begin() + 3, row.end()), ww + ".configurations"));
      }
    }
    if (auto it = gj.find("residual"); it != gj.end()) {
      expect_names(need(gj, "residual_features", label, where), names_json(residual_names()), label,
                   where + ".residual_features", "model");
      if (!it->is_array() || it->size() != kResidualCount)
        fail(label, where + ".residual", "is not an array of " + std::to_string(kResidualCount) + " numbers");
      for (std::size_t i = 0; i < kResidualCount; ++i) {
        if (!(*it)[i].is_number() || !std::isfinite((*it)[i].get<double>()))
          fail(label, where + ".residual", "value " + std::to_string(i) + " is not a finite number");
        gt.residual[i] = (*it)[i].get<double>();
      }
    }
    if (auto it = gj.find("interval"); it != gj.end()) {
      const std::string iw = where + ".interval";
      if (!it->is_object()) fail(label, iw, "is not an object");
      auto log_ratio = [&](const char* key) {
        const json& v = need(*it, key, label, iw);
        if (!v.is_number() || !std::isfinite(v.get<double>()) || std::abs(v.get<double>()) > 5)
          fail(label, iw + "." + key, "is not a finite log ratio (|x| <= 5)");
        return v.get<double>();
      };
      gt.interval.lo_log = log_ratio("p10_log_ratio");
      gt.interval.hi_log = log_ratio("p90_log_ratio");
      gt.interval.rows = need_int(*it, "rows", label, iw, 1);
      if (gt.interval.lo_log > gt.interval.hi_log) fail(label, iw, "p10_log_ratio is above p90_log_ratio");
    }
    if (auto it = gj.find("learned"); it != gj.end()) {
      expect_names(need(gj, "learned_features", label, where), names_json(learned_names()), label,
                   where + ".learned_features", "model");
      gt.learned = load_booster(*it, label, where + ".learned", kLearnedCount);
    }
    if (auto it = gj.find("config_factor"); it != gj.end()) {
      if (!it->is_object()) fail(label, where + ".config_factor", "is not an object");
      for (auto c = it->begin(); c != it->end(); ++c) {
        const std::string cw = where + ".config_factor." + c.key();
        TileConfig t;
        try {
          t = config_from_string(c.key());
        } catch (const TunerTableError& e) {
          fail(label, cw, e.what());
        }
        if (!c.value().is_number() || !(c.value().get<double>() > 0) || !std::isfinite(c.value().get<double>()))
          fail(label, cw, "must be a positive number");
        gt.config_factor[config_key(t)] = c.value().get<double>();
      }
    }
    index_catalogue(gt);
    t.groups.emplace(g.key(), std::move(gt));
  }
  if (auto it = j.find("ranker"); it != j.end()) {
    if (!it->is_object()) fail(label, "ranker", "is not an object");
    expect_names(need(*it, "features", label, "ranker"), names_json(ranker_names()), label, "ranker.features", "chooser");
    const json& m = need(*it, "model", label, "ranker");
    t.ranker.booster = load_booster(m, label, "ranker.model", kRankerCount);
    if (auto o = it->find("objective"); o != it->end() && o->is_string()) t.ranker.objective = o->get<std::string>();
    if (auto o = it->find("grading"); o != it->end() && o->is_string()) t.ranker.grading = o->get<std::string>();
    if (auto o = it->find("shapes"); o != it->end() && o->is_number_integer()) t.ranker.shapes = o->get<int>();
  }
  if (auto it = j.find("variants"); it != j.end()) {
    if (!it->is_object()) fail(label, "variants", "is not an object");
    expect_names(need(*it, "features", label, "variants"), names_json(variant_feature_names()), label, "variants.features",
                 "variant model");
    auto option = [&](const json& c, const std::string& where) {
      if (!c.is_number_integer() || c.get<long long>() < 0 || c.get<long long>() > 63)
        fail(label, where, "is " + c.dump() + ", not a cuBLASLt custom option (an integer 0..63)");
      return c.get<int>();
    };
    const json& acc = need(*it, "accepted", label, "variants");
    if (!acc.is_object()) fail(label, "variants.accepted", "is not an object of dtype groups");
    for (const auto& [group, configs] : acc.items()) {
      const std::string where = "variants.accepted." + group;
      if (!configs.is_object()) fail(label, where, "is not an object of configurations");
      auto& out = t.variants.accepted[group];
      for (const auto& [cfg, customs] : configs.items()) {
        TileConfig tc;
        try {
          tc = config_from_string(cfg);
        } catch (const TunerTableError& e) {
          fail(label, where, e.what());
        }
        if (!customs.is_array() || customs.empty()) fail(label, where + "." + cfg, "is not a list of custom options");
        std::vector<int> v;
        for (std::size_t i = 0; i < customs.size(); ++i) v.push_back(option(customs[i], where + "." + cfg + "[" + std::to_string(i) + "]"));
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        out[config_key(tc)] = std::move(v);
      }
    }
    if (auto l = it->find("labels"); l != it->end()) {
      if (!l->is_object()) fail(label, "variants.labels", "is not an object");
      for (const auto& [c, text] : l->items()) {
        int custom = -1;
        const auto r = std::from_chars(c.data(), c.data() + c.size(), custom);
        if (r.ec != std::errc() || r.ptr != c.data() + c.size() || custom < 0 || custom > 63 || !text.is_string())
          fail(label, "variants.labels." + c, "is not a custom option (0..63) with its label");
        t.variants.labels[custom] = text.get<std::string>();
      }
    }
    if (auto o = it->find("points"); o != it->end() && o->is_number_integer()) t.variants.points = o->get<int>();
    const json& m = need(*it, "model", label, "variants");
    t.variants.booster = load_booster(m, label, "variants.model", kVariantFeatureCount);
  }
  if (auto it = j.find("acceptance"); it != j.end()) {
    if (!it->is_object()) fail(label, "acceptance", "is not an object");
    expect_names(need(*it, "features", label, "acceptance"), names_json(acceptance_feature_names()), label,
                 "acceptance.features", "acceptance model");
    const json& thr = need(*it, "threshold", label, "acceptance");
    if (!thr.is_number() || !(thr.get<double>() > 0) || !(thr.get<double>() <= 1))
      fail(label, "acceptance.threshold", "is " + thr.dump() + ", not a probability in (0, 1]");
    t.acceptance.threshold = thr.get<double>();
    if (auto o = it->find("points"); o != it->end() && o->is_number_integer()) t.acceptance.points = o->get<int>();
    if (auto o = it->find("refused"); o != it->end() && o->is_number_integer()) t.acceptance.refused = o->get<int>();
    t.acceptance.booster = load_booster(need(*it, "model", label, "acceptance"), label, "acceptance.model", kAcceptanceFeatureCount);
  }
  return t;
}

void check_table_matches(const TunerTable& table, const GpuSpec& gpu) {
  const std::string label = table.label.empty() ? "tuner table" : table.label;
  if (table.gpu_id != gpu.id)
    throw TunerTableError(label + ": fitted for GPU '" + table.gpu_id + "', not for '" + gpu.id + "'");
  if (table.sm_count != gpu.sm_count)
    throw TunerTableError(label + ": fitted on " + std::to_string(table.sm_count) + " SMs but " + gpu.id + " has " +
                          std::to_string(gpu.sm_count) + "; the wave counts would be wrong");
}

namespace {
struct Bundled {
  std::map<std::string, std::variant<TunerTable, std::string>> by_id;  // a table or why it is unusable
};

// Reads every <id>.json.gz (or .json) in the resources' tuner/ folder once, at the first query: the
// tables are 7-8 MB each and are installed as files beside the predictor's models, not compiled in.
Bundled load_bundled(const std::filesystem::path& dir) {
  Bundled out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;  // no tables: every GPU uses the analytical path
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && (name.ends_with(".json.gz") || name.ends_with(".json"))) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string p = path.string();
    std::string id = path.filename().string();
    for (std::string_view ext : {".gz", ".json"})
      if (id.size() > ext.size() && id.ends_with(ext)) id.resize(id.size() - ext.size());
    try {
      std::ifstream in(path, std::ios::binary);
      if (!in) throw TunerTableError(p + ": cannot be read");
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      TunerTable t = parse_tuner_table(gunzip_if_compressed(bytes, p), p);
      if (t.gpu_id != id) throw TunerTableError(p + ": field 'gpu' is '" + t.gpu_id + "', but the file is named for '" + id + "'");
      out.by_id.emplace(id, std::move(t));
    } catch (const CompressedTextError& e) {
      out.by_id.emplace(id, std::string(e.what()));
    } catch (const TunerTableError& e) {
      out.by_id.emplace(id, std::string(e.what()));
    }
  }
  return out;
}

const Bundled& bundled() {
  // Never destroyed: the tables hold XGBoost boosters, and XGBoost's own statics may be gone by the
  // time this one's destructor would run at exit.
  static const Bundled& b = *new Bundled(load_bundled(resources_dir() / "tuner"));
  return b;
}
}  // namespace

const TunerTable* bundled_tuner_table(const GpuSpec& gpu) {
  const auto& b = bundled();
  auto it = b.by_id.find(gpu.id);
  if (it == b.by_id.end()) return nullptr;
  if (const auto* err = std::get_if<std::string>(&it->second)) throw TunerTableError(*err);
  const TunerTable& t = std::get<TunerTable>(it->second);
  check_table_matches(t, gpu);
  return &t;
}

std::vector<std::string> bundled_tuner_gpus() {
  std::vector<std::string> ids;
  for (const auto& [id, v] : bundled().by_id) ids.push_back(id);
  return ids;
}

}  // namespace perfloom::tuner
