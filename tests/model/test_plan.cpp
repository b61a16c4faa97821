// The deployment planner (model/plan/planner.h) against cases worked out beside it: a model that
// just fits, an SLA only TP 2 meets, prices that flip the ranking, the search against exhaustive
// simulation of the whole deployments, the Pareto front. The roofline predictor keeps it fast and
// deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "model/gpu_database.h"
#include "model/plan/plan_json.h"
#include "model/plan/planner.h"
#include "model/predictor.h"

using namespace perfloom;
using namespace perfloom::plan;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

const sim::LlmConfig& llama8b() {
  static const sim::LlmConfig c = sim::load_llm_config("llama-3.1-8b");
  return c;
}

Prices prices(double h100, double h200) {
  Prices p;
  p.by_gpu["h100-sxm"] = {h100, "test"};
  p.by_gpu["h200"] = {h200, "test"};
  return p;
}

PlanOptions options(const std::string& sla, double rate, std::vector<int> tp = {1, 2}, int max_gpus = 2) {
  PlanOptions o;
  o.workload = "poisson:rate=1,n=60,input=512,output=64,seed=1";
  o.sla = parse_plan_sla(sla);
  o.load = Load{Load::Kind::requests, rate};
  o.tp = std::move(tp);
  o.max_gpus = max_gpus;
  return o;
}

// One whole deployment simulated as the planner's finalists are.
sim::SimulationResult whole(const GpuSpec& gpu, int tp, int replicas, const PlanOptions& o, double rate) {
  RooflinePredictor roof;
  sim::SimulationConfig sc = o.base;
  sc.par.tp = tp;
  sc.deployment.replicas = replicas;
  sc.deployment.router = sim::RouterPolicy::least_loaded;
  sc.record_steps = false;
  return sim::simulate(llama8b(), gpu, roof, sim::parse_workload(with_key(o.workload, "rate", std::to_string(rate))),
                       sc);
}

}  // namespace

TEST(Plan, SlaLoadPricesAndSpecsAreParsedStrictly) {
  const PlanSla s = parse_plan_sla("ttft_p90=500ms,tpot_p99=40,e2e_mean=9000");
  ASSERT_EQ(s.bounds.size(), 3u);
  EXPECT_EQ(s.bounds[0].name(), "ttft_p90");
  EXPECT_EQ(s.bounds[0].ms, 500);
  EXPECT_EQ(s.bounds[1].percentile, 99);
  EXPECT_EQ(s.bounds[2].percentile, 0);
  for (const char* bad :
       {"", "ttft=5", "ttft_p95=5", "itl_p90=5", "ttft_p90=-1", "ttft_p90=x", "ttft_p90=1,ttft_p90=2"})
    EXPECT_THROW(parse_plan_sla(bad), std::invalid_argument) << bad;
  EXPECT_EQ(parse_load("20req/s").value, 20);
  EXPECT_EQ(parse_load("5000tok/s").kind, Load::Kind::output_tokens);
  for (const char* bad : {"20", "0req/s", "-3tok/s", "fastreq/s"}) EXPECT_THROW(parse_load(bad), std::invalid_argument);
  const Prices p = parse_prices_csv("gpu,usd_per_gpu_hour,source\nh100-sxm,2.5,\"list, May\"\n# c\nh200,3\n", "p.csv");
  EXPECT_EQ(p.find("h100-sxm")->usd_per_gpu_hour, 2.5);
  EXPECT_EQ(p.find("h100-sxm")->source, "list, May");
  EXPECT_EQ(p.find("h200")->source, "p.csv");
  EXPECT_THROW(parse_prices_csv("h100-sxm,free\n", "p.csv"), std::invalid_argument);
  EXPECT_THROW(parse_prices_csv("h100-sxm,1\nh100-sxm,2\n", "p.csv"), std::invalid_argument);
  EXPECT_EQ(with_key("poisson:rate=1,n=5", "rate", "3"), "poisson:rate=3,n=5");
  EXPECT_EQ(with_key("closed:n=5", "concurrency", "8"), "closed:n=5,concurrency=8");
  // The bundled table names its sources.
  const Prices bundled = bundled_prices();
  ASSERT_NE(bundled.find("h100-sxm"), nullptr);
  EXPECT_NE(bundled.find("h100-sxm")->source.find("https://"), std::string::npos);
}

TEST(Plan, AModelThatJustFitsIsKeptAndOneThatDoesNotIsSaidSo) {
  // Llama-3.1-8B's 15 GiB of bf16 weights fit a 24 GB RTX 4090 (21.6 GiB usable), not a 16 GB T4.
  RooflinePredictor roof;
  PlanOptions o = options("ttft_p90=100000,tpot_p90=100000", 0.2, {1}, 1);
  const PlanResult r = plan_deployments(llama8b(), {&db().get("rtx-4090"), &db().get("t4")}, roof, Prices{}, o);
  ASSERT_EQ(r.ranked.size(), 1u);
  EXPECT_EQ(r.ranked[0].d.gpu->id, "rtx-4090");
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].d.gpu->id, "t4");
  EXPECT_NE(r.rejected[0].why_not.find("does not fit in memory"), std::string::npos) << r.rejected[0].why_not;
  EXPECT_EQ(r.notes.size(), 2u);  // neither has a price here
}

