// `perfloom compare --trace A --trace B` end to end: the real binary on the real torch.profiler
// traces of data (the same program on an H100 and an H200), as users and scripts run it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "csv_file.h"
#include "run_process.h"
#include "temp_path.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;
const std::string kH100 = (kSrc / "data/h100-sxm/trace.json.gz").string();
const std::string kH200 = (kSrc / "data/h200/trace.json.gz").string();
constexpr std::size_t kTraceKernels = 155;

fs::path fresh(const std::string& name) { return fresh_temp_path("perfloom-cli-compare", name); }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string doc_model(const std::string& out) { return json::parse(out)["a"]["model_version"].get<std::string>(); }

// A torch.profiler trace of two kernels called NAME that no framework op launched.
fs::path tiny_trace(const std::string& file, const std::string& name) {
  const fs::path p = fresh(file);
  std::ofstream(p) << R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": ")"
                   << name << R"(", "ts": 10, "dur": 5.5, "pid": 0, "tid": 7,
   "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [1,1,1], "block": [128,1,1]}},
  {"ph": "X", "cat": "kernel", "name": ")"
                   << name << R"(", "ts": 20, "dur": 6.5, "pid": 0, "tid": 7,
   "args": {"device": 0, "stream": 7, "correlation": 2, "grid": [1,1,1], "block": [128,1,1]}}]})";
  return p;
}

