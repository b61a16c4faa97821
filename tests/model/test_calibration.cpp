// The target-measured tier (model/calibration.h): calibration files parsed and validated, attached
// to their GPU, and used for the achievable rates but never for the roofline ceiling.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/analysis.h"
#include "model/calibration.h"
#include "model/classify/tile_from_name.h"
#include "model/families/family_models.h"
#include "model/features.h"
#include "model/gpu_database.h"

using namespace perfloom;
using nlohmann::json;

namespace {

json h100_calibration() {
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/resources/calibration/h100-sxm.json");
  return json::parse(in);
}

// The error a bad calibration gets, as field and message.
CalibrationError error_of(const json& doc, GpuDatabase* db = nullptr) {
  GpuDatabase local = GpuDatabase::builtin();
  GpuDatabase& d = db ? *db : local;
  try {
    d.add_calibration(parse_calibration(doc.dump(), "bad.json"));
  } catch (const CalibrationError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << doc.dump();
  return CalibrationError("", "", "");
}

KernelDesc big_gemm() {
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = Dtype::bf16;
  k.shape.M = 8192;
  k.shape.N = 8192;
  k.shape.K = 8192;
  return k;
}

}  // namespace

TEST(Calibration, BundledCalibrationsGiveTheTargetMeasuredTier) {
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& h100 = db.get("h100-sxm");
  ASSERT_TRUE(h100.achievable.has_value());
  EXPECT_TRUE(h100.achievable->measured);
  EXPECT_NE(h100.achievable->origin.find("h100-sxm.json"), std::string::npos);
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  EXPECT_TRUE(hw.calibrated);
  // Measured rates in the achievable fields, datasheet peaks in the others.
  EXPECT_NEAR(hw.achievable.tensor_flops_per_clk, 799.013e12 / (132 * 1830e6), 1e-6);
  EXPECT_NEAR(hw.achievable.dram_bytes_per_clk, 3112.89e9 / 1830e6, 1e-9);
  // The launch floor is the default one (the mean empty-kernel time), not this GPU's own; its own
  // empty kernel is 0.927 us, the difference its launch offset, which the learned model's time adds.
  EXPECT_NEAR(hw.achievable.launch_floor_us, (0.927 + 0.672) / 2, 1e-9);
  EXPECT_NEAR(hw.achievable.launch_offset_us, 0.927 - (0.927 + 0.672) / 2, 1e-9);
  EXPECT_NEAR(hardware_rates(db.get("h200"), Dtype::bf16).achievable.launch_offset_us, 0.672 - (0.927 + 0.672) / 2,
              1e-9);
  // A kernel pays it in the proportion of the floor to its roofline time (a large GEMM: little).
  const Analysis big = analyze_kernel(big_gemm(), h100);
  EXPECT_NEAR(big.launch_offset_us, (0.927 - (0.927 + 0.672) / 2) * (0.927 + 0.672) / 2 / big.achievable_roofline_us,
              1e-12);
  EXPECT_LT(big.launch_offset_us, 1e-3);
  EXPECT_DOUBLE_EQ(hw.tensor_flops_per_clk, 4096);
  EXPECT_NEAR(hw.dram_bytes_per_clk, 3350e9 / 1830e6, 1e-9);
  EXPECT_TRUE(db.get("h200").achievable->measured);
  // The calibration's fp8e4m3 stands for the spec's fp8 key, so fp8e5m2 gets it too.
  EXPECT_NEAR(hardware_rates(h100, Dtype::fp8e5m2).achievable.tensor_flops_per_clk, 1399.93e12 / (132 * 1830e6), 1e-6);
}

TEST(Calibration, DefaultFractionsAreTheMeanOverTheBundledCalibrations) {
  const GpuDatabase db = GpuDatabase::builtin();
  const AchievableFractions& f = db.default_fractions();
  EXPECT_EQ(f.from, (std::vector<std::string>{"h100-sxm", "h200"}));
  EXPECT_NEAR(f.dram, (3112.89 / 3350 + 4649.88 / 4800) / 2, 1e-9);
  const double bf16_peak = 4096.0 * 132 * 1830e6 / 1e12;
  EXPECT_NEAR(f.tensor.at("bf16"), (799.013 / bf16_peak + 805.567 / bf16_peak) / 2, 1e-9);
  EXPECT_NEAR(f.launch, (0.927 + 0.672) / 2, 1e-9);
  EXPECT_NEAR(bundled_default_fractions().dram, f.dram, 1e-12);
  // A GPU without a calibration: its datasheet times these fractions (cross-generation tier).
  const GpuSpec& a100 = db.get("a100-sxm-80gb");
  ASSERT_TRUE(a100.achievable.has_value());
  EXPECT_FALSE(a100.achievable->measured);
  EXPECT_NEAR(a100.achievable->rates.dram_bytes_per_s, a100.memory_bandwidth_bytes_per_s() * f.dram, 1);
  EXPECT_EQ(a100.achievable->launch_offset_us, 0);  // no empty kernel of its own was measured
  EXPECT_FALSE(hardware_rates(a100, Dtype::bf16).calibrated);
  // A spec no database set up gets the same rates.
  GpuSpec bare = a100;
  bare.achievable.reset();
  EXPECT_NEAR(hardware_rates(bare, Dtype::bf16).achievable.tensor_flops_per_clk,
              hardware_rates(a100, Dtype::bf16).achievable.tensor_flops_per_clk, 1e-9);
}

TEST(Calibration, HeldOutGpuLeavesTheDefaultsAndCanDropItsCalibration) {
  GpuDatabase db = GpuDatabase::builtin();
  db.exclude_from_defaults({"h100-sxm"});
  EXPECT_EQ(db.default_fractions().from, std::vector<std::string>{"h200"});
  // Every GPU's features take the H200's launch floor; the held-out H100 adds its own difference.
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.launch_floor_us, 0.672, 1e-9);
  EXPECT_NEAR(db.get("h100-sxm").achievable->launch_offset_us, 0.927 - 0.672, 1e-9);
  EXPECT_NEAR(db.get("h200").achievable->launch_offset_us, 0, 1e-9);
  EXPECT_NEAR(db.default_fractions().dram, 4649.88 / 4800, 1e-9);
  EXPECT_TRUE(db.get("h100-sxm").achievable->measured);  // still its own calibration
  db.remove_calibration("h100-sxm");
  EXPECT_FALSE(db.get("h100-sxm").achievable->measured);
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_bytes_per_s, 3350e9 * 4649.88 / 4800, 1);
}

