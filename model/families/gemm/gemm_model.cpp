#include "model/families/gemm/gemm_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "model/classify/kernel_classifier.h"
#include "model/families/family_models.h"
#include "model/tuner/tuner.h"

namespace perfloom {

double gemm_output_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
    case Dtype::tf32:
      return 4;
    case Dtype::int8:
      return 4;  // int32 accumulators written out
    default:
      return 2;  // fp16/bf16, and fp8/fp4 GEMMs write bf16
  }
}

const std::vector<TileConfig>& gemm_tile_candidates(const GpuSpec& gpu, Dtype dtype) {
  // Hopper and Blackwell: warpgroup MMA wants M tiles of 64 per warpgroup; cuBLAS's nvjet kernels
  // also run narrow N tiles (64x8 ... 64x64) for skinny problems, with the operands swapped.
  static const std::vector<TileConfig> sm90 = {{128, 256, 64}, {256, 128, 64}, {128, 128, 64}, {128, 64, 64},
                                               {64, 256, 64},  {64, 128, 64},  {64, 64, 64},   {64, 32, 128},
                                               {64, 16, 128},  {64, 8, 128}};
  // Ampere and Ada: mma.sync kernels (ampere_*_s16816gemm, cutlass_80_*).
  static const std::vector<TileConfig> sm80 = {{256, 128, 32}, {128, 256, 32}, {128, 128, 32},
                                               {128, 64, 32},  {64, 128, 32},  {64, 64, 64},
                                               {64, 32, 64},   {32, 64, 64},   {16, 64, 128}};
  // Volta/Turing and fp32 SIMT GEMMs (volta_sgemm_128x64 ...).
  static const std::vector<TileConfig> simt = {{128, 128, 8}, {128, 64, 8}, {64, 64, 8}, {64, 32, 8}, {32, 32, 8}};
  // Blackwell's tcgen05 MMA pairs two CTAs on a 256-wide tile.
  static const std::vector<TileConfig> sm100 = [] {
    auto v = sm90;
    v.insert(v.begin(), TileConfig{256, 256, 64});
    return v;
  }();
  // Libraries swap the operands of skinny problems, so every tile also runs transposed.
  auto both = [](const std::vector<TileConfig>& base) {
    std::vector<TileConfig> out = base;
    for (const auto& t : base)
      if (t.tile_m != t.tile_n) out.push_back(TileConfig{t.tile_n, t.tile_m, t.tile_k});
    return out;
  };
  static const std::vector<TileConfig> simt_all = both(simt), sm80_all = both(sm80), sm90_all = both(sm90),
                                       sm100_all = both(sm100);
  if (dtype == Dtype::fp32 || gpu.architecture == "pascal") return simt_all;
  if (gpu.architecture == "blackwell") return sm100_all;
  if (gpu.architecture == "hopper") return sm90_all;
  return sm80_all;
}

namespace {

// The CTAs one split of the GEMM launches: its output tiles, each side rounded up to whole clusters
// (a cluster takes a cluster_m x cluster_n block of tiles; tuner/wave_model.h WaveGrid::cluster_ctas).
double cluster_grid_tiles(const GemmProblem& p, const TileConfig& t) {
  return p.batch * static_cast<double>(whole_clusters(static_cast<int64_t>(std::ceil(p.M / t.tile_m)), t.cluster_m)) *
         static_cast<double>(whole_clusters(static_cast<int64_t>(std::ceil(p.N / t.tile_n)), t.cluster_n));
}

bool on_tensor_cores(Dtype d, const HardwareRates& hw) { return d != Dtype::fp32 && hw.tensor_flops_per_clk > 0; }

// Relative throughput a tile reaches on the tensor pipe: a small tile re-reads operands from
// shared memory for few FLOPs and cannot hide latency. 1 for 128x128 and larger.
double tile_efficiency(const TileConfig& t) {
  const double area = static_cast<double>(t.tile_m) * t.tile_n;
  return std::min(1.0, std::pow(area / (128.0 * 128.0), 0.35));
}

double estimate_cycles(const GemmProblem& p, const TileConfig& t, const HardwareRates& hw) {
  Analysis a;
  gemm_demand(p, t, hw, a);
  finish_analysis(a, hw);
  double worst = 0;
  for (Pipe pipe : {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem}) {
    double c = a.cycles_busiest[static_cast<std::size_t>(pipe)];
    if (pipe == Pipe::tensor || pipe == Pipe::fma) c /= tile_efficiency(t);
    worst = std::max(worst, c);
  }
  return worst + (t.split_k > 1 ? 2000.0 : 0.0);  // a split-K reduction costs a pass
}

}  // namespace