TEST(Plan, AnSlaOnlyTp2MeetsRanksTp2AndSaysWhyTp1Fails) {
  // At a light load a request decodes alone, so replicas do not shorten TPOT; a bound between TP 1's
  // and TP 2's TPOT is met by TP 2 only.
  const GpuSpec& h100 = db().get("h100-sxm");
  PlanOptions probe = options("tpot_p90=100000", 0.2);
  const double tp1 = whole(h100, 1, 1, probe, 0.2).tpot_ms.p90, tp2 = whole(h100, 2, 1, probe, 0.2).tpot_ms.p90;
  ASSERT_LT(tp2, tp1);
  RooflinePredictor roof;
  const PlanOptions o = options("tpot_p90=" + std::to_string((tp1 + tp2) / 2), 0.2);
  const PlanResult r = plan_deployments(llama8b(), {&h100}, roof, prices(2, 3), o);
  ASSERT_EQ(r.ranked.size(), 1u);
  EXPECT_EQ(r.ranked[0].d.tp, 2);
  EXPECT_EQ(r.ranked[0].d.replicas, 1);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].d.tp, 1);
  EXPECT_NE(r.rejected[0].why_not.find("tpot_p90"), std::string::npos) << r.rejected[0].why_not;
  EXPECT_NE(r.rejected[0].why_not.find("2 replicas"), std::string::npos) << r.rejected[0].why_not;
}

TEST(Plan, APriceChangeFlipsTheRanking) {
  RooflinePredictor roof;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200")};
  const PlanOptions o = options("ttft_p90=5000,tpot_p90=200", 1.0, {1}, 1);
  const PlanResult cheap_h100 = plan_deployments(llama8b(), gpus, roof, prices(2, 4), o);
  const PlanResult cheap_h200 = plan_deployments(llama8b(), gpus, roof, prices(4, 2), o);
  ASSERT_EQ(cheap_h100.ranked.size(), 2u);
  ASSERT_EQ(cheap_h200.ranked.size(), 2u);
  EXPECT_EQ(cheap_h100.ranked[0].d.gpu->id, "h100-sxm");
  EXPECT_EQ(cheap_h200.ranked[0].d.gpu->id, "h200");
  EXPECT_DOUBLE_EQ(cheap_h100.ranked[0].usd_per_hour, 2.0);
  EXPECT_GT(cheap_h100.ranked[0].usd_per_million_output_tokens, 0);
}

TEST(Plan, TheSearchNeverMissesACheaperDeploymentThanExhaustiveSimulationFinds) {
  // Every (GPU, TP, replicas) of a small space simulated whole at the full load; the planner's first
  // choice must cost no more than the cheapest that meets the SLA.
  RooflinePredictor roof;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200")};
  const double rate = 12;
  const PlanOptions o = options("ttft_p90=400,tpot_p90=30", rate, {1, 2}, 4);
  const Prices pr = prices(2.0, 2.6);
  double best = std::numeric_limits<double>::infinity();
  for (const GpuSpec* g : gpus)
    for (int tp : {1, 2})
      for (int rep = 1; rep * tp <= 4; ++rep) {
        const sim::SimulationResult s = whole(*g, tp, rep, o, rate);
        if (s.ttft_ms.p90 <= 400 && s.tpot_ms.p90 <= 30)
          best = std::min(best, pr.find(g->id)->usd_per_gpu_hour * tp * rep);
      }
  ASSERT_TRUE(std::isfinite(best)) << "the case must have a feasible deployment";
  const PlanResult r = plan_deployments(llama8b(), gpus, roof, pr, o);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_LE(r.ranked[0].usd_per_hour, best + 1e-9);
  EXPECT_TRUE(r.ranked[0].simulated_whole);
}

