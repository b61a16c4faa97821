#include "model/tuner/tuner.h"
#include "model/tuner/variant_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"
#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/tuner/acceptance_model.h"

namespace perfloom::tuner {

namespace {

void check_shape(const GemmShape& s, const GpuSpec& gpu) {
  if (s.M <= 0 || s.N <= 0 || s.K <= 0)
    throw std::invalid_argument("GEMM dimensions must be positive, got " + std::to_string(s.M) + "," +
                                std::to_string(s.N) + "," + std::to_string(s.K));
  constexpr int64_t kMax = int64_t{1} << 31;  // cuBLASLt's dimensions are 32-bit
  if (s.M >= kMax || s.N >= kMax || s.K >= kMax)
    throw std::invalid_argument("GEMM dimensions must be below 2^31, got " + std::to_string(s.M) + "," +
                                std::to_string(s.N) + "," + std::to_string(s.K));
  if (!gpu.supports(s.dtype))
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(s.dtype)) + " tensor-core path");
}

bool same_config(const TileConfig& a, const TileConfig& b) {
  return a.tile_m == b.tile_m && a.tile_n == b.tile_n && a.tile_k == b.tile_k &&
         std::max(1, a.split_k) == std::max(1, b.split_k) && std::max(1, a.cluster_m) == std::max(1, b.cluster_m) &&
         std::max(1, a.cluster_n) == std::max(1, b.cluster_n);
}

void sort_by_score(std::vector<RankedConfig>& v) {
  std::stable_sort(v.begin(), v.end(), [](const RankedConfig& a, const RankedConfig& b) { return a.score < b.score; });
}

// The ranking score: a latency raised for configuration classes the fit saw little of.
double support_score(const TunerTable& table, double us, int class_samples) {
  return us * (1.0 + table.support_penalty / std::sqrt(1.0 + class_samples));
}

// Every configuration predicted (the learned residual batched over them), in the order given: its latency
// and score, and its wave features (what the chooser reads).
struct Predicted {
  std::vector<RankedConfig> ranked;
  std::vector<WaveFeatures> feats;
};
Predicted predict_all(const TunerTable& table, const GroupTable& group, const HardwareRates& hw, const GemmShape& shape,
                      const std::vector<TileConfig>& configs) {
  Predicted p;
  std::vector<RankedConfig>& out = p.ranked;
  out.resize(configs.size());
  p.feats.reserve(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    RankedConfig& r = out[i];
    r.config = configs[i];
    p.feats.push_back(wave_features(shape, configs[i], hw, table.slots_by_cluster));
    r.grid = p.feats.back().grid;
    r.pred_us = group_latency(group, shape, configs[i], p.feats.back(), &r.class_samples);
  }
  const std::vector<double> learned = learned_factors(group, shape, configs, p.feats);
  for (std::size_t i = 0; i < out.size(); ++i) {
    RankedConfig& r = out[i];
    r.index = i;
    r.pred_us = std::max(1.0, r.pred_us * learned[i]);
    r.score = support_score(table, r.pred_us, r.class_samples);
    if (group.interval.rows > 0) {
      r.lo_us = r.pred_us * std::exp(group.interval.lo_log);
      r.hi_us = r.pred_us * std::exp(group.interval.hi_log);
    }
  }
  return p;
}

// The chooser's score of the `chooser_rows` configurations of one query that the latency model scores best (one
// batched call of its trees; their inputs are those of the whole list), where the table has a chooser; the others'
// rank_score is NaN.
void apply_chooser(const TunerTable& table, const GemmShape& shape, const std::vector<TileConfig>& configs,
                   const std::vector<WaveFeatures>& feats, std::vector<RankedConfig>& out,
                   std::size_t chooser_rows = kChooserRows) {
  if (!table.ranker.booster || out.size() <= 1) return;
  std::vector<double> pred(out.size()), score(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    pred[i] = out[i].pred_us;
    score[i] = out[i].score;
  }
  std::vector<float> rows = ranker_rows(shape, configs, feats, pred, score);
  std::vector<std::size_t> chosen(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) chosen[i] = i;
  if (out.size() > chooser_rows) {
    std::stable_sort(chosen.begin(), chosen.end(), [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
    chosen.resize(chooser_rows);
    std::sort(chosen.begin(), chosen.end());
    for (std::size_t r = 0; r < chosen.size(); ++r)  // compact the chosen rows to the front, in place
      std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(chosen[r] * kRankerCount), kRankerCount,
                  rows.begin() + static_cast<std::ptrdiff_t>(r * kRankerCount));
    for (auto& o : out) o.rank_score = NAN;
  }
  const std::vector<float> p = table.ranker.booster->predict(rows.data(), chosen.size(), kRankerCount);
  for (std::size_t r = 0; r < chosen.size(); ++r) out[chosen[r]].rank_score = p[r];
}

// Sets each configuration's refusal_p from the table's acceptance model (nothing where it has none).
void apply_acceptance(const TunerTable& table, const GemmShape& shape, const std::vector<TileConfig>& configs,
                      const std::vector<WaveFeatures>& feats, std::vector<RankedConfig>& out) {
  if (!table.acceptance.booster) return;
  const std::vector<double> p = refusal_probabilities(table.acceptance, shape, configs, feats);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].refusal_p = p[i];
}

