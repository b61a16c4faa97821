#include "ui/tuner_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFont>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QPalette>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "model/sim/llm_config.h"
#include "model/tuner/sampling_plan.h"
#include "model/tuner/tuner_table.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"

namespace perfloom::ui {

namespace {
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }
const QColor kBest(0xdd, 0x84, 0x52);  // the best configuration's bar
}  // namespace

constexpr std::size_t kBarsShown = 8;

QString config_label(const TileConfig& t) {
  return QString("%1×%2×%3 s%4 c%5×%6")
      .arg(t.tile_m)
      .arg(t.tile_n)
      .arg(t.tile_k)
      .arg(std::max(1, t.split_k))
      .arg(std::max(1, t.cluster_m))
      .arg(std::max(1, t.cluster_n));
}

TunerViewResult compute_tuner(const TunerRequest& req) {
  TunerViewResult r;
  r.gpu_id = QString::fromStdString(req.gpu.id);
  r.gpu_name = QString::fromStdString(req.gpu.name);
  r.shape = req.shape;
  r.sweep_dim = req.sweep_dim == 'N' ? 'N' : 'M';
  try {
    const tuner::TunerTable* table = tuner::bundled_tuner_table(req.gpu);
    const tuner::TuneResult t = tuner::tune_gemm(req.shape, req.gpu, static_cast<std::size_t>(std::max(1, req.top)),
                                                 table, req.predictor.get());
    r.method = QString::fromStdString(t.method);
    r.note = QString::fromStdString(t.note);
    r.ranked = t.ranked;
    r.refusal_threshold = t.refusal_threshold;
    const bool with_table = t.method == "wave-table" && table;
    const bool learned = t.method == "learned" && req.predictor;
    const int64_t dim = r.sweep_dim == 'N' ? req.shape.N : req.shape.M;
    const int64_t lo = std::max<int64_t>(1, dim / 4), hi = std::max<int64_t>(dim * 2, lo + 8);
    std::vector<int64_t> dims;
    const int points = std::max(2, req.sweep_points);
    for (int i = 0; i < points; ++i) {
      const auto d = lo + static_cast<int64_t>(std::llround(static_cast<double>(hi - lo) * i / (points - 1)));
      if (dims.empty() || d != dims.back()) dims.push_back(d);
    }
    // The analytical ranking's latencies scaled at each point of the sweep as at the query (tuner.h
    // rank_analytical: its fastest at the learned predictor's latency; 1 without the learned predictor).
    std::vector<double> scale(dims.size(), 1.0);
    if (!with_table && !learned && std::isfinite(t.anchor_us))
      for (std::size_t i = 0; i < dims.size(); ++i) {
        tuner::GemmShape sh = req.shape;
        (r.sweep_dim == 'N' ? sh.N : sh.M) = dims[i];
        const auto ranked = tuner::rank_analytical(req.gpu, sh);
        const auto library = tuner::library_prediction(req.predictor.get(), req.gpu, sh);
        if (!ranked.empty() && library) scale[i] = library->pred_us / ranked.front().pred_us;
      }
    for (std::size_t c = 0; c < r.ranked.size() && static_cast<int>(c) < req.sweep_configs; ++c) {
      TunerSweepSeries s;
      s.config = r.ranked[c].config;
      s.label = config_label(s.config);
      for (std::size_t i = 0; i < dims.size(); ++i) {
        const int64_t d = dims[i];
        tuner::GemmShape sh = req.shape;
        (r.sweep_dim == 'N' ? sh.N : sh.M) = d;
        double p = NAN;
        if (with_table) {
          p = tuner::evaluate_with_table(*table, req.gpu, sh, s.config).pred_us;
        } else if (learned) {
          const auto one = tuner::rank_learned(*req.predictor, req.gpu, sh, {s.config});
          if (one.empty()) continue;  // the predictor refuses this shape
          p = one.front().pred_us;
        } else {
          p = tuner::evaluate_analytical(req.gpu, sh, s.config).pred_us * scale[i];
        }
        s.dims.push_back(static_cast<double>(d));
        s.pred_us.push_back(p);
      }
      r.sweep.push_back(std::move(s));
    }
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
    r.ranked.clear();
    r.sweep.clear();
  }
  return r;
}

