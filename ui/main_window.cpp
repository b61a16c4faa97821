#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenuBar>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "model/learned_predictor.h"
#include "ui/bottleneck_view.h"
#include "ui/compare_view.h"
#include "ui/gpu_picker.h"
#include "ui/gpu_view.h"
#include "ui/kernel_spec.h"
#include "ui/plan_view.h"
#include "ui/recent_files.h"
#include "ui/simulator_view.h"
#include "ui/theme.h"
#include "ui/timeline_view.h"
#include "ui/traces_view.h"
#include "ui/tuner_view.h"
#include "ui/whatif_view.h"

namespace perfloom::ui {

QStringList MainWindow::viewNames() {
  return {tr("Traces"), tr("What-if GPUs"), tr("Bottleneck"), tr("Simulator"), tr("Tuner"),
          tr("GPUs"),   tr("Plan"),         tr("Timeline"),   tr("Compare")};
}

MainWindow::MainWindow(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent)
    : QMainWindow(parent),
      gpus_(std::make_unique<GpuDatabase>(gpus)),
      tabs_(new QTabWidget(this)),
      db_path_(std::move(db_path)) {
  setWindowTitle(tr("perfloom"));
  std::string warning;
  predictor_ = make_default_predictor(&warning);
  gpu_view_ = new GpuView(*gpus_, this);
  whatif_view_ = new WhatIfView(*gpus_, predictor_, this);
  whatif_view_->setDatabasePath(db_path_);  // imported traces can be moved to other GPUs
  bottleneck_view_ = new BottleneckView(*gpus_, predictor_, this);
  simulator_view_ = new SimulatorView(*gpus_, predictor_, this);
  const QStringList names = viewNames();
  traces_view_ = new TracesView(*gpus_, db_path_, this);
  tabs_->addTab(traces_view_, names[0]);
  tabs_->addTab(whatif_view_, names[1]);
  tabs_->addTab(bottleneck_view_, names[2]);
  tabs_->addTab(simulator_view_, names[3]);
  tuner_view_ = new TunerView(*gpus_, predictor_, this);
  tabs_->addTab(tuner_view_, names[4]);
  tabs_->addTab(gpu_view_, names[5]);
  plan_view_ = new PlanView(*gpus_, predictor_, this);
  tabs_->addTab(plan_view_, names[6]);
  timeline_view_ = new TimelineView(*gpus_, predictor_, this);
  timeline_view_->setDatabasePath(db_path_);
  tabs_->addTab(timeline_view_, names[7]);
  compare_view_ = new CompareView(*gpus_, predictor_, this, db_path_);
  tabs_->addTab(compare_view_, names[8]);
  tabs_->setCurrentWidget(bottleneck_view_);
  setCentralWidget(tabs_);

  setAcceptDrops(true);
  qApp->installEventFilter(this);
  buildMenus();
  connect(traces_view_, &TracesView::fileImported, this, [this](const QString& path) {
    RecentFiles::add(path);
    rebuildRecentMenu();
  });
  // The What-if view follows the trace selected in the Traces view (its combo goes back to a CSV).
  connect(traces_view_, &TracesView::kernelsLoaded, whatif_view_,
          [this](qint64 source_id, int) { whatif_view_->selectSource(source_id); });
  connect(traces_view_, &TracesView::openInWhatIf, this, &MainWindow::openInWhatIf);
  connect(traces_view_, &TracesView::openInBottleneck, this, &MainWindow::openInBottleneck);
  connect(traces_view_, &TracesView::openInTuner, this, &MainWindow::openInTuner);
  // The Timeline follows the trace selected in the Traces view.
  connect(traces_view_, &TracesView::kernelsLoaded, timeline_view_, [this](qint64 source_id, int) {
    if (source_id != timeline_view_->sourceId()) timeline_view_->selectSource(source_id);
  });
  connect(plan_view_, &PlanView::openInSimulator, this, &MainWindow::openInSimulator);
  statusBar()->showMessage(tr("%1 GPUs · predictor %2%3 · database %4")
                               .arg(gpus_->size())
                               .arg(QString::fromStdString(predictor_->name()))
                               .arg(warning.empty() ? QString() : " (" + QString::fromStdString(warning) + ")")
                               .arg(QString::fromStdString(db_path_.string())));
  resize(1200, 720);
  restoreLayout();
}

MainWindow::~MainWindow() { qApp->removeEventFilter(this); }

void MainWindow::buildMenus() {
  const QStringList names = viewNames();
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open trace…"), traces_view_, [this] {
    tabs_->setCurrentWidget(traces_view_);
    traces_view_->openFiles();
  });
  open->setShortcut(QKeySequence::Open);
  open_sample_ = file->addAction(tr("Open &sample trace"), traces_view_, [this] {
    tabs_->setCurrentWidget(traces_view_);
    traces_view_->openSample();
  });
  open_sample_->setObjectName("openSampleTrace");
  open_sample_->setToolTip(traces_view_->sampleButton()->toolTip());
  recent_menu_ = file->addMenu(tr("Open &recent"));
  rebuildRecentMenu();
  file->addSeparator();
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
  view->addSeparator();
  auto* themes = view->addMenu(tr("&Theme"));
  auto* group = new QActionGroup(themes);
  const Theme saved = saved_theme();
  for (auto [theme, label] : {std::pair{Theme::Light, tr("&Light")}, std::pair{Theme::Dark, tr("&Dark")},
                              std::pair{Theme::System, tr("&System")}}) {
    QAction* a = themes->addAction(label, this, [theme] {
      save_theme(theme);
      apply_theme(theme);
    });
    a->setObjectName("theme-" + theme_name(theme));
    a->setCheckable(true);
    a->setChecked(theme == saved);
    group->addAction(a);
  }
  // The platform's look is what the application starts with; only a chosen theme needs applying.
  if (saved != Theme::System) apply_theme(saved);
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList files = RecentFiles::list();
  for (const QString& path : files) {
    QAction* a = recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { importFiles({path}); });
    a->setToolTip(path);
    a->setData(path);
  }
  if (files.isEmpty()) recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  recent_menu_->addSeparator();
  QAction* clear = recent_menu_->addAction(tr("&Clear"), this, [this] {
    RecentFiles::clear();
    rebuildRecentMenu();
  });
  clear->setObjectName("clearRecentFiles");
  clear->setEnabled(!files.isEmpty());
}

