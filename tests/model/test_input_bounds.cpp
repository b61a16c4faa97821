// Explicit bounds on shapes and trace fields: an absurd value is refused with the bound in the
// message, never predicted as a number; the work of a prediction does not grow with the values.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "model/calibration.h"
#include "model/families/family_models.h"
#include "model/gpu_database.h"
#include "model/kernel.h"
#include "model/sim/workload.h"

using namespace perfloom;

namespace {

const GpuSpec& h100() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d.get("h100-sxm");
}

KernelDesc prefill(int64_t B, int64_t S, bool causal = true) {
  KernelDesc k;
  k.op = Op::attn_prefill;
  k.shape.B = B;
  k.shape.S = S;
  k.shape.Hq = 32;
  k.shape.Hkv = 8;
  k.shape.D = 128;
  k.shape.causal = causal;
  return k;
}

std::string refusal(const KernelDesc& k) {
  try {
    analyze_kernel(k, h100());
  } catch (const UnsupportedKernel& e) {
    return e.what();
  }
  return "";
}

std::string trace_error(const std::string& text) {
  try {
    sim::parse_trace_csv(text, "t.csv");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(ShapeBounds, AbsurdDimensionsAreRefusedWithTheBound) {
  KernelDesc g;
  g.op = Op::gemm;
  g.shape.M = 1000000000000000000;
  g.shape.N = g.shape.K = 4096;
  EXPECT_EQ(refusal(g), "gemm's M must be at most 2147483647 (got 1000000000000000000)");
  g.shape.M = kMaxDimension;
  EXPECT_EQ(refusal(g), "");

  KernelDesc ar;
  ar.op = Op::allreduce;
  ar.shape.bytes = 1 << 20;
  ar.shape.ranks = 1000000000;
  EXPECT_EQ(refusal(ar), "allreduce's ranks must be at most 1000000 (got 1000000000)");
  ar.shape.ranks = 8;
  ar.shape.bytes = int64_t(1) << 50;
  EXPECT_EQ(refusal(ar), "allreduce's bytes must be at most 281474976710656 (got 1125899906842624)");

  EXPECT_EQ(refusal(prefill(1, 1000000000000)), "attn_prefill's S must be at most 16777216 (got 1000000000000)");
  KernelDesc decode = prefill(1, 1);
  decode.op = Op::attn_decode;
  decode.shape.L = int64_t(1) << 25;
  EXPECT_EQ(refusal(decode), "attn_decode's L must be at most 16777216 (got 33554432)");
  KernelDesc varlen = prefill(1, 1);
  varlen.shape.seqlens = {100, int64_t(1) << 25};
  EXPECT_EQ(refusal(varlen), "every sequence length must be at most 16777216 (got 33554432)");
}

// B sequences of one length cost one pass over the query tiles, and a non-causal prefill one
// tile: the largest batch and sequence allowed take milliseconds, not minutes.
TEST(ShapeBounds, PrefillWorkDoesNotGrowWithBatchOrLength) {
  auto t0 = std::chrono::steady_clock::now();
  const Analysis big = analyze_kernel(prefill(kMaxDimension, kMaxSequence, false), h100());
  const Analysis big_causal = analyze_kernel(prefill(1 << 20, kMaxSequence), h100());
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_TRUE(std::isfinite(big.demand.tensor_flops) && big.demand.tensor_flops > 0);
  EXPECT_TRUE(std::isfinite(big_causal.demand.tensor_flops) && big_causal.demand.tensor_flops > 0);

  // Grouped the same as listed: 3 sequences of 1000 tokens and one of 300, both ways.
  KernelDesc listed = prefill(1, 1);
  listed.shape.seqlens = {1000, 300, 1000, 1000};
  KernelDesc same = prefill(3, 1000);
  const Analysis a = analyze_kernel(listed, h100());
  const Analysis b3 = analyze_kernel(same, h100());
  const Analysis b1 = analyze_kernel(prefill(1, 300), h100());
  EXPECT_NEAR(a.demand.tensor_flops, b3.demand.tensor_flops + b1.demand.tensor_flops, 1e-9 * a.demand.tensor_flops);
  EXPECT_NEAR(a.demand.smem_bytes, b3.demand.smem_bytes + b1.demand.smem_bytes, 1e-9 * a.demand.smem_bytes);
  EXPECT_NEAR(a.useful_flops, b3.useful_flops + b1.useful_flops, 1e-9 * a.useful_flops);
  // Non-causal: the full tiles stood for by one are counted as many times as there are.
  for (bool causal : {false, true}) {
    const Analysis one = analyze_kernel(prefill(1, 1000, causal), h100());
    const Analysis three = analyze_kernel(prefill(3, 1000, causal), h100());
    EXPECT_NEAR(three.demand.tensor_flops, 3 * one.demand.tensor_flops, 1e-9 * three.demand.tensor_flops);
    EXPECT_NEAR(three.demand.l2_bytes, 3 * one.demand.l2_bytes, 1e-9 * three.demand.l2_bytes);
  }
  // Non-causal, 1000 tokens: every query tile (the last one partial, a whole CTA all the same)
  // runs over the 1000 keys padded to the key tile.
  const Analysis nc = analyze_kernel(prefill(1, 1000, false), h100());
  const double kv_exec = std::ceil(1000.0 / nc.tile->tile_n) * nc.tile->tile_n;
  const double q = nc.tile->tile_m;
  EXPECT_NEAR(nc.demand.tensor_flops, std::ceil(1000.0 / q) * 4.0 * q * kv_exec * 128 * 32,
              1e-9 * nc.demand.tensor_flops);
}

TEST(TraceCsvBounds, ArrivalFarInTheFutureIsRefused) {
  EXPECT_EQ(trace_error("arrival_s,input_tokens,output_tokens\n0,100,10\n1e308,100,10\n"),
            "trace t.csv, line 3: arrival_s must be a number from 0 to 1e8 s (got \"1e308\")");
  EXPECT_EQ(trace_error("0,100,10\n100000000,100,10\n"), "");
  EXPECT_EQ(trace_error("0,1000000000000000000,10\n"),
            "trace t.csv, line 1: input_tokens must be an integer from 1 to 100000000 (got \"1000000000000000000\")");
  // A long field is quoted cut, with its length.
  const std::string e = trace_error("0,100," + std::string(100000, '9') + "x\n");
  EXPECT_LT(e.size(), 250u) << e;
  EXPECT_NE(e.find("output_tokens must be an integer from 1 to 100000000 (got \"999"), std::string::npos) << e;
  const std::string h = trace_error(std::string(50000, 'a') + ",input_tokens,output_tokens\n0,1,1\n");
  EXPECT_LT(h.size(), 300u) << h;
  EXPECT_NE(h.find("unknown column \"aaa"), std::string::npos) << h;
}

TEST(TraceCsvBounds, ByteOrderMarkIsSkipped) {
  const auto with_header = sim::parse_trace_csv(
      "\xEF\xBB\xBF"
      "arrival_s,input_tokens,output_tokens\n0.5,100,10\n",
      "t.csv");
  ASSERT_EQ(with_header.size(), 1u);
  EXPECT_EQ(with_header[0].input_tokens, 100);
  const auto bare = sim::parse_trace_csv(
      "\xEF\xBB\xBF"
      "0.5,100,10\n",
      "t.csv");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_DOUBLE_EQ(bare[0].arrival_s, 0.5);
}

// A number beyond a double is an error naming the file, of the kind the loader reports (a bad
// calibration file is then reported and ignored by the CLI, as any other bad calibration).
TEST(JsonBounds, NumberOutOfRangeNamesTheFile) {
  try {
    parse_calibration(R"({"schema": "perfloom-calibration/1", "sm_count": 1e400})", "cal.json");
    ADD_FAILURE() << "no error";
  } catch (const CalibrationError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cal.json: ", 0), 0u) << m;
    EXPECT_NE(m.find("a number out of range"), std::string::npos) << m;
    EXPECT_NE(m.find("1e400"), std::string::npos) << m;
  }
}

// A launch beyond what CUDA can launch is not read: its grid would overflow the models' counts.
TEST(ShapeBounds, LaunchBeyondCudaLimitsIsNotRead) {
  LaunchArgs huge{{LaunchArgs::kMaxGridX, 65535, 65535}, {1024, 1, 1}, 32, 0};
  EXPECT_TRUE(huge.known());
  EXPECT_EQ(huge.ctas(), LaunchArgs::kMaxGridX * 65535 * 65535);
  for (LaunchArgs bad :
       {LaunchArgs{{int64_t(1) << 40, 1, 1}, {128, 1, 1}, 32, 0}, LaunchArgs{{1, 1 << 20, 1 << 20}, {128, 1, 1}, 32, 0},
        LaunchArgs{{64, 1, 1}, {1024, 2, 1}, 32, 0}, LaunchArgs{{64, 1, 1}, {32, 1, 128}, 32, 0}})
    EXPECT_FALSE(bad.known());
  const LaunchArgs absurd{{int64_t(1) << 40, int64_t(1) << 40, int64_t(1) << 40}, {1 << 20, 1 << 20, 1 << 20}, 32, 0};
  EXPECT_EQ(absurd.ctas(), std::numeric_limits<int64_t>::max());  // saturated, not wrapped
  KernelDesc k;
  k.op = Op::unknown;
  k.launch = absurd;
  const Analysis a = analyze_kernel(k, h100());
  EXPECT_TRUE(std::isfinite(a.plan.ctas));
}
