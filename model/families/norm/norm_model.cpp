// RMSNorm and LayerNorm, with and without a fused residual add: one CTA per row, 16-byte vector
// loads, a block reduction, one rsqrt per row (vLLM's rms_norm_kernel and friends). Sarathi-Serve's
// (a 2023 vLLM fork's) kernel loads one element per thread and iteration, min(H, 1024) threads.
#include <algorithm>
#include <cmath>

#include "model/classify/kernel_classifier.h"
#include "model/families/family_models.h"

namespace perfloom {

namespace {
constexpr double kNormChainRoundTrips = 5;
}  // namespace

Analysis analyze_norm(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  const double T = static_cast<double>(k.shape.T), H = static_cast<double>(k.shape.H);
  const double b = dtype_bytes(k.dtype), elems = T * H;
  const bool fused = k.op == Op::fused_add_rmsnorm || k.op == Op::fused_add_layernorm;
  const bool layer = k.op == Op::layernorm || k.op == Op::fused_add_layernorm;
  PipeDemand d;
  // Reads x (and the residual), writes y (and the updated residual); weights (and bias) once.
  d.dram_bytes = elems * b * (fused ? 4.0 : 2.0) + H * b * (layer ? 2.0 : 1.0);
  d.dram_write_bytes = elems * b * (fused ? 2.0 : 1.0);
  d.l2_bytes = d.dram_bytes + T * H * b * (layer ? 2.0 : 1.0);  // every row re-reads the weights from L2
  d.fma_flops = elems * ((layer ? 8.0 : 6.0) + (fused ? 1.0 : 0.0));
  d.sfu_ops = T;
  Analysis a;
  a.family = Family::norm;
  a.op = k.op;
  a.demand = d;
  a.useful_flops = d.fma_flops;
  // The first pass reads the row (and the residual) and waits for it before the reduction: one load
  // per input in flight per thread, 16 bytes vectorised, one element in Sarathi-Serve's kernel.
  const bool scalar = implementation_class(k.name) == kSarathiImplementation;
  const double load_bytes = scalar ? b : 16.0;
  const int threads = static_cast<int>(std::clamp(std::ceil(H / (load_bytes / b) / 32.0) * 32.0, 32.0, 1024.0));
  a.bytes_in_flight_per_thread = load_bytes * (fused ? 2.0 : 1.0);
  a.plan = plan_uniform_ctas(T, occupancy(threads, 32, 0, hw), threads, hw);
  // A CTA's row is a chain: the first pass's loads, the block reduction, the second pass (the row
  // from L2 and the weight), the stores; the next row's CTA takes the slot after. Measured on our
  // one-CTA-per-row RMSNorms at 8 waves or more: 2.3-3.3 us per wave on both the H100 and the H200
  // (the bandwidth alone: 1.6-2.8), which the cube norm fits with about 6 DRAM latencies (381 ns)
  // per wave: the first pass's round trip, which the bytes in flight count, and kNormChainRoundTrips.
  // The first wave's chain overlaps the launch (finish_analysis counts waves - 1): counted in full it
  // puts one-wave norms (1.9-3.6 us measured) ~2x over.
  // Sarathi-Serve's scalar loop waits once per element and thread in each pass, which the bytes in
  // flight count, and its latency was fitted on kernels of its design (perfloom-latency-probe):
  // with the chain too, the held-out H100's Vidur norms would go from 12.4 to 13.3%, the T4's from
  // 17.9 to 25.1%.
  a.chain_round_trips_per_wave = scalar ? 0.0 : kNormChainRoundTrips;
  a.schedule_exact = true;  // one CTA per row
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
