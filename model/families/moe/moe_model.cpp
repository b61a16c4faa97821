// Fused MoE (moe_model.h): expert occupancy and padding from the binomial counts of uniform
// routing, a CTA per (row block, N block) of every expert in one grid, each active expert's
// weight read once, and two launches (gate-up, then down) that each pay their busiest SM.
#include "model/families/moe/moe_model.h"

#include <algorithm>
#include <cmath>

#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"

namespace perfloom {

namespace {

// Relative throughput a tile reaches on the tensor pipe (as for GEMMs, gemm_model.cpp): a small tile
// re-reads operands from shared memory for few FLOPs. 1 for 128x128 and larger.
double tile_efficiency(const TileConfig& t) {
  return std::min(1.0, std::pow(static_cast<double>(t.tile_m) * t.tile_n / (128.0 * 128.0), 0.35));
}

// Triton's launch for the engines' configurations: 4 warps up to a 64x128 tile, 8 above.
int moe_threads(const TileConfig& t) { return t.tile_m * t.tile_n > 64 * 128 ? 256 : 128; }

// The fused-MoE kernel's time on the busiest SM: its tensor and DRAM cycles at the fractions of the
// datasheet rates it reaches (moe_model.h, kMoeTensorEfficiency), the other pipes at their peaks,
// plus the pipeline fill and epilogue and the launch.
double moe_estimate_us(const Analysis& g, Dtype dtype, const HardwareRates& hw) {
  const auto busiest = [&](Pipe p) { return g.cycles_busiest[static_cast<std::size_t>(p)]; };
  const double tensor_eff = dtype_bytes(dtype) <= 1 ? kMoeTensorEfficiency8Bit : kMoeTensorEfficiency16Bit;
  const double cycles = std::max({busiest(Pipe::tensor) / tensor_eff, busiest(Pipe::fma),
                                  busiest(Pipe::dram) / kMoeDramEfficiency, busiest(Pipe::l2), busiest(Pipe::smem)});
  return (cycles + g.fixed_cycles) / hw.clock_hz * 1e6 + hw.launch_floor_us;
}

}  // namespace

double moe_expected_active_experts(double T, double E, double topk) {
  if (T <= 0 || E <= 0) return 0;
  const double p = std::min(1.0, topk / E);
  return E * (1.0 - std::pow(1.0 - p, T));
}

double moe_expected_padded_rows(double T, double E, double topk, int block_m) {
  if (T <= 0 || E <= 0 || block_m <= 0) return 0;
  const double p = std::min(1.0, topk / E);
  const double bm = block_m;
  if (p >= 1.0) return E * std::ceil(T / bm) * bm;
  // E[ceil(c / bm)] over c ~ Binomial(T, p), summed over a window of the mean +- 12 standard
  // deviations (the rest of the mass is below 1e-30).
  const double mean = T * p, sd = std::sqrt(T * p * (1.0 - p));
  const double lo = std::max(0.0, std::floor(mean - 12.0 * sd - 1.0));
  const double hi = std::min(T, std::ceil(mean + 12.0 * sd + 1.0));
  // The pmf at the window's start from lgamma, then by the ratio pmf(c+1)/pmf(c) = (T-c)/(c+1) p/q.
  const double q = 1.0 - p;
  double pmf = std::exp(std::lgamma(T + 1.0) - std::lgamma(lo + 1.0) - std::lgamma(T - lo + 1.0) + lo * std::log(p) +
                        (T - lo) * std::log1p(-p));
  double blocks = 0;
  for (double c = lo; c <= hi; c += 1.0) {
    blocks += pmf * std::ceil(c / bm);  // c = 0 adds nothing: an expert with no token has no block
    pmf *= (T - c) / (c + 1.0) * p / q;
  }
  return E * blocks * bm;
}

void moe_gemm_demand(const MoeGemm& g, const TileConfig& t, const HardwareRates& hw, Analysis& a) {
  const double in_b = dtype_bytes(g.dtype), out_b = gemm_output_bytes(g.dtype);
  const double rows = g.T * g.topk;
  const double active = moe_expected_active_experts(g.T, g.E, g.topk);
  const double padded = moe_expected_padded_rows(g.T, g.E, g.topk, t.tile_m);
  const double k_pad = std::ceil(g.K / t.tile_k) * t.tile_k;
  const double tiles_n = std::ceil(g.N / t.tile_n);
  // Every row block of every expert is one CTA per N block, all in one grid.
  const double ctas = std::max(1.0, padded / t.tile_m * tiles_n);
  a.useful_flops = 2.0 * rows * g.N * g.K;
  const bool tensor = g.dtype != Dtype::fp32 && hw.tensor_flops_per_clk > 0;

  PipeDemand d;
  const double executed = ctas * 2.0 * t.tile_m * t.tile_n * k_pad;
  if (tensor) {
    d.tensor_flops = executed;
    d.fma_flops = 2.0 * rows * g.N;  // epilogue: scale, routing weight, convert
  } else {
    d.fma_flops = executed;
  }
  // Compulsory traffic: each active expert's weight once, the activation rows once, the output once.
  const double weights = active * g.N * g.K * in_b;
  d.dram_bytes = weights + g.a_rows * g.K * in_b + rows * g.N * out_b;
  d.dram_write_bytes = rows * g.N * out_b;
  // Each CTA streams its row block and its weight block through L2 and shared memory.
  d.l2_bytes = ctas * (t.tile_m + t.tile_n) * k_pad * in_b + rows * g.N * out_b;
  d.smem_bytes = ctas * (t.tile_m + t.tile_n) * k_pad * in_b;
  a.demand = d;

  // The least any configuration must do: no padding, each operand through L2 once per 256-wide block.
  PipeDemand least = d;
  if (tensor)
    least.tensor_flops = a.useful_flops;
  else
    least.fma_flops = a.useful_flops;
  const double per_expert = active > 0 ? rows / active : 0;
  least.l2_bytes = (rows * std::ceil(g.N / 256.0) * g.K + active * g.N * g.K * std::ceil(per_expert / 256.0)) * in_b +
                   rows * g.N * out_b;
  least.smem_bytes = least.l2_bytes;
  a.least_demand = least;

  const double stage_bytes = (t.tile_m + t.tile_n) * t.tile_k * in_b;
  const int stages =
      t.stages > 0 ? t.stages : std::clamp(static_cast<int>(hw.max_smem_per_block_bytes * 0.9 / stage_bytes), 2, 5);
  const int threads = moe_threads(t);
  const int per_sm = std::min(occupancy(threads, 0, stages * stage_bytes, hw), 4);
  a.plan = plan_uniform_ctas(ctas, per_sm, threads, hw);
  a.tile = t;
  a.tile->stages = stages;
  a.fixed_cycles = kGemmFixedCycles;
}

TileConfig choose_moe_tile(const MoeGemm& g, const HardwareRates& hw) {
  TileConfig best{64, 64, 64};
  double best_cycles = INFINITY;
  for (int bm : {16, 32, 64, 128})
    for (int bn : {32, 64, 128, 256})
      for (int bk : {64, 128}) {
        const TileConfig t{bm, bn, bk};
        if ((bm + bn) * bk * dtype_bytes(g.dtype) * 2 > hw.max_smem_per_block_bytes) continue;
        Analysis a;
        moe_gemm_demand(g, t, hw, a);
        finish_analysis(a, hw);
        double worst = 0;
        for (Pipe pipe : {Pipe::tensor, Pipe::fma, Pipe::dram, Pipe::l2, Pipe::smem}) {
          double c = a.cycles_busiest[static_cast<std::size_t>(pipe)];
          if (pipe == Pipe::tensor || pipe == Pipe::fma) c /= tile_efficiency(t);
          worst = std::max(worst, c);
        }
        if (worst < best_cycles * 0.999) {
          best_cycles = worst;
          best = t;
        }
      }
  return best;
}

Analysis analyze_moe(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  if (k.dtype != Dtype::fp32 && hw.tensor_flops_per_clk <= 0)
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(k.dtype)) + " tensor-core path");
  const Shape& s = k.shape;
  const double T = static_cast<double>(s.T), E = static_cast<double>(s.E), topk = static_cast<double>(s.topk);
  const double H = static_cast<double>(s.H), I = static_cast<double>(s.I);
  const MoeGemm up_gemm{T, E, topk, T, 2.0 * I, H, k.dtype};
  const MoeGemm down_gemm{T, E, topk, T * topk, H, I, k.dtype};
  const TileConfig up_tile = k.tile ? *k.tile : choose_moe_tile(up_gemm, hw);
  const TileConfig down_tile = k.tile ? *k.tile : choose_moe_tile(down_gemm, hw);

  Analysis up, down;
  moe_gemm_demand(up_gemm, up_tile, hw, up);
  moe_gemm_demand(down_gemm, down_tile, hw, down);
  Analysis a;
  a.family = Family::moe;
  a.op = k.op;
  a.demand = up.demand;
  a.demand += down.demand;
  PipeDemand least = *up.least_demand;
  least += *down.least_demand;
  a.least_demand = least;
  a.useful_flops = up.useful_flops + down.useful_flops;
  a.plan = up.plan;  // the larger of the two launches; features read its waves
  a.plan.ctas = up.plan.ctas + down.plan.ctas;
  a.tile = up.tile;
  a.tile_origin = k.tile ? "given" : "heuristic";
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
  a.bound = up.roofline_us >= down.roofline_us ? up.bound : down.bound;
  a.estimate_us = std::max(a.ceiling_us, moe_estimate_us(up, k.dtype, hw) + moe_estimate_us(down, k.dtype, hw));
  a.estimate_origin = "moe estimate (efficiencies fitted on the H200 fused-MoE sweep)";
  return a;
}

}  // namespace perfloom
