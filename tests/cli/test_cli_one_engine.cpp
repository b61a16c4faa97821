// One engine behind both faces, end to end: the real binary's `predict --kernels --json`,
// `export-chart bottleneck` and `predict --trace --json` give the numbers of the model's own
// functions (model/bottleneck.h, storage::run_trace_whatif over model/whatif_rules.h), called here
// in-process on the same models. The GUI's views call the same functions (tests/ui).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/bottleneck.h"
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "run_process.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"
#include "temp_path.h"

using namespace perfloom;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;
// The binary and this process read the same models.
const std::string kResources = (kSrc / "resources").string();
const std::string kEnv = "PERFLOOM_RESOURCES=" + kResources;
const std::string kSpec = "gemm:bf16:M=4096,N=4096,K=4096";

fs::path fresh(const std::string& name) { return fresh_temp_path("perfloom-cli-one-engine", name); }

bool close(double a, double b, double rel = 1e-5) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

class OneEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("PERFLOOM_RESOURCES", kResources.c_str(), 1);
    std::string warning;
    predictor_ = make_default_predictor(&warning);
    ASSERT_TRUE(warning.empty()) << warning;
    ASSERT_TRUE(predictor_->is_learned());
  }
  static void TearDownTestSuite() { predictor_.reset(); }
  static KernelDesc gemm4096() {
    KernelDesc k;
    k.op = Op::gemm;
    k.dtype = Dtype::bf16;
    k.shape.M = k.shape.N = k.shape.K = 4096;
    return k;
  }
  static std::shared_ptr<const KernelPredictor> predictor_;
  GpuDatabase gpus_ = GpuDatabase::builtin();
};
std::shared_ptr<const KernelPredictor> OneEngine::predictor_;

TEST_F(OneEngine, PredictJsonCarriesTheModelsBottleneck) {
  const fs::path in = fresh("kernels.csv");
  std::ofstream(in) << "op,dtype,M,N,K\ngemm,bf16,4096,4096,4096\n";
  auto r = runPerfloom(
      "predict --json --kernels " + in.string() + " --gpu h100-sxm,a100-sxm-80gb --db " + fresh("p.db").string(), kEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["predictions"].size(), 2u);
  for (const json& row : doc["predictions"]) {
    const GpuSpec& gpu = gpus_.get(row["gpu"].get<std::string>());
    const Prediction p = predictor_->predict(gemm4096(), gpu);
    const Bottleneck b = bottleneck_of(gemm4096(), gpu, p);
    // The fields that were there before keep their meaning.
    EXPECT_TRUE(close(row["pred_us"].get<double>(), p.pred_us)) << row.dump();
    EXPECT_TRUE(close(row["ceiling_us"].get<double>(), b.ceiling_us)) << row.dump();
    EXPECT_EQ(row["bound"], std::string(pipe_name(b.bound)));
    // The bottleneck's, exactly: every pipe in order, the ceiling's pipe and share, the sentence.
    ASSERT_EQ(row["pipes"].size(), b.pipes.size()) << row.dump();
    for (std::size_t i = 0; i < b.pipes.size(); ++i) {
      EXPECT_EQ(row["pipes"][i]["name"], b.pipes[i].name);
      EXPECT_DOUBLE_EQ(row["pipes"][i]["busy_us"].get<double>(), b.pipes[i].busy_us) << b.pipes[i].name;
      EXPECT_DOUBLE_EQ(row["pipes"][i]["share"].get<double>(), b.pipes[i].share) << b.pipes[i].name;
    }
    EXPECT_GT(row["pipes"][static_cast<int>(Pipe::tensor)]["busy_us"].get<double>(), 0);
    EXPECT_EQ(row["ceiling_pipe"], "tensor");
    EXPECT_DOUBLE_EQ(row["ceiling_share"].get<double>(), b.ceiling_share);
    EXPECT_EQ(row["headroom"], b.headroom);
    EXPECT_NE(b.headroom.find("On " + gpu.name + " this gemm reaches "), std::string::npos) << b.headroom;
  }
}

