#pragma once
// One function per CLI command; each returns the exit status.
#include <QStringList>

#include "app/cli_context.h"

namespace perfloom::app {
int cmdGpus(CliContext& ctx, const QStringList& positional);
}  // namespace perfloom::app
