#include "model/tuner/wave_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "model/families/gemm/gemm_model.h"

namespace perfloom::tuner {

std::string dtype_group(Dtype d) {
  switch (d) {
    case Dtype::fp16:
    case Dtype::bf16:
      return "16bit";
    case Dtype::fp8e4m3:
    case Dtype::fp8e5m2:
      return "fp8";
    default:
      return std::string(dtype_name(d));
  }
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int cluster_size(const TileConfig& t) { return std::max(1, t.cluster_m) * std::max(1, t.cluster_n); }
}  // namespace

int concurrent_ctas(const TileConfig& t, Dtype dtype, const HardwareRates& hw, const SlotsByCluster& measured) {
  const int cs = cluster_size(t);
  if (auto it = measured.find(cs); it != measured.end() && it->second > 0) return it->second;
  const double stage_bytes = static_cast<double>(t.tile_m + t.tile_n) * std::max(1, t.tile_k) * dtype_bytes(dtype);
  const double smem = t.stages > 0 ? t.stages * stage_bytes : hw.max_smem_per_block_bytes;
  const int per_sm = occupancy(384, 168, smem, hw);
  double ctas = static_cast<double>(hw.sms) * per_sm;
  if (cs >= 4) ctas *= 120.0 / 132.0;  // GPC fragmentation, as measured on H100/H200
  const int whole = static_cast<int>(std::floor(ctas / cs + 1e-9)) * cs;
  return std::max(cs, whole);
}

WaveGrid wave_grid(const GemmShape& s, const TileConfig& t, int slot_count) {
  if (s.M <= 0 || s.N <= 0 || s.K <= 0) throw std::invalid_argument("GEMM dimensions must be positive");
  if (t.tile_m <= 0 || t.tile_n <= 0 || t.tile_k <= 0) throw std::invalid_argument("tile sizes must be positive");
  if (slot_count <= 0) throw std::invalid_argument("concurrent CTA slots must be positive");
  WaveGrid g;
  g.tiles_m = ceil_div(s.M, t.tile_m);
  g.tiles_n = ceil_div(s.N, t.tile_n);
  g.split_k = std::max(1, t.split_k);
  g.ctas = g.tiles_m * g.tiles_n * g.split_k;
  g.cluster_ctas = whole_clusters(g.tiles_m, t.cluster_m) * whole_clusters(g.tiles_n, t.cluster_n) * g.split_k;
  g.slot_count = slot_count;
  g.waves = ceil_div(g.cluster_ctas, slot_count);
  g.last_wave_fill = static_cast<double>(g.cluster_ctas - (g.waves - 1) * slot_count) / slot_count;
  g.k_iters = ceil_div(ceil_div(s.K, g.split_k), t.tile_k);
  return g;
}

double mma_iteration_us(const TileConfig& t, Dtype dtype, const HardwareRates& hw) {
  // Warpgroup MMA: one side of the tile in 64-row steps, the other at least 64 wide to keep the
  // tensor core busy (narrow tiles re-read the 64-row operand from shared memory per MMA).
  int mdim = t.tile_m, ndim = t.tile_n;
  if (t.tile_n % 64 == 0 && (t.tile_m % 64 != 0 || t.tile_n >= t.tile_m)) std::swap(mdim, ndim);
  const double padded_m = std::ceil(mdim / 64.0) * 64.0;
  const double padded_n = std::max(ndim, 64);
  const double rate =
      hw.tensor_flops_per_clk > 0 && dtype != Dtype::fp32 ? hw.tensor_flops_per_clk : hw.fma_flops_per_clk;
  return 2.0 * padded_m * padded_n * t.tile_k / (rate * hw.clock_hz) * 1e6;
}

const std::array<std::string_view, kFeatureCount>& feature_names() {
  static const std::array<std::string_view, kFeatureCount> names = {"one",  "u",       "f",         "u*f",    "w1",
                                                                    "w1*u", "dram_us", "splitk_us", "splitk", "l2_us"};
  return names;
}

WaveFeatures wave_features(const GemmShape& s, const TileConfig& t, const HardwareRates& hw, int slot_count) {
  WaveFeatures out;
  out.grid = wave_grid(s, t, slot_count);
  const WaveGrid& g = out.grid;
  const double in_b = dtype_bytes(s.dtype), out_b = gemm_output_bytes(s.dtype);
  const double dram_bytes_per_us = hw.dram_bytes_per_clk * hw.clock_hz * 1e-6;
  const double l2_bytes_per_us = hw.l2_bytes_per_clk * hw.clock_hz * 1e-6;
  const double M = static_cast<double>(s.M), N = static_cast<double>(s.N), K = static_cast<double>(s.K);
  const double u = static_cast<double>(g.k_iters) * mma_iteration_us(t, s.dtype, hw);
  const double f = g.last_wave_fill;
  const double w1 = static_cast<double>(g.waves - 1);
  const bool split = g.split_k > 1;
  out.x = {1.0,
           u,
           f,
           u * f,
           w1,
           w1 * u,
           ((M * K + N * K) * in_b + M * N * out_b) / dram_bytes_per_us,
           split ? M * N * 4.0 * static_cast<double>(g.split_k) * 2.0 / dram_bytes_per_us : 0.0,
           split ? 1.0 : 0.0,
           static_cast<double>(g.ctas) * static_cast<double>(g.k_iters) * (t.tile_m + t.tile_n) * t.tile_k * in_b /
               l2_bytes_per_us};
  return out;
}

const std::array<std::string_view, kResidualCount>& residual_names() {
  static const std::array<std::string_view, kResidualCount> names = {
      "one",        "cluster_m",   "cluster_n",   "cluster4",  "log2_k",    "log2_k_sq", "fill",  "one_wave",
      "log2_waves", "log2_tile_m", "log2_tile_n", "tile_k128", "pad_waste", "mem_share", "split", "narrow"};
  return names;
}

const std::array<std::string, kLearnedCount>& learned_names() {
  static const std::array<std::string, kLearnedCount> names = [] {
    std::array<std::string, kLearnedCount> n;
    std::size_t i = 0;
    for (auto v : feature_names()) n[i++] = "wave:" + std::string(v);
    for (auto v : residual_names()) n[i++] = "residual:" + std::string(v);
    for (const char* v : {"tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n", "split_k", "waves", "fill", "k_iters",
                          "log2_M", "log2_N", "log2_K", "element_bytes"})
      n[i++] = v;
    return n;
  }();
  return names;
}

std::array<float, kLearnedCount> learned_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f) {
  std::array<float, kLearnedCount> row{};
  std::size_t i = 0;
  for (double v : f.x) row[i++] = static_cast<float>(v);
  for (double v : residual_features(s, t, f)) row[i++] = static_cast<float>(v);
  for (double v : {double(t.tile_m), double(t.tile_n), double(t.tile_k), double(std::max(1, t.cluster_m)),
                   double(std::max(1, t.cluster_n)), double(std::max(1, t.split_k)), double(f.grid.waves),
                   f.grid.last_wave_fill, double(f.grid.k_iters), std::log2(double(s.M)), std::log2(double(s.N)),
                   std::log2(double(s.K)), dtype_bytes(s.dtype)})
    row[i++] = static_cast<float>(v);
  return row;
}

