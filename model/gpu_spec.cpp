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

// L2 bandwidth is not on datasheets. These are per-SM bytes per clock, set optimistic so that the
// ceiling stays a lower bound: A100's whitepaper gives 5120 B/clk for 108 SMs (47 per SM); Hopper
// and Blackwell are taken higher, older parts lower. A calibration file gives the achievable rate.
double datasheet_l2_bytes_per_clk_per_sm(const std::string& arch) {
  if (arch == "blackwell") return 96;
  if (arch == "hopper") return 64;
  if (arch == "ampere" || arch == "ada" || arch == "cdna3" || arch == "cdna2" || arch == "cdna4") return 48;
  return 32;
}

PipeRates datasheet_rates(const GpuSpec& gpu) {
  PipeRates r;
  const double per_s = gpu.sm_count * gpu.clock_hz();
  for (const auto& [key, per_clk] : gpu.tensor_flops_per_sm_per_clock) r.tensor_flops_per_s[key] = per_clk * per_s;
  r.fma_flops_per_s = gpu.fp32_flops_per_s();
  r.sfu_ops_per_s = gpu.sfu_ops_per_sm_per_clock * per_s;
  r.dram_bytes_per_s = r.dram_write_bytes_per_s = gpu.memory_bandwidth_bytes_per_s();
  r.l2_bytes_per_s = datasheet_l2_bytes_per_clk_per_sm(gpu.architecture) * per_s;
  r.smem_bytes_per_s_per_sm = kSmemBytesPerClkPerSm * gpu.clock_hz();
  r.launch_floor_us = kDatasheetLaunchFloorUs;
  return r;
}

}  // namespace perfloom
