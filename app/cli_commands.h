#pragma once
// One function per CLI command; each returns the exit status.
#include <fstream>
#include <optional>

#include <QCommandLineParser>
#include <QStringList>

#include "app/cli_context.h"
#include "model/sim/engine.h"
#include "model/sim/step_cost.h"

namespace perfloom::app {
int cmdGpus(CliContext& ctx, const QStringList& positional);
int cmdPredict(CliContext& ctx, const QCommandLineParser& args);
int cmdCompare(CliContext& ctx, const QCommandLineParser& args);
int cmdImport(CliContext& ctx, const QCommandLineParser& args);
int cmdTrain(CliContext& ctx, const QCommandLineParser& args);
int cmdEval(CliContext& ctx, const QCommandLineParser& args);
int cmdStep(CliContext& ctx, const QCommandLineParser& args);
int cmdSimulate(CliContext& ctx, const QCommandLineParser& args);
int cmdPlan(CliContext& ctx, const QCommandLineParser& args);
int cmdTune(CliContext& ctx, const QCommandLineParser& args);
// The integer value of --NAME, `fallback` when absent; throws std::invalid_argument below `min`.
int64_t cliInteger(const QCommandLineParser& args, const QString& name, int64_t fallback, int64_t min);
// The file --out names, opened for writing (binary); not open when --out is absent. Throws
// std::runtime_error "FILE: cannot be written", so that a bad path fails before any work.
std::ofstream cliOutFile(const QCommandLineParser& args);
// --clocks burst|sustained (model/sim/step_cost.h); burst when not given.
sim::ClockState cliClockState(const QCommandLineParser& args);
// --engine (vllm by default) and --attention-impl (serving by default); std::invalid_argument names the bad word.
sim::ServingEngine cliServingEngine(const QCommandLineParser& args);
sim::AttentionImpl cliAttentionImpl(const QCommandLineParser& args);

// vLLM's --quantization METHOD (bf16, fp8, fp8-block, int4, nvfp4, mxfp4) and --kv-cache-dtype DT
// (auto, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2) for any model: the method applied to `cfg`
// (sim::apply_quantization), the KV dtype returned (unset: neither option given, the model's).
// Throws std::invalid_argument for an unknown name and, given either option, for a weight format or
// KV dtype `gpu` cannot serve (sim::check_serving_dtypes). For `perfloom step` and `simulate`.
std::optional<Dtype> cliServingDtypes(const QCommandLineParser& args, const GpuSpec& gpu, sim::LlmConfig& cfg);

// Splits "a,b" into the GPUs it names; throws std::invalid_argument for an unknown one.
std::vector<const GpuSpec*> gpusFromList(const CliContext& ctx, const QString& list);
}  // namespace perfloom::app
