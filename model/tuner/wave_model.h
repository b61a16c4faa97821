#pragma once
// The wave-aware GEMM model's coordinates (DESIGN.md, idea 3). A shape is mapped onto one tile
// configuration's grid: output tiles along M and N, split-K slices, concurrent CTA slots, waves,
// the last wave's fill and the K-loop length. Latency is regressed on features of these
// coordinates, so one fit per configuration class serves every shape.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "model/analysis.h"
#include "model/kernel.h"

namespace perfloom::tuner {

struct GemmShape {
  int64_t M = 0, N = 0, K = 0;  // C[M,N] = A[M,K] . W[N,K]^T (CONTRACT.md)
  Dtype dtype = Dtype::bf16;
};

// One fit serves a dtype group: "16bit" (fp16, bf16), "fp8" (e4m3, e5m2), else the dtype's name.
std::string dtype_group(Dtype d);

// A shape on a configuration's tile grid. A thread-block cluster of cluster_m x cluster_n CTAs
// takes a cluster_m x cluster_n block of output tiles, so the tile grid is rounded up to whole
// clusters along M and N, and the CTAs of the padding run the main loop like the others (TMA
// fills their out-of-bounds operands with zeros): they hold slots and count in the waves. Measured
// on the H100 sweeps: two clusters of the same tile whose
// unpadded grids need the same waves differ 1.32x (median) when the padding adds one wave.
struct WaveGrid {
  int64_t tiles_m = 0, tiles_n = 0, split_k = 1;
  int64_t ctas = 0;           // output tiles x split-K slices: the units of work
  int64_t cluster_ctas = 0;   // the same on the tile grid rounded up to whole clusters: what holds slots
  int slot_count = 0;         // CTAs the GPU runs at once with this configuration
  int64_t waves = 0;          // ceil(cluster_ctas / slots)
  double last_wave_fill = 0;  // share of the slots the last wave uses, (0, 1]
  int64_t k_iters = 0;        // main-loop iterations per CTA: ceil(ceil(K / split) / tile_k)
};

// Concurrent CTAs by cluster size (CTAs per cluster), as measured from a sweep's launch grids.
using SlotsByCluster = std::map<int, int>;

// Concurrent CTAs for a configuration: SMs x CTAs per SM, the latter from the occupancy of a
// warp-specialised sm90 GEMM CTA (384 threads, 168 registers, stages x (tile_m + tile_n) x tile_k
// operand bytes of shared memory; unknown stages fill the SM), cut to whole clusters. Clusters
// of 4 or more CTAs cannot use every SM of a GPC (on H100 and H200 they get 120 of 132 SMs,
// measured); `measured` slots, when given for the cluster size, win.
int concurrent_ctas(const TileConfig& t, Dtype dtype, const HardwareRates& hw, const SlotsByCluster& measured = {});

// Throws std::invalid_argument for a non-positive dimension, tile or slot count.
WaveGrid wave_grid(const GemmShape& s, const TileConfig& t, int slot_count);

// Ideal time of one K-iteration of one CTA on the tensor pipe (FMA lanes without tensor cores),
// padded to the MMA shape: one tile side rounds up to 64 rows, the other counts at least 64.
double mma_iteration_us(const TileConfig& t, Dtype dtype, const HardwareRates& hw);

inline constexpr std::size_t kFeatureCount = 10;
// Names of the regression features, in order (a table stores them and must match):
//   one, u, f, u*f, w1, w1*u, dram_us, splitk_us, splitk, l2_us
// u = k_iters x mma_iteration_us; f = last_wave_fill; w1 = waves - 1; dram_us = compulsory DRAM
// traffic (A, W once, C once) over the DRAM bandwidth; splitk_us = fp32 partials written and read
// over DRAM; splitk = 1 with split-K; l2_us = operand bytes every CTA streams through L2.
// Within a wave count the model is a + b.k + c.f + d.k.f (bilinear in fill and K-loop length);
// each extra full wave adds e + g.k.
const std::array<std::string_view, kFeatureCount>& feature_names();
inline constexpr std::size_t kDramFeature = 6;  // index of dram_us

struct WaveFeatures {
  WaveGrid grid;
  std::array<double, kFeatureCount> x{};
};
WaveFeatures wave_features(const GemmShape& s, const TileConfig& t, const HardwareRates& hw, int slot_count);
// The same with the slots of concurrent_ctas (the measured slots per cluster size of a table).
inline WaveFeatures wave_features(const GemmShape& s, const TileConfig& t, const HardwareRates& hw,
                                  const SlotsByCluster& measured) {
  return wave_features(s, t, hw, concurrent_ctas(t, s.dtype, hw, measured));
}

// The residual correction's features (log space, per dtype group): what the linear wave model
// cannot express as an additive term. latency = wave model x exp(gamma . z).
//   one, cluster_m>1, cluster_n>1, cluster>=4, log2 k, (log2 k)^2/10, fill, one_wave, log2 waves,
//   log2 tile_m, log2 tile_n, tile_k>=128, pad_waste (share of the padded output grid outside C),
//   mem_share (compulsory DRAM time / (DRAM time + ideal MMA time of all waves)), split, narrow
//   (a tile side below 64)
inline constexpr std::size_t kResidualCount = 16;
const std::array<std::string_view, kResidualCount>& residual_names();
std::array<double, kResidualCount> residual_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f);

// The learned residual's inputs (tuner_fit.h FitOptions::learned_rounds): the wave features, the
// residual features and the raw coordinates: tile M, N, K, cluster M, N, split-K, waves, fill,
// K-iterations, log2 of M, N and K, element bytes. Names prefixed "wave:" and "residual:" for the
// first two sets; a table stores them and must match.
inline constexpr std::size_t kLearnedCount = kFeatureCount + kResidualCount + 13;
const std::array<std::string, kLearnedCount>& learned_names();
std::array<float, kLearnedCount> learned_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f);

// "1 wave, 97% full, 112 K-iterations" (and the split-K factor and the cluster padding when there is one).
std::string describe_grid(const WaveGrid& g);

}  // namespace perfloom::tuner
