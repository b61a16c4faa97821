#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>
#include <QTabWidget>

#include "ui/gpu_view.h"

namespace perfloom::ui {

namespace {
QWidget* pendingView(const QString& what, const QString& cli, QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setWordWrap(true);
  label->setAlignment(Qt::AlignCenter);
  label->setTextFormat(Qt::RichText);
  label->setText(QStringLiteral("<p style='font-size:13pt'>%1</p><p>%2</p>").arg(what, cli));
  return label;
}
}  // namespace

QStringList MainWindow::viewNames() {
  return {tr("Traces"), tr("What-if GPUs"), tr("Bottleneck"), tr("Simulator"), tr("Tuner"), tr("GPUs")};
}

MainWindow::MainWindow(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent)
    : QMainWindow(parent), tabs_(new QTabWidget(this)), gpu_view_(new GpuView(gpus, this)),
      db_path_(std::move(db_path)) {
  setWindowTitle(tr("perfloom"));
  const QStringList names = viewNames();
  tabs_->addTab(pendingView(tr("Drop a torch.profiler trace, an Nsight Systems SQLite export or an "
                               "Nsight Compute CSV here to see its kernels."),
                            tr("Trace import is not in this build yet."), this),
                names[0]);
  tabs_->addTab(pendingView(tr("Predicted time of the trace on other GPUs, stacked by kernel family."),
                            tr("Not in this build yet."), this),
                names[1]);
  tabs_->addTab(pendingView(tr("Demand on each pipe (tensor, FMA, SFU, DRAM, L2, shared memory, launch) "
                               "against the achieved time."),
                            tr("Not in this build yet."), this),
                names[2]);
  tabs_->addTab(pendingView(tr("TTFT, TPOT and throughput of a serving deployment against request rate."),
                            tr("Not in this build yet."), this),
                names[3]);
  tabs_->addTab(pendingView(tr("Predicted latency per GEMM tile configuration and its wave steps."),
                            tr("Not in this build yet."), this),
                names[4]);
  tabs_->addTab(gpu_view_, names[5]);
  tabs_->setCurrentWidget(gpu_view_);
  setCentralWidget(tabs_);

  auto* file = menuBar()->addMenu(tr("&File"));
  auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence::Quit);
  auto* close = file->addAction(tr("&Close window"), this, &QWidget::close);
  close->setShortcut(QKeySequence::Close);
  statusBar()->showMessage(tr("%1 GPUs · database %2")
                               .arg(gpus.size())
                               .arg(QString::fromStdString(db_path_.string())));
  resize(1200, 720);
}

}  // namespace perfloom::ui
