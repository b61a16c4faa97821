// Workloads as serving is benchmarked: closed loops, bursty arrivals, length distributions, multi-turn
// sessions, warm-up and cool-down, goodput. As in test_sim_scheduler.cpp, every kernel takes no time
// and each step exactly 1 ms of host time, so times are step counts.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "model/gpu_database.h"
#include "model/predictor.h"
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

const LlmConfig& small() {
  static const LlmConfig c = load_llm_config("llama-3.2-1b");
  return c;
}

SimulationResult run(const std::string& spec, const SimulationConfig& sc = one_ms_steps()) {
  ZeroPredictor zero;
  return simulate(small(), h100(), zero, parse_workload(spec), sc);
}

// Mean and coefficient of variation of the gaps between consecutive arrivals.
std::pair<double, double> gap_stats(const Workload& w) {
  double sum = 0, sq = 0;
  const std::size_t n = w.requests.size() - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = w.requests[i + 1].arrival_s - w.requests[i].arrival_s;
    sum += g;
    sq += g * g;
  }
  const double mean = sum / static_cast<double>(n);
  return {mean, std::sqrt(sq / static_cast<double>(n) - mean * mean) / mean};
}

std::string expect_error(const std::string& spec) {
  try {
    parse_workload(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << spec << " was accepted";
  return "";
}

}  // namespace

TEST(SimWorkloads, ClosedLoopOfConcurrencyOneIsBackToBackRequests) {
  // Each request: a 1 ms prefill (its first token) and 3 decode steps; the next arrives when it ends.
  const auto r = run("closed:concurrency=1,n=3,input=32,output=4,warmup=0,cooldown=0");
  ASSERT_EQ(r.requests.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& q = r.requests[i];
    EXPECT_NEAR(q.arrival_s, 0.004 * static_cast<double>(i), 1e-12) << i;
    EXPECT_NEAR(q.ttft_ms(), 1.0, 1e-9) << i;
    EXPECT_NEAR(q.e2e_ms(), 4.0, 1e-9) << i;
  }
  EXPECT_EQ(r.step_count, 12);
  EXPECT_NEAR(r.output_tokens_per_s, 12 / 0.012, 1e-6);
  EXPECT_EQ(r.measured, 3);
}

TEST(SimWorkloads, ClosedLoopLeavesOutTheFirstAndLastConcurrencyRequestsByDefault) {
  // n=3, C=1: request 0 is warm-up, request 2 cool-down; the window runs from request 1's arrival
  // (4 ms) to request 2's (8 ms) and holds request 1's four tokens.
  const auto r = run("closed:concurrency=1,n=3,input=32,output=4");
  EXPECT_EQ(r.warmup, 1);
  EXPECT_EQ(r.cooldown, 1);
  EXPECT_EQ(r.measured, 1);
  EXPECT_FALSE(r.requests[0].measured);
  EXPECT_TRUE(r.requests[1].measured);
  EXPECT_FALSE(r.requests[2].measured);
  EXPECT_NEAR(r.window_start_s, 0.004, 1e-12);
  EXPECT_NEAR(r.window_end_s, 0.008, 1e-12);
  EXPECT_NEAR(r.output_tokens_per_s, 4 / 0.004, 1e-6);
  EXPECT_NEAR(r.total_tokens_per_s, (32 + 4) / 0.004, 1e-6);
  EXPECT_NEAR(r.requests_per_s, 1 / 0.004, 1e-6);
  EXPECT_EQ(r.e2e_ms.count, 1);
  // Too few requests to leave 2C out: none is.
  EXPECT_EQ(run("closed:concurrency=2,n=4,input=32,output=4").measured, 4);
}

TEST(SimWorkloads, ClosedLoopKeepsExactlyConcurrencyRequestsOutstandingUntilItDrains) {
  const auto r = run("closed:concurrency=4,n=60,input=16:300,output=1:40,seed=7");
  ASSERT_EQ(r.requests.size(), 60u);
  int at_zero = 0;
  for (const auto& q : r.requests) at_zero += q.arrival_s == 0 ? 1 : 0;
  EXPECT_EQ(at_zero, 4);
  // Every later arrival coincides with a finish, and then exactly C requests are in the system.
  for (const auto& q : r.requests) {
    if (q.arrival_s == 0) continue;
    int outstanding = 0;
    bool a_finish_frees_it = false;
    for (const auto& o : r.requests) {
      if (o.arrival_s <= q.arrival_s && o.finish_s > q.arrival_s) ++outstanding;
      if (o.finish_s == q.arrival_s) a_finish_frees_it = true;
    }
    EXPECT_EQ(outstanding, 4) << q.id;
    EXPECT_TRUE(a_finish_frees_it) << q.id;
  }
}

TEST(SimWorkloads, MultiTurnSessionsCarryTheConversationAsACachedPrefix) {
  // Turn 0: 40 prompt + 8 output tokens, 47 of them computed (the last one sampled is not): two full
  // blocks of 16. Turn 1 arrives when turn 0 ends (8 ms) with 48 + 10 prompt tokens; its first 32
  // come from the cache.
  const auto r = run("closed:concurrency=1,n=2,input=40,output=8,turns=2,turn_input=10,warmup=0,cooldown=0");
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(r.requests[0].input_tokens, 40);
  EXPECT_EQ(r.requests[1].input_tokens, 58);
  EXPECT_EQ(r.requests[0].session, r.requests[1].session);
  EXPECT_EQ(r.requests[0].cached_tokens, 0);
  EXPECT_EQ(r.requests[1].cached_tokens, 32);
  EXPECT_NEAR(r.requests[1].arrival_s, 0.008, 1e-12);
  EXPECT_NEAR(r.requests[1].finish_s, 0.016, 1e-12);
  // Without prefix caching nothing is found.
  SimulationConfig off = one_ms_steps();
  off.sched.prefix_caching = false;
  EXPECT_EQ(run("closed:concurrency=1,n=2,input=40,output=8,turns=2,turn_input=10,warmup=0,cooldown=0", off)
                .requests[1]
                .cached_tokens,
            0);
}

TEST(SimWorkloads, OpenLoopSessionsWaitTheThinkTimeBetweenTurns) {
  const auto r = run("poisson:rate=2,n=9,input=20,output=3,turns=3,think=0.5,seed=1");
  ASSERT_EQ(r.requests.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i) {
    const auto& q = r.requests[i];
    EXPECT_EQ(q.session, static_cast<int64_t>(i / 3));
    if (i % 3 != 0) {
      EXPECT_NEAR(q.arrival_s, r.requests[i - 1].finish_s + 0.5, 1e-12) << i;
      EXPECT_EQ(q.input_tokens, r.requests[i - 1].input_tokens + 3 + 20) << i;
    }
  }
  // A session's later turns never hit another session's blocks: the first turns find nothing.
  for (std::size_t i = 0; i < 9; i += 3) EXPECT_EQ(r.requests[i].cached_tokens, 0);
}

TEST(SimWorkloads, BurstinessSetsTheGapsCoefficientOfVariationAtTheSameMeanRate) {
  const Workload poisson = parse_workload("poisson:rate=10,n=20000,input=8,output=8,seed=3");
  const Workload one = parse_workload("poisson:rate=10,n=20000,input=8,output=8,seed=3,burstiness=1");
  ASSERT_EQ(poisson.requests.size(), one.requests.size());
  for (std::size_t i = 0; i < poisson.requests.size(); ++i)
    ASSERT_EQ(poisson.requests[i].arrival_s, one.requests[i].arrival_s) << "burstiness=1 is Poisson, request " << i;
  // Gamma gaps of shape B: mean 1/rate, CV 1/sqrt(B).
  for (double b : {0.25, 1.0, 4.0}) {
    const auto [mean, cv] =
        gap_stats(parse_workload("poisson:rate=10,n=20000,input=8,output=8,seed=3,burstiness=" + std::to_string(b)));
    EXPECT_NEAR(mean, 0.1, 0.1 * 0.05) << b;
    EXPECT_NEAR(cv, 1 / std::sqrt(b), 0.06 / std::sqrt(b)) << b;
  }
}

TEST(SimWorkloads, NormalAndUniformLengthsHaveTheirMomentsAndStayPositive) {
  const Workload w = parse_workload("poisson:rate=1,n=20000,input=normal:500:100,output=uniform:10:30,seed=5");
  double sum = 0, sq = 0;
  int64_t out_lo = 1 << 30, out_hi = 0;
  for (const auto& r : w.requests) {
    sum += static_cast<double>(r.input_tokens);
    sq += static_cast<double>(r.input_tokens * r.input_tokens);
    out_lo = std::min(out_lo, r.output_tokens);
    out_hi = std::max(out_hi, r.output_tokens);
  }
  const double n = static_cast<double>(w.requests.size());
  EXPECT_NEAR(sum / n, 500, 3);
  EXPECT_NEAR(std::sqrt(sq / n - (sum / n) * (sum / n)), 100, 3);
  EXPECT_EQ(out_lo, 10);
  EXPECT_EQ(out_hi, 30);
  // A normal that reaches below one token is cut there.
  for (const auto& r : parse_workload("poisson:rate=1,n=2000,input=normal:2:50,output=1").requests)
    ASSERT_GE(r.input_tokens, 1);
}

TEST(SimWorkloads, LengthsAreDrawnAsPairsFromATraceOrTheBundledAzureSets) {
  const auto dir = std::filesystem::temp_directory_path() / "perfloom_test_lengths";
  std::filesystem::create_directories(dir);
  const auto csv = dir / "pairs.csv";
  std::ofstream(csv) << "arrival_s,input_tokens,output_tokens\n0,100,7\n5,900,3\n";
  const Workload w = parse_workload("closed:concurrency=2,n=200,lengths=" + csv.string() + ",seed=2");
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto& r : w.requests) seen.insert({r.input_tokens, r.output_tokens});
  EXPECT_EQ(seen, (std::set<std::pair<int64_t, int64_t>>{{100, 7}, {900, 3}}));
  std::filesystem::remove_all(dir);
  // The Azure 2023 conversation trace: median prompt 1020 and answer 129 tokens (all 19,366 requests).
  const Workload chat = parse_workload("poisson:rate=5,n=4000,lengths=chat,seed=1");
  std::vector<int64_t> in, out;
  for (const auto& r : chat.requests) {
    in.push_back(r.input_tokens);
    out.push_back(r.output_tokens);
  }
  std::nth_element(in.begin(), in.begin() + 2000, in.end());
  std::nth_element(out.begin(), out.begin() + 2000, out.end());
  EXPECT_NEAR(static_cast<double>(in[2000]), 1020, 60);
  EXPECT_NEAR(static_cast<double>(out[2000]), 129, 12);
  EXPECT_NO_THROW(parse_workload("poisson:rate=5,n=10,lengths=code"));
  // Vidur's arXiv summarisation lengths: long prompts, short answers, at most 4,096 tokens in all
  // (median prompt 2,730, answer 167 over its 28,257 requests).
  const Workload summ = parse_workload("closed:concurrency=4,n=4000,lengths=summarization,seed=1");
  in.clear();
  out.clear();
  for (const auto& r : summ.requests) {
    in.push_back(r.input_tokens);
    out.push_back(r.output_tokens);
    EXPECT_LE(r.input_tokens + r.output_tokens, 4096);
  }
  std::nth_element(in.begin(), in.begin() + 2000, in.end());
  std::nth_element(out.begin(), out.begin() + 2000, out.end());
  EXPECT_NEAR(static_cast<double>(in[2000]), 2730, 120);
  EXPECT_NEAR(static_cast<double>(out[2000]), 167, 15);
}

