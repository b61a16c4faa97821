#pragma once
// The headless command-line interface (CONTRACT.md). Runs without a display.
#include <QStringList>

namespace perfloom::app {

// True when `args` (argv without the program name) asks for a CLI command rather than the GUI.
bool isCliInvocation(const QStringList& args);
// Runs one CLI command; returns the process exit status.
int runCli(const QStringList& args);
// Help text of the whole program.
QString usageText();

}  // namespace perfloom::app
