#pragma once
// The simulator view: a bundled LLM on one or more GPUs with tensor parallelism and a workload;
// runs the serving simulator in a background job with progress and Cancel; a table of TTFT, TPOT
// and E2E percentiles with throughput, and TTFT p50 against request rate (one curve per GPU) when
// a rate sweep is asked.
#include <QFuture>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"
#include "ui/result_table_model.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct SimulatorRun {
  QString gpu_id, gpu_name;
  double rate = 0;  // requests/s; 0 for a batch or trace workload
  QString error;
  sim::LatencyStats ttft_ms, tpot_ms, e2e_ms;
  double output_tokens_per_s = 0, requests_per_s = 0;
  int requests = 0;
  QString attention, attention_reason;  // the attention kernels the engine runs on the GPU, and why
};

struct SimulatorRequest {
  QString model;
  std::vector<GpuSpec> gpus;
  int tp = 1;
  QString workload;           // a workload spec (model/sim/workload.h)
  std::vector<double> rates;  // empty: the spec as given; else `rate=` replaced by each
  // What predicts each kernel: the window's (the learned models, else the roofline), as
  // `perfloom simulate` does. Null: make_default_predictor().
  std::shared_ptr<const KernelPredictor> predictor;
  // Burst, or each step slowed as far as its load drives the GPU into its power limit (a GPU
  // without a sustained-power measurement gets an error row).
  sim::ClockState clocks = sim::ClockState::burst;
  sim::ServingEngine engine = sim::ServingEngine::vllm;  // its attention kernels on each GPU
};

struct SimulatorResult {
  QString model, workload;
  int tp = 1;
  sim::ClockState clocks = sim::ClockState::burst;
  bool sweep = false;
  bool canceled = false;
  QString predictor;  // its name(), for the status line
  std::vector<SimulatorRun> runs;
};

// Parses "1,2,4,8"; throws std::invalid_argument for a non-positive or non-number entry.
std::vector<double> parse_rates(const QString& text);
// The workload spec with its rate= set to `rate` (added when missing).
QString workload_with_rate(const QString& spec, double rate);
// Runs every (GPU, rate) simulation in turn; `progress(done, total, text)` returns false to stop.
SimulatorResult run_simulations(const SimulatorRequest& req,
                                const std::function<bool(int done, int total, const QString& text)>& progress);
// What the Simulator chart draws against the request rate.
enum class SimMetric { ttft_p50, ttft_p90, tpot_p50, tpot_p90, e2e_p50, e2e_p90, output_tokens_per_s, requests_per_s };
inline constexpr SimMetric kSimMetrics[] = {SimMetric::ttft_p50, SimMetric::ttft_p90, SimMetric::tpot_p50,
                                            SimMetric::tpot_p90, SimMetric::e2e_p50, SimMetric::e2e_p90,
                                            SimMetric::output_tokens_per_s, SimMetric::requests_per_s};
// "ttft-p50", ...; parse_sim_metric returns nothing for an unknown name.
QString sim_metric_name(SimMetric m);
QString sim_metric_label(SimMetric m);  // "TTFT p50 (ms)"
std::optional<SimMetric> parse_sim_metric(const QString& name);
double sim_metric_value(const SimulatorRun& run, SimMetric m);
// One curve per GPU of `metric` against the request rate; the rate axis is logarithmic when the
// rates span a factor of 8 or more.
QChart* build_simulator_chart(const SimulatorResult& r, SimMetric metric = SimMetric::ttft_p50);

class SimulatorTableModel : public ResultTableModel<SimulatorTableModel, SimulatorResult, &SimulatorResult::runs> {
  Q_OBJECT
 public:
  enum Column {
    Gpu,
    Rate,
    TtftP50,
    TtftP90,
    TtftP99,
    TpotP50,
    TpotP90,
    TpotP99,
    E2eP50,
    E2eP99,
    OutputTokensPerS,
    RequestsPerS,
    Attention,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr const char* kHeaders[ColumnCount] = {
      "GPU",           "rate (req/s)",  "TTFT p50 (ms)", "TTFT p90 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)",
      "TPOT p90 (ms)", "TPOT p99 (ms)", "E2E p50 (ms)",  "E2E p99 (ms)",  "output tok/s",  "requests/s",
      "attention"};
  using ResultTableModel::ResultTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
};

class SimulatorView : public QWidget {
  Q_OBJECT
 public:
  SimulatorView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr);
  ~SimulatorView() override;
  // `engine`: "vllm" or "sglang"; empty keeps the one shown.
  void setSelection(const QString& model, const QStringList& gpu_ids, int tp, const QString& workload,
                    const QString& rates, const QString& engine = {});
  const SimulatorResult& result() const { return result_; }
  SimulatorTableModel* tableModel() const { return model_; }
  QChartView* chartView() const { return chart_view_; }
  QComboBox* metricCombo() const { return metric_; }
  SimMetric currentMetric() const;
  bool busy() const { return running_ > 0; }
  quint64 generation() const { return generation_; }
  bool applyResult(quint64 generation, const SimulatorResult& r);

 public slots:
  void recompute();
  void cancel();

 private:
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QComboBox* model_id_;
  GpuPicker* picker_;
  QSpinBox* tp_;
  QComboBox* clocks_;
  QComboBox* engine_;
  QComboBox* metric_;
  QLineEdit* workload_;
  QLineEdit* rates_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  QChartView* chart_view_;
  SimulatorTableModel* model_;
  QTableView* table_;
  SimulatorResult result_;
  QFuture<SimulatorResult> current_;
  quint64 generation_ = 0;
  int running_ = 0;
};

}  // namespace perfloom::ui