TEST_F(OneEngine, ARowWithoutAPredictionHasNullBottleneckFields) {
  const fs::path in = fresh("fp8.csv");
  std::ofstream(in) << "op,dtype,M,N,K\ngemm,fp8,4096,4096,4096\n";
  auto r = runPerfloom(
      "predict --json --kernels " + in.string() + " --gpu a100-sxm-80gb --db " + fresh("f.db").string(), kEnv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const json row = json::parse(r.out)["predictions"].at(0);
  EXPECT_FALSE(row["error"].get<std::string>().empty());
  for (const char* c : {"pred_us", "pipes", "ceiling_pipe", "ceiling_share", "headroom"})
    EXPECT_TRUE(row[c].is_null()) << c;
}

TEST_F(OneEngine, ExportChartPrintsTheSameHeadroomAsPredictJson) {
  const fs::path png = fresh("b.png");
  auto chart =
      runPerfloom("export-chart bottleneck --gpu h100-sxm,h200 --kernel " + kSpec + " --out " + png.string(), kEnv);
  ASSERT_EQ(chart.exit_code, 0) << chart.err;
  EXPECT_TRUE(fs::file_size(png) > 1000);
  for (const char* id : {"h100-sxm", "h200"}) {
    const GpuSpec& gpu = gpus_.get(id);
    const std::string headroom = bottleneck_of(gemm4096(), gpu, predictor_->predict(gemm4096(), gpu)).headroom;
    EXPECT_NE(chart.err.find(headroom + "\n"), std::string::npos) << headroom << "\n---\n" << chart.err;
  }
}

// The trace what-if: every kernel row of `predict --trace --json` is the store's cell, which the GUI
// shows (tests/ui/test_whatif_view.cpp compares the view with run_trace_whatif).
TEST_F(OneEngine, PredictTraceJsonIsTheStoresWhatIf) {
  const std::string trace = (kSrc / "data/h100-sxm/trace.json.gz").string();
  auto r =
      runPerfloom("predict --json --trace " + trace + " --gpu h200,a100-sxm-80gb --db " + fresh("t.db").string(), kEnv);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;  // 2: fp8 kernels on the A100
  const json doc = json::parse(r.out);

  storage::Database db(fresh("mine.db"));
  storage::KernelStore store(db);
  storage::ImportControl control;
  control.gpus = &gpus_;
  const int64_t source = store.import_file(trace, control).source_id;
  storage::WhatIfOptions no_cache;
  no_cache.use_cache = false;
  const storage::TraceWhatIf w = storage::run_trace_whatif(
      store, source, gpus_.get("h100-sxm"), {&gpus_.get("h200"), &gpus_.get("a100-sxm-80gb")}, *predictor_, no_cache);
  EXPECT_EQ(doc["model_version"], w.model_version);
  EXPECT_EQ(doc["model_version"], predictor_->version());
  ASSERT_EQ(doc["rows"].size(), w.kernels.size() * w.targets.size());
  std::size_t row = 0, scaled = 0;
  for (std::size_t i = 0; i < w.kernels.size(); ++i)
    for (const auto& t : w.targets) {
      const json& j = doc["rows"][row++];
      const WhatIfCell& c = t.cells[i];
      ASSERT_EQ(j["seq"].get<int64_t>(), w.kernels[i].seq);
      ASSERT_EQ(j["gpu"], t.gpu->id);
      EXPECT_EQ(j["method"], std::string(whatif_method_name(c.method))) << j.dump();
      if (c.method == WhatIfMethod::error) {
        EXPECT_TRUE(j["pred_us"].is_null());
        EXPECT_EQ(j["error"], c.error);
        continue;
      }
      if (c.method == WhatIfMethod::scaled) ++scaled;
      EXPECT_TRUE(close(j["pred_us"].get<double>(), c.pred_us)) << j.dump() << " vs " << c.pred_us;
    }
  EXPECT_GT(scaled, 0u);
  // The totals too, per target.
  for (const json& tot : doc["totals"]) {
    if (tot["row_type"] != "total") continue;
    for (const auto& t : w.targets) {
      if (tot["gpu"] != t.gpu->id) continue;
      EXPECT_TRUE(close(tot["pred_us"].get<double>(), t.total.pred_us)) << tot.dump();
    }
  }
}

}  // namespace
