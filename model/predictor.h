#pragma once
// The predictor facade that the CLI, the GUI and the simulator call. Today it is the roofline
// baseline: the analytical roofline time (cold caches, busiest SM) divided by a fixed efficiency
// per kernel family, fitted on the public measurements (bench/results/roofline_baseline.md).
// The learned model plugs in behind the same interface.
#include <string>

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
  std::string method;           // "roofline"
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

// What the CLI, the GUI, the simulator and the tuner hold: one interface, several models behind it.
// Implementations are immutable after construction and safe to call from many threads.
class KernelPredictor {
 public:
  virtual ~KernelPredictor() = default;
  // Throws UnsupportedKernel when the kernel cannot run on the GPU as described.
  virtual Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const = 0;
  virtual std::string name() const = 0;
};

class RooflinePredictor : public KernelPredictor {
 public:
  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override { return predict_roofline(k, gpu); }
  std::string name() const override { return "roofline"; }
};

}  // namespace perfloom
