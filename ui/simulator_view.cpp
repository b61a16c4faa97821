#include "ui/simulator_view.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProgressBar>
#include <QPromise>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>

#include "model/learned_predictor.h"
#include "model/sim/llm_config.h"
#include "model/sim/workload.h"
#include "ui/chart_export.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"

namespace perfloom::ui {

std::vector<double> parse_rates(const QString& text) {
  std::vector<double> rates;
  for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const double r = part.trimmed().toDouble(&ok);
    if (!ok || !(r > 0))
      throw std::invalid_argument("request rate \"" + part.trimmed().toStdString() + "\": expected a positive number");
    rates.push_back(r);
  }
  return rates;
}

QString workload_with_rate(const QString& spec, double rate) {
  QString s = spec;
  static const QRegularExpression re("rate=[^,]*");
  const QString value = "rate=" + QString::number(rate, 'g', 6);
  if (s.contains(re)) return s.replace(re, value);
  const int colon = s.indexOf(':');
  return colon < 0 ? s + ':' + value : s.left(colon + 1) + value + ',' + s.mid(colon + 1);
}

SimulatorResult run_simulations(const SimulatorRequest& req,
                                const std::function<bool(int, int, const QString&)>& progress) {
  SimulatorResult out;
  out.model = req.model;
  out.workload = req.workload;
  out.tp = req.tp;
  out.clocks = req.clocks;
  out.sweep = !req.rates.empty();
  const sim::LlmConfig cfg = sim::load_llm_config(req.model.toStdString());
  std::vector<double> rates = req.rates;
  if (rates.empty()) rates.push_back(0);
  const int total = static_cast<int>(req.gpus.size() * rates.size());
  // The learned models, else the roofline: what `perfloom simulate` uses.
  const std::shared_ptr<const KernelPredictor> owned = req.predictor ? req.predictor : make_default_predictor(nullptr);
  const KernelPredictor& predictor = *owned;
  out.predictor = QString::fromStdString(predictor.name());
  int done = 0;
  for (const GpuSpec& gpu : req.gpus)
    for (double rate : rates) {
      SimulatorRun run;
      run.gpu_id = QString::fromStdString(gpu.id);
      run.gpu_name = QString::fromStdString(gpu.name);
      run.rate = rate;
      if (progress && !progress(done, total, QString("%1 at %2 requests/s").arg(run.gpu_name).arg(rate))) {
        out.canceled = true;
        return out;
      }
      try {
        const QString spec = rate > 0 ? workload_with_rate(req.workload, rate) : req.workload;
        const sim::Workload w = sim::parse_workload(spec.toStdString());
        sim::SimulationConfig sc;
        sc.par.tp = req.tp;
        sc.clocks = req.clocks;
        sc.engine = req.engine;
        sc.record_steps = false;
        const sim::SimulationResult r = sim::simulate(cfg, gpu, predictor, w, sc);
        run.attention = QString::fromUtf8(sim::attention_impl_name(r.attention.impl).data());
        run.attention_reason = QString::fromStdString(r.attention.reason);
        run.ttft_ms = r.ttft_ms;
        run.tpot_ms = r.tpot_ms;
        run.e2e_ms = r.e2e_ms;
        run.output_tokens_per_s = r.output_tokens_per_s;
        run.requests_per_s = r.requests_per_s;
        run.requests = static_cast<int>(r.requests.size());
        if (rate == 0 && w.kind == sim::WorkloadKind::poisson) {
          static const QRegularExpression re("rate=([0-9.eE+-]+)");
          const auto m = re.match(spec);
          if (m.hasMatch()) run.rate = m.captured(1).toDouble();
        }
      } catch (const std::exception& e) {
        run.error = QString::fromUtf8(e.what());
      }
      out.runs.push_back(std::move(run));
      ++done;
    }
  if (progress) progress(done, total, "done");
  return out;
}

QString sim_metric_name(SimMetric m) {
  switch (m) {
    case SimMetric::ttft_p50: return "ttft-p50";
    case SimMetric::ttft_p90: return "ttft-p90";
    case SimMetric::tpot_p50: return "tpot-p50";
    case SimMetric::tpot_p90: return "tpot-p90";
    case SimMetric::e2e_p50: return "e2e-p50";
    case SimMetric::e2e_p90: return "e2e-p90";
    case SimMetric::output_tokens_per_s: return "output-tokens-per-s";
    case SimMetric::requests_per_s: return "requests-per-s";
  }
  return {};
}