TEST(Calibration, CeilingKeepsTheDatasheetPeaksAndTheLearnedViewMoves) {
  GpuDatabase with = GpuDatabase::builtin();
  GpuDatabase without = with;
  without.remove_calibration("h100-sxm");
  const KernelDesc k = big_gemm();
  const Analysis a = analyze_kernel(k, with.get("h100-sxm"));
  const Analysis b = analyze_kernel(k, without.get("h100-sxm"));
  EXPECT_DOUBLE_EQ(a.ceiling_us, b.ceiling_us);
  EXPECT_DOUBLE_EQ(a.roofline_us, b.roofline_us);
  EXPECT_EQ(a.bound, Pipe::tensor);
  // Achievable: the measured 799 TFLOP/s instead of the 989 peak.
  EXPECT_GT(a.achievable_roofline_us, a.roofline_us * 1.2);
  EXPECT_NE(a.achievable_roofline_us, b.achievable_roofline_us);
  EXPECT_NE(make_features(k, with.get("h100-sxm"), a), make_features(k, without.get("h100-sxm"), b));
}

TEST(Calibration, AUsersCalibrationChangesItsGpuOnly) {
  GpuDatabase db = GpuDatabase::builtin();
  const AchievableFractions before = db.default_fractions();
  json c = h100_calibration();
  c["gpu_name"] = "NVIDIA A100-SXM4-80GB";
  c["sm_count"] = 108;
  c["measured"]["dram_read_gb_s"] = 1800.0;
  c["measured"]["fp32_tflops"] = 19.0;
  c["measured"]["tensor_tflops"] = {{"bf16", 280.0}, {"fp16", 275.0}, {"tf32", 140.0}, {"int8", 550.0}};
  c["measured"]["mma_sync_tflops"] = {{"bf16", 280.0}};
  const GpuSpec* a100 = db.find("NVIDIA A100-SXM4-80GB");
  ASSERT_NE(a100, nullptr) << "alias expected in gpus/";
  EXPECT_EQ(db.add_calibration(parse_calibration(c.dump(), "mine.json")), a100->id);
  EXPECT_TRUE(db.get(a100->id).achievable->measured);
  EXPECT_NEAR(db.get(a100->id).achievable->rates.dram_bytes_per_s, 1800e9, 1);
  EXPECT_EQ(db.default_fractions().from, before.from);
  EXPECT_DOUBLE_EQ(db.default_fractions().dram, before.dram);
}

TEST(Calibration, MissingFieldIsRefusedWithFileFieldAndReason) {
  json c = h100_calibration();
  c["measured"].erase("dram_read_gb_s");
  const CalibrationError e = error_of(c);
  EXPECT_EQ(e.file(), "bad.json");
  EXPECT_EQ(e.field(), "measured.dram_read_gb_s");
  EXPECT_NE(std::string(e.what()).find("is required"), std::string::npos) << e.what();
}

TEST(Calibration, WrongSchemaIsRefused) {
  json c = h100_calibration();
  c["schema"] = "perfloom-gpu/1";
  EXPECT_EQ(error_of(c).field(), "schema");
  EXPECT_THROW(parse_calibration("{\"schema\":", "x.json"), CalibrationError);
  EXPECT_THROW(parse_calibration("[1,2]", "x.json"), CalibrationError);
}

TEST(Calibration, DramLatencyIsTheCalibratedGpusOwnOrTheirMean) {
  GpuDatabase db = GpuDatabase::builtin();
  // measured.dram_latency_littles_law_ns of the bundled files (perfloom-calibrate, 2026-11-23).
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_latency_ns, 383.18, 1e-9);
  EXPECT_NEAR(db.get("h200").achievable->rates.dram_latency_ns, 381.2, 1e-9);
  EXPECT_NEAR(db.default_fractions().dram_latency_ns, (383.18 + 381.2) / 2, 1e-9);
  EXPECT_NEAR(db.get("a40").achievable->rates.dram_latency_ns, (383.18 + 381.2) / 2, 1e-9);
  EXPECT_NEAR(hardware_rates(db.get("h100-sxm"), Dtype::bf16).achievable.dram_latency_cycles, 383.18e-9 * 1830e6, 1e-6);
  // Optional: a calibration without it keeps the others' mean; with none at all, no latency.
  json c = h100_calibration();
  c["measured"].erase("dram_latency_littles_law_ns");
  db.add_calibration(parse_calibration(c.dump(), "no-latency.json"));
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_latency_ns, (383.18 + 381.2) / 2, 1e-9);
  EXPECT_EQ(estimated_rates(db.get("a40"), AchievableFractions{}).rates.dram_latency_ns, 0.0);
  c["measured"]["dram_latency_littles_law_ns"] = 3.0;  // seconds or microseconds for nanoseconds
  EXPECT_EQ(error_of(c).field(), "measured.dram_latency_littles_law_ns");
}

