// Fused MoE (vLLM/SGLang fused_moe_kernel): tokens routed to top-k experts, each expert's rows
// padded to the block size, then two grouped GEMMs: gate-up (H -> 2I) and down (I -> H).
#include <algorithm>
#include <cmath>

#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"

namespace perfloom {

Analysis analyze_moe(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  if (k.dtype != Dtype::fp32 && hw.tensor_flops_per_clk <= 0)
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(k.dtype)) + " tensor-core path");
  const Shape& s = k.shape;
  const double T = static_cast<double>(s.T), E = static_cast<double>(s.E), topk = static_cast<double>(s.topk);
  const double H = static_cast<double>(s.H), I = static_cast<double>(s.I);
  const double assignments = T * topk;
  // Uniform routing: the expected number of experts that receive at least one token.
  const double active = std::max(1.0, E * (1.0 - std::pow(1.0 - topk / E, T)));
  const double per_expert = assignments / active;
  // Block sizes in the spirit of vLLM's tuned fused_moe configs: narrow for decode, wide for prefill.
  const double block_m = per_expert <= 16 ? 16 : (per_expert <= 64 ? 32 : (per_expert <= 256 ? 64 : 128));
  const double rows_padded = std::ceil(per_expert / block_m) * block_m;
  const TileConfig tile{static_cast<int>(block_m), block_m <= 16 ? 64 : 128, 64};

  Analysis up, down;
  gemm_demand({active, rows_padded, 2.0 * I, H, k.dtype}, tile, hw, up);
  gemm_demand({active, rows_padded, H, I, k.dtype}, tile, hw, down);
  Analysis a;
  a.family = Family::moe;
  a.op = k.op;
  a.demand = up.demand;
  a.demand += down.demand;
  PipeDemand least = *up.least_demand;
  least += *down.least_demand;
  a.least_demand = least;
  // Activations are gathered by token index; the intermediate is written and read back once
  // (the activation kernel between the two GEMMs is a separate kernel).
  a.demand.dram_bytes += assignments * 2.0 * I * dtype_bytes(k.dtype) * 2.0;
  a.demand.dram_write_bytes += assignments * 2.0 * I * dtype_bytes(k.dtype);
  a.useful_flops = 2.0 * assignments * (2.0 * I * H + I * H);
  a.plan = up.plan;  // the larger of the two launches; features read its waves
  a.plan.ctas = up.plan.ctas + down.plan.ctas;
  a.tile = tile;
  a.tile_origin = "heuristic";
  // Two kernels run back to back: each pays its own busiest-SM time.
  finish_analysis(up, hw);
  finish_analysis(down, hw);
  finish_analysis(a, hw);
  for (std::size_t i = 0; i < a.cycles_busiest.size(); ++i) {
    a.cycles_busiest[i] = up.cycles_busiest[i] + down.cycles_busiest[i];
    a.achievable_cycles_busiest[i] = up.achievable_cycles_busiest[i] + down.achievable_cycles_busiest[i];
  }
  a.ceiling_us = up.ceiling_us + down.ceiling_us;
  a.roofline_us = up.roofline_us + down.roofline_us;
  a.achievable_roofline_us = up.achievable_roofline_us + down.achievable_roofline_us;
  a.launch_offset_us = up.launch_offset_us + down.launch_offset_us;
  a.bound = up.ceiling_us >= down.ceiling_us ? up.bound : down.bound;
  return a;
}

}  // namespace perfloom