// Issue #57: the engine settings are searched with the GPUs. Llama-3.1-70B's 131 GiB of bf16 weights
// do not fit one H200 (126.9 GiB usable at 0.9), its fp8 weights do; an A100 has no fp8 tensor cores
// for an fp8 KV cache's attention. Each setting left out says which and why.
TEST(Plan, EngineSettingsAreSearchedAndEachLeftOutOneSaysWhy) {
  RooflinePredictor roof;
  static const sim::LlmConfig llama70b = sim::load_llm_config("llama-3.1-70b");
  PlanOptions o = options("ttft_p90=100000,tpot_p90=100000", 0.2, {1}, 1);
  o.settings = engine_settings_grid({"bf16", "fp8"}, {"auto", "fp8"}, {}, {});
  ASSERT_EQ(o.settings.size(), 4u);
  const PlanResult r =
      plan_deployments(llama70b, {&db().get("h200"), &db().get("a100-sxm-80gb")}, roof, prices(2, 3), o);
  EXPECT_EQ(r.settings, o.settings);
  bool h200_fp8 = false, h200_fp8_kv = false;
  for (const Candidate& c : r.ranked) {
    EXPECT_EQ(c.d.settings.quantization, "fp8") << c.d.describe();  // bf16 fits neither GPU
    if (c.d.gpu->id == "h200" && c.d.settings.kv_cache_dtype.empty()) {
      h200_fp8 = true;
      EXPECT_EQ(c.d.describe(), "1 x h200 (TP 1; fp8 weights)");
    }
    if (c.d.gpu->id == "h200" && c.d.settings.kv_cache_dtype == "fp8") {
      h200_fp8_kv = true;
      EXPECT_EQ(c.d.describe(), "1 x h200 (TP 1; fp8 weights, fp8 KV cache)");
    }
    EXPECT_NE(c.d.gpu->id + c.d.settings.kv_cache_dtype, "a100-sxm-80gbfp8");
  }
  EXPECT_TRUE(h200_fp8 && h200_fp8_kv);
  int no_fit = 0, no_fp8 = 0;
  for (const Candidate& c : r.rejected) {
    if (c.d.gpu->id == "a100-sxm-80gb" && c.d.settings.kv_cache_dtype == "fp8") {
      EXPECT_NE(c.why_not.find("has no fp8 tensor cores"), std::string::npos) << c.why_not;
      ++no_fp8;
    } else {
      EXPECT_EQ(c.d.settings.quantization, "bf16") << c.d.describe();
      EXPECT_NE(c.why_not.find("does not fit in memory"), std::string::npos) << c.why_not;
      ++no_fit;
    }
  }
  EXPECT_EQ(no_fit, 3);  // bf16 on the H200 with either KV dtype, and on the A100 with its own
  EXPECT_EQ(no_fp8, 2);  // the A100 with an fp8 KV cache, either weights
  // The same settings twice, "auto" and the default alike, are one; an unknown method is refused.
  EXPECT_EQ(engine_settings_grid({}, {"auto", ""}, {true, true}, {}).size(), 1u);
  const auto grid = engine_settings_grid({}, {}, {true, false}, {64, 256});
  ASSERT_EQ(grid.size(), 4u);
  EXPECT_EQ(grid[0].describe(), "max_num_seqs 64");
  EXPECT_EQ(grid[1].describe(), "");
  EXPECT_EQ(grid[2].describe(), "max_num_seqs 64, no chunked prefill");
  PlanOptions bad = o;
  bad.settings = engine_settings_grid({"fp7"}, {}, {}, {});
  EXPECT_THROW(plan_deployments(llama70b, {&db().get("h200")}, roof, Prices{}, bad), std::invalid_argument);
}

// A smaller max_num_seqs caps the batch: at a load that queues, TTFT grows as the cap shrinks, and the
// planner keeps each setting's own result.
TEST(Plan, MaxNumSeqsIsSearchedAndChangesTheAnswer) {
  RooflinePredictor roof;
  PlanOptions o = options("ttft_p90=100000,tpot_p90=100000", 40, {1}, 1);
  o.settings = engine_settings_grid({}, {}, {}, {2, 256});
  const PlanResult r = plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  ASSERT_EQ(r.ranked.size(), 2u);
  const Candidate& capped = r.ranked[0].d.settings.max_num_seqs == 2 ? r.ranked[0] : r.ranked[1];
  const Candidate& wide = r.ranked[0].d.settings.max_num_seqs == 2 ? r.ranked[1] : r.ranked[0];
  EXPECT_EQ(wide.d.settings.max_num_seqs, 256);
  EXPECT_GT(capped.ttft_p90_ms, 2 * wide.ttft_p90_ms);
  EXPECT_LT(capped.output_tokens_per_s, wide.output_tokens_per_s * 1.0001);
}