// measured.dram_write_gb_s (perfloom-calibrate's store sweep): stores and loads reach different
// fractions of the one datasheet DRAM figure (H100 write 3,199 / read 3,113 GB/s; H200 4,352 /
// 4,650), and a kernel's stored bytes take the write bandwidth in the learned model's DRAM time.
TEST(Calibration, StoredBytesMoveAtTheMeasuredWriteBandwidth) {
  GpuDatabase db = GpuDatabase::builtin();
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_write_bytes_per_s, 3199.34e9, 1);
  EXPECT_NEAR(db.get("h200").achievable->rates.dram_write_bytes_per_s, 4351.68e9, 1);
  const double write_fraction = (3199.34 / 3352.3 + 4351.68 / 4800.0) / 2;
  EXPECT_NEAR(db.default_fractions().dram_write, write_fraction, 0.005);
  EXPECT_NEAR(db.get("a40").achievable->rates.dram_write_bytes_per_s,
              datasheet_rates(db.get("a40")).dram_bytes_per_s * db.default_fractions().dram_write, 1);
  // An add reads two tensors and stores one: its DRAM time is the reads at the read bandwidth plus
  // the store at the write bandwidth; the roofline ceiling keeps the datasheet's one figure.
  KernelDesc add;
  add.op = Op::add;
  add.dtype = Dtype::bf16;
  add.shape.T = 65536;
  add.shape.H = 8192;
  const double n = 65536.0 * 8192 * 2;
  for (const char* id : {"h100-sxm", "h200"}) {
    const GpuSpec& g = db.get(id);
    const Analysis a = analyze_kernel(add, g);
    EXPECT_DOUBLE_EQ(a.demand.dram_write_bytes, n);
    const HardwareRates hw = hardware_rates(g, add.dtype);
    const double expected = 2 * n / hw.achievable.dram_bytes_per_clk + n / hw.achievable.dram_write_bytes_per_clk;
    // (The DRAM latency of its few bytes in flight adds a few cycles in the cube norm.)
    EXPECT_NEAR(a.achievable_cycles_balanced[static_cast<std::size_t>(Pipe::dram)], expected, 1e-4 * expected) << id;
    EXPECT_NEAR(a.cycles_balanced[static_cast<std::size_t>(Pipe::dram)], 3 * n / hw.dram_bytes_per_clk, 1e-6 * n) << id;
  }
  // Optional: without it the GPU's stores take the default fraction of its datasheet figure, as an
  // unmeasured tensor dtype does; a value in the wrong unit is refused.
  json c = h100_calibration();
  c["measured"].erase("dram_write_gb_s");
  db.add_calibration(parse_calibration(c.dump(), "no-write.json"));
  const double fallback = datasheet_rates(db.get("h100-sxm")).dram_bytes_per_s * db.default_fractions().dram_write;
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_write_bytes_per_s, fallback, 1);
  c["measured"]["dram_write_gb_s"] = 3.19934;  // TB/s
  EXPECT_EQ(error_of(c, &db).field(), "measured.dram_write_gb_s");
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_write_bytes_per_s, fallback, 1);  // nothing changed
}

// measured.mma_sync_tflops (perfloom-calibrate, 2026-11-23): warp-level MMA on the H100 and H200
// alike, 631 of their 989 datasheet TFLOP/s (bf16). A Hopper GPU without a calibration takes the
// same fraction of its own peak; other architectures none (their warp-level MMA is their tensor path,
// or was not measured).
TEST(Calibration, WarpLevelMmaRateIsTheCalibratedGpusOwnOrItsArchitecturesMean) {
  GpuDatabase db = GpuDatabase::builtin();
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.mma_sync_flops_per_s.at("bf16"), 631.418e12, 1e3);
  EXPECT_NEAR(db.get("h200").achievable->rates.mma_sync_flops_per_s.at("tf32"), 315.723e12, 1e3);
  const double bf16_fraction = (631.418 + 631.255) / 2 / 989.4;
  const auto& hopper = db.default_fractions().mma_sync_by_architecture.at("hopper");
  EXPECT_NEAR(hopper.at("bf16"), bf16_fraction, 0.01);
  const GpuSpec& h800 = db.get("h800");
  EXPECT_NEAR(h800.achievable->rates.mma_sync_flops_per_s.at("bf16"),
              datasheet_rates(h800).tensor_flops_per_s.at("bf16") * hopper.at("bf16"), 1e3);
  EXPECT_TRUE(db.get("a100-sxm-80gb").achievable->rates.mma_sync_flops_per_s.empty());
  EXPECT_TRUE(db.get("b200").achievable->rates.mma_sync_flops_per_s.empty());
  // Optional; a value out of range or not an object is refused by name.
  json c = h100_calibration();
  c["measured"].erase("mma_sync_tflops");
  EXPECT_TRUE(parse_calibration(c.dump(), "no-mma.json").mma_sync_tflops.empty());
  c["measured"]["mma_sync_tflops"] = json{{"bf16", -1.0}};
  EXPECT_EQ(error_of(c).field(), "measured.mma_sync_tflops.bf16");
  c["measured"]["mma_sync_tflops"] = 631.4;
  EXPECT_EQ(error_of(c).field(), "measured.mma_sync_tflops");
  c["measured"]["mma_sync_tflops"] = json{{"bf16", 6.314}};  // PFLOP/s for TFLOP/s: 0.006x the datasheet
  EXPECT_EQ(error_of(c, &db).field(), "measured.mma_sync_tflops.bf16");
}

