#include "model/training.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/classify/kernel_classifier.h"
#include "model/families/family_models.h"
#include "model/features.h"
#include "model/hash.h"

namespace perfloom {

namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  return i + 1 < v.size() ? v[i] + (pos - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
}

// One booster on the family's training rows (X, y, w) with the columns `not_learned` held at 0,
// so that no tree splits on them and a prediction never reads them; its interval and error from
// the held-out calibration rows (Xc, yc).
BoosterFit fit_booster(std::vector<float> X, const std::vector<float>& y, const std::vector<float>& w,
                       std::vector<float> Xc, const std::vector<float>& yc,
                       const std::vector<const PreparedRow*>& calib, const std::vector<std::string_view>& not_learned,
                       const TrainOptions& o) {
  BoosterFit fit;
  const auto& names = feature_names();
  const std::size_t cols = names.size();
  for (std::string_view n : not_learned) {
    const auto c = static_cast<std::size_t>(std::find(names.begin(), names.end(), n) - names.begin());
    if (c == cols) throw std::logic_error("features_not_learned: no feature '" + std::string(n) + "'");
    for (std::size_t i = 0; i < y.size(); ++i) X[i * cols + c] = 0;
    for (std::size_t i = 0; i < yc.size(); ++i) Xc[i * cols + c] = 0;
    fit.features_not_learned.emplace_back(n);
  }
  std::map<std::string, std::string> params = {{"objective", "reg:squarederror"},
                                               {"tree_method", "hist"},
                                               {"max_depth", std::to_string(o.max_depth)},
                                               {"eta", std::to_string(o.eta)},
                                               {"subsample", "0.8"},
                                               {"colsample_bytree", "0.8"},
                                               {"min_child_weight", "2"},
                                               {"seed", std::to_string(o.seed)},
                                               {"nthread", std::to_string(o.threads)},
                                               {"max_bin", "256"},
                                               {"verbosity", "0"}};
  fit.booster = XgbBooster::train(X, y.size(), cols, y, w, params, o.rounds);
  if (!yc.empty()) {
    auto pred = fit.booster.predict(Xc.data(), yc.size(), cols);
    std::vector<double> resid, p, meas;
    for (std::size_t i = 0; i < yc.size(); ++i) {
      resid.push_back(yc[i] - pred[i]);
      p.push_back(learned_time_us(calib[i]->achievable_roofline_us, calib[i]->launch_offset_us, pred[i]));
      meas.push_back(calib[i]->measured_us);
    }
    fit.log_q10 = quantile(resid, 0.1);
    fit.log_q90 = quantile(resid, 0.9);
    fit.calibration_mape = error_stats(p, meas).mape;
  }
  return fit;
}

// The weighted q-quantile of (value, weight) pairs.
double weighted_quantile(std::vector<std::pair<double, double>> vw, double q) {
  if (vw.empty()) return 0;
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& [v, w] : vw) total += w;
  double acc = 0;
  for (const auto& [v, w] : vw) {
    acc += w;
    if (acc >= q * total) return v;
  }
  return vw.back().first;
}

// The residuals a GPU not in training sees: the family's GPUs in 3 folds by a hash of their id,
// each fold predicted by a booster (the unseen-GPU features, a third of the rounds) trained on the
// other two; the weighted 10th and 90th percentiles of log(measured / predicted) over every fold.
std::optional<std::pair<double, double>> gpu_fold_interval(const std::vector<float>& X, const std::vector<float>& y,
                                                           const std::vector<float>& w,
                                                           const std::vector<const PreparedRow*>& rows,
                                                           const std::vector<std::string_view>& not_learned,
                                                           const TrainOptions& o) {
  constexpr uint64_t kFolds = 3;
  const std::size_t cols = feature_names().size();
  std::vector<uint64_t> fold(y.size());
  std::set<uint64_t> folds_present;
  for (std::size_t i = 0; i < y.size(); ++i) folds_present.insert(fold[i] = fnv1a(rows[i]->gpu_id) % kFolds);
  if (folds_present.size() < 2) return std::nullopt;  // one GPU group: nothing to hold out
  TrainOptions fo = o;
  fo.rounds = std::max(20, o.rounds / 3);
  std::vector<std::pair<double, double>> resid;  // (residual, weight)
  for (uint64_t k : folds_present) {
    std::vector<float> Xt, yt, wt, Xk, yk, wk;
    for (std::size_t i = 0; i < y.size(); ++i) {
      auto [Xd, yd, wd] = fold[i] == k ? std::tie(Xk, yk, wk) : std::tie(Xt, yt, wt);
      Xd.insert(Xd.end(), X.begin() + static_cast<std::ptrdiff_t>(i * cols),
                X.begin() + static_cast<std::ptrdiff_t>((i + 1) * cols));
      yd.push_back(y[i]);
      wd.push_back(w[i]);
    }
    if (yt.empty() || yk.empty()) continue;
    // No tree of it reads the not-learned columns, so Xk needs no zeroing.
    const BoosterFit f = fit_booster(std::move(Xt), yt, wt, {}, {}, {}, not_learned, fo);
    const auto pred = f.booster.predict(Xk.data(), yk.size(), cols);
    for (std::size_t i = 0; i < yk.size(); ++i) resid.emplace_back(yk[i] - pred[i], wk[i]);
  }
  if (resid.empty()) return std::nullopt;
  return std::make_pair(weighted_quantile(resid, 0.1), weighted_quantile(resid, 0.9));
}

}  // namespace

