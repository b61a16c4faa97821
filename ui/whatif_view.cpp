#include "ui/whatif_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QLocale>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QSettings>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>

#include "model/json_fields.h"
#include "storage/database.h"
#include "storage/kernel_list_csv.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"
#include "ui/chart_export.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"

namespace perfloom::ui {

namespace {
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }
constexpr int kFamilies = static_cast<int>(Family::unknown) + 1;
constexpr const char* kTargetsKey = "whatif/targets";    // the GPU ids ticked
constexpr const char* kBaselineKey = "whatif/baseline";  // a target's GPU id; empty: the trace as measured
}  // namespace

WhatIfResult compute_whatif(const std::vector<KernelDesc>& kernels, const std::vector<GpuSpec>& gpus,
                            const KernelPredictor& predictor) {
  WhatIfResult r;
  r.kernels = static_cast<int>(kernels.size());
  std::vector<bool> present(kFamilies, false);
  for (const KernelDesc& k : kernels) present[static_cast<std::size_t>(family_of(k.op))] = true;
  std::vector<int> column(kFamilies, -1);
  for (int f = 0; f < kFamilies; ++f)
    if (present[static_cast<std::size_t>(f)]) {
      column[static_cast<std::size_t>(f)] = static_cast<int>(r.families.size());
      r.families << qs(family_name(static_cast<Family>(f)));
    }
  for (const GpuSpec& gpu : gpus) {
    WhatIfGpu g;
    g.gpu_id = QString::fromStdString(gpu.id);
    g.gpu_name = QString::fromStdString(gpu.name);
    g.family_us.assign(static_cast<std::size_t>(r.families.size()), 0.0);
    // One batch per GPU, as `perfloom predict --kernels` does: the learned models answer each family
    // with one booster call. A kernel that cannot run on the GPU is counted, not summed.
    std::vector<std::string> errors;
    const std::vector<Prediction> predictions = predictor.predict_batch(kernels, gpu, &errors);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (!errors[i].empty()) {
        ++g.failed;
        continue;
      }
      const Prediction& p = predictions[i];
      g.family_us[static_cast<std::size_t>(column[static_cast<std::size_t>(family_of(kernels[i].op))])] += p.pred_us;
      g.total_us += p.pred_us;
      g.lo_us += p.lo_us;
      g.hi_us += p.hi_us;
      ++g.predicted;
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

WhatIfResult compute_whatif_file(const QString& path, const std::vector<GpuSpec>& gpus,
                                 const KernelPredictor& predictor) {
  const storage::KernelList list = storage::read_kernel_list(path.toStdString());
  std::vector<KernelDesc> kernels;
  int bad = 0;
  for (const auto& row : list.rows) {
    if (row.kernel)
      kernels.push_back(*row.kernel);
    else
      ++bad;
  }
  WhatIfResult r = compute_whatif(kernels, gpus, predictor);
  r.file = path;
  r.bad_rows = bad;
  return r;
}

WhatIfResult compute_trace_whatif(const std::filesystem::path& db_path, qint64 source_id, const GpuDatabase& db,
                                  const std::vector<GpuSpec>& gpus, const KernelPredictor& predictor,
                                  const std::atomic<bool>* cancel) {
  WhatIfResult r;
  r.source_id = source_id;
  try {
    const auto database = std::make_unique<storage::Database>(db_path);
    storage::KernelStore store(*database);
    const auto src = store.source(source_id);
    if (!src) throw std::invalid_argument("source " + std::to_string(source_id) + " is not in the database");
    r.file = QString::fromStdString(src->path);
    const GpuSpec* source_gpu = src->gpu_id.empty() ? nullptr : db.find(src->gpu_id);
    if (!source_gpu)
      throw std::runtime_error(
          src->path + ": the trace does not say which known GPU it was measured on" +
          (src->gpu_name.empty() ? std::string() : " (it names " + quote_excerpt(src->gpu_name) + ")"));
    std::vector<const GpuSpec*> targets;
    targets.reserve(gpus.size());
    for (const GpuSpec& g : gpus) targets.push_back(&g);
    storage::WhatIfOptions options;
    options.cancel = cancel;
    // A read-only database (or folder) is read, its prediction cache included, and never written.
    options.write_cache = !database->read_only();
    const storage::TraceWhatIf t =
        storage::run_trace_whatif(store, source_id, *source_gpu, targets, predictor, options);
    r.source_gpu_id = QString::fromStdString(source_gpu->id);
    r.source_gpu_name = QString::fromStdString(source_gpu->name);
    r.kernels = static_cast<int>(t.kernels.size());

    std::vector<bool> present(kFamilies, false);
    for (const auto& k : t.kernels) present[static_cast<std::size_t>(k.family)] = true;
    std::vector<Family> families;
    for (int f = 0; f < kFamilies; ++f)
      if (present[static_cast<std::size_t>(f)]) {
        families.push_back(static_cast<Family>(f));
        r.families << qs(family_name(static_cast<Family>(f)));
      }

    auto rows = std::make_shared<std::vector<WhatIfKernelRow>>();
    rows->reserve(t.kernels.size());
    for (std::size_t i = 0; i < t.kernels.size(); ++i) {
      const storage::WhatIfKernel& k = t.kernels[i];
      WhatIfKernelRow row;
      row.name = QString::fromStdString(k.desc.name.empty() ? std::string(op_name(k.desc.op)) : k.desc.name);
      row.family = qs(family_name(k.family));
      row.measured_us = k.measured_us;
      if (k.measured_us) r.source_measured_us += *k.measured_us;
      for (const storage::WhatIfTarget& target : t.targets) {
        const storage::WhatIfCell& c = target.cells[i];
        WhatIfKernelCell cell;
        cell.ok = c.method != storage::WhatIfMethod::error;
        cell.pred_us = c.pred_us;
        cell.method = qs(storage::whatif_method_name(c.method));
        cell.error = QString::fromStdString(c.error);
        row.cells.push_back(std::move(cell));
      }
      rows->push_back(std::move(row));
    }
    r.kernel_rows = std::move(rows);

    for (const storage::WhatIfTarget& target : t.targets) {
      WhatIfGpu g;
      g.gpu_id = QString::fromStdString(target.gpu->id);
      g.gpu_name = QString::fromStdString(target.gpu->name);
      for (Family f : families) {
        const auto it = target.by_family.find(f);
        g.family_us.push_back(it == target.by_family.end() ? 0.0 : it->second.pred_us);
      }
      g.total_us = target.total.pred_us;
      g.lo_us = target.total.lo_us;
      g.hi_us = target.total.hi_us;
      g.measured_us = target.total.measured_us;
      g.predicted = static_cast<int>(target.total.kernels);
      g.failed = static_cast<int>(target.total.errors);
      r.gpus.push_back(std::move(g));
    }
  } catch (const std::exception& e) {
    r.gpus.clear();
    r.kernel_rows.reset();
    r.error = QString::fromUtf8(e.what());
  }
  return r;
}

QChart* build_whatif_chart(const WhatIfResult& r) {
  auto* chart = new QChart;
  chart->setTitle(
      QString("Predicted total time per GPU: %1 kernels%2%3")
          .arg(r.kernels)
          .arg(r.file.isEmpty() ? QString() : " of " + QFileInfo(r.file).fileName())
          .arg(r.source_id && !r.source_gpu_name.isEmpty() ? " (measured on " + r.source_gpu_name + ")" : QString()));
  QStringList categories;
  for (const auto& g : r.gpus) categories << g.gpu_name;
  double top = r.source_id ? r.source_measured_us : 0.0;
  for (const auto& g : r.gpus) top = std::max({top, g.total_us, g.hi_us});
  const TimeScale ts = time_scale_for(top);  // the values below in ts.unit
  QList<double> totals;
  for (const auto& g : r.gpus) totals << g.total_us * ts.per_us;
  auto* bars = new QStackedBarSeries;
  for (int f = 0; f < r.families.size(); ++f) {
    auto* set = new QBarSet(r.families[f]);
    set->setColor(series_color(f));
    for (const auto& g : r.gpus) *set << g.family_us[static_cast<std::size_t>(f)] * ts.per_us;
    add_bar_tooltips(set, categories, ts.unit, totals);
    bars->append(set);
  }
  chart->addSeries(bars);
  auto* axisX = new QBarCategoryAxis;
  axisX->append(categories);
  chart->addAxis(axisX, Qt::AlignBottom);
  bars->attachAxis(axisX);
  auto* axisY = new QValueAxis;
  axisY->setTitleText(QString("predicted time (%1)").arg(ts.unit));
  axisY->setRange(0, top > 0 ? top * ts.per_us * 1.08 : 1.0);
  axisY->applyNiceNumbers();
  axisY->setLabelFormat("%g");
  chart->addAxis(axisY, Qt::AlignLeft);
  bars->attachAxis(axisY);
  // The 80% interval of each total: a vertical whisker at the category's centre (x = index).
  auto* ends = new QScatterSeries;
  ends->setName("80% interval");
  ends->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  ends->setMarkerSize(7);
  ends->setColor(Qt::black);
  ends->setBorderColor(Qt::black);
  QList<QLineSeries*> whiskers;
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const auto& g = r.gpus[i];
    auto* whisker = new QLineSeries;
    whiskers << whisker;
    whisker->setPen(QPen(Qt::black, 1.5));
    whisker->append(double(i), g.lo_us * ts.per_us);
    whisker->append(double(i), g.hi_us * ts.per_us);
    chart->addSeries(whisker);
    whisker->attachAxis(axisX);
    whisker->attachAxis(axisY);
    *ends << QPointF(double(i), g.lo_us * ts.per_us) << QPointF(double(i), g.hi_us * ts.per_us);
  }
  chart->addSeries(ends);
  ends->attachAxis(axisX);
  ends->attachAxis(axisY);
  add_point_tooltips(ends, "(GPU index)", ts.unit);
  // A trace: the measured total on the GPU it was recorded on, as a reference line across the bars.
  if (r.source_id && r.source_measured_us > 0 && !r.gpus.empty()) {
    auto* measured = new QLineSeries;
    measured->setName(QString("measured on %1: %2").arg(r.source_gpu_name, format_us(r.source_measured_us)));
    measured->setPen(QPen(QColor("#c44e52"), 2, Qt::DashLine));
    measured->append(-0.5, r.source_measured_us * ts.per_us);
    measured->append(double(r.gpus.size()) - 0.5, r.source_measured_us * ts.per_us);
    chart->addSeries(measured);
    measured->attachAxis(axisX);
    measured->attachAxis(axisY);
  }
  for (auto* marker : chart->legend()->markers())
    if (whiskers.contains(qobject_cast<QLineSeries*>(marker->series()))) marker->setVisible(false);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

void SpeedupTableModel::setBaseline(int gpu_index) {
  baseline_ = gpu_index;
  if (rowCount() > 0) emit dataChanged(index(0, Speedup), index(rowCount() - 1, Speedup));
}

double SpeedupTableModel::baselineUs() const {
  if (baseline_ >= 0 && baseline_ < static_cast<int>(r_.gpus.size()))
    return r_.gpus[static_cast<std::size_t>(baseline_)].total_us;
  if (r_.source_id && r_.source_measured_us > 0) return r_.source_measured_us;
  return r_.gpus.empty() ? 0.0 : r_.gpus.front().total_us;
}

QString SpeedupTableModel::baselineName() const {
  if (baseline_ >= 0 && baseline_ < static_cast<int>(r_.gpus.size()))
    return r_.gpus[static_cast<std::size_t>(baseline_)].gpu_name;
  if (r_.source_id && r_.source_measured_us > 0) return "the measured " + r_.source_gpu_name;
  return r_.gpus.empty() ? QString() : r_.gpus.front().gpu_name;
}

void SpeedupTableModel::setTokens(double tokens) {
  tokens_ = tokens;
  if (rowCount() > 0) emit dataChanged(index(0, CostPerMTokens), index(rowCount() - 1, CostPerMTokens));
}

void SpeedupTableModel::setPrice(const QString& gpu_id, double dollars_per_hour) {
  if (dollars_per_hour > 0)
    prices_[gpu_id] = dollars_per_hour;
  else
    prices_.remove(gpu_id);
  for (int row = 0; row < rowCount(); ++row)
    if (r_.gpus[static_cast<std::size_t>(row)].gpu_id == gpu_id)
      emit dataChanged(index(row, PricePerHour), index(row, CostPerMTokens));
  emit priceChanged(gpu_id, dollars_per_hour > 0 ? dollars_per_hour : 0.0);
}

void SpeedupTableModel::setPrices(QMap<QString, double> prices) {
  prices_ = std::move(prices);
  if (rowCount() > 0) emit dataChanged(index(0, PricePerHour), index(rowCount() - 1, CostPerMTokens));
}

Qt::ItemFlags SpeedupTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == PricePerHour) f |= Qt::ItemIsEditable;
  return f;
}