// measured.l2_bulk_gb_s (perfloom-calibrate): the L2 through bulk copies into shared
// memory, 8,449 GB/s on an H100 and 9,515 on an H200, where loads reach 8,150 and 8,576. A tensor-core
// GEMM has its achievable L2 cycles at that rate; an attention kernel (here FlashAttention-2) keeps
// the load rate. A Hopper GPU without a calibration takes its architecture's mean fraction of its
// datasheet L2 figure; architectures no calibration measured it on keep their one L2 rate.
TEST(Calibration, BulkCopyL2RateIsTheCalibratedGpusOwnOrItsArchitecturesMeanAndServesTensorCoreGemms) {
  GpuDatabase db = GpuDatabase::builtin();
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.l2_bulk_bytes_per_s, 8449.32e9, 1e3);
  EXPECT_NEAR(db.get("h200").achievable->rates.l2_bulk_bytes_per_s, 9515.3e9, 1e3);
  const double hopper = db.default_fractions().l2_bulk_by_architecture.at("hopper");
  EXPECT_NEAR(hopper,
              (8449.32e9 / datasheet_rates(db.get("h100-sxm")).l2_bytes_per_s +
               9515.3e9 / datasheet_rates(db.get("h200")).l2_bytes_per_s) /
                  2,
              1e-9);
  EXPECT_NEAR(db.get("h800").achievable->rates.l2_bulk_bytes_per_s,
              datasheet_rates(db.get("h800")).l2_bytes_per_s * hopper, 1e3);
  EXPECT_EQ(db.get("a100-sxm-80gb").achievable->rates.l2_bulk_bytes_per_s, 0.0);
  EXPECT_EQ(db.get("b200").achievable->rates.l2_bulk_bytes_per_s, 0.0);

  const auto l2 = static_cast<std::size_t>(Pipe::l2);
  const GpuSpec& h200 = db.get("h200");
  const Analysis gemm = analyze_kernel(big_gemm(), h200);
  ASSERT_GT(gemm.demand.l2_bytes, 0);
  EXPECT_NEAR(gemm.achievable_cycles_balanced[l2] / h200.clock_hz() * 1e6, gemm.demand.l2_bytes / 9515.3e9 * 1e6, 1e-6);
  EXPECT_EQ(gemm.cycles_balanced[l2], gemm.demand.l2_bytes / hardware_rates(h200, Dtype::bf16).l2_bytes_per_clk)
      << "the datasheet roofline keeps its one L2 figure";
  KernelDesc fa2;
  fa2.op = Op::attn_decode;
  fa2.dtype = Dtype::bf16;
  fa2.shape.B = 64;
  fa2.shape.L = 16384;
  fa2.shape.Hq = 32;
  fa2.shape.Hkv = 8;
  fa2.shape.D = 128;
  fa2.name = "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>";
  const Analysis warp = analyze_kernel(fa2, h200);
  ASSERT_TRUE(warp.warp_level_mma);
  ASSERT_GT(warp.demand.l2_bytes, 0);
  EXPECT_NEAR(warp.achievable_cycles_balanced[l2] / h200.clock_hz() * 1e6, warp.demand.l2_bytes / 8764.99e9 * 1e6,
              1e-6);
  // Optional; out of range or not a number is refused by name.
  json c = h100_calibration();
  c["measured"].erase("l2_bulk_gb_s");
  EXPECT_EQ(parse_calibration(c.dump(), "no-bulk.json").l2_bulk_gb_s, 0.0);
  c["measured"]["l2_bulk_gb_s"] = -1.0;
  EXPECT_EQ(error_of(c).field(), "measured.l2_bulk_gb_s");
  c["measured"]["l2_bulk_gb_s"] = "fast";
  EXPECT_EQ(error_of(c).field(), "measured.l2_bulk_gb_s");
}