void MainWindow::importFiles(const QStringList& paths, const QStringList& refused) {
  if (paths.isEmpty() && refused.isEmpty()) return;
  tabs_->setCurrentWidget(traces_view_);
  traces_view_->importFiles(paths, refused);
}

void MainWindow::openInWhatIf(qint64 source_id) {
  if (source_id == 0) return;
  // Explicit, not only by following the Traces selection: the source may already be the What-if
  // view's, or the Traces view may still be loading its kernels.
  if (whatif_view_->selectedSourceId() != source_id) whatif_view_->selectSource(source_id);
  tabs_->setCurrentWidget(whatif_view_);
}

void MainWindow::openInBottleneck(const QString& spec, const QString& gpu_id) {
  // The trace's GPU first, beside the GPUs the view already compares.
  QStringList gpus = bottleneck_view_->gpuPicker()->checkedIds();
  if (!gpu_id.isEmpty()) {
    gpus.removeAll(gpu_id);
    gpus.prepend(gpu_id);
  }
  if (bottleneck_view_->setSelection(spec, gpus)) tabs_->setCurrentWidget(bottleneck_view_);
}

void MainWindow::openInTuner(const QString& spec, const QString& gpu_id) {
  try {
    const KernelDesc k = parse_kernel_spec(spec);
    if (k.op != Op::gemm) return;
    QString gpu = gpu_id;
    if (gpu.isEmpty() && !tuner_view_->gpuPicker()->checkedIds().isEmpty())
      gpu = tuner_view_->gpuPicker()->checkedIds().front();
    const std::string_view dt = dtype_name(k.dtype);
    tuner_view_->setSelection(k.shape.M, k.shape.N, k.shape.K,
                              QString::fromUtf8(dt.data(), static_cast<qsizetype>(dt.size())), gpu);
    tabs_->setCurrentWidget(tuner_view_);
  } catch (const std::invalid_argument&) {
    // A spec the Traces view wrote always parses; nothing to open otherwise.
  }
}

void MainWindow::openInSimulator(const QString& model, const QString& gpu_id, int tp, const QString& workload,
                                 const QString& engine) {
  // The workload as given (no rate sweep): the closed loop at the point's concurrency.
  simulator_view_->setSelection(model, {gpu_id}, tp, workload, {}, engine);
  tabs_->setCurrentWidget(simulator_view_);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  switch (event->type()) {
    case QEvent::DragEnter:
    case QEvent::DragMove:
    case QEvent::Drop: {
      auto* widget = qobject_cast<QWidget*>(watched);
      if (widget && widget->window() == this && static_cast<QDropEvent*>(event)->mimeData()->hasUrls())
        return handleUrlDrag(event);
      break;
    }
    case QEvent::DragLeave:
      drag_urls_.clear();  // the next enter sniffs again: the files may have changed meanwhile
      break;
    default:
      break;
  }
  return QMainWindow::eventFilter(watched, event);
}

bool MainWindow::handleUrlDrag(QEvent* event) {
  auto* drop = static_cast<QDropEvent*>(event);
  const QList<QUrl> urls = drop->mimeData()->urls();
  if (urls != drag_urls_) {
    // A new drag (or the first event of one): sniff once; moves over other children reuse it.
    drag_urls_ = urls;
    drag_refused_.clear();
    drag_paths_ = importable_paths(urls, &drag_refused_);
  }
  const QStringList paths = drag_paths_;
  if (event->type() == QEvent::Drop) drag_urls_.clear();
  if (paths.isEmpty()) {
    drop->ignore();
    return true;
  }
  drop->acceptProposedAction();
  if (event->type() == QEvent::Drop) importFiles(paths, drag_refused_);
  return true;
}

void MainWindow::recomputeCurrent() {
  QWidget* w = tabs_->currentWidget();
  if (w == bottleneck_view_)
    bottleneck_view_->recompute();
  else if (w == whatif_view_)
    whatif_view_->recompute();
  else if (w == simulator_view_)
    simulator_view_->recompute();
  else if (w == plan_view_)
    plan_view_->recompute();
  else if (w == traces_view_)
    traces_view_->reload();
  else if (w == timeline_view_)
    timeline_view_->recompute();
  else if (w == compare_view_)
    compare_view_->recompute();
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
