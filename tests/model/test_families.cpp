// Hand-computed cases per kernel family of the analytical pipeline model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"
#include "model/families/moe/moe_model.h"
#include "model/features.h"
#include "model/gpu_database.h"
#include "model/predictor.h"

using namespace perfloom;

namespace {
const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}
const GpuSpec& h100() { return db().get("h100-sxm"); }
constexpr double kH100Hz = 1830e6;

KernelDesc gemm(int64_t M, int64_t N, int64_t K, Dtype dt = Dtype::bf16) {
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = dt;
  k.shape.M = M;
  k.shape.N = N;
  k.shape.K = K;
  return k;
}
// A decode over a KV cache of L tokens.
KernelDesc decode(int64_t B, int64_t L, int64_t Hq, int64_t Hkv, int64_t D, std::string name = "") {
  KernelDesc k;
  k.op = Op::attn_decode;
  k.shape.B = B;
  k.shape.L = L;
  k.shape.Hq = Hq;
  k.shape.Hkv = Hkv;
  k.shape.D = D;
  k.name = std::move(name);
  return k;
}
KernelDesc prefill(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D) {
  KernelDesc k = decode(B, 0, Hq, Hkv, D);
  k.op = Op::attn_prefill;
  k.shape.S = S;
  return k;
}
// A Mixtral-8x7B MoE layer (8 experts, top 2) over T tokens.
KernelDesc moe_layer(int64_t T) {
  KernelDesc k;
  k.op = Op::moe;
  k.shape.T = T;
  k.shape.E = 8;
  k.shape.topk = 2;
  k.shape.H = 4096;
  k.shape.I = 14336;
  return k;
}
double cycles(const Analysis& a, Pipe p) { return a.cycles_busiest[static_cast<std::size_t>(p)]; }
// The learned model's view of a kernel's DRAM pipe on `g` (achievable rates, latency included), in seconds.
double achievable_dram_s(const KernelDesc& k, const GpuSpec& g) {
  return analyze_kernel(k, g).achievable_cycles_busiest[static_cast<std::size_t>(Pipe::dram)] /
         hardware_rates(g, k.dtype).clock_hz;
}
}  // namespace

TEST(GemmModel, SquareBf16WithAGivenTileFollowsTheWaves) {
  KernelDesc k = gemm(8192, 8192, 8192);
  k.tile = TileConfig{128, 256, 64};
  Analysis a = analyze_kernel(k, h100());
  // 64 x 32 = 2048 CTAs; the busiest of 132 SMs runs ceil(2048/132) = 16 of them.
  EXPECT_DOUBLE_EQ(a.plan.ctas, 2048);
  EXPECT_DOUBLE_EQ(a.plan.busiest_sm_share * 2048, 16);
  const double per_cta = 2.0 * 128 * 256 * 8192;
  EXPECT_NEAR(cycles(a, Pipe::tensor), 16 * per_cta / 4096, 1);
  EXPECT_NEAR(a.cycles_balanced[0], 2048 * per_cta / (4096.0 * 132), 1);
  EXPECT_EQ(a.bound, Pipe::tensor);
  // The launch floor: the datasheet's 1 us or the H100's measured empty kernel, the shorter.
  const double floor_us = std::min(kDatasheetLaunchFloorUs, hardware_rates(h100(), Dtype::bf16).achievable.launch_floor_us);
  EXPECT_LT(floor_us, kDatasheetLaunchFloorUs);
  EXPECT_NEAR(a.ceiling_us, 16 * per_cta / 4096 / kH100Hz * 1e6 + floor_us, 0.01);
  // Compulsory DRAM traffic: A and B once (bf16), C once (bf16).
  EXPECT_DOUBLE_EQ(a.demand.dram_bytes, 3.0 * 8192 * 8192 * 2);
  EXPECT_DOUBLE_EQ(a.useful_flops, 2.0 * 8192 * 8192 * 8192);
}

TEST(GemmModel, ClustersPadTheGridToWholeClusters) {
  // 384 x 5120 on 128 x 128 tiles: 3 x 40 = 120 output tiles. In 2 (M) x 4 (N) clusters M's 3 tiles
  // round up to 4: 160 CTAs hold SMs (the tuner's WaveGrid::cluster_ctas), the padding ones run
  // the main loop on zeros and read nothing.
  KernelDesc k = gemm(384, 5120, 3456);
  k.tile = TileConfig{128, 128, 64};
  const Analysis whole = analyze_kernel(k, h100());
  k.tile->cluster_m = 2;
  k.tile->cluster_n = 4;
  const Analysis padded = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(whole.plan.ctas, 120);
  EXPECT_DOUBLE_EQ(padded.plan.ctas, 160);
  EXPECT_DOUBLE_EQ(padded.plan.waves, 2);
  EXPECT_DOUBLE_EQ(padded.demand.tensor_flops, whole.demand.tensor_flops * 160 / 120);
  EXPECT_DOUBLE_EQ(padded.demand.dram_bytes, whole.demand.dram_bytes);
  EXPECT_LT(padded.demand.l2_bytes, whole.demand.l2_bytes);  // multicast across the cluster, no padding reads
  EXPECT_DOUBLE_EQ(padded.useful_flops, whole.useful_flops);
}

// A launch grid larger than the output tiles reads as split-K, but the tiles count in whole clusters:
// the tile sweeps' nvjet_sm90_tst_320x56_64x4_2x2 at M = 32, N = 8192 launches 4 x 13 CTAs for
// 26 x 1 tiles, the single row of tiles padded to the cluster's 2, without split-K.
TEST(GemmModel, ALaunchGridPaddedToWholeClustersIsNoSplitK) {
  KernelDesc k = gemm(32, 8192, 4096);
  k.name = "nvjet_sm90_tst_320x56_64x4_2x2_v_bz_TNT";
  k.tile = TileConfig{56, 320, 64};
  k.tile->cluster_m = 2;
  k.tile->cluster_n = 2;
  LaunchArgs launch;
  launch.grid = {4, 13, 1};
  launch.block = {384, 1, 1};
  k.launch = launch;
  const Analysis a = analyze_kernel(k, h100());
  ASSERT_TRUE(a.tile);
  EXPECT_EQ(a.tile->split_k, 1);
  EXPECT_FALSE(a.tile->stream_k);
  EXPECT_DOUBLE_EQ(a.plan.ctas, 52);
  // Twice as many CTAs again is split-K 2; fewer than the padded tiles, a persistent kernel.
  k.launch->grid = {8, 13, 1};
  EXPECT_EQ(analyze_kernel(k, h100()).tile->split_k, 2);
  k.launch->grid = {4, 6, 1};
  EXPECT_TRUE(analyze_kernel(k, h100()).tile->stream_k);
}

