#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "run_process.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
const std::string kDb = "--db /tmp/perfloom-cli-test.db";
}

TEST(Cli, HelpAndVersionWorkWithoutADisplay) {
  auto help = runPerfloom("--help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("perfloom gpus"), std::string::npos);
  EXPECT_NE(help.out.find("--db PATH"), std::string::npos);
  EXPECT_NE(help.out.find("perfloom export-chart bottleneck|whatif|simulator"), std::string::npos) << help.out;
  auto version = runPerfloom("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("perfloom ", 0), 0u) << version.out;
}

TEST(Cli, GuiWithoutADisplaySaysSoAndShowsTheCli) {
  auto r = runPerfloom("");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no display"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("perfloom gpus"), std::string::npos) << r.err;
}

TEST(Cli, GpusJsonListsAtLeastThirtyGpusWithTheContractFields) {
  auto r = runPerfloom("gpus --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_GE(doc.at("gpus").size(), 30u);
  for (const auto& g : doc["gpus"]) {
    for (const char* field : {"id", "name", "aliases", "architecture", "sm_count", "boost_clock_mhz",
                              "dense_peak_tflops", "memory_bandwidth_gb_s", "l2_cache_mib", "memory_gib"})
      EXPECT_TRUE(g.contains(field)) << g.value("id", "?") << " lacks " << field;
  }
  auto h100 = std::find_if(doc["gpus"].begin(), doc["gpus"].end(), [](const json& g) { return g["id"] == "h100-sxm"; });
  ASSERT_NE(h100, doc["gpus"].end());
  EXPECT_NEAR((*h100)["dense_peak_tflops"]["bf16"].get<double>(), 989.4, 9.9);
}

TEST(Cli, GpusTableAndDetailsByAlias) {
  auto table = runPerfloom("gpus " + kDb);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("h100-sxm"), std::string::npos);
  auto one = runPerfloom("gpus 'NVIDIA H100 80GB HBM3' " + kDb);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("source: NVIDIA H100"), std::string::npos) << one.out;
}

TEST(Cli, NamedGpusSayWhatTheLearnedModelsKnowOfThem) {
  // The H100 trained every family but MoE; the L4 none: its GEMMs are answered by the booster for GPUs
  // not in training, its attention by the family's one booster.
  auto r = runPerfloom("gpus h100-sxm l4 --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc.at("gpus").size(), 2u);
  const json& h100 = doc["gpus"][0].at("learned_models");
  const json& l4 = doc["gpus"][1].at("learned_models");
  EXPECT_GT(h100.at("gemm").at("training_rows").get<int>(), 1000);
  EXPECT_EQ(h100["gemm"]["booster"], "the booster for the GPUs in training");
  EXPECT_EQ(l4.at("gemm").at("training_rows").get<int>(), 0);
  EXPECT_NE(l4["gemm"]["booster"].get<std::string>().find("GPUs not in training"), std::string::npos) << l4.dump();
  EXPECT_EQ(l4.at("attention").at("booster"), "the family's one booster, for every GPU");
  // MoE is learned from the H200's fused-MoE sweep only.
  EXPECT_EQ(h100.at("moe").at("training_rows").get<int>(), 0);
  EXPECT_EQ(h100["moe"]["booster"], "the family's one booster, for every GPU");
  auto text = runPerfloom("gpus l4 " + kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("learned model, gemm"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not in training"), std::string::npos) << text.out;
}

TEST(Cli, UnknownGpuAndUnknownCommandFailWithAReason) {
  auto gpu = runPerfloom("gpus h10 " + kDb);
  EXPECT_NE(gpu.exit_code, 0);
  EXPECT_NE(gpu.err.find("unknown GPU \"h10\""), std::string::npos) << gpu.err;
  auto cmd = runPerfloom("frobnicate");
  EXPECT_NE(cmd.exit_code, 0);
  EXPECT_NE(cmd.err.find("unknown command"), std::string::npos) << cmd.err;
  auto opt = runPerfloom("gpus --no-such-option");
  EXPECT_NE(opt.exit_code, 0);
  EXPECT_NE(opt.err.find("no-such-option"), std::string::npos) << opt.err;
}

TEST(Cli, BadTrainingOptionsFailBeforeAnyTraining) {
  for (const char* bad : {"--seed x", "--seed -3", "--rounds 0"}) {
    auto r = runPerfloom(std::string("eval --holdout-gpu a40 ") + bad + " " + kDb);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find(std::string(bad).substr(0, 7)), std::string::npos) << bad << ": " << r.err;
  }
}

namespace {
// A data folder with the H100's and the H200's measured elementwise kernels (a small training set).
fs::path two_gpu_elementwise_data(const std::string& prefix) {
  const fs::path data = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  for (const char* gpu : {"h100-sxm", "h200"}) {
    fs::create_directories(data / gpu);
    fs::copy_file(fs::path(PERFLOOM_SOURCE_DIR) / "data" / gpu / "elementwise.csv.gz",
                  data / gpu / "elementwise.csv.gz", fs::copy_options::overwrite_existing);
  }
  return data;
}
}  // namespace

TEST(Cli, EvalSavesTheModelsItTrainedWithoutTheHeldOutGpu) {
  // Two GPUs' elementwise kernels: held out the H200, trained on the H100 only.
  const fs::path data = two_gpu_elementwise_data("perfloom-cli-eval-");
  const fs::path out = data / "models";
  auto r = runPerfloom("eval --holdout-gpu h200 --rounds 5 --data " + data.string() + " --save-models " + out.string() +
                       " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("models trained without h200 written to"), std::string::npos) << r.out;
  std::ifstream in(out / "manifest.json");
  const json manifest = json::parse(in);
  EXPECT_EQ(manifest.at("training_gpus"), json::array({"h100-sxm"}));
  EXPECT_EQ(manifest.at("held_out"), json::array({"h200"}));
  EXPECT_TRUE(fs::exists(out / "elementwise.json.gz"));
  // A folder that cannot be made fails the command and names it.
  auto bad = runPerfloom("eval --holdout-gpu h200 --rounds 5 --data " + data.string() +
                         " --save-models /dev/null/models " + kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("/dev/null/models"), std::string::npos) << bad.err;
  fs::remove_all(data);
}

// --holdout-arch takes an architecture name or a compute capability: "blackwell" holds out the
// datacenter and the RTX parts together, "sm120" (or "sm_120") only the RTX ones.
TEST(Cli, EvalHoldsOutAnArchitectureByNameOrByComputeCapability) {
  const fs::path data = fs::temp_directory_path() / ("perfloom-cli-arch-" + std::to_string(::getpid()));
  const std::map<std::string, std::pair<std::string, int>> gpus = {
      // folder: driver name, rows
      {"h100-sxm", {"NVIDIA H100 80GB HBM3", 12}},
      {"b200", {"NVIDIA B200", 10}},
      {"rtx-pro-6000-server", {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 8}}};
  for (const auto& [dir, gpu] : gpus) {
    fs::create_directories(data / dir);
    std::ofstream csv(data / dir / "norm.csv");
    csv << "# format=perfloom-collector/1\n# sweep=elementwise\n# gpu_name=" << gpu.first
        << "\nop,dtype,T,H,latency_us\n";
    for (int i = 0; i < gpu.second; ++i) csv << "rmsnorm,bf16," << (1 << i) << ",4096," << 2.0 + 0.5 * i << "\n";
  }
  auto eval = [&](const std::string& arch) {
    return runPerfloom("eval --holdout-arch " + arch + " --rounds 5 --json --data " + data.string() + " " + kDb);
  };
  auto held = [](const json& doc) { return doc.at("held_out_gpus").get<std::set<std::string>>(); };

  auto sm120 = eval("sm120");
  ASSERT_EQ(sm120.exit_code, 0) << sm120.err;
  const json by_cc = json::parse(sm120.out);
  EXPECT_EQ(by_cc.at("holdout"), "sm120");
  EXPECT_EQ(held(by_cc).count("rtx-pro-6000-server"), 1u);
  EXPECT_EQ(held(by_cc).count("b200"), 0u);
  EXPECT_EQ(held(by_cc).count("h100-sxm"), 0u);
  EXPECT_EQ(by_cc.at("test_rows"), 8);
  EXPECT_EQ(by_cc.at("train_rows"), 22);
  EXPECT_GT(by_cc.at("families").at("norm").at("learned").at("median_ratio").get<double>(), 0.0);
  EXPECT_GT(by_cc.at("families").at("norm").at("roofline").at("median_ratio").get<double>(), 0.0);

  auto underscore = eval("SM_120");
  ASSERT_EQ(underscore.exit_code, 0) << underscore.err;
  EXPECT_EQ(held(json::parse(underscore.out)), held(by_cc));

  auto blackwell = eval("Blackwell");
  ASSERT_EQ(blackwell.exit_code, 0) << blackwell.err;
  const json by_name = json::parse(blackwell.out);
  EXPECT_EQ(held(by_name).count("b200"), 1u);
  EXPECT_EQ(held(by_name).count("rtx-pro-6000-server"), 1u);
  EXPECT_EQ(held(by_name).count("h100-sxm"), 0u);
  EXPECT_EQ(by_name.at("test_rows"), 18);
  EXPECT_EQ(by_name.at("train_rows"), 12);

  auto unknown = eval("sm999");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no GPU of architecture \"sm999\""), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("hopper"), std::string::npos) << unknown.err;  // what it could have been
  EXPECT_NE(unknown.err.find("sm120"), std::string::npos) << unknown.err;
  fs::remove_all(data);
}

// A `--variants` run's rows with another custom option than the configuration's own train the
// tuner's variant model, not the predictor: `perfloom eval` trains on its base rows only.
TEST(Cli, TrainingLeavesOutTheOtherKernelVariantsOfAConfiguration) {
  const fs::path data = two_gpu_elementwise_data("perfloom-cli-variants-");
  const std::string head =
      "# format=perfloom-collector/1\n# sweep=plan\n# gpu_name=NVIDIA H100 80GB HBM3\n"
      "op,dtype,M,N,K,latency_us,kernel_name,tile,stages,splitk,cluster,heuristic_rank,sweep,source\n";
  auto row = [](int custom, double us, bool base) {
    return "gemm,bf16,768,4096,512," + std::to_string(us) +
           ",nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN,96x128,64xAUTO,1,2x1x1,-2,plan,"
           "plan:128x96x64/s1/c1x2 table 1 variant=c" +
           std::to_string(custom) + "/s0" + (base ? " base" : "") + " rep=1\n";
  };
  auto trained_on = [&](const std::string& rows) {
    std::ofstream(data / "h100-sxm" / "variants.csv") << head << rows;
    auto r = runPerfloom("eval --holdout-gpu h200 --rounds 5 --data " + data.string() + " " + kDb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto at = r.out.find("trained on ");
    return at == std::string::npos ? std::string("?") : r.out.substr(at, r.out.find(')', at) - at);
  };
  const std::string base_only = trained_on(row(0, 7.6, true));
  EXPECT_EQ(trained_on(row(0, 7.6, true) + row(1, 7.9, false) + row(2, 8.3, false)), base_only);
  EXPECT_NE(trained_on(row(0, 7.6, true) + row(1, 7.9, true) + row(2, 8.3, true)), base_only);
  fs::remove_all(data);
}

TEST(Cli, BadUserGpuFileIsRefusedWithFileFieldAndReason) {
  fs::path dir = fs::temp_directory_path() / ("perfloom-cli-gpus-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/gpus/h100-sxm.json");
  json d = json::parse(in);
  d["id"] = "broken";
  d["aliases"] = json::array();
  d["name"] = "Broken";
  d["l2_cache_mib"] = -50;
  std::ofstream(dir / "broken.json") << d.dump();
  auto r = runPerfloom("gpus --json --gpus-dir " + dir.string() + " " + kDb);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("l2_cache_mib"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

namespace {
std::string writeTemp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / (std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}
}  // namespace

TEST(CliPredict, PredictsEveryRowOnEveryGpuAndKeepsExtraColumns) {
  const std::string in = writeTemp("kernels.csv",
                                   "op,dtype,M,N,K,T,H,note\n"
                                   "gemm,bf16,4096,4096,4096,,,\"square, big\"\n"
                                   "rmsnorm,bf16,,,,4096,4096,norm\n");
  auto r = runPerfloom("predict --kernels " + in + " --gpu h100,a100-sxm-80gb " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header, "op,dtype,M,N,K,T,H,note,gpu,pred_us,lo_us,hi_us,ceiling_us,bound,method,error");
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_NE(rows[0].find("\"square, big\",h100-sxm,"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find(",tensor,xgboost,"), std::string::npos) << rows[0];
  EXPECT_NE(rows[3].find("norm,a100-sxm-80gb,"), std::string::npos) << rows[3];
  EXPECT_NE(rows[3].find(",dram,"), std::string::npos) << rows[3];
}

TEST(CliPredict, BadRowsGetAnErrorColumnTheOthersAreStillWrittenExitTwo) {
  const std::string in = writeTemp("bad-kernels.csv",
                                   "op,dtype,M,N,K\n"
                                   "gemm,fp8,1,4096,4096\n"
                                   "gemm,bf16,x,4096,4096\n"
                                   "conv,bf16,1,1,1\n"
                                   "gemm,bf16,128,128,128\n");
  const std::string out = (fs::temp_directory_path() / (std::to_string(::getpid()) + "-pred.csv")).string();
  auto r = runPerfloom("predict --kernels " + in + " --gpu a100 --out " + out + " " + kDb);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("line 2: a100-sxm-80gb has no fp8e4m3 tensor-core path"), std::string::npos) << text;
  EXPECT_NE(text.find("M is not a whole number"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown op \"\"conv\"\""), std::string::npos) << text;
  EXPECT_NE(text.find("gemm,bf16,128,128,128,a100-sxm-80gb,"), std::string::npos) << text;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
}

TEST(CliPredict, JsonOutputAndUnusableFiles) {
  const std::string in = writeTemp("one.csv", "op,dtype,T,I\nsilu_mul,bf16,16,14336\n");
  auto r = runPerfloom("predict --json --kernels " + in + " --gpu h200 " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc["predictions"].size(), 1u);
  EXPECT_GT(doc["predictions"][0]["pred_us"].get<double>(), doc["predictions"][0]["ceiling_us"].get<double>());
  EXPECT_EQ(doc["predictions"][0]["gpu"], "h200");

  auto missing = runPerfloom("predict --kernels /nonexistent/k.csv --gpu h100 " + kDb);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/nonexistent/k.csv"), std::string::npos) << missing.err;
  const std::string noop = writeTemp("noop.csv", "kind,M\ngemm,1\n");
  auto bad = runPerfloom("predict --kernels " + noop + " --gpu h100 " + kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("`op` and `dtype`"), std::string::npos) << bad.err;
  auto nogpu = runPerfloom("predict --kernels " + in + " " + kDb);
  EXPECT_NE(nogpu.exit_code, 0);
  EXPECT_NE(nogpu.err.find("--gpu"), std::string::npos) << nogpu.err;
}

TEST(CliPredict, WithoutUsableModelsWarnsAndFallsBackToTheRoofline) {
  const std::string in = writeTemp("fallback.csv", "op,dtype,M,N,K\ngemm,bf16,4096,4096,4096\n");
  auto r = runPerfloom("predict --kernels " + in + " --gpu h100 " + kDb, "PERFLOOM_RESOURCES=/nonexistent");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: learned models not used"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(",tensor,roofline,"), std::string::npos) << r.out;
}

// The target-measured tier: a user's calibration of a GPU (--calibration) replaces the datasheet
// in what the learned model reads; a bad one is reported and that GPU stays cross-generation.
TEST(CliCalibration, AUsersCalibrationMovesItsGpuToTheTargetMeasuredTier) {
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/resources/calibration/h100-sxm.json");
  json c = json::parse(in);
  c["gpu_name"] = "NVIDIA A100-SXM4-80GB";
  c["sm_count"] = 108;
  c["measured"]["dram_read_gb_s"] = 1750.0;
  c["measured"]["fp32_tflops"] = 19.0;
  c["measured"]["tensor_tflops"] = {{"bf16", 270.0}, {"fp16", 270.0}, {"tf32", 140.0}, {"int8", 540.0}};
  c["measured"]["dram_latency_littles_law_ns"] = 450.0;
  c["measured"]["mma_sync_tflops"] = {{"bf16", 265.0}};
  const std::string file = writeTemp("a100-calibration.json", c.dump());
  auto before = runPerfloom("gpus --json a100-sxm-80gb " + kDb);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(json::parse(before.out)["gpus"][0]["achievable"]["tier"], "cross-generation");
  // Without a calibration of its own, the calibrated GPUs' mean DRAM latency (H100 383.18, H200 381.2 ns).
  EXPECT_NEAR(json::parse(before.out)["gpus"][0]["achievable"]["dram_latency_ns"].get<double>(), 382.19, 1e-9);
  auto after = runPerfloom("gpus --json a100-sxm-80gb --calibration " + file + " " + kDb);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const json a = json::parse(after.out)["gpus"][0]["achievable"];
  EXPECT_EQ(a["tier"], "target-measured");
  EXPECT_DOUBLE_EQ(a["memory_bandwidth_gb_s"].get<double>(), 1750.0);
  EXPECT_DOUBLE_EQ(a["dram_latency_ns"].get<double>(), 450.0);
  EXPECT_DOUBLE_EQ(a["mma_sync_tflops"]["bf16"].get<double>(), 265.0);
  // Cross-generation, an Ampere GPU has no warp-level MMA rate apart from its tensor rate (it is
  // its tensor path); a Hopper GPU has its architecture's measured fraction of its own peak.
  EXPECT_FALSE(json::parse(before.out)["gpus"][0]["achievable"].contains("mma_sync_tflops"));
  // Likewise the L2 through bulk copies: the calibration's own (copied from the H100's), none before.
  EXPECT_DOUBLE_EQ(a["l2_bulk_gb_s"].get<double>(), 8449.32);
  EXPECT_FALSE(json::parse(before.out)["gpus"][0]["achievable"].contains("l2_bulk_gb_s"));

  const std::string kernels = writeTemp("calib-kernels.csv", "op,dtype,T,H\nrmsnorm,bf16,4096,8192\n");
  auto p0 = runPerfloom("predict --json --kernels " + kernels + " --gpu a100-sxm-80gb " + kDb);
  auto p1 =
      runPerfloom("predict --json --kernels " + kernels + " --gpu a100-sxm-80gb --calibration " + file + " " + kDb);
  ASSERT_EQ(p0.exit_code, 0) << p0.err;
  ASSERT_EQ(p1.exit_code, 0) << p1.err;
  EXPECT_NE(p0.out, p1.out);  // the prediction moved, the ceiling did not
  fs::remove(file);
  fs::remove(kernels);
}

TEST(CliCalibration, ABadCalibrationWarnsAndFallsBackToTheDatasheet) {
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/resources/calibration/h100-sxm.json");
  json c = json::parse(in);
  c["measured"].erase("l2_gb_s");
  const std::string file = writeTemp("bad-calibration.json", c.dump());
  auto r = runPerfloom("gpus --json h100-sxm --calibration " + file + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad-calibration.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("measured.l2_gb_s"), std::string::npos) << r.err;
  // The bundled calibration of that GPU stays in use.
  EXPECT_EQ(json::parse(r.out)["gpus"][0]["achievable"]["tier"], "target-measured");
  auto missing = runPerfloom("gpus --json t4 --calibration /nonexistent/cal.json " + kDb);
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/cal.json"), std::string::npos) << missing.err;
  EXPECT_EQ(json::parse(missing.out)["gpus"][0]["achievable"]["tier"], "cross-generation");
  fs::remove(file);
}

TEST(Cli, AForeignSqliteFileIsRefusedAndLeftAsItWas) {
  const fs::path db = fs::temp_directory_path() / ("perfloom-cli-foreign-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  // An SQLite file of another program, in rollback-journal (DELETE) mode.
  ASSERT_EQ(std::system(("sqlite3 " + db.string() +
                         " 'PRAGMA journal_mode = DELETE; CREATE TABLE customers(id INTEGER); INSERT INTO customers "
                         "VALUES (1)' >/dev/null")
                            .c_str()),
            0);
  auto bytes = [&] {
    std::ifstream in(db, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string before = bytes();
  const std::string trace = (fs::path(PERFLOOM_SOURCE_DIR) / "data/h100-sxm/trace.json.gz").string();
  auto r = runPerfloom("predict --trace " + trace + " --gpu h200 --db " + db.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(db.string() + ": is an SQLite file but not a perfloom database"), std::string::npos) << r.err;
  EXPECT_EQ(bytes(), before);
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
  EXPECT_FALSE(fs::exists(db.string() + "-shm"));
  // The journal mode is in the header: byte 18 (write version) is 1 for rollback, 2 for WAL.
  ASSERT_GT(before.size(), 19u);
  EXPECT_EQ(before[18], 1);
  fs::remove(db);
}
