#pragma once
// Training and evaluating the learned efficiency models (DESIGN.md, idea 1): per kernel family one
// XGBoost booster learns log(measured / roofline time at the achievable rates) from the analytical
// features, so that latency = that time x exp(prediction) (plus the kernel's share of a calibrated
// GPU's launch offset: learned_time_us). Hardware enters only through the features.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/analysis.h"
#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/xgb_booster.h"

namespace perfloom {

struct TrainingSample {
  KernelDesc kernel;
  std::string gpu_id;
  double measured_us = 0;
  std::string dataset;  // provenance, e.g. "aiconfigurator/h100_sxm/gemm/vllm-0.14.0"
};

// Why a measurement does not train the predictor, from its note (the importers' free text,
// storage::MeasuredKernel::note), or nothing when it does. One rule for `perfloom train`, `perfloom
// eval` and the tools that train or check against the same measurements:
//   - an fp8 KV cache ("kv_cache_dtype=fp8"): it halves the cache bytes, which the shape does not
//     say; not modelled yet;
//   - a configuration timed with another cuBLASLt custom option than the one it is forced with (a
//     `--variants` run: " variant=cC/sS" without " base" after it in its source,
//     tools/collector/FORMAT.md): a kernel variant the kernel description does not tell apart from
//     the configuration's own. It trains the tuner's variant model (model/tuner/variant_model.h).
std::optional<std::string_view> predictor_training_exclusion(std::string_view note);

// A sample after the analytical model: what training and evaluation need.
struct PreparedRow {
  Family family = Family::unknown;
  std::vector<float> features;
  double roofline_us = 0, ceiling_us = 0, measured_us = 0;
  double achievable_roofline_us = 0;  // what the learned model scales (Analysis::achievable_roofline_us)
  double launch_offset_us = 0;        // what it adds (Analysis::launch_offset_us)
  std::string gpu_id, dataset;
  std::string key;  // op, dtype and shape: the same kernel on another GPU has the same key
};

// The learned model's time for its output y: the achievable roofline times e^y, plus the kernel's
// share of its GPU's launch offset (Analysis::launch_offset_us: the GPU's own empty-kernel time less
// the launch floor that every GPU's roofline and features share, whole at the floor, in proportion
// above; 0 without a calibration). Its label is the inverse: the log of the measured time less that
// share over the roofline (the share taking at most half of a measurement).
inline double learned_time_us(double achievable_roofline_us, double launch_offset_us, double y) {
  return achievable_roofline_us * std::exp(y) + launch_offset_us;
}
inline double learned_label(double measured_us, double achievable_roofline_us, double launch_offset_us) {
  return std::log(std::max(measured_us - launch_offset_us, 0.5 * measured_us) / achievable_roofline_us);
}

// Most kernels reach the predictor without a tile (a kernel list, the simulator), yet our own
// measurements carry the tile the library ran. Each measured tiled kernel is therefore also
// learned as it looks without its tile and launch grid, so that both kinds of input are covered.
// The copy's dataset is the original's with kUntiledCopySuffix ("collector/h100-sxm/default+untiled").
inline constexpr std::string_view kUntiledCopySuffix = "+untiled";
void add_untiled_copies(std::vector<TrainingSample>& samples);
bool is_untiled_copy(std::string_view dataset);
// True for a dataset of the collector's configuration sweeps (`.../tiles`, `.../plan`): rows that
// ran forced or lower-ranked GEMM configurations rather than the library's choice.
bool is_configuration_sweep(std::string_view dataset);

// The training weight of each row of a dataset (a GPU's source and table) of `rows` rows. A dataset
// counts as much as kDatasetRows rows whatever its size (each row min(1, kDatasetRows / rows)), so
// 100k B200 GEMMs do not drown 400 norms of a T4. A configuration sweep counts as
// sqrt(kDatasetRows x rows): its rows are not repeats of a few kernels but different tile
// configurations of each shape, the structure the GEMM booster learns; held out at 3,000 rows, our
// Hopper sweeps are over-predicted by 3-5% on both GPUs. The untiled copies of our own tiled
// measurements (add_untiled_copies) count the same way, so that the sweeps' weight does not take
// the trees from what a GEMM of unknown tile costs.
inline constexpr double kDatasetRows = 3000;
double dataset_row_weight(std::string_view dataset, std::size_t rows);

// Analyses every sample on its GPU; samples that cannot run as described, or whose time beats
// the useful work at the GPU's dense peak (impossible data), are counted in `skipped` by reason.
std::vector<PreparedRow> prepare_rows(const std::vector<TrainingSample>& samples, const GpuDatabase& gpus,
                                      std::map<std::string, std::size_t>* skipped = nullptr);

struct TrainOptions {
  int rounds = 300;
  int max_depth = 8;
  double eta = 0.08;
  int threads = 2;
  int seed = 7;
  double calibration_fraction = 0.1;  // held out to size the prediction interval
  // The interval for GPUs not in training from folds by GPU (3 boosters of rounds / 3 per family);
  // `perfloom eval` does not need it and turns it off.
  bool unseen_gpu_interval = true;
};

// One trained booster of a family, with what its predictions need.
struct BoosterFit {
  XgbBooster booster;
  double log_q10 = 0, log_q90 = 0;  // residual quantiles (log measured/predicted) on held-out rows
  double calibration_mape = 0;
  std::vector<std::string> features_not_learned;  // held at 0 in training (features_not_learned())
};

// Which GPUs a booster serves (GpuScope, model/predictor.h): those with rows in its family's
// training data, or any other.
struct FamilyModel {
  Family family = Family::unknown;
  BoosterFit trained_gpus;                // for a GPU in rows_by_gpu
  std::optional<BoosterFit> unseen_gpus;  // for any other GPU, where its features differ
  std::size_t train_rows = 0, calibration_rows = 0;
  std::map<std::string, std::size_t> rows_by_gpu;
  // The implementation classes (feature impl_class) of the training rows. A kernel of another class
  // is predicted as class 0, the engine's default kernel: a class the boosters never saw would fall
  // on whichever side of a split its number lands (docs/accuracy.md: the B200's TensorRT-LLM
  // attention, which no other GPU has, held out). Empty (a model file without it): every class is
  // used as it is.
  std::set<int> implementation_classes;
  // The 80% interval (log measured / predicted) for a GPU not in training: residuals of GPUs held
  // out of the booster (folds by GPU), not of held-out kernels of the training GPUs, which are far
  // narrower. Unset (a model file without it): the booster's own.
  std::optional<std::pair<double, double>> unseen_gpu_log_q10_q90;