TEST(GemmModel, DecodeShapedGemmIsMemoryBound) {
  Analysis a = analyze_kernel(gemm(1, 4096, 4096), h100());
  EXPECT_EQ(a.bound, Pipe::dram);
  // With cold caches the weight (32 MiB) dominates: 4096*4096*2 bytes at 3.35 TB/s is 10.0 us.
  EXPECT_NEAR(cycles(a, Pipe::dram) / kH100Hz * 1e6, 4096.0 * 4096 * 2 / 3.35e12 * 1e6, 0.1);
  // The ceiling holds even when a benchmark finds the weight in the 50 MB L2 already.
  EXPECT_LT(a.ceiling_us, 10.0);
  KernelDesc big = gemm(1, 16384, 8192);  // 256 MiB of weight cannot sit in L2
  Analysis b = analyze_kernel(big, h100());
  EXPECT_NEAR(b.ceiling_us, (16384.0 * 8192 * 2 - 50.0 * 1048576) / 3.35e12 * 1e6 + 1.0, 1.0);
  EXPECT_EQ(a.tile_origin, "heuristic");  // no tile given, default setting (gemm_model.h, untiled_gemm_tile)
}

TEST(GemmModel, FixedCyclesOutsideTheMainLoopAreInTheAchievableRooflineOnly) {
  // A decode GEMM streams its weight; the learned model scales the pipes' time plus the cycles a
  // GEMM spends outside its main loop (setup, pipeline fill, epilogue) plus the launch floor.
  for (const char* id : {"h100-sxm", "h200", "a100-sxm-80gb", "b200"}) {
    const GpuSpec& g = db().get(id);
    const Analysis a = analyze_kernel(gemm(16, 4096, 4096), g);
    EXPECT_EQ(a.fixed_cycles, kGemmFixedCycles) << id;
    const HardwareRates hw = hardware_rates(g, Dtype::bf16);
    auto slowest_pipe = [](const std::array<double, kPipeCount>& c) {
      double worst = 0;
      for (Pipe p : {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem})
        worst = std::max(worst, c[static_cast<std::size_t>(p)]);
      return worst;
    };
    // A tensor-core GEMM's pipes (the GEMM names no sm80 kernel) combine as the kGemmOverlapNorm-norm
    // of tensor, L2 and DRAM where that exceeds the slowest.
    const auto& c = a.achievable_cycles_busiest;
    auto at = [&](Pipe p) { return std::pow(c[static_cast<std::size_t>(p)], kGemmOverlapNorm); };
    const double smooth = std::pow(at(Pipe::tensor) + at(Pipe::l2) + at(Pipe::dram), 1.0 / kGemmOverlapNorm);
    EXPECT_NEAR(
        a.achievable_roofline_us,
        (std::max(slowest_pipe(c), smooth) + kGemmFixedCycles) / hw.clock_hz * 1e6 + hw.achievable.launch_floor_us,
        1e-9)
        << id;
    // The datasheet roofline and the ceiling do not pay it: the smallest GEMMs our collector
    // measured took 2.1-2.4 us on the H100 and H200, less than these cycles and the launch alone.
    EXPECT_NEAR(a.roofline_us, slowest_pipe(a.cycles_busiest) / hw.clock_hz * 1e6 + hw.launch_floor_us, 1e-9) << id;
    const Analysis tiny = analyze_kernel(gemm(64, 64, 64), g);
    EXPECT_LT(tiny.ceiling_us, 2.0) << id;
    EXPECT_GT(tiny.achievable_roofline_us, kGemmFixedCycles / hw.clock_hz * 1e6) << id;
  }
  // A MoE layer runs two GEMM kernels: each pays its own.
  const Analysis m = analyze_kernel(moe_layer(1), h100());
  EXPECT_GT(m.achievable_roofline_us, 2 * kGemmFixedCycles / kH100Hz * 1e6);
}

TEST(GemmModel, HeuristicSplitsKWhenOutputTilesLeaveSmsIdle) {
  const GpuSpec& g = h100();
  HardwareRates hw = hardware_rates(g, Dtype::bf16);
  TileConfig t = choose_gemm_tile({1, 128, 128, 65536, Dtype::bf16}, g, hw);
  EXPECT_GT(t.split_k, 1) << t.tile_m << "x" << t.tile_n;
  TileConfig big = choose_gemm_tile({1, 8192, 8192, 8192, Dtype::bf16}, g, hw);
  EXPECT_EQ(big.split_k, 1);
  EXPECT_GE(big.tile_m * big.tile_n, 128 * 128);
}

TEST(GemmModel, Fp32RunsOnFmaLanesAndMissingDtypesAreRefused) {
  Analysis a = analyze_kernel(gemm(4096, 4096, 4096, Dtype::fp32), db().get("v100-sxm2"));
  EXPECT_EQ(a.demand.tensor_flops, 0);
  EXPECT_EQ(a.bound, Pipe::fma);
  EXPECT_THROW(analyze_kernel(gemm(64, 64, 64, Dtype::fp8e4m3), db().get("a100-sxm-80gb")), UnsupportedKernel);
  EXPECT_THROW(analyze_kernel(gemm(64, 64, 64, Dtype::bf16), db().get("t4")), UnsupportedKernel);
  EXPECT_THROW(analyze_kernel(gemm(0, 64, 64), h100()), UnsupportedKernel);
}

TEST(GemmModel, BmmScalesWithTheBatch) {
  KernelDesc one = gemm(512, 512, 512);
  KernelDesc many = one;
  many.op = Op::bmm;
  many.shape.Bt = 64;
  Analysis a1 = analyze_kernel(one, h100()), a64 = analyze_kernel(many, h100());
  EXPECT_DOUBLE_EQ(a64.useful_flops, 64 * a1.useful_flops);
  EXPECT_GT(a64.plan.ctas, a1.plan.ctas);
}

TEST(AttentionModel, CausalPrefillDoesAboutHalfTheWork) {
  KernelDesc k = prefill(4, 4096, 32, 8, 128);
  Analysis causal = analyze_kernel(k, h100());
  k.shape.causal = false;
  Analysis full = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(full.useful_flops, 4.0 * 4 * 32 * 4096.0 * 4096 * 128);
  EXPECT_NEAR(causal.useful_flops / full.useful_flops, 0.5, 0.001);
  EXPECT_NEAR(causal.demand.tensor_flops / full.demand.tensor_flops, 0.5, 0.02);
  EXPECT_EQ(causal.bound, Pipe::tensor);
  // Q, K, V and O each cross DRAM once.
  EXPECT_DOUBLE_EQ(causal.demand.dram_bytes, 4.0 * 4096 * 128 * 2 * (2 * 32 + 2 * 8));
}