// The GPU's own rate features (the achievable DRAM and tensor rates, the L2 size, the launch floor)
// name the GPU as much as they describe it. For a GPU in training that helps: its trees tell its
// implementations apart by them (`perfloom train`'s held-out rows with / without them:
// GEMM 8.7 / 9.8%, norm 4.0 / 4.3%, elementwise 2.4 / 2.9%). For a GPU that is not, a tree that
// splits between two trained GPUs' values sends it to whichever side, with whatever implementation
// trained there: held out, the H100's own norm kernels land on the leaves of Vidur's A100/A40
// norms (framework ops, 2x slower) and are over-predicted by 69.5%, and the A40's GEMMs, which
// run at their achievable roofline, look like a T4's (43.9% MAPE). The cycle features already
// carry every GPU's rates (DRAM, L2, tensor and launch-floor cycles at its achievable rates). So the
// GEMM, norm and elementwise families have a second booster, trained without the rate features,
// for the GPUs that are not in training, which is what `perfloom eval --holdout-gpu` scores
// (seed 7): norm H100 15.3 -> 11.4% (its own
// norms 69.5 -> 11.5%), H200 10.4 -> 10.0%, but T4 11.4 -> 16.6%; elementwise H100 12.9 -> 11.5%,
// H200 9.8 -> 8.4%, T4 4.0 -> 6.2% (Turing's only GPU: no architecture in training to lean on);
// GEMM (library-chosen rows) A40 43.9 -> 9.7%, H100 16.0 -> 14.7%, but H200 9.1 -> 10.2%, T4 26.3 ->
// 30.4%. For attention the same cost 1-2 points (H100 20.9 -> 22.7%, H200 9.5 -> 10.4%): one booster
// with them serves every GPU. Only the tensor rate, or it and the DRAM rate, left out did worse.
// The pipe shares (features.cpp, `log2_share_*`) are learned by the GEMM boosters, and the tensor and
// DRAM shares by attention's, for either scope (held out, seeds 7 / 8: attention H100
// 21.0 / 22.1 -> 17.5 / 17.3%, A100 19.9 -> 18.1%, H200 11.0 -> 11.0%); all six cost attention 13
// points on the H100 and the norm and elementwise families 3-8 points on the H200.
const std::vector<std::string_view>& features_not_learned(Family fam, GpuScope scope) {
  static const std::vector<std::string_view> rates = {"log2_dram_bytes_per_clk", "log2_tensor_flops_per_clk_sm",
                                                      "log2_l2_mib", "log2_launch_floor_cycles"};
  static const std::vector<std::string_view> shares = {"log2_share_tensor", "log2_share_fma", "log2_share_sfu",
                                                       "log2_share_dram",   "log2_share_l2",  "log2_share_smem"};
  static const std::vector<std::string_view> rates_and_shares = [] {
    std::vector<std::string_view> v = rates;
    v.insert(v.end(), shares.begin(), shares.end());
    return v;
  }();
  // Attention reads the tensor and DRAM shares only: whether a kernel is bound by its (padded) matrix
  // work or by the KV cache's bytes, and how close the other is.
  static const std::vector<std::string_view> attention_not = {"log2_share_fma", "log2_share_sfu", "log2_share_l2",
                                                              "log2_share_smem"};
  static const std::vector<std::string_view> none;
  if (fam == Family::gemm) return scope == GpuScope::unseen ? rates : none;
  if (fam == Family::norm || fam == Family::elementwise) return scope == GpuScope::unseen ? rates_and_shares : shares;
  return fam == Family::attention ? attention_not : shares;
}