QString sim_metric_label(SimMetric m) {
  switch (m) {
    case SimMetric::ttft_p50: return "TTFT p50 (ms)";
    case SimMetric::ttft_p90: return "TTFT p90 (ms)";
    case SimMetric::tpot_p50: return "TPOT p50 (ms)";
    case SimMetric::tpot_p90: return "TPOT p90 (ms)";
    case SimMetric::e2e_p50: return "E2E p50 (ms)";
    case SimMetric::e2e_p90: return "E2E p90 (ms)";
    case SimMetric::output_tokens_per_s: return "output tokens/s";
    case SimMetric::requests_per_s: return "requests/s completed";
  }
  return {};
}

std::optional<SimMetric> parse_sim_metric(const QString& name) {
  for (SimMetric m : kSimMetrics)
    if (sim_metric_name(m) == name.trimmed().toLower()) return m;
  return std::nullopt;
}

double sim_metric_value(const SimulatorRun& run, SimMetric m) {
  switch (m) {
    case SimMetric::ttft_p50: return run.ttft_ms.p50;
    case SimMetric::ttft_p90: return run.ttft_ms.p90;
    case SimMetric::tpot_p50: return run.tpot_ms.p50;
    case SimMetric::tpot_p90: return run.tpot_ms.p90;
    case SimMetric::e2e_p50: return run.e2e_ms.p50;
    case SimMetric::e2e_p90: return run.e2e_ms.p90;
    case SimMetric::output_tokens_per_s: return run.output_tokens_per_s;
    case SimMetric::requests_per_s: return run.requests_per_s;
  }
  return 0;
}