bool SpeedupTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid) || index.column() != PricePerHour)
    return false;
  QString text = value.toString().trimmed();
  if (text.startsWith('$')) text.remove(0, 1);
  double price = 0;  // empty: no price
  if (!text.isEmpty()) {
    bool ok = false;
    price = QLocale().toDouble(text, &ok);
    if (!ok) price = text.toDouble(&ok);  // "2.5" whatever the locale
    if (!ok || price < 0) return false;
  }
  setPrice(r_.gpus[static_cast<std::size_t>(index.row())].gpu_id, price);
  return true;
}

QVariant SpeedupTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const WhatIfGpu& g = r_.gpus[static_cast<std::size_t>(index.row())];
  const double base = baselineUs();
  const double speedup = g.total_us > 0 ? base / g.total_us : 0.0;
  const double price = prices_.value(g.gpu_id, 0.0);
  const std::optional<double> cost = cost_per_million_tokens(price, g.total_us, tokens_);
  if (role == SortRole) {
    switch (index.column()) {
      case Gpu:
        return g.gpu_name;
      case TotalUs:
        return g.total_us;
      case LoUs:
        return g.lo_us;
      case HiUs:
        return g.hi_us;
      case Speedup:
        return speedup;
      case Kernels:
        return g.predicted;
      case PricePerHour:
        return price;
      case CostPerMTokens:
        return cost ? *cost : -1.0;
    }
  }
  if (role == Qt::EditRole && index.column() == PricePerHour) return price;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Gpu:
        return g.gpu_name;
      case TotalUs:
        return QString::number(g.total_us, 'f', 1);
      case LoUs:
        return QString::number(g.lo_us, 'f', 1);
      case HiUs:
        return QString::number(g.hi_us, 'f', 1);
      case Speedup:
        return QString::number(speedup, 'f', 2) + "×";
      case Kernels:
        return g.failed ? QString("%1 (%2 not runnable)").arg(g.predicted).arg(g.failed) : QString::number(g.predicted);
      case PricePerHour:
        return price > 0 ? "$" + QString::number(price, 'f', 2) : QString();
      case CostPerMTokens:
        return cost ? "$" + QString::number(*cost, 'g', 4) : QString("–");
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Gpu) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Speedup)
      return QString("%1 is %2× as fast as %3 on these kernels")
          .arg(g.gpu_name)
          .arg(speedup, 0, 'f', 2)
          .arg(baselineName());
    if (index.column() == PricePerHour)
      return QString("Double-click to enter what an hour of %1 costs ($)").arg(g.gpu_name);
    if (index.column() == CostPerMTokens)
      return cost ? QString("$%1/3600 × %2 s / %3 tokens × 1e6")
                        .arg(price)
                        .arg(g.total_us * 1e-6, 0, 'g', 6)
                        .arg(tokens_, 0, 'f', 0)
                  : QString("Needs a price per GPU-hour and the tokens in this workload");
  }
  return {};
}

