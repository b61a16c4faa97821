// The what-if's rules (model/whatif_rules.h) on numbers that can be checked by hand from the GPU
// files: H100 SXM 132 SMs x 1830 MHz x 4096 bf16 FLOPs per SM per clock, 3350 GB/s; A100 SXM 80GB
// 108 SMs x 1410 MHz x 2048, 2039 GB/s, no fp8; H200 as the H100 with 4800 GB/s.
#include <gtest/gtest.h>

#include "model/gpu_database.h"
#include "model/whatif_rules.h"

using namespace perfloom;

namespace {

class WhatIfRulesTest : public ::testing::Test {
 protected:
  GpuDatabase db_ = GpuDatabase::builtin();
  const GpuSpec& h100_ = db_.get("h100-sxm");
  const GpuSpec& h200_ = db_.get("h200");
  const GpuSpec& a100_ = db_.get("a100-sxm-80gb");

  static WhatIfKernel kernel(Op op, Family family, std::optional<double> measured_us, bool dtype_known = true,
                             Dtype dtype = Dtype::bf16) {
    WhatIfKernel k;
    k.desc.op = op;
    k.desc.dtype = dtype;
    k.family = family;
    k.dtype_known = dtype_known;
    k.shape_known = op != Op::unknown;
    k.measured_us = measured_us;
    return k;
  }
  static WhatIfPrediction predicted(double pred_us, double lo_us, double hi_us, double ceiling_us = 1) {
    return {pred_us, lo_us, hi_us, ceiling_us, "tensor", ""};
  }
  static WhatIfPrediction unpredictable(const std::string& why) { return {0, 0, 0, 0, "", why}; }
};

TEST_F(WhatIfRulesTest, MethodNamesAndTheFamilyRule) {
  EXPECT_EQ(whatif_method_name(WhatIfMethod::measured), "measured");
  EXPECT_EQ(whatif_method_name(WhatIfMethod::scaled), "scaled");
  EXPECT_EQ(whatif_method_name(WhatIfMethod::model), "model");
  EXPECT_EQ(whatif_method_name(WhatIfMethod::scaled_spec), "scaled-spec");
  EXPECT_EQ(whatif_method_name(WhatIfMethod::error), "error");
  for (Family f : {Family::gemm, Family::attention, Family::norm, Family::elementwise, Family::moe,
                   Family::communication, Family::unknown})
    EXPECT_EQ(whatif_family_rule(f), WhatIfMethod::scaled) << family_name(f);
}

TEST_F(WhatIfRulesTest, SpecRatiosAreDatasheetFiguresSourceOverTarget) {
  // Dense bf16 peaks: 4096 x 132 x 1830e6 = 989.4 TFLOP/s against 2048 x 108 x 1410e6 = 311.9.
  const double h100_bf16 = 4096.0 * 132 * 1830e6, a100_bf16 = 2048.0 * 108 * 1410e6;
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::gemm, Dtype::bf16, h100_, a100_), h100_bf16 / a100_bf16);
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::attention, Dtype::bf16, a100_, h100_), a100_bf16 / h100_bf16);
  // Dtype unknown: bf16.
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::moe, std::nullopt, h100_, a100_), h100_bf16 / a100_bf16);
  // Memory kernels by DRAM bandwidth; collectives unscaled.
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::norm, Dtype::bf16, h100_, h200_), 3350.0 / 4800.0);
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::unknown, std::nullopt, h100_, a100_), 3350.0 / 2039.0);
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::communication, Dtype::bf16, h100_, a100_), 1.0);
  // No fp8 tensor cores on the A100: no figure to scale by.
  EXPECT_FALSE(whatif_spec_ratio(Family::gemm, Dtype::fp8e4m3, h100_, a100_).has_value());
}

TEST_F(WhatIfRulesTest, MeasuredOnTheSourceScaledElsewhere) {
  const WhatIfKernel k = kernel(Op::gemm, Family::gemm, 100.0);
  const WhatIfPrediction on_h100 = predicted(50, 40, 60, 45), on_h200 = predicted(30, 20, 40, 25);
  // On the source GPU: the measurement, with the model's ceiling and bound alongside.
  const WhatIfCell same = whatif_cell(k, h100_, h100_, on_h100, &on_h100);
  EXPECT_EQ(same.method, WhatIfMethod::measured);
  EXPECT_DOUBLE_EQ(same.pred_us, 100.0);
  EXPECT_DOUBLE_EQ(*same.ceiling_us, 45.0);
  EXPECT_EQ(same.bound, "tensor");
  // Elsewhere: measured x target / source = 100 x 30 / 50, the interval by the same factor 2.
  const WhatIfCell scaled = whatif_cell(k, h100_, h200_, on_h200, &on_h100);
  EXPECT_EQ(scaled.method, WhatIfMethod::scaled);
  EXPECT_DOUBLE_EQ(scaled.pred_us, 60.0);
  EXPECT_DOUBLE_EQ(*scaled.lo_us, 40.0);
  EXPECT_DOUBLE_EQ(*scaled.hi_us, 80.0);
  EXPECT_DOUBLE_EQ(*scaled.ceiling_us, 25.0);  // the ceiling is the target's own, never scaled
}