TEST(AttentionModel, RaggedPrefillEqualsItsSequences) {
  KernelDesc k;
  k.op = Op::attn_prefill;
  k.shape.Hq = 8;
  k.shape.Hkv = 8;
  k.shape.D = 128;
  k.shape.seqlens = {1000, 3000};
  Analysis ragged = analyze_kernel(k, h100());
  double expect = 0;
  for (double L : {1000.0, 3000.0}) expect += 4.0 * 128 * 8 * L * (L + 1) / 2;
  EXPECT_DOUBLE_EQ(ragged.useful_flops, expect);
}

TEST(AttentionModel, DecodeReadsTheKvCacheOnceAndSplitsSmallBatches) {
  KernelDesc k = decode(1, 4096, 32, 8, 128);
  Analysis a = analyze_kernel(k, h100());
  EXPECT_EQ(a.bound, Pipe::dram);
  ASSERT_TRUE(a.tile.has_value());
  EXPECT_GT(a.tile->split_k, 1) << "8 CTAs on 132 SMs call for split-KV";
  const double kv = 4096.0 * 8 * 128 * 2 * 2;
  EXPECT_GE(a.demand.dram_bytes, kv);
  EXPECT_LT(a.demand.dram_bytes, kv * 1.1);
  k.shape.B = 256;
  Analysis big = analyze_kernel(k, h100());
  EXPECT_EQ(big.tile->split_k, 1);
}

// FlashAttention-2 and other kernels written for sm80 issue warp-level MMA (mma.sync) on Hopper,
// which perfloom-calibrate measured at 631 TFLOP/s (bf16) on the H100 and the H200, where cuBLASLt's
// warpgroup GEMMs reach 810 / 804 (resources/calibration/<gpu>.json); not warp-specialised, they run
// the SM's pipes one after another. On the A100, whose tensor path warp-level MMA is, nothing changes;
// nor does the datasheet roofline.
TEST(AttentionModel, FlashAttention2OnHopperRunsAtTheWarpLevelMmaRate) {
  const std::string fa2 =
      "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
      "cutlass::bfloat16_t, "
      "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false, "
      "false>(pytorch_flash::Flash_fwd_params)";
  KernelDesc k = decode(64, 16384, 32, 8, 128, fa2);
  k.dtype = Dtype::bf16;
  const auto tensor = static_cast<std::size_t>(Pipe::tensor);
  const Analysis a = analyze_kernel(k, h100());
  EXPECT_TRUE(a.warp_level_mma);
  const auto hw = hardware_rates(h100(), Dtype::bf16);
  EXPECT_NEAR(hw.achievable.mma_sync_flops_per_clk * 132 * kH100Hz, 631.418e12, 1e6);
  // Its tensor slot: the MMAs at that rate, then the SM's other pipes in series (not warp-specialised).
  auto at = [&](Pipe p) { return a.achievable_cycles_busiest[static_cast<std::size_t>(p)]; };
  const double mma = a.demand.tensor_flops * a.plan.busiest_sm_share / hw.achievable.mma_sync_flops_per_clk;
  EXPECT_NEAR(at(Pipe::tensor), mma + at(Pipe::sfu) + at(Pipe::fma) + at(Pipe::smem), 1e-6 * at(Pipe::tensor));
  EXPECT_NEAR(hw.achievable.tensor_flops_per_clk / hw.achievable.mma_sync_flops_per_clk, 810.0 / 631.418, 0.02);
  EXPECT_EQ(a.cycles_busiest[tensor], a.demand.tensor_flops * a.plan.busiest_sm_share / hw.tensor_flops_per_clk)
      << "the datasheet roofline keeps the peak";
  // Its four warps split the 128 query rows: each reads the whole K and V tiles from shared memory.
  EXPECT_DOUBLE_EQ(a.demand.smem_bytes, 4.0 * (64 * 8) * 16384.0 * 128 * 2 * 2);
  // So the on-SM time, not the DRAM, bounds it on the H100 and H200 alike, as measured: 1,782 us on
  // our H100, 1,762 on our H200 (2.4 TB/s on both; data/<gpu>/attention.csv).
  for (const GpuSpec* g : {&h100(), &db().get("h200")}) {
    const Analysis x = analyze_kernel(k, *g);
    EXPECT_GT(x.achievable_cycles_busiest[tensor], x.achievable_cycles_busiest[static_cast<std::size_t>(Pipe::dram)])
        << g->id;
  }
  // The A100's tensor path is warp-level MMA: no second rate.
  const auto a100 = hardware_rates(db().get("a100-sxm-80gb"), Dtype::bf16);
  EXPECT_EQ(a100.achievable.mma_sync_flops_per_clk, 0.0);
  const Analysis ampere = analyze_kernel(k, db().get("a100-sxm-80gb"));
  EXPECT_NEAR(ampere.achievable_cycles_balanced[tensor],
              ampere.demand.tensor_flops / (a100.achievable.tensor_flops_per_clk * 108),
              1e-6 * ampere.achievable_cycles_balanced[tensor]);
}

// A DRAM-bound decode: its achievable roofline (the learned model's base) is the DRAM time plus the
// attention kernel's fixed cycles plus the launch floor, on every GPU in cycles of its own clock; the
// datasheet roofline and the ceiling stay without them (lower bounds).
TEST(AttentionModel, FixedCyclesOutsideThePipesAreInTheAchievableRooflineOnly) {
  for (const char* id : {"h100-sxm", "h200", "a100-sxm-80gb", "b200"}) {
    const GpuSpec& g = db().get(id);
    const Analysis a = analyze_kernel(decode(64, 4096, 32, 8, 128), g);
    EXPECT_EQ(a.fixed_cycles, kAttentionFixedCycles) << id;
    const HardwareRates hw = hardware_rates(g, Dtype::bf16);
    const double dram = a.achievable_cycles_busiest[static_cast<std::size_t>(Pipe::dram)];
    for (Pipe p : {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::l2, Pipe::smem})
      EXPECT_LT(a.achievable_cycles_busiest[static_cast<std::size_t>(p)], dram) << id;
    EXPECT_NEAR(a.achievable_roofline_us,
                (dram + kAttentionFixedCycles) / hw.clock_hz * 1e6 + hw.achievable.launch_floor_us, 1e-9)
        << id;
    EXPECT_LT(a.ceiling_us, a.roofline_us + 1e-9) << id;
    EXPECT_LT(a.roofline_us, a.achievable_roofline_us - kAttentionFixedCycles / hw.clock_hz * 1e6 + 1.0) << id;
  }
  // Prefill pays it too.
  EXPECT_EQ(analyze_kernel(prefill(1, 2048, 32, 8, 128), h100()).fixed_cycles, kAttentionFixedCycles);
}