// The chunked-prefill token budget is searched too: with 4096-token prompts a budget of 512 cuts
// each prompt into 8 chunks over 8 steps, so TTFT grows (444 against 417 ms here), and each
// candidate is what `simulate` gives with that budget; the setting survives the plan's JSON.
TEST(Plan, MaxNumBatchedTokensIsSearchedAndReachesTheScheduler) {
  RooflinePredictor roof;
  PlanOptions o = options("ttft_p90=100000,tpot_p90=100000", 4, {1}, 1);
  o.workload = "poisson:rate=1,n=40,input=4096,output=32,seed=3";
  o.settings = engine_settings_grid({}, {}, {}, {}, {512, 8192});
  ASSERT_EQ(o.settings.size(), 2u);
  EXPECT_EQ(o.settings[0].describe(), "max_num_batched_tokens 512");
  EXPECT_EQ(o.settings[1].describe(), "");
  const PlanResult r = plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  ASSERT_EQ(r.ranked.size(), 2u);
  std::map<int64_t, const Candidate*> by_budget;
  for (const Candidate& c : r.ranked) by_budget[c.d.settings.max_num_batched_tokens] = &c;
  ASSERT_EQ(by_budget.size(), 2u);
  EXPECT_GT(by_budget.at(512)->ttft_p90_ms, 1.02 * by_budget.at(8192)->ttft_p90_ms);
  for (const auto& [budget, c] : by_budget) {
    sim::SimulationConfig sc;
    sc.sched.max_num_batched_tokens = budget;
    sc.record_steps = false;
    const sim::SimulationResult direct =
        sim::simulate(llama8b(), db().get("h100-sxm"), roof,
                      sim::parse_workload(with_key(o.workload, "rate", "4")), sc);
    EXPECT_NEAR(direct.ttft_ms.p90, c->ttft_p90_ms, 1e-9 * c->ttft_p90_ms) << budget;
  }
  const nlohmann::json j = plan_to_json(r);
  EXPECT_EQ(j["ranked"][0]["settings"].value("max_num_batched_tokens", 0) +
                j["ranked"][1]["settings"].value("max_num_batched_tokens", 0),
            512 + 8192);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(j.dump()), db(), "p.json").result).dump(), j.dump());
}

// Disaggregated pools take pipeline parallelism where the search allows it: llama-3.1-70b in bf16
// does not fit on one H200, and at TP 1 only PP 2 holds it, in both pools.
TEST(Plan, DisaggregatedPoolsTakePipelineParallelismWhereOneGpuCannotHoldTheModel) {
  RooflinePredictor roof;
  static const sim::LlmConfig llama70b = sim::load_llm_config("llama-3.1-70b");
  PlanOptions o = options("ttft_p90=20000,tpot_p90=500", 0.5, {1}, 6);
  o.pp = {1, 2};
  o.workload = "poisson:rate=1,n=24,input=512,output=16,seed=1";
  o.disaggregated = true;
  const PlanResult r = plan_deployments(llama70b, {&db().get("h200")}, roof, prices(2.0, 2.6), o);
  int disaggregated = 0;
  for (const Candidate& c : r.ranked) {
    if (!c.d.disaggregated()) continue;
    ++disaggregated;
    EXPECT_EQ(c.d.pp, 2) << c.d.describe();
    EXPECT_EQ(c.d.decode_pp, 2) << c.d.describe();
    EXPECT_EQ(c.d.gpus(), 2 * c.d.replicas + 2 * c.d.decode_replicas) << c.d.describe();
    EXPECT_NEAR(c.usd_per_hour, 2.6 * c.d.gpus(), 1e-9) << c.d.describe();
    const std::string s = c.d.describe();  // "2 x h200 (TP 1, PP 2) prefill + 2 x h200 (TP 1, PP 2) decode"
    const std::size_t split = s.find(") prefill + ");
    ASSERT_NE(split, std::string::npos) << s;
    EXPECT_LT(s.find("PP 2"), split) << s;
    EXPECT_NE(s.find("PP 2", split), std::string::npos) << s;
  }
  EXPECT_GT(disaggregated, 0);
  const nlohmann::json j = plan_to_json(r);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(j.dump()), db(), "p.json").result).dump(), j.dump());
}