WhatIfView::WhatIfView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent,
                       std::filesystem::path db_path)
    : QWidget(parent),
      gpus_(gpus),
      gpus_copy_(std::make_shared<const GpuDatabase>(gpus)),
      predictor_(std::move(predictor)),
      db_path_(std::move(db_path)),
      source_combo_(new QComboBox(this)),
      path_(new QLineEdit(this)),
      open_(new QPushButton(tr("Open…"), this)),
      picker_(new GpuPicker(gpus, this)),
      chart_view_(new QChartView(this)),
      model_(new SpeedupTableModel(this)),
      table_(new QTableView(this)),
      tokens_(new QDoubleSpinBox(this)),
      kernel_model_(new KernelCompareModel(this)),
      kernel_table_(new QTableView(this)),
      target_combo_(new QComboBox(this)),
      baseline_combo_(new QComboBox(this)),
      status_(new QLabel(this)) {
  source_combo_->addItem(tr("Kernel list CSV"), qint64(0));
  source_combo_->setToolTip(tr("A kernel list CSV, or a trace imported in the Traces view"));
  path_->setPlaceholderText(tr("kernel list CSV (op,dtype,M,N,K,...)"));
  auto* fileRow = new QHBoxLayout;
  fileRow->addWidget(path_, 1);
  fileRow->addWidget(open_);
  tokens_->setDecimals(0);
  tokens_->setRange(0, 1e15);
  tokens_->setSpecialValueText(tr("not set"));
  tokens_->setToolTip(
      tr("Tokens this workload processes: with a price per GPU-hour in the table, gives the cost per million tokens"));
  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addWidget(new QLabel(tr("Workload"), left));
  leftLayout->addWidget(source_combo_);
  leftLayout->addLayout(fileRow);
  leftLayout->addWidget(new QLabel(tr("Target GPUs"), left));
  leftLayout->addWidget(picker_, 1);
  leftLayout->addWidget(new QLabel(tr("Speedup against"), left));
  leftLayout->addWidget(baseline_combo_);
  baseline_combo_->setToolTip(tr("A trace's own measured total (its GPU), or one of the targets"));
  leftLayout->addWidget(new QLabel(tr("Tokens in this workload (for the cost)"), left));
  leftLayout->addWidget(tokens_);

  setup_chart_view(chart_view_, QChartView::VerticalRubberBand);
  setup_table_view(table_, model_);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                          QAbstractItemView::AnyKeyPressed);
  setup_table_view(kernel_table_, kernel_model_);
  auto* kernelPanel = new QWidget(this);
  auto* kernelLayout = panel_layout(kernelPanel);
  auto* targetRow = new QHBoxLayout;
  targetRow->addWidget(new QLabel(tr("Predicted on"), kernelPanel));
  targetRow->addWidget(target_combo_, 1);
  kernelLayout->addLayout(targetRow);
  kernelLayout->addWidget(kernel_table_, 1);
  auto* tables = new QTabWidget(this);
  tables->addTab(table_, tr("Speedup"));
  tables->addTab(kernelPanel, tr("Measured vs predicted (trace)"));
  auto* right = new QWidget(this);
  auto* rightLayout = panel_layout(right);
  rightLayout->addWidget(chart_over_table(this, chart_view_, tables, 500, 180), 1);
  rightLayout->addWidget(status_);
  fill_with_side_panels(this, left, right);

  connect(open_, &QPushButton::clicked, this, &WhatIfView::openFile);
  connect(path_, &QLineEdit::editingFinished, this, &WhatIfView::recompute);
  connect(picker_, &GpuPicker::selectionChanged, this, [this] {
    if (!updating_) recompute();
  });
  connect(source_combo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!updating_ && i >= 0) selectSource(source_combo_->itemData(i).toLongLong());
  });
  connect(target_combo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!updating_) kernel_model_->setTarget(i);
  });
  connect(baseline_combo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (updating_ || i < 0) return;
    model_->setBaseline(baseline_combo_->itemData(i).toInt());
    QSettings().setValue(kBaselineKey, baseline_combo_->itemData(i).toInt() < 0
                                           ? QString()
                                           : result_.gpus[static_cast<std::size_t>(baseline_combo_->itemData(i).toInt())].gpu_id);
  });
  // The target GPUs ticked survive a restart.
  connect(picker_, &GpuPicker::selectionChanged, this,
          [this] { QSettings().setValue(kTargetsKey, picker_->checkedIds()); });
  connect(tokens_, &QDoubleSpinBox::valueChanged, model_, &SpeedupTableModel::setTokens);
  // Prices per GPU-hour survive a restart: restored here, stored as they are entered.
  model_->setPrices(load_gpu_prices());
  connect(model_, &SpeedupTableModel::priceChanged, this,
          [](const QString& id, double price) { save_gpu_price(id, price); });
  updating_ = true;
  const QStringList saved = QSettings().value(kTargetsKey).toStringList();
  picker_->setCheckedIds(saved.isEmpty() ? QStringList{"a100-sxm-80gb", "h100-sxm", "h200", "b200"} : saved);
  updating_ = false;
  // Long status lines wrap inside the view instead of widening the window.
  status_->setWordWrap(true);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setText(tr("Open a kernel list CSV or pick an imported trace to compare GPUs."));
}

