// Deployments: data-parallel replicas behind a router, and disaggregated prefill/decode pools with
// the KV cache moved between them. Every kernel takes no time and each step exactly 1 ms of host
// time, so times are step counts.
#include <gtest/gtest.h>

#include <cmath>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"
#include "sim_test_util.h"

using namespace perfloom;
using namespace perfloom::sim;
using namespace perfloom::sim::testing;

namespace {

const GpuDatabase& gpus() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

SimulationResult run(const Workload& w, const SimulationConfig& sc, const std::string& model = "llama-3.2-1b") {
  ZeroPredictor zero;
  return simulate(load_llm_config(model), gpus().get("h100-sxm"), zero, w, sc);
}

SimulationConfig disaggregated(double gb_s) {
  SimulationConfig sc = one_ms_steps();
  sc.deployment.disaggregated = true;
  sc.deployment.kv_transfer_gb_s = gb_s;
  return sc;
}

}  // namespace

TEST(SimDeployment, ReplicasServeRequestsSideBySide) {
  // Two requests at once: one engine batches them (4 steps); two replicas each run one (4 steps each,
  // at the same times).
  SimulationConfig sc = one_ms_steps();
  sc.deployment.replicas = 2;
  const auto r = run(trace("0,32,4\n0,32,4\n"), sc);
  EXPECT_EQ(r.step_count, 8);
  EXPECT_EQ(r.requests[0].instance, 0);
  EXPECT_EQ(r.requests[1].instance, 1);
  for (const auto& q : r.requests) EXPECT_NEAR(q.e2e_ms(), 4.0, 1e-9);
  EXPECT_EQ(run(trace("0,32,4\n0,32,4\n"), one_ms_steps()).step_count, 4);
}

TEST(SimDeployment, LeastLoadedSendsARequestWhereFewestWaitOrRun) {
  // Request 0 runs long on replica 0, request 1 (replica 1) is done by 3 ms; at 5 ms round robin
  // sends request 2 to replica 0 again, least-loaded to the idle replica 1.
  const Workload w = trace("0,32,50\n0.0001,32,2\n0.005,32,2\n");
  SimulationConfig sc = one_ms_steps();
  sc.deployment.replicas = 2;
  EXPECT_EQ(run(w, sc).requests[2].instance, 0);
  sc.deployment.router = RouterPolicy::least_loaded;
  const auto r = run(w, sc);
  EXPECT_EQ(r.requests[0].instance, 0);
  EXPECT_EQ(r.requests[1].instance, 1);
  EXPECT_EQ(r.requests[2].instance, 1);
  EXPECT_EQ(parse_router_policy("least-loaded"), RouterPolicy::least_loaded);
  EXPECT_FALSE(parse_router_policy("random"));
}

TEST(SimDeployment, DisaggregatedWithAnInstantLinkIsPrefillThenDecode) {
  // The prefill instance samples the first token at 1 ms; the decode instance gets the KV at once and
  // runs the three other tokens: 4 ms, as one engine takes, and never a prompt token.
  const auto r = run(trace("0,32,4\n"), disaggregated(1e9));
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_NEAR(r.requests[0].ttft_ms(), 1.0, 1e-9);
  EXPECT_NEAR(r.requests[0].e2e_ms(), 4.0, 1e-6);
  EXPECT_EQ(r.requests[0].instance, 1);  // the decode pool's instance (the prefill pool's come first)
  for (const auto& s : r.steps)
    if (s.instance == 1) {
      EXPECT_EQ(s.prefill_tokens, 0);
    }
  EXPECT_NEAR(r.e2e_ms.p50, run(trace("0,32,4\n"), one_ms_steps()).e2e_ms.p50, 1e-6);
}

TEST(SimDeployment, TheKvTransferTakesItsBytesOverTheLinkOneAfterAnother) {
  // Two prompts prefilled in one step leave over the prefill instance's link back to back: the second
  // waits for the first. Bytes: each decode rank's share of the prompt's KV.
  const double gb_s = 0.05;  // slow enough to see: 50 MB/s
  const auto r = run(trace("0,1000,3\n0,1000,3\n"), disaggregated(gb_s));
  const double one_ms = r.memory.kv_bytes_per_token * 1000 / (gb_s * 1e9) * 1e3;
  EXPECT_NEAR(r.requests[0].kv_transfer_ms, one_ms, 1e-9);
  EXPECT_NEAR(r.requests[1].kv_transfer_ms, 2 * one_ms, 1e-9);
  EXPECT_NEAR(r.kv_transfer_us, 2 * one_ms * 1e3, 1e-6);
  // The decode pool starts after the KV arrives: TPOT covers the wait (first token at 1 ms).
  EXPECT_NEAR(r.requests[1].finish_s, 0.001 + 2 * one_ms * 1e-3 + 0.002, 1e-9);
}