// cuBLAS's fallbacks written for sm80 or older (CUTLASS 2 kernels launched as cutlass::Kernel2<...>:
// misaligned operands, tf32) issue warp-level MMA on Hopper and load their tiles (cp.async, not bulk
// copies): their tensor work at the calibrated mma.sync rate with the SM's other pipes in series, their
// L2 traffic at the load rate; an nvjet kernel of the same tile keeps the warpgroup and bulk-copy
// rates. Their operand load width is a feature (align2 bf16: 4 bytes per load).
TEST(Calibration, GemmKernelsWrittenForSm80RunAtTheWarpLevelMmaRateAndLoadTheirTiles) {
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& h200 = db.get("h200");
  const auto l2 = static_cast<std::size_t>(Pipe::l2);
  KernelDesc legacy = big_gemm();
  legacy.name = "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x128_32x4_tn_align2>(Params)";
  legacy.tile = tile_from_kernel_name(legacy.name);
  ASSERT_TRUE(legacy.tile);
  KernelDesc nvjet = big_gemm();
  nvjet.name = "nvjet_sm90_tst_128x128_64x4_1x1_v_bz_TNT";
  nvjet.tile = tile_from_kernel_name(nvjet.name);
  ASSERT_TRUE(nvjet.tile);
  const auto hw = hardware_rates(h200, Dtype::bf16);
  ASSERT_GT(hw.achievable.mma_sync_flops_per_clk, 0);

  const Analysis a = analyze_kernel(legacy, h200);
  EXPECT_TRUE(a.warp_level_mma);
  auto at = [&](const Analysis& x, Pipe p) { return x.achievable_cycles_busiest[static_cast<std::size_t>(p)]; };
  const double mma = a.demand.tensor_flops * a.plan.busiest_sm_share / hw.achievable.mma_sync_flops_per_clk;
  EXPECT_NEAR(at(a, Pipe::tensor), mma + at(a, Pipe::sfu) + at(a, Pipe::fma) + at(a, Pipe::smem), 1e-6 * mma);
  EXPECT_NEAR(a.achievable_cycles_balanced[l2], a.demand.l2_bytes / hw.achievable.l2_bytes_per_clk,
              1e-9 * a.achievable_cycles_balanced[l2]);

  const Analysis n = analyze_kernel(nvjet, h200);
  EXPECT_FALSE(n.warp_level_mma);
  EXPECT_NEAR(at(n, Pipe::tensor), n.demand.tensor_flops * n.plan.busiest_sm_share / hw.achievable.tensor_flops_per_clk,
              1e-6 * at(n, Pipe::tensor));
  EXPECT_NEAR(n.achievable_cycles_balanced[l2], n.demand.l2_bytes / hw.achievable.l2_bulk_bytes_per_clk,
              1e-9 * n.achievable_cycles_balanced[l2]);
  EXPECT_GT(at(a, Pipe::tensor), 1.2 * at(n, Pipe::tensor));
  EXPECT_GT(a.achievable_roofline_us, n.achievable_roofline_us);
  EXPECT_EQ(a.roofline_us, n.roofline_us) << "the datasheet roofline knows no kernel";

  // The A100's tensor path is warp-level MMA: the same kernel there runs at its one tensor rate.
  const GpuSpec& a100 = db.get("a100-sxm-80gb");
  const Analysis ampere = analyze_kernel(legacy, a100);
  const auto hw_a100 = hardware_rates(a100, Dtype::bf16);
  EXPECT_NEAR(at(ampere, Pipe::tensor),
              ampere.demand.tensor_flops * ampere.plan.busiest_sm_share / hw_a100.achievable.tensor_flops_per_clk,
              1e-6 * at(ampere, Pipe::tensor));

  // The operand load width: align2 of bf16 is 4 bytes, a name without an alignment a full vector.
  EXPECT_EQ(operand_load_bytes(legacy), 4.0);
  EXPECT_EQ(operand_load_bytes(nvjet), 16.0);
  KernelDesc align1 = legacy;
  align1.name = "void cutlass::Kernel2<cutlass_75_tensorop_s1688gemm_bf16_128x64_tn_align1>(Params)";
  EXPECT_EQ(operand_load_bytes(align1), 2.0);
  align1.dtype = Dtype::tf32;
  EXPECT_EQ(operand_load_bytes(align1), 4.0);
  const auto& names = feature_names();
  const auto col =
      static_cast<std::size_t>(std::find(names.begin(), names.end(), "operand_load_bytes") - names.begin());
  ASSERT_LT(col, names.size());
  EXPECT_EQ(make_features(legacy, h200, a)[col], 4.0f);
  EXPECT_EQ(make_features(nvjet, h200, n)[col], 16.0f);
}

// fp16 and bf16 GEMMs run alike (our sweeps: the same GEMM in both, median ratio 1.000 on the H100
// and H200), but the calibration times each dtype once and the H200's fp16 timing came out 6% low:
// the floating-point dtypes of one datasheet peak share the highest of their timings. The integer
// path keeps its own.
TEST(Calibration, FloatDtypesOfOneTensorPeakShareTheirHighestTiming) {
  GpuDatabase db = GpuDatabase::builtin();
  const auto& h200 = db.get("h200").achievable->rates.tensor_flops_per_s;
  EXPECT_NEAR(h200.at("fp16"), 805.567e12, 1e3);  // its own timing: 759.896
  EXPECT_NEAR(h200.at("bf16"), 805.567e12, 1e3);
  EXPECT_NEAR(h200.at("fp8"), 1397.68e12, 1e3);
  EXPECT_NEAR(h200.at("int8"), 1500.13e12, 1e3);
  EXPECT_NEAR(hardware_rates(db.get("h200"), Dtype::fp16).achievable.tensor_flops_per_clk,
              hardware_rates(db.get("h200"), Dtype::bf16).achievable.tensor_flops_per_clk, 1e-9);
  // Whichever dtype timed higher; the fraction that GPUs without a calibration take follows.
  json c = h100_calibration();
  c["measured"]["tensor_tflops"]["fp16"] = 810.0;
  c["measured"]["mma_sync_tflops"]["bf16"] = 600.0;
  db.add_calibration(parse_calibration(c.dump(), "fp16-high.json"));
  const auto& h100 = db.get("h100-sxm").achievable->rates;
  EXPECT_NEAR(h100.tensor_flops_per_s.at("bf16"), 810e12, 1e3);
  EXPECT_NEAR(h100.tensor_flops_per_s.at("fp16"), 810e12, 1e3);
  EXPECT_NEAR(h100.tensor_flops_per_s.at("tf32"), 409.454e12, 1e3);  // another peak: its own
  EXPECT_NEAR(h100.mma_sync_flops_per_s.at("bf16"), 629.88e12, 1e3);
  const double bf16_peak = 4096.0 * 132 * 1830e6 / 1e12;
  const AchievableFractions f = achievable_fractions(parse_calibration(c.dump(), "fp16-high.json"), db.get("h100-sxm"));
  EXPECT_NEAR(f.tensor.at("bf16"), 810.0 / bf16_peak, 1e-9);
  EXPECT_NEAR(f.tensor.at("fp16"), 810.0 / bf16_peak, 1e-9);
  // A timing in the wrong unit is refused by its own field, though its path's other dtype would have
  // replaced it, and the stored calibration stays.
  c["measured"]["tensor_tflops"]["fp16"] = 0.81;  // PFLOP/s
  EXPECT_EQ(error_of(c, &db).field(), "measured.tensor_tflops.fp16");
  c["measured"]["tensor_tflops"]["fp16"] = 810.0;
  c["measured"]["mma_sync_tflops"]["fp16"] = 0.63;
  EXPECT_EQ(error_of(c, &db).field(), "measured.mma_sync_tflops.fp16");
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.tensor_flops_per_s.at("fp16"), 810e12, 1e3);
}

