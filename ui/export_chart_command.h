#pragma once
// `perfloom export-chart VIEW [options] --out FILE.(png|svg|pdf)`: renders the same charts the
// views show, with no display. Needs a QApplication (main() makes one, offscreen when there is no
// display).
#include <QStringList>

namespace perfloom::ui {

// `args` starts with "export-chart". Returns the process exit status; messages go to stderr.
int runExportChart(const QStringList& args);

}  // namespace perfloom::ui