// Disaggregated prefill/decode (issue #57): every disaggregated row is a whole simulation that meets
// the SLA, priced as its two pools, with no decode instance to spare; it survives the JSON round trip.
TEST(Plan, DisaggregatedDeploymentsMeetTheSlaWithNoDecodeInstanceToSpare) {
  RooflinePredictor roof;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200")};
  PlanOptions o = options("ttft_p90=800,tpot_p90=20", 8, {1, 2}, 6);
  o.workload = "poisson:rate=1,n=120,input=2048,output=128,seed=1";
  o.disaggregated = true;
  const PlanResult r = plan_deployments(llama8b(), gpus, roof, prices(2.0, 2.6), o);
  int disaggregated = 0;
  for (const Candidate& c : r.ranked) {
    if (!c.d.disaggregated()) continue;
    ++disaggregated;
    EXPECT_TRUE(c.simulated_whole);
    EXPECT_LE(c.d.gpus(), 6);
    const double want_usd = (c.d.gpu->id == "h200" ? 2.6 : 2.0) * c.d.tp * c.d.replicas +
                            (c.d.decode_gpu->id == "h200" ? 2.6 : 2.0) * c.d.decode_tp * c.d.decode_replicas;
    EXPECT_NEAR(c.usd_per_hour, want_usd, 1e-9) << c.d.describe();
    EXPECT_NE(c.d.describe().find(") prefill + "), std::string::npos) << c.d.describe();
    // The same deployment simulated here: the bounds the plan reported, and one decode instance fewer misses.
    auto run = [&](int decode_replicas) {
      sim::SimulationConfig sc;
      sc.deployment.disaggregated = true;
      sc.deployment.router = sim::RouterPolicy::least_loaded;
      sc.deployment.prefill_gpu = c.d.gpu;
      sc.deployment.decode_gpu = c.d.decode_gpu;
      sc.deployment.prefill_replicas = c.d.replicas;
      sc.deployment.decode_replicas = decode_replicas;
      sc.deployment.prefill_par.tp = c.d.tp;
      sc.deployment.decode_par.tp = c.d.decode_tp;
      sc.par = sc.deployment.decode_par;
      sc.deployment.kv_transfer_gb_s = c.d.gpu == c.d.decode_gpu ? 0 : 50;
      sc.record_steps = false;
      return sim::simulate(llama8b(), *c.d.decode_gpu, roof, sim::parse_workload(with_key(o.workload, "rate", "8")), sc);
    };
    const sim::SimulationResult same = run(c.d.decode_replicas);
    EXPECT_NEAR(same.ttft_ms.p90, c.ttft_p90_ms, 1e-9 * c.ttft_p90_ms) << c.d.describe();
    EXPECT_NEAR(same.tpot_ms.p90, c.tpot_p90_ms, 1e-9 * c.tpot_p90_ms) << c.d.describe();
    EXPECT_LE(same.ttft_ms.p90, 800);
    EXPECT_LE(same.tpot_ms.p90, 20);
    if (c.d.decode_replicas > 1) {
      const sim::SimulationResult fewer = run(c.d.decode_replicas - 1);
      EXPECT_TRUE(fewer.ttft_ms.p90 > 800 || fewer.tpot_ms.p90 > 20) << c.d.describe();
    }
  }
  EXPECT_GT(disaggregated, 0);
  const nlohmann::json j = plan_to_json(r);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(j.dump()), db(), "p.json").result).dump(), j.dump());
  // Without a load the Pareto sweep holds, per GPU type, prefill:decode instances (1:1, 1:2, 2:1
  // within 3 GPUs) on a front of their own: throughput per GPU over all of their GPUs, the
  // simulation re-run here.
  PlanOptions closed = o;
  closed.load.reset();
  closed.tp = {1};
  closed.max_gpus = 3;  // 1 + 1, 1 + 2 and 2 + 1 instances
  closed.workload = "closed:concurrency=1,n=16,input=512,output=32,seed=1";
  closed.settings = {EngineSettings{}};
  closed.settings[0].max_num_seqs = 8;
  const PlanResult front = plan_deployments(llama8b(), {gpus[0]}, roof, prices(2.0, 2.6), closed);
  std::set<std::pair<int, int>> pools;
  bool on_front = false;
  for (const ParetoPoint& p : front.pareto) {
    if (!p.disaggregated()) continue;
    pools.emplace(p.prefill_replicas, p.decode_replicas);
    on_front |= p.on_front;
    EXPECT_EQ(p.gpus(), p.prefill_replicas + p.decode_replicas);
    const std::string replicas =
        p.prefill_replicas > 1 ? ", " + std::to_string(p.prefill_replicas) + " replicas" : std::string();
    EXPECT_NE(p.describe().find(std::to_string(p.prefill_replicas) + " x h100-sxm (TP 1" + replicas + ") prefill + "),
              std::string::npos)
        << p.describe();
    // Dominated only by points of its own curve.
    for (const ParetoPoint& q : front.pareto) {
      if (p.on_front && q.disaggregated() && q.tokens_per_s_per_gpu > p.tokens_per_s_per_gpu) {
        EXPECT_LT(q.tokens_per_s_per_user, p.tokens_per_s_per_user);
      }
    }
  }
  EXPECT_EQ(pools, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}}));
  EXPECT_TRUE(on_front);
  const ParetoPoint& last = front.pareto.back();
  ASSERT_TRUE(last.disaggregated());
  ASSERT_EQ(last.prefill_replicas, 2);  // 2P1D, swept last
  sim::SimulationConfig sc = closed.base;
  sc.sched.max_num_seqs = 8;
  sc.deployment.disaggregated = true;
  sc.deployment.router = sim::RouterPolicy::least_loaded;
  sc.deployment.prefill_gpu = sc.deployment.decode_gpu = last.gpu;
  sc.deployment.prefill_replicas = last.prefill_replicas;
  sc.deployment.decode_replicas = last.decode_replicas;
  sc.record_steps = false;
  const sim::SimulationResult again = sim::simulate(
      llama8b(), *last.gpu, roof,
      sim::parse_workload(with_key(with_key(closed.workload, "concurrency", std::to_string(last.concurrency)), "n",
                                   std::to_string(std::max(16, 4 * last.concurrency)))),
      sc);
  EXPECT_NEAR(last.tokens_per_s_per_gpu, again.output_tokens_per_s / last.gpus(), 1e-9 * last.tokens_per_s_per_gpu);
  const nlohmann::json fj = plan_to_json(front);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(fj.dump()), db(), "f.json").result).dump(), fj.dump());
}