TEST(Calibration, NegativeRateIsRefused) {
  json c = h100_calibration();
  c["measured"]["tensor_tflops"]["bf16"] = -799.0;
  const CalibrationError e = error_of(c);
  EXPECT_EQ(e.field(), "measured.tensor_tflops.bf16");
  EXPECT_NE(e.reason().find("between"), std::string::npos) << e.what();
  c = h100_calibration();
  c["measured"]["l2_gb_s"] = "fast";
  EXPECT_EQ(error_of(c).field(), "measured.l2_gb_s");
}

TEST(Calibration, AnotherGpuOrAnotherUnitIsRefusedAndNothingChanges) {
  GpuDatabase db = GpuDatabase::builtin();
  json c = h100_calibration();
  c["gpu_name"] = "NVIDIA GeForce GTX 480";
  EXPECT_EQ(error_of(c, &db).field(), "gpu_name");
  c = h100_calibration();
  c["sm_count"] = 114;  // an H100 PCIe sweep labelled with the SXM's name
  EXPECT_EQ(error_of(c, &db).field(), "sm_count");
  c = h100_calibration();
  c["measured"]["dram_read_gb_s"] = 3.11289;  // TB/s
  const CalibrationError e = error_of(c, &db);
  EXPECT_EQ(e.field(), "measured.dram_read_gb_s");
  EXPECT_NE(e.reason().find("units"), std::string::npos) << e.what();
  c = h100_calibration();
  c["measured"]["empty_kernel_us"] = 927;  // ns: it would add up to 926 us to the H100's predictions
  const CalibrationError ns = error_of(c, &db);
  EXPECT_EQ(ns.field(), "measured.empty_kernel_us");
  EXPECT_NE(ns.reason().find("between 0.05 and 20"), std::string::npos) << ns.what();
  // The bundled calibration is still the one in use.
  EXPECT_NEAR(db.get("h100-sxm").achievable->rates.dram_bytes_per_s, 3112.89e9, 1);
  EXPECT_NEAR(db.get("h100-sxm").achievable->launch_offset_us, 0.927 - (0.927 + 0.672) / 2, 1e-9);
}

TEST(Calibration, ReadingAMissingFileNamesIt) {
  try {
    read_calibration_file("/nonexistent/calibration.json");
    FAIL();
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/calibration.json");
  }
}

// Sustained power (model/power.h): the probe's levels in a calibration file make a curve.
namespace {

SustainedPowerLevel level(double tflops, double gemm, double memory) {
  SustainedPowerLevel l;
  l.tensor_tflops = tflops;
  l.gemm_factor = gemm;
  l.memory_factor = memory;
  return l;
}

}  // namespace

TEST(SustainedPower, CurveIsAtLeastOneNonDecreasingAndLinearBetweenLevels) {
  SustainedPower s;
  // Utilisation = tflops x slowdown / 1000 (a 1000 TFLOP/s peak): 0, 0.194, 0.408, 0.5, 0.72.
  s.levels = {level(600, 1.2, 1.04), level(0, 0, 0.95), level(200, 0.97, 1.0), level(400, 1.02, 1.0),
              level(500, 1.0, 1.01)};
  const SustainedPowerCurve c = SustainedPowerCurve::fit(s, 1e15, "test");
  ASSERT_EQ(c.points().size(), 5u);
  const double want_u[] = {0.0, 0.194, 0.408, 0.5, 0.72};
  // Below 1 becomes 1; the 1.02 then 1.0 pair is pooled to 1.01 (isotonic).
  const double want_compute[] = {1.0, 1.0, 1.01, 1.01, 1.2};
  const double want_memory[] = {1.0, 1.0, 1.0, 1.01, 1.04};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(c.points()[i].utilization, want_u[i], 1e-12) << i;
    EXPECT_NEAR(c.points()[i].factors.compute, want_compute[i], 1e-12) << i;
    EXPECT_NEAR(c.points()[i].factors.memory, want_memory[i], 1e-12) << i;
  }
  EXPECT_NEAR(c.at(0.61).compute, 1.105, 1e-12);
  EXPECT_NEAR(c.at(0.61).memory, 1.025, 1e-12);
  EXPECT_DOUBLE_EQ(c.at(0.95).compute, 1.2);  // flat beyond the ends
  EXPECT_DOUBLE_EQ(c.at(-1).compute, 1.0);
  EXPECT_EQ(c.origin(), "test");
  SustainedPower one_gemm;
  one_gemm.levels = {level(0, 0, 1.0), level(600, 1.2, 1.0)};
  EXPECT_THROW(SustainedPowerCurve::fit(one_gemm, 1e15, "x"), std::invalid_argument);
}