void gemm_demand(const GemmProblem& p, const TileConfig& t, const HardwareRates& hw, Analysis& a) {
  const double in_b = dtype_bytes(p.dtype), out_b = gemm_output_bytes(p.dtype);
  const double tiles_m = std::ceil(p.M / t.tile_m), tiles_n = std::ceil(p.N / t.tile_n);
  const double split = std::max(1, t.split_k);
  const double k_per_cta = std::ceil(p.K / split / t.tile_k) * t.tile_k;
  // A thread-block cluster takes a cluster_m x cluster_n block of output tiles: the grid rounds up
  // to whole clusters, and the padding CTAs run the main loop on zero-filled operands, holding
  // their SMs like the others (tuner/wave_model.h WaveGrid::cluster_ctas). They read nothing.
  const double output_ctas = p.batch * tiles_m * tiles_n * split;
  const double ctas = cluster_grid_tiles(p, t) * split;
  const double executed_flops = ctas * 2.0 * t.tile_m * t.tile_n * k_per_cta;
  a.useful_flops = 2.0 * p.batch * p.M * p.N * p.K;

  PipeDemand d;
  if (on_tensor_cores(p.dtype, hw)) {
    d.tensor_flops = executed_flops;
    d.fma_flops = 2.0 * p.batch * p.M * p.N;  // epilogue: scale and convert
  } else {
    d.fma_flops = executed_flops;
  }
  // Compulsory traffic: each operand once, the output once; split-K adds fp32 partials.
  d.dram_bytes = p.batch * ((p.M * p.K + p.N * p.K) * in_b + p.M * p.N * out_b);
  d.dram_write_bytes = p.batch * p.M * p.N * out_b;
  // A thread-block cluster multicasts each operand tile to the CTAs that share it.
  const double l2_per_k = static_cast<double>(t.tile_m) / std::max(1, t.cluster_n) +
                          static_cast<double>(t.tile_n) / std::max(1, t.cluster_m);
  d.l2_bytes = output_ctas * l2_per_k * k_per_cta * in_b + p.batch * p.M * p.N * out_b;
  d.smem_bytes = ctas * (t.tile_m + t.tile_n) * k_per_cta * in_b;
  if (split > 1) {
    const double partials = p.batch * p.M * p.N * 4.0 * split;
    d.dram_bytes += 2.0 * partials;
    d.dram_write_bytes += partials;
    d.l2_bytes += 2.0 * partials;
  }
  a.demand = d;

  // The least any tiling must do: FLOPs without tile padding, operands read from L2 once per
  // 256-wide block (the largest tiles, or 128-wide ones sharing loads across a cluster).
  PipeDemand least = d;
  if (on_tensor_cores(p.dtype, hw))
    least.tensor_flops = a.useful_flops;
  else
    least.fma_flops = a.useful_flops;
  least.l2_bytes =
      p.batch * ((p.M * std::ceil(p.N / 256.0) + p.N * std::ceil(p.M / 256.0)) * p.K * in_b + p.M * p.N * out_b);
  least.smem_bytes = least.l2_bytes;
  least.dram_bytes = p.batch * ((p.M * p.K + p.N * p.K) * in_b + p.M * p.N * out_b);
  a.least_demand = least;

  // Shared memory per CTA: as many pipeline stages as fit in one CTA's budget (2..7).
  const double stage_bytes = (t.tile_m + t.tile_n) * t.tile_k * in_b;
  const int stages =
      t.stages > 0 ? t.stages : std::clamp(static_cast<int>(hw.max_smem_per_block_bytes * 0.9 / stage_bytes), 2, 7);
  const int threads = on_tensor_cores(p.dtype, hw) ? (t.tile_m * t.tile_n >= 128 * 128 ? 256 : 128) : 256;
  const int per_sm = std::min(occupancy(threads, 0, stages * stage_bytes, hw), 4);
  a.plan = plan_uniform_ctas(ctas, per_sm, threads, hw);
  a.tile = t;
  a.tile->stages = stages;
  a.fixed_cycles = kGemmFixedCycles;
}

TileConfig choose_gemm_tile(const GemmProblem& p, const GpuSpec& gpu, const HardwareRates& hw) {
  TileConfig best;
  double best_cycles = INFINITY;
  for (TileConfig t : gemm_tile_candidates(gpu, p.dtype)) {
    const double tiles = p.batch * std::ceil(p.M / t.tile_m) * std::ceil(p.N / t.tile_n);
    // Split-K only when the output tiles leave most SMs idle and K is long enough to cut.
    const int half_sms = hw.sms / 2;  // rounded down for an odd SM count
    const int max_split = tiles < half_sms ? static_cast<int>(std::min(16.0, std::floor(p.K / (4.0 * t.tile_k)))) : 1;
    for (int s = 1; s <= std::max(1, max_split); s = s < 4 ? s + 1 : s * 2) {
      t.split_k = s;
      const double c = estimate_cycles(p, t, hw);
      if (c < best_cycles * 0.999) {
        best_cycles = c;
        best = t;
      }
    }
  }
  return best;
}