bool is_configuration_sweep(std::string_view dataset) {
  return dataset.ends_with("/tiles") || dataset.ends_with("/plan");
}

bool is_untiled_copy(std::string_view dataset) { return dataset.ends_with(kUntiledCopySuffix); }

double dataset_row_weight(std::string_view dataset, std::size_t rows) {
  if (rows == 0) return 1.0;
  const double share = kDatasetRows / static_cast<double>(rows);
  return std::min(1.0, is_configuration_sweep(dataset) || is_untiled_copy(dataset) ? std::sqrt(share) : share);
}

std::optional<std::string_view> predictor_training_exclusion(std::string_view note) {
  if (note.find("kv_cache_dtype=fp8") != std::string_view::npos) return "fp8 KV cache (not modelled yet)";
  if (const auto v = note.find(" variant=c");
      v != std::string_view::npos && note.find(" base", v) == std::string_view::npos)
    return "cuBLASLt custom option other than the configuration's own (the tuner's variant model)";
  return std::nullopt;
}

void add_untiled_copies(std::vector<TrainingSample>& samples) {
  const std::size_t n = samples.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!samples[i].kernel.tile && !samples[i].kernel.launch) continue;
    // An unnamed kernel stands for the serving engine's implementation (implementation_class 0):
    // a kernel of another implementation (FlashAttention-2, cuDNN) must not be learned as one.
    if (implementation_class(samples[i].kernel.name) != 0) continue;
    // A kernel without a tile means the configuration the library picks; a configuration sweep's
    // row ran a configuration we forced or one of the library's lower-ranked candidates (the
    // collector's `tiles` and `plan` sweeps, tools/collector/FORMAT.md), often a slow one, so it
    // says nothing about the untiled kernel and would only add label noise.
    if (is_configuration_sweep(samples[i].dataset)) continue;
    TrainingSample copy = samples[i];
    copy.kernel.tile.reset();
    copy.kernel.launch.reset();
    copy.kernel.name.clear();
    copy.dataset += kUntiledCopySuffix;
    samples.push_back(std::move(copy));
  }
}

std::vector<PreparedRow> prepare_rows(const std::vector<TrainingSample>& samples, const GpuDatabase& gpus,
                                      std::map<std::string, std::size_t>* skipped) {
  std::vector<PreparedRow> rows;
  rows.reserve(samples.size());
  auto skip = [&](const std::string& why) {
    if (skipped) ++(*skipped)[why];
  };
  for (const auto& s : samples) {
    const GpuSpec* gpu = gpus.find(s.gpu_id);
    if (!gpu) {
      skip("unknown GPU " + s.gpu_id);
      continue;
    }
    if (!(s.measured_us > 0)) {
      skip("no positive measurement");
      continue;
    }
    // A configuration sweep's row without a tile ran a kernel the collector could not describe
    // (cuBLAS's SIMT fallbacks magma_sgemmEx and gemmSN for bf16 and fp16, 10-30x the tensor-core
    // time). It is neither a measured configuration nor the library's own choice for the shape,
    // yet without a tile it would be learned as the latter (the heuristic tile's features): 263
    // such rows at log(measured / roofline) ~ 3 pulled H100 untiled bf16 GEMMs 10-35% high.
    if (is_configuration_sweep(s.dataset) && !s.kernel.tile) {
      skip("configuration sweep row without a tile (a kernel the sweep could not describe)");
      continue;
    }
    try {
      Analysis a = analyze_kernel(s.kernel, *gpu);
      if (auto peak = gpu->peak_flops_per_s(s.kernel.dtype);
          peak && a.useful_flops / *peak * 1e6 > s.measured_us * 1.02) {
        skip("faster than the useful FLOPs at the dense peak (impossible data)");
        continue;
      }
      PreparedRow r;
      r.family = a.family;
      r.features = make_features(s.kernel, *gpu, a);
      r.roofline_us = a.roofline_us;
      r.achievable_roofline_us = a.achievable_roofline_us;
      r.launch_offset_us = a.launch_offset_us;
      r.ceiling_us = a.ceiling_us;
      r.measured_us = s.measured_us;
      r.gpu_id = gpu->id;
      r.dataset = s.dataset;
      r.key = kernel_key(s.kernel, KernelKeyDetail::shape);
      rows.push_back(std::move(r));
    } catch (const UnsupportedKernel& e) {
      skip(std::string("unsupported: ") + e.what());
    }
  }
  return rows;
}