TEST(SustainedPower, LevelsAtTheBoostClockAreNotPowerLimited) {
  // A duty-cycled level (its GEMMs after idle gaps) at the 1980 MHz boost clock measured 1.05: not
  // the power limit, so 1; the throttled level at 1400 MHz keeps its 1.2.
  SustainedPower s;
  s.levels = {level(300, 1.05, 1.02), level(600, 1.2, 1.04)};
  s.levels[0].sm_clock_mhz = 1975;
  s.levels[1].sm_clock_mhz = 1400;
  const SustainedPowerCurve ruled = SustainedPowerCurve::fit(s, 1e15, "test", 1980);
  ASSERT_EQ(ruled.points().size(), 2u);
  EXPECT_NEAR(ruled.points()[0].utilization, 0.315, 1e-12);  // its throughput still counts at burst speed
  EXPECT_DOUBLE_EQ(ruled.points()[0].factors.compute, 1.0);
  EXPECT_DOUBLE_EQ(ruled.points()[0].factors.memory, 1.0);
  EXPECT_DOUBLE_EQ(ruled.points()[1].factors.compute, 1.2);
  EXPECT_DOUBLE_EQ(ruled.points()[1].factors.memory, 1.04);
  // Without a boost clock (or without clocks in the levels) the measured factors stand.
  EXPECT_DOUBLE_EQ(SustainedPowerCurve::fit(s, 1e15, "test").points()[0].factors.compute, 1.05);
}

TEST(SustainedPower, BundledH100AndH200CurvesComeFromTheirCalibrations) {
  const GpuDatabase db = GpuDatabase::builtin();
  for (const char* id : {"h100-sxm", "h200"}) {
    const GpuSpec& g = db.get(id);
    ASSERT_TRUE(g.sustained.has_value()) << id;
    EXPECT_NE(g.sustained->origin().find(std::string(id) + ".json"), std::string::npos);
    // Measured 2026-11-22: GEMMs at 650-680 TFLOP/s sustained run 1.16-1.21x their burst time at
    // 700 W; at a quarter of that load the clock holds (data/power/sustained_power_*.json).
    EXPECT_GT(g.sustained->at(0.78).compute, 1.12) << id;
    EXPECT_LT(g.sustained->at(0.78).compute, 1.25) << id;
    EXPECT_DOUBLE_EQ(g.sustained->at(0.2).compute, 1.0) << id;
    EXPECT_LT(g.sustained->at(0.78).memory, 1.06) << id;
    const json j = gpu_spec_to_json(g);
    ASSERT_TRUE(j.contains("sustained_power")) << id;
    EXPECT_EQ(j["sustained_power"]["slowdown_by_tensor_utilization"].size(), g.sustained->points().size());
  }
}