QChart* build_tuner_bar_chart(const TunerViewResult& r) {
  auto* chart = new QChart;
  chart->setTitle(QString("Predicted latency per configuration: GEMM %1×%2×%3 %4 on %5")
                      .arg(r.shape.M)
                      .arg(r.shape.N)
                      .arg(r.shape.K)
                      .arg(qs(dtype_name(r.shape.dtype)))
                      .arg(r.gpu_name));
  auto* set = new QBarSet("predicted latency (µs)");
  set->setColor(series_color(0));
  set->setSelectedColor(kBest);
  // The fastest configurations only, so that every label has room (the table lists them all).
  // A horizontal bar chart draws its first category at the bottom: append from the slowest shown
  // to the best, so that the best (highlighted) is on top.
  const std::size_t shown = std::min<std::size_t>(r.ranked.size(), kBarsShown);
  QStringList categories;
  double max_us = 0;
  for (std::size_t i = shown; i-- > 0;) {
    const auto& c = r.ranked[i];
    *set << c.pred_us;
    categories << QString("#%1 %2").arg(i + 1).arg(config_label(c.config));
    max_us = std::max(max_us, c.pred_us);
  }
  if (shown > 0) set->selectBar(static_cast<int>(shown) - 1);  // the best: highlighted
  auto* series = new QHorizontalBarSeries;
  series->append(set);
  chart->addSeries(series);
  auto* axisY = new QBarCategoryAxis;
  axisY->append(categories);
  QFont small = axisY->labelsFont();  // a label per bar needs a small font to fit without eliding
  small.setPointSizeF(7.0);
  axisY->setLabelsFont(small);
  axisY->setTruncateLabels(false);
  auto* axisX = new QValueAxis;
  axisX->setTitleText("predicted latency (µs)");
  axisX->setRange(0, max_us > 0 ? max_us * 1.1 : 1.0);
  axisX->applyNiceNumbers();
  chart->addAxis(axisY, Qt::AlignLeft);
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisY);
  series->attachAxis(axisX);
  add_bar_tooltips(set, categories, "µs");
  chart->legend()->hide();
  return chart;
}

