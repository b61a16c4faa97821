#pragma once
// The explorer's main window: one tab per view. Views that later work fills say what they will
// show and which CLI command answers the question today.
#include <QMainWindow>
#include <filesystem>
#include <memory>

#include "model/gpu_database.h"
#include "model/predictor.h"

class QTabWidget;

namespace perfloom::ui {

class BottleneckView;
class GpuView;
class SimulatorView;
class WhatIfView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // The window keeps its own copy of the database (views refer to it).
  MainWindow(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent = nullptr);
  ~MainWindow() override;
  QTabWidget* tabs() const { return tabs_; }
  GpuView* gpuView() const { return gpu_view_; }
  WhatIfView* whatIfView() const { return whatif_view_; }
  BottleneckView* bottleneckView() const { return bottleneck_view_; }
  SimulatorView* simulatorView() const { return simulator_view_; }
  // Tab titles, in order; tests and `export-chart` address views by these.
  static QStringList viewNames();

 public slots:
  // F5: recomputes the current view.
  void recomputeCurrent();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void saveLayout() const;
  void restoreLayout();
  std::unique_ptr<GpuDatabase> gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QTabWidget* tabs_;
  GpuView* gpu_view_;
  WhatIfView* whatif_view_;
  BottleneckView* bottleneck_view_;
  SimulatorView* simulator_view_;
  std::filesystem::path db_path_;
};

}  // namespace perfloom::ui