// The disaggregated search prices only some pairs of pools (each decode pool behind its own GPU
// type's cheapest prefill pool and the cheapest of any type): it must still find no deployment
// dearer than the cheapest that exhaustive simulation of every pair of pools meets the SLA with.
TEST(Plan, TheDisaggregatedSearchNeverMissesACheaperPairOfPoolsThanExhaustiveSimulationFinds) {
  RooflinePredictor roof;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200")};
  const int max_gpus = 6;
  // At 24 requests/s the cheapest pair is 2 x h100-sxm prefill + 1 x h200 decode ($6.60/h).
  PlanOptions o = options("ttft_p90=800,tpot_p90=20", 24, {1}, max_gpus);
  o.workload = "poisson:rate=1,n=80,input=2048,output=96,seed=1";
  o.disaggregated = true;
  const Prices pr = prices(2.0, 2.6);
  double best = std::numeric_limits<double>::infinity();
  std::string best_what;
  for (const GpuSpec* pg : gpus)
    for (const GpuSpec* dg : gpus)
      for (int pn = 1; pn < max_gpus; ++pn)
        for (int dn = 1; pn + dn <= max_gpus; ++dn) {
          sim::SimulationConfig sc = o.base;
          sc.deployment.disaggregated = true;
          sc.deployment.router = sim::RouterPolicy::least_loaded;
          sc.deployment.prefill_gpu = pg;
          sc.deployment.decode_gpu = dg;
          sc.deployment.prefill_replicas = pn;
          sc.deployment.decode_replicas = dn;
          sc.par = sc.deployment.decode_par;
          sc.deployment.kv_transfer_gb_s = pg == dg ? 0 : 50;
          sc.record_steps = false;
          const sim::SimulationResult s =
              sim::simulate(llama8b(), *dg, roof, sim::parse_workload(with_key(o.workload, "rate", "24")), sc);
          const double usd = pr.find(pg->id)->usd_per_gpu_hour * pn + pr.find(dg->id)->usd_per_gpu_hour * dn;
          if (s.ttft_ms.p90 <= 800 && s.tpot_ms.p90 <= 20 && usd < best) {
            best = usd;
            best_what = std::to_string(pn) + " x " + pg->id + " + " + std::to_string(dn) + " x " + dg->id;
          }
        }
  ASSERT_TRUE(std::isfinite(best)) << "the case must have a feasible pair of pools";
  const PlanResult r = plan_deployments(llama8b(), gpus, roof, pr, o);
  double found = std::numeric_limits<double>::infinity();
  for (const Candidate& c : r.ranked)
    if (c.d.disaggregated()) found = std::min(found, c.usd_per_hour);
  EXPECT_LE(found, best + 1e-9) << "exhaustive simulation's cheapest: " << best_what;
}

// Pipeline parallelism is searched with TP: Llama-3.1-70B's 131.4 GiB of bf16 weights fit no single
// H100 (72 GiB usable), half of them on each of two pipeline stages do.
TEST(Plan, PipelineStagesAreSearchedWithTp) {
  RooflinePredictor roof;
  static const sim::LlmConfig llama70b = sim::load_llm_config("llama-3.1-70b");
  PlanOptions o = options("ttft_p90=100000,tpot_p90=100000", 0.2, {1}, 2);
  o.pp = {1, 2};
  const PlanResult r = plan_deployments(llama70b, {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  ASSERT_EQ(r.ranked.size(), 1u);
  EXPECT_EQ(r.ranked[0].d.pp, 2);
  EXPECT_EQ(r.ranked[0].d.gpus(), 2);
  EXPECT_EQ(r.ranked[0].d.describe(), "2 x h100-sxm (TP 1, PP 2)");
  EXPECT_DOUBLE_EQ(r.ranked[0].usd_per_hour, 4.0);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].d.pp, 1);
  EXPECT_NE(r.rejected[0].why_not.find("does not fit in memory"), std::string::npos) << r.rejected[0].why_not;
  const nlohmann::json j = plan_to_json(r);
  EXPECT_EQ(j["ranked"][0]["pp"], 2);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(j.dump()), db(), "p.json").result).dump(), j.dump());
}

