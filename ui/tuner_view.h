#pragma once
// The tuner view (DESIGN.md idea 3, issues #8 and #9): for a GEMM shape and a GPU, the predicted
// latency of each candidate tile configuration (best highlighted, with its reason) and the wave
// steps: the predicted latency of the top configurations as M (or N) sweeps. Computed in a
// background job; results of an older selection are dropped.
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "model/gpu_database.h"
#include "model/tuner/tuner.h"
#include "ui/result_table_model.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct TunerRequest {
  tuner::GemmShape shape;
  GpuSpec gpu;
  char sweep_dim = 'M';   // 'M' or 'N'
  int top = 12;           // configurations in the bar chart and the table
  int sweep_configs = 3;  // the best few, swept
  int sweep_points = 121;
  // Ranks a GPU without a tuner table when it is the learned predictor (tuner::tune_gemm); may be null.
  std::shared_ptr<const KernelPredictor> predictor;
};

struct TunerSweepSeries {
  QString label;
  TileConfig config;
  std::vector<double> dims, pred_us;  // the swept dimension and the prediction there
};

struct TunerViewResult {
  QString gpu_id, gpu_name;
  tuner::GemmShape shape;
  QString method, note, error;
  std::vector<tuner::RankedConfig> ranked;  // best first
  double refusal_threshold = NAN;           // tuner::TuneResult's: refusal_p at or above it, likely refused by cuBLASLt
  char sweep_dim = 'M';
  std::vector<TunerSweepSeries> sweep;
};

// "128×256×64 s1 c2×1": tile M×N×K, split-K, cluster (perfloom's orientation, M first).
QString config_label(const TileConfig& t);
// Ranks the configurations and sweeps the dimension (tune_gemm and the same table, learned or
// analytical model for every point). Errors (a dtype the GPU lacks, a corrupt table) land in `error`.
TunerViewResult compute_tuner(const TunerRequest& req);
QChart* build_tuner_bar_chart(const TunerViewResult& r);
QChart* build_tuner_sweep_chart(const TunerViewResult& r);

// One row per ranked configuration.
class TunerRankModel : public ResultTableModel<TunerRankModel, TunerViewResult, &TunerViewResult::ranked> {
  Q_OBJECT
 public:
  // Option: cuBLASLt's custom option the table's variant model names (its tooltip: what its kernels showed).
  // Range: the 80% interval of the latency (tuner.h RankedConfig::lo_us..hi_us), "–" where there is none.
  // A configuration the table's acceptance model predicts cuBLASLt refuses is greyed, its reason says why.
  enum Column { Rank, Tile, SplitK, Cluster, PredUs, Range, Waves, Fill, Option, Reason, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr const char* kHeaders[ColumnCount] = {"rank",      "tile M×N×K",     "split-K", "cluster M×N",
                                                        "pred (µs)", "80% range (µs)", "waves",   "last wave",
                                                        "option",    "reason"};
  using ResultTableModel::ResultTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
};

class TunerView : public QWidget {
  Q_OBJECT
 public:
  explicit TunerView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor = nullptr,
                     QWidget* parent = nullptr);
  ~TunerView() override;
  // Sets the inputs and recomputes; `dtype` by name (bf16, fp8e4m3, ...), `sweep_dim` 'M' or 'N'.
  void setSelection(int64_t M, int64_t N, int64_t K, const QString& dtype, const QString& gpu_id, char sweep_dim = 'M');
  const TunerViewResult& result() const { return result_; }
  TunerRankModel* rankModel() const { return model_; }
  QChartView* barChartView() const { return bars_view_; }
  QChartView* sweepChartView() const { return sweep_view_; }
  GpuPicker* gpuPicker() const { return picker_; }
  QLabel* statusLabel() const { return status_; }
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0; }
  // Shows `r` when `generation` is still the newest request; returns false (and drops it) otherwise.
  bool applyResult(quint64 generation, const TunerViewResult& r);
  // Writes the shown ranking's first `top` configurations as a collector plan (sampling_plan.h
  // timing_plan: each with its custom option) to `path`, to time on the GPU; false with `error` set
  // when there is nothing ranked or the file cannot be written. The "Export timing plan…" button.
  bool saveTimingPlan(const QString& path, int top = 3, QString* error = nullptr) const;
  QPushButton* timingPlanButton() const { return timing_plan_; }

 public slots:
  void recompute();

 private:
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QSpinBox* m_;
  QSpinBox* n_;
  QSpinBox* k_;
  QComboBox* dtype_;
  QComboBox* sweep_;
  GpuPicker* picker_;
  QChartView* bars_view_;
  QChartView* sweep_view_;
  TunerRankModel* model_;
  QTableView* table_;
  QLabel* status_;
  QPushButton* timing_plan_;
  TunerViewResult result_;
  quint64 generation_ = 0;
  int running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