TEST(SimWorkloads, GoodputCountsTheMeasuredRequestsThatMeetTheSla) {
  SimulationConfig sc = one_ms_steps();
  // Steps last 1 ms, so a prompt's first token comes 1-2 ms after it arrives, by when in a step it does.
  sc.sla.ttft_ms = 1.5;
  sc.sla.tpot_ms = 1.5;
  const auto r = run("poisson:rate=400,n=200,input=16:600,output=1:20,seed=4", sc);
  int64_t met = 0;
  for (const auto& q : r.requests) met += q.ttft_ms() <= 1.5 && (q.output_tokens < 2 || q.tpot_ms() <= 1.5) ? 1 : 0;
  EXPECT_EQ(r.sla_met, met);
  EXPECT_GT(met, 0);
  EXPECT_LT(met, 200);
  EXPECT_NEAR(r.sla_attainment, static_cast<double>(met) / 200, 1e-12);
  EXPECT_NEAR(r.goodput_requests_per_s, r.requests_per_s * r.sla_attainment, 1e-9);
}

TEST(SimWorkloads, TheSlaSpecIsParsedStrictly) {
  const Sla s = parse_sla("ttft=200,tpot=25.5");
  EXPECT_EQ(s.ttft_ms, 200);
  EXPECT_EQ(s.tpot_ms, 25.5);
  EXPECT_EQ(s.e2e_ms, 0);
  for (const char* bad :
       {"ttft=0", "ttft=-1", "ttft=nan", "ttft=1e400", "tpot=5ms", "ttft=1,ttft=2", "p99=3", "ttft", ""})
    EXPECT_THROW(parse_sla(bad), std::invalid_argument) << bad;
}

