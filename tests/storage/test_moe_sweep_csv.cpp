// The fused-MoE sweep reader (storage/collector_csv.h, visit_moe_sweeps): one training kernel
// per layer, the fastest gate-up plus the fastest down configuration, and the rows it cannot use
// skipped with their reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "storage/collector_csv.h"

namespace perfloom::storage {
namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

class MoeSweepCsv : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("perfloom_moe_sweep_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::filesystem::path dir_;
};

constexpr const char* kHeader =
    "# format=perfloom-moe-sweep/1\n# gpu=NVIDIA H200\n# sm_count=132\n"
    "model,E,topk,H,I,N,K,tokens,dtype,kernel,BLOCK_SIZE_M,BLOCK_SIZE_N,BLOCK_SIZE_K,GROUP_SIZE_M,num_warps,"
    "num_stages,engine_default,time_us,min_us,reps,active_experts,padded_rows,method,status\n";

std::string row(const std::string& model, int T, const std::string& dtype, const std::string& kernel, double us,
                const std::string& status = "ok") {
  return model + ",128,8,2048,768,1536,2048," + std::to_string(T) + "," + dtype + "," + kernel +
         ",16,64,64,1,4,3,0," + std::to_string(us) + "," + std::to_string(us) + ",10,100,2048,events," + status +
         "\n";
}

TEST_F(MoeSweepCsv, OneKernelPerLayerFromTheFastestConfigurations) {
  std::string text = kHeader;
  // Layer 1 (bf16, 64 tokens): gate-up timed at 3 configurations, down at 2.
  text += row("qwen3-30b-a3b", 64, "bf16", "gate_up", 30) + row("qwen3-30b-a3b", 64, "bf16", "gate_up", 20) +
          row("qwen3-30b-a3b", 64, "bf16", "gate_up", 25, "capped") + row("qwen3-30b-a3b", 64, "bf16", "down", 12) +
          row("qwen3-30b-a3b", 64, "bf16", "down", 10);
  // Layer 2 (fp8, 64 tokens).
  text += row("qwen3-30b-a3b", 64, "fp8", "gate_up", 15) + row("qwen3-30b-a3b", 64, "fp8", "down", 8);
  // Rows that do not make a layer: a failed compile, block-scaled fp8, the routing kernel, and a
  // layer whose down GEMM was never timed.
  text += row("qwen3-30b-a3b", 64, "bf16", "gate_up", 1, "compile_failed") +
          row("deepseek-v3", 64, "fp8_block", "gate_up", 9) + row("qwen3-30b-a3b", 64, "bf16", "route", 3) +
          row("qwen3-30b-a3b", 256, "bf16", "gate_up", 40);
  text += "# complete=1 elapsed_s=12\n";
  std::vector<MeasuredKernel> got;
  std::vector<DatasetLoadReport> reports;
  visit_moe_sweeps({write("sweep.csv", text)}, db(), [&](MeasuredKernel&& m) { got.push_back(std::move(m)); },
                   &reports);
  ASSERT_EQ(reports.size(), 1u);
  DatasetLoadReport& rep = reports[0];
  ASSERT_EQ(got.size(), 2u);
  const MeasuredKernel& bf16 = got[0].kernel.dtype == Dtype::bf16 ? got[0] : got[1];
  const MeasuredKernel& fp8 = got[0].kernel.dtype == Dtype::bf16 ? got[1] : got[0];
  EXPECT_EQ(bf16.kernel.op, Op::moe);
  EXPECT_EQ(bf16.kernel.shape.T, 64);
  EXPECT_EQ(bf16.kernel.shape.E, 128);
  EXPECT_EQ(bf16.kernel.shape.topk, 8);
  EXPECT_EQ(bf16.kernel.shape.H, 2048);
  EXPECT_EQ(bf16.kernel.shape.I, 768);
  EXPECT_DOUBLE_EQ(bf16.latency_us, 20.0 + 10.0);
  EXPECT_EQ(bf16.gpu_id, "h200");
  EXPECT_EQ(bf16.dataset, "collector/h200/moe");
  EXPECT_NE(bf16.note.find("configs=3+2"), std::string::npos) << bf16.note;
  EXPECT_EQ(fp8.kernel.dtype, Dtype::fp8e4m3);
  EXPECT_DOUBLE_EQ(fp8.latency_us, 15.0 + 8.0);
  EXPECT_EQ(rep.rows, 11u);
  EXPECT_EQ(rep.kept, 2u);
  EXPECT_EQ(rep.skip_counts["status compile_failed"], 1u);
  EXPECT_EQ(rep.skip_counts["dtype fp8_block has no kernel description"], 1u);
  EXPECT_EQ(rep.skip_counts["kernel route is not one of the fused GEMMs (gate_up, down)"], 1u);
  EXPECT_EQ(rep.skip_counts["layer without both GEMMs timed"], 1u);
}

TEST_F(MoeSweepCsv, BadRowsAreSkippedWithTheReasonAndBadFilesRefusedByName) {
  std::string text = kHeader;
  text += row("m", 0, "bf16", "gate_up", 5) + row("m", 8, "bf16", "gate_up", -1) +
          "m,128,8,2048,x,1536,2048,8,bf16,down,16,64,64,1,4,3,0,5,5,10,100,2048,events,ok\n";
  std::vector<MeasuredKernel> got;
  std::vector<DatasetLoadReport> reports;
  visit_moe_sweeps({write("bad_rows.csv", text)}, db(), [&](MeasuredKernel&& m) { got.push_back(std::move(m)); },
                   &reports);
  ASSERT_EQ(reports.size(), 1u);
  DatasetLoadReport& rep = reports[0];
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(rep.skipped, 3u);
  ASSERT_FALSE(rep.skip_reasons.empty());
  EXPECT_NE(rep.skip_reasons[0].find("line 5"), std::string::npos) << rep.skip_reasons[0];
  EXPECT_EQ(rep.skip_counts["time_us is not a positive number of at most 1e12 us"], 1u);
  EXPECT_EQ(rep.skip_counts["bad I"], 1u);

  auto refused = [&](const std::string& name, const std::string& body, const std::string& reason) {
    const auto p = write(name, body);
    try {
      visit_moe_sweeps({p}, db(), [](MeasuredKernel&&) {});
      ADD_FAILURE() << name << " was read";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused("not_a_sweep.csv", "# format=perfloom-collector/1\n", "not a fused-MoE sweep");
  refused("unknown_gpu.csv", "# format=perfloom-moe-sweep/1\n# gpu=NVIDIA Z9000\nmodel\n", "Z9000");
  refused("no_time.csv", "# format=perfloom-moe-sweep/1\n# gpu=NVIDIA H200\nmodel,E,topk,H,I,tokens,dtype,kernel,status\n",
          "time_us");
}

// A re-run of a sweep: its layers join the first run's, at the fastest time of either.
TEST_F(MoeSweepCsv, ALayerTimedByTwoSweepsIsOneKernelAtItsFastest) {
  const auto a = write("a.csv", std::string(kHeader) + row("m", 8, "bf16", "gate_up", 5) + row("m", 8, "bf16", "down", 4));
  const auto b = write("b.csv", std::string(kHeader) + row("m", 8, "bf16", "gate_up", 6) + row("m", 8, "bf16", "down", 3) +
                                    row("m", 16, "bf16", "gate_up", 7) + row("m", 16, "bf16", "down", 5));
  std::vector<MeasuredKernel> got;
  std::vector<DatasetLoadReport> reports;
  visit_moe_sweeps({a, b}, db(), [&](MeasuredKernel&& m) { got.push_back(std::move(m)); }, &reports);
  ASSERT_EQ(got.size(), 2u);
  const MeasuredKernel& t8 = got[0].kernel.shape.T == 8 ? got[0] : got[1];
  EXPECT_DOUBLE_EQ(t8.latency_us, 5.0 + 3.0);
  EXPECT_NE(t8.note.find("configs=2+2"), std::string::npos) << t8.note;
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].kept, 1u);  // the T = 8 layer, first seen in a.csv
  EXPECT_EQ(reports[1].kept, 1u);
}

// The training folder reads sweeps beside the collector CSVs, by content.
TEST_F(MoeSweepCsv, TheCollectorFolderReadsSweepsByContent) {
  std::filesystem::create_directories(dir_ / "moe-h200");
  write("moe-h200/layers.txt", std::string(kHeader) + row("m", 8, "bf16", "gate_up", 5) + row("m", 8, "bf16", "down", 4));
  std::vector<MeasuredKernel> got;
  std::vector<DatasetLoadReport> reports;
  visit_collector_folder(dir_, db(), [&](MeasuredKernel&& m) { got.push_back(std::move(m)); }, &reports);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_DOUBLE_EQ(got[0].latency_us, 9.0);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kept, 1u);
}

}  // namespace
}  // namespace perfloom::storage