TEST(CliCompare, TwoGpusPerFamilyThenEveryKernelToCsv) {
  const fs::path db = fresh("gpus.db"), out = fresh("kernels.csv");
  auto r = runPerfloom("compare --trace " + kH100 + " --trace " + kH200 + " --json --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["a"]["gpu_id"], "h100-sxm");
  EXPECT_EQ(doc["a"]["times"], "measured");
  EXPECT_EQ(doc["a"]["imported_now"], true);
  EXPECT_EQ(doc["b"]["gpu_id"], "h200");
  EXPECT_EQ(doc["by"], "family");
  EXPECT_EQ(doc["matched"]["kernels"], kTraceKernels);
  EXPECT_EQ(doc["matched"]["by_position"], kTraceKernels);
  EXPECT_TRUE(doc["unmatched"]["a"].empty());
  ASSERT_EQ(doc["rows"].size(), 4u);
  const json& gemm = doc["rows"][0];
  EXPECT_EQ(gemm["family"], "gemm");
  EXPECT_EQ(gemm["kernels"], 48);
  EXPECT_NEAR(gemm["a_us"].get<double>(), 526.541, 1e-6);
  EXPECT_NEAR(gemm["b_us"].get<double>(), 443.779, 1e-6);
  EXPECT_NEAR(gemm["ratio"].get<double>(), 443.779 / 526.541, 1e-9);
  double share = 0;
  for (const json& row : doc["rows"]) share += row["share"].get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_NEAR(doc["totals"]["a_us"].get<double>(), doc["a"]["total_us"].get<double>(), 1e-9);

  // Again, per kernel into a CSV: the sources are reused, not imported twice.
  r = runPerfloom("compare --trace " + kH100 + " --trace " + kH200 + " --by kernel --out " + out.string() +
                  " --json --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json again = json::parse(r.out);
  EXPECT_EQ(again["a"]["imported_now"], false);
  EXPECT_EQ(again["out"], out.string());
  EXPECT_FALSE(again.contains("rows"));
  const auto rows = read_csv(out);
  ASSERT_EQ(rows.size(), 1 + kTraceKernels + 1);
  const std::vector<std::string> header = {"row_type", "match", "seq_a", "seq_b", "name",  "name_b",   "family",
                                           "op",       "shape", "a_us",  "b_us",  "ratio", "delta_us", "share"};
  EXPECT_EQ(rows[0], header);
  // Kernel 8, the gate/up GEMM: 33.249 us on the H100, 32.032 us on the H200.
  const auto& k8 = rows[1 + 8];
  EXPECT_EQ(k8[0], "kernel");
  EXPECT_EQ(k8[1], "position");
  EXPECT_EQ(k8[2], "8");
  EXPECT_EQ(k8[8], "M=512,N=11264,K=2048");
  EXPECT_EQ(k8[9], "33.249");
  EXPECT_EQ(k8[10], "32.032");
  EXPECT_NEAR(std::stod(k8[11]), 32.032 / 33.249, 1e-5);
  // Kernel 40: cuBLAS chose another split-K GEMM on the H200; B's name is given.
  EXPECT_EQ(rows[1 + 40][4], "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT");
  EXPECT_EQ(rows[1 + 40][5], "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  EXPECT_EQ(rows.back()[0], "total");
  EXPECT_EQ(rows.back()[4], "TOTAL");

  // The terminal table per kernel name names the file of each side.
  r = runPerfloom("compare --trace " + kH100 + " --trace " + kH200 + " --by name --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "A: " + kH100)) << r.out;
  EXPECT_TRUE(has(r.out, "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_TNT")) << r.out;
  EXPECT_TRUE(has(r.out, "TOTAL")) << r.out;
}

TEST(CliCompare, PredictedOnAGpuIsPredictTracesNumbers) {
  const fs::path db = fresh("predicted.db"), whatif = fresh("whatif.csv");
  // A resources folder without models: the roofline baseline answers, in milliseconds, where loading
  // the learned models would cost a second per run; both commands use the one predictor either way.
  const fs::path no_models = fresh("resources");
  fs::create_directories(no_models);
  const std::string env = "PERFLOOM_RESOURCES=" + no_models.string();
  auto r =
      runPerfloom("compare --trace " + kH100 + " --trace " + kH200 + " --gpu h200 --json --db " + db.string(), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(doc_model(r.out), "roofline");
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["a"]["times"], "predicted");
  EXPECT_EQ(doc["a"]["gpu_id"], "h200");
  EXPECT_EQ(doc["a"]["measured_on"], "h100-sxm");
  EXPECT_EQ(doc["b"]["times"], "measured");
  EXPECT_EQ(doc["matched"]["kernels"], kTraceKernels);
  // The same engine as `predict --trace` (which reads the predictions compare cached).
  r = runPerfloom("predict --trace " + kH100 + " --gpu h200 --json --out " + whatif.string() + " --db " + db.string(),
                  env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json w = json::parse(r.out);
  EXPECT_EQ(w["cache"]["h200"]["from_cache"], true);
  double total = -1;
  for (const json& t : w["totals"])
    if (t["row_type"] == "total") total = t["pred_us"].get<double>();
  EXPECT_NEAR(doc["totals"]["a_us"].get<double>(), total, 1e-6 * total);
}

TEST(CliCompare, BadFileNothingInCommonAndUsage) {
  const fs::path db = fresh("errors.db");
  // A file that is no trace: its name and the reason, exit 1.
  const fs::path bad = fresh("bad.json");
  std::ofstream(bad) << "garbage";
  auto r = runPerfloom("compare --trace " + kH100 + " --trace " + bad.string() + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, bad.string() + ": not a format perfloom can import")) << r.err;
  r = runPerfloom("compare --trace /nonexistent/trace.json --trace " + kH100 + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "/nonexistent/trace.json")) << r.err;
  // Two traces without a kernel in common say so.
  const fs::path x = tiny_trace("x.json", "kernel_only_in_x"), y = tiny_trace("y.json", "kernel_only_in_y");
  r = runPerfloom("compare --trace " + x.string() + " --trace " + y.string() + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "no kernel in common")) << r.err;
  EXPECT_TRUE(has(r.err, x.string()) && has(r.err, y.string())) << r.err;
  // Usage: one trace, or an unknown table.
  r = runPerfloom("compare --trace " + kH100 + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "two traces")) << r.err;
  r = runPerfloom("compare --trace " + kH100 + " --trace " + kH200 + " --by op --db " + db.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "family, name or kernel")) << r.err;
}

}  // namespace
