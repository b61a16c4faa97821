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

}  // namespace