TEST(AttentionModel, ANamedDecodeKernelPadsItsQueryRowsToItsTile) {
  // PyTorch's FlashAttention-2 decode on our H100: one query row per KV head's group, padded to
  // the kernel's 128 rows.
  KernelDesc k = decode(128, 2048, 32, 32, 128);
  const Analysis unnamed = analyze_kernel(k, h100());
  k.name =
      "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
      "cutlass::bfloat16_t, "
      "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false, "
      "false>(pytorch_flash::Flash_fwd_params)";
  const Analysis fa2 = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(fa2.demand.tensor_flops, 128.0 * 32 * 4 * 128 * 2048 * 128);
  EXPECT_DOUBLE_EQ(fa2.demand.tensor_flops / unnamed.demand.tensor_flops, 8.0) << "128 rows instead of the MMA's 16";
  EXPECT_DOUBLE_EQ(fa2.demand.dram_bytes, unnamed.demand.dram_bytes) << "the KV cache is read once either way";
  ASSERT_TRUE(fa2.tile.has_value());
  EXPECT_EQ(fa2.tile->tile_m, 128);
  EXPECT_EQ(fa2.tile->tile_n, 64);
  EXPECT_EQ(fa2.tile->split_k, 1);
  EXPECT_EQ(fa2.tile_origin, "kernel name");
  KernelDesc without_name = k;
  without_name.name.clear();
  EXPECT_NE(kernel_key(k, KernelKeyDetail::prediction), kernel_key(without_name, KernelKeyDetail::prediction))
      << "the memo tells the tiles apart";

  // Its split-KV kernel follows FlashAttention's heuristic: B=8, Hkv=4 (32 CTAs), 8 blocks of 128
  // keys on twice the H100's 132 SMs: 8 splits, the grid 1x8x32 our collector recorded.
  k.shape.B = 8;
  k.shape.L = 1024;
  k.shape.Hkv = 4;
  k.name =
      "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
      "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, "
      "true, false, true, false>(pytorch_flash::Flash_fwd_params)";
  const Analysis split = analyze_kernel(k, h100());
  EXPECT_EQ(split.tile->split_k, 8);
  EXPECT_DOUBLE_EQ(split.demand.tensor_flops, 8.0 * 4 * 4 * 64 * 1024 * 128) << "the group of 8 padded to 64 rows";

  // cuDNN: the group of 8 in one CTA's 16 rows; the split count is read from its launch grid
  // (splits, Hkv, B), as our collector recorded it for B=4, L=4096, Hq=32, Hkv=4: 16x4x4.
  k.name = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0";
  k.shape.B = 4;
  k.shape.L = 4096;
  LaunchArgs launch;
  launch.grid = {16, 4, 4};
  launch.block = {128, 1, 1};
  k.launch = launch;
  const Analysis cudnn = analyze_kernel(k, h100());
  EXPECT_EQ(cudnn.tile->split_k, 16);
  EXPECT_DOUBLE_EQ(cudnn.demand.tensor_flops, 4.0 * 4 * 4 * 16 * 4096 * 128);
  EXPECT_DOUBLE_EQ(cudnn.demand.l2_bytes, cudnn.demand.dram_bytes) << "one CTA per KV head reads it once";
  launch.grid = {8, 4, 4};
  k.launch = launch;
  EXPECT_EQ(analyze_kernel(k, h100()).tile->split_k, 8) << "the grid, not a heuristic";
  launch.grid = {8, 1, 1};  // a reduce kernel's grid: not the attention kernel's, so not read
  k.launch = launch;
  EXPECT_EQ(analyze_kernel(k, h100()).tile->split_k, 16) << "FlashAttention's heuristic on 2 x 132 slots";

  // A name whose head dim is not the shape's is not read: the kernel gets the tile cuDNN launches
  // for the shape, as one named without a tile does (the step simulator's cuDNN kernels).
  k.shape.D = 64;
  const Analysis mismatched = analyze_kernel(k, h100());
  EXPECT_EQ(mismatched.tile_origin, "implementation");
  EXPECT_EQ(mismatched.tile->tile_k, 64);
  k.name = "cudnn_sdpa (cuDNN fused attention)";
  EXPECT_EQ(analyze_kernel(k, h100()).tile->tile_m, 16);

  // FlashAttention-2 named without its tile: PyTorch's choice for the shape, the split-KV kernel
  // where FlashAttention's heuristic splits (B=1: 4 CTAs on 264 slots), else the 128-row one.
  k = decode(1, 4096, 32, 4, 128, "flash_fwd_kernel (FlashAttention-2)");
  const Analysis fa2_small = analyze_kernel(k, h100());
  EXPECT_EQ(fa2_small.tile->tile_m, 64);
  EXPECT_EQ(fa2_small.tile->tile_n, 128);
  EXPECT_GT(fa2_small.tile->split_k, 1);
  k.shape.B = 256;
  const Analysis fa2_big = analyze_kernel(k, h100());
  EXPECT_EQ(fa2_big.tile->tile_m, 128);
  EXPECT_EQ(fa2_big.tile->tile_n, 64);
  EXPECT_EQ(fa2_big.tile->split_k, 1);
}

TEST(NormModel, RmsNormAndFusedAddCountTheirBytes) {
  KernelDesc k;
  k.op = Op::rmsnorm;
  k.shape.T = 4096;
  k.shape.H = 4096;
  Analysis a = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(a.demand.dram_bytes, 2.0 * 4096 * 4096 * 2 + 4096 * 2);
  EXPECT_EQ(a.bound, Pipe::dram);
  EXPECT_DOUBLE_EQ(a.plan.ctas, 4096);
  k.op = Op::fused_add_rmsnorm;
  Analysis f = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(f.demand.dram_bytes, 4.0 * 4096 * 4096 * 2 + 4096 * 2);
  k.shape.T = 1;
  Analysis tiny = analyze_kernel(k, h100());
  EXPECT_EQ(tiny.bound, Pipe::launch);
  EXPECT_NEAR(tiny.plan.active_sm_fraction, 1.0 / 132, 1e-9);
}

