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

// Demand and plan of one GEMM with a given tile (and its split-K). Sets demand, plan, useful_flops.
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
// would leak the held-out GPU's measurements; bench/results/tuner_eval.md ("Untiled GEMMs") has
// the held-in numbers.
enum class UntiledGemmTile { heuristic, tuner };
UntiledGemmTile untiled_gemm_tile();
void set_untiled_gemm_tile(UntiledGemmTile source);

// Bytes of the output element for a GEMM of this input dtype.
double gemm_output_bytes(Dtype dtype);

}  // namespace perfloom