QChart* build_tuner_sweep_chart(const TunerViewResult& r) {
  auto* chart = new QChart;
  const QChar d = QChar(r.sweep_dim);
  chart->setTitle(QString("Wave steps: predicted latency against %1 (%2 fixed at %3, K = %4)")
                      .arg(d)
                      .arg(r.sweep_dim == 'N' ? 'M' : 'N')
                      .arg(r.sweep_dim == 'N' ? r.shape.M : r.shape.N)
                      .arg(r.shape.K));
  auto* axisX = new QValueAxis;
  axisX->setTitleText(QString("%1").arg(d));
  axisX->setLabelFormat("%d");
  auto* axisY = new QValueAxis;
  axisY->setTitleText("µs");
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  double minX = std::numeric_limits<double>::infinity(), maxX = 0, maxY = 0;
  for (std::size_t i = 0; i < r.sweep.size(); ++i) {
    const auto& s = r.sweep[i];
    auto* line = new QLineSeries;
    line->setName(s.label);
    line->setColor(series_color(static_cast<int>(i)));
    // Steps: hold each value until the next point, so a wave boundary shows as a vertical jump.
    QList<QPointF> points;
    points.reserve(2 * static_cast<qsizetype>(s.dims.size()));
    for (std::size_t j = 0; j < s.dims.size(); ++j) {
      if (j > 0) points << QPointF(s.dims[j], s.pred_us[j - 1]);
      points << QPointF(s.dims[j], s.pred_us[j]);
      minX = std::min(minX, s.dims[j]);
      maxX = std::max(maxX, s.dims[j]);
      maxY = std::max(maxY, s.pred_us[j]);
    }
    // A fine sweep (sweep_points is the caller's) stays smooth: at most kMaxSeriesPoints.
    set_series_points(line, points);
    chart->addSeries(line);
    line->attachAxis(axisX);
    line->attachAxis(axisY);
    add_point_tooltips(line, QString(d), "µs");
  }
  if (std::isfinite(minX) && maxX > minX) axisX->setRange(minX, maxX);
  axisY->setRange(0, maxY > 0 ? maxY * 1.1 : 1.0);
  axisY->applyNiceNumbers();
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

QString moe_config_label(const tuner::MoeConfig& c) {
  return QString("%1×%2×%3 g%4 w%5 s%6")
      .arg(c.block_m)
      .arg(c.block_n)
      .arg(c.block_k)
      .arg(c.group_m)
      .arg(c.num_warps)
      .arg(c.num_stages);
}

std::optional<tuner::MoeDtype> parse_moe_dtype(const QString& name) {
  const QString d = name.trimmed().toLower();
  if (d == "bf16" || d == "bfloat16") return tuner::MoeDtype::bf16;
  if (d == "fp8" || d == "fp8e4m3" || d == "fp8_w8a8") return tuner::MoeDtype::fp8;
  if (d == "fp8-block" || d == "fp8_block") return tuner::MoeDtype::fp8_block;
  return std::nullopt;
}

MoeTunerViewResult compute_moe_tuner(const MoeTunerRequest& req) {
  MoeTunerViewResult r;
  r.gpu_id = QString::fromStdString(req.gpu.id);
  r.gpu_name = QString::fromStdString(req.gpu.name);
  r.shape = req.shape;
  r.dtype = req.dtype;
  try {
    r.tokens = tuner::tune_moe(req.shape, req.dtype, req.gpu, req.tokens);
    r.config_file = QString::fromStdString(tuner::vllm_moe_config_file_name(req.shape, req.dtype, req.gpu));
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
    r.tokens.clear();
  }
  return r;
}

QChart* build_moe_tuner_chart(const MoeTunerViewResult& r, int64_t selected_tokens) {
  auto* chart = new QChart;
  chart->setTitle(QString("Fused MoE E=%1 N=%2 H=%3 top-%4 %5 on %6: tuned against vLLM's default")
                      .arg(r.shape.E)
                      .arg(r.shape.N)
                      .arg(r.shape.H)
                      .arg(r.shape.topk)
                      .arg(QString::fromUtf8(tuner::moe_dtype_name(r.dtype)))
                      .arg(r.gpu_name));
  auto* axisX = new QLogValueAxis;
  axisX->setBase(2);
  axisX->setTitleText("tokens");
  axisX->setLabelFormat("%d");
  auto* axisY = new QLogValueAxis;
  axisY->setBase(10);
  axisY->setTitleText("predicted µs");
  axisY->setLabelFormat("%g");
  axisY->setMinorTickCount(8);
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  QList<QPointF> tuned, fallback, selected;
  double minX = std::numeric_limits<double>::infinity(), maxX = 0;
  double minY = std::numeric_limits<double>::infinity(), maxY = 0;
  for (const auto& t : r.tokens) {
    if (t.ranked.empty()) continue;
    const double x = static_cast<double>(t.tokens);
    tuned << QPointF(x, t.ranked.front().pred_us);
    fallback << QPointF(x, t.engine_default.pred_us);
    if (t.tokens == selected_tokens)
      selected << QPointF(x, t.ranked.front().pred_us) << QPointF(x, t.engine_default.pred_us);
    minX = std::min(minX, x);
    maxX = std::max(maxX, x);
    for (double y : {t.ranked.front().pred_us, t.engine_default.pred_us}) {
      minY = std::min(minY, y);
      maxY = std::max(maxY, y);
    }
  }
  auto add = [&](QXYSeries* series, const QString& name, const QList<QPointF>& points, int color) {
    series->setName(name);
    series->setColor(series_color(color));
    set_series_points(series, points, true, true);
    chart->addSeries(series);
    series->attachAxis(axisX);
    series->attachAxis(axisY);
    add_point_tooltips(series, "tokens", "µs");
  };
  add(new QLineSeries, "tuned: each token count's first configuration", tuned, 0);
  add(new QLineSeries, "vLLM's default configuration", fallback, 1);
  if (!selected.isEmpty()) {
    auto* mark = new QScatterSeries;
    mark->setMarkerSize(9);
    add(mark, QString("%1 tokens (the table)").arg(selected_tokens), selected, 2);
  }
  if (std::isfinite(minX) && maxX > minX) axisX->setRange(minX, maxX);
  if (std::isfinite(minY) && maxY > 0) axisY->setRange(minY / 1.25, maxY * 1.25);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

QVariant MoeRankModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const tuner::MoeCandidate& c = r_.ranked[static_cast<std::size_t>(index.row())];
  const tuner::MoeConfig& k = c.config;
  const int col = index.column();
  if (role == Qt::TextAlignmentRole)
    return col == Reason ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  const double vs_default = r_.engine_default.pred_us / c.pred_us;
  if (role == Qt::ToolTipRole && col == VsDefault)
    return tr("vLLM's default configuration without a tuned file (%1, %2 µs predicted) over this one's time")
        .arg(moe_config_label(r_.engine_default.config))
        .arg(r_.engine_default.pred_us, 0, 'f', 2);
  if (role == Qt::ToolTipRole && col == PredUs)
    return tr("gate-up %1 µs + down %2 µs").arg(c.gate_up.pred_us, 0, 'f', 2).arg(c.down.pred_us, 0, 'f', 2);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != SortRole) return {};
  const bool sort = role == SortRole;
  switch (col) {
    case Rank:
      return index.row() + 1;
    case BlockM:
      return k.block_m;
    case BlockN:
      return k.block_n;
    case BlockK:
      return k.block_k;
    case GroupM:
      return k.group_m;
    case Warps:
      return k.num_warps;
    case Stages:
      return k.num_stages;
    case PredUs:
      return sort ? QVariant(c.pred_us) : QVariant(QString::number(c.pred_us, 'f', 2));
    case VsDefault:
      return sort ? QVariant(vs_default) : QVariant(QString("%1×").arg(vs_default, 0, 'f', 2));
    case Reason:
      return QString::fromStdString(c.reason);
    default:
      return {};
  }
}

