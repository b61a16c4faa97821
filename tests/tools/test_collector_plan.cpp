// The collector's reader of `perfloom tune --plan` CSVs (tools/collector/plan.h): the committed
// plans parse, and bad input fails with file, line and reason.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/collector/plan.h"

namespace {

bool known(const std::string& d) { return d == "fp16" || d == "bf16" || d == "fp8e4m3" || d == "tf32" || d == "fp32"; }

std::vector<perfloom::PlanEntry> parse(const std::string& text) {
  std::istringstream in(text);
  return perfloom::parse_plan(in, "p.csv", known);
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const perfloom::PlanError& e) {
    return e.what();
  }
  return "";
}

const char* kHeader = "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,waves,last_wave_fill,k_iters,why\n";

TEST(CollectorPlan, CommittedPlansParse) {
  for (const char* gpu : {"h100-sxm", "h200"})
    for (const char* dt : {"bf16", "fp8e4m3"}) {
      const std::string path = std::string(PERFLOOM_SOURCE_DIR) + "/data/" + gpu + "/plan_" + dt + ".csv";
      const auto plan = perfloom::read_plan(path, known);
      ASSERT_GT(plan.size(), 1000u) << path;
      for (const auto& e : plan) {
        EXPECT_EQ(e.dtype, dt);
        EXPECT_GE(e.tile_id, 1);
        EXPECT_GE(e.cluster_id, 0);
        EXPECT_GE(e.stages_id, 0) << e.config;  // 64xAUTO / 128xAUTO exist
        EXPECT_EQ(e.K % e.tile_k, 0);
      }
    }
}

TEST(CollectorPlan, ReadsRowsQuotesAndOrientation) {
  const auto plan =
      parse(std::string(kHeader) +
            "gemm,bf16,640,768,512,64x128x64/s2/c1x2,128x64,2x1x1,2,1,1,8,\"boundary 1: full, 8 K-iterations\"\n"
            "\n"
            "gemm,fp8,1120,1024,1024,160x128x128/s1/c1x2,128x160,2x1x1,1,1,0.424,8,\"say \"\"hi\"\"\"\n");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].line, 2u);
  EXPECT_EQ(plan[0].M, 640);
  EXPECT_EQ(plan[0].tile_name, "128x64");
  EXPECT_EQ(plan[0].splitk, 2);
  EXPECT_EQ(plan[0].tile_k, 64);
  EXPECT_EQ(plan[0].stages_name, "64xAUTO");
  EXPECT_EQ(plan[0].why, "boundary 1: full, 8 K-iterations");
  EXPECT_EQ(plan[1].line, 4u);
  EXPECT_EQ(plan[1].dtype, "fp8e4m3");
  EXPECT_EQ(plan[1].stages_name, "128xAUTO");
  EXPECT_EQ(plan[1].why, "say \"hi\"");
}

