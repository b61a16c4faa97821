#include "model/predictor.h"

#include <algorithm>

#include "model/families/family_models.h"

namespace perfloom {

FamilyEfficiency roofline_efficiency(Family f) {
  // p10 / p50 / p90 of roofline time / measured over the public datasets, every GPU together:
  // `perfloom-roofline-check`, bench/results/roofline_baseline.md.
  switch (f) {
    case Family::gemm: return {0.569, 0.203, 0.847};
    case Family::attention: return {0.206, 0.095, 0.625};
    case Family::norm: return {0.452, 0.341, 0.611};
    case Family::elementwise: return {0.559, 0.190, 1.030};
    // No public measurements yet: MoE as a GEMM pair, collectives from NCCL's typical bus
    // efficiency. Not fitted; the collector's data will replace them.
    case Family::moe: return {0.45, 0.2, 0.8};
    case Family::communication: return {0.7, 0.4, 0.9};
    case Family::unknown: return {1.0, 1.0, 1.0};
  }
  return {};
}

Prediction predict_roofline(const KernelDesc& k, const GpuSpec& gpu) {
  Prediction p;
  p.analysis = analyze_kernel(k, gpu);
  p.family = p.analysis.family;
  p.ceiling_us = p.analysis.ceiling_us;
  p.bound = p.analysis.bound;
  const FamilyEfficiency e = roofline_efficiency(p.family);
  const double roofline = p.analysis.roofline_us;
  p.pred_us = roofline / e.median;
  p.lo_us = std::max(p.ceiling_us, roofline / e.p90);
  p.hi_us = roofline / e.p10;
  p.method = "roofline";
  return p;
}

}  // namespace perfloom