QVariant TunerRankModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const tuner::RankedConfig& c = r_.ranked[static_cast<std::size_t>(index.row())];
  const TileConfig& t = c.config;
  const int col = index.column();
  if (role == Qt::TextAlignmentRole)
    return col == Reason || col == Tile || col == Cluster ? QVariant()
                                                          : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role == SortRole) {
    switch (col) {
      case Rank:
        return index.row() + 1;
      case Tile:
        return double(t.tile_m) * t.tile_n * t.tile_k;
      case SplitK:
        return std::max(1, t.split_k);
      case Cluster:
        return std::max(1, t.cluster_m) * std::max(1, t.cluster_n);
      case PredUs:
        return c.pred_us;
      case Range:
        return std::isfinite(c.hi_us) ? c.hi_us - c.lo_us : QVariant();
      case Waves:
        return static_cast<qlonglong>(c.grid.waves);
      case Fill:
        return c.grid.last_wave_fill;
      case Option:
        return c.custom_option;
      case Reason:
        return QString::fromStdString(c.reason);
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole && col == Range && std::isfinite(c.hi_us))
    return r_.method == "wave-table" ? tr("where 80% of measured latencies fell around the table's predictions of "
                                          "near-best configurations at "
                                          "shapes it had not seen")
                                     : tr("the predictor's interval: 80% of measured kernels fell in it (p10..p90 of "
                                          "measured over predicted)");
  const bool likely_refused = tuner::likely_refused(c, r_.refusal_threshold);
  if (role == Qt::ForegroundRole)
    return likely_refused ? QVariant(QPalette().brush(QPalette::Disabled, QPalette::Text)) : QVariant();
  if (role == Qt::ToolTipRole && col == Reason && likely_refused)
    return tr("the table's acceptance model, learned from the collector's runs, predicts that cuBLASLt refuses this "
              "configuration at this shape (p %1): it is ranked after those it is predicted to take")
        .arg(c.refusal_p, 0, 'f', 2);
  if (role == Qt::ToolTipRole && col == Option)
    return c.custom_option < 0
               ? tr("no kernel variant named (no variant model for this GPU or configuration)")
               : tr("cuBLASLt custom option %1 (CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION): the kernel variant the "
                    "table's variant model predicts fastest; its kernels showed: %2")
                     .arg(c.custom_option)
                     .arg(QString::fromStdString(c.variant));
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (col) {
    case Rank:
      return index.row() + 1;
    case Tile:
      return QString("%1×%2×%3").arg(t.tile_m).arg(t.tile_n).arg(t.tile_k);
    case SplitK:
      return std::max(1, t.split_k);
    case Cluster:
      return QString("%1×%2").arg(std::max(1, t.cluster_m)).arg(std::max(1, t.cluster_n));
    case PredUs:
      return QString::number(c.pred_us, 'f', 2);
    case Range:
      return std::isfinite(c.hi_us) ? QString("%1–%2").arg(c.lo_us, 0, 'f', 1).arg(c.hi_us, 0, 'f', 1) : QString("–");
    case Waves:
      return static_cast<qlonglong>(c.grid.waves);
    case Fill:
      return QString("%1%").arg(std::lround(c.grid.last_wave_fill * 100.0));
    case Option:
      return c.custom_option < 0 ? QString("–") : QString("c%1").arg(c.custom_option);
    case Reason:
      return QString::fromStdString(c.reason);
    default:
      return {};
  }
}

