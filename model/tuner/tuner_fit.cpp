#include "model/tuner/tuner_fit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "model/hash.h"
#include "model/tuner/least_squares.h"
#include "model/tuner/tuner.h"

namespace perfloom::tuner {

namespace {
std::vector<double> row_of(const WaveFeatures& f) { return {f.x.begin(), f.x.end()}; }

Coefficients to_coef(const std::vector<double>& v) {
  Coefficients c{};
  std::copy(v.begin(), v.end(), c.begin());
  return c;
}

// Configurations that differ only in the stage count run as one candidate.
auto candidate_key(const TileConfig& t) {
  return std::tuple(t.tile_m, t.tile_n, t.tile_k, std::max(1, t.split_k), std::max(1, t.cluster_m),
                    std::max(1, t.cluster_n));
}

auto shape_key(const GemmShape& s) { return std::tuple(static_cast<int>(s.dtype), s.M, s.N, s.K); }
using ShapeKey = decltype(shape_key(GemmShape{}));

// fn(0), ..., fn(n - 1), up to `threads` at once (FitOptions::threads; 0: one per hardware thread); the
// first exception thrown is rethrown once all have finished.
template <class Fn>
void for_each_index(std::size_t n, int threads, Fn fn) {
  const std::size_t workers = std::min<std::size_t>(
      n, threads > 0 ? static_cast<std::size_t>(threads) : std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

std::shared_ptr<const XgbBooster> fit_learned_residual(const GroupTable& g, const std::vector<const TunerSample*>& rows,
                                                       const std::vector<WaveFeatures>& feats,
                                                       std::map<ShapeKey, double>& shape_best, const FitOptions& opt) {
  std::vector<double> r(rows.size());
  std::map<ShapeKey, std::pair<double, double>> shape_mean;  // sum r, count
  for (std::size_t i = 0; i < rows.size(); ++i) {
    r[i] = std::log(rows[i]->latency_us / group_latency(g, rows[i]->shape, rows[i]->config, feats[i]));
    auto& m = shape_mean[shape_key(rows[i]->shape)];
    m.first += r[i];
    m.second += 1;
  }
  std::vector<float> x, y, w;
  x.reserve(rows.size() * kLearnedCount);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto row = learned_features(rows[i]->shape, rows[i]->config, feats[i]);
    x.insert(x.end(), row.begin(), row.end());
    const auto& m = shape_mean[shape_key(rows[i]->shape)];
    y.push_back(static_cast<float>(r[i] - m.first / m.second));
    const bool near = rows[i]->latency_us <= opt.residual_near * shape_best[shape_key(rows[i]->shape)];
    w.push_back(static_cast<float>(rows[i]->weight * (near ? 1.0 : opt.residual_far_weight)));
  }
  auto b = std::make_shared<XgbBooster>(
      XgbBooster::train(x, rows.size(), kLearnedCount, y, w,
                        {{"max_depth", std::to_string(opt.learned_depth)},
                         {"eta", std::to_string(opt.learned_eta)},
                         {"subsample", "0.8"},
                         {"lambda", "3"},
                         {"objective", "reg:squarederror"},
                         {"base_score", "0"},
                         {"seed", "0"},
                         {"nthread", "1"}},  // deterministic, and small enough that threads gain little
                        opt.learned_rounds));
  return b;
}

// Relevance of a configuration at `ratio` x its shape's best, by grading name.
int grade(const std::string& grading, double ratio) {
  if (grading == "1/3/5%") return ratio <= 1.01 ? 3 : ratio <= 1.03 ? 2 : ratio <= 1.05 ? 1 : 0;
  return ratio <= 1.01 ? 4 : ratio <= 1.03 ? 3 : ratio <= 1.05 ? 2 : ratio <= 1.10 ? 1 : 0;  // "1/3/5/10%"
}

struct RankShape {
  int fold = 0;
  std::vector<float> x;       // kRankerCount per configuration, model inputs out-of-sample
  std::vector<double> ratio;  // latency / the shape's best
};

std::shared_ptr<const XgbBooster> train_ranker(const std::vector<const RankShape*>& shapes,
                                               const std::string& objective, const std::string& grading,
                                               const FitOptions& opt) {
  std::vector<float> x, y;
  std::vector<unsigned> groups;
  for (const RankShape* s : shapes) {
    x.insert(x.end(), s->x.begin(), s->x.end());
    for (double r : s->ratio) y.push_back(static_cast<float>(grade(grading, r)));
    groups.push_back(static_cast<unsigned>(s->ratio.size()));
  }
  return std::make_shared<XgbBooster>(XgbBooster::train(x, y.size(), kRankerCount, y, {},
                                                        {{"objective", objective},
                                                         {"max_depth", std::to_string(opt.ranker_depth)},
                                                         {"eta", std::to_string(opt.ranker_eta)},
                                                         {"subsample", "0.8"},
                                                         {"lambda", "3"},
                                                         {"min_child_weight", "1"},
                                                         {"tree_method", "hist"},
                                                         {"seed", "0"},
                                                         {"nthread", "1"}},
                                                        opt.ranker_rounds, groups));
}

// Held-out shapes whose first choice by `b` is within 3% of their best.
int ranker_hits(const XgbBooster& b, const std::vector<const RankShape*>& shapes) {
  int hits = 0;
  for (const RankShape* s : shapes) {
    const auto p = b.predict(s->x.data(), s->ratio.size(), kRankerCount);
    const std::size_t i = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    hits += s->ratio[i] <= 1.03;
  }
  return hits;
}

// Also collects into `residuals`, per dtype group, log(measured / predicted) of every configuration
// predicted within candidate_within of its shape's fastest prediction, by the fold tables (out-of-sample).
TunerRanker fit_ranker(const std::vector<TunerSample>& samples, const GpuSpec& gpu, const FitOptions& opt,
                       const TunerTable& table, std::map<std::string, std::vector<double>>& residuals) {
  TunerRanker out;
  std::map<ShapeKey, std::vector<const TunerSample*>> by_shape;
  for (const auto& s : samples)
    if (s.latency_us > 0 && std::isfinite(s.latency_us)) by_shape[shape_key(s.shape)].push_back(&s);
  std::map<ShapeKey, RankShape> data;
  std::map<int, std::vector<ShapeKey>> by_fold;
  for (const auto& [k, v] : by_shape)
    if (static_cast<int>(v.size()) >= opt.ranker_min_configs)
      by_fold[shape_fold(v.front()->shape, opt.ranker_folds)].push_back(k);
  std::size_t n = 0;
  for (const auto& [f, keys] : by_fold) n += keys.size();
  if (static_cast<int>(n) < opt.ranker_min_shapes || by_fold.size() < 2) return out;
  FitOptions inner = opt;
  inner.ranker_rounds = 0;
  inner.on_ranker_group = nullptr;
  inner.threads = 1;  // the folds are what runs at once
  const std::vector<std::pair<int, std::vector<ShapeKey>>> folds(by_fold.begin(), by_fold.end());
  std::vector<TunerTable> fold_tables(folds.size());
  for_each_index(folds.size(), opt.threads, [&](std::size_t f) {
    const std::set<ShapeKey> held(folds[f].second.begin(), folds[f].second.end());
    std::vector<TunerSample> train;
    train.reserve(samples.size());
    for (const auto& s : samples)
      if (!held.count(shape_key(s.shape))) train.push_back(s);
    fold_tables[f] = fit_tuner_table(train, gpu, inner);
  });
  for (std::size_t f = 0; f < folds.size(); ++f) {
    const auto& [fold, keys] = folds[f];
    const TunerTable& t = fold_tables[f];
    for (const ShapeKey& k : keys) {
      const auto& rows = by_shape.at(k);
      const GemmShape& shape = rows.front()->shape;
      if (!t.groups.count(dtype_group(shape.dtype))) continue;
      std::vector<TileConfig> configs;
      double best = INFINITY;
      for (const TunerSample* s : rows) {
        configs.push_back(s->config);
        best = std::min(best, s->latency_us);
      }
      const auto pred = predict_with_table(t, gpu, shape, configs);
      const HardwareRates hw = hardware_rates(gpu, shape.dtype);
      std::vector<WaveFeatures> feats;
      std::vector<double> p, sc;
      for (std::size_t i = 0; i < configs.size(); ++i) {
        feats.push_back(wave_features(shape, configs[i], hw, table.slots_by_cluster));
        p.push_back(pred[i].pred_us);
        sc.push_back(pred[i].score);
      }
      // The configurations a query would rank near the top: predicted (not measured, which would
      // leave out those predicted fast that ran slow) within candidate_within of the shape's fastest.
      double fastest = INFINITY;
      for (const auto& r : pred) fastest = std::min(fastest, r.pred_us);
      std::vector<double>& res = residuals[dtype_group(shape.dtype)];
      for (std::size_t i = 0; i < rows.size(); ++i)
        if (pred[i].pred_us <= opt.candidate_within * fastest)
          res.push_back(std::log(rows[i]->latency_us / pred[i].pred_us));
      RankShape& rs = data[k];
      rs.fold = fold;
      rs.x = ranker_rows(shape, configs, feats, p, sc);
      for (const TunerSample* s : rows) rs.ratio.push_back(s->latency_us / best);
      if (opt.on_ranker_group) opt.on_ranker_group({shape, fold, configs, feats, p, sc, rs.ratio});
    }
  }
  // Objective and grading by cross-validation over the folds.
  const std::vector<std::pair<std::string, std::string>> grid = {
      {"rank:pairwise", "1/3/5%"}, {"rank:pairwise", "1/3/5/10%"}, {"rank:ndcg", "1/3/5%"}, {"rank:ndcg", "1/3/5/10%"}};
  std::vector<int> fold_hits(folds.size() * grid.size(), 0);  // fold f, grid entry g at f * grid.size() + g
  for_each_index(fold_hits.size(), opt.threads, [&](std::size_t i) {
    const int fold = folds[i / grid.size()].first;
    const auto& [objective, grading] = grid[i % grid.size()];
    std::vector<const RankShape*> tr, te;
    for (const auto& [k, rs] : data) (rs.fold == fold ? te : tr).push_back(&rs);
    if (!tr.empty() && !te.empty()) fold_hits[i] = ranker_hits(*train_ranker(tr, objective, grading, opt), te);
  });
  std::vector<int> hits(grid.size(), 0);
  for (std::size_t i = 0; i < fold_hits.size(); ++i) hits[i % grid.size()] += fold_hits[i];
  const std::size_t chosen = static_cast<std::size_t>(std::max_element(hits.begin(), hits.end()) - hits.begin());
  std::vector<const RankShape*> all;
  for (const auto& [k, rs] : data) all.push_back(&rs);
  out.booster = train_ranker(all, grid[chosen].first, grid[chosen].second, opt);
  out.objective = grid[chosen].first;
  out.grading = grid[chosen].second;
  out.shapes = static_cast<int>(all.size());
  return out;
}
// Table 1 of a group: per shape its fastest few configurations (at most candidates_per_shape, within
// candidate_within of its best: GroupTable::winners); a bucket ranks them by how close to the best
// they came, summed over its shapes; the group's most frequent winners.
void fit_candidates(GroupTable& g, const std::vector<const TunerSample*>& rows, const FitOptions& opt) {
  g.buckets.clear();
  g.common.clear();
  g.winners.clear();
  std::map<ShapeKey, std::vector<const TunerSample*>> shapes;
  for (const TunerSample* s : rows) shapes[shape_key(s->shape)].push_back(s);
  g.shapes = static_cast<int>(shapes.size());
  std::map<BucketKey, std::map<decltype(candidate_key(TileConfig{})), std::pair<double, TileConfig>>> bucket_scores;
  std::map<decltype(candidate_key(TileConfig{})), std::pair<double, TileConfig>> wins;
  for (auto& [key, list] : shapes) {
    std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->latency_us < b->latency_us; });
    const double best = list.front()->latency_us;
    const GemmShape& sh = list.front()->shape;
    auto& scores = bucket_scores[bucket_of(sh.M, sh.N, sh.K)];
    std::vector<TileConfig> fastest;
    int taken = 0;
    std::vector<decltype(candidate_key(TileConfig{}))> seen;
    for (const TunerSample* s : list) {
      if (taken >= opt.candidates_per_shape || s->latency_us > best * opt.candidate_within) break;
      const auto ck = candidate_key(s->config);
      if (std::find(seen.begin(), seen.end(), ck) != seen.end()) continue;
      seen.push_back(ck);
      TileConfig c = s->config;
      c.stages = 0;
      fastest.push_back(c);
      auto& slot = scores.try_emplace(ck, 0.0, c).first->second;
      slot.first += best / s->latency_us;
      if (taken == 0) wins.try_emplace(ck, 0.0, c).first->second.first += 1.0;
      ++taken;
    }
    g.winners.emplace_back(sh.M, sh.N, sh.K, std::move(fastest));
  }
  for (auto& [bk, scores] : bucket_scores) {
    std::vector<std::pair<double, TileConfig>> v;
    for (auto& [ck, sc] : scores) v.push_back(sc);
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    auto& out = g.buckets[bk];
    for (std::size_t i = 0; i < v.size() && static_cast<int>(i) < opt.bucket_cap; ++i) out.push_back(v[i].second);
  }
  std::vector<std::pair<double, TileConfig>> w;
  for (auto& [ck, sc] : wins) w.push_back(sc);
  std::stable_sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < w.size() && static_cast<int>(i) < opt.common_count; ++i) g.common.push_back(w[i].second);
  index_catalogue(g);
}

}  // namespace