TEST(SimDeployment, PoolsOfTheirOwnGpusAndSizes) {
  SimulationConfig sc = disaggregated(25);
  sc.deployment.prefill_gpu = &gpus().get("h200");
  sc.deployment.prefill_replicas = 2;
  sc.deployment.decode_replicas = 1;
  const auto r = run(trace("0,64,3\n0,64,3\n0,64,3\n"), sc);
  EXPECT_GT(r.prefill_memory.kv_tokens(), r.memory.kv_tokens());  // the H200's 141 GB against 80
  // Round robin over the prefill pool: requests 0 and 2 on prefill instance 0, request 1 on 1; all
  // decoded on instance 2.
  for (const auto& q : r.requests) EXPECT_EQ(q.instance, 2);
  EXPECT_EQ(r.deployment.prefill_replicas, 2);
}

TEST(SimDeployment, BadDeploymentsSayWhy) {
  SimulationConfig cross = disaggregated(0);
  cross.deployment.prefill_gpu = &gpus().get("h200");
  try {
    run(trace("0,64,3\n"), cross);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-transfer-gbps"), std::string::npos) << e.what();
  }
  // A 70B model does not fit one H100 of the prefill pool.
  SimulationConfig small_prefill = disaggregated(0);
  small_prefill.deployment.decode_par.tp = 4;
  EXPECT_THROW(run(trace("0,64,3\n"), small_prefill, "llama-3.1-70b"), std::exception);
  SimulationConfig none = one_ms_steps();
  none.deployment.replicas = 0;
  EXPECT_THROW(run(trace("0,64,3\n"), none), std::invalid_argument);
}

TEST(SimDeployment, SpeculativeDecodingEmitsTheExpectedTokensPerVerifyStep) {
  // Acceptance 1, 3 drafts: after the prefill's first token each verify step yields 4 tokens, so an
  // answer of 9 takes 1 + 2 steps. The draft costs nothing here (no kernel time, no host time of its own).
  SimulationConfig sc = one_ms_steps();
  sc.speculative.tokens = 3;
  sc.speculative.acceptance = 1.0;
  const auto all = run(trace("0,32,9\n"), sc);
  EXPECT_EQ(all.step_count, 3);
  EXPECT_NEAR(all.requests[0].e2e_ms(), 3.0, 1e-9);
  EXPECT_EQ(all.verify_tokens, 8);
  // Acceptance 0: one token a step, as plain decoding.
  sc.speculative.acceptance = 0.0;
  const auto none = run(trace("0,32,9\n"), sc);
  EXPECT_EQ(none.step_count, run(trace("0,32,9\n"), one_ms_steps()).step_count);
  EXPECT_EQ(none.verify_tokens, 7);  // the last token has nothing left to draft: a plain decode step
  // Acceptance 0.5, 2 drafts: 1 + 0.5 + 0.25 = 1.75 tokens a step on average.
  sc.speculative.tokens = 2;
  sc.speculative.acceptance = 0.5;
  EXPECT_DOUBLE_EQ(sc.speculative.expected_tokens_per_step(2), 1.75);
  const auto half = run(trace("0,32,701\n"), sc);
  EXPECT_NEAR(static_cast<double>(half.verify_tokens) / static_cast<double>(half.verify_seqs), 1.75, 0.01);
  EXPECT_EQ(half.requests[0].output_tokens, 701);
}

TEST(SimDeployment, TheDraftsForwardPassesLengthenTheStep) {
  // With the roofline, verifying 3 drafts that are all rejected costs more per token than plain
  // decoding: the draft's passes and the wider verify step.
  RooflinePredictor roof;
  SimulationConfig plain;
  SimulationConfig spec;
  spec.speculative.tokens = 3;
  spec.speculative.acceptance = 0.0;
  const LlmConfig cfg = load_llm_config("llama-3.1-8b");
  const auto a = simulate(cfg, gpus().get("h100-sxm"), roof, trace("0,512,64\n"), plain);
  const auto b = simulate(cfg, gpus().get("h100-sxm"), roof, trace("0,512,64\n"), spec);
  EXPECT_GT(b.draft_us, 0);
  EXPECT_GT(b.tpot_ms.p50, a.tpot_ms.p50);
  EXPECT_EQ(b.speculative.draft->layers, 1);  // one decoder layer of the target
}

TEST(SimDeployment, BadSpeculativeSettingsSayWhy) {
  SimulationConfig sc = one_ms_steps();
  sc.speculative.tokens = 2;
  sc.speculative.acceptance = 1.5;
  EXPECT_THROW(run(trace("0,32,9\n"), sc), std::invalid_argument);
  sc.speculative.acceptance = std::nan("");
  EXPECT_THROW(run(trace("0,32,9\n"), sc), std::invalid_argument);
  sc.speculative.acceptance = 0.5;
  sc.speculative.tokens = 33;
  EXPECT_THROW(run(trace("0,32,9\n"), sc), std::invalid_argument);
}