// A re-measurement plan (cublaslt_stages, heuristic_rank: tools/collector/plan.h): exact stages, and cuBLASLt's own
// heuristic results named by rank.
TEST(CollectorPlan, ReadsExactStagesAndHeuristicRank) {
  const auto plan = parse(
      std::string("op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,why,cublaslt_stages,heuristic_rank\n") +
      "gemm,bf16,384,5120,2560,128x256x64/s1/c1x2,256x128,2x1x1,1,pick,64x4,0\n"
      "gemm,bf16,384,5120,2560,128x128x64/s1/c1x4,128x128,4x1x1,1,measured 1,64xAUTO,2\n"
      "gemm,bf16,384,5120,2560,64x128x64/s1/c1x1,128x64,1x1x1,1,,,\n");
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].stages_name, "64x4");
  EXPECT_GT(plan[0].stages_id, 0);
  EXPECT_EQ(plan[0].heuristic_rank, 0);
  EXPECT_EQ(plan[1].stages_name, "64xAUTO");
  EXPECT_EQ(plan[1].heuristic_rank, 2);
  EXPECT_EQ(plan[2].stages_name, "64xAUTO");  // empty: from the config's K slice, as without the column
  EXPECT_EQ(plan[2].heuristic_rank, 0);
  const std::string head =
      "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,cublaslt_stages,heuristic_rank\n";
  EXPECT_EQ(error_of(head + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,64x7,0\n"),
            "p.csv:2: cublaslt_stages '64x7' is not a cuBLASLt stages name (e.g. 64x6, 64xAUTO)");
  EXPECT_EQ(error_of(head + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,64x6,-1\n"),
            "p.csv:2: heuristic_rank is not an integer from 0 to 64: '-1'");
  EXPECT_EQ(error_of(head + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,64x6,first\n"),
            "p.csv:2: heuristic_rank is not an integer from 0 to 64: 'first'");
}

// The custom option `perfloom tune` names for a configuration (its kernel variant), set on the
// forced configuration; empty or absent: the base's.
TEST(CollectorPlan, ReadsTheCustomOptionToSet) {
  const std::string head = "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,cublaslt_custom\n";
  const auto plan = parse(head +
                          "gemm,bf16,384,5120,2560,128x256x64/s1/c1x2,256x128,2x1x1,1,5\n"
                          "gemm,bf16,384,5120,2560,64x128x64/s1/c1x1,128x64,1x1x1,1,\n");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].custom, 5);
  EXPECT_EQ(plan[1].custom, -1);
  EXPECT_EQ(parse(std::string(kHeader) + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,1,1,8,x\n")[0].custom, -1);
  EXPECT_EQ(error_of(head + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,64\n"),
            "p.csv:2: cublaslt_custom is not a custom option from 0 to 63: '64'");
  EXPECT_EQ(error_of(head + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,c3\n"),
            "p.csv:2: cublaslt_custom is not a custom option from 0 to 63: 'c3'");
  // As `perfloom tune --gemm ... --plan` writes it (tests/cli/test_cli_tune.cpp checks the writer).
  const auto top = parse(
      "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,waves,last_wave_fill,k_iters,why,cublaslt_stages,"
      "heuristic_rank,cublaslt_custom\n"
      "gemm,fp8e4m3,4096,4096,4096,176x128x128/s1/c1x2,128x176,2x1x1,1,6,0.818,32,\"tune 1\",128xAUTO,0,5\n"
      "gemm,fp8e4m3,8,8192,8192,8x64x128/s1/c1x2,64x8,2x1x1,1,1,0.97,64,\"tune 1\",128xAUTO,0,\n");
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].custom, 5);
  EXPECT_EQ(top[0].heuristic_rank, 0);
  EXPECT_EQ(top[0].why, "tune 1");
  EXPECT_EQ(top[0].tile_name, "128x176");
  EXPECT_EQ(top[1].custom, -1);
}

TEST(CollectorPlan, BadInputNamesFileLineAndReason) {
  EXPECT_EQ(error_of(""), "p.csv:1: empty plan: no header row");
  EXPECT_NE(error_of("op,dtype,M,N,K,cublaslt_tile,splitk\ngemm,bf16,1,2,3,64x8,1\n")
                .find("p.csv:1: missing column 'cublaslt_cluster'"),
            std::string::npos);
  EXPECT_EQ(error_of(kHeader), "p.csv:1: the plan has a header but no rows");
  const std::string ok = "64x64x64/s1/c1x1,64x64,1x1x1,1,1,1,8,x\n";
  EXPECT_NE(error_of(std::string(kHeader) + "gemm,bf17,64,64,512," + ok).find("p.csv:2: unknown dtype 'bf17'"),
            std::string::npos);
  EXPECT_EQ(error_of(std::string(kHeader) + "gemm,bf16,64,6x4,512," + ok),
            "p.csv:2: N is not a positive integer: '6x4'");
  EXPECT_EQ(error_of(std::string(kHeader) + "gemm,bf16,64,64,-5," + ok), "p.csv:2: K is not a positive integer: '-5'");
  EXPECT_NE(error_of(std::string(kHeader) + "rmsnorm,bf16,64,64,512," + ok).find("p.csv:2: op 'rmsnorm' is not gemm"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,65x64,1x1x1,1,1,1,8,x\n")
                .find("p.csv:2: cublaslt_tile '65x64'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) + "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,9x9x1,1,1,1,8,x\n")
                .find("p.csv:2: cublaslt_cluster '9x9x1'"),
            std::string::npos);
  EXPECT_EQ(error_of(std::string(kHeader) + "gemm,bf16,64,64,512," + ok +
                     "gemm,bf16,64,64,512,64x64x64/s1/c1x1,64x64,1x1x1,1,1,1,8,\"open\n"),
            "p.csv:3: unterminated quoted field");
  EXPECT_NE(error_of(std::string(kHeader) + "gemm,bf16,64,64\n").find("p.csv:2: row has 4 fields"), std::string::npos);
}

}  // namespace