std::vector<RankedConfig> evaluate(const TunerTable& table, const GroupTable& group, const HardwareRates& hw,
                                   const GemmShape& shape, const std::vector<TileConfig>& configs, bool choose = true,
                                   std::size_t chooser_rows = kChooserRows) {
  Predicted p = predict_all(table, group, hw, shape, configs);
  if (choose) {
    apply_chooser(table, shape, configs, p.feats, p.ranked, chooser_rows);
    apply_acceptance(table, shape, configs, p.feats, p.ranked);
  }
  return std::move(p.ranked);
}

// Best first: by the chooser's score where the table has a chooser (the configurations it did not score after
// those it did, by the latency model's score), else by the latency model's score.
void order_ranked(const TunerTable& table, std::vector<RankedConfig>& out) {
  if (table.ranker.booster && out.size() > 1)
    std::stable_sort(out.begin(), out.end(), [](const RankedConfig& a, const RankedConfig& b) {
      const bool sa = !std::isnan(a.rank_score), sb = !std::isnan(b.rank_score);
      if (sa != sb) return sa;
      return sa ? a.rank_score > b.rank_score : a.score < b.score;
    });
  else
    sort_by_score(out);
  // The configurations cuBLASLt is predicted to refuse, after the others (NaN: not predicted, kept).
  const double threshold = table.acceptance.threshold;
  std::stable_partition(out.begin(), out.end(),
                        [threshold](const RankedConfig& r) { return !likely_refused(r, threshold); });
}

// The configurations of the group's catalogue that model_best puts through the learned residual: with `prefilter`
// > 0, the `prefilter` best by the wave model without it (dot products), else the whole catalogue.
std::vector<TileConfig> model_shortlist(const TunerTable& table, const GroupTable& group, const HardwareRates& hw,
                                        const GemmShape& shape, std::size_t prefilter) {
  if (prefilter == 0 || prefilter >= group.catalogue.size()) return group.catalogue;
  std::vector<std::pair<double, std::size_t>> linear(group.catalogue.size());
  for (std::size_t i = 0; i < group.catalogue.size(); ++i) {
    const TileConfig& c = group.catalogue[i];
    int samples = 0;
    const double us = group_latency(group, shape, c, wave_features(shape, c, hw, table.slots_by_cluster), &samples);
    linear[i] = {support_score(table, us, samples), i};
  }
  std::partial_sort(linear.begin(), linear.begin() + static_cast<std::ptrdiff_t>(prefilter), linear.end());
  std::vector<TileConfig> shortlist;
  shortlist.reserve(prefilter);
  for (std::size_t i = 0; i < prefilter; ++i) shortlist.push_back(group.catalogue[linear[i].second]);
  return shortlist;
}

// Positions of the `n` best of the first `among` of `scored` by score (ties: the earlier), best first.
std::vector<std::size_t> best_by_score(const std::vector<RankedConfig>& scored, std::size_t n,
                                       std::size_t among = SIZE_MAX) {
  std::vector<std::size_t> at(std::min(among, scored.size()));
  for (std::size_t i = 0; i < at.size(); ++i) at[i] = i;
  n = std::min(n, at.size());
  std::partial_sort(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(n), at.end(),
                    [&](std::size_t a, std::size_t b) {
                      return scored[a].score < scored[b].score || (scored[a].score == scored[b].score && a < b);
                    });
  at.resize(n);
  return at;
}

