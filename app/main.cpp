// perfloom: the GUI explorer when started without a command, the CLI otherwise (CONTRACT.md).
#include <QApplication>
#include <QCoreApplication>
#include <QMessageBox>
#include <iostream>

#include "app/cli.h"
#include "app/cli_context.h"
#include "storage/database.h"
#include "ui/export_chart_command.h"
#include "ui/main_window.h"

namespace {

bool haveDisplay() {
  if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) return true;  // the user chose (offscreen, vnc, ...)
  return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
}

int runGui(int argc, char** argv) {
  if (!haveDisplay()) {
    std::cerr << "perfloom: no display (neither DISPLAY nor WAYLAND_DISPLAY is set), so the explorer cannot "
                 "open.\nEverything it shows is also available headless; for example:\n"
                 "  perfloom gpus                 the GPU database\n"
                 "  perfloom gpus h100-sxm        one GPU with the source of every figure\n"
                 "  perfloom --help               all commands\n"
                 "To run the explorer without a screen, use xvfb-run perfloom, or QT_QPA_PLATFORM=offscreen.\n";
    return 1;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("perfloom");
  QApplication::setOrganizationName("perfloom");
  QApplication::setApplicationVersion(PERFLOOM_VERSION);
  try {
    auto db_path = perfloom::storage::Database::default_path();
    perfloom::storage::Database db(db_path);  // created on first use, migrated if old
    perfloom::ui::MainWindow window(perfloom::app::loadGpuDatabase({}), db_path);
    window.show();
    // `perfloom FILE...`: import them. app.arguments() is argv without the options Qt took (-style ...).
    QStringList files = QApplication::arguments().mid(1);
    files.removeIf([](const QString& a) { return a.startsWith('-'); });
    window.importFiles(files);
    return app.exec();
  } catch (const std::exception& e) {
    QMessageBox::critical(nullptr, "perfloom", QString::fromUtf8(e.what()));
    return 1;
  }
}

// `export-chart` draws with QtGui, so it needs a QApplication; with no display it renders offscreen.
int runExportChart(int argc, char** argv, const QStringList& args) {
  if (!haveDisplay()) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("perfloom");
  return perfloom::ui::runExportChart(args);
}

}  // namespace

int main(int argc, char** argv) {
  QStringList args;
  for (int i = 1; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  if (args.value(0) == "export-chart") return runExportChart(argc, argv, args);
  if (perfloom::app::isCliInvocation(args)) {
    QCoreApplication app(argc, argv);
    return perfloom::app::runCli(args);
  }
  return runGui(argc, argv);
}