  // One kernel's features (make_features) as the boosters read them: an implementation class not in
  // implementation_classes becomes 0.
  void prepare_features(float* features) const;

  // Whether the GPU's measurements trained this family's boosters.
  bool trained_on(const std::string& gpu_id) const { return rows_by_gpu.count(gpu_id) > 0; }

  // The interval a prediction for the GPU carries: (log q10, log q90).
  std::pair<double, double> interval_for(const std::string& gpu_id) const {
    if (unseen_gpu_log_q10_q90 && !trained_on(gpu_id)) return *unseen_gpu_log_q10_q90;
    const BoosterFit& fit = fit_for(gpu_id);
    return {fit.log_q10, fit.log_q90};
  }

  GpuScope scope_for(const std::string& gpu_id) const {
    return unseen_gpus && !trained_on(gpu_id) ? GpuScope::unseen : GpuScope::trained;
  }
  const BoosterFit& fit_for(const std::string& gpu_id) const {
    return scope_for(gpu_id) == GpuScope::unseen ? *unseen_gpus : trained_gpus;
  }
};

// The features a family's booster is not trained on (their columns held at 0, so no tree reads
// them): the GPU's own rate features, for the GEMM, norm and elementwise boosters that serve GPUs
// without measurements in training, and the pipe shares outside GEMMs (attention keeps the tensor
// and DRAM ones) (model/training.cpp says why). Where the two scopes' lists are equal, one booster
// serves every GPU.
const std::vector<std::string_view>& features_not_learned(Family fam, GpuScope scope);

// One model per family that has rows. Rows are weighted so that no single dataset dominates.
std::vector<FamilyModel> train_family_models(const std::vector<PreparedRow>& rows, const TrainOptions& options);

// A stable hash of the training rows (datasets, GPUs, measurements), recorded in the manifest.
std::string training_data_hash(const std::vector<PreparedRow>& rows);

// Accuracy of predictions against measurements: absolute percentage errors.
struct ErrorStats {
  std::size_t n = 0;
  double mape = 0, median_ape = 0, p90_ape = 0;
  double median_ratio = 0;  // median of predicted / measured: the direction of the error (> 1: too slow)
};
ErrorStats error_stats(const std::vector<double>& predicted, const std::vector<double>& measured);

}  // namespace perfloom