// Little's law (Analysis::bytes_in_flight_per_thread): Sarathi-Serve's RMSNorm loads one fp16
// element per thread with 1024-thread CTAs, 2 per H100 SM: 4 KiB in flight per SM, at which
// perfloom-calibrate's read sweep measured 1.33 TB/s on the H100 (data/h100-sxm/
// calibration.json, dram_read_by_bytes_in_flight); the vectorised kernel (16 bytes per thread)
// streams at the bandwidth.
TEST(NormModel, FewBytesInFlightLeaveTheDramLatencyExposed) {
  KernelDesc k;
  k.op = Op::rmsnorm;
  k.dtype = Dtype::fp16;
  k.shape.T = 8192;
  k.shape.H = 8192;
  const double reads = 8192.0 * 8192 * 2 + 8192 * 2, writes = 8192.0 * 8192 * 2, bytes = reads + writes;
  // Loads at the read bandwidth, stores at the write bandwidth (both measured on the H100).
  const HardwareRates rates = hardware_rates(h100(), k.dtype);
  const double stream_cycles =
      reads / rates.achievable.dram_bytes_per_clk + writes / rates.achievable.dram_write_bytes_per_clk;
  auto bandwidth = [&](const GpuSpec& g) {
    return hardware_rates(g, k.dtype).achievable.dram_bytes_per_clk * hardware_rates(g, k.dtype).clock_hz;
  };
  // 32 KiB in flight per SM cover the bandwidth, but each wave of CTAs (2 of 1024 threads per SM: 32
  // waves) also waits its chain of reduction, second pass and stores: 5 more DRAM latencies each but
  // the first wave's, which overlaps the launch.
  const Analysis v = analyze_kernel(k, h100());
  EXPECT_EQ(v.chain_round_trips_per_wave, 5.0);
  EXPECT_EQ(v.plan.waves, 32);
  const double latency_cycles = 383.18e-9 * kH100Hz;
  const double chain = reads / (132.0 * 2048 * 16) * latency_cycles + 31 * 5 * latency_cycles;
  EXPECT_NEAR(v.achievable_cycles_busiest[static_cast<std::size_t>(Pipe::dram)],
              std::cbrt(stream_cycles * stream_cycles * stream_cycles + chain * chain * chain), 1e-6 * stream_cycles);
  // Measured on our H100: 3.3 us per wave for this kernel at 32768 x 8192 (bandwidth alone: 2.8).
  EXPECT_GT(achievable_dram_s(k, h100()) / 32, 3.0e-6);
  EXPECT_LT(achievable_dram_s(k, h100()) / 32, 3.5e-6);
  k.name = "sarathi::input_layernorm";
  const Analysis s = analyze_kernel(k, h100());
  EXPECT_EQ(s.plan.threads_per_cta, 1024);
  EXPECT_EQ(s.plan.ctas_per_sm, 2);
  EXPECT_DOUBLE_EQ(s.bytes_in_flight_per_thread, 2.0);
  EXPECT_DOUBLE_EQ(s.demand.dram_bytes - s.demand.dram_write_bytes, reads);
  EXPECT_EQ(s.chain_round_trips_per_wave, 0.0);  // its loop's round trips are the bytes in flight's
  // In flight 132 x 2048 x 2 bytes; the bandwidth's and the latency's times combine as a cube norm.
  const double lat = reads / (132.0 * 2048 * 2) * 383.18e-9 * kH100Hz;
  EXPECT_NEAR(s.achievable_cycles_busiest[static_cast<std::size_t>(Pipe::dram)],
              std::cbrt(stream_cycles * stream_cycles * stream_cycles + lat * lat * lat), 1e-6 * stream_cycles);
  // The reads go slower than the sweep's pure reads at these bytes in flight (the writes share the
  // bandwidth), and not much slower.
  EXPECT_LT(reads / achievable_dram_s(k, h100()), 1.33e12);
  EXPECT_GT(reads / achievable_dram_s(k, h100()), 1.0e12);
  // The A40 (84 SMs of 1536 threads: one such CTA each) has far less bandwidth per SM to cover:
  // it reaches a larger share of it.
  const GpuSpec& a40 = db().get("a40");
  EXPECT_GT(bytes / achievable_dram_s(k, a40) / bandwidth(a40),
            bytes / achievable_dram_s(k, h100()) / bandwidth(h100()) + 0.1);
  // The roofline keeps the bandwidth alone.
  EXPECT_EQ(s.roofline_us, analyze_kernel(KernelDesc{k.op, k.dtype, k.shape}, h100()).roofline_us);
}

// Serving engines and Sarathi-Serve alike embed through PyTorch's F.embedding (index_select): 128
// threads, at most 8 CTAs per SM, one element per thread in flight. perfloom's latency probe
// measured such a kernel at 0.78 TB/s on the H100 and 0.81 on the H200 (T = 16384, H = 8192:
// data/<gpu>/latency_probe.csv): the bandwidth does not matter, the latency does.
TEST(ElementwiseModel, EmbeddingIsAnIndexSelectWithOneElementPerThreadInFlight) {
  KernelDesc k;
  k.op = Op::embedding;
  k.dtype = Dtype::fp16;
  k.shape.T = 16384;
  k.shape.H = 8192;
  k.shape.V = 32000;
  for (const char* name : {"", "sarathi::emb"}) {
    k.name = name;
    const Analysis a = analyze_kernel(k, h100());
    EXPECT_EQ(a.plan.threads_per_cta, 128) << name;
    EXPECT_DOUBLE_EQ(a.plan.ctas, 8.0 * 132) << name;
    EXPECT_DOUBLE_EQ(a.bytes_in_flight_per_thread, 2.0) << name;
  }
  const GpuSpec& h200 = db().get("h200");
  // The H200's 1.5x bandwidth buys little (measured 1.03x).
  EXPECT_LT(achievable_dram_s(k, h100()) / achievable_dram_s(k, h200), 1.15);
}

TEST(ElementwiseModel, SiluMulSoftmaxAndKvWrite) {
  KernelDesc k;
  k.op = Op::silu_mul;
  k.shape.T = 2048;
  k.shape.I = 14336;
  Analysis a = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(a.demand.dram_bytes, 3.0 * 2048 * 14336 * 2);
  EXPECT_DOUBLE_EQ(a.demand.sfu_ops, 2.0 * 2048 * 14336);
  k = {};
  k.op = Op::softmax;
  k.dtype = Dtype::fp32;
  k.shape.T = 8;
  k.shape.V = 128256;
  Analysis s = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(s.demand.dram_bytes, 2.0 * 8 * 128256 * 4);
  k = {};
  k.op = Op::kv_cache_write;
  k.shape.T = 100;
  k.shape.Hkv = 8;
  k.shape.D = 128;
  Analysis w = analyze_kernel(k, h100());
  EXPECT_DOUBLE_EQ(w.demand.dram_bytes, 2.0 * (2.0 * 100 * 8 * 128) * 2 + 800);
}

TEST(MoeModel, DecodeReadsOnlyTheActiveExperts) {
  KernelDesc k = moe_layer(1);
  Analysis one = analyze_kernel(k, h100());
  const double expert_bytes = (2.0 * 14336 * 4096 + 14336 * 4096) * 2;
  EXPECT_GE(one.demand.dram_bytes, 2 * expert_bytes);
  EXPECT_LT(one.demand.dram_bytes, 2.2 * expert_bytes);
  k.shape.T = 4096;
  Analysis many = analyze_kernel(k, h100());
  EXPECT_GE(many.demand.dram_bytes, 8 * expert_bytes);
  EXPECT_NE(many.bound, Pipe::dram) << "4096 tokens reuse every expert's weights";
}

