#include "model/tuner/tuner_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "model/compressed_text.h"
#include "model/file_reader.h"
#include "model/json_fields.h"
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

// "LABEL: field 'FIELD': REASON", as every error of a table reads.
[[noreturn]] void raise_table_error(const std::string& label, const std::string& field, const std::string& reason) {
  throw TunerTableError(label + (field.empty() ? "" : ": field '" + field + "'") + ": " + reason);
}

const JsonReadOptions kTableOptions{false, "is missing"};
// Counts and sizes the table stores as int.
const NumberRange kCount = NumberRange::between(0, std::numeric_limits<int>::max());

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

Coefficients coef_from(const JsonValue& v) {
  const std::vector<JsonValue> a = v.array();
  if (a.size() != kFeatureCount)
    v.fail("has " + std::to_string(a.size()) + " coefficients, this build's model has " +
           std::to_string(kFeatureCount));
  Coefficients c{};
  for (std::size_t i = 0; i < kFeatureCount; ++i) c[i] = a[i].number();
  return c;
}

int count_of(const JsonFields& obj, std::string_view key, int min = 0) {
  return static_cast<int>(obj.integer(key, NumberRange::between(min, kCount.hi)));
}

// The names of a model's inputs, as a table stores them.
template <class Names>
json names_json(const Names& names) {
  json a = json::array();
  for (const auto& n : names) a.push_back(std::string(n));
  return a;
}

// Refuses a model whose stored input names (`found`) are not this build's: it was trained on other
// features. The message names the first difference, not both lists (dozens of names, and the file's
// may be anything).
template <class Names>
void expect_names(const JsonValue& found, const Names& expected, const std::string& model) {
  const std::vector<JsonValue> names = found.array();
  std::size_t i = 0;
  while (i < names.size() && i < expected.size() && names[i].value().is_string() &&
         names[i].value().template get_ref<const std::string&>() == expected[i])
    ++i;
  if (i == names.size() && i == expected.size()) return;
  std::string why = "are " + std::to_string(names.size()) + " names where this build's " + model + " uses " +
                    std::to_string(expected.size()) + ": ";
  if (i < names.size() && i < expected.size())
    why += "name " + std::to_string(i) + " is " + json_excerpt(names[i].value()) + ", not \"" +
           std::string(expected[i]) + "\"";
  else if (i < expected.size())
    why += "\"" + std::string(expected[i]) + "\" and after are missing";
  else
    why += "name " + std::to_string(i) + " (" + json_excerpt(names[i].value()) + ") and after are extra";
  found.fail(why + "; refit the table with perfloom-tuner-fit");
}

