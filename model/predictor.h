#pragma once
// The predictor interface that the CLI, the GUI, the simulator and the tuner call (KernelPredictor).
// Two models sit behind it: the learned XGBoost models (model/learned_predictor.h, what
// make_default_predictor() returns when resources/models loads), which scale the analytical
// roofline time at the achievable rates by a factor learned per kernel family; and the roofline
// baseline (RooflinePredictor, the fallback and the simulator's fast path), the analytical roofline
// time (cold caches, busiest SM) divided by a fixed efficiency per family fitted on the public
// measurements. Callers use only the interface: nothing outside the learned predictor asks which
// model it holds.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/analysis.h"
#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom {

struct Prediction {
  double pred_us = 0;
  double lo_us = 0, hi_us = 0;  // an interval that held 80% of the measured kernels (p10..p90)
  double ceiling_us = 0;
  Pipe bound = Pipe::launch;
  Family family = Family::unknown;
  std::string method;  // "roofline"
  Analysis analysis;
};

// Per-family efficiency of the roofline baseline: roofline time / measured at the median, and the
// 10th and 90th percentiles of that ratio.
struct FamilyEfficiency {
  double median = 0.5, p10 = 0.3, p90 = 0.8;
};
FamilyEfficiency roofline_efficiency(Family f);
// The spread of a family's own calibrated estimate (Analysis::estimate_us): measured / estimate
// at the 10th (`p10`) and 90th (`p90`) percentile.
FamilyEfficiency estimate_spread(Family f);

// Throws UnsupportedKernel when the kernel cannot run on the GPU as described.
Prediction predict_roofline(const KernelDesc& k, const GpuSpec& gpu);

// Which booster of a learned family answers a GPU: the one trained with the GPU's measurements, or
// the one for GPUs not in training (without the GPU's own rate features).
enum class GpuScope { trained, unseen };

// What a predictor's training knows of a GPU, for one kernel family.
struct GpuCoverage {
  Family family = Family::unknown;
  std::size_t training_rows = 0;  // the GPU's measured kernels that trained the family (0: none)
  GpuScope scope = GpuScope::trained;
  bool one_booster = false;  // the family has no separate booster for GPUs not in training
};

// What the CLI, the GUI, the simulator and the tuner hold: one interface, several models behind it.
// Implementations are immutable after construction and safe to call from many threads.
class KernelPredictor {
 public:
  virtual ~KernelPredictor() = default;
  // Throws UnsupportedKernel when the kernel cannot run on the GPU as described.
  virtual Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const = 0;
  // Many kernels on one GPU (a trace, a kernel list, a tuner's candidates), one prediction each in
  // order. With `errors`, a kernel that cannot be predicted gets a default Prediction and its reason
  // in `errors` (same index; "" for the others); without, its UnsupportedKernel is thrown. This
  // default calls predict() per kernel; the learned predictor answers all kernels of a family with
  // one call to its booster.
  virtual std::vector<Prediction> predict_batch(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                                std::vector<std::string>* errors) const;
  virtual std::string name() const = 0;
  // What the predictions depend on besides the kernel and the GPU: cached predictions are keyed by
  // it, so it changes whenever a prediction may. The name for a model without trained parameters.
  virtual std::string version() const { return name(); }
  // True for models trained on measurements, which read a GEMM's tile as the tile sweeps taught
  // them (the tuner ranks tiles with them); false for the roofline baseline's fixed efficiencies.
  virtual bool is_learned() const { return false; }
  // Per learned family, what the training knows of the GPU; empty for a model without training.
  virtual std::vector<GpuCoverage> coverage(const std::string& /*gpu_id*/) const { return {}; }
};

class RooflinePredictor : public KernelPredictor {
 public:
  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override { return predict_roofline(k, gpu); }
  std::string name() const override { return "roofline"; }
};

}  // namespace perfloom