WhatIfView::~WhatIfView() {
  ++generation_;
  ++sources_generation_;
  if (cancel_) cancel_->store(true);
}

void WhatIfView::setDatabasePath(std::filesystem::path db_path) {
  db_path_ = std::move(db_path);
  if (isVisible()) refreshSources();
}

void WhatIfView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refreshSources();
}

void WhatIfView::refreshSources() {
  if (db_path_.empty()) return;
  const quint64 generation = ++sources_generation_;
  ++sources_running_;
  list_sources_async(this, db_path_, [this, generation](std::vector<SourceRow> rows, const QString& error) {
    --sources_running_;
    if (generation != sources_generation_) return;
    if (!error.isEmpty()) source_combo_->setToolTip(error);
    fillSourceCombo(rows);
  });
}

void WhatIfView::fillSourceCombo(const std::vector<SourceRow>& sources) {
  updating_ = true;
  source_combo_->clear();
  source_combo_->addItem(tr("Kernel list CSV"), qint64(0));
  for (const SourceRow& s : sources)
    source_combo_->addItem(QString("%1 · %2 · %3 kernels")
                               .arg(QFileInfo(s.path).fileName(), s.gpu_name.isEmpty() ? s.gpu_id : s.gpu_name)
                               .arg(s.kernels),
                           qint64(s.id));
  int index = source_combo_->findData(source_id_);
  if (index < 0) {  // selected before the list knew it (or removed since): keep showing the selection
    source_combo_->addItem(tr("source %1").arg(source_id_), source_id_);
    index = source_combo_->count() - 1;
  }
  source_combo_->setCurrentIndex(index);
  updating_ = false;
}