// An XGBoost model of a table (the learned residual, the chooser, the variant model): a JSON object
// that XGBoost loads and that takes `features` inputs; predicted on one thread (a query predicts a few
// dozen rows: one thread is faster than a team).
std::shared_ptr<const XgbBooster> load_booster(const JsonValue& m, std::size_t features) {
  if (!m.value().is_object()) m.fail("is not an XGBoost model (a JSON object), got " + describe_json(m.value()));
  try {
    // dump() of a parsed document: parse_json_object bounded its depth.
    auto b = std::make_shared<XgbBooster>(XgbBooster::load_json(m.value().dump(), m.file() + ": " + m.path()));
    if (b->num_features() != features)
      m.fail("takes " + std::to_string(b->num_features()) + " features, expected " + std::to_string(features));
    b->set_param("nthread", "1");
    return b;
  } catch (const XgbError& e) {
    m.fail(text_excerpt(e.what(), 4 * kExcerptChars));
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

std::vector<double> learned_factors(const GroupTable& group, const GemmShape& shape,
                                    const std::vector<TileConfig>& configs, const std::vector<WaveFeatures>& features) {
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
    throw TunerTableError("configuration '" + text_excerpt(text) + "': " + why +
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
    os << (first ? "" : ",") << "\n  " << q(name) << ": {\n   \"shapes\": " << g.shapes
       << ", \"samples\": " << g.samples << ",\n   \"global\": " << coef_json(g.global).dump()
       << ",\n   \"classes\": [";
    first = false;
    bool f2 = true;
    for (const auto& [key, fit] : g.classes) {
      json c = {
          {"tile", tile_text(key)}, {"split", key.split}, {"samples", fit.samples}, {"coef", coef_json(fit.coef)}};
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
      os << ",\n   \"interval\": {\"p10_log_ratio\": " << lo << ", \"p90_log_ratio\": " << hi
         << ", \"rows\": " << g.interval.rows << "}";
    }
    if (g.learned)
      os << ",\n   \"learned_features\": " << names_json(learned_names()).dump()
         << ",\n   \"learned\": " << g.learned->save_json();
    os << "\n  }";
  }
  os << "\n }";
  if (table.ranker.booster) {
    os << ",\n \"ranker\": {\"objective\": " << q(table.ranker.objective)
       << ", \"grading\": " << q(table.ranker.grading) << ", \"shapes\": " << table.ranker.shapes
       << ",\n  \"features\": " << names_json(ranker_names()).dump()
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
    os << ",\n \"variants\": {\"points\": " << v.points
       << ",\n  \"features\": " << names_json(variant_feature_names()).dump() << ",\n  \"labels\": " << labels.dump()
       << ",\n  \"accepted\": " << accepted.dump() << ",\n  \"model\": " << v.booster->save_json() << "}";
  }
  if (table.acceptance.booster) {
    const AcceptanceModel& a = table.acceptance;
    char thr[32];
    std::snprintf(thr, sizeof thr, "%.6g", a.threshold);
    os << ",\n \"acceptance\": {\"points\": " << a.points << ", \"refused\": " << a.refused
       << ", \"threshold\": " << thr << ",\n  \"features\": " << names_json(acceptance_feature_names()).dump()
       << ",\n  \"model\": " << a.booster->save_json() << "}";
  }
  os << "\n}\n";
  return os.str();
}

TunerTable parse_tuner_table(std::string_view json_text, const std::string& label) {
  using R = NumberRange;
  const json j = parse_json_object(json_text, label, &raise_table_error);
  const JsonFields r(j, label, &raise_table_error, "", kTableOptions);
  if (const JsonValue schema = r.required("schema"); schema.value() != kSchema)
    schema.fail("is " + json_excerpt(schema.value()) + ", expected \"" + std::string(kSchema) + "\"");
  TunerTable t;
  t.label = label;
  t.gpu_id = r.string("gpu");
  t.sm_count = count_of(r, "sm_count", 1);
  t.source = r.string_or("source", "");
  expect_names(r.required("features"), feature_names(), "model");
  t.support_penalty = r.number("support_penalty", R::at_least(0));
  if (const auto slots = r.optional_object("slots_by_cluster")) {
    for (const std::string& key : slots->keys()) {
      const auto cs = parse_positive(key);
      if (!cs) slots->fail(key, "must map a positive cluster size to a positive CTA count");
      t.slots_by_cluster[*cs] = count_of(*slots, key, 1);
    }
  }
  // A configuration of the table's text; a malformed one is refused at `where`.
  auto config_at = [](const JsonValue& where, const std::string& text) {
    try {
      return config_from_string(text);
    } catch (const TunerTableError& e) {
      where.fail(e.what());
    }
  };
  auto configs_from = [&](const std::vector<JsonValue>& entries) {
    std::vector<TileConfig> out;
    out.reserve(entries.size());
    for (const JsonValue& e : entries) out.push_back(config_at(e, e.string()));
    return out;
  };
  const JsonFields groups = r.object("groups");
  if (groups.keys().empty()) groups.fail("must be a non-empty object");
  for (const std::string& name : groups.keys()) {
    const JsonFields gj = groups.object(name);
    GroupTable gt;
    gt.shapes = count_of(gj, "shapes");
    gt.samples = count_of(gj, "samples");
    gt.global = coef_from(gj.required("global"));
    for (const JsonValue& entry : gj.array("classes")) {
      const JsonFields c = entry.object();
      const JsonValue tile = c.required("tile");
      const std::string tile_text = tile.string();
      const TileConfig tc = config_at(tile, tile_text + "/s1/c1x1");
      TileClassKey key{tc.tile_m, tc.tile_n, tc.tile_k, c.boolean("split")};
      ClassFit fit;
      fit.samples = count_of(c, "samples");
      fit.coef = coef_from(c.required("coef"));
      if (!gt.classes.emplace(key, fit).second) entry.fail("repeats class " + quote_excerpt(tile_text));
    }
    for (const JsonValue& entry : gj.array("buckets")) {
      const JsonFields b = entry.object();
      BucketKey key{count_of(b, "m"), count_of(b, "n"), count_of(b, "k")};
      const JsonValue configs_v = b.required("configs");
      auto configs = configs_from(configs_v.array());
      if (configs.empty()) configs_v.fail("is empty");
      if (!gt.buckets.emplace(key, std::move(configs)).second) entry.fail("repeats a bucket");
    }
    gt.common = configs_from(gj.array("common"));
    if (const auto winners = gj.optional("winners")) {
      for (const JsonValue& row_v : winners->array()) {
        const std::vector<JsonValue> row = row_v.array();
        if (row.size() < 4) row_v.fail("is not [M, N, K, configuration...] with at least one configuration");
        int64_t dims[3];
        for (int d = 0; d < 3; ++d) dims[d] = row[static_cast<std::size_t>(d)].integer(R::positive());
        // The configurations after M, N and K are named as a list of their own in messages.
        std::vector<JsonValue> configs;
        for (std::size_t i = 3; i < row.size(); ++i)
          configs.push_back(row[i].with_path(row_v.path() + ".configurations[" + std::to_string(i - 3) + "]"));
        gt.winners.emplace_back(dims[0], dims[1], dims[2], configs_from(configs));
      }
    }
    if (const auto residual = gj.optional("residual")) {
      expect_names(gj.required("residual_features"), residual_names(), "model");
      const std::vector<JsonValue> values = residual->array();
      if (values.size() != kResidualCount)
        residual->fail("has " + std::to_string(values.size()) + " values, not " + std::to_string(kResidualCount));
      for (std::size_t i = 0; i < kResidualCount; ++i) gt.residual[i] = values[i].number();
    }
    if (const auto interval = gj.optional_object("interval")) {
      const R log_ratio = R::between(-5, 5).named("a log ratio");
      gt.interval.lo_log = interval->number("p10_log_ratio", log_ratio);
      gt.interval.hi_log = interval->number("p90_log_ratio", log_ratio);
      gt.interval.rows = count_of(*interval, "rows", 1);
      if (gt.interval.lo_log > gt.interval.hi_log) interval->fail("p10_log_ratio is above p90_log_ratio");
    }
    if (const auto learned = gj.optional("learned")) {
      expect_names(gj.required("learned_features"), learned_names(), "model");
      gt.learned = load_booster(*learned, kLearnedCount);
    }
    if (const auto factors = gj.optional_object("config_factor")) {
      for (const std::string& key : factors->keys()) {
        const JsonValue f = factors->required(key);
        gt.config_factor[config_key(config_at(f, key))] = f.number(R::positive());
      }
    }
    index_catalogue(gt);
    t.groups.emplace(name, std::move(gt));
  }
  if (const auto ranker = r.optional_object("ranker")) {
    expect_names(ranker->required("features"), ranker_names(), "chooser");
    t.ranker.booster = load_booster(ranker->required("model"), kRankerCount);
    t.ranker.objective = ranker->string_or("objective", t.ranker.objective);
    t.ranker.grading = ranker->string_or("grading", t.ranker.grading);
    t.ranker.shapes = static_cast<int>(ranker->integer_or("shapes", t.ranker.shapes, kCount));
  }
  if (const auto variants = r.optional_object("variants")) {
    expect_names(variants->required("features"), variant_feature_names(), "variant model");
    auto option = [](const JsonValue& c) {
      if (!c.value().is_number_integer() || c.value().get<long long>() < 0 || c.value().get<long long>() > 63)
        c.fail("is " + json_excerpt(c.value()) + ", not a cuBLASLt custom option (an integer 0..63)");
      return c.value().get<int>();
    };
    const JsonFields accepted = variants->object("accepted");
    for (const std::string& group : accepted.keys()) {
      const JsonFields configs = accepted.object(group);
      auto& out = t.variants.accepted[group];
      for (const std::string& cfg : configs.keys()) {
        const JsonValue customs = configs.required(cfg);
        const TileConfig tc = config_at(customs, cfg);
        const std::vector<JsonValue> entries = customs.array();
        if (entries.empty()) customs.fail("is not a list of custom options");
        std::vector<int> v;
        v.reserve(entries.size());
        for (const JsonValue& e : entries) v.push_back(option(e));
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        out[config_key(tc)] = std::move(v);
      }
    }
    if (const auto labels = variants->optional_object("labels")) {
      for (const std::string& c : labels->keys()) {
        int custom = -1;
        const auto p = std::from_chars(c.data(), c.data() + c.size(), custom);
        if (p.ec != std::errc() || p.ptr != c.data() + c.size() || custom < 0 || custom > 63 ||
            !labels->required(c).value().is_string())
          labels->fail(c, "is not a custom option (0..63) with its label");
        t.variants.labels[custom] = labels->string_or(c, "");
      }
    }
    t.variants.points = static_cast<int>(variants->integer_or("points", t.variants.points, kCount));
    t.variants.booster = load_booster(variants->required("model"), kVariantFeatureCount);
  }
  if (const auto acceptance = r.optional_object("acceptance")) {
    expect_names(acceptance->required("features"), acceptance_feature_names(), "acceptance model");
    t.acceptance.threshold = acceptance->number("threshold", R::in(0, 1, true, false).named("a probability"));
    t.acceptance.points = static_cast<int>(acceptance->integer_or("points", t.acceptance.points, kCount));
    t.acceptance.refused = static_cast<int>(acceptance->integer_or("refused", t.acceptance.refused, kCount));
    t.acceptance.booster = load_booster(acceptance->required("model"), kAcceptanceFeatureCount);
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
    // A named pipe or a folder of that name is kept: the reader refuses it, and the table says why.
    if (name.ends_with(".json.gz") || name.ends_with(".json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string p = path.string();
    std::string id = path.filename().string();
    for (std::string_view ext : {".gz", ".json"})
      if (id.size() > ext.size() && id.ends_with(ext)) id.resize(id.size() - ext.size());
    try {
      TunerTable t = parse_tuner_table(read_file_guarded(path, file_limits::tuner_table), p);
      if (t.gpu_id != id)  // NOLINTNEXTLINE(performance-inefficient-string-concatenation): an error, built once
        throw TunerTableError(p + ": field 'gpu' is '" + text_excerpt(t.gpu_id) + "', but the file is named for '" +
                              id + "'");
      out.by_id.emplace(id, std::move(t));
    } catch (const FileReadError& e) {
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
