#pragma once
// The explorer's main window: one tab per view. Views that later work fills say what they will
// show and which CLI command answers the question today.
#include <QMainWindow>
#include <QUrl>
#include <filesystem>
#include <memory>

#include "model/gpu_database.h"
#include "model/predictor.h"

class QMenu;
class QTabWidget;

namespace perfloom::ui {

class BottleneckView;
class CompareView;
class GpuView;
class PlanView;
class SimulatorView;
class TimelineView;
class TunerView;
class TracesView;
class WhatIfView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // The window keeps its own copy of the database (views refer to it).
  MainWindow(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent = nullptr);
  ~MainWindow() override;
  QTabWidget* tabs() const { return tabs_; }
  GpuView* gpuView() const { return gpu_view_; }
  TracesView* tracesView() const { return traces_view_; }
  QMenu* recentMenu() const { return recent_menu_; }
  // File > Open sample trace: imports the bundled trace into the Traces view and shows it.
  QAction* openSampleAction() const { return open_sample_; }
  WhatIfView* whatIfView() const { return whatif_view_; }
  BottleneckView* bottleneckView() const { return bottleneck_view_; }
  SimulatorView* simulatorView() const { return simulator_view_; }
  TunerView* tunerView() const { return tuner_view_; }
  PlanView* planView() const { return plan_view_; }
  TimelineView* timelineView() const { return timeline_view_; }
  CompareView* compareView() const { return compare_view_; }
  // Tab titles, in order; tests and `export-chart` address views by these.
  static QStringList viewNames();

 public slots:
  // F5: recomputes the current view.
  void recomputeCurrent();
  // Imports files into the Traces view and shows it (command line, drop, recent files). `refused`:
  // the files of the same drop perfloom cannot read ("PATH: REASON"), listed with the import errors.
  void importFiles(const QStringList& paths, const QStringList& refused = {});
  // Shows the What-if view predicting the imported source `source_id` (Traces: "Open in What-if").
  void openInWhatIf(qint64 source_id);
  // Shows a kernel of a trace (Traces: "Open in Bottleneck" / "Open in Tuner") on the GPU it was
  // measured on (empty: the view's own choice); `spec` as ui/kernel_spec.h writes it.
  void openInBottleneck(const QString& spec, const QString& gpu_id);
  void openInTuner(const QString& spec, const QString& gpu_id);
  // Shows the Simulator view running one deployment (Plan: a clicked point of the Pareto chart).
  void openInSimulator(const QString& model, const QString& gpu_id, int tp, const QString& workload,
                       const QString& engine);

 protected:
  void closeEvent(QCloseEvent* event) override;
  // Files and folders dropped anywhere on the window are imported, whichever child is under the
  // cursor (chart views and line edits take drops of their own, so an application-wide filter
  // sees URL drags before they do). A drag of nothing perfloom can read is ignored, so the
  // platform shows the forbidden cursor.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void saveLayout() const;
  void restoreLayout();
  void buildMenus();
  void rebuildRecentMenu();
  std::unique_ptr<GpuDatabase> gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QTabWidget* tabs_;
  GpuView* gpu_view_;
  TracesView* traces_view_;
  QMenu* recent_menu_ = nullptr;
  QAction* open_sample_ = nullptr;
  bool handleUrlDrag(QEvent* event);
  QList<QUrl> drag_urls_;     // the drag in progress, and what of it perfloom can import:
  QStringList drag_paths_;    // sniffed once per drag, not on every mouse move
  QStringList drag_refused_;  // the rest, with the reason
  WhatIfView* whatif_view_;
  BottleneckView* bottleneck_view_;
  SimulatorView* simulator_view_;
  TunerView* tuner_view_;
  PlanView* plan_view_;
  TimelineView* timeline_view_;
  CompareView* compare_view_;
  std::filesystem::path db_path_;
};

}  // namespace perfloom::ui
