#pragma once
// A sparse sampling plan along wave boundaries (DESIGN.md, idea 3): which (shape, configuration)
// points the collector should measure so that the wave model can be fitted, far fewer than an
// exhaustive sweep. Inside one wave count the model is bilinear in the last wave's fill and the
// K-loop length, so per configuration it needs, at each wave boundary, a full last wave and a
// last wave of one cluster (the two ends of the fill), each at two K-loop lengths; plus a half
// wave. The CSV it writes is a kernel list (CONTRACT.md: op,dtype,M,N,K) with the configuration
// to force in extra columns, which `perfloom-collect` can read as its shape list; cuBLASLt's
// orientation is given too (tile N x M, cluster N x M x 1), as the collector sets it.
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/tuner/tuner.h"
#include "model/tuner/wave_model.h"

namespace perfloom::tuner {

struct PlanOptions {
  int max_waves = 4;                       // boundaries at 1..max_waves full waves
  std::vector<int64_t> k_iters = {8, 64};  // two K-loop lengths per point (the bilinear needs two)
  bool half_wave = true;                   // also a half-full single wave
};

struct PlanPoint {
  GemmShape shape;
  TileConfig config;
  WaveGrid grid;
  std::string why;         // "boundary 2: full", "boundary 2: +1 cluster", "half wave"
  int heuristic_rank = 0;  // > 0: cuBLASLt's heuristic result of that rank for the shape, measured as it is
  int custom_option = -1;  // >= 0: cuBLASLt's custom option to set on the configuration (column cublaslt_custom)
};

// Points for every configuration; shapes are whole multiples of the tile (no ragged edge tiles),
// their output grid as square as the CTA count allows. Throws std::invalid_argument for an empty
// configuration list or a non-positive option.
std::vector<PlanPoint> plan_wave_samples(const GpuSpec& gpu, Dtype dtype, const std::vector<TileConfig>& configs,
                                         const PlanOptions& options = {}, const SlotsByCluster& measured = {});

// op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,waves,last_wave_fill,k_iters,why,
// cublaslt_stages,heuristic_rank (stages "<tile_k>x<stages>", "<tile_k>xAUTO" where the configuration
// leaves them to cuBLASLt; tools/collector/plan.h reads it), and cublaslt_custom where a point names a
// custom option (empty for the points that do not)
std::string plan_to_csv(const std::vector<PlanPoint>& plan);

// A timing plan: the first `top` of `ranked` (tune_gemm's answer for `shape`) as plan points, each with
// the custom option the table names and "<label> K" as its reason ("tune K" by default; perfloom-tuner-eval's
// checks name other lists), for the collector to time on the GPU (`perfloom tune --gemm ... --plan`, the tuner
// view's "Export timing plan"). Timed so, the fastest of the first 3 is within 3% of the best on 89.9 / 89.6%
// of 900 held-out shapes (H100 / H200).
std::vector<PlanPoint> timing_plan(const GemmShape& shape, const std::vector<RankedConfig>& ranked, std::size_t top,
                                   const std::string& label = "tune");

}  // namespace perfloom::tuner
