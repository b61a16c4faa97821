#pragma once
// The what-if view: a kernel list (CONTRACT.md kernel-list CSV) or a trace imported into the
// database, predicted on the GPUs the user picks: total time per GPU stacked by kernel family with
// the 80% interval, a speedup table relative to the first GPU (with an optional price per GPU-hour
// and the cost per million tokens), and for a trace the measured vs predicted time of each kernel.
// Computed in a background job (a trace through storage::run_trace_whatif, on the job's own
// database connection); late results are dropped.
#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "ui/result_table_model.h"
#include "ui/source_list_model.h"
#include "ui/whatif_models.h"

class QChart;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct WhatIfGpu {
  QString gpu_id, gpu_name;
  std::vector<double> family_us;  // indexed like WhatIfResult::families
  double total_us = 0, lo_us = 0, hi_us = 0;
  int predicted = 0, failed = 0;  // kernels
  double measured_us = 0;         // trace: the source measurements of the kernels predicted here
};

struct WhatIfResult {
  QString file;
  QString error;         // the file or the source could not be read
  QStringList families;  // the families present, in Family order
  int kernels = 0, bad_rows = 0;
  std::vector<WhatIfGpu> gpus;
  // Trace mode (source_id != 0): the source, the GPU it was measured on, the measured total of all
  // its kernels, and one row per kernel (measured and predicted on each GPU, in `gpus` order).
  qint64 source_id = 0;
  QString source_gpu_id, source_gpu_name;
  double source_measured_us = 0;
  std::shared_ptr<const std::vector<WhatIfKernelRow>> kernel_rows;
};

WhatIfResult compute_whatif(const std::vector<KernelDesc>& kernels, const std::vector<GpuSpec>& gpus,
                            const KernelPredictor& predictor);
// Reads the CSV (throws std::runtime_error) and predicts it.
WhatIfResult compute_whatif_file(const QString& path, const std::vector<GpuSpec>& gpus,
                                 const KernelPredictor& predictor);
// Predicts an imported source's kernels on `gpus` through storage::run_trace_whatif, on its own
// connection to `db_path` (call it from a worker). The source GPU is the one the source names.
// Never throws: problems are in `error`.
WhatIfResult compute_trace_whatif(const std::filesystem::path& db_path, qint64 source_id, const GpuDatabase& db,
                                  const std::vector<GpuSpec>& gpus, const KernelPredictor& predictor,
                                  const std::atomic<bool>* cancel = nullptr);
QChart* build_whatif_chart(const WhatIfResult& r);

// One row per GPU: total, interval, speedup over the first GPU, and an editable price per GPU-hour
// (kept per GPU id across results) with the cost per million tokens when a token count is set.
class SpeedupTableModel : public ResultTableModel<SpeedupTableModel, WhatIfResult, &WhatIfResult::gpus> {
  Q_OBJECT
 public:
  enum Column { Gpu, TotalUs, LoUs, HiUs, Speedup, Kernels, PricePerHour, CostPerMTokens, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr const char* kHeaders[ColumnCount] = {
      "GPU",     "total (µs)",         "low, p10 (µs)",          "high, p90 (µs)", "speedup vs baseline",
      "kernels", "price ($/GPU-hour)", "cost per million tokens"};
  using ResultTableModel::ResultTableModel;
  // What the speedup is against: -1 (the default) the measured total on the trace's own GPU in
  // trace mode and the first target otherwise; i >= 0 the i-th target GPU.
  void setBaseline(int gpu_index);
  int baselineIndex() const { return baseline_; }
  double baselineUs() const;
  QString baselineName() const;
  // Tokens the workload processes; <= 0: no cost is shown.
  void setTokens(double tokens);
  double tokens() const { return tokens_; }
  void setPrice(const QString& gpu_id, double dollars_per_hour);
  double price(const QString& gpu_id) const { return prices_.value(gpu_id, 0.0); }
  // All prices at once (restored from the settings); emits no priceChanged.
  void setPrices(QMap<QString, double> prices);
  const QMap<QString, double>& prices() const { return prices_; }
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 signals:
  // A price was entered or cleared (0): the view stores it.
  void priceChanged(const QString& gpu_id, double dollars_per_hour);

 private:
  QMap<QString, double> prices_;  // GPU id -> $ per GPU-hour
  double tokens_ = 0;
  int baseline_ = -1;
};

class WhatIfView : public QWidget {
  Q_OBJECT
 public:
  // `db_path`: the database whose imported traces the source selector lists; empty: none (CSV only).
  WhatIfView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr,
             std::filesystem::path db_path = {});
  ~WhatIfView() override;
  void setDatabasePath(std::filesystem::path db_path);
  const std::filesystem::path& databasePath() const { return db_path_; }
  void setSelection(const QString& csv_path, const QStringList& gpu_ids);
  const WhatIfResult& result() const { return result_; }
  SpeedupTableModel* speedupModel() const { return model_; }
  KernelCompareModel* kernelModel() const { return kernel_model_; }
  QChartView* chartView() const { return chart_view_; }
  GpuPicker* gpuPicker() const { return picker_; }
  QComboBox* sourceCombo() const { return source_combo_; }
  QComboBox* targetCombo() const { return target_combo_; }
  QComboBox* baselineCombo() const { return baseline_combo_; }
  QDoubleSpinBox* tokensSpin() const { return tokens_; }
  qint64 selectedSourceId() const { return source_id_; }  // 0: the CSV
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0 || sources_running_ > 0; }
  bool applyResult(quint64 generation, const WhatIfResult& r);

 public slots:
  void recompute();
  void openFile();
  // Predicts an imported source (its id in the database); 0 goes back to the CSV.
  void selectSource(qint64 source_id);
  // Re-reads the list of imported sources (also done whenever the view is shown).
  void refreshSources();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void fillSourceCombo(const std::vector<SourceRow>& sources);
  const GpuDatabase& gpus_;
  std::shared_ptr<const GpuDatabase> gpus_copy_;  // shared with workers, which may outlive the view
  std::shared_ptr<const KernelPredictor> predictor_;
  std::filesystem::path db_path_;
  QComboBox* source_combo_;
  QLineEdit* path_;
  QPushButton* open_;
  GpuPicker* picker_;
  QChartView* chart_view_;
  SpeedupTableModel* model_;
  QTableView* table_;
  QDoubleSpinBox* tokens_;
  KernelCompareModel* kernel_model_;
  QTableView* kernel_table_;
  QComboBox* target_combo_;
  QComboBox* baseline_combo_;
  QLabel* status_;
  WhatIfResult result_;
  qint64 source_id_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
  quint64 generation_ = 0, sources_generation_ = 0;
  int running_ = 0, sources_running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
