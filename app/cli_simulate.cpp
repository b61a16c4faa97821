// `perfloom simulate --model M --gpu ID [--tp N] [--pp N] --workload SPEC [--out FILE.json] [--json] [--sla BOUNDS]`
// (docs/cli.md): a serving simulation.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"

namespace perfloom::app {

int cmdSimulate(CliContext& ctx, const QCommandLineParser& args) {
  for (const char* required : {"model", "gpu", "workload"})
    if (!args.isSet(required)) {
      std::cerr << "perfloom simulate: needs --" << required
                << " (perfloom simulate --model M --gpu ID [--tp N] [--pp N] --workload SPEC [--out FILE.json])\n";
      return 2;
    }
  sim::SimulationConfig sc;
  sc.par.tp = static_cast<int>(cliInteger(args, "tp", 1, 1));
  sc.par.pp = static_cast<int>(cliInteger(args, "pp", 1, 1));
  sc.par.ep = args.isSet("ep") ? static_cast<int>(cliInteger(args, "ep", 1, 1)) : 1;
  sc.sched.max_num_seqs = cliInteger(args, "max-num-seqs", sc.sched.max_num_seqs, 1);
  sc.sched.max_num_batched_tokens = cliInteger(args, "max-num-batched-tokens", sc.sched.max_num_batched_tokens, 1);
  sc.sched.chunked_prefill = !args.isSet("no-chunked-prefill");
  sc.sched.prefix_caching = !args.isSet("no-prefix-caching");
  sc.sched.cuda_graphs = !args.isSet("eager");
  sc.memory.block_size = cliInteger(args, "block-size", sc.memory.block_size, 1);
  sc.memory.num_blocks_override = cliInteger(args, "kv-blocks", 0, 1);
  if (args.isSet("gpu-memory-utilization")) {
    bool ok = false;
    sc.memory.gpu_memory_utilization = args.value("gpu-memory-utilization").toDouble(&ok);
    if (!ok) throw std::invalid_argument("--gpu-memory-utilization must be a number in (0, 1]");
  }
  sc.attention_impl = cliAttentionImpl(args);
  sc.engine = cliServingEngine(args);
  sc.clocks = cliClockState(args);
  if (args.isSet("sla")) sc.sla = sim::parse_sla(args.value("sla").toStdString());
  if (args.isSet("expert-imbalance")) {
    bool ok = false;
    sc.expert_imbalance = args.value("expert-imbalance").toDouble(&ok);
    if (!ok || !(sc.expert_imbalance >= 1.0))
      throw std::invalid_argument("--expert-imbalance must be a number of at least 1 (got \"" +
                                  args.value("expert-imbalance").toStdString() + "\")");
  }
  if (args.isSet("spec-tokens") || args.isSet("spec-acceptance") || args.isSet("spec-draft")) {
    if (!args.isSet("spec-tokens") || !args.isSet("spec-acceptance"))
      throw std::invalid_argument("speculative decoding needs --spec-tokens K and --spec-acceptance A");
    sc.speculative.tokens = static_cast<int>(cliInteger(args, "spec-tokens", 0, 0));
    bool ok = false;
    sc.speculative.acceptance = args.value("spec-acceptance").toDouble(&ok);
    if (!ok || !(sc.speculative.acceptance >= 0 && sc.speculative.acceptance <= 1))
      throw std::invalid_argument("--spec-acceptance must be a rate from 0 to 1 (got \"" +
                                  args.value("spec-acceptance").toStdString() + "\")");
    if (args.isSet("spec-draft")) sc.speculative.draft = sim::load_llm_config(args.value("spec-draft").toStdString());
  }
  sim::Deployment& dep = sc.deployment;
  dep.replicas = static_cast<int>(cliInteger(args, "dp", 1, 1));
  if (args.isSet("router")) {
    const auto policy = sim::parse_router_policy(args.value("router").toStdString());
    if (!policy)
      throw std::invalid_argument("--router must be round-robin or least-loaded (got \"" +
                                  args.value("router").toStdString() + "\")");
    dep.router = *policy;
  }
  for (const char* o : {"prefill-instances", "decode-instances", "prefill-gpu", "decode-gpu", "prefill-tp", "decode-tp",
                        "prefill-pp", "decode-pp", "kv-transfer-gbps"})
    if (args.isSet(o)) dep.disaggregated = true;
  if (dep.disaggregated) {
    if (args.isSet("dp"))
      throw std::invalid_argument(
          "--dp replicates a unified engine; a disaggregated deployment sizes its pools with --prefill-instances and "
          "--decode-instances");
    dep.prefill_replicas = static_cast<int>(cliInteger(args, "prefill-instances", 1, 1));
    dep.decode_replicas = static_cast<int>(cliInteger(args, "decode-instances", 1, 1));
    dep.prefill_par.tp = static_cast<int>(cliInteger(args, "prefill-tp", sc.par.tp, 1));
    dep.decode_par.tp = static_cast<int>(cliInteger(args, "decode-tp", sc.par.tp, 1));
    dep.prefill_par.pp = static_cast<int>(cliInteger(args, "prefill-pp", sc.par.pp, 1));
    dep.decode_par.pp = static_cast<int>(cliInteger(args, "decode-pp", sc.par.pp, 1));
    // Expert parallelism follows each pool's TP group, as --ep follows --tp (wide EP: the same
    // multiple of it).
    const int ep_per_tp = sc.par.ep > 1 ? sc.par.ep / sc.par.tp : 0;
    dep.prefill_par.ep = ep_per_tp > 0 ? dep.prefill_par.tp * ep_per_tp : 1;
    dep.decode_par.ep = ep_per_tp > 0 ? dep.decode_par.tp * ep_per_tp : 1;
    if (args.isSet("prefill-gpu")) dep.prefill_gpu = &ctx.gpus.get(args.value("prefill-gpu").toStdString());
    if (args.isSet("decode-gpu")) dep.decode_gpu = &ctx.gpus.get(args.value("decode-gpu").toStdString());
    if (args.isSet("kv-transfer-gbps")) {
      bool ok = false;
      dep.kv_transfer_gb_s = args.value("kv-transfer-gbps").toDouble(&ok);
      if (!ok || !(dep.kv_transfer_gb_s > 0) || dep.kv_transfer_gb_s > 1e6)
        throw std::invalid_argument("--kv-transfer-gbps must be a bandwidth in GB/s above 0 (got \"" +
                                    args.value("kv-transfer-gbps").toStdString() + "\")");
    }
  }
  const GpuSpec& gpu = ctx.gpus.get(args.value("gpu").toStdString());
  sim::LlmConfig cfg = sim::load_llm_config(args.value("model").toStdString());
  // --quantization and --kv-cache-dtype as `perfloom step` takes them, checked on every pool's GPU.
  if (const auto kv = cliServingDtypes(args, gpu, cfg)) {
    sc.memory.kv_dtype = *kv;
    sc.memory.kv_dtype_set = true;
  }
  if (args.isSet("quantization") || args.isSet("kv-cache-dtype"))
    for (const GpuSpec* pool : {dep.prefill_gpu, dep.decode_gpu})
      if (pool) sim::check_serving_dtypes(cfg, *pool, sc.memory.kv_dtype_set ? sc.memory.kv_dtype : cfg.dtype);
  const sim::Workload workload = sim::parse_workload(args.value("workload").toStdString());
  sc.record_steps = args.isSet("out");
  std::string warning;
  const auto predictor_ptr = make_default_predictor(&warning);  // the learned models, else the roofline
  if (!warning.empty()) std::cerr << "perfloom simulate: warning: " << warning << "\n";
  const KernelPredictor& predictor = *predictor_ptr;
  const sim::SimulationResult r = sim::simulate(cfg, gpu, predictor, workload, sc);

  if (args.isSet("out")) {
    const std::string path = args.value("out").toStdString();
    std::ofstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot be written");
    f << sim::simulation_to_json(r, true).dump(1) << "\n";
    if (!f) throw std::runtime_error(path + ": write failed");
  }
  if (ctx.json) {
    std::cout << sim::simulation_to_json(r, false).dump(2) << "\n";
    return 0;
  }
  const sim::Deployment& d = r.deployment;
  if (d.disaggregated) {
    auto pool = [&](const char* name, int n, const GpuSpec* g, const sim::Parallelism& p, const sim::MemoryPlan& m) {
      std::printf("%s pool: %d instance%s on %s, TP %d%s%s: KV cache %lld tokens each, weights %.1f GiB per GPU\n",
                  name, n, n == 1 ? "" : "s", g ? g->id.c_str() : r.gpu.c_str(), p.tp,
                  p.pp > 1 ? (", PP " + std::to_string(p.pp)).c_str() : "",
                  p.ep > 1 ? (", EP " + std::to_string(p.ep)).c_str() : "", static_cast<long long>(m.kv_tokens()),
                  m.weights_gib);
    };
    std::printf("%s, disaggregated (%s routing), KV transfer %.0f GB/s per GPU one way\n", r.model.c_str(),
                sim::router_policy_name(d.router), r.kv_transfer_gb_s);
    pool("prefill", d.prefill_replicas, d.prefill_gpu, d.prefill_par, r.prefill_memory);
    pool("decode", d.decode_replicas, d.decode_gpu, d.decode_par, r.memory);
  } else {
    std::printf(
        "%s on %s, TP %d, PP %d%s%s: KV cache %lld tokens (%lld blocks of %lld), weights %.1f GiB per GPU\n",
        r.model.c_str(), r.gpu.c_str(), r.par.tp, r.par.pp,
        r.par.ep > 1 ? (", EP " + std::to_string(r.par.ep)).c_str() : "",
        d.replicas > 1
            ? (", " + std::to_string(d.replicas) + " replicas (" + sim::router_policy_name(d.router) + ")").c_str()
            : "",
        static_cast<long long>(r.memory.kv_tokens()), static_cast<long long>(r.memory.num_blocks),
        static_cast<long long>(r.memory.block_size), r.memory.weights_gib);
  }
  auto attention = [](const char* pool, const sim::AttentionChoice& a) {
    std::printf("%sattention: %s (%s)\n", pool, std::string(sim::attention_impl_name(a.impl)).c_str(), a.reason.c_str());
  };
  if (d.disaggregated) attention("prefill ", r.prefill_attention);
  attention(d.disaggregated ? "decode " : "", r.attention);
  std::printf("%zu requests in %.3f s, %lld steps, %lld preemptions, %lld prompt tokens from the prefix cache\n",
              r.requests.size(), r.duration_s, static_cast<long long>(r.step_count),
              static_cast<long long>(r.preemptions), static_cast<long long>(r.cached_tokens));
  if (r.warmup > 0 || r.cooldown > 0)
    std::printf("measured: %lld requests (first %lld and last %lld to arrive left out), window %.3f-%.3f s\n",
                static_cast<long long>(r.measured), static_cast<long long>(r.warmup),
                static_cast<long long>(r.cooldown), r.window_start_s, r.window_end_s);
  if (workload.kind == sim::WorkloadKind::batch) {
    std::printf("prefill_ms: %.3f\n", r.prefill_ms);
    std::printf("median_decode_ms: %.3f\n", r.median_decode_ms);
    std::printf("total_ms: %.3f\n", r.total_ms);
  }
  if (r.speculative.tokens > 0)
    std::printf(
        "speculative: %d draft tokens at acceptance %.2f (%s): %.2f tokens per verify (expected %.2f), "
        "draft %.0f us\n",
        r.speculative.tokens, r.speculative.acceptance, r.speculative.draft ? r.speculative.draft->id.c_str() : "",
        r.verify_seqs > 0 ? static_cast<double>(r.verify_tokens) / static_cast<double>(r.verify_seqs) : 0.0,
        r.speculative.expected_tokens_per_step(r.speculative.tokens), r.draft_us);
  std::printf("%-10s %12s %12s %12s %12s\n", "", "mean", "p50", "p90", "p99");
  auto row = [](const char* name, const sim::LatencyStats& s) {
    std::printf("%-10s %12.3f %12.3f %12.3f %12.3f\n", name, s.mean, s.p50, s.p90, s.p99);
  };
  row("ttft_ms", r.ttft_ms);
  row("tpot_ms", r.tpot_ms);
  row("e2e_ms", r.e2e_ms);
  std::printf("throughput: %.1f output tokens/s, %.1f total tokens/s, %.3f requests/s\n", r.output_tokens_per_s,
              r.total_tokens_per_s, r.requests_per_s);
  if (r.sla.set()) {
    std::string bounds;
    auto bound = [&](const char* name, double ms) {
      if (ms <= 0) return;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s <= %g ms", bounds.empty() ? "" : ", ", name, ms);
      bounds += buf;
    };
    bound("ttft", r.sla.ttft_ms);
    bound("tpot", r.sla.tpot_ms);
    bound("e2e", r.sla.e2e_ms);
    std::printf("sla: %lld of %lld requests (%.1f%%) meet %s; goodput %.3f requests/s\n",
                static_cast<long long>(r.sla_met), static_cast<long long>(r.measured), 100.0 * r.sla_attainment,
                bounds.c_str(), r.goodput_requests_per_s);
  }
  double total = 0;
  for (double v : r.breakdown_us) total += v;
  std::printf("breakdown_us:");
  for (int i = 0; i < sim::kBreakdownCount; ++i) {
    const double us = r.breakdown_us[static_cast<std::size_t>(i)];
    if (us > 0) std::printf(" %s %.0f (%.1f%%)", sim::breakdown_name(i), us, total > 0 ? 100.0 * us / total : 0.0);
  }
  if (d.disaggregated) std::printf(" kv_transfer %.0f (beside the steps)", r.kv_transfer_us);
  std::printf("\n");
  if (args.isSet("out"))
    std::fprintf(stderr, "perfloom simulate: records and timeline written to %s\n",
                 args.value("out").toStdString().c_str());
  return 0;
}

}  // namespace perfloom::app
