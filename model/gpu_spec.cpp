#include "model/gpu_spec.h"

namespace perfloom {

std::optional<double> GpuSpec::peak_flops_per_s(Dtype d) const {
  if (d == Dtype::fp32) return fp32_flops_per_s();
  auto key = tensor_rate_key(d);
  if (!key) return std::nullopt;
  auto it = tensor_flops_per_sm_per_clock.find(std::string(*key));
  if (it == tensor_flops_per_sm_per_clock.end()) return std::nullopt;
  return it->second * sm_count * clock_hz();
}

double GpuSpec::fp32_flops_per_s() const { return 2.0 * fp32_lanes_per_sm * sm_count * clock_hz(); }

}  // namespace perfloom
