// `perfloom step --model M --gpu ID --phase prefill|decode --batch B (--tokens T | --context C)
//  [--tp N] [--pp N] [--graphs] [--json]` (CONTRACT.md): the latency of one forward step.
// Extensions: --attention-impl, --clocks burst|sustained, --host-us, --quantization, --kv-cache-dtype.
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "model/sim/step_report.h"

namespace perfloom::app {

int64_t cliInteger(const QCommandLineParser& args, const QString& name, int64_t fallback, int64_t min) {
  if (!args.isSet(name)) return fallback;
  bool ok = false;
  const qlonglong v = args.value(name).toLongLong(&ok);
  if (!ok || v < min)
    throw std::invalid_argument("--" + name.toStdString() + " must be an integer of at least " + std::to_string(min) +
                                " (got \"" + args.value(name).toStdString() + "\")");
  return v;
}

std::ofstream cliOutFile(const QCommandLineParser& args) {
  std::ofstream out;
  if (!args.isSet("out")) return out;
  out.open(args.value("out").toStdString(), std::ios::binary);
  if (!out) throw std::runtime_error(args.value("out").toStdString() + ": cannot be written");
  return out;
}

sim::ClockState cliClockState(const QCommandLineParser& args) {
  if (!args.isSet("clocks")) return sim::ClockState::burst;
  const auto c = sim::parse_clock_state(args.value("clocks").toStdString());
  if (!c)
    throw std::invalid_argument("--clocks must be burst or sustained (got \"" + args.value("clocks").toStdString() +
                                "\")");
  return *c;
}

sim::ServingEngine cliServingEngine(const QCommandLineParser& args) {
  if (!args.isSet("engine")) return sim::ServingEngine::vllm;
  const auto e = sim::parse_serving_engine(args.value("engine").trimmed().toStdString());
  if (!e)
    throw std::invalid_argument("--engine must be vllm or sglang (got \"" + args.value("engine").toStdString() + "\")");
  return *e;
}

sim::AttentionImpl cliAttentionImpl(const QCommandLineParser& args) {
  if (!args.isSet("attention-impl")) return sim::AttentionImpl::serving;
  const auto impl = sim::parse_attention_impl(args.value("attention-impl").trimmed().toStdString());
  if (!impl)
    throw std::invalid_argument("--attention-impl must be " + std::string(sim::kAttentionImplWords) + " (got \"" +
                                args.value("attention-impl").toStdString() + "\")");
  return *impl;
}

std::optional<Dtype> cliServingDtypes(const QCommandLineParser& args, const GpuSpec& gpu, sim::LlmConfig& cfg) {
  const bool quant = args.isSet("quantization"), kv = args.isSet("kv-cache-dtype");
  if (quant) sim::apply_quantization(cfg, args.value("quantization").toStdString());
  std::optional<Dtype> kv_dtype;
  if (kv) kv_dtype = sim::parse_kv_cache_dtype(cfg, args.value("kv-cache-dtype").toStdString());
  if (quant || kv) sim::check_serving_dtypes(cfg, gpu, kv_dtype.value_or(cfg.dtype));
  return kv_dtype;
}

int cmdStep(CliContext& ctx, const QCommandLineParser& args) {
  for (const char* required : {"model", "gpu", "phase", "batch"})
    if (!args.isSet(required)) {
      std::cerr << "perfloom step: needs --" << required
                << " (perfloom step --model M --gpu ID --phase prefill|decode --batch B (--tokens T | --context C))\n";
      return 2;
    }
  sim::StepQuery q;
  const QString phase = args.value("phase");
  if (phase == "prefill")
    q.phase = sim::Phase::prefill;
  else if (phase == "decode")
    q.phase = sim::Phase::decode;
  else {
    std::cerr << "perfloom step: --phase must be prefill or decode (got \"" << phase.toStdString() << "\")\n";
    return 2;
  }
  q.batch = cliInteger(args, "batch", 1, 1);
  q.tokens = cliInteger(args, "tokens", 0, 1);
  q.context = cliInteger(args, "context", 0, 0);
  if (q.phase == sim::Phase::prefill && !args.isSet("tokens")) {
    std::cerr << "perfloom step: a prefill step needs --tokens T (new tokens per sequence)\n";
    return 2;
  }
  if (q.phase == sim::Phase::decode && !args.isSet("context")) {
    std::cerr << "perfloom step: a decode step needs --context C (cached tokens per sequence)\n";
    return 2;
  }
  if (q.phase == sim::Phase::decode && args.isSet("tokens")) {
    std::cerr << "perfloom step: --tokens applies to prefill; a decode step computes one token per sequence\n";
    return 2;
  }
  q.par.tp = static_cast<int>(cliInteger(args, "tp", 1, 1));
  q.par.pp = static_cast<int>(cliInteger(args, "pp", 1, 1));
  q.graphs = args.isSet("graphs");
  try {
    q.attention_impl = cliAttentionImpl(args);
    q.engine = cliServingEngine(args);
  } catch (const std::invalid_argument& e) {
    std::cerr << "perfloom step: " << e.what() << "\n";
    return 2;
  }
  q.clocks = cliClockState(args);
  sim::Overheads overheads;
  if (args.isSet("host-us")) {
    bool ok = false;
    const double host = args.value("host-us").toDouble(&ok);
    if (!ok || !(host >= 0))
      throw std::invalid_argument("--host-us must be a number of microseconds, 0 or more (got \"" +
                                  args.value("host-us").toStdString() + "\")");
    overheads.host_step_us = host;
    overheads.host_per_seq_us = 0;
  }
  const GpuSpec& gpu = ctx.gpus.get(args.value("gpu").toStdString());
  sim::LlmConfig cfg = sim::load_llm_config(args.value("model").toStdString());
  q.kv_dtype = cliServingDtypes(args, gpu, cfg);
  std::string warning;
  const auto predictor_ptr = make_default_predictor(&warning);  // the learned models, else the roofline
  if (!warning.empty()) std::cerr << "perfloom step: warning: " << warning << "\n";
  const KernelPredictor& predictor = *predictor_ptr;
  const sim::StepPrediction p = sim::predict_step(cfg, gpu, predictor, q, overheads);

  if (ctx.json) {
    std::cout << sim::step_to_json(cfg, gpu, q, p).dump(2) << "\n";
    return 0;
  }
  std::printf("latency_us: %.1f\n", p.cost.latency_us);
  std::printf(
      "%s on %s, %s, batch %lld, %s %lld, TP %d%s, %s\n", cfg.id.c_str(), gpu.id.c_str(), phase.toStdString().c_str(),
      static_cast<long long>(q.batch), q.phase == sim::Phase::prefill ? "tokens" : "context",
      static_cast<long long>(q.phase == sim::Phase::prefill ? q.tokens : q.context), q.par.tp,
      q.par.pp > 1 ? (", PP " + std::to_string(q.par.pp)).c_str() : "", p.cost.graphs ? "CUDA graphs" : "eager");
  if (cfg.quant != sim::WeightQuant::none || q.kv_dtype)
    std::printf("weights: %s, KV cache: %s\n",
                cfg.quant == sim::WeightQuant::none ? "16-bit" : std::string(sim::weight_quant_name(cfg.quant)).c_str(),
                std::string(dtype_name(q.kv_dtype.value_or(cfg.dtype))).c_str());
  std::printf("attention: %s (%s)\n", std::string(sim::attention_impl_name(p.attention.impl)).c_str(),
              p.attention.reason.c_str());
  if (p.cost.clocks == sim::ClockState::sustained)
    std::printf("clocks: sustained (tensor utilisation %.2f: compute x%.3f, memory x%.3f; %s)\n",
                p.cost.tensor_utilization, p.cost.power.compute, p.cost.power.memory, gpu.sustained->origin().c_str());
  std::printf("breakdown_us:\n");
  for (int i = 0; i < sim::kBreakdownCount; ++i) {
    const double us = p.cost.breakdown_us[static_cast<std::size_t>(i)];
    if (us <= 0) continue;
    std::printf("  %-14s %12.1f  %5.1f%%\n", sim::breakdown_name(i), us, 100.0 * us / p.cost.latency_us);
  }
  std::printf("kernels (per layer kind; count = layers):\n");
  for (const sim::KernelTime& kt : p.cost.kernels)
    std::printf("  %-22s %-18s x%-4lld %10.2f us each %12.1f us\n", kt.kernel->label,
                std::string(op_name(kt.kernel->kernel.op)).c_str(), static_cast<long long>(kt.kernel->count),
                kt.us_each, kt.us_each * static_cast<double>(kt.kernel->count));
  return 0;
}

}  // namespace perfloom::app