namespace {
std::atomic<UntiledGemmTile>& untiled_source() {
  static std::atomic<UntiledGemmTile> source = [] {
    const char* env = std::getenv("PERFLOOM_UNTILED_GEMM_TILE");
    return env && std::string(env) == "tuner" ? UntiledGemmTile::tuner : UntiledGemmTile::heuristic;
  }();
  return source;
}

// The wave tuner's top configuration for a single GEMM, when the GPU has a table for the dtype.
std::optional<TileConfig> tuner_tile(const KernelDesc& k, const GemmProblem& p, const GpuSpec& gpu) {
  if (k.op != Op::gemm || p.batch != 1) return std::nullopt;
  try {
    const tuner::TunerTable* table = tuner::bundled_tuner_table(gpu);
    if (!table || !table->groups.count(tuner::dtype_group(k.dtype))) return std::nullopt;
    const auto r = tuner::tune_gemm({k.shape.M, k.shape.N, k.shape.K, k.dtype}, gpu, 1, table);
    if (r.method != "wave-table" || r.ranked.empty()) return std::nullopt;
    TileConfig t = r.ranked.front().config;
    t.stages = 0;  // the analysis derives the stages from shared memory
    return t;
  } catch (const std::exception&) {
    return std::nullopt;  // a corrupt table or an out-of-range shape: the heuristic still answers
  }
}
}  // namespace

UntiledGemmTile untiled_gemm_tile() { return untiled_source().load(); }
void set_untiled_gemm_tile(UntiledGemmTile source) { untiled_source().store(source); }

Analysis analyze_gemm(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  if (k.dtype != Dtype::fp32 && hw.tensor_flops_per_clk <= 0)
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(k.dtype)) + " tensor-core path");
  GemmProblem p{k.op == Op::bmm ? static_cast<double>(k.shape.Bt) : 1.0, static_cast<double>(k.shape.M),
                static_cast<double>(k.shape.N), static_cast<double>(k.shape.K), k.dtype};
  Analysis a;
  a.family = Family::gemm;
  a.op = k.op;
  TileConfig tile;
  std::string origin;
  if (k.tile && k.tile->tile_m > 0 && k.tile->tile_n > 0) {
    tile = *k.tile;
    if (tile.tile_k <= 0) tile.tile_k = 64;
    origin = k.name.empty() ? "given" : "kernel name";
    // The launch grid tells what the name may not: more CTAs than output tiles is split-K
    // (segment-K), fewer is a persistent kernel walking the tiles (stream-K or a tile scheduler).
    // The tiles count in whole clusters, as the grid does: a decode GEMM's single row of tiles under
    // a 2x2 cluster launches twice its tiles without any split-K (the tile sweeps' nvjet kernels on
    // our H100 and H200: ~1,300 rows per GPU had been read as split-K 2, 17-20% MAPE held out).
    if (k.launch && k.launch->known() && tile.split_k <= 1) {
      const double tiles = cluster_grid_tiles(p, tile);
      const double ctas = static_cast<double>(k.launch->ctas());
      if (ctas >= 2 * tiles)
        tile.split_k = static_cast<int>(std::lround(ctas / tiles));
      else if (ctas < tiles)
        tile.stream_k = true;
    }
  } else if (auto t = untiled_gemm_tile() == UntiledGemmTile::tuner ? tuner_tile(k, p, gpu) : std::nullopt) {
    tile = *t;
    origin = "tuner";
  } else {
    tile = choose_gemm_tile(p, gpu, hw);
    origin = "heuristic";
  }
  gemm_demand(p, tile, hw, a);
  a.tile_origin = origin;
  // A kernel written for sm80 or older (cuBLAS's cutlass_80 / cutlass_75 fallbacks on Hopper:
  // misaligned operands, tf32) issues warp-level MMA: finish_analysis puts its tensor work at the
  // calibrated mma.sync rate and its tiles through L2 at the load rate. Held out, this takes the tile
  // sweeps' ~2,500 such kernels per Hopper GPU from 45-47% to 11% MAPE, our tf32 defaults on the H100
  // from 6.9 to 5.6% (with the split-K reading above counting tiles in whole clusters).
  a.warp_level_mma = warp_level_mma_kernel(k.name);
  // A tile read from the kernel name fixes the CTA grid; stream-K spreads the work evenly anyway.
  a.schedule_exact = (origin == "given" || origin == "kernel name") && !tile.stream_k;
  if (a.schedule_exact) {
    a.least_demand->l2_bytes = a.demand.l2_bytes;
    a.least_demand->smem_bytes = a.demand.smem_bytes;
  }
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
