#pragma once
// GEMM on tensor cores (or FMA lanes for fp32): the CTA tile decides the waves.
#include <vector>

#include "model/analysis.h"

namespace perfloom {

struct GemmProblem {
  double batch = 1;  // independent GEMMs (bmm), or experts of a grouped GEMM
  double M = 0, N = 0, K = 0;
  Dtype dtype = Dtype::bf16;
};

// The tiles a GEMM library offers on this architecture (CTA tile M x N x K).
const std::vector<TileConfig>& gemm_tile_candidates(const GpuSpec& gpu, Dtype dtype);

// SM cycles at the boost clock that a GEMM kernel spends outside its main loop, where the pipes
// overlap: the CTAs' setup, the pipeline's fill (the first K-tiles load before any MMA starts) and
// the epilogue (accumulators out through shared memory). Measured on memory-bound GEMMs, whose time
// is t = a + compulsory bytes / (about 0.9 x the read bandwidth): a = 3.1-3.9 us on our H100 SXM and
// 3.8-4.4 us on our H200 (collector's own GEMMs), the same on both although their DRAM differs
// 1.49x; with the launch floor (0.75 / 1.0 us in their achievable rooflines) taken off, 4,300-6,200
// cycles. aiconfigurator's tables put a at 3.7-4.8 us on the H100, 3.6-4.6 us on the B200 and 5.0-6.5
// us on the A100 (7,000-9,000 cycles with the launch): a count of cycles more than of microseconds.
// Without it the learned efficiency of such a GEMM depended on its length, and a held-out GPU with
// another DRAM bandwidth got the wrong one (H100 held out: its own default GEMMs 1.05-1.09x
// over-predicted at the median between 5 and 100 us). Held-out GEMM MAPE 4,000 / 5,000 / 7,000 / 10,000 cycles:
// H100 8.2 / 8.1 / 8.2 / 8.4% (none: 9.3%), H200 8.2 / 8.2 / 8.1 / 8.1% (8.4%).
inline constexpr double kGemmFixedCycles = 5000;

// Demand and plan of one GEMM with a given tile (and its split-K). Sets demand, plan, useful_flops,
// and the fixed cycles.
void gemm_demand(const GemmProblem& p, const TileConfig& tile, const HardwareRates& hw, Analysis& a);

// The tile (and split-K) the model expects a library to pick: the candidate with the shortest
// estimated time, small tiles paying for their lower tensor-core efficiency.
TileConfig choose_gemm_tile(const GemmProblem& p, const GpuSpec& gpu, const HardwareRates& hw);

// Where the tile of a GEMM whose tile is unknown (no kernel name, no tile given) comes from:
// `heuristic`, choose_gemm_tile above; `tuner`, the wave tuner's top configuration when the GPU
// has a tuner table with a fit for the dtype (model/tuner/, resources/tuner), else the heuristic
// (Analysis::tile_origin says "tuner" or "heuristic"). Process-wide; the default is `heuristic`;
// PERFLOOM_UNTILED_GEMM_TILE=tuner|heuristic sets it at start-up. Training, evaluation and
// prediction all use the one setting, so that what `perfloom eval` measures is what ships.
// Not the default: the tuner's tables are fitted on the GPU's own tile sweeps, so the tuner tile
// exists only for measured GPUs (a target-measured tier) and a leave-one-GPU-out evaluation of it
// would leak the held-out GPU's measurements. Held in (the collector's default-algorithm GEMMs of the
// H100 and H200), the tuner's tile lowers GEMM MAPE from 9.0 / 9.8% to 7.0 / 7.4%.
enum class UntiledGemmTile { heuristic, tuner };
UntiledGemmTile untiled_gemm_tile();
void set_untiled_gemm_tile(UntiledGemmTile source);

// Bytes of the output element for a GEMM of this input dtype.
double gemm_output_bytes(Dtype dtype);

}  // namespace perfloom
