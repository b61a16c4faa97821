#pragma once
// One function per CLI command; each returns the exit status.
#include <QCommandLineParser>
#include <QStringList>

#include "app/cli_context.h"

namespace perfloom::app {
int cmdGpus(CliContext& ctx, const QStringList& positional);
int cmdPredict(CliContext& ctx, const QCommandLineParser& args);

// Splits "a,b" into the GPUs it names; throws std::invalid_argument for an unknown one.
std::vector<const GpuSpec*> gpusFromList(const CliContext& ctx, const QString& list);
}  // namespace perfloom::app