TEST(SustainedPower, AScaledCurveMovesEachLoadByThePowerRatioAndGrowsAsTheSquareRootBeyond) {
  SustainedPower s;
  s.levels = {level(200, 1.0, 1.0), level(500, 1.1, 1.02), level(700, 1.2, 1.03)};  // u 0.2, 0.55, 0.84
  s.rise_ms = 50;
  s.fall_ms = 30;
  const SustainedPowerCurve ref = SustainedPowerCurve::fit(s, 1e15, "ref");
  // Twice the tensor throughput per watt: the reference's 0.84 is reached at 0.42, and at 0.84 the
  // GPU asks for twice that power, sqrt(2) more slowdown.
  const SustainedPowerCurve hot = SustainedPowerCurve::scaled(ref, 2.0, "hot");
  EXPECT_NEAR(hot.at(0.1).compute, 1.0, 1e-12);
  EXPECT_NEAR(hot.at(0.275).compute, 1.1, 1e-12);
  EXPECT_NEAR(hot.at(0.42).compute, 1.2, 1e-12);
  EXPECT_NEAR(hot.at(0.84).compute, 1.2 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(hot.at(0.84).memory, 1.03, 1e-12);
  EXPECT_NEAR(hot.at(2.0).compute, 1.2 * std::sqrt(2.0), 1e-9);  // flat past the pipes' highest load
  for (double u = 0; u < 1; u += 0.01) EXPECT_LE(hot.at(u).compute, hot.at(u + 0.01).compute + 1e-12) << u;
  EXPECT_EQ(hot.rise_ms(), 50);
  EXPECT_EQ(hot.fall_ms(), 30);
  EXPECT_EQ(hot.origin(), "hot");
  // The same throughput per watt: the reference itself. Half of it: the limit is never reached by
  // the loads the reference could give (0.84 asks for what 0.42 asked of the reference).
  const SustainedPowerCurve same = SustainedPowerCurve::scaled(ref, 1.0, "same");
  for (double u : {0.1, 0.3, 0.6, 0.84, 1.2}) EXPECT_DOUBLE_EQ(same.at(u).compute, ref.at(u).compute) << u;
  const SustainedPowerCurve cool = SustainedPowerCurve::scaled(ref, 0.5, "cool");
  EXPECT_NEAR(cool.at(0.84).compute, ref.at(0.42).compute, 1e-12);
  EXPECT_DOUBLE_EQ(cool.at(0.4).compute, 1.0);
  EXPECT_THROW(SustainedPowerCurve::scaled(ref, 0, "x"), std::invalid_argument);
  EXPECT_THROW(SustainedPowerCurve::scaled(SustainedPowerCurve{}, 1, "x"), std::invalid_argument);
}

// Every GPU with a TDP and a 16-bit tensor peak gets a curve: the measured H100's or H200's, scaled by
// its tensor peak per watt (issue #58). B200: 2250 TFLOP/s at 1000 W against the H100's 989 at 700 W,
// 1.59x; H20: 148 at 400 W, 0.26x, never held back by its limit.
TEST(SustainedPower, GpusNobodyMeasuredGetAMeasuredCurveScaledByTheirTensorPeakPerWatt) {
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& b200 = db.get("b200");
  ASSERT_TRUE(b200.sustained.has_value());
  EXPECT_NE(b200.sustained->origin().find("datasheet: h100-sxm's measured curve"), std::string::npos)
      << b200.sustained->origin();
  EXPECT_NE(b200.sustained->origin().find("(x1.59)"), std::string::npos) << b200.sustained->origin();
  const SustainedPowerCurve& h100 = *db.get("h100-sxm").sustained;
  EXPECT_GT(b200.sustained->at(0.5).compute, h100.at(0.5).compute);
  EXPECT_NEAR(b200.sustained->at(0.4).compute, h100.at(0.4 * 2250.0 / 1000 / (989.4 / 700)).compute, 0.01);
  EXPECT_DOUBLE_EQ(db.get("h20").sustained->at(0.8).compute, 1.0);
  EXPECT_TRUE(gpu_spec_to_json(b200).contains("sustained_power"));
  // No tensor cores (P100) or no TDP: no curve, and sustained clocks are refused saying why.
  EXPECT_FALSE(db.get("p100-pcie").sustained.has_value());
}

TEST(SustainedPower, ABadBlockNamesTheLevelAndFieldAndKeepsWhatWasThere) {
  json doc = h100_calibration();
  ASSERT_TRUE(doc.contains("sustained_power"));
  json bad = doc;
  bad["sustained_power"]["levels"][1]["gemm_factor"] = 5;
  GpuDatabase db = GpuDatabase::builtin();
  const CalibrationError e = error_of(bad, &db);
  EXPECT_EQ(e.file(), "bad.json");
  EXPECT_EQ(e.field(), "sustained_power.levels[1].gemm_factor");
  EXPECT_NE(e.reason().find("between 0.5 and 3"), std::string::npos) << e.reason();
  // Nothing lost: the bundled calibration and its curve stay.
  ASSERT_NE(db.calibration("h100-sxm"), nullptr);
  EXPECT_NE(db.calibration("h100-sxm")->file.find("h100-sxm.json"), std::string::npos);
  EXPECT_TRUE(db.get("h100-sxm").sustained.has_value());

  bad = doc;
  bad["sustained_power"]["levels"] = json::array({doc["sustained_power"]["levels"][0]});
  EXPECT_EQ(error_of(bad).field(), "sustained_power.levels");
  bad = doc;
  bad["sustained_power"]["levels"][2].erase("gemm_factor");
  EXPECT_EQ(error_of(bad).field(), "sustained_power.levels[2].gemm_factor");
  bad = doc;
  bad["sustained_power"]["levels"][0]["tensor_tflops"] = "fast";
  EXPECT_EQ(error_of(bad).field(), "sustained_power.levels[0].tensor_tflops");
  // Levels that cannot make a curve (one GEMM level) are refused when the file is attached.
  bad = doc;
  json levels = json::array();
  for (const auto& l : doc["sustained_power"]["levels"])
    if (!l.contains("gemm_factor") || levels.empty()) levels.push_back(l);
  bad["sustained_power"]["levels"] = levels;
  const CalibrationError few = error_of(bad);
  EXPECT_EQ(few.field(), "sustained_power");
  EXPECT_NE(few.reason().find("fewer than two"), std::string::npos) << few.reason();
}

TEST(SustainedPower, TheLoadIsLaggedWithTheMeasuredRiseAndFallTimes) {
  SustainedPower s;
  s.levels = {level(0, 0, 1.0), level(300, 1.0, 1.0), level(700, 1.2, 1.02)};
  s.rise_ms = 100;
  s.fall_ms = 30;
  const SustainedPowerCurve c = SustainedPowerCurve::fit(s, 1e15, "test");
  ASSERT_TRUE(c.has_response());
  // 100 ms at load 0.8 from a cold GPU: mean 0.8 - 0.8 (1 - 1/e), end 0.8 (1 - 1/e).
  const auto first = c.lag(0.0, 1e9, 0.8, 100e3);
  EXPECT_NEAR(first.mean, 0.8 - 0.8 * (1 - std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(first.at_end, 0.8 * (1 - std::exp(-1.0)), 1e-12);
  // 30 ms idle then a light step: the load falls with the fall time.
  const auto next = c.lag(first.at_end, 30e3, 0.0, 30e3);
  EXPECT_NEAR(next.at_end, first.at_end * std::exp(-2.0), 1e-12);
  // Back to back at the same load, the lag converges to the load.
  double u = 0;
  for (int i = 0; i < 50; ++i) u = c.lag(u, 0, 0.8, 20e3).at_end;
  EXPECT_NEAR(u, 0.8, 1e-3);
  // Without response times there is no lag to apply.
  s.rise_ms = s.fall_ms = 0;
  EXPECT_FALSE(SustainedPowerCurve::fit(s, 1e15, "test").has_response());
  // One response time without the other is refused.
  json doc = h100_calibration();
  doc["sustained_power"].erase("fall_ms");
  EXPECT_EQ(error_of(doc).field(), "sustained_power.fall_ms");
}