TEST(SimDeployment, WideExpertParallelismSendsEachRanksOwnTokensToEveryGpusExperts) {
  // Qwen3-30B-A3B (128 experts, top 8, hidden 2048) at TP 1 and EP 8: a data-parallel rank's 64
  // decode tokens go to 16 local experts' owners; balanced, each GPU's experts get 64 x 8 pairs back.
  const LlmConfig c = load_llm_config("qwen3-30b-a3b");
  const std::vector<SeqWork> batch(64, SeqWork{1, 100});
  const StepPlan p = build_step(c, {1, 1, 8}, batch);
  auto find = [](const StepPlan& plan, const std::string& label) -> const StepKernel& {
    for (const auto& k : plan.kernels)
      if (label == k.label) return k;
    throw std::runtime_error("no " + label);
  };
  EXPECT_EQ(find(p, "moe_experts").kernel.shape.E, 16);
  EXPECT_EQ(find(p, "moe_experts").kernel.shape.T, 64);
  EXPECT_EQ(find(p, "moe_dispatch").kernel.shape.bytes, 64 * 8 * 2048 * 2);
  EXPECT_EQ(find(p, "moe_dispatch").kernel.shape.ranks, 8);
  // The busiest GPU with 1.5x the mean: its experts and its share of the all-to-all.
  StepOptions skewed;
  skewed.expert_imbalance = 1.5;
  const StepPlan q = build_step(c, {1, 1, 8}, batch, skewed);
  EXPECT_EQ(find(q, "moe_experts").kernel.shape.T, 96);
  EXPECT_EQ(find(q, "moe_combine").kernel.shape.bytes, 64 * 8 * 2048 * 2 * 3 / 2);
  // Experts over 8 GPUs, attention whole on each: between TP 1 and TP 8 in weights per GPU.
  MemoryOptions mo;
  const double ep1 = plan_memory(c, {1, 1, 1}, gpus().get("h200"), mo).weights_gib;
  const double wide = plan_memory(c, {1, 1, 8}, gpus().get("h200"), mo).weights_gib;
  const double tp8 = plan_memory(c, {8, 1, 8}, gpus().get("h200"), mo).weights_gib;
  EXPECT_LT(wide, ep1);
  EXPECT_GT(wide, tp8);
  EXPECT_THROW(validate_parallelism(c, {8, 1, 12}), std::invalid_argument);
}

TEST(SimDeployment, WideExpertParallelismNeedsWholeGroupsOfDataParallelRanks) {
  SimulationConfig sc = one_ms_steps();
  sc.par = {1, 1, 8};
  sc.deployment.replicas = 4;
  try {
    run(trace("0,64,3\n"), sc, "qwen3-30b-a3b");
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--dp must be a multiple of 8"), std::string::npos) << e.what();
  }
  sc.deployment.replicas = 8;
  const auto r = run(trace("0,64,3\n0,64,3\n"), sc, "qwen3-30b-a3b");
  EXPECT_EQ(r.requests[1].instance, 1);
  sc.expert_imbalance = 0.5;
  EXPECT_THROW(run(trace("0,64,3\n"), sc, "qwen3-30b-a3b"), std::invalid_argument);
}

// Issue #56: a wide-EP group's data-parallel attention ranks step in lockstep. Steps of 1 ms; request 0
// on rank 0 at t=0, request 1 on rank 1 at 0.5 ms. On its own, rank 1 starts at once (first token at
// 1.5 ms, TTFT 1.0 ms, done at 3.5 ms); in lockstep it joins the group's next step at 1 ms (TTFT 1.5 ms,
// done at 4 ms, after three 1 ms steps). An idle rank holds no one up: request 0 is as fast either way.
TEST(SimDeployment, WideEpRanksStepInLockstep) {
  SimulationConfig sc = one_ms_steps();
  sc.par = {1, 1, 8};
  sc.deployment.replicas = 8;
  const Workload w = trace("0,64,3\n0.0005,64,3\n");
  sc.dp_lockstep = false;
  const auto apart = run(w, sc, "qwen3-30b-a3b");
  sc.dp_lockstep = true;
  const auto together = run(w, sc, "qwen3-30b-a3b");
  ASSERT_EQ(together.requests.size(), 2u);
  EXPECT_EQ(together.requests[1].instance, 1);
  EXPECT_NEAR(apart.requests[1].ttft_ms(), 1.0, 1e-9);
  EXPECT_NEAR(together.requests[1].ttft_ms(), 1.5, 1e-9);
  EXPECT_NEAR(apart.requests[1].e2e_ms(), 3.0, 1e-9);
  EXPECT_NEAR(together.requests[1].e2e_ms(), 3.5, 1e-9);
  EXPECT_NEAR(together.requests[0].ttft_ms(), 1.0, 1e-9);
  EXPECT_NEAR(together.requests[0].e2e_ms(), apart.requests[0].e2e_ms(), 1e-9);
  // Plain data parallelism (no wide EP) is never in lockstep.
  SimulationConfig dp = one_ms_steps();
  dp.deployment.replicas = 2;
  const auto plain = run(w, dp, "qwen3-30b-a3b");
  EXPECT_NEAR(plain.requests[1].ttft_ms(), 1.0, 1e-9);
}