TunerView::TunerView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent)
    : QWidget(parent),
      gpus_(gpus),
      predictor_(std::move(predictor)),
      m_(new QSpinBox(this)),
      n_(new QSpinBox(this)),
      k_(new QSpinBox(this)),
      dtype_(new QComboBox(this)),
      sweep_(new QComboBox(this)),
      picker_(new GpuPicker(gpus, this)),
      bars_view_(new QChartView(this)),
      sweep_view_(new QChartView(this)),
      model_(new TunerRankModel(this)),
      table_(new QTableView(this)),
      status_(new QLabel(this)),
      timing_plan_(new QPushButton(tr("Export timing plan…"), this)),
      kernel_(new QComboBox(this)),
      inputs_(new QStackedWidget(this)),
      outputs_(new QStackedWidget(this)),
      buttons_(new QStackedWidget(this)),
      e_(new QSpinBox(this)),
      moe_n_(new QSpinBox(this)),
      h_(new QSpinBox(this)),
      topk_(new QSpinBox(this)),
      moe_dtype_(new QComboBox(this)),
      from_model_(new QComboBox(this)),
      tp_(new QSpinBox(this)),
      tokens_(new QComboBox(this)),
      moe_view_(new QChartView(this)),
      moe_model_(new MoeRankModel(this)),
      moe_table_(new QTableView(this)),
      vllm_config_(new QPushButton(tr("Export vLLM config…"), this)) {
  for (QSpinBox* s : {m_, n_, k_}) {
    s->setRange(1, std::numeric_limits<int>::max());
    s->setValue(4096);
    s->setKeyboardTracking(false);  // recompute when the number is complete, not per keystroke
  }
  for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::fp8e4m3, Dtype::fp8e5m2, Dtype::fp32})
    dtype_->addItem(qs(dtype_name(d)));
  sweep_->addItems({"M", "N"});
  kernel_->addItem(tr("GEMM"), static_cast<int>(TunerKernel::gemm));
  kernel_->addItem(tr("Fused MoE"), static_cast<int>(TunerKernel::moe));
  kernel_->setToolTip(
      tr("GEMM: cuBLASLt tile configurations of one GEMM. Fused MoE: the serving engines' Triton fused-MoE kernel "
         "(BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages) per token count, as perfloom tune --moe"));
  auto* kernelForm = new QFormLayout;
  kernelForm->addRow(tr("Kernel"), kernel_);

  auto* gemmPage = new QWidget(this);
  auto* form = new QFormLayout(gemmPage);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("M"), m_);
  form->addRow(tr("N"), n_);
  form->addRow(tr("K"), k_);
  form->addRow(tr("Dtype"), dtype_);
  form->addRow(tr("Sweep along"), sweep_);

  // The fused-MoE inputs: perfloom tune --moe E,N,H,topk --dtype DT.
  e_->setRange(1, 65536);
  topk_->setRange(1, 65536);
  for (QSpinBox* s : {moe_n_, h_}) s->setRange(1, std::numeric_limits<int>::max());
  for (QSpinBox* s : {e_, moe_n_, h_, topk_}) s->setKeyboardTracking(false);
  e_->setToolTip(tr("E: the experts"));
  moe_n_->setToolTip(
      tr("N: each expert's intermediate size per tensor-parallel rank, as vLLM names it in its configuration files "
         "(Mixtral-8x7B: 14336 at TP 1, 7168 at TP 2)"));
  h_->setToolTip(tr("H: the hidden size"));
  topk_->setToolTip(tr("top-k: the experts per token"));
  moe_dtype_->addItem("bf16", static_cast<int>(tuner::MoeDtype::bf16));
  moe_dtype_->addItem("fp8", static_cast<int>(tuner::MoeDtype::fp8));
  moe_dtype_->addItem("fp8-block", static_cast<int>(tuner::MoeDtype::fp8_block));
  moe_dtype_->setToolTip(
      tr("bf16; fp8: e4m3 weights with per-expert scales (vLLM's fp8_w8a8); fp8-block: 128×128 "
         "block scales"));
  for (const auto& id : sim::bundled_llm_ids()) {
    try {
      if (sim::load_llm_config(id).has_moe()) moe_models_ << QString::fromStdString(id);
    } catch (const std::exception&) {
      // a bundled config that does not load is left out of the list (its own tests name it)
    }
  }
  from_model_->addItem(tr("(pick a model)"));
  from_model_->addItems(moe_models_);
  from_model_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  from_model_->setMinimumContentsLength(12);
  from_model_->setToolTip(tr("Fills E, N, H and top-k from a bundled mixture-of-experts model's config"));
  tp_->setRange(1, 64);
  tp_->setToolTip(tr("The tensor-parallel degree \"from model\" divides the expert width by"));
  for (int64_t t : tuner::vllm_moe_token_counts())
    tokens_->addItem(QString::number(t), QVariant::fromValue(static_cast<qlonglong>(t)));
  tokens_->setCurrentText("64");
  tokens_->setToolTip(tr("The token count whose ranking the table shows (vLLM's tuning script's counts)"));
  auto* moePage = new QWidget(this);
  auto* moeForm = new QFormLayout(moePage);
  moeForm->setContentsMargins(0, 0, 0, 0);
  moeForm->addRow(tr("From model"), from_model_);
  moeForm->addRow(tr("at TP"), tp_);
  moeForm->addRow(tr("E (experts)"), e_);
  moeForm->addRow(tr("N (expert width)"), moe_n_);
  moeForm->addRow(tr("H (hidden)"), h_);
  moeForm->addRow(tr("top-k"), topk_);
  moeForm->addRow(tr("Dtype"), moe_dtype_);
  moeForm->addRow(tr("Tokens"), tokens_);
  inputs_->addWidget(gemmPage);
  inputs_->addWidget(moePage);

  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addLayout(kernelForm);
  leftLayout->addWidget(inputs_);
  leftLayout->addWidget(new QLabel(tr("GPU (the first checked)"), left));
  leftLayout->addWidget(picker_, 1);
  timing_plan_->setToolTip(
      tr("The first 3 configurations, each with its custom option, as a plan for perfloom-collect "
         "--sweep plan: timed on the GPU, the fastest of the three was within 3% of the best on "
         "about 90% of held-out shapes (H100, H200)"));
  timing_plan_->setEnabled(false);
  vllm_config_->setToolTip(
      tr("vLLM's (and SGLang's) configuration file: each token count's first configuration, keyed by the token count, "
         "named E=...,N=...,device_name=...json, the file perfloom tune --moe --out DIR writes; vLLM reads it from "
         "VLLM_TUNED_CONFIG_FOLDER or its fused_moe/configs folder"));
  vllm_config_->setEnabled(false);
  buttons_->addWidget(timing_plan_);
  buttons_->addWidget(vllm_config_);
  buttons_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  leftLayout->addWidget(buttons_);
  connect(timing_plan_, &QPushButton::clicked, this, [this] {
    const auto& sh = result_.shape;
    const QString name = QString("tune_%1x%2x%3_%4_%5.csv")
                             .arg(sh.M)
                             .arg(sh.N)
                             .arg(sh.K)
                             .arg(qs(dtype_name(sh.dtype)))
                             .arg(result_.gpu_id);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export timing plan"), name, "CSV (*.csv)");
    QString error;
    if (!path.isEmpty() && !saveTimingPlan(path, 3, &error)) QMessageBox::warning(this, "perfloom", error);
  });
  connect(vllm_config_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export vLLM config"), moe_result_.config_file, "JSON (*.json)");
    QString error;
    if (!path.isEmpty() && !saveVllmConfig(path, &error)) QMessageBox::warning(this, "perfloom", error);
  });

  setup_chart_view(bars_view_, QChartView::HorizontalRubberBand);
  setup_chart_view(sweep_view_, QChartView::RectangleRubberBand);
  setup_chart_view(moe_view_, QChartView::RectangleRubberBand);
  setup_table_view(table_, model_);
  setup_table_view(moe_table_, moe_model_);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outputs_->addWidget(
      chart_over_table(this, bars_view_, chart_over_table(this, sweep_view_, table_, 300, 160), 320, 460));
  outputs_->addWidget(chart_over_table(this, moe_view_, moe_table_, 340, 420));
  auto* right = new QWidget(this);
  auto* rightLayout = panel_layout(right);
  rightLayout->addWidget(outputs_, 1);
  rightLayout->addWidget(status_);
  fill_with_side_panels(this, left, right);

  for (QSpinBox* s : {m_, n_, k_})
    connect(s, &QSpinBox::valueChanged, this, [this] {
      if (!updating_) recompute();
    });
  connect(dtype_, &QComboBox::currentTextChanged, this, [this] {
    if (!updating_) recompute();
  });
  connect(sweep_, &QComboBox::currentTextChanged, this, [this] {
    if (!updating_) recompute();
  });
  connect(picker_, &GpuPicker::selectionChanged, this, [this] {
    if (!updating_) recompute();
  });
  // Only the current page of inputs counts for the height (the GEMM page is the shorter one).
  auto showPage = [this](int index) {
    for (QStackedWidget* w : {inputs_, outputs_, buttons_}) {
      w->setCurrentIndex(index);
      for (int i = 0; i < w->count(); ++i)
        w->widget(i)->setSizePolicy(i == index ? QSizePolicy::Preferred : QSizePolicy::Ignored,
                                    i == index ? QSizePolicy::Preferred : QSizePolicy::Ignored);
    }
    inputs_->updateGeometry();
  };
  showPage(0);
  connect(kernel_, &QComboBox::currentIndexChanged, this, [this, showPage](int index) {
    showPage(index);
    if (!updating_) recompute();
  });
  for (QSpinBox* s : {e_, moe_n_, h_, topk_})
    connect(s, &QSpinBox::valueChanged, this, [this] {
      if (updating_) return;
      from_model_->setCurrentIndex(0);  // the fields are the user's now, no longer the model's
      recompute();
    });
  connect(moe_dtype_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) recompute();
  });
  auto fromModel = [this] {
    if (updating_ || from_model_->currentIndex() <= 0) return;
    QString error;
    if (!fillFromModel(from_model_->currentText(), tp_->value(), &error))
      status_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(error.toHtmlEscaped()));
  };
  connect(from_model_, &QComboBox::activated, this, fromModel);
  connect(tp_, &QSpinBox::valueChanged, this, fromModel);
  connect(tokens_, &QComboBox::currentIndexChanged, this, [this] { showMoeTokens(); });

  updating_ = true;  // the first computation is setSelection's
  fillFromModel("mixtral-8x7b");
  updating_ = false;
  const GpuSpec* h100 = gpus.find("h100-sxm");
  setSelection(4096, 4096, 4096, "bf16", QString::fromStdString(h100 ? h100->id : gpus.all().front().id));
}