// Wide EP (issue #57): an MoE model's data-parallel attention ranks in expert groups behind a
// router, simulated whole; each such row is the first grouping, in order of GPUs, that meets the SLA,
// and gives, simulated here, the p90s it reports: every grouping of fewer GPUs (and of as many GPUs
// in fewer groups) simulated exhaustively misses it. A dense model gets a note instead.
TEST(Plan, WideEpGroupsAreTheFewestRanksThatMeetTheSla) {
  RooflinePredictor roof;
  static const sim::LlmConfig moe = sim::load_llm_config("qwen3-30b-a3b");
  PlanOptions o = options("ttft_p90=1000,tpot_p90=40", 12, {1, 2}, 8);
  o.workload = "poisson:rate=1,n=120,input=1024,output=128,seed=1";
  o.wide_ep = true;
  const PlanResult r = plan_deployments(moe, {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  int wide = 0;
  for (const Candidate& c : r.ranked) {
    if (!c.d.wide_ep) continue;
    ++wide;
    EXPECT_TRUE(c.simulated_whole);
    EXPECT_EQ(c.d.replicas % c.d.ep_groups, 0);
    EXPECT_NE(c.d.describe().find("DP attention ranks"), std::string::npos) << c.d.describe();
    EXPECT_NE(c.d.describe().find("EP " + std::to_string(c.d.ep()) + ")"), std::string::npos) << c.d.describe();
    auto run = [&](int ranks, int groups) {
      sim::SimulationConfig sc;
      sc.par.tp = c.d.tp;
      sc.par.ep = c.d.tp * ranks;
      sc.deployment.replicas = ranks * groups;
      sc.deployment.router = sim::RouterPolicy::least_loaded;
      sc.record_steps = false;
      return sim::simulate(moe, *c.d.gpu, roof, sim::parse_workload(with_key(o.workload, "rate", "12")), sc);
    };
    const sim::SimulationResult same = run(c.d.replicas / c.d.ep_groups, c.d.ep_groups);
    EXPECT_NEAR(same.ttft_ms.p90, c.ttft_p90_ms, 1e-9 * c.ttft_p90_ms);
    EXPECT_NEAR(same.tpot_ms.p90, c.tpot_p90_ms, 1e-9 * c.tpot_p90_ms);
    for (int ranks = 2; c.d.tp * ranks <= 8; ranks *= 2)
      for (int groups = 1; c.d.tp * ranks * groups <= 8; groups *= 2) {
        const int gpus = c.d.tp * ranks * groups;
        if (gpus > c.d.gpus() || (gpus == c.d.gpus() && groups >= c.d.ep_groups)) continue;
        try {
          const sim::SimulationResult fewer = run(ranks, groups);
          EXPECT_TRUE(fewer.ttft_ms.p90 > 1000 || fewer.tpot_ms.p90 > 40)
              << groups << " groups of " << ranks << " ranks also meet the SLA; the plan chose " << c.d.describe();
        } catch (const std::exception&) {
          // these ranks do not hold the experts
        }
      }
  }
  EXPECT_GT(wide, 0);
  const nlohmann::json j = plan_to_json(r);
  EXPECT_EQ(j["wide_ep"], true);
  EXPECT_EQ(plan_to_json(plan_from_json(nlohmann::json::parse(j.dump()), db(), "p.json").result).dump(), j.dump());
  // A plan file whose expert groups do not divide its ranks is refused, saying where.
  nlohmann::json bad = j;
  for (auto& row : bad["ranked"])
    if (row.value("wide_ep", false)) {
      row["ep_groups"] = row["replicas"].get<int>() + 1;
      break;
    }
  try {
    plan_from_json(bad, db(), "p.json");
    ADD_FAILURE() << "expert groups that do not divide the ranks were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: ranked["), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ep_groups"), std::string::npos) << e.what();
  }
  const PlanResult dense = plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  for (const Candidate& c : dense.ranked) EXPECT_FALSE(c.d.wide_ep);
  EXPECT_NE(dense.notes.back().find("has no MoE layers"), std::string::npos);
}

TEST(Plan, WithoutALoadTheParetoFrontHoldsOnlyUndominatedPoints) {
  RooflinePredictor roof;
  PlanOptions o;
  o.workload = "closed:concurrency=1,n=16,input=256,output=32";
  o.sla = parse_plan_sla("tpot_p90=1000");
  o.tp = {1, 2};
  o.max_gpus = 2;
  o.base.sched.max_num_seqs = 16;
  const PlanResult r = plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, prices(2, 3), o);
  ASSERT_EQ(r.pareto.size(), 10u);  // concurrency 1..16 at TP 1 and 2
  int front = 0;
  for (const auto& p : r.pareto) {
    front += p.on_front ? 1 : 0;
    for (const auto& q : r.pareto)
      if (p.on_front) {
        EXPECT_FALSE(q.tokens_per_s_per_gpu > p.tokens_per_s_per_gpu &&
                     q.tokens_per_s_per_user > p.tokens_per_s_per_user);
      }
  }
  EXPECT_GE(front, 2);
  // More concurrency: more throughput per GPU, less per user.
  EXPECT_GT(r.pareto[4].tokens_per_s_per_gpu, r.pareto[0].tokens_per_s_per_gpu);
  EXPECT_LT(r.pareto[4].tokens_per_s_per_user, r.pareto[0].tokens_per_s_per_user);
}

