// Speed of the serving simulator: 10,000 requests of Llama-3.1-70B at TP 4 on H100s, input 1024 and
// output 256 tokens, open loop (Poisson at 20 requests/s, more than the deployment serves, so it runs
// full batches throughout) or closed loop (`--closed C`: C clients, each sending its next request when
// the last one finishes). Goal: under 2 s of wall time on a 2-core machine. Kernels are predicted as
// `perfloom simulate` predicts them: the learned models (loading them is part of the setup time), or
// the roofline with --roofline. `--workload SPEC` runs any workload instead.
//   perfloom-bench-simulate [--roofline] [--closed C | --workload SPEC] [REQUESTS] [RATE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"

using namespace perfloom;

int main(int argc, char** argv) {
  bool roofline = false;
  long closed = 0;
  std::string spec;
  for (;;) {
    const std::string a = argc > 1 ? argv[1] : "";
    if (a == "--roofline") {
      roofline = true;
    } else if ((a == "--closed" || a == "--workload") && argc > 2) {
      if (a == "--closed") closed = std::atol(argv[2]);
      if (a == "--workload") spec = argv[2];
      --argc;
      ++argv;
    } else {
      break;
    }
    --argc;
    ++argv;
  }
  const long n = argc > 1 ? std::atol(argv[1]) : 10000;
  const double rate = argc > 2 ? std::atof(argv[2]) : 20.0;
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, "%g", rate);
  if (spec.empty() && closed > 0)
    spec = "closed:concurrency=" + std::to_string(closed) + ",n=" + std::to_string(n) + ",input=1024,output=256,seed=1";
  if (spec.empty())
    spec = std::string("poisson:rate=") + rate_text + ",n=" + std::to_string(n) + ",input=1024,output=256,seed=1";
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const GpuDatabase gpus = GpuDatabase::builtin();
    const sim::LlmConfig cfg = sim::load_llm_config("llama-3.1-70b");
    const sim::Workload workload = sim::parse_workload(spec);
    sim::SimulationConfig sc;
    sc.par.tp = 4;
    std::string warning;
    const std::shared_ptr<const KernelPredictor> owned =
        roofline ? std::make_shared<RooflinePredictor>() : make_default_predictor(&warning);
    if (!warning.empty()) std::fprintf(stderr, "perfloom-bench-simulate: warning: %s\n", warning.c_str());
    const KernelPredictor& predictor = *owned;
    const auto t1 = std::chrono::steady_clock::now();
    const sim::SimulationResult r = sim::simulate(cfg, gpus.get("h100-sxm"), predictor, workload, sc);
    const auto t2 = std::chrono::steady_clock::now();
    const double setup_s = std::chrono::duration<double>(t1 - t0).count();
    const double sim_s = std::chrono::duration<double>(t2 - t1).count();
    std::printf("workload %s, llama-3.1-70b, TP 4, h100-sxm, %s predictor\n", spec.c_str(), predictor.name().c_str());
    std::printf("simulated %.1f s of serving: %lld steps, %lld preemptions, KV cache %lld tokens\n", r.duration_s,
                static_cast<long long>(r.step_count), static_cast<long long>(r.preemptions),
                static_cast<long long>(r.memory.kv_tokens()));
    std::printf("ttft p50 %.1f ms, tpot p50 %.2f ms, %.0f output tokens/s\n", r.ttft_ms.p50, r.tpot_ms.p50,
                r.output_tokens_per_s);
    std::printf("kernel predictions: %zu computed, %zu from the cache\n", r.predictions, r.prediction_cache_hits);
    std::printf("wall time: %.3f s (setup %.3f s, simulation %.3f s)\n", setup_s + sim_s, setup_s, sim_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfloom-bench-simulate: %s\n", e.what());
    return 1;
  }
}