int shape_fold(const GemmShape& s, int folds) {
  const std::string text = std::string(dtype_name(s.dtype)) + ":" + std::to_string(s.M) + "," + std::to_string(s.N) +
                           "," + std::to_string(s.K);
  return static_cast<int>(fnv1a(text) % static_cast<uint64_t>(std::max(1, folds)));
}

SlotsByCluster measured_slots(const std::vector<TunerSample>& samples, const GpuSpec& gpu) {
  SlotsByCluster out;
  for (const auto& s : samples) {
    if (s.launched_ctas <= 0) continue;
    const TileConfig& t = s.config;
    const int cs = std::max(1, t.cluster_m) * std::max(1, t.cluster_n);
    // The tile grid in whole clusters (WaveGrid::cluster_ctas; any slot count will do here).
    const int64_t tiles = wave_grid(s.shape, t, 1).cluster_ctas;
    // A persistent kernel launches at most one CTA per slot; fewer CTAs than tiles reveals the slots.
    if (s.launched_ctas < tiles && s.launched_ctas <= 4 * gpu.sm_count) out[cs] = std::max(out[cs], s.launched_ctas);
  }
  return out;
}

TunerTable fit_tuner_table(const std::vector<TunerSample>& samples, const GpuSpec& gpu, const FitOptions& opt,
                           const std::string& source) {
  if (samples.empty()) throw std::invalid_argument("tuner fit: no samples");
  TunerTable table;
  table.gpu_id = gpu.id;
  table.sm_count = gpu.sm_count;
  table.source = source;
  table.support_penalty = opt.support_penalty;
  table.slots_by_cluster = measured_slots(samples, gpu);

  std::map<std::string, std::vector<const TunerSample*>> by_group;
  for (const auto& s : samples) {
    if (!(s.latency_us > 0) || !std::isfinite(s.latency_us)) continue;
    by_group[dtype_group(s.shape.dtype)].push_back(&s);
  }
  const std::vector<std::pair<std::string, std::vector<const TunerSample*>>> groups(by_group.begin(), by_group.end());
  std::vector<GroupTable> fitted(groups.size());
  for_each_index(groups.size(), opt.threads, [&](std::size_t gi) {
    const std::vector<const TunerSample*>& rows = groups[gi].second;
    GroupTable g;
    const HardwareRates hw = hardware_rates(gpu, rows.front()->shape.dtype);
    std::vector<WaveFeatures> feats;
    feats.reserve(rows.size());
    for (const TunerSample* s : rows) {
      const HardwareRates h = s->shape.dtype == rows.front()->shape.dtype ? hw : hardware_rates(gpu, s->shape.dtype);
      feats.push_back(wave_features(s->shape, s->config, h, table.slots_by_cluster));
    }
    std::map<std::tuple<int, int64_t, int64_t, int64_t>, double> shape_best;
    for (const TunerSample* s : rows) {
      auto [it, fresh] = shape_best.try_emplace(shape_key(s->shape), s->latency_us);
      if (!fresh) it->second = std::min(it->second, s->latency_us);
    }
    // The group's fit, relative error. With shape effects, every shape also gets a free scale
    // (alternating least squares), so that the coefficients learn how configurations of one
    // shape differ rather than how far off the whole shape is.
    std::map<std::tuple<int, int64_t, int64_t, int64_t>, double> scale;
    for (const TunerSample* s : rows) scale[shape_key(s->shape)] = 1.0;
    std::vector<double> global;
    for (int round = 0; round <= opt.shape_effect_rounds; ++round) {
      LeastSquares all(kFeatureCount);
      std::map<TileClassKey, LeastSquares> per_class;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double y = rows[i]->latency_us * scale[shape_key(rows[i]->shape)];
        const double far =
            rows[i]->latency_us > opt.far_from_best * shape_best[shape_key(rows[i]->shape)] ? opt.far_weight : 1.0;
        const double w = far * rows[i]->weight / (y * y);
        const auto x = row_of(feats[i]);
        all.add(x, y, w);
        per_class.try_emplace(class_of(rows[i]->config), kFeatureCount).first->second.add(x, y, w);
      }
      global = all.solve(1e-9);
      g.global = to_coef(global);
      g.classes.clear();
      for (const auto& [key, ls] : per_class)
        g.classes[key] = ClassFit{to_coef(ls.solve(opt.class_ridge, global)), static_cast<int>(ls.rows())};
      if (round == opt.shape_effect_rounds) {
        std::erase_if(g.classes, [&](const auto& kv) { return kv.second.samples < opt.min_class_samples; });
        break;
      }
      // Per shape the scale that best matches the current predictions: sum r^2 / sum r, r = pred / y.
      std::map<std::tuple<int, int64_t, int64_t, int64_t>, std::pair<double, double>> acc;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Coefficients& c = g.classes.at(class_of(rows[i]->config)).coef;  // all classes kept until the last round
        double p = 0;
        for (std::size_t j = 0; j < kFeatureCount; ++j) p += c[j] * feats[i].x[j];
        const double r = p / rows[i]->latency_us;
        auto& a = acc[shape_key(rows[i]->shape)];
        a.first += r * r;
        a.second += r;
      }
      double log_sum = 0;
      for (auto& [k, a] : acc) {
        scale[k] = a.second > 0 ? std::clamp(a.first / a.second, 0.25, 4.0) : 1.0;
        log_sum += std::log(scale[k]);
      }
      const double norm = std::exp(log_sum / static_cast<double>(acc.size()));
      for (auto& [k, v] : scale) v /= norm;
    }
    g.samples = static_cast<int>(rows.size());

    // Residual correction in log space, then per exact configuration a shrunk factor.
    if (opt.residual_ridge >= 0 || opt.config_ridge >= 0) {
      std::vector<double> r(rows.size()), w(rows.size());
      std::vector<std::array<double, kResidualCount>> z(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double base = group_latency(g, rows[i]->shape, rows[i]->config, feats[i], nullptr, false);
        r[i] = std::log(rows[i]->latency_us / base);
        w[i] = rows[i]->weight * (rows[i]->latency_us > opt.residual_near * shape_best[shape_key(rows[i]->shape)]
                                      ? opt.residual_far_weight
                                      : 1.0);
        z[i] = residual_features(rows[i]->shape, rows[i]->config, feats[i]);
      }
      if (opt.residual_ridge >= 0) {
        LeastSquares ls(kResidualCount);
        for (std::size_t i = 0; i < rows.size(); ++i) ls.add({z[i].begin(), z[i].end()}, r[i], w[i]);
        const auto gamma = ls.solve(std::max(opt.residual_ridge, 1e-9));
        std::copy(gamma.begin(), gamma.end(), g.residual.begin());
        for (std::size_t i = 0; i < rows.size(); ++i) {
          double c = 0;
          for (std::size_t j = 0; j < kResidualCount; ++j) c += g.residual[j] * z[i][j];
          r[i] -= std::clamp(c, -1.0, 1.0);
        }
      }
      if (opt.config_ridge >= 0) {
        std::map<ConfigKey, std::pair<double, double>> acc;  // sum w r, sum w
        for (std::size_t i = 0; i < rows.size(); ++i) {
          auto& a = acc[config_key(rows[i]->config)];
          a.first += w[i] * r[i];
          a.second += w[i];
        }
        for (const auto& [k, a] : acc)
          if (a.second >= 1.0) g.config_factor[k] = std::exp(a.first / (a.second + opt.config_ridge));
      }
    }

    if (opt.learned_rounds > 0) g.learned = fit_learned_residual(g, rows, feats, shape_best, opt);

    fit_candidates(g, rows, opt);
    fitted[gi] = std::move(g);
  });
  for (std::size_t gi = 0; gi < groups.size(); ++gi) table.groups.emplace(groups[gi].first, std::move(fitted[gi]));
  if (opt.ranker_rounds > 0) {
    std::map<std::string, std::vector<double>> residuals;
    table.ranker = fit_ranker(samples, gpu, opt, table, residuals);
    for (auto& [name, res] : residuals) {
      auto g = table.groups.find(name);
      if (g == table.groups.end() || res.size() < 20) continue;
      auto at = [&](double q) {  // the q-quantile, nearest rank
        const std::size_t i = std::min(res.size() - 1, static_cast<std::size_t>(q * static_cast<double>(res.size())));
        std::nth_element(res.begin(), res.begin() + static_cast<std::ptrdiff_t>(i), res.end());
        return res[i];
      };
      g->second.interval = {at(0.10), at(0.90), static_cast<int>(res.size())};
    }
  }
  return table;
}

void refit_candidates(TunerTable& table, const std::vector<TunerSample>& samples, const FitOptions& options) {
  std::map<std::string, std::vector<const TunerSample*>> by_group;
  for (const auto& s : samples)
    if (s.latency_us > 0 && std::isfinite(s.latency_us)) by_group[dtype_group(s.shape.dtype)].push_back(&s);
  for (auto& [name, rows] : by_group)
    if (auto it = table.groups.find(name); it != table.groups.end()) fit_candidates(it->second, rows, options);
}

}  // namespace perfloom::tuner