// What `perfloom tune` ranks with a table: rank_with_table(query_candidates(...)), with the latency model run once per
// configuration. query_candidates predicts the model's shortlist to pick its best, rank_with_table the chosen list
// again; here the shortlist and the nearest shapes' candidates are predicted in one batch, and the list taken from
// it. With kChooserRows, 18% less time per query (perfloom-bench-tune).
// Empty where the group has no table candidates.
std::vector<RankedConfig> rank_query(const TunerTable& table, const GroupTable& group, const HardwareRates& hw,
                                     const GemmShape& shape) {
  const std::vector<TileConfig> near = table_candidates(group, shape, 8, kNearestShapes);
  if (near.empty()) return {};
  std::vector<TileConfig> batch = model_shortlist(table, group, hw, shape, kModelPrefilter);
  const std::size_t shortlisted = batch.size();
  std::vector<std::size_t> list;  // positions in `batch` of what the query ranks, in query_candidates' order
  for (const TileConfig& c : near) {
    const auto it = std::find_if(batch.begin(), batch.end(), [&](const TileConfig& b) { return same_config(b, c); });
    list.push_back(static_cast<std::size_t>(it - batch.begin()));
    if (it == batch.end()) batch.push_back(c);
  }
  Predicted p = predict_all(table, group, hw, shape, batch);
  for (std::size_t at : best_by_score(p.ranked, kModelBest, shortlisted))
    if (std::find(list.begin(), list.end(), at) == list.end()) list.push_back(at);
  std::vector<TileConfig> configs;
  std::vector<WaveFeatures> feats;
  std::vector<RankedConfig> out;
  for (std::size_t at : list) {
    configs.push_back(batch[at]);
    feats.push_back(p.feats[at]);
    out.push_back(p.ranked[at]);
    out.back().index = out.size() - 1;
  }
  apply_chooser(table, shape, configs, feats, out);
  apply_acceptance(table, shape, configs, feats, out);
  order_ranked(table, out);
  return out;
}

// The reason of a configuration the table ranked: its waves, and where the acceptance model predicts that
// cuBLASLt refuses it (which put it after the others), that, with the probability.
std::string table_reason(const TunerTable& table, const RankedConfig& r) {
  std::string reason = describe_grid(r.grid);
  if (likely_refused(r, table.acceptance.threshold)) {
    char p[16];
    std::snprintf(p, sizeof p, "%.2f", r.refusal_p);
    reason += std::string("; cuBLASLt likely refuses it (p ") + p + ")";
  }
  return reason;
}

const GroupTable& group_for(const TunerTable& table, const GemmShape& shape) {
  auto it = table.groups.find(dtype_group(shape.dtype));
  if (it == table.groups.end())
    throw TunerTableError((table.label.empty() ? "tuner table" : table.label) + " has no fit for " +
                          std::string(dtype_name(shape.dtype)));
  return it->second;
}

}  // namespace

RankedConfig evaluate_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                 const TileConfig& config) {
  RankedConfig r = evaluate(table, group_for(table, shape), hardware_rates(gpu, shape.dtype), shape, {config}).front();
  r.reason = describe_grid(r.grid);
  return r;
}

std::vector<RankedConfig> predict_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                             const std::vector<TileConfig>& configs) {
  return evaluate(table, group_for(table, shape), hardware_rates(gpu, shape.dtype), shape, configs, false);
}

std::vector<RankedConfig> rank_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                          const std::vector<TileConfig>& configs, bool with_reasons,
                                          std::size_t chooser_rows) {
  const GroupTable& group = group_for(table, shape);
  const HardwareRates hw = hardware_rates(gpu, shape.dtype);
  std::vector<RankedConfig> out = evaluate(table, group, hw, shape, configs, true, chooser_rows);
  order_ranked(table, out);
  if (with_reasons)
    for (auto& r : out) r.reason = table_reason(table, r);
  return out;
}

