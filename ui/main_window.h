#pragma once
// The explorer's main window: one tab per view. Views that later work fills say what they will
// show and which CLI command answers the question today.
#include <QMainWindow>
#include <filesystem>

#include "model/gpu_database.h"

class QTabWidget;

namespace perfloom::ui {

class GpuView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  MainWindow(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent = nullptr);
  QTabWidget* tabs() const { return tabs_; }
  GpuView* gpuView() const { return gpu_view_; }
  // Tab titles, in order; tests and `export-chart` address views by these.
  static QStringList viewNames();

 private:
  QTabWidget* tabs_;
  GpuView* gpu_view_;
  std::filesystem::path db_path_;
};

}  // namespace perfloom::ui
