// End-to-end: one decode step of each most-served bundled model through `perfloom step`, at a
// parallelism that holds it on H200s (eight GPUs of 141 GB: Kimi-K2's fp8 weights just fit).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_process.h"

using nlohmann::json;

namespace {

class CliModels : public ::testing::TestWithParam<const char*> {};

TEST_P(CliModels, DecodeStepAtTp8OnH200) {
  const std::string id = GetParam();
  auto r =
      runPerfloom("step --model " + id +
                  " --gpu h200 --phase decode --batch 8 --context 4096 --tp 8 --json --db /tmp/perfloom-cli-models.db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("model"), id);
  EXPECT_GT(j.at("latency_us").get<double>(), 0.0);
  // A MoE model spends time in its experts; the kernels of every layer are there.
  EXPECT_GT(j.at("breakdown_us").at("moe").get<double>(), 0.0) << id;
  EXPECT_GT(j.at("breakdown_us").at("attention").get<double>(), 0.0) << id;
  EXPECT_GT(j.at("breakdown_us").at("communication").get<double>(), 0.0) << id;
}

INSTANTIATE_TEST_SUITE_P(MostServed, CliModels,
                         ::testing::Values("deepseek-r1", "kimi-k2", "qwen3-235b-a22b", "glm-4.5", "glm-4.5-air",
                                           "llama-4-scout", "llama-4-maverick", "minimax-m2.5", "gpt-oss-120b"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(CliModels, QuantisedWeightsAndKvCacheOnTheCommandLine) {
  auto r = runPerfloom(
      "step --model llama-3.1-8b --gpu b200 --phase decode --batch 8 --context 4096 --quantization nvfp4 "
      "--kv-cache-dtype fp8 --json --db /tmp/perfloom-cli-models.db");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("quantization"), "nvfp4");
  EXPECT_EQ(j.at("kv_cache_dtype"), "fp8e4m3");
  bool fp4_gemm = false;
  for (const auto& k : j.at("kernels"))
    if (k.at("op") == "gemm" && k.at("dtype") == "fp4") fp4_gemm = true;
  EXPECT_TRUE(fp4_gemm) << "a B200 runs nvfp4 GEMMs on its fp4 tensor cores";

  auto bad = runPerfloom(
      "step --model llama-3.1-8b --gpu a100-sxm-80gb --phase decode --batch 8 --context 4096 --kv-cache-dtype fp8 "
      "--db /tmp/perfloom-cli-models.db");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("has no fp8 tensor cores"), std::string::npos) << bad.err;
  auto unknown = runPerfloom(
      "step --model llama-3.1-8b --gpu h200 --phase decode --batch 8 --context 4096 --quantization q3 "
      "--db /tmp/perfloom-cli-models.db");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown method \"q3\""), std::string::npos) << unknown.err;
}

}  // namespace
