#pragma once
// The predictor facade that the CLI, the GUI and the simulator call. Today it is the roofline
// baseline: the analytical ceiling divided by a fixed efficiency per kernel family, fitted on the
// public measurements (bench/results/roofline_baseline.md). The learned model plugs in here.
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

// Per-family efficiency of the roofline baseline: ceiling / measured at the median, and the
// 10th and 90th percentiles of that ratio.
struct FamilyEfficiency {
  double median = 0.5, p10 = 0.3, p90 = 0.8;
};
FamilyEfficiency roofline_efficiency(Family f);

// Throws UnsupportedKernel when the kernel cannot run on the GPU as described.
Prediction predict_roofline(const KernelDesc& k, const GpuSpec& gpu);

}  // namespace perfloom