// The expected sorted-list length, summed over the whole binomial distribution of one expert's count.
double brute_force_padded(int T, int E, int topk, int bm) {
  const double p = static_cast<double>(topk) / E;
  double blocks = 0;
  for (int c = 1; c <= T; ++c)
    blocks += std::exp(std::lgamma(T + 1.0) - std::lgamma(c + 1.0) - std::lgamma(T - c + 1.0) + c * std::log(p) +
                       (T - c) * std::log1p(-p)) *
              std::ceil(static_cast<double>(c) / bm);
  return E * blocks * bm;
}

TEST(MoeModel, PaddingFollowsTheBinomialCountsOfUniformRouting) {
  // One token: exactly topk experts, each padded to one block.
  EXPECT_NEAR(moe_expected_active_experts(1, 8, 2), 2.0, 1e-12);
  EXPECT_NEAR(moe_expected_padded_rows(1, 8, 2, 64), 2.0 * 64, 1e-9);
  // Every token to every expert: each expert holds T rows.
  EXPECT_NEAR(moe_expected_padded_rows(100, 4, 4, 32), 4 * 128.0, 1e-9);
  // The windowed sum equals the whole distribution's.
  for (int bm : {16, 64})
    EXPECT_NEAR(moe_expected_padded_rows(40, 16, 4, bm), brute_force_padded(40, 16, 4, bm), 1e-9 * 40 * 4);
  EXPECT_NEAR(moe_expected_padded_rows(3000, 128, 8, 16), brute_force_padded(3000, 128, 8, 16), 1e-6);
  for (double T : {1.0, 7.0, 64.0, 1000.0, 16384.0}) {
    const double rows = T * 8, active = moe_expected_active_experts(T, 256, 8);
    const double padded = moe_expected_padded_rows(T, 256, 8, 64);
    EXPECT_GE(padded, rows) << T;
    EXPECT_LE(padded, rows + active * 63) << T;
    EXPECT_LE(active, 256.0) << T;
  }
  // 16384 tokens give each of 256 experts 512 rows on average, a whole number of 64-row blocks:
  // the spread of the counts still pads about half a block per expert.
  const double spread_pad = moe_expected_padded_rows(16384, 256, 8, 64) - 16384.0 * 8;
  EXPECT_GT(spread_pad, 256 * 20.0);
  EXPECT_LT(spread_pad, 256 * 44.0);
}

TEST(MoeModel, WeightsAreReadOncePerActiveExpertAndFp8HalvesThem) {
  // DeepSeek-V3's experts: 256, top 8, H 7168, I 2048.
  KernelDesc k;
  k.op = Op::moe;
  k.shape = Shape{};
  k.shape.E = 256;
  k.shape.topk = 8;
  k.shape.H = 7168;
  k.shape.I = 2048;
  const double expert = 3.0 * 7168 * 2048;  // gate-up (2I x H) and down (H x I) elements
  for (int64_t T : {1, 16, 4096}) {
    k.shape.T = T;
    k.dtype = Dtype::bf16;
    const Analysis bf = analyze_kernel(k, db().get("h200"));
    k.dtype = Dtype::fp8e4m3;
    const Analysis f8 = analyze_kernel(k, db().get("h200"));
    const double active = moe_expected_active_experts(static_cast<double>(T), 256, 8);
    // Besides the weights: the hidden states (gate-up) and the intermediate (down) read once in
    // the weights' dtype, both outputs written once in bf16.
    const double inputs = T * 7168.0 + T * 8.0 * 2048, outputs_bytes = T * 8.0 * (2 * 2048 + 7168) * 2;
    EXPECT_NEAR(bf.demand.dram_bytes, active * expert * 2 + inputs * 2 + outputs_bytes, 1e-9 * bf.demand.dram_bytes)
        << T;
    EXPECT_NEAR(f8.demand.dram_bytes, active * expert + inputs + outputs_bytes, 1e-9 * f8.demand.dram_bytes) << T;
    EXPECT_GE(bf.estimate_us.value(), bf.ceiling_us) << T;
    EXPECT_LT(f8.estimate_us.value(), bf.estimate_us.value()) << T;
  }
}

TEST(MoeModel, EveryExpertsBlocksShareOneGridPerGemm) {
  KernelDesc k = moe_layer(512);
  k.tile = TileConfig{64, 128, 64};
  const GpuSpec& g = db().get("h200");
  const Analysis a = analyze_kernel(k, g);
  const double blocks = moe_expected_padded_rows(512, 8, 2, 64) / 64;
  const double up = blocks * std::ceil(2.0 * 14336 / 128), down = blocks * std::ceil(4096.0 / 128);
  EXPECT_NEAR(a.plan.ctas, std::ceil(up) + std::ceil(down), 1.0);
  // The up GEMM's waves: its CTAs over the SMs times the CTAs each holds.
  EXPECT_DOUBLE_EQ(a.plan.waves, std::ceil(std::ceil(up) / (g.sm_count * a.plan.ctas_per_sm)));
  EXPECT_EQ(a.tile_origin, "given");
}

TEST(MoeModel, ThePredictionIsTheFamilysEstimate) {
  // Mixtral decode on the H200: two experts' weights (705 MB in bf16) at about 90% of 4.8 TB/s.
  KernelDesc k = moe_layer(1);
  const Prediction p = predict_roofline(k, db().get("h200"));
  EXPECT_EQ(p.family, Family::moe);
  EXPECT_EQ(p.method, p.analysis.estimate_origin);
  EXPECT_DOUBLE_EQ(p.pred_us, *p.analysis.estimate_us);
  EXPECT_GE(p.lo_us, p.ceiling_us);
  const double weights_us = 2.0 * 3 * 14336 * 4096 * 2 / 4.8e12 * 1e6;
  EXPECT_GT(p.pred_us, weights_us / 0.9);
  EXPECT_LT(p.pred_us, weights_us / 0.9 + 20.0);
  // Prefill is tensor-bound at about half the datasheet rate.
  k.shape.T = 16384;
  const Prediction big = predict_roofline(k, db().get("h200"));
  EXPECT_EQ(big.bound, Pipe::tensor);
  const double flops_us = 2.0 * 16384 * 2 * 3 * 14336 * 4096 / 989e12 * 1e6;
  EXPECT_GT(big.pred_us, flops_us / 0.54);
  EXPECT_LT(big.pred_us, 1.5 * flops_us / 0.54);
}