TEST(SimWorkloads, BadSpecsSayWhichPartAndWhy) {
  EXPECT_NE(expect_error("closed:concurrency=0,n=10,input=8,output=8").find("concurrency must be a positive"),
            std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,input=8,output=8,burstiness=0").find("burstiness"), std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,input=8,output=8,burstiness=nan").find("burstiness"), std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1e-15,n=10,input=8,output=8").find("rate must be from"), std::string::npos);
  EXPECT_NE(expect_error("closed:concurrency=5,n=10,input=8,output=8,warmup=5,cooldown=5").find("leave none"),
            std::string::npos);
  EXPECT_NE(expect_error("closed:concurrency=5,n=10,input=8,output=8,think=1").find("give turns="), std::string::npos);
  EXPECT_NE(expect_error("closed:concurrency=5,n=10,lengths=chat,input=8").find("without input="), std::string::npos);
  EXPECT_NE(expect_error("closed:concurrency=5,n=10,output=8").find("missing \"input=\""), std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,input=normal:0:5,output=8").find("mean"), std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,input=gauss:5:5,output=8").find("normal:MEAN:SD"), std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,input=1000000000000,output=8").find("length in tokens"),
            std::string::npos);
  EXPECT_NE(expect_error("poisson:rate=1,n=10,lengths=/nonexistent/pairs.csv").find("/nonexistent/pairs.csv"),
            std::string::npos);
  EXPECT_NE(expect_error("open:rate=1").find("expected batch, poisson, closed or trace"), std::string::npos);
}
