#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "model/learned_predictor.h"
#include "ui/bottleneck_view.h"
#include "ui/gpu_view.h"
#include "ui/simulator_view.h"
#include "ui/whatif_view.h"

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
    : QMainWindow(parent), gpus_(std::make_unique<GpuDatabase>(gpus)), tabs_(new QTabWidget(this)),
      db_path_(std::move(db_path)) {
  setWindowTitle(tr("perfloom"));
  std::string warning;
  predictor_ = make_default_predictor(&warning);
  gpu_view_ = new GpuView(*gpus_, this);
  whatif_view_ = new WhatIfView(*gpus_, predictor_, this);
  bottleneck_view_ = new BottleneckView(*gpus_, predictor_, this);
  simulator_view_ = new SimulatorView(*gpus_, this);
  const QStringList names = viewNames();
  tabs_->addTab(pendingView(tr("Drop a torch.profiler trace, an Nsight Systems SQLite export or an "
                               "Nsight Compute CSV here to see its kernels."),
                            tr("Trace import is not in this build yet."), this),
                names[0]);
  tabs_->addTab(whatif_view_, names[1]);
  tabs_->addTab(bottleneck_view_, names[2]);
  tabs_->addTab(simulator_view_, names[3]);
  tabs_->addTab(pendingView(tr("Predicted latency per GEMM tile configuration and its wave steps."),
                            tr("Not in this build yet; <code>perfloom tune</code> answers it on the command line."), this),
                names[4]);
  tabs_->addTab(gpu_view_, names[5]);
  tabs_->setCurrentWidget(bottleneck_view_);
  setCentralWidget(tabs_);

  auto* file = menuBar()->addMenu(tr("&File"));
  auto* close = file->addAction(tr("&Close window"), this, &QWidget::close);
  // Ctrl+W everywhere (QKeySequence::Close is Ctrl+F4 first on some platforms).
  close->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_W), QKeySequence(Qt::CTRL | Qt::Key_F4)});
  auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  auto* view = menuBar()->addMenu(tr("&View"));
  auto* recompute = view->addAction(tr("&Recompute"), this, &MainWindow::recomputeCurrent);
  recompute->setShortcut(QKeySequence(Qt::Key_F5));
  for (int i = 0; i < tabs_->count(); ++i) {
    auto* go = view->addAction(names[i], this, [this, i] { tabs_->setCurrentIndex(i); });
    go->setShortcut(QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + i)));
  }
  statusBar()->showMessage(tr("%1 GPUs · predictor %2%3 · database %4")
                               .arg(gpus_->size())
                               .arg(QString::fromStdString(predictor_->name()))
                               .arg(warning.empty() ? QString() : " (" + QString::fromStdString(warning) + ")")
                               .arg(QString::fromStdString(db_path_.string())));
  resize(1200, 720);
  restoreLayout();
}

MainWindow::~MainWindow() = default;

void MainWindow::recomputeCurrent() {
  QWidget* w = tabs_->currentWidget();
  if (w == bottleneck_view_) bottleneck_view_->recompute();
  else if (w == whatif_view_) whatif_view_->recompute();
  else if (w == simulator_view_) simulator_view_->recompute();
}

void MainWindow::saveLayout() const {
  QSettings settings;
  settings.setValue("mainwindow/geometry", saveGeometry());
  settings.setValue("mainwindow/state", saveState());
  settings.setValue("mainwindow/tab", tabs_->currentIndex());
}

void MainWindow::restoreLayout() {
  QSettings settings;
  if (settings.contains("mainwindow/geometry")) restoreGeometry(settings.value("mainwindow/geometry").toByteArray());
  if (settings.contains("mainwindow/state")) restoreState(settings.value("mainwindow/state").toByteArray());
  const int tab = settings.value("mainwindow/tab", -1).toInt();
  if (tab >= 0 && tab < tabs_->count()) tabs_->setCurrentIndex(tab);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveLayout();
  event->accept();
}

}  // namespace perfloom::ui