TEST_F(WhatIfRulesTest, ModelWithoutAMeasurementOrASourcePrediction) {
  const WhatIfPrediction on_h200 = predicted(30, 20, 40);
  const WhatIfCell unmeasured =
      whatif_cell(kernel(Op::gemm, Family::gemm, std::nullopt), h100_, h200_, on_h200, nullptr);
  EXPECT_EQ(unmeasured.method, WhatIfMethod::model);
  EXPECT_DOUBLE_EQ(unmeasured.pred_us, 30.0);
  EXPECT_DOUBLE_EQ(*unmeasured.lo_us, 20.0);
  EXPECT_DOUBLE_EQ(*unmeasured.hi_us, 40.0);
  // Measured, but the source prediction failed: nothing to scale by, the direct prediction.
  const WhatIfPrediction failed = unpredictable("no shape");
  const WhatIfCell no_source = whatif_cell(kernel(Op::gemm, Family::gemm, 100.0), h100_, h200_, on_h200, &failed);
  EXPECT_EQ(no_source.method, WhatIfMethod::model);
  EXPECT_DOUBLE_EQ(no_source.pred_us, 30.0);
}

TEST_F(WhatIfRulesTest, SpecScalingForKernelsTheModelCannotAnalyse) {
  // An unknown kernel with a measurement: the DRAM bandwidth ratio; the interval from the bandwidth
  // ratio (memory-bound) to the same time (the H100 and H200 share peak and clock: compute- or
  // latency-bound).
  const WhatIfKernel unknown = kernel(Op::unknown, Family::unknown, 48.0, false);
  const WhatIfPrediction on_h200 = predicted(10, 9, 11);
  const WhatIfCell c = whatif_cell(unknown, h100_, h200_, on_h200, &on_h200);
  EXPECT_EQ(c.method, WhatIfMethod::scaled_spec);
  EXPECT_DOUBLE_EQ(c.pred_us, 48.0 * 3350.0 / 4800.0);  // 33.5 us
  ASSERT_TRUE(c.lo_us && c.hi_us);
  EXPECT_DOUBLE_EQ(*c.lo_us, 48.0 * 3350.0 / 4800.0);
  EXPECT_DOUBLE_EQ(*c.hi_us, 48.0);
  // A GEMM whose shape the model lacks, measured on the H100, on the A100: the bf16 peaks' ratio.
  const WhatIfKernel gemm = kernel(Op::gemm, Family::gemm, 10.0);
  const WhatIfPrediction none = unpredictable("the trace has no shape for it");
  const WhatIfCell g = whatif_cell(gemm, h100_, a100_, none, &none);
  EXPECT_EQ(g.method, WhatIfMethod::scaled_spec);
  EXPECT_DOUBLE_EQ(g.pred_us, 10.0 * (4096.0 * 132 * 1830e6) / (2048.0 * 108 * 1410e6));  // 31.7 us
  // Between the clock ratio (latency-bound: 13.0 us) and the tensor peaks' (compute-bound: 31.7 us);
  // the bandwidth ratio (3350 / 2039: 16.4 us) lies inside.
  ASSERT_TRUE(g.lo_us && g.hi_us);
  EXPECT_DOUBLE_EQ(*g.lo_us, 10.0 * 1830.0 / 1410.0);
  EXPECT_DOUBLE_EQ(*g.hi_us, g.pred_us);
  EXPECT_FALSE(g.ceiling_us.has_value());
  // Without a measurement there is nothing to scale: the model's reason.
  const WhatIfCell e = whatif_cell(kernel(Op::gemm, Family::gemm, std::nullopt), h100_, a100_, none, &none);
  EXPECT_EQ(e.method, WhatIfMethod::error);
  EXPECT_EQ(e.error, "the trace has no shape for it");
}

TEST_F(WhatIfRulesTest, AnFp8KernelOnAmpereIsAnErrorNotAGuess) {
  const WhatIfKernel k = kernel(Op::gemm, Family::gemm, 20.0, true, Dtype::fp8e4m3);
  const WhatIfPrediction on_h100 = predicted(15, 12, 18);
  // Even where a model gave a number.
  const WhatIfCell c = whatif_cell(k, h100_, a100_, predicted(5, 4, 6), &on_h100);
  EXPECT_EQ(c.method, WhatIfMethod::error);
  EXPECT_EQ(c.error, "a100-sxm-80gb does not support fp8e4m3");
  const WhatIfCell reason = whatif_cell(k, h100_, a100_, unpredictable("fp8 needs Ada or newer"), &on_h100);
  EXPECT_EQ(reason.error, "fp8 needs Ada or newer");  // the model's own reason where it gives one
}

TEST_F(WhatIfRulesTest, MemoryKernelWithALaunchGrid) {
  WhatIfKernel k = kernel(Op::rmsnorm, Family::norm, 12.0);
  // Without a grid the rule does not apply; a GEMM never.
  EXPECT_FALSE(whatif_memory_kernel_us(k, 12.0, h100_, h200_).has_value());
  k.desc.launch = LaunchArgs{{4096, 1, 1}, {256, 1, 1}, 32, 0};
  EXPECT_FALSE(whatif_memory_kernel_us(kernel(Op::gemm, Family::gemm, 12.0), 12.0, h100_, h200_).has_value());
  // On the same GPU the time is kept exactly: floor + (12 - floor) x 1.
  EXPECT_DOUBLE_EQ(*whatif_memory_kernel_us(k, 12.0, h100_, h100_), 12.0);
  // H100 -> H200: the same latency, more bandwidth: no slower, and at most the bandwidth ratio faster.
  const double on_h200 = *whatif_memory_kernel_us(k, 12.0, h100_, h200_);
  EXPECT_LE(on_h200, 12.0 + 1e-9);
  EXPECT_GE(on_h200, 12.0 * 3350.0 / 4800.0 - 1e-9);
  // The cell takes it where the model cannot analyse the kernel.
  const WhatIfCell c = whatif_cell(k, h100_, h200_, unpredictable("no shape"), nullptr);
  EXPECT_EQ(c.method, WhatIfMethod::scaled_spec);
  EXPECT_DOUBLE_EQ(c.pred_us, on_h200);
}

}  // namespace
