#pragma once
// One function per CLI command; each returns the exit status.
#include <QCommandLineParser>
#include <QStringList>

#include "app/cli_context.h"
#include "model/sim/step_cost.h"

namespace perfloom::app {
int cmdGpus(CliContext& ctx, const QStringList& positional);
int cmdPredict(CliContext& ctx, const QCommandLineParser& args);
int cmdImport(CliContext& ctx, const QCommandLineParser& args);
int cmdTrain(CliContext& ctx, const QCommandLineParser& args);
int cmdEval(CliContext& ctx, const QCommandLineParser& args);
int cmdStep(CliContext& ctx, const QCommandLineParser& args);
int cmdSimulate(CliContext& ctx, const QCommandLineParser& args);
int cmdTune(CliContext& ctx, const QCommandLineParser& args);
// The integer value of --NAME, `fallback` when absent; throws std::invalid_argument below `min`.
int cmdPlan(CliContext& ctx, const QCommandLineParser& args);
int64_t cliInteger(const QCommandLineParser& args, const QString& name, int64_t fallback, int64_t min);
// --clocks burst|sustained (model/sim/step_cost.h); burst when not given.
sim::ClockState cliClockState(const QCommandLineParser& args);

// Splits "a,b" into the GPUs it names; throws std::invalid_argument for an unknown one.
std::vector<const GpuSpec*> gpusFromList(const CliContext& ctx, const QString& list);
}  // namespace perfloom::app
