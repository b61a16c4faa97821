// Where a kernel's time goes (model/bottleneck.h), on numbers that can be checked by hand: the H100
// SXM runs at 1830 MHz with 132 SMs of 4096 dense bf16 FLOPs per clock (gpus/h100-sxm.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/analysis.h"
#include "model/bottleneck.h"
#include "model/gpu_database.h"

using namespace perfloom;

namespace {

constexpr double kH100Hz = 1830e6;

TEST(Bottleneck, FormatsDurationsAsTheSentenceWritesThem) {
  EXPECT_EQ(format_duration_us(2.3456), "2.35 µs");
  EXPECT_EQ(format_duration_us(143.26), "143.3 µs");
  EXPECT_EQ(format_duration_us(1234.0), "1.234 ms");
  EXPECT_EQ(format_duration_us(2e6), "2.000 s");
}

// A prediction made by hand: every figure of the result follows from it and the clock.
TEST(Bottleneck, PipeTimesSharesCeilingAndHeadroomFromAPrediction) {
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& h100 = db.get("h100-sxm");
  KernelDesc k;
  k.op = Op::gemm;
  Prediction p;
  p.pred_us = 2000;
  p.lo_us = 1800;
  p.hi_us = 2400;
  p.ceiling_us = 1500;
  p.bound = Pipe::tensor;
  Analysis& a = p.analysis;
  a.cycles_busiest[static_cast<int>(Pipe::tensor)] = 1000e-6 * kH100Hz;  // 1000 us
  a.cycles_busiest[static_cast<int>(Pipe::dram)] = 500e-6 * kH100Hz;     // 500 us
  a.cycles_busiest[static_cast<int>(Pipe::launch)] = 2e-6 * kH100Hz;     // 2 us
  a.ceiling_cycles_by_pipe[static_cast<int>(Pipe::tensor)] = 1000e-6 * kH100Hz;
  a.ceiling_cycles_by_pipe[static_cast<int>(Pipe::dram)] = 1500e-6 * kH100Hz;  // the ceiling's pipe
  a.plan.ctas = 198;
  a.plan.waves = 2;
  a.plan.last_wave_fill = 0.5;
  a.tile = TileConfig{128, 256, 64};
  a.tile_origin = "given";

  const Bottleneck b = bottleneck_of(k, h100, p);
  ASSERT_EQ(b.pipes.size(), static_cast<std::size_t>(kPipeCount));
  for (int i = 0; i < kPipeCount; ++i) {
    EXPECT_EQ(b.pipes[i].pipe, static_cast<Pipe>(i));
    EXPECT_EQ(b.pipes[i].name, pipe_name(static_cast<Pipe>(i)));
  }
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::tensor)].busy_us, 1000);
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::tensor)].share, 0.5);  // of the 2000 us predicted
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::dram)].busy_us, 500);
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::dram)].share, 0.25);
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::launch)].busy_us, 2);
  EXPECT_DOUBLE_EQ(b.pipes[static_cast<int>(Pipe::fma)].busy_us, 0);
  EXPECT_DOUBLE_EQ(b.ceiling_us, 1500);
  EXPECT_EQ(b.ceiling_pipe, Pipe::dram);
  EXPECT_DOUBLE_EQ(b.ceiling_share, 0.75);
  EXPECT_EQ(b.bound, Pipe::tensor);
  EXPECT_DOUBLE_EQ(b.pred_us, 2000);
  EXPECT_DOUBLE_EQ(b.lo_us, 1800);
  EXPECT_DOUBLE_EQ(b.hi_us, 2400);
  // Half of the second wave's slots idle: 50% of one wave in two, 25% of the SM time.
  EXPECT_EQ(b.headroom,
            "On NVIDIA H100 SXM5 80GB this gemm reaches 75% of its dram ceiling (ceiling 1.500 ms, predicted 2.000 ms, "
            "80% interval 1.800 ms–2.400 ms); 198 CTAs run in 2 waves, the last wave is 50% full, so tile "
            "quantisation idles 25% of the SM time (tile 128×256×64, given).");

  a.plan.ctas = 132;
  a.plan.waves = 1;
  a.plan.last_wave_fill = 1;
  a.tile.reset();
  EXPECT_NE(bottleneck_of(k, h100, p).headroom.find("; 132 CTAs run in 1 wave, all full."), std::string::npos);
  // Nothing predicted: no shares rather than a division by zero.
  p.pred_us = 0;
  const Bottleneck zero = bottleneck_of(k, h100, p);
  EXPECT_DOUBLE_EQ(zero.ceiling_share, 0);
  EXPECT_DOUBLE_EQ(zero.pipes[static_cast<int>(Pipe::tensor)].share, 0);
}

// The analysis's own numbers for a GEMM of 2 x 4096^3 = 137.4 GFLOP: its tensor pipe on the busiest
// SM does that times the SM's share of the CTAs at 4096 FLOPs per clock, and the ceiling is those
// FLOPs at the dense peak of 4096 x 132 x 1830 MHz = 989.4 TFLOP/s, 138.9 us, plus the launch floor
// every kernel pays (kDatasheetLaunchFloorUs, 1 us): 139.9 us.
TEST(Bottleneck, AnH100GemmFromTheRooflinePredictor) {
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& h100 = db.get("h100-sxm");
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = Dtype::bf16;
  k.shape.M = k.shape.N = k.shape.K = 4096;
  const Prediction p = RooflinePredictor().predict(k, h100);
  const Bottleneck b = bottleneck_of(k, h100, p);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const CtaPlan& plan = p.analysis.plan;
  const double busiest_share = std::ceil(plan.ctas / 132) / plan.ctas;
  const double tensor_us = flops * busiest_share / 4096 / kH100Hz * 1e6;
  EXPECT_NEAR(b.pipes[static_cast<int>(Pipe::tensor)].busy_us, tensor_us, 1e-6 * tensor_us);
  const double floor_us = std::min(kDatasheetLaunchFloorUs, hardware_rates(h100, Dtype::bf16).achievable.launch_floor_us);
  EXPECT_NEAR(b.ceiling_us, flops / (4096.0 * 132 * kH100Hz) * 1e6 + floor_us, 1e-9);  // 139.7 us
  EXPECT_EQ(b.ceiling_pipe, Pipe::tensor);
  EXPECT_EQ(b.bound, Pipe::tensor);
  // The tensor pipe is the busiest, and the prediction above the ceiling.
  for (const PipeBusy& pipe : b.pipes) EXPECT_LE(pipe.busy_us, b.pipes[static_cast<int>(Pipe::tensor)].busy_us);
  EXPECT_GT(b.pred_us, b.ceiling_us);
  EXPECT_DOUBLE_EQ(b.ceiling_share, b.ceiling_us / b.pred_us);
  EXPECT_NE(b.headroom.find("On NVIDIA H100 SXM5 80GB this gemm reaches "), std::string::npos) << b.headroom;
  EXPECT_NE(b.headroom.find("% of its tensor ceiling (ceiling 13"), std::string::npos) << b.headroom;
}

}  // namespace