std::vector<std::pair<double, const ShapeWinners*>> nearest_winners(const GroupTable& group, const GemmShape& shape,
                                                                    std::size_t n) {
  std::vector<std::pair<double, const ShapeWinners*>> by_distance;
  if (n == 0 || group.winners.empty()) return by_distance;
  const double lm = std::log2(static_cast<double>(shape.M)), ln = std::log2(static_cast<double>(shape.N)),
               lk = std::log2(static_cast<double>(shape.K));
  by_distance.reserve(group.winners.size());
  for (const auto& w : group.winners)
    by_distance.emplace_back(
        std::abs(w.log2_dims[0] - lm) + std::abs(w.log2_dims[1] - ln) + std::abs(w.log2_dims[2] - lk), &w);
  n = std::min(n, by_distance.size());
  std::partial_sort(
      by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(n), by_distance.end(),
      [](const auto& a, const auto& b) { return a.first < b.first || (a.first == b.first && a.second < b.second); });
  by_distance.resize(n);
  return by_distance;
}

std::vector<TileConfig> table_candidates(const GroupTable& group, const GemmShape& shape, std::size_t want,
                                         std::size_t nearest) {
  const BucketKey q = bucket_of(shape.M, shape.N, shape.K);
  std::vector<std::pair<int, const std::vector<TileConfig>*>> near;
  near.reserve(group.buckets.size());
  for (const auto& [key, configs] : group.buckets)
    near.emplace_back(std::abs(key.m - q.m) + std::abs(key.n - q.n) + std::abs(key.k - q.k), &configs);
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<TileConfig> out;
  auto add = [&](const TileConfig& c) {
    for (const auto& o : out)
      if (same_config(o, c)) return;
    out.push_back(c);
  };
  for (std::size_t i = 0; i < near.size(); ++i) {
    // Every bucket at the nearest distance counts, then farther ones until there are enough.
    if (out.size() >= want && near[i].first > near.front().first) break;
    for (const auto& c : *near[i].second) add(c);
  }
  for (const auto& [d, w] : nearest_winners(group, shape, nearest))
    for (const auto& c : w->configs) add(c);
  for (const auto& c : group.common) add(c);
  return out;
}

std::vector<TileConfig> model_best(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape, std::size_t n,
                                   std::size_t prefilter) {
  const GroupTable& group = group_for(table, shape);
  const HardwareRates hw = hardware_rates(gpu, shape.dtype);
  const std::vector<TileConfig> shortlist = model_shortlist(table, group, hw, shape, prefilter);
  const std::vector<RankedConfig> scored = evaluate(table, group, hw, shape, shortlist, false);
  std::vector<TileConfig> out;
  for (std::size_t at : best_by_score(scored, n)) out.push_back(scored[at].config);
  return out;
}

std::vector<TileConfig> query_candidates(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                         std::size_t nearest, std::size_t prefilter) {
  const auto it = table.groups.find(dtype_group(shape.dtype));
  if (it == table.groups.end()) return {};
  std::vector<TileConfig> out = table_candidates(it->second, shape, 8, nearest);
  if (out.empty()) return out;
  for (const TileConfig& c : model_best(table, gpu, shape, kModelBest, prefilter))
    if (std::none_of(out.begin(), out.end(), [&](const TileConfig& o) { return same_config(o, c); })) out.push_back(c);
  return out;
}

KernelDesc gemm_kernel(const GemmShape& shape, const TileConfig& config) {
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = shape.dtype;
  k.shape.M = shape.M;
  k.shape.N = shape.N;
  k.shape.K = shape.K;
  k.tile = config;
  return k;
}

namespace {
// A configuration as a predictor saw it: the stages it chose, its waves on the predicted occupancy, the bound pipe.
RankedConfig ranked_from_prediction(const GpuSpec& gpu, const GemmShape& shape, const TileConfig& config,
                                    const Prediction& p) {
  RankedConfig r;
  r.config = config;
  if (p.analysis.tile) r.config.stages = p.analysis.tile->stages;
  r.pred_us = r.score = p.pred_us;
  if (p.hi_us > 0) {
    r.lo_us = p.lo_us;
    r.hi_us = p.hi_us;
  }
  const HardwareRates hw = hardware_rates(gpu, shape.dtype);
  r.grid = wave_grid(shape, config, std::max(1, static_cast<int>(hw.sms * p.analysis.plan.ctas_per_sm)));
  r.reason = describe_grid(r.grid) + "; " + std::string(pipe_name(p.bound)) + "-bound";
  return r;
}
}  // namespace

