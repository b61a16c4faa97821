// The communication model's measured NCCL curves and their transfer (families/communication/nccl_model.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/families/communication/nccl_model.h"
#include "model/gpu_database.h"
#include "model/predictor.h"

using namespace perfloom;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

Prediction predict_collective(Op op, int64_t bytes, int64_t ranks, const std::string& gpu) {
  KernelDesc k;
  k.op = op;
  k.dtype = Dtype::bf16;
  k.shape.bytes = bytes;
  k.shape.ranks = ranks;
  return predict_roofline(k, db().get(gpu));
}

const char* kSmallTable =
    "# perfloom-collectives/1\n# gpu=h200\n# link_gb_s=900\nop,ranks,bytes,median_us\n"
    "allreduce,2,1024,10\nallreduce,2,4096,20\nallreduce,2,1048576,100\n";

}  // namespace

TEST(NcclModel, OnTheMeasuredSystemTheEstimateIsTheMeasurement) {
  // resources/comm/h200.csv: all-reduce of 64 MiB on 2 H200s took 250.675 us (graph replay).
  const Prediction p = predict_collective(Op::allreduce, 64 << 20, 2, "h200");
  EXPECT_NEAR(p.pred_us, 250.675, 1e-6);
  EXPECT_EQ(p.method, "NCCL measured on h200 x2");
  EXPECT_LE(p.ceiling_us, p.pred_us);
  EXPECT_LE(p.lo_us, p.pred_us);
  EXPECT_GE(p.hi_us, p.pred_us);
}

TEST(NcclModel, InterpolatesInLogLogBetweenMeasuredSizes) {
  const auto curves = parse_collective_curves(kSmallTable, "t.csv");
  ASSERT_EQ(curves.size(), 1u);
  EXPECT_DOUBLE_EQ(curves[0].at(1024), 10);
  EXPECT_NEAR(curves[0].at(2048), std::sqrt(10.0 * 20.0), 1e-9);  // halfway in log(bytes)
  EXPECT_DOUBLE_EQ(curves[0].at(1 << 30), 100);                   // clamped; the model extends it
}

TEST(NcclModel, MoreRanksAndSlowerLinksCostMore) {
  const double x2 = predict_collective(Op::allreduce, 256 << 20, 2, "h200").pred_us;
  const double x4 = predict_collective(Op::allreduce, 256 << 20, 4, "h200").pred_us;
  const double x8 = predict_collective(Op::allreduce, 256 << 20, 8, "h200").pred_us;
  EXPECT_LT(x2, x4);
  EXPECT_LT(x4, x8);
  const auto x8_method = predict_collective(Op::allreduce, 256 << 20, 8, "h200").method;
  EXPECT_NE(x8_method.find("scaled by the NCCL model"), std::string::npos) << x8_method;
  // A100 NVLink (600 GB/s) is slower than H200's (900 GB/s) for a bandwidth-bound message.
  EXPECT_GT(predict_collective(Op::allreduce, 256 << 20, 4, "a100-sxm-80gb").pred_us, x4 * 1.3);
  // Over PCIe no NVLink curve applies: the model alone.
  EXPECT_EQ(predict_collective(Op::allreduce, 1 << 20, 2, "l40s").method, "NCCL model");
}

TEST(NcclModel, ReduceScatterUsesTheAllGatherCurve) {
  const auto rs = predict_collective(Op::reducescatter, 64 << 20, 4, "h200");
  EXPECT_NE(rs.method.find("h200 x4"), std::string::npos) << rs.method;
  EXPECT_GT(rs.pred_us, 0);
}

TEST(NcclModel, BadTablesAreRefusedWithFileLineAndReason) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      parse_collective_curves(text, "comm/bad.csv");
      FAIL() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("comm/bad.csv"), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  const std::string head = "# gpu=h200\n# link_gb_s=900\nop,ranks,bytes,median_us\n";
  expect_error(head + "gemm,2,1024,10\n", "line 4: 'gemm' is not a collective");
  expect_error(head + "allreduce,1,1024,10\n", "ranks >= 2");
  expect_error(head + "allreduce,2,4096,10\nallreduce,2,1024,5\n", "line 5: bytes must increase");
  expect_error(head + "allreduce,2,abc,10\n", "must be numbers");
  expect_error("# link_gb_s=900\nop,ranks,bytes,median_us\nallreduce,2,1024,10\n", "no '# gpu=' line");
  expect_error("# gpu=h200\n# link_gb_s=900\nop,bytes\n", "line 3: expected the header");
}
