// The scheduler against hand-computed cases. A predictor that says every kernel takes no time and
// a host overhead of exactly 1 ms per step make every step last 1 ms, so times are step counts.
#include <gtest/gtest.h>

#include <cmath>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/kv_cache.h"
#include "model/sim/simulator.h"
#include "sim_test_util.h"

using namespace perfloom;
using namespace perfloom::sim;
using namespace perfloom::sim::testing;

namespace {

const GpuSpec& h100() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d.get("h100-sxm");
}

Workload batch(int64_t n, int64_t in, int64_t out) {
  return parse_workload("batch:n=" + std::to_string(n) + ",input=" + std::to_string(in) +
                        ",output=" + std::to_string(out));
}

const LlmConfig& small() {
  static const LlmConfig c = load_llm_config("llama-3.2-1b");
  return c;
}

}  // namespace

TEST(SimScheduler, BatchThatExactlyFillsTheKvCacheRunsWithoutPreemption) {
  // Two requests of 32 + 17 tokens: the last token sampled needs no KV, so each holds 48 tokens =
  // 3 blocks of 16 at the end: 6 blocks exactly.
  ZeroPredictor zero;
  const auto r = simulate(small(), h100(), zero, batch(2, 32, 17), one_ms_steps(6));
  EXPECT_EQ(r.memory.num_blocks, 6);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.step_count, 17);  // one prefill, 16 decodes
  EXPECT_NEAR(r.prefill_ms, 1.0, 1e-9);
  EXPECT_NEAR(r.median_decode_ms, 1.0, 1e-9);
  EXPECT_NEAR(r.total_ms, 17.0, 1e-9);
  EXPECT_NEAR(r.ttft_ms.p50, 1.0, 1e-9);
  EXPECT_NEAR(r.tpot_ms.mean, 1.0, 1e-9);
  EXPECT_NEAR(r.e2e_ms.p99, 17.0, 1e-9);
  EXPECT_NEAR(r.output_tokens_per_s, 34 / 0.017, 1e-6);
}

TEST(SimScheduler, OneMoreTokenPreemptsTheNewestRequestWhichRecomputesFromItsCachedBlocks) {
  // Output 18: at step 18 both need a 4th block and none is free. Request 0 preempts request 1
  // (the newest), takes the block freed first (request 1's last), and finishes at 18 ms. Request 1
  // comes back at step 19: its first two blocks are still cached, so it recomputes 49 - 32 = 17
  // tokens, samples its 18th token and finishes at 19 ms.
  ZeroPredictor zero;
  const auto r = simulate(small(), h100(), zero, batch(2, 32, 18), one_ms_steps(6));
  EXPECT_EQ(r.preemptions, 1);
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(r.requests[0].preemptions, 0);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  EXPECT_NEAR(r.requests[0].finish_s, 0.018, 1e-12);
  EXPECT_NEAR(r.requests[1].finish_s, 0.019, 1e-12);
  EXPECT_EQ(r.requests[1].cached_tokens, 32);
  ASSERT_EQ(r.steps.size(), 19u);
  EXPECT_EQ(r.steps[17].preempted, 1);
  EXPECT_EQ(r.steps[17].seqs, 1);
  EXPECT_EQ(r.steps[18].prefill_tokens, 17);
}

TEST(SimScheduler, PreemptionWithoutPrefixCachingRecomputesEverything) {
  ZeroPredictor zero;
  SimulationConfig sc = one_ms_steps(6);
  sc.sched.prefix_caching = false;
  const auto r = simulate(small(), h100(), zero, batch(2, 32, 18), sc);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.requests[1].cached_tokens, 0);
  ASSERT_EQ(r.steps.size(), 19u);
  EXPECT_EQ(r.steps[18].prefill_tokens, 32 + 17);  // the prompt and the 17 tokens it had generated
  EXPECT_NEAR(r.requests[1].finish_s, 0.019, 1e-12);
}

TEST(SimScheduler, PrefixHitSkipsTheSharedBlocks) {
  // Both requests share a 64-token prefix (4 blocks). The second arrives after the first's prefill.
  ZeroPredictor zero;
  const auto r = simulate(small(), h100(), zero,
                          trace("arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n"
                                "0,100,2,7,64\n"
                                "0.0105,100,2,7,64\n"),
                          one_ms_steps());
  EXPECT_EQ(r.requests[0].cached_tokens, 0);
  EXPECT_EQ(r.requests[1].cached_tokens, 64);
  EXPECT_EQ(r.cached_tokens, 64);
  ASSERT_GE(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].prefill_tokens, 100);
  EXPECT_EQ(r.steps[2].prefill_tokens, 36);

  // With real kernel times the hit makes the second request's first token come sooner.
  RooflinePredictor roofline;
  SimulationConfig sc;
  const Workload w = trace("0,4096,2,1,3072\n5,4096,2,1,3072\n");
  const auto real = simulate(small(), h100(), roofline, w, sc);
  EXPECT_LT(real.requests[1].ttft_ms(), 0.6 * real.requests[0].ttft_ms());
  sc.sched.prefix_caching = false;
  const auto off = simulate(small(), h100(), roofline, w, sc);
  EXPECT_NEAR(off.requests[1].ttft_ms(), off.requests[0].ttft_ms(), 1e-6);
}

