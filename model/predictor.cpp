#include "model/predictor.h"

#include <algorithm>

#include "model/families/family_models.h"

namespace perfloom {

FamilyEfficiency roofline_efficiency(Family f) {
  // p10 / p50 / p90 of roofline time / measured over the public datasets, every GPU together:
  // `perfloom-roofline-check` (docs/accuracy.md, "The ceiling is a lower bound").
  switch (f) {
    case Family::gemm:
      return {0.569, 0.203, 0.847};
    case Family::attention:
      return {0.206, 0.095, 0.625};
    case Family::norm:
      return {0.452, 0.341, 0.611};
    case Family::elementwise:
      return {0.559, 0.190, 1.030};
    // Not fitted: without learned models MoE answers from its own estimate (analyze_moe,
    // estimate_spread) and collectives from the NCCL model's where it has one; these serve otherwise.
    case Family::moe:
      return {0.45, 0.2, 0.8};
    case Family::communication:
      return {0.7, 0.4, 0.9};
    case Family::unknown:
      return {1.0, 1.0, 1.0};
  }
  return {};
}

FamilyEfficiency estimate_spread(Family f) {
  // measured / estimate at the 10th, 50th and 90th percentile on held-out rank counts.
  // Collectives: the estimate carried to a rank count it was not measured at is within 24% on 90%
  // of the measurements (`perfloom-comm-check`, "held-out ranks"; docs/accuracy.md, "Collectives").
  if (f == Family::communication) return {1.0, 0.8, 1.2};
  // Fused MoE: measured (best configuration of the H200 sweep, tokens 1-16384, bf16 and fp8) over
  // the estimate, every layer of data/moe-h200 (`tools/moe/model_check.py`); the short layers,
  // which time noisily, make the upper tail.
  if (f == Family::moe) return {1.15, 0.97, 1.78};
  return {1.0, 1.0, 1.0};
}

std::vector<Prediction> KernelPredictor::predict_batch(std::span<const KernelDesc> kernels, const GpuSpec& gpu,
                                                       std::vector<std::string>* errors) const {
  std::vector<Prediction> out(kernels.size());
  if (errors) errors->assign(kernels.size(), "");
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    try {
      out[i] = predict(kernels[i], gpu);
    } catch (const UnsupportedKernel& e) {
      if (!errors) throw;
      (*errors)[i] = e.what();
    }
  }
  return out;
}

Prediction predict_roofline(const KernelDesc& k, const GpuSpec& gpu) {
  Prediction p;
  p.analysis = analyze_kernel(k, gpu);
  p.family = p.analysis.family;
  p.ceiling_us = p.analysis.ceiling_us;
  p.bound = p.analysis.bound;
  if (p.analysis.estimate_us) {
    // The family's calibrated estimate; its interval is the spread of that estimate on held-out
    // measurements (collectives: estimate_spread, checked by `perfloom-comm-check`).
    const FamilyEfficiency spread = estimate_spread(p.family);
    p.pred_us = *p.analysis.estimate_us;
    p.lo_us = std::max(p.ceiling_us, p.pred_us * spread.p10);
    p.hi_us = std::max(p.lo_us, p.pred_us * spread.p90);
    p.method = p.analysis.estimate_origin;
    return p;
  }
  const FamilyEfficiency e = roofline_efficiency(p.family);
  const double roofline = p.analysis.roofline_us;
  p.pred_us = roofline / e.median;
  p.lo_us = std::max(p.ceiling_us, roofline / e.p90);
  p.hi_us = roofline / e.p10;
  p.method = "roofline";
  return p;
}

}  // namespace perfloom