TunerView::~TunerView() { ++generation_; }

void TunerView::setSelection(int64_t M, int64_t N, int64_t K, const QString& dtype, const QString& gpu_id,
                             char sweep_dim) {
  updating_ = true;
  auto clamp = [](int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, 1, std::numeric_limits<int>::max())); };
  kernel_->setCurrentIndex(static_cast<int>(TunerKernel::gemm));
  m_->setValue(clamp(M));
  n_->setValue(clamp(N));
  k_->setValue(clamp(K));
  dtype_->setCurrentText(dtype);
  sweep_->setCurrentText(sweep_dim == 'N' ? "N" : "M");
  picker_->setCheckedIds({gpu_id});
  updating_ = false;
  recompute();
}

void TunerView::setKernel(TunerKernel kernel) {
  if (kernel_->currentIndex() == static_cast<int>(kernel)) return;
  kernel_->setCurrentIndex(static_cast<int>(kernel));  // recomputes
}

TunerKernel TunerView::kernel() const {
  return kernel_->currentIndex() == static_cast<int>(TunerKernel::moe) ? TunerKernel::moe : TunerKernel::gemm;
}

void TunerView::setMoeSelection(int64_t E, int64_t N, int64_t H, int64_t topk, const QString& dtype,
                                const QString& gpu_id) {
  updating_ = true;
  kernel_->setCurrentIndex(static_cast<int>(TunerKernel::moe));
  auto set = [](QSpinBox* s, int64_t v) {
    s->setValue(static_cast<int>(std::clamp<int64_t>(v, s->minimum(), s->maximum())));
  };
  set(e_, E);
  set(moe_n_, N);
  set(h_, H);
  set(topk_, topk);
  from_model_->setCurrentIndex(0);
  const auto d = parse_moe_dtype(dtype);
  moe_dtype_->setCurrentIndex(moe_dtype_->findData(static_cast<int>(d.value_or(tuner::MoeDtype::bf16))));
  picker_->setCheckedIds({gpu_id});
  updating_ = false;
  recompute();
}

