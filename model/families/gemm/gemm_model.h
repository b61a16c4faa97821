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

// Bytes of the output element for a GEMM of this input dtype.
double gemm_output_bytes(Dtype dtype);

}  // namespace perfloom