QChart* build_simulator_chart(const SimulatorResult& r, SimMetric metric) {
  auto* chart = new QChart;
  const QString label = sim_metric_label(metric);
  QString what = label;
  if (const auto paren = what.indexOf(" ("); paren > 0) what.truncate(paren);
  chart->setTitle(QString("%1 against request rate: %2, TP %3").arg(what, r.model).arg(r.tp));
  double minX = 0, maxX = 0, maxY = 0;
  for (const auto& run : r.runs)
    if (run.error.isEmpty() && run.rate > 0) {
      minX = minX > 0 ? std::min(minX, run.rate) : run.rate;
      maxX = std::max(maxX, run.rate);
    }
  // Rates over a factor of 8 or more (1, 2, 4, 8, 16...) read best on a log axis.
  const bool log_x = minX > 0 && maxX >= 8 * minX;
  QAbstractAxis* axisX = nullptr;
  if (log_x) {
    auto* ax = new QLogValueAxis;
    ax->setBase(2);
    ax->setLabelFormat("%g");
    ax->setRange(minX / 1.2, maxX * 1.2);
    ax->setMinorTickCount(-1);
    axisX = ax;
  } else {
    auto* ax = new QValueAxis;
    ax->setRange(0, maxX > 0 ? maxX * 1.05 : 1.0);
    ax->setLabelFormat("%g");
    axisX = ax;
  }
  axisX->setTitleText(log_x ? "request rate (requests/s, log scale)" : "request rate (requests/s)");
  auto* axisY = new QValueAxis;
  axisY->setTitleText(label);
  axisY->setLabelFormat("%g");
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  QStringList order;
  for (const auto& run : r.runs)
    if (!order.contains(run.gpu_id)) order << run.gpu_id;
  const QString yunit = label.contains("(ms)") ? "ms" : label;
  for (int i = 0; i < order.size(); ++i) {
    auto* line = new QLineSeries;  // many points stay smooth with a line series
    line->setPointsVisible(true);
    line->setColor(series_color(i));
    QList<QPointF> points;
    for (const auto& run : r.runs) {
      if (run.gpu_id != order[i] || !run.error.isEmpty() || (log_x && run.rate <= 0)) continue;
      line->setName(run.gpu_name);
      const double y = sim_metric_value(run, metric);
      points << QPointF(run.rate, y);
      maxY = std::max(maxY, y);
    }
    // The rates are the user's list, as long as they like: at most kMaxSeriesPoints reach Qt.
    set_series_points(line, points);
    if (line->count() == 0) {
      delete line;
      continue;
    }
    chart->addSeries(line);
    line->attachAxis(axisX);
    line->attachAxis(axisY);
    add_point_tooltips(line, "requests/s", yunit);
  }
  axisY->setRange(0, maxY > 0 ? maxY * 1.1 : 1.0);
  axisY->applyNiceNumbers();
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

QVariant SimulatorTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const SimulatorRun& run = r_.runs[static_cast<std::size_t>(index.row())];
  const int c = index.column();
  if (c == Gpu && (role == Qt::DisplayRole || role == SortRole)) return run.gpu_name;
  if (!run.error.isEmpty()) {
    if (role == Qt::DisplayRole && c == Rate) return run.error;
    if (role == Qt::ToolTipRole) return run.error;
    return {};
  }
  if (c == Attention) {
    if (role == Qt::DisplayRole || role == SortRole) return run.attention;
    if (role == Qt::ToolTipRole) return run.attention_reason;
    return {};
  }
  double v = 0;
  switch (c) {
    case Rate:
      v = run.rate;
      break;
    case TtftP50:
      v = run.ttft_ms.p50;
      break;
    case TtftP90:
      v = run.ttft_ms.p90;
      break;
    case TtftP99:
      v = run.ttft_ms.p99;
      break;
    case TpotP50:
      v = run.tpot_ms.p50;
      break;
    case TpotP90:
      v = run.tpot_ms.p90;
      break;
    case TpotP99:
      v = run.tpot_ms.p99;
      break;
    case E2eP50:
      v = run.e2e_ms.p50;
      break;
    case E2eP99:
      v = run.e2e_ms.p99;
      break;
    case OutputTokensPerS:
      v = run.output_tokens_per_s;
      break;
    case RequestsPerS:
      v = run.requests_per_s;
      break;
    default:
      return {};
  }
  if (role == SortRole) return v;
  if (role == Qt::DisplayRole) return QString::number(v, 'f', c == OutputTokensPerS ? 0 : 2);
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

namespace {
constexpr const char* kSettingsModel = "simulator/model";
constexpr const char* kSettingsTp = "simulator/tp";
constexpr const char* kSettingsClocks = "simulator/clocks";
constexpr const char* kSettingsEngine = "simulator/engine";
constexpr const char* kSettingsWorkload = "simulator/workload";
constexpr const char* kSettingsRates = "simulator/rates";
constexpr const char* kSettingsGpus = "simulator/gpus";
constexpr const char* kSettingsMetric = "simulator/metric";
}  // namespace

SimMetric SimulatorView::currentMetric() const {
  return parse_sim_metric(metric_->currentData().toString()).value_or(SimMetric::ttft_p50);
}

SimulatorView::SimulatorView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent)
    : QWidget(parent),
      gpus_(gpus),
      predictor_(std::move(predictor)),
      model_id_(new QComboBox(this)),
      picker_(new GpuPicker(gpus, this)),
      tp_(new QSpinBox(this)),
      clocks_(new QComboBox(this)),
      engine_(new QComboBox(this)),
      metric_(new QComboBox(this)),
      workload_(new QLineEdit(this)),
      rates_(new QLineEdit(this)),
      run_(new QPushButton(tr("Run (F5)"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      chart_view_(new QChartView(this)),
      model_(new SimulatorTableModel(this)),
      table_(new QTableView(this)) {
  for (const auto& id : sim::bundled_llm_ids()) model_id_->addItem(QString::fromStdString(id));
  model_id_->setEditable(true);  // a path to a config.json works too
  model_id_->setCurrentText("llama-3.1-8b");
  tp_->setRange(1, 64);
  clocks_->addItem(tr("burst"), QVariant::fromValue(static_cast<int>(sim::ClockState::burst)));
  clocks_->addItem(tr("sustained"), QVariant::fromValue(static_cast<int>(sim::ClockState::sustained)));
  clocks_->setToolTip(
      tr("burst: kernels at the boost clock, as short measurements run them; sustained: each step "
         "slowed as far as its load drives the GPU into its power limit (the GPU's measured "
         "sustained-power curve, H100 SXM and H200 ship one; for other GPUs a measured curve scaled "
         "by tensor peak per watt of TDP)"));
  engine_->addItem(tr("vLLM"), QStringLiteral("vllm"));
  engine_->addItem(tr("SGLang"), QStringLiteral("sglang"));
  engine_->setToolTip(
      tr("The serving engine: the attention kernels it runs on each GPU (vLLM: TensorRT-LLM's through "
         "FlashInfer on B200, FlashAttention elsewhere; SGLang: TensorRT-LLM MHA on B200, Triton on "
         "RTX PRO 6000 / RTX 5090, FlashAttention on Ampere to Hopper). The table's attention column "
         "says which ran."));
  workload_->setText("poisson:rate=4,n=100,input=512,output=128,seed=1");
  workload_->setToolTip(
      tr("batch:n=N,input=I,output=O | poisson:rate=R,n=N,input=I,output=O[,seed=S] | trace:FILE.csv"));
  rates_->setPlaceholderText(tr("e.g. 1,2,4,8 (sweep; empty: the workload as given)"));
  rates_->setText("1,2,4,8");
  auto* form = new QFormLayout;
  form->addRow(tr("Model"), model_id_);
  form->addRow(tr("TP"), tp_);
  form->addRow(tr("Clocks"), clocks_);
  form->addRow(tr("Engine"), engine_);
  form->addRow(tr("Workload"), workload_);
  form->addRow(tr("Rates"), rates_);
  for (SimMetric m : kSimMetrics) metric_->addItem(sim_metric_label(m), sim_metric_name(m));
  metric_->setToolTip(tr("What the chart draws against the request rate (the table has every metric)"));
  form->addRow(tr("Chart"), metric_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  cancel_->setEnabled(false);
  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addLayout(form);
  leftLayout->addWidget(new QLabel(tr("GPUs"), left));
  leftLayout->addWidget(picker_, 1);
  leftLayout->addLayout(buttons);
  leftLayout->addWidget(progress_);
  status_->setWordWrap(true);
  leftLayout->addWidget(status_);

  setup_chart_view(chart_view_, QChartView::RectangleRubberBand);
  setup_table_view(table_, model_);
  fill_with_side_panels(this, left, chart_over_table(this, chart_view_, table_, 450, 220), 280);

  // The settings of the last run come back at the next start.
  QSettings settings;
  if (settings.contains(kSettingsModel)) {
    model_id_->setCurrentText(settings.value(kSettingsModel).toString());
    tp_->setValue(settings.value(kSettingsTp, 1).toInt());
    workload_->setText(settings.value(kSettingsWorkload).toString());
    rates_->setText(settings.value(kSettingsRates).toString());
    const int clocks = clocks_->findData(settings.value(kSettingsClocks));
    if (clocks >= 0) clocks_->setCurrentIndex(clocks);
    const int engine = engine_->findData(settings.value(kSettingsEngine));
    if (engine >= 0) engine_->setCurrentIndex(engine);
  }
  const QStringList gpus_saved = settings.value(kSettingsGpus).toStringList();
  picker_->setCheckedIds(gpus_saved.isEmpty() ? QStringList{"h100-sxm", "a100-sxm-80gb"} : gpus_saved);
  if (const int m = metric_->findData(settings.value(kSettingsMetric)); m >= 0) metric_->setCurrentIndex(m);
  connect(metric_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    QSettings().setValue(kSettingsMetric, metric_->itemData(i));
    if (!result_.runs.empty()) replace_chart(chart_view_, build_simulator_chart(result_, currentMetric()));
  });
  progress_->setRange(0, 1);
  progress_->setValue(0);
  status_->setText(tr("Press Run to simulate."));
  connect(run_, &QPushButton::clicked, this, &SimulatorView::recompute);
  connect(cancel_, &QPushButton::clicked, this, &SimulatorView::cancel);
}

SimulatorView::~SimulatorView() {
  ++generation_;
  current_.cancel();
  current_.waitForFinished();
}

void SimulatorView::setSelection(const QString& model, const QStringList& gpu_ids, int tp, const QString& workload,
                                 const QString& rates, const QString& engine) {
  if (const int e = engine_->findData(engine); e >= 0) engine_->setCurrentIndex(e);
  model_id_->setCurrentText(model);
  picker_->setCheckedIds(gpu_ids);
  tp_->setValue(tp);
  workload_->setText(workload);
  rates_->setText(rates);
  recompute();
}

void SimulatorView::cancel() {
  current_.cancel();
  status_->setText(tr("Canceling…"));
}

void SimulatorView::recompute() {
  current_.cancel();  // an older run stops at its next simulation
  const quint64 generation = ++generation_;
  SimulatorRequest req;
  req.model = model_id_->currentText().trimmed();
  req.tp = tp_->value();
  req.clocks = static_cast<sim::ClockState>(clocks_->currentData().toInt());
  req.engine = sim::parse_serving_engine(engine_->currentData().toString().toStdString()).value_or(req.engine);
  {
    QSettings settings;
    settings.setValue(kSettingsModel, req.model);
    settings.setValue(kSettingsTp, req.tp);
    settings.setValue(kSettingsClocks, clocks_->currentData());
    settings.setValue(kSettingsEngine, engine_->currentData());
    settings.setValue(kSettingsWorkload, workload_->text());
    settings.setValue(kSettingsRates, rates_->text());
    settings.setValue(kSettingsGpus, picker_->checkedIds());
  }
  req.workload = workload_->text().trimmed();
  req.predictor = predictor_;
  try {
    req.rates = parse_rates(rates_->text());
  } catch (const std::exception& e) {
    status_->setText(QString::fromUtf8(e.what()));
    return;
  }
  for (const QString& id : picker_->checkedIds())
    if (const GpuSpec* g = gpus_.find(id.toStdString())) req.gpus.push_back(*g);
  if (req.gpus.empty()) {
    status_->setText(tr("Pick at least one GPU."));
    return;
  }
  ++running_;
  cancel_->setEnabled(true);
  status_->setText(tr("Simulating…"));
  auto* watcher = new QFutureWatcher<SimulatorResult>(this);
  connect(watcher, &QFutureWatcherBase::progressRangeChanged, this, [this, generation](int lo, int hi) {
    if (generation == generation_) progress_->setRange(lo, hi);
  });
  connect(watcher, &QFutureWatcherBase::progressValueChanged, this, [this, generation](int v) {
    if (generation == generation_) progress_->setValue(v);
  });
  connect(watcher, &QFutureWatcherBase::progressTextChanged, this, [this, generation](const QString& t) {
    if (generation == generation_) status_->setText(tr("Simulating %1…").arg(t));
  });
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    --running_;
    const QFuture<SimulatorResult> f = watcher->future();
    if (f.resultCount() > 0) {
      applyResult(generation, f.result());
    } else if (generation == generation_) {
      status_->setText(tr("Canceled."));
    }
    if (generation == generation_) cancel_->setEnabled(false);
    watcher->deleteLater();
  });
  current_ = QtConcurrent::run([req](QPromise<SimulatorResult>& promise) {
    try {
      SimulatorResult r = run_simulations(req, [&promise](int done, int total, const QString& text) {
        promise.setProgressRange(0, total);
        promise.setProgressValueAndText(done, text);
        return !promise.isCanceled();
      });
      if (!r.canceled) promise.addResult(std::move(r));
    } catch (const std::exception& e) {
      SimulatorResult r;
      r.model = req.model;
      SimulatorRun run;
      run.error = QString::fromUtf8(e.what());
      r.runs.push_back(run);
      promise.addResult(std::move(r));
    }
  });
  watcher->setFuture(current_);
}

bool SimulatorView::applyResult(quint64 generation, const SimulatorResult& r) {
  if (generation != generation_) return false;
  result_ = r;
  model_->setResult(r);
  replace_chart(chart_view_, build_simulator_chart(r, currentMetric()));
  int failed = 0;
  for (const auto& run : r.runs) failed += run.error.isEmpty() ? 0 : 1;
  status_->setText(failed
                       ? tr("%1 of %2 simulations failed: %3").arg(failed).arg(r.runs.size()).arg(r.runs.front().error)
                       : tr("%1 simulations of %2 (%3 predictor, %4 clocks, as `perfloom simulate`).")
                             .arg(r.runs.size())
                             .arg(r.workload)
                             .arg(r.predictor)
                             .arg(QString::fromUtf8(sim::clock_state_name(r.clocks))));
  return true;
}

}  // namespace perfloom::ui