QStringList TunerView::moeModelIds() const { return moe_models_; }

bool TunerView::fillFromModel(const QString& model_id, int tp, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  sim::LlmConfig cfg;
  try {
    cfg = sim::load_llm_config(model_id.toStdString());
  } catch (const std::exception& e) {
    return fail(tr("%1: %2").arg(model_id, QString::fromUtf8(e.what())));
  }
  if (!cfg.has_moe()) return fail(tr("%1: a dense model, it has no experts").arg(model_id));
  if (tp < 1 || cfg.moe_intermediate % tp != 0)
    return fail(
        tr("%1: the expert width %2 is not a multiple of TP %3").arg(model_id).arg(cfg.moe_intermediate).arg(tp));
  const bool was = updating_;
  updating_ = true;
  auto set = [](QSpinBox* s, int64_t v) {
    s->setValue(static_cast<int>(std::clamp<int64_t>(v, s->minimum(), s->maximum())));
  };
  set(e_, cfg.num_experts);
  set(moe_n_, cfg.moe_intermediate / tp);
  set(h_, cfg.hidden);
  set(topk_, cfg.experts_per_token);
  tp_->setValue(tp);
  from_model_->setCurrentIndex(std::max(0, from_model_->findText(model_id, Qt::MatchFixedString)));
  updating_ = was;
  if (!updating_ && kernel() == TunerKernel::moe) recompute();
  return true;
}

bool TunerView::setMoeTokens(int64_t tokens) {
  const int i = tokens_->findData(QVariant::fromValue(static_cast<qlonglong>(tokens)));
  if (i < 0) return false;
  tokens_->setCurrentIndex(i);
  return true;
}

int64_t TunerView::moeTokens() const { return tokens_->currentData().toLongLong(); }

