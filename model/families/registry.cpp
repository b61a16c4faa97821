#include "model/families/family_models.h"

namespace perfloom {

Analysis analyze_kernel(const KernelDesc& k, const GpuSpec& gpu) {
  if (k.op != Op::unknown) {
    if (auto why = validate_shape(k.op, k.shape)) throw UnsupportedKernel(*why);
  }
  switch (family_of(k.op)) {
    case Family::gemm:
      return analyze_gemm(k, gpu);
    case Family::attention:
      return analyze_attention(k, gpu);
    case Family::norm:
      return analyze_norm(k, gpu);
    case Family::elementwise:
      return analyze_elementwise(k, gpu);
    case Family::moe:
      return analyze_moe(k, gpu);
    case Family::communication:
      return analyze_communication(k, gpu);
    case Family::unknown:
      return analyze_unknown(k, gpu);
  }
  return analyze_unknown(k, gpu);
}

}  // namespace perfloom