TEST(CommunicationModel, RingAllReduceOverNvlink) {
  KernelDesc k;
  k.op = Op::allreduce;
  k.shape.bytes = 64 << 20;
  k.shape.ranks = 8;
  Analysis a = analyze_kernel(k, h100());
  EXPECT_EQ(a.bound, Pipe::link);
  const double link_us = (64 << 20) * 2.0 * 7 / 8 / 450e9 * 1e6;
  EXPECT_NEAR(a.ceiling_us, link_us + 7 * 1.5 + 1.0, 0.5);
  Analysis pcie = analyze_kernel(k, db().get("l40s"));
  EXPECT_GT(pcie.ceiling_us, 4 * a.ceiling_us);
}

TEST(UnknownModel, KeepsLaunchArgumentsAndTheFloor) {
  KernelDesc k;
  k.name = "my_custom_kernel";
  k.launch = LaunchArgs{{264, 1, 1}, {256, 1, 1}, 32, 0};
  Analysis a = analyze_kernel(k, h100());
  EXPECT_EQ(a.family, Family::unknown);
  EXPECT_DOUBLE_EQ(a.plan.ctas, 264);
  EXPECT_EQ(a.bound, Pipe::launch);
}

TEST(Features, HaveTheDeclaredLayoutAndAreFinite) {
  for (const KernelDesc& k : {gemm(1, 4096, 4096), gemm(8192, 8192, 8192, Dtype::fp8e4m3)}) {
    Analysis a = analyze_kernel(k, h100());
    auto f = make_features(k, h100(), a);
    ASSERT_EQ(f.size(), feature_names().size());
    for (float x : f) EXPECT_TRUE(std::isfinite(x));
  }
}

namespace {
float feature(const std::vector<float>& f, std::string_view name) {
  const auto& names = feature_names();
  const auto it = std::find(names.begin(), names.end(), name);
  EXPECT_NE(it, names.end()) << name;
  return it == names.end() ? NAN : f[static_cast<std::size_t>(it - names.begin())];
}
}  // namespace

TEST(Features, PipeSharesAreEachPipesCyclesOverTheBindingPipes) {
  const std::string_view shares[] = {"log2_share_tensor", "log2_share_fma", "log2_share_sfu",
                                     "log2_share_dram",   "log2_share_l2",  "log2_share_smem"};
  const Pipe pipes[] = {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem};
  for (const KernelDesc& k : {gemm(1, 8192, 8192), gemm(8192, 8192, 8192), gemm(64, 1024, 65536, Dtype::fp8e4m3)}) {
    const Analysis a = analyze_kernel(k, h100());
    const auto f = make_features(k, h100(), a);
    double work = 0;
    for (Pipe p : pipes) work = std::max(work, a.achievable_cycles_busiest[static_cast<std::size_t>(p)]);
    int binding = 0;
    for (std::size_t i = 0; i < std::size(pipes); ++i) {
      const double c = a.achievable_cycles_busiest[static_cast<std::size_t>(pipes[i])];
      EXPECT_NEAR(feature(f, shares[i]), std::log2((c + 1) / (work + 1)), 1e-5) << shares[i];
      EXPECT_LE(feature(f, shares[i]), 0.0f) << shares[i];
      binding += feature(f, shares[i]) == 0.0f;
    }
    EXPECT_GE(binding, 1) << "the binding pipe's share is 1";
    EXPECT_LT(feature(f, "log2_share_sfu"), -3.0f) << "a GEMM has no exponentials to speak of";
  }
}

TEST(GemmModel, AWarpgroupGemmsPipesCombineAsASmoothBoundThatTheH200sFasterL2Shortens) {
  // Tensor-bound on both Hopper GPUs (their calibrated tensor rates within 1%), with L2 traffic
  // close to the tensor time: the H200's 12.6% faster bulk-copy L2 makes the GEMM faster, more so
  // the closer its L2 time comes, as measured (H200 / H100 = 0.99 at an L2 share of 0.5, 0.96-0.97
  // at 1), where the maximum of the pipes would give both GPUs the same time.
  auto cyc = [](const Analysis& a, Pipe p) { return a.achievable_cycles_busiest[static_cast<std::size_t>(p)]; };
  double last_ratio = 0, last_share = 1;
  for (const auto& [cluster_m, cluster_n] : {std::pair{4, 2}, std::pair{2, 2}, std::pair{1, 2}}) {
    KernelDesc k = gemm(8192, 8192, 8192);
    k.tile = TileConfig{256, 128, 64, cluster_m, cluster_n};
    const Analysis h100a = analyze_kernel(k, h100());
    const Analysis h200a = analyze_kernel(k, db().get("h200"));
    const double share = cyc(h100a, Pipe::l2) / cyc(h100a, Pipe::tensor);
    ASSERT_GT(cyc(h100a, Pipe::tensor), std::max(cyc(h100a, Pipe::l2), cyc(h100a, Pipe::dram)));
    const double ratio = h200a.achievable_roofline_us / h100a.achievable_roofline_us;
    EXPECT_LT(ratio, 0.995) << "L2 share " << share;
    EXPECT_GT(ratio, 0.95) << "L2 share " << share;
    if (last_ratio > 0) {
      EXPECT_GT(share, last_share);
      EXPECT_LT(ratio, last_ratio) << "L2 share " << share << ": the closer the L2 time, the more its rate counts";
    }
    last_ratio = ratio;
    last_share = share;
  }
  EXPECT_GT(last_share, 0.6);
}

TEST(Features, AGemmsMemoryCyclesAreReadAtTheMeanOfItsL2RateAndTheReference) {
  // L2 and DRAM cycle features of a GEMM: the GPU's own cycles x sqrt(its L2 rate / the reference
  // rate), their ratio kept; on the reference GPU (the H100's bulk-copy rate) its own cycles.
  const KernelDesc k = gemm(4096, 4096, 4096);
  for (const char* id : {"h100-sxm", "h200", "a100-sxm-80gb", "b200"}) {
    const GpuSpec& g = db().get(id);
    const Analysis a = analyze_kernel(k, g);
    ASSERT_GT(a.achievable_l2_bytes_per_s, 0) << id;
    const double scale = std::sqrt(a.achievable_l2_bytes_per_s / kReferenceL2BytesPerS);
    const auto f = make_features(k, g, a);
    for (auto [name, pipe] : {std::pair{"log2_cyc_max_l2", Pipe::l2}, std::pair{"log2_cyc_max_dram", Pipe::dram},
                              std::pair{"log2_cyc_bal_l2", Pipe::l2}, std::pair{"log2_cyc_bal_dram", Pipe::dram}}) {
      const double own = a.achievable_cycles_busiest[static_cast<std::size_t>(pipe)];
      EXPECT_NEAR(feature(f, name), std::log2(1 + own * scale), 1e-4) << id << " " << name;
    }
    EXPECT_NEAR(feature(f, "log2_cyc_max_tensor"),
                std::log2(1 + a.achievable_cycles_busiest[static_cast<std::size_t>(Pipe::tensor)]), 1e-4)
        << id << ": the tensor cycles are the GPU's own";
    if (std::string(id) == "h100-sxm") {
      EXPECT_NEAR(scale, 1.0, 1e-9);
    }
    if (std::string(id) == "h200") {
      EXPECT_GT(scale, 1.05) << "the H200's bulk-copy L2 is 12.6% faster";
    }
  }
}