void WhatIfView::selectSource(qint64 source_id) {
  source_id_ = source_id;
  path_->setEnabled(source_id == 0);
  open_->setEnabled(source_id == 0);
  const int index = source_combo_->findData(source_id);
  if (index >= 0) {
    updating_ = true;
    source_combo_->setCurrentIndex(index);
    updating_ = false;
  } else {
    refreshSources();
  }
  recompute();
}

void WhatIfView::openFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open kernel list"), {}, tr("CSV (*.csv);;All files (*)"));
  if (!path.isEmpty()) {
    path_->setText(path);
    recompute();
  }
}

void WhatIfView::setSelection(const QString& csv_path, const QStringList& gpu_ids) {
  updating_ = true;
  path_->setText(csv_path);
  picker_->setCheckedIds(gpu_ids);
  updating_ = false;
  recompute();
}

void WhatIfView::recompute() {
  const quint64 generation = ++generation_;
  if (cancel_) cancel_->store(true);  // the job for the older selection stops; its result is dropped anyway
  cancel_.reset();
  const QString path = path_->text().trimmed();
  const qint64 source_id = source_id_;
  std::vector<GpuSpec> gpus;
  for (const QString& id : picker_->checkedIds())
    if (const GpuSpec* g = gpus_.find(id.toStdString())) gpus.push_back(*g);
  if (source_id != 0 && db_path_.empty()) {
    status_->setText(tr("No database to read the trace from."));
    return;
  }
  if ((source_id == 0 && path.isEmpty()) || gpus.empty()) {
    status_->setText(gpus.empty() ? tr("Pick at least one GPU.")
                                  : tr("Open a kernel list CSV or pick an imported trace to compare GPUs."));
    return;
  }
  status_->setText(tr("Predicting…"));
  ++running_;
  auto* watcher = new QFutureWatcher<WhatIfResult>(this);
  connect(watcher, &QFutureWatcher<WhatIfResult>::finished, this, [this, watcher, generation] {
    --running_;
    applyResult(generation, watcher->result());
    watcher->deleteLater();
  });
  if (source_id != 0) {
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    watcher->setFuture(QtConcurrent::run(
        [db = db_path_, source_id, gpus, gpu_db = gpus_copy_, predictor = predictor_, cancel = cancel_] {
          return compute_trace_whatif(db, source_id, *gpu_db, gpus, *predictor, cancel.get());
        }));
    return;
  }
  watcher->setFuture(QtConcurrent::run([path, gpus, predictor = predictor_] {
    try {
      return compute_whatif_file(path, gpus, *predictor);
    } catch (const std::exception& e) {
      WhatIfResult r;
      r.file = path;
      r.error = QString::fromUtf8(e.what());
      return r;
    }
  }));
}

