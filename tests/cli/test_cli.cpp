#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

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
