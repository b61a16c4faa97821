#pragma once
// The plan view: `perfloom plan` in the explorer. A model, a workload, an SLA, an optional target
// load, the GPU types to consider, the most GPUs of one deployment and an optional price file; the
// planner runs in a background job with a busy indicator (the simulations run so far) and Cancel.
// With a target load: the ranked deployments that meet the SLA, cheapest first. Without one: the
// Pareto front of tokens/s per GPU against tokens/s per user, one curve per GPU type, with the
// points of the sweep in a table. Both list what was left out and why.
#include <QAbstractTableModel>
#include <QFuture>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

#include "model/gpu_database.h"
#include "model/plan/planner.h"
#include "model/predictor.h"

class QAbstractItemModel;
class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct PlanRequest {
  QString model;
  QString workload;  // poisson:... (with a load its rate is set from it; without one it runs closed)
  QString sla;       // ttft_p90=1000,tpot_p90=50
  QString load;      // "10req/s", "5000tok/s"; empty: the Pareto sweep
  std::vector<GpuSpec> gpus;
  int max_gpus = 8;
  std::vector<int> tp = {1, 2, 4, 8};
  int max_num_seqs = 0;  // 0: the simulator's default (the Pareto sweep's highest concurrency)
  // The engine settings searched, as `perfloom plan` lists them: weight formats ("bf16,fp8"; empty:
  // the model's) and KV-cache dtypes ("auto,fp8"; empty: the model's); disaggregated prefill/decode
  // deployments too (with a target load).
  QString quantizations, kv_cache_dtypes;
  bool disaggregated = false;
  bool wide_ep = false;  // MoE expert groups of data-parallel attention ranks too
  sim::ServingEngine engine = sim::ServingEngine::vllm;  // the engine simulated (its attention kernels)
  plan::Prices prices;   // the bundled table with the price file's rows over it
  // Null: make_default_predictor(), as `perfloom plan` uses.
  std::shared_ptr<const KernelPredictor> predictor;
};

struct PlanViewResult {
  QString model;  // as asked: a bundled id or a config path
  QString error;
  QString predictor;
  QString workload;  // as planned (a poisson spec turned closed for the Pareto sweep)
  double seconds = 0;
  // The GPUs the plan's pointers point into; shared, so a copy of the result keeps them valid.
  std::shared_ptr<const std::vector<GpuSpec>> gpus;
  plan::PlanResult plan;
};

// Without a target load the planner sweeps a closed loop: a poisson:... spec becomes closed:... with
// its arrival keys (rate, burstiness) dropped, concurrency=1 first (the planner sweeps it), the rest
// (n, lengths, seed, ...) kept.
QString closed_loop_workload(const QString& spec);
// The bundled prices with `path`'s rows over them (ids or aliases resolved by `db`). Throws
// std::invalid_argument naming the file, the line and the reason.
plan::Prices load_prices(const GpuDatabase& db, const QString& path);
// Runs the planner; `cancelled` is asked before each simulation (a true answer stops the search
// and the result is empty with canceled set by the caller). Errors come back in `error`.
PlanViewResult run_plan(const PlanRequest& req, const std::function<bool()>& cancelled);
// Without a target load: one curve per GPU type (its Pareto front, joined, x = tokens/s per user,
// y = tokens/s per GPU; disaggregated deployments a dashed curve of their own) and its dominated
// points as an unlabelled scatter; hovering a point names the deployment. With one: the cheapest priced deployments' $ per million output tokens as bars.
QChart* build_plan_chart(const PlanViewResult& r);
// The sweep's point of `gpu_id` (of its disaggregated curve or not) nearest to `at` (chart
// coordinates), or null.
const plan::ParetoPoint* nearest_pareto_point(const PlanViewResult& r, const QString& gpu_id, QPointF at,
                                              bool disaggregated = false);
// The closed-loop workload that simulates point `p` alone: the planned spec at its concurrency, with
// as many requests as the sweep ran (at least 4 per client).
QString pareto_point_workload(const PlanViewResult& r, const plan::ParetoPoint& p);
// The text the chart shows when a point is hovered: GPU, TP, concurrency, $/M output tokens.
QString pareto_point_label(const plan::ParetoPoint& p);

// With a target load: one row per ranked deployment. Without: one row per point of the sweep.
// The SLA's bounds are columns of their own, so the column count follows the result.
class PlanTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int SortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(PlanViewResult r);
  bool paretoMode() const { return !r_.plan.load; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  QStringList headers_;
  PlanViewResult r_;
};

// What the planner left out: the deployment and why.
class PlanRejectedModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(PlanViewResult r);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  PlanViewResult r_;
};

class PlanView : public QWidget {
  Q_OBJECT
 public:
  PlanView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr);
  ~PlanView() override;
  // Sets the inputs (an empty `prices` path: the bundled table) and runs.
  void setSelection(const QString& model, const QStringList& gpu_ids, const QString& workload, const QString& sla,
                    const QString& load, int max_gpus, const QString& prices = {});
  // The TP degrees tried (1,2,4,8 unless set).
  void setTpDegrees(std::vector<int> tp) { tp_degrees_ = std::move(tp); }
  // The highest concurrency of the Pareto sweep (the simulator's max_num_seqs; 0: its default).
  void setMaxNumSeqs(int n) { max_num_seqs_ = n; }
  const PlanViewResult& result() const { return result_; }
  PlanTableModel* tableModel() const { return model_; }
  PlanRejectedModel* rejectedModel() const { return rejected_; }
  QChartView* chartView() const { return chart_view_; }
  QLabel* statusLabel() const { return status_; }
  bool busy() const { return running_ > 0; }
  quint64 generation() const { return generation_; }
  bool applyResult(quint64 generation, const PlanViewResult& r);

 signals:
  // A Pareto point was clicked: simulate that deployment (the window opens the Simulator view).
  void openInSimulator(const QString& model, const QString& gpu_id, int tp, const QString& workload,
                       const QString& engine);

 public slots:
  void recompute();
  void cancel();

 private:
  void browsePrices();
  void openPoint(const QString& gpu_id, QPointF at, bool disaggregated);
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  std::vector<int> tp_degrees_ = {1, 2, 4, 8};
  int max_num_seqs_ = 0;
  QComboBox* model_id_;
  QLineEdit* workload_;
  QLineEdit* sla_;
  QLineEdit* load_;
  QSpinBox* max_gpus_;
  QLineEdit* quantizations_;
  QLineEdit* kv_dtypes_;
  QCheckBox* disaggregated_;
  QCheckBox* wide_ep_;
  QComboBox* engine_;
  QLineEdit* prices_;
  QComboBox* gpu_scope_;
  GpuPicker* picker_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  QChartView* chart_view_;
  PlanTableModel* model_;
  QTableView* table_;
  PlanRejectedModel* rejected_;
  QTableView* rejected_table_;
  PlanViewResult result_;
  QFuture<PlanViewResult> current_;
  quint64 generation_ = 0;
  int running_ = 0;
};

}  // namespace perfloom::ui