RankedConfig evaluate_analytical(const GpuSpec& gpu, const GemmShape& shape, const TileConfig& config) {
  return ranked_from_prediction(gpu, shape, config, predict_roofline(gemm_kernel(shape, config), gpu));
}

bool tile_swept(const std::string& architecture, Dtype dtype) {
  static const std::set<std::pair<std::string, std::string>> swept = [] {  // (architecture, dtype group)
    std::set<std::pair<std::string, std::string>> out;
    const GpuDatabase db = GpuDatabase::builtin();
    for (const auto& id : bundled_tuner_gpus())
      if (const GpuSpec* g = db.find(id))
        if (const TunerTable* t = bundled_tuner_table(*g))
          for (const auto& [group, fit] : t->groups) out.emplace(g->architecture, group);
    return out;
  }();
  return swept.count({architecture, dtype_group(dtype)}) > 0;
}

bool uses_learned_predictor(const TunerTable* table, Dtype dtype) {
  return !(table && table->groups.count(dtype_group(dtype)));
}

std::optional<Prediction> library_prediction(const KernelPredictor* predictor, const GpuSpec& gpu,
                                             const GemmShape& shape) {
  if (!predictor || !predictor->is_learned()) return std::nullopt;
  try {
    Prediction p = predictor->predict(gemm_kernel(shape, TileConfig{}), gpu);
    if (p.pred_us > 0 && std::isfinite(p.pred_us)) return p;
  } catch (const UnsupportedKernel&) {}
  return std::nullopt;
}

std::vector<RankedConfig> rank_analytical(const GpuSpec& gpu, const GemmShape& shape, const KernelPredictor* predictor,
                                          double* library_us) {
  std::vector<RankedConfig> out = rank_analytical(gpu, shape);
  if (library_us) *library_us = NAN;
  if (out.empty()) return out;
  const auto lib = library_prediction(predictor, gpu, shape);
  if (!lib) return out;
  if (library_us) *library_us = lib->pred_us;
  const double scale = lib->pred_us / out.front().pred_us;
  for (RankedConfig& c : out) {
    c.pred_us *= scale;
    c.score *= scale;
    c.lo_us = c.pred_us * lib->lo_us / lib->pred_us;
    c.hi_us = c.pred_us * lib->hi_us / lib->pred_us;
  }
  return out;
}

std::vector<TileConfig> analytical_candidates(const GpuSpec& gpu, const GemmShape& shape) {
  const HardwareRates hw = hardware_rates(gpu, shape.dtype);
  std::vector<TileConfig> tiles;  // the candidate list repeats tiles that are their own transpose
  for (const TileConfig& t : gemm_tile_candidates(gpu, shape.dtype))
    if (std::none_of(tiles.begin(), tiles.end(), [&](const TileConfig& o) { return same_config(o, t); }))
      tiles.push_back(t);
  std::vector<TileConfig> out;
  for (TileConfig t : tiles) {
    const double tiles =
        std::ceil(static_cast<double>(shape.M) / t.tile_m) * std::ceil(static_cast<double>(shape.N) / t.tile_n);
    // Split-K as choose_gemm_tile considers it: only when the output tiles leave most SMs idle.
    const int max_split =
        tiles < hw.sms / 2.0 ? static_cast<int>(std::min(16.0, std::floor(shape.K / (4.0 * t.tile_k)))) : 1;
    for (int s = 1; s <= std::max(1, max_split); s = s < 4 ? s + 1 : s * 2) {
      t.split_k = s;
      out.push_back(t);
    }
  }
  return out;
}

std::vector<RankedConfig> rank_analytical(const GpuSpec& gpu, const GemmShape& shape) {
  std::vector<RankedConfig> out;
  for (const TileConfig& t : analytical_candidates(gpu, shape)) out.push_back(evaluate_analytical(gpu, shape, t));
  sort_by_score(out);
  return out;
}

std::vector<RankedConfig> rank_learned(const KernelPredictor& predictor, const GpuSpec& gpu, const GemmShape& shape,
                                       const std::vector<TileConfig>& configs) {
  std::vector<KernelDesc> kernels;
  kernels.reserve(configs.size());
  for (const TileConfig& c : configs) kernels.push_back(gemm_kernel(shape, c));
  std::vector<std::string> errors;
  const std::vector<Prediction> preds = predictor.predict_batch(kernels, gpu, &errors);  // one call per booster
  std::vector<RankedConfig> out;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (!errors[i].empty()) continue;
    out.push_back(ranked_from_prediction(gpu, shape, configs[i], preds[i]));
    out.back().index = i;
  }
  sort_by_score(out);
  return out;
}

