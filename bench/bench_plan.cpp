// Speed of the deployment planner: `perfloom plan` for Llama-3.1-70B over every GPU type of the
// database, the Azure conversation lengths at 10 requests/s under TTFT p90 <= 1 s and TPOT p90 <= 50 ms
// (goal: under 30 s on a 2-core machine). Kernels are predicted by the learned models, as `perfloom
// plan` predicts them (loading them is part of the setup time); --roofline for the roofline;
// --disaggregated searches disaggregated prefill/decode deployments too.
//   perfloom-bench-plan [--roofline] [--disaggregated] [MODEL] [RATE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/plan/planner.h"
#include "model/predictor.h"

using namespace perfloom;

int main(int argc, char** argv) {
  bool roofline = false, disaggregated = false;
  while (argc > 1 && std::string(argv[1]).rfind("--", 0) == 0) {
    const std::string flag = argv[1];
    if (flag == "--roofline") {
      roofline = true;
    } else if (flag == "--disaggregated") {
      disaggregated = true;
    } else {
      std::fprintf(stderr, "perfloom-bench-plan: unknown option %s\n", flag.c_str());
      return 2;
    }
    --argc;
    ++argv;
  }
  const std::string model_id = argc > 1 ? argv[1] : "llama-3.1-70b";
  const double rate = argc > 2 ? std::atof(argv[2]) : 10.0;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const GpuDatabase gpus = GpuDatabase::builtin();
    const sim::LlmConfig model = sim::load_llm_config(model_id);
    std::string warning;
    const std::shared_ptr<const KernelPredictor> predictor =
        roofline ? std::make_shared<RooflinePredictor>() : make_default_predictor(&warning);
    if (!warning.empty()) std::fprintf(stderr, "perfloom-bench-plan: warning: %s\n", warning.c_str());
    std::vector<const GpuSpec*> all;
    for (const GpuSpec& g : gpus.all()) all.push_back(&g);
    plan::PlanOptions o;
    o.workload = "poisson:rate=1,n=300,lengths=chat,seed=1";
    o.sla = plan::parse_plan_sla("ttft_p90=1000,tpot_p90=50");
    o.load = plan::Load{plan::Load::Kind::requests, rate};
    o.disaggregated = disaggregated;
    const auto t1 = std::chrono::steady_clock::now();
    const plan::PlanResult r = plan::plan_deployments(model, all, *predictor, plan::bundled_prices(), o);
    const auto t2 = std::chrono::steady_clock::now();
    const double setup_s = std::chrono::duration<double>(t1 - t0).count();
    const double plan_s = std::chrono::duration<double>(t2 - t1).count();
    std::printf("%s at %g req/s over %zu GPU types, %s predictor%s: %zu simulations, %zu feasible, %zu left out\n",
                model_id.c_str(), rate, all.size(), predictor->name().c_str(), disaggregated ? ", disaggregated too" : "",
                r.simulations, r.ranked.size(), r.rejected.size());
    if (!r.ranked.empty()) std::printf("first: %s\n", r.ranked.front().d.describe().c_str());
    std::printf("wall time: %.3f s (setup %.3f s, planning %.3f s)\n", setup_s + plan_s, setup_s, plan_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfloom-bench-plan: %s\n", e.what());
    return 1;
  }
}