void FamilyModel::prepare_features(float* features) const {
  float& impl = features[impl_class_feature_index()];
  if (!implementation_classes.empty() && !implementation_classes.count(static_cast<int>(impl))) impl = 0;
}

std::vector<FamilyModel> train_family_models(const std::vector<PreparedRow>& rows, const TrainOptions& o) {
  std::vector<FamilyModel> out;
  for (Family fam :
       {Family::gemm, Family::attention, Family::norm, Family::elementwise, Family::moe, Family::communication}) {
    // The dataset (source and table) of each row, for its weight (dataset_row_weight).
    std::map<std::string, std::size_t> per_dataset;
    std::vector<const PreparedRow*> fam_rows;
    for (const auto& r : rows)
      if (r.family == fam) {
        fam_rows.push_back(&r);
        ++per_dataset[r.gpu_id + "|" + r.dataset];
      }
    if (fam_rows.size() < 50) continue;
    std::vector<float> X, Xc, y, yc, w;
    std::vector<const PreparedRow*> calib, train;
    FamilyModel m;
    m.family = fam;
    for (const PreparedRow* r : fam_rows) {
      // Deterministic split by the kernel's key and GPU: the same kernel never lands on both sides.
      const bool is_calib = static_cast<double>(fnv1a(r->key + r->gpu_id) % 10000) / 10000.0 < o.calibration_fraction;
      const float label =
          static_cast<float>(learned_label(r->measured_us, r->achievable_roofline_us, r->launch_offset_us));
      if (is_calib) {
        Xc.insert(Xc.end(), r->features.begin(), r->features.end());
        yc.push_back(label);
        calib.push_back(r);
      } else {
        X.insert(X.end(), r->features.begin(), r->features.end());
        y.push_back(label);
        w.push_back(static_cast<float>(dataset_row_weight(r->dataset, per_dataset[r->gpu_id + "|" + r->dataset])));
        train.push_back(r);
        ++m.rows_by_gpu[r->gpu_id];
        m.implementation_classes.insert(static_cast<int>(r->features[impl_class_feature_index()]));
      }
    }
    if (y.empty()) continue;
    m.train_rows = y.size();
    m.calibration_rows = yc.size();
    m.trained_gpus = fit_booster(X, y, w, Xc, yc, calib, features_not_learned(fam, GpuScope::trained), o);
    if (features_not_learned(fam, GpuScope::unseen) != features_not_learned(fam, GpuScope::trained))
      m.unseen_gpus = fit_booster(X, y, w, Xc, yc, calib, features_not_learned(fam, GpuScope::unseen), o);
    if (o.unseen_gpu_interval)
      m.unseen_gpu_log_q10_q90 = gpu_fold_interval(X, y, w, train, features_not_learned(fam, GpuScope::unseen), o);
    out.push_back(std::move(m));
  }
  return out;
}

std::string training_data_hash(const std::vector<PreparedRow>& rows) {
  std::vector<std::string> keys;
  keys.reserve(rows.size());
  for (const auto& r : rows) {
    std::ostringstream os;
    os.precision(9);
    os << r.gpu_id << '|' << r.dataset << '|' << r.key << '|' << r.measured_us;
    keys.push_back(os.str());
  }
  std::sort(keys.begin(), keys.end());
  uint64_t h = kFnv1aOffset;
  for (const auto& k : keys) h = fnv1a(k + "\n", h);
  std::ostringstream os;
  os << std::hex << h;
  return "fnv1a64:" + os.str();
}

ErrorStats error_stats(const std::vector<double>& predicted, const std::vector<double>& measured) {
  ErrorStats s;
  std::vector<double> ape, ratio;
  for (std::size_t i = 0; i < predicted.size() && i < measured.size(); ++i)
    if (measured[i] > 0) {
      ape.push_back(std::abs(predicted[i] - measured[i]) / measured[i] * 100.0);
      ratio.push_back(predicted[i] / measured[i]);
    }
  s.n = ape.size();
  if (ape.empty()) return s;
  double sum = 0;
  for (double a : ape) sum += a;
  s.mape = sum / static_cast<double>(ape.size());
  s.median_ape = quantile(ape, 0.5);
  s.p90_ape = quantile(ape, 0.9);
  s.median_ratio = quantile(ratio, 0.5);
  return s;
}

}  // namespace perfloom
