#include "ui/plan_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QCursor>
#include <QFileDialog>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QProgressBar>
#include <QPromise>
#include <QPushButton>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>

#include "model/file_reader.h"
#include "model/learned_predictor.h"
#include "model/sim/llm_config.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"

namespace perfloom::ui {

namespace {

QString money(double v, bool priced, int decimals) { return priced ? QString::number(v, 'f', decimals) : "-"; }

QString candidate_note(const plan::Candidate& c) {
  QString note = c.simulated_whole ? QString() : QStringLiteral("estimate (one instance at load/R)");
  if (c.at_risk) note += (note.isEmpty() ? "" : "; ") + QStringLiteral("interval crosses the SLA");
  return note;
}

// Bars of the ranking chart: more would not leave room for their labels.
constexpr int kMaxPlanBars = 12;

QVariant right_aligned() { return int(Qt::AlignRight | Qt::AlignVCenter); }

}  // namespace

QString closed_loop_workload(const QString& spec) {
  QString s = spec.trimmed();
  if (!s.startsWith("poisson:")) return s;
  QStringList kept = {"concurrency=1"};  // required by closed:; the planner sweeps it
  for (const QString& part : s.mid(int(sizeof "poisson:") - 1).split(',', Qt::SkipEmptyParts)) {
    const QString key = part.section('=', 0, 0).trimmed();
    if (key != "rate" && key != "burstiness" && key != "concurrency") kept << part;
  }
  return "closed:" + kept.join(',');
}

plan::Prices load_prices(const GpuDatabase& db, const QString& path) {
  plan::Prices prices = plan::bundled_prices();
  if (path.trimmed().isEmpty()) return prices;
  const std::string p = path.trimmed().toStdString();
  const plan::Prices mine = plan::parse_prices_csv(read_file_guarded(p, file_limits::price_table), p);
  for (const auto& [id, entry] : mine.by_gpu) {
    const GpuSpec* g = db.find(id);
    if (!g) throw std::invalid_argument(p + ": \"" + id.substr(0, 80) + "\" names no known GPU (perfloom gpus)");
    prices.by_gpu[g->id] = entry;
  }
  return prices;
}

PlanViewResult run_plan(const PlanRequest& req, const std::function<bool()>& cancelled) {
  PlanViewResult out;
  out.model = req.model.trimmed();
  const auto t0 = std::chrono::steady_clock::now();
  auto gpus = std::make_shared<std::vector<GpuSpec>>(req.gpus);
  out.gpus = gpus;
  try {
    plan::PlanOptions o;
    const bool with_load = !req.load.trimmed().isEmpty();
    out.workload = with_load ? req.workload.trimmed() : closed_loop_workload(req.workload);
    o.workload = out.workload.toStdString();
    o.sla = plan::parse_plan_sla(req.sla.trimmed().toStdString());
    if (with_load) o.load = plan::parse_load(req.load.trimmed().toStdString());
    o.max_gpus = req.max_gpus;
    o.tp = req.tp;
    if (req.max_num_seqs > 0) o.base.sched.max_num_seqs = req.max_num_seqs;
    auto list = [](const QString& text) {
      std::vector<std::string> out;
      for (const QString& v : text.split(',', Qt::SkipEmptyParts)) out.push_back(v.trimmed().toStdString());
      return out;
    };
    std::vector<int64_t> seqs;
    if (req.max_num_seqs > 0) seqs.push_back(req.max_num_seqs);
    o.settings = plan::engine_settings_grid(list(req.quantizations), list(req.kv_cache_dtypes), {}, seqs);
    o.disaggregated = req.disaggregated;
    o.wide_ep = req.wide_ep && with_load;
    o.base.engine = req.engine;
    o.cancelled = cancelled;
    const sim::LlmConfig cfg = sim::load_llm_config(req.model.trimmed().toStdString());
    // The learned models, else the roofline: what `perfloom plan` uses.
    const std::shared_ptr<const KernelPredictor> owned =
        req.predictor ? req.predictor : make_default_predictor(nullptr);
    out.predictor = QString::fromStdString(owned->name());
    std::vector<const GpuSpec*> pointers;
    for (const GpuSpec& g : *gpus) pointers.push_back(&g);
    out.plan = plan::plan_deployments(cfg, pointers, *owned, req.prices, o);
  } catch (const plan::PlanCancelled&) {
    throw;  // the caller drops the job's result
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

const plan::ParetoPoint* nearest_pareto_point(const PlanViewResult& r, const QString& gpu_id, QPointF at,
                                              bool disaggregated) {
  const plan::ParetoPoint* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& p : r.plan.pareto) {
    if (QString::fromStdString(p.gpu->id) != gpu_id || p.disaggregated() != disaggregated) continue;
    const double d = std::hypot((p.tokens_per_s_per_user - at.x()) / std::max(1.0, p.tokens_per_s_per_user),
                                (p.tokens_per_s_per_gpu - at.y()) / std::max(1.0, p.tokens_per_s_per_gpu));
    if (d < best_d) {
      best_d = d;
      best = &p;
    }
  }
  return best;
}

QString pareto_point_workload(const PlanViewResult& r, const plan::ParetoPoint& p) {
  std::string spec = plan::with_key(r.workload.toStdString(), "concurrency", std::to_string(p.concurrency));
  static const QRegularExpression n_re("[:,]n=([0-9]+)");
  const auto m = n_re.match(r.workload);
  const long long n = m.hasMatch() ? m.captured(1).toLongLong() : 0;
  spec = plan::with_key(spec, "n", std::to_string(std::max<long long>(n, 4LL * p.concurrency)));
  return QString::fromStdString(spec);
}

QString pareto_point_label(const plan::ParetoPoint& p) {
  const QString who = p.disaggregated() ? QString::fromStdString(p.describe()) : QString::fromStdString(p.gpu->name);
  QString s = QString("%1, TP %2, concurrency %3: %4 tok/s per GPU, %5 tok/s per user")
                  .arg(who)
                  .arg(p.tp)
                  .arg(p.concurrency)
                  .arg(p.tokens_per_s_per_gpu, 0, 'f', 0)
                  .arg(p.tokens_per_s_per_user, 0, 'f', 1);
  s += p.priced ? QString(", $%1 per M output tokens").arg(p.usd_per_million_output_tokens, 0, 'f', 3)
                : QString(", no price");
  s += p.meets_sla ? QString(", meets the SLA") : QString(", misses the SLA");
  return s;
}

namespace {

// Shows the label of the point under the cursor: the nearest of the series' own points, so the
// downsampling of set_series_points (which keeps the points it shows) cannot misalign them.
void add_deployment_tooltips(QXYSeries* series, std::vector<std::pair<QPointF, QString>> labels) {
  QObject::connect(series, &QXYSeries::hovered, series, [labels = std::move(labels)](const QPointF& p, bool state) {
    if (!state || labels.empty()) {
      QToolTip::hideText();
      return;
    }
    double best = std::numeric_limits<double>::infinity();
    const QString* text = nullptr;
    for (const auto& [q, label] : labels) {
      const double d = std::hypot((q.x() - p.x()) / std::max(1.0, std::abs(q.x())),
                                  (q.y() - p.y()) / std::max(1.0, std::abs(q.y())));
      if (d < best) {
        best = d;
        text = &label;
      }
    }
    QToolTip::showText(QCursor::pos(), *text);
  });
}

}  // namespace

QChart* build_plan_chart(const PlanViewResult& r) {
  auto* chart = new QChart;
  chart->legend()->setAlignment(Qt::AlignBottom);
  if (r.plan.load) {
    // The ranking as bars: $ per million output tokens of the cheapest priced deployments.
    QStringList categories;
    auto* set = new QBarSet("$ per million output tokens");
    set->setColor(series_color(0));
    double maxV = 0;
    for (const auto& k : r.plan.ranked) {
      if (!k.priced || categories.size() >= kMaxPlanBars) continue;
      categories << QString::fromStdString(k.d.describe());
      *set << k.usd_per_million_output_tokens;
      maxV = std::max(maxV, k.usd_per_million_output_tokens);
    }
    chart->setTitle(categories.isEmpty()
                        ? QString("No priced deployment meets the SLA at %1 requests/s").arg(r.plan.rate, 0, 'g', 4)
                        : QString("The cheapest deployments that meet the SLA at %1 requests/s: %2")
                              .arg(r.plan.rate, 0, 'g', 4)
                              .arg(QString::fromStdString(r.plan.model)));
    if (categories.isEmpty()) {
      delete set;
      return chart;
    }
    // Cheapest on top: a horizontal bar chart draws its first category at the bottom.
    std::reverse(categories.begin(), categories.end());
    QList<qreal> values;
    for (int i = set->count() - 1; i >= 0; --i) values << set->at(i);
    set->remove(0, set->count());
    set->append(values);
    auto* bars = new QHorizontalBarSeries;
    bars->append(set);
    chart->addSeries(bars);
    auto* axisY = new QBarCategoryAxis;
    axisY->append(categories);
    auto* axisX = new QValueAxis;
    axisX->setTitleText("$ per million output tokens");
    axisX->setRange(0, maxV > 0 ? maxV * 1.1 : 1.0);
    axisX->applyNiceNumbers();
    chart->addAxis(axisY, Qt::AlignLeft);
    chart->addAxis(axisX, Qt::AlignBottom);
    bars->attachAxis(axisY);
    bars->attachAxis(axisX);
    add_bar_tooltips(set, categories, "$/M output tokens");
    chart->legend()->hide();  // one set, named by the axis
    return chart;
  }
  if (r.plan.pareto.empty()) {
    chart->setTitle("Pareto front: no point (see what was left out)");
    return chart;
  }
  chart->setTitle(QString("Throughput per GPU against interactivity: %1, %2")
                      .arg(QString::fromStdString(r.plan.model), QString::fromStdString(r.plan.workload)));
  auto* axisX = new QValueAxis;
  axisX->setTitleText("tokens/s per user (1000 / mean TPOT)");
  auto* axisY = new QValueAxis;
  axisY->setTitleText("output tokens/s per GPU");
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  double maxX = 0, maxY = 0;
  // One curve per GPU type, and one per GPU type disaggregated (its own front, dashed).
  std::vector<std::pair<const GpuSpec*, bool>> order;
  for (const auto& p : r.plan.pareto)
    if (std::find(order.begin(), order.end(), std::make_pair(p.gpu, p.disaggregated())) == order.end())
      order.emplace_back(p.gpu, p.disaggregated());
  std::vector<const GpuSpec*> types;
  for (const auto& [gpu, disaggregated] : order)
    if (std::find(types.begin(), types.end(), gpu) == types.end()) types.push_back(gpu);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto [gpu, disaggregated] = order[i];
    const QColor color =
        series_color(static_cast<int>(std::find(types.begin(), types.end(), gpu) - types.begin()));
    std::vector<const plan::ParetoPoint*> front, rest;
    for (const auto& p : r.plan.pareto) {
      if (p.gpu != gpu || p.disaggregated() != disaggregated) continue;
      (p.on_front ? front : rest).push_back(&p);
      maxX = std::max(maxX, p.tokens_per_s_per_user);
      maxY = std::max(maxY, p.tokens_per_s_per_gpu);
    }
    // The front joined in x order: a line that falls as interactivity rises.
    std::sort(front.begin(), front.end(), [](const plan::ParetoPoint* a, const plan::ParetoPoint* b) {
      return a->tokens_per_s_per_user < b->tokens_per_s_per_user;
    });
    auto* line = new QLineSeries;
    line->setName(QString::fromStdString(gpu->name) + (disaggregated ? ", disaggregated" : ""));
    line->setProperty("gpu_id", QString::fromStdString(gpu->id));
    line->setProperty("disaggregated", disaggregated);
    line->setColor(color);
    if (disaggregated) {
      QPen pen = line->pen();
      pen.setStyle(Qt::DashLine);
      line->setPen(pen);
    }
    line->setPointsVisible(true);
    QList<QPointF> points;
    std::vector<std::pair<QPointF, QString>> labels;
    for (const auto* p : front) {
      points << QPointF(p->tokens_per_s_per_user, p->tokens_per_s_per_gpu);
      labels.emplace_back(points.back(), pareto_point_label(*p));
    }
    set_series_points(line, points);
    chart->addSeries(line);
    line->attachAxis(axisX);
    line->attachAxis(axisY);
    add_deployment_tooltips(line, std::move(labels));
    if (rest.empty()) continue;
    // The dominated points of the sweep, in the curve's colour, without a legend entry of their own.
    auto* scatter = new QScatterSeries;
    scatter->setName(line->name() + " (dominated)");
    scatter->setProperty("gpu_id", line->property("gpu_id"));
    scatter->setProperty("disaggregated", disaggregated);
    QColor faint = color;
    faint.setAlpha(110);
    scatter->setColor(faint);
    scatter->setBorderColor(faint);
    scatter->setMarkerSize(7);
    QList<QPointF> others;
    std::vector<std::pair<QPointF, QString>> other_labels;
    for (const auto* p : rest) {
      others << QPointF(p->tokens_per_s_per_user, p->tokens_per_s_per_gpu);
      other_labels.emplace_back(others.back(), pareto_point_label(*p) + " (dominated)");
    }
    set_series_points(scatter, others);
    chart->addSeries(scatter);
    scatter->attachAxis(axisX);
    scatter->attachAxis(axisY);
    for (QLegendMarker* m : chart->legend()->markers(scatter)) m->setVisible(false);
    add_deployment_tooltips(scatter, std::move(other_labels));
  }
  axisX->setRange(0, maxX > 0 ? maxX * 1.05 : 1.0);
  axisY->setRange(0, maxY > 0 ? maxY * 1.1 : 1.0);
  axisX->applyNiceNumbers();
  axisY->applyNiceNumbers();
  return chart;
}

void PlanTableModel::setResult(PlanViewResult r) {
  beginResetModel();
  r_ = std::move(r);
  headers_.clear();
  if (r_.plan.load) {
    headers_ << "deployment"
             << "GPUs"
             << "$/hour"
             << "$/M output tok";
    for (const auto& b : r_.plan.sla.bounds) headers_ << QString::fromStdString(b.name()) + " (ms)";
    headers_ << "headroom"
             << "output tok/s"
             << "note";
  } else {
    headers_ << "GPU"
             << "TP"
             << "concurrency"
             << "tok/s per GPU"
             << "tok/s per user"
             << "TTFT p90 (ms)"
             << "TPOT p90 (ms)"
             << "$/M output tok"
             << "SLA"
             << "Pareto front";
  }
  endResetModel();
}

int PlanTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  return static_cast<int>(r_.plan.load ? r_.plan.ranked.size() : r_.plan.pareto.size());
}

int PlanTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(headers_.size());
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= headers_.size()) return {};
  return headers_[section];
}

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const int c = index.column();
  const auto row = static_cast<std::size_t>(index.row());
  if (r_.plan.load) {
    const plan::Candidate& k = r_.plan.ranked[row];
    const int nb = static_cast<int>(r_.plan.sla.bounds.size());
    if (c == 0) {
      if (role == Qt::DisplayRole || role == SortRole) return QString::fromStdString(k.d.describe());
      if (role == Qt::ToolTipRole) return QString::fromStdString(k.d.gpu->name);
      return {};
    }
    if (c == 4 + nb + 2) {  // note
      if (role == Qt::DisplayRole || role == SortRole || role == Qt::ToolTipRole) return candidate_note(k);
      return {};
    }
    double v = 0;
    QString text;
    if (c == 1) {
      v = k.d.gpus();
      text = QString::number(k.d.gpus());
    } else if (c == 2) {
      v = k.priced ? k.usd_per_hour : std::numeric_limits<double>::infinity();
      text = money(k.usd_per_hour, k.priced, 2);
    } else if (c == 3) {
      v = k.priced ? k.usd_per_million_output_tokens : std::numeric_limits<double>::infinity();
      text = money(k.usd_per_million_output_tokens, k.priced, 3);
    } else if (c < 4 + nb) {
      const auto b = static_cast<std::size_t>(c - 4);
      v = b < k.bound_values.size() ? k.bound_values[b] : 0;
      text = QString::number(v, 'f', 1);
    } else if (c == 4 + nb) {
      v = k.headroom;
      text = QString::number(100 * v, 'f', 0) + " %";
    } else if (c == 4 + nb + 1) {
      v = k.output_tokens_per_s;
      text = QString::number(v, 'f', 0);
    } else {
      return {};
    }
    if (role == SortRole) return v;
    if (role == Qt::DisplayRole) return text;
    if (role == Qt::TextAlignmentRole) return right_aligned();
    return {};
  }
  const plan::ParetoPoint& p = r_.plan.pareto[row];
  if (role == Qt::ToolTipRole) return pareto_point_label(p);
  switch (c) {
    case 0:
      if (role == Qt::DisplayRole || role == SortRole)
        return QString::fromStdString(p.gpu->name) +
               (p.disaggregated() ? QString(", %1 prefill + %2 decode").arg(p.prefill_replicas).arg(p.decode_replicas)
                                   : QString());
      return {};
    case 8:
      if (role == Qt::DisplayRole || role == SortRole) return p.meets_sla ? QString("meets") : QString("misses");
      return {};
    case 9:
      if (role == Qt::DisplayRole || role == SortRole) return p.on_front ? QString("yes") : QString("no");
      return {};
    default:
      break;
  }
  double v = 0;
  QString text;
  switch (c) {
    case 1:
      v = p.tp;
      text = QString::number(p.tp);
      break;
    case 2:
      v = p.concurrency;
      text = QString::number(p.concurrency);
      break;
    case 3:
      v = p.tokens_per_s_per_gpu;
      text = QString::number(v, 'f', 0);
      break;
    case 4:
      v = p.tokens_per_s_per_user;
      text = QString::number(v, 'f', 1);
      break;
    case 5:
      v = p.ttft_p90_ms;
      text = QString::number(v, 'f', 1);
      break;
    case 6:
      v = p.tpot_p90_ms;
      text = QString::number(v, 'f', 2);
      break;
    case 7:
      v = p.priced ? p.usd_per_million_output_tokens : std::numeric_limits<double>::infinity();
      text = money(p.usd_per_million_output_tokens, p.priced, 3);
      break;
    default:
      return {};
  }
  if (role == SortRole) return v;
  if (role == Qt::DisplayRole) return text;
  if (role == Qt::TextAlignmentRole) return right_aligned();
  return {};
}