TEST(Plan, BadRequestsGetAnAnswerNotAnEmptyTable) {
  RooflinePredictor roof;
  EXPECT_THROW(plan_deployments(llama8b(), {}, roof, Prices{}, options("tpot_p90=5", 1)), std::invalid_argument);
  PlanOptions closed = options("tpot_p90=5", 1);
  closed.workload = "closed:concurrency=2,n=10,input=8,output=8";
  EXPECT_THROW(plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, Prices{}, closed), std::invalid_argument);
  // An SLA nothing meets: no ranking, and each candidate says which bound binds and by how much.
  const PlanResult r =
      plan_deployments(llama8b(), {&db().get("h100-sxm")}, roof, Prices{}, options("tpot_p90=0.01", 1));
  EXPECT_TRUE(r.ranked.empty());
  ASSERT_EQ(r.rejected.size(), 2u);
  for (const auto& c : r.rejected) EXPECT_NE(c.why_not.find("> 0.01 ms"), std::string::npos) << c.why_not;
}

// --shard K/N and --merge: the shards of a run over four GPU types, serialised as `plan --json`
// writes them and merged, give the plan of the single run: the same ranking, rejections, notes,
// Pareto front and simulation count.
TEST(Plan, ShardsMergeIntoTheSingleRunsPlan) {
  RooflinePredictor roof;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200"), &db().get("l40s"),
                                            &db().get("t4")};
  std::vector<std::string> ids;
  for (const GpuSpec* g : gpus) ids.push_back(g->id);
  auto check = [&](const PlanOptions& o) {
    const PlanResult whole_run = plan_deployments(llama8b(), gpus, roof, prices(2, 3), o);
    const nlohmann::json expected = plan_to_json(whole_run);
    std::vector<PlanShard> shards;
    std::vector<std::string> labels;
    for (int k : {3, 1, 2}) {  // any order
      const Shard s{k, 3};
      const PlanResult part = plan_deployments(llama8b(), shard_of(gpus, s), roof, prices(2, 3), o);
      const std::string text = plan_to_json(part, s, ids).dump();
      shards.push_back(plan_from_json(nlohmann::json::parse(text), db(), "shard" + std::to_string(k) + ".json"));
      labels.push_back("shard" + std::to_string(k) + ".json");
    }
    EXPECT_EQ(plan_to_json(merge_plans(shards, labels)).dump(1), expected.dump(1));
    // A shard missing, twice, or from another run: refused, naming the file.
    std::vector<PlanShard> two(shards.begin(), shards.begin() + 2);
    EXPECT_THROW(merge_plans(two, {labels[0], labels[1]}), std::invalid_argument);
    std::vector<PlanShard> dup = {shards[0], shards[0], shards[1]};
    try {
      merge_plans(dup, {"a.json", "b.json", "c.json"});
      ADD_FAILURE() << "a shard given twice was merged";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("b.json: shard 3 is given twice"), std::string::npos) << e.what();
    }
    std::vector<PlanShard> other = shards;
    other[1].result.workload += ",seed=2";
    try {
      merge_plans(other, labels);
      ADD_FAILURE() << "shards of two runs were merged";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("the workload differs"), std::string::npos) << e.what();
    }
    other = shards;
    other[2].result.settings.push_back(EngineSettings{"fp8", "", true, 7});
    try {
      merge_plans(other, labels);
      ADD_FAILURE() << "shards searching other engine settings were merged";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(labels[2] + ": the engine settings searched differs"), std::string::npos)
          << e.what();
    }
  };
  check(options("ttft_p90=3000,tpot_p90=150", 2.0, {1, 2}, 2));
  PlanOptions searched = options("ttft_p90=3000,tpot_p90=150", 2.0, {1}, 1);
  searched.settings = engine_settings_grid({}, {"auto", "fp8"}, {true, false}, {});
  check(searched);
  PlanOptions closed = options("tpot_p90=100", 1, {1}, 1);
  closed.load.reset();
  closed.workload = "closed:concurrency=1,n=16,input=256,output=32,seed=1";
  closed.base.sched.max_num_seqs = 4;
  check(closed);
}

TEST(Plan, ShardSpecsAndBadPlanFilesAreRefusedWithTheReason) {
  EXPECT_EQ(parse_shard("2/4").index, 2);
  EXPECT_EQ(parse_shard("2/4").count, 4);
  for (const char* bad : {"0/4", "5/4", "1/0", "a/b", "2", "1/5000", "-1/2"}) EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
  const std::vector<const GpuSpec*> gpus = {&db().get("h100-sxm"), &db().get("h200"), &db().get("l40s")};
  const auto s2 = shard_of(gpus, {2, 2});
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(s2[0]->id, "h200");
  try {
    plan_from_json(nlohmann::json::parse(R"({"model": "m", "workload": "w"})"), db(), "p.json");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: the plan has no \"sla_spec\""), std::string::npos) << e.what();
  }
}
