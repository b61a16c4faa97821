#pragma once
// Fused MoE (the serving engines' Triton fused_moe design, tools/moe/fused_moe.py): the T x topk
// (token, expert) assignments are sorted by expert and each expert's run is padded to BLOCK_SIZE_M;
// one launch per GEMM (gate-up H -> 2I, then down I -> H) runs a CTA per (row block, N block) of
// every expert in one grid. Routing is taken as uniform: each expert receives Binomial(T, topk/E)
// assignments.
#include "model/analysis.h"

namespace perfloom {

// Fractions of the datasheet tensor and DRAM rates that the fused-MoE Triton kernel reaches at its
// best configuration, fitted on the H200 sweep (data/moe-h200, tools/moe/model_check.py) over the
// layers of 32 tokens and more (shorter ones time too noisily there): the median absolute error of
// the estimate is smallest at 0.54 (16-bit) and 0.44 (fp8, per-tensor and block scales together)
// for the tensor pipe and 0.90 for DRAM. Analysis::estimate_us carries the estimate.
inline constexpr double kMoeTensorEfficiency16Bit = 0.54;
inline constexpr double kMoeTensorEfficiency8Bit = 0.44;
inline constexpr double kMoeDramEfficiency = 0.90;

// Expected number of experts that receive at least one of T tokens' top-k choices.
double moe_expected_active_experts(double T, double E, double topk);

// Expected length of the sorted, padded assignment list: sum over experts of each expert's count
// rounded up to block_m, in expectation over the binomial counts (not the mean count rounded up,
// which misses the padding of the experts above and below the mean).
double moe_expected_padded_rows(double T, double E, double topk, int block_m);

// One of the two GEMMs of a fused MoE layer with a given tile: `rows` assignments (T x topk), `a_rows`
// distinct activation rows it reads (T for gate-up, whose topk copies of a token share a row through
// L2; the assignments for down), `active` experts, each weight N x K read once per active expert.
struct MoeGemm {
  double T = 0, E = 0, topk = 0;
  double a_rows = 0;
  double N = 0, K = 0;
  Dtype dtype = Dtype::bf16;
};
void moe_gemm_demand(const MoeGemm& g, const TileConfig& tile, const HardwareRates& hw, Analysis& a);

// The configuration the model expects a tuned engine to run: of the engines' search space
// (BLOCK_SIZE_M 16-128, BLOCK_SIZE_N 32-256, BLOCK_SIZE_K 64/128), the one with the fewest estimated
// cycles on the busiest SM, small tiles paying for their lower tensor-core efficiency.
TileConfig choose_moe_tile(const MoeGemm& g, const HardwareRates& hw);

}  // namespace perfloom