std::array<double, kResidualCount> residual_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f) {
  const WaveGrid& g = f.grid;
  const double lk = std::log2(static_cast<double>(std::max<int64_t>(1, g.k_iters)));
  const double padded = static_cast<double>(g.tiles_m * t.tile_m) * static_cast<double>(g.tiles_n * t.tile_n);
  const double waste = 1.0 - static_cast<double>(s.M) * static_cast<double>(s.N) / padded;
  const double mma_all = f.x[1] * static_cast<double>(g.waves);
  const double dram = f.x[kDramFeature];
  return {1.0,
          std::max(1, t.cluster_m) > 1 ? 1.0 : 0.0,
          std::max(1, t.cluster_n) > 1 ? 1.0 : 0.0,
          std::max(1, t.cluster_m) * std::max(1, t.cluster_n) >= 4 ? 1.0 : 0.0,
          lk,
          lk * lk / 10.0,
          g.last_wave_fill,
          g.waves == 1 ? 1.0 : 0.0,
          std::log2(static_cast<double>(g.waves)),
          std::log2(static_cast<double>(t.tile_m)),
          std::log2(static_cast<double>(t.tile_n)),
          t.tile_k >= 128 ? 1.0 : 0.0,
          waste,
          dram + mma_all > 0 ? dram / (dram + mma_all) : 0.0,
          g.split_k > 1 ? 1.0 : 0.0,
          std::min(t.tile_m, t.tile_n) < 64 ? 1.0 : 0.0};
}

std::string describe_grid(const WaveGrid& g) {
  std::ostringstream os;
  const int pct = static_cast<int>(std::lround(g.last_wave_fill * 100.0));
  if (g.waves == 1)
    os << "1 wave, " << pct << "% full";
  else
    os << g.waves << " waves, last " << pct << "% full";
  os << ", " << g.k_iters << " K-iteration" << (g.k_iters == 1 ? "" : "s");
  if (g.split_k > 1) os << ", split-K " << g.split_k;
  if (g.cluster_ctas > g.ctas) os << ", " << (g.cluster_ctas - g.ctas) << " CTAs of cluster padding";
  return os.str();
}

}  // namespace perfloom::tuner
