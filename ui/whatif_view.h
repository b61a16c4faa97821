#pragma once
// The what-if view: a kernel list (CONTRACT.md kernel-list CSV) predicted on the GPUs the user
// picks: total time per GPU stacked by kernel family with the 80% interval, and a speedup table
// relative to the first GPU. Computed in a background job; late results are dropped.
#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "model/gpu_database.h"
#include "model/predictor.h"

class QChart;
class QChartView;
class QLabel;
class QLineEdit;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct WhatIfGpu {
  QString gpu_id, gpu_name;
  std::vector<double> family_us;  // indexed like WhatIfResult::families
  double total_us = 0, lo_us = 0, hi_us = 0;
  int predicted = 0, failed = 0;  // kernels
};

struct WhatIfResult {
  QString file;
  QString error;          // the file could not be read
  QStringList families;   // the families present, in Family order
  int kernels = 0, bad_rows = 0;
  std::vector<WhatIfGpu> gpus;
};

WhatIfResult compute_whatif(const std::vector<KernelDesc>& kernels, const std::vector<GpuSpec>& gpus,
                            const KernelPredictor& predictor);
// Reads the CSV (throws std::runtime_error) and predicts it.
WhatIfResult compute_whatif_file(const QString& path, const std::vector<GpuSpec>& gpus, const KernelPredictor& predictor);
QChart* build_whatif_chart(const WhatIfResult& r);

// One row per GPU: total, interval, speedup over the first GPU.
class SpeedupTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Gpu, TotalUs, LoUs, HiUs, Speedup, Kernels, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(WhatIfResult r);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  WhatIfResult r_;
};

class WhatIfView : public QWidget {
  Q_OBJECT
 public:
  WhatIfView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr);
  ~WhatIfView() override;
  void setSelection(const QString& csv_path, const QStringList& gpu_ids);
  const WhatIfResult& result() const { return result_; }
  SpeedupTableModel* speedupModel() const { return model_; }
  QChartView* chartView() const { return chart_view_; }
  GpuPicker* gpuPicker() const { return picker_; }
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0; }
  bool applyResult(quint64 generation, const WhatIfResult& r);

 public slots:
  void recompute();
  void openFile();

 private:
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QLineEdit* path_;
  GpuPicker* picker_;
  QChartView* chart_view_;
  SpeedupTableModel* model_;
  QTableView* table_;
  QLabel* status_;
  WhatIfResult result_;
  quint64 generation_ = 0;
  int running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
