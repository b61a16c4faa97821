#include "model/predictor.h"

#include "model/families/family_models.h"

namespace perfloom {

FamilyEfficiency roofline_efficiency(Family f) {
  // Fitted by bench/roofline_check on the public datasets; see bench/results/roofline_baseline.md.
  switch (f) {
    case Family::gemm: return {0.70, 0.45, 0.88};
    case Family::attention: return {0.55, 0.30, 0.80};
    case Family::norm: return {0.45, 0.20, 0.75};
    case Family::elementwise: return {0.50, 0.20, 0.80};
    case Family::moe: return {0.45, 0.25, 0.70};
    case Family::communication: return {0.60, 0.30, 0.85};
    case Family::unknown: return {1.0, 0.5, 1.0};
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
  p.pred_us = p.ceiling_us / e.median;
  p.lo_us = p.ceiling_us / e.p90;
  p.hi_us = p.ceiling_us / e.p10;
  p.method = "roofline";
  return p;
}

}  // namespace perfloom