TEST(SimScheduler, FirstComeFirstServed) {
  ZeroPredictor zero;
  SimulationConfig sc = one_ms_steps();
  sc.sched.max_num_seqs = 1;
  const auto r = simulate(small(), h100(), zero, trace("0,50,3\n0.0001,10,3\n0.0002,500,3\n"), sc);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_NEAR(r.requests[0].first_token_s, 0.001, 1e-12);
  EXPECT_NEAR(r.requests[0].finish_s, 0.003, 1e-12);
  EXPECT_NEAR(r.requests[1].first_token_s, 0.004, 1e-12);
  EXPECT_NEAR(r.requests[1].finish_s, 0.006, 1e-12);
  EXPECT_NEAR(r.requests[2].finish_s, 0.009, 1e-12);
}

TEST(SimScheduler, ChunkedPrefillSplitsLongPromptsAtTheTokenBudget) {
  ZeroPredictor zero;
  SimulationConfig sc = one_ms_steps();
  const auto r = simulate(small(), h100(), zero, trace("0,20000,2\n"), sc);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[0].prefill_tokens, 8192);
  EXPECT_EQ(r.steps[1].prefill_tokens, 8192);
  EXPECT_EQ(r.steps[2].prefill_tokens, 20000 - 2 * 8192);
  EXPECT_NEAR(r.requests[0].ttft_ms(), 3.0, 1e-9);
  // Without chunking a prompt longer than the budget cannot be scheduled: refused up front.
  sc.sched.chunked_prefill = false;
  EXPECT_THROW(simulate(small(), h100(), zero, trace("0,20000,2\n"), sc), std::runtime_error);
}

TEST(SimScheduler, DecodesAndNewPromptsShareASteps) {
  ZeroPredictor zero;
  const auto r = simulate(small(), h100(), zero, trace("0,100,10\n0.0025,100,10\n"), one_ms_steps());
  // At 3 ms the second request's prompt joins the first request's decode.
  ASSERT_GE(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[3].seqs, 2);
  EXPECT_EQ(r.steps[3].prefill_tokens, 100);
  EXPECT_EQ(r.steps[3].decode_seqs, 1);
}

TEST(SimScheduler, PoissonWithASeedIsReproducible) {
  const Workload a = parse_workload("poisson:rate=4,n=2000,input=100:300,output=50,seed=42");
  const Workload b = parse_workload("poisson:rate=4,n=2000,input=100:300,output=50,seed=42");
  const Workload c = parse_workload("poisson:rate=4,n=2000,input=100:300,output=50,seed=43");
  ASSERT_EQ(a.requests.size(), 2000u);
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].arrival_s, b.requests[i].arrival_s);
    EXPECT_EQ(a.requests[i].input_tokens, b.requests[i].input_tokens);
    EXPECT_GE(a.requests[i].input_tokens, 100);
    EXPECT_LE(a.requests[i].input_tokens, 300);
  }
  EXPECT_NE(a.requests[5].arrival_s, c.requests[5].arrival_s);
  EXPECT_NEAR(a.requests.back().arrival_s / 2000.0, 0.25, 0.025);  // mean gap 1/rate
  // The same seed gives the same simulation.
  RooflinePredictor roofline;
  const Workload w = parse_workload("poisson:rate=20,n=200,input=256,output=32,seed=7");
  const auto r1 = simulate(small(), h100(), roofline, w, {});
  const auto r2 = simulate(small(), h100(), roofline, w, {});
  EXPECT_EQ(r1.ttft_ms.p99, r2.ttft_ms.p99);
  EXPECT_EQ(r1.step_count, r2.step_count);
  EXPECT_GT(r1.ttft_ms.p99, r1.ttft_ms.p50);
  EXPECT_GT(r1.requests_per_s, 0);
}

TEST(SimScheduler, PipelineParallelKeepsStepsInFlight) {
  RooflinePredictor roofline;
  const LlmConfig c = load_llm_config("llama-3-8b");
  const Workload w = parse_workload("poisson:rate=50,n=300,input=512,output=64,seed=1");
  SimulationConfig sc;
  sc.par.pp = 2;
  const auto pp = simulate(c, h100(), roofline, w, sc);
  int overlaps = 0;
  for (std::size_t i = 1; i < pp.steps.size(); ++i)
    if (pp.steps[i].start_s < pp.steps[i - 1].start_s + pp.steps[i - 1].duration_ms * 1e-3 - 1e-12) ++overlaps;
  EXPECT_GT(overlaps, 0);
  EXPECT_EQ(pp.requests.size(), 300u);
  for (const auto& q : pp.requests) EXPECT_GT(q.finish_s, q.arrival_s);
}