bool WhatIfView::applyResult(quint64 generation, const WhatIfResult& r) {
  if (generation != generation_) return false;
  if (!r.error.isEmpty()) {
    status_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(r.error.toHtmlEscaped()));
    return true;
  }
  result_ = r;
  model_->setResult(r);
  QStringList targets;
  for (const auto& g : r.gpus) targets << g.gpu_name;
  kernel_model_->setRows(r.kernel_rows, r.kernel_rows ? targets : QStringList());
  updating_ = true;
  target_combo_->clear();
  if (r.kernel_rows) target_combo_->addItems(targets);
  target_combo_->setEnabled(r.kernel_rows != nullptr);
  // The baseline: the trace's own GPU as measured unless the user chose a target (kept by GPU id).
  baseline_combo_->clear();
  baseline_combo_->addItem(r.source_id && r.source_measured_us > 0
                               ? tr("measured on %1").arg(r.source_gpu_name)
                               : tr("the first target GPU"),
                           -1);
  for (std::size_t i = 0; i < r.gpus.size(); ++i) baseline_combo_->addItem(r.gpus[i].gpu_name, static_cast<int>(i));
  const QString chosen = QSettings().value(kBaselineKey).toString();
  int baseline = -1;
  for (std::size_t i = 0; i < r.gpus.size(); ++i)
    if (!chosen.isEmpty() && r.gpus[i].gpu_id == chosen) baseline = static_cast<int>(i);
  baseline_combo_->setCurrentIndex(baseline + 1);
  model_->setBaseline(baseline);
  updating_ = false;
  replace_chart(chart_view_, build_whatif_chart(r));
  if (r.source_id) {
    int errors = 0;
    for (const auto& g : r.gpus) errors += g.failed;
    status_->setText(
        QString("%1 kernels of %2, measured on %3: %4 µs%5; bars: predicted time by family; whiskers: the 80% "
                "interval (sum of per-kernel intervals); dashed line: the measured total")
            .arg(r.kernels)
            .arg(QFileInfo(r.file).fileName().toHtmlEscaped(), r.source_gpu_name.toHtmlEscaped())
            .arg(r.source_measured_us, 0, 'f', 1)
            .arg(errors ? QString("; %1 kernel×GPU pairs cannot run (see the method column)").arg(errors) : QString()));
    return true;
  }
  status_->setText(QString("%1 kernels predicted%2; bars: predicted time by family; whiskers: the 80% interval (sum of "
                           "per-kernel p10 and p90)")
                       .arg(r.kernels)
                       .arg(r.bad_rows ? QString(", %1 rows skipped (invalid)").arg(r.bad_rows) : QString()));
  return true;
}

}  // namespace perfloom::ui