void TunerView::recompute() {
  const quint64 generation = ++generation_;
  const QStringList ids = picker_->checkedIds();
  const GpuSpec* gpu = ids.isEmpty() ? nullptr : gpus_.find(ids.front().toStdString());
  if (!gpu) {
    status_->setText(tr("Pick a GPU."));
    return;
  }
  if (kernel() == TunerKernel::moe) {
    recomputeMoe(generation, *gpu);
    return;
  }
  TunerRequest req;
  req.shape = {m_->value(), n_->value(), k_->value(),
               parse_dtype(dtype_->currentText().toStdString()).value_or(Dtype::bf16)};
  req.sweep_dim = sweep_->currentText() == "N" ? 'N' : 'M';
  req.gpu = *gpu;
  req.predictor = predictor_;
  status_->setText(tr("Ranking configurations…"));
  ++running_;
  auto* watcher = new QFutureWatcher<TunerViewResult>(this);
  connect(watcher, &QFutureWatcher<TunerViewResult>::finished, this, [this, watcher, generation] {
    --running_;
    applyResult(generation, watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run([req] { return compute_tuner(req); }));  // the job owns its copies
}

void TunerView::recomputeMoe(quint64 generation, const GpuSpec& gpu) {
  MoeTunerRequest req;
  req.shape = {e_->value(), moe_n_->value(), h_->value(), topk_->value()};
  req.dtype = static_cast<tuner::MoeDtype>(moe_dtype_->currentData().toInt());
  req.gpu = gpu;
  status_->setText(tr("Ranking fused-MoE configurations…"));
  ++running_;
  auto* watcher = new QFutureWatcher<MoeTunerViewResult>(this);
  connect(watcher, &QFutureWatcher<MoeTunerViewResult>::finished, this, [this, watcher, generation] {
    --running_;
    applyMoeResult(generation, watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run([req] { return compute_moe_tuner(req); }));  // the job owns its copies
}

bool TunerView::applyMoeResult(quint64 generation, const MoeTunerViewResult& r) {
  if (generation != generation_) return false;  // a late result for an older selection
  if (!r.error.isEmpty()) {
    status_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(r.error.toHtmlEscaped()));
    vllm_config_->setEnabled(false);  // the ranking shown is an older selection's
    return true;
  }
  moe_result_ = r;
  vllm_config_->setEnabled(!r.tokens.empty());
  showMoeTokens();
  return true;
}

void TunerView::showMoeTokens() {
  const int64_t tokens = moeTokens();
  const auto& all = moe_result_.tokens;
  const auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.tokens == tokens; });
  moe_model_->setResult(it == all.end() ? tuner::MoeTokenResult{} : *it);
  if (all.empty()) return;  // nothing computed yet
  replace_chart(moe_view_, build_moe_tuner_chart(moe_result_, tokens));
  QString text;
  if (it != all.end() && !it->ranked.empty()) {
    const auto& best = it->ranked.front();
    text = QString("<b>Best at %1 tokens: %2</b>, %3 µs predicted, %4× vLLM's default (%5, %6 µs): %7.<br>")
               .arg(tokens)
               .arg(moe_config_label(best.config).toHtmlEscaped())
               .arg(QString::number(best.pred_us, 'f', 2))
               .arg(QString::number(it->engine_default.pred_us / best.pred_us, 'f', 2))
               .arg(moe_config_label(it->engine_default.config).toHtmlEscaped())
               .arg(QString::number(it->engine_default.pred_us, 'f', 2))
               .arg(QString::fromStdString(best.reason).toHtmlEscaped());
  }
  text += QString(
              "<small>analytical, %1 configurations of the engines' space; one configuration serves both GEMMs "
              "(gate-up H → 2N, down N → H), pred is their sum. Export writes %2.</small>")
              .arg(it == all.end() ? 0 : it->ranked.size())
              .arg(moe_result_.config_file.toHtmlEscaped());
  status_->setText(text);
}

bool TunerView::saveVllmConfig(const QString& path, QString* error) const {
  if (moe_result_.tokens.empty()) {
    if (error) *error = tr("nothing ranked to export");
    return false;
  }
  try {
    tuner::write_vllm_moe_config(std::filesystem::path(path.toStdString()), moe_result_.tokens);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

bool TunerView::saveTimingPlan(const QString& path, int top, QString* error) const {
  if (result_.ranked.empty()) {
    if (error) *error = tr("nothing ranked to export");
    return false;
  }
  const std::string csv =
      tuner::plan_to_csv(tuner::timing_plan(result_.shape, result_.ranked, static_cast<std::size_t>(std::max(1, top))));
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      f.write(csv.data(), static_cast<qint64>(csv.size())) != static_cast<qint64>(csv.size())) {
    if (error) *error = tr("%1: cannot be written (%2)").arg(path, f.errorString());
    return false;
  }
  return true;
}

bool TunerView::applyResult(quint64 generation, const TunerViewResult& r) {
  if (generation != generation_) return false;  // a late result for an older selection
  if (!r.error.isEmpty()) {
    status_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(r.error.toHtmlEscaped()));
    timing_plan_->setEnabled(false);  // the ranking shown is an older selection's
    return true;
  }
  result_ = r;
  timing_plan_->setEnabled(!r.ranked.empty());
  model_->setResult(r);
  replace_chart(bars_view_, build_tuner_bar_chart(r));
  replace_chart(sweep_view_, build_tuner_sweep_chart(r));
  QString text;
  if (!r.ranked.empty()) {
    const auto& best = r.ranked.front();
    text = QString("<b>Best: %1</b>, %2 µs predicted: %3.<br>")
               .arg(config_label(best.config).toHtmlEscaped())
               .arg(QString::number(best.pred_us, 'f', 2))
               .arg(QString::fromStdString(best.reason).toHtmlEscaped());
  }
  text +=
      QString(
          "<small>%1 (%2). Orange: the best; lower chart: the top %3 as %4 sweeps, each step a wave boundary.</small>")
          .arg(r.method.toHtmlEscaped())
          .arg(r.note.toHtmlEscaped())
          .arg(r.sweep.size())
          .arg(QChar(r.sweep_dim));
  status_->setText(text);
  return true;
}

}  // namespace perfloom::ui