void name_variants(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                   std::vector<RankedConfig>& ranked) {
  if (!table.variants.booster) return;
  std::vector<TileConfig> configs;
  configs.reserve(ranked.size());
  for (const auto& c : ranked) configs.push_back(c.config);
  const std::vector<int> chosen = choose_variants(table.variants, gpu, table.slots_by_cluster, shape, configs);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    RankedConfig& c = ranked[i];
    c.custom_option = chosen[i];
    c.variant.clear();
    if (c.custom_option < 0) continue;
    if (auto it = table.variants.labels.find(c.custom_option); it != table.variants.labels.end())
      c.variant = it->second;
  }
}

TuneResult tune_gemm(const GemmShape& shape, const GpuSpec& gpu, std::size_t top_k, const TunerTable* table,
                     const KernelPredictor* predictor) {
  if (top_k == 0) throw std::invalid_argument("top must be at least 1");
  check_shape(shape, gpu);
  TuneResult r;
  const GroupTable* group = nullptr;
  if (table) {
    if (auto it = table->groups.find(dtype_group(shape.dtype)); it != table->groups.end()) group = &it->second;
  }
  if (group) r.ranked = rank_query(*table, *group, hardware_rates(gpu, shape.dtype), shape);
  if (!r.ranked.empty()) {
    r.method = "wave-table";
    r.note = "wave model fitted on " + std::to_string(group->shapes) + " measured " + dtype_group(shape.dtype) +
             " shapes (" + (table->label.empty() ? table->gpu_id : table->label) +
             "); candidates: the nearest measured shapes' " + "winners and the model's " + std::to_string(kModelBest) +
             " best of the table's " + std::to_string(group->catalogue.size()) + " configurations";
    if (table->ranker.booster && r.ranked.size() > 1) r.ranked_by = "chooser";
    if (table->acceptance.booster) r.refusal_threshold = table->acceptance.threshold;
    if (r.ranked.size() > top_k) r.ranked.resize(top_k);
    for (auto& c : r.ranked) c.reason = table_reason(*table, c);
    name_variants(*table, gpu, shape, r.ranked);
  } else {
    const std::string why = table ? "the " + gpu.id + " tuner table has no " + std::string(dtype_name(shape.dtype)) +
                                        (group ? " candidates" : " fit")
                                  : "no tuner table for " + gpu.id;
    const bool swept = tile_swept(gpu.architecture, shape.dtype);
    if (predictor && swept && predictor->is_learned()) {
      r.method = "learned";
      r.note = why +
               "; the analytical model's candidate tiles ranked by the learned predictor (XGBoost, tile given), "
               "which learned tiles from the " +
               gpu.architecture + " " + dtype_group(shape.dtype) + " tile sweeps";
      r.ranked = rank_learned(*predictor, gpu, shape, analytical_candidates(gpu, shape));
    }
    if (r.ranked.empty()) {
      r.method = "analytical";
      r.note = why + "; ranked by the analytical GEMM model (roofline / GEMM efficiency, tile given)" +
               (!swept ? "; no " + gpu.architecture + " GPU was tile-swept in " + dtype_group(shape.dtype) +
                             ", so not by the learned predictor"
                       : "");
      r.ranked = rank_analytical(gpu, shape, predictor, &r.anchor_us);
      if (std::isfinite(r.anchor_us)) {
        char us[32];
        std::snprintf(us, sizeof us, "%.2f", r.anchor_us);
        r.note += "; latencies scaled so that the first takes the learned predictor's " + std::string(us) +
                  " us for this GEMM with the library's own choice (perfloom predict), the others keeping their "
                  "analytical ratio to it";
      }
    }
  }
  if (r.ranked.size() > top_k) r.ranked.resize(top_k);
  return r;
}

TuneResult tune_gemm(const GemmShape& shape, const GpuSpec& gpu, std::size_t top_k, const KernelPredictor* predictor) {
  return tune_gemm(shape, gpu, top_k, bundled_tuner_table(gpu), predictor);
}

}  // namespace perfloom::tuner