void PlanRejectedModel::setResult(PlanViewResult r) {
  beginResetModel();
  r_ = std::move(r);
  endResetModel();
}

int PlanRejectedModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(r_.plan.rejected.size());
}

int PlanRejectedModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 2; }

QVariant PlanRejectedModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return QString("left out");
  if (section == 1) return QString("why");
  return {};
}

QVariant PlanRejectedModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const plan::Candidate& c = r_.plan.rejected[static_cast<std::size_t>(index.row())];
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  if (index.column() == 0) {
    if (c.d.disaggregated()) return QString::fromStdString(c.d.describe());
    const std::string e = c.d.settings.describe();
    return QString("%1 TP %2%3")
        .arg(QString::fromStdString(c.d.gpu->id))
        .arg(c.d.tp)
        .arg(e.empty() ? QString() : QString(" (%1)").arg(QString::fromStdString(e)));
  }
  return QString::fromStdString(c.why_not);
}

PlanView::PlanView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent)
    : QWidget(parent),
      gpus_(gpus),
      predictor_(std::move(predictor)),
      model_id_(new QComboBox(this)),
      workload_(new QLineEdit(this)),
      sla_(new QLineEdit(this)),
      load_(new QLineEdit(this)),
      max_gpus_(new QSpinBox(this)),
      quantizations_(new QLineEdit(this)),
      kv_dtypes_(new QLineEdit(this)),
      disaggregated_(new QCheckBox(tr("also disaggregated prefill/decode pools"), this)),
      wide_ep_(new QCheckBox(tr("also wide EP (MoE)"), this)),
      engine_(new QComboBox(this)),
      prices_(new QLineEdit(this)),
      gpu_scope_(new QComboBox(this)),
      picker_(new GpuPicker(gpus, this)),
      run_(new QPushButton(tr("Plan (F5)"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      chart_view_(new QChartView(this)),
      model_(new PlanTableModel(this)),
      table_(new QTableView(this)),
      rejected_(new PlanRejectedModel(this)),
      rejected_table_(new QTableView(this)) {
  for (const auto& id : sim::bundled_llm_ids()) model_id_->addItem(QString::fromStdString(id));
  model_id_->setEditable(true);  // a path to a config.json works too
  model_id_->setCurrentText("llama-3.1-8b");
  workload_->setText("poisson:rate=1,n=200,lengths=chat,seed=1");
  workload_->setToolTip(
      tr("poisson:rate=R,n=N,LENGTHS[,seed=S] (docs/cli.md). With a target load its rate is set from the "
         "load; without one it runs as a closed loop (closed:...) whose concurrency is swept."));
  sla_->setText("ttft_p90=1000,tpot_p90=50");
  sla_->setToolTip(tr("Percentile bounds in ms: ttft|tpot|e2e _ p50|p90|p99|mean = MS, joined by commas"));
  load_->setPlaceholderText(tr("e.g. 10req/s or 5000tok/s (empty: the Pareto front)"));
  max_gpus_->setRange(1, 4096);
  max_gpus_->setValue(8);
  max_gpus_->setToolTip(tr("GPUs in one deployment at most"));
  quantizations_->setPlaceholderText(tr("the model's; e.g. bf16,fp8"));
  quantizations_->setToolTip(tr("Weight formats to search, every one for every GPU type: bf16, fp8, fp8-block, int4, "
                                "nvfp4, mxfp4 (a GPU that cannot serve one is left out saying so)"));
  kv_dtypes_->setPlaceholderText(tr("the model's; e.g. auto,fp8"));
  kv_dtypes_->setToolTip(tr("KV-cache dtypes to search: auto (the model's), bf16, fp16, fp8, fp8_e5m2"));
  disaggregated_->setToolTip(tr("Search a prefill pool and a decode pool besides one pool: with a target load, "
                                "pools of any GPU types; without one, prefill:decode instances 1:1 to 1:3, 2:1 and "
                                "3:1 per GPU type, a dashed curve of their own"));
  wide_ep_->setToolTip(tr("For an MoE model, search expert groups of data-parallel attention ranks, the experts over "
                          "every GPU of a group, one group or several behind the router (with a target load)"));
  engine_->addItem(tr("vLLM"), QStringLiteral("vllm"));
  engine_->addItem(tr("SGLang"), QStringLiteral("sglang"));
  engine_->setToolTip(tr("The serving engine simulated: the attention kernels it runs on each GPU type"));
  prices_->setPlaceholderText(tr("bundled prices (resources/plan/prices.csv)"));
  prices_->setToolTip(tr("A CSV gpu,usd_per_gpu_hour[,source]; its rows replace the bundled ones"));
  auto* browse = new QPushButton(tr("…"), this);
  browse->setToolTip(tr("Choose a price file"));
  auto* priceRow = new QHBoxLayout;
  priceRow->addWidget(prices_, 1);
  priceRow->addWidget(browse);
  gpu_scope_->addItem(tr("every GPU of the database"));
  gpu_scope_->addItem(tr("the GPUs checked below"));
  auto* form = new QFormLayout;
  form->addRow(tr("Model"), model_id_);
  form->addRow(tr("Workload"), workload_);
  form->addRow(tr("SLA"), sla_);
  form->addRow(tr("Target load"), load_);
  form->addRow(tr("Max GPUs"), max_gpus_);
  form->addRow(tr("Weights"), quantizations_);
  form->addRow(tr("KV cache"), kv_dtypes_);
  auto* deployments = new QVBoxLayout;
  deployments->addWidget(disaggregated_);
  deployments->addWidget(wide_ep_);
  form->addRow(tr("Deployments"), deployments);
  form->addRow(tr("Engine"), engine_);
  form->addRow(tr("Prices"), priceRow);
  form->addRow(tr("GPUs"), gpu_scope_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  cancel_->setEnabled(false);
  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addLayout(form);
  leftLayout->addWidget(picker_, 1);
  leftLayout->addLayout(buttons);
  leftLayout->addWidget(progress_);
  status_->setWordWrap(true);
  leftLayout->addWidget(status_);

  setup_chart_view(chart_view_, QChartView::RectangleRubberBand);
  setup_table_view(table_, model_);
  setup_table_view(rejected_table_, rejected_);
  auto* tables = new QSplitter(Qt::Vertical, this);
  tables->addWidget(table_);
  tables->addWidget(rejected_table_);
  tables->setSizes({220, 120});
  fill_with_side_panels(this, left, chart_over_table(this, chart_view_, tables, 420, 340), 300);

  // Two GPU types first: a Pareto sweep takes some 12 s per GPU type with the learned models on two
  // cores, so every type of the database is a choice, not the default.
  picker_->setCheckedIds({"h100-sxm", "a100-sxm-80gb"});
  gpu_scope_->setCurrentIndex(1);
  connect(gpu_scope_, &QComboBox::currentIndexChanged, this, [this](int i) { picker_->setEnabled(i == 1); });
  progress_->setRange(0, 1);
  progress_->setValue(0);
  status_->setText(tr("Press Plan to search deployments."));
  connect(run_, &QPushButton::clicked, this, &PlanView::recompute);
  connect(cancel_, &QPushButton::clicked, this, &PlanView::cancel);
  connect(browse, &QPushButton::clicked, this, &PlanView::browsePrices);
}

PlanView::~PlanView() {
  ++generation_;
  current_.cancel();
  current_.waitForFinished();
}

void PlanView::browsePrices() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Price file"), {}, tr("CSV (*.csv);;All files (*)"));
  if (!path.isEmpty()) prices_->setText(path);
}

void PlanView::openPoint(const QString& gpu_id, QPointF at, bool disaggregated) {
  const plan::ParetoPoint* p = nearest_pareto_point(result_, gpu_id, at, disaggregated);
  if (p && disaggregated) {  // the Simulator view runs one pool: say how to simulate both
    status_->setText(tr("%1 at concurrency %2: perfloom simulate --model %3 --gpu %4 --tp %5%6 --prefill-instances %7 "
                        "--decode-instances %8 --workload %9")
                         .arg(QString::fromStdString(p->describe()))
                         .arg(p->concurrency)
                         .arg(result_.model, gpu_id)
                         .arg(p->tp)
                         .arg(p->pp > 1 ? QString(" --pp %1").arg(p->pp) : QString())
                         .arg(p->prefill_replicas)
                         .arg(p->decode_replicas)
                         .arg(pareto_point_workload(result_, *p)));
    return;
  }
  if (p)
    emit openInSimulator(result_.model, gpu_id, p->tp, pareto_point_workload(result_, *p),
                         QString::fromStdString(result_.plan.engine));
}

void PlanView::setSelection(const QString& model, const QStringList& gpu_ids, const QString& workload,
                            const QString& sla, const QString& load, int max_gpus, const QString& prices) {
  model_id_->setCurrentText(model);
  gpu_scope_->setCurrentIndex(gpu_ids.isEmpty() ? 0 : 1);
  if (!gpu_ids.isEmpty()) picker_->setCheckedIds(gpu_ids);
  workload_->setText(workload);
  sla_->setText(sla);
  load_->setText(load);
  max_gpus_->setValue(max_gpus);
  prices_->setText(prices);
  recompute();
}

void PlanView::cancel() {
  current_.cancel();
  status_->setText(tr("Canceling…"));
}

void PlanView::recompute() {
  current_.cancel();  // an older run stops before its next simulation
  const quint64 generation = ++generation_;
  PlanRequest req;
  req.model = model_id_->currentText().trimmed();
  req.workload = workload_->text().trimmed();
  req.sla = sla_->text().trimmed();
  req.load = load_->text().trimmed();
  req.max_gpus = max_gpus_->value();
  req.tp = tp_degrees_;
  req.max_num_seqs = max_num_seqs_;
  req.quantizations = quantizations_->text().trimmed();
  req.kv_cache_dtypes = kv_dtypes_->text().trimmed();
  req.disaggregated = disaggregated_->isChecked();
  req.wide_ep = wide_ep_->isChecked();
  req.engine = sim::parse_serving_engine(engine_->currentData().toString().toStdString()).value_or(req.engine);
  req.predictor = predictor_;
  try {
    req.prices = load_prices(gpus_, prices_->text());
  } catch (const std::exception& e) {
    status_->setText(QString::fromUtf8(e.what()));
    return;
  }
  if (gpu_scope_->currentIndex() == 0) {
    req.gpus = gpus_.all();
  } else {
    for (const QString& id : picker_->checkedIds())
      if (const GpuSpec* g = gpus_.find(id.toStdString())) req.gpus.push_back(*g);
  }
  if (req.gpus.empty()) {
    status_->setText(tr("Pick at least one GPU."));
    return;
  }
  ++running_;
  cancel_->setEnabled(true);
  progress_->setRange(0, 0);  // busy: the planner does not know its number of simulations up front
  status_->setText(tr("Planning over %1 GPU types…").arg(req.gpus.size()));
  auto* watcher = new QFutureWatcher<PlanViewResult>(this);
  connect(watcher, &QFutureWatcherBase::progressTextChanged, this, [this, generation](const QString& t) {
    if (generation == generation_) status_->setText(t);
  });
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    --running_;
    const QFuture<PlanViewResult> f = watcher->future();
    if (generation == generation_) {
      progress_->setRange(0, 1);
      progress_->setValue(f.resultCount() > 0 ? 1 : 0);
      cancel_->setEnabled(false);
    }
    if (f.resultCount() > 0)
      applyResult(generation, f.result());
    else if (generation == generation_)
      status_->setText(tr("Canceled."));
    watcher->deleteLater();
  });
  const auto gpu_types = req.gpus.size();
  current_ = QtConcurrent::run([req, gpu_types](QPromise<PlanViewResult>& promise) {
    // The planner asks before each simulation: the answer stops it, and the count is the progress.
    int simulations = 0;
    promise.setProgressRange(0, std::numeric_limits<int>::max());  // progress values only rise
    auto cancelled = [&promise, &simulations, gpu_types] {
      if (promise.isCanceled()) return true;
      ++simulations;
      promise.setProgressValueAndText(
          simulations, QString("Planning over %1 GPU types: simulation %2…").arg(gpu_types).arg(simulations));
      return false;
    };
    try {
      promise.addResult(run_plan(req, cancelled));
    } catch (const plan::PlanCancelled&) {
      // No result: the watcher reports the cancel.
    }
  });
  watcher->setFuture(current_);
}

bool PlanView::applyResult(quint64 generation, const PlanViewResult& r) {
  if (generation != generation_) return false;
  result_ = r;
  model_->setResult(r);
  rejected_->setResult(r);
  QChart* chart = build_plan_chart(r);
  for (QAbstractSeries* s : chart->series())
    if (auto* xy = qobject_cast<QXYSeries*>(s))
      connect(xy, &QXYSeries::clicked, this,
              [this, gpu = xy->property("gpu_id").toString(),
               disaggregated = xy->property("disaggregated").toBool()](const QPointF& at) {
                openPoint(gpu, at, disaggregated);
              });
  replace_chart(chart_view_, chart);
  if (!r.error.isEmpty()) {
    status_->setText(r.error);
    return true;
  }
  const plan::PlanResult& p = r.plan;
  QString text = tr("%1 simulations in %2 s (%3 predictor, as `perfloom plan`).")
                     .arg(p.simulations)
                     .arg(r.seconds, 0, 'f', 1)
                     .arg(r.predictor);
  if (p.load) {
    text += p.ranked.empty()
                ? tr(" No deployment meets the SLA within %1 GPUs: the left-out list says which bound binds.")
                      .arg(max_gpus_->value())
                : tr(" %1 deployments meet the SLA at %2 requests/s; the cheapest: %3.")
                      .arg(p.ranked.size())
                      .arg(p.rate, 0, 'g', 4)
                      .arg(QString::fromStdString(p.ranked.front().d.describe()));
  } else {
    int front = 0;
    for (const auto& q : p.pareto) front += q.on_front ? 1 : 0;
    text += tr(" %1 points of the closed-loop sweep (%2), %3 on the fronts; click one to simulate it.")
                .arg(p.pareto.size())
                .arg(r.workload)
                .arg(front);
  }
  if (!p.rejected.empty()) text += tr(" %1 left out (listed below).").arg(p.rejected.size());
  for (const auto& n : p.notes) text += " " + QString::fromStdString(n) + ".";
  status_->setText(text);
  return true;
}

}  // namespace perfloom::ui