TEST(Features, AttentionPrefillsArchitectureDefaultTileIsNoFeature) {
  // FlashAttention-2 on Ampere tiles head dim 128 as 128x64, FA3 on Hopper as 128x128. The
  // analysis uses its architecture's tile; the features must not name the architecture by it.
  KernelDesc k;
  k.op = Op::attn_prefill;
  k.shape.B = 8;
  k.shape.S = 4096;
  k.shape.Hq = 32;
  k.shape.Hkv = 8;
  k.shape.D = 128;
  const GpuSpec& a100 = db().get("a100-sxm-80gb");
  const Analysis on_a100 = analyze_kernel(k, a100), on_h100 = analyze_kernel(k, h100());
  ASSERT_TRUE(on_a100.tile && on_h100.tile);
  EXPECT_EQ(on_a100.tile->tile_n, 64);
  EXPECT_EQ(on_h100.tile->tile_n, 128);
  EXPECT_EQ(on_a100.tile_origin, "architecture default");
  const auto fa = make_features(k, a100, on_a100), fh = make_features(k, h100(), on_h100);
  for (std::string_view name : {"tile_m", "tile_n", "tile_k"}) {
    EXPECT_EQ(feature(fa, name), 0.0f) << name;
    EXPECT_EQ(feature(fh, name), 0.0f) << name;
  }
  EXPECT_EQ(feature(fa, "split_k"), static_cast<float>(TileConfig{}.split_k));
  EXPECT_EQ(feature(fh, "split_k"), static_cast<float>(TileConfig{}.split_k));
  // A decode's tile is chosen per shape (query group, split-KV count) and stays a feature.
  k.op = Op::attn_decode;
  k.shape.B = 1;
  k.shape.L = 4096;
  const Analysis decode = analyze_kernel(k, h100());
  const auto fd = make_features(k, h100(), decode);
  EXPECT_EQ(feature(fd, "tile_m"), 16.0f);
  EXPECT_GT(feature(fd, "split_k"), 1.0f);
}

TEST(Features, ActQuantShareIsTheQuantisationsTimeOverTheGemmsRoofline) {
  // A kernel list's fp8 GEMM is the kernel alone: no quantisation in its time.
  KernelDesc k = gemm(1024, 4096, 4096, Dtype::fp8e4m3);
  EXPECT_EQ(act_quant_us(k, h100()), 0.0);
  EXPECT_EQ(feature(make_features(k, h100(), analyze_kernel(k, h100())), "act_quant_share"), 0.0f);
  // A framework's fp8 linear quantises its bf16 input first: 1024 x 4096 bf16 read, as many fp8
  // values and 1024 fp32 scales written (12.6 MB, inside H100's 50 MiB L2), plus one launch.
  k.act_quant = true;
  const HardwareRates hw = hardware_rates(h100(), k.dtype);
  const double in_l2 = (1024.0 * 4096 * 3 + 1024 * 4) / (hw.achievable.l2_bytes_per_clk * hw.clock_hz) * 1e6;
  EXPECT_NEAR(act_quant_us(k, h100()), in_l2 + hw.achievable.launch_floor_us, 1e-9);
  const Analysis a = analyze_kernel(k, h100());
  const double share = act_quant_us(k, h100()) / a.achievable_roofline_us;
  EXPECT_GT(share, 0.0);
  EXPECT_FLOAT_EQ(feature(make_features(k, h100(), a), "act_quant_share"), static_cast<float>(share));
  // It reads the activations (M x K), whatever N: a narrow GEMM spends a larger share on it.
  KernelDesc narrow = k;
  narrow.shape.N = 256;
  EXPECT_DOUBLE_EQ(act_quant_us(narrow, h100()), act_quant_us(k, h100()));
  EXPECT_GT(feature(make_features(narrow, h100(), analyze_kernel(narrow, h100())), "act_quant_share"), share);
  // Past L2 the activations stream from DRAM: 8192 x 16384 (403 MB).
  KernelDesc big = gemm(8192, 4096, 16384, Dtype::fp8e4m3);
  big.act_quant = true;
  const double from_dram = (8192.0 * 16384 * 3 + 8192 * 4) / (hw.achievable.dram_bytes_per_clk * hw.clock_hz) * 1e6;
  EXPECT_NEAR(act_quant_us(big, h100()), from_dram + hw.achievable.launch_floor_us, 1e-6);
  // nvfp4: half a byte per value and one fp8 scale per 16 values.
  const GpuSpec& b200 = db().get("b200");
  KernelDesc fp4 = gemm(1024, 4096, 4096, Dtype::fp4);
  fp4.act_quant = true;
  const HardwareRates hb = hardware_rates(b200, Dtype::fp4);
  EXPECT_NEAR(act_quant_us(fp4, b200),
              (1024.0 * 4096 * 2.5 + 1024.0 * 4096 / 16) / (hb.achievable.l2_bytes_per_clk * hb.clock_hz) * 1e6 +
                  hb.achievable.launch_floor_us,
              1e-9);
}

TEST(Roofline, CeilingIsBelowThePredictionAndTheIntervalBracketsIt) {
  Prediction p = predict_roofline(gemm(4096, 4096, 4096), h100());
  EXPECT_LT(p.ceiling_us, p.pred_us);
  EXPECT_LE(p.lo_us, p.pred_us);
  EXPECT_GE(p.hi_us, p.pred_us);
  EXPECT_EQ(p.method, "roofline");
}

TEST(CrossGpu, FasterGpusPredictShorterTimes) {
  KernelDesc k = gemm(4096, 4096, 4096);
  EXPECT_LT(predict_roofline(k, db().get("b200")).pred_us, predict_roofline(k, h100()).pred_us);
  EXPECT_LT(predict_roofline(k, h100()).pred_us, predict_roofline(k, db().get("a100-sxm-80gb")).pred_us);
  KernelDesc n;
  n.op = Op::rmsnorm;
  n.shape.T = 8192;
  n.shape.H = 8192;
  EXPECT_LT(predict_roofline(n, db().get("h200")).pred_us, predict_roofline(n, h100()).pred_us);
}