TEST(SimScheduler, BadInputsFailClearly) {
  RooflinePredictor roofline;
  const Workload w = batch(1, 10, 10);
  try {
    simulate(load_llm_config("llama-3.1-70b"), h100(), roofline, w, {});
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit in memory"), std::string::npos) << e.what();
  }
  SimulationConfig tp3;
  tp3.par.tp = 3;
  try {
    simulate(load_llm_config("llama-3-8b"), h100(), roofline, w, tp3);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_attention_heads"), std::string::npos) << e.what();
  }
  try {
    simulate(small(), h100(), roofline, batch(1, 200, 10), one_ms_steps(4));
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the whole cache"), std::string::npos) << e.what();
  }
}

TEST(SimWorkload, MalformedSpecsSayWhatIsWrong) {
  auto why = [](const std::string& spec) {
    try {
      parse_workload(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(why("batch:n=2,input=10").find("missing \"output=\""), std::string::npos);
  EXPECT_NE(why("batch:n=2,input=10,output=x").find("output must be a positive integer"), std::string::npos);
  EXPECT_NE(why("batch:n=0,input=10,output=1").find("n must be a positive integer"), std::string::npos);
  EXPECT_NE(why("batch:n=2,input=10,output=5,x=1").find("unknown key \"x\""), std::string::npos);
  EXPECT_NE(why("poisson:rate=0,n=1,input=1,output=1").find("rate must be a positive"), std::string::npos);
  EXPECT_NE(why("poisson:rate=1,n=1,input=9:3,output=1").find("LO:HI"), std::string::npos);
  EXPECT_NE(why("gamma:n=1").find("unknown workload kind \"gamma\""), std::string::npos);
  EXPECT_NE(why("batch").find("expected batch:"), std::string::npos);
  EXPECT_NE(why("trace:/no/such/file.csv").find("cannot be read"), std::string::npos);
  EXPECT_NE(why("batch:n=1,,input=1,output=1").find("empty item"), std::string::npos);
  EXPECT_THROW(parse_trace_csv("0,10\n", "t.csv"), std::invalid_argument);
  EXPECT_THROW(parse_trace_csv("0,10,-1\n", "t.csv"), std::invalid_argument);
  EXPECT_THROW(parse_trace_csv("arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n0,10,5,1,11\n", "t.csv"),
               std::invalid_argument);
  try {
    parse_trace_csv("arrival_s,input_tokens,output_tokens\n0,10,5\nsoon,10,5\n", "t.csv");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv, line 3"), std::string::npos) << e.what();
  }
  // Columns by name, in any order; sorted by arrival.
  const auto r = parse_trace_csv("output_tokens,arrival_s,input_tokens\n5,2.0,10\n7,1.0,20\n", "t.csv");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].input_tokens, 20);
  EXPECT_EQ(r[1].output_tokens, 5);
}

TEST(SimKvCache, PoolAllocatesEvictsAndShares) {
  BlockPool pool(4, 16, true);
  BlockOwner a{0, 9, 32}, b{1, 9, 32};
  std::vector<int32_t> ba, bb;
  ASSERT_TRUE(pool.allocate(ba, a, 0, 40));  // 3 blocks
  EXPECT_EQ(pool.free_blocks(), 1);
  pool.cache_full_blocks(ba, a, 40);  // blocks 0 and 1 are the shared prefix
  EXPECT_EQ(pool.cached_prefix_blocks(b, 40), 2);
  ASSERT_TRUE(pool.allocate(bb, b, 2, 40));  // shares 2, takes 1
  EXPECT_EQ(pool.free_blocks(), 0);
  EXPECT_EQ(bb[0], ba[0]);
  std::vector<int32_t> bc;
  EXPECT_FALSE(pool.allocate(bc, BlockOwner{2, -1, 0}, 0, 1));
  pool.free(ba);
  EXPECT_EQ(pool.free_blocks(), 1);  // the shared blocks are still held by b
  pool.free(bb);
  EXPECT_EQ(pool.free_blocks(), 4);
  EXPECT_EQ(pool.cached_prefix_blocks(b, 40), 2);               // freed, but their content is still cached
  ASSERT_TRUE(pool.allocate(bc, BlockOwner{2, -1, 0}, 0, 64));  // takes all four: evicts the content
  EXPECT_EQ(pool.cached_prefix_blocks(b, 40), 0);
}
