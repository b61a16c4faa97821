#include "ui/whatif_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>

#include "storage/kernel_list_csv.h"
#include "ui/chart_export.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"

namespace perfloom::ui {

namespace {
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }
constexpr int kFamilies = static_cast<int>(Family::unknown) + 1;
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
    for (const KernelDesc& k : kernels) {
      try {
        const Prediction p = predictor.predict(k, gpu);
        g.family_us[static_cast<std::size_t>(column[static_cast<std::size_t>(family_of(k.op))])] += p.pred_us;
        g.total_us += p.pred_us;
        g.lo_us += p.lo_us;
        g.hi_us += p.hi_us;
        ++g.predicted;
      } catch (const std::exception&) {
        ++g.failed;
      }
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

WhatIfResult compute_whatif_file(const QString& path, const std::vector<GpuSpec>& gpus, const KernelPredictor& predictor) {
  const storage::KernelList list = storage::read_kernel_list(path.toStdString());
  std::vector<KernelDesc> kernels;
  int bad = 0;
  for (const auto& row : list.rows) {
    if (row.kernel) kernels.push_back(*row.kernel);
    else ++bad;
  }
  WhatIfResult r = compute_whatif(kernels, gpus, predictor);
  r.file = path;
  r.bad_rows = bad;
  return r;
}

QChart* build_whatif_chart(const WhatIfResult& r) {
  auto* chart = new QChart;
  chart->setTitle(QString("Predicted total time per GPU: %1 kernels%2")
                      .arg(r.kernels)
                      .arg(r.file.isEmpty() ? QString() : " of " + QFileInfo(r.file).fileName()));
  QStringList categories;
  for (const auto& g : r.gpus) categories << g.gpu_name;
  auto* bars = new QStackedBarSeries;
  for (int f = 0; f < r.families.size(); ++f) {
    auto* set = new QBarSet(r.families[f]);
    set->setColor(series_color(f));
    for (const auto& g : r.gpus) *set << g.family_us[static_cast<std::size_t>(f)];
    add_bar_tooltips(set, categories, "µs");
    bars->append(set);
  }
  chart->addSeries(bars);
  auto* axisX = new QBarCategoryAxis;
  axisX->append(categories);
  chart->addAxis(axisX, Qt::AlignBottom);
  bars->attachAxis(axisX);
  auto* axisY = new QValueAxis;
  axisY->setTitleText("predicted time (µs)");
  double top = 0;
  for (const auto& g : r.gpus) top = std::max({top, g.total_us, g.hi_us});
  axisY->setRange(0, top > 0 ? top * 1.08 : 1.0);
  axisY->applyNiceNumbers();
  chart->addAxis(axisY, Qt::AlignLeft);
  bars->attachAxis(axisY);
  // The 80% interval of each total: a vertical whisker at the category's centre (x = index).
  auto* ends = new QScatterSeries;
  ends->setName("80% interval");
  ends->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  ends->setMarkerSize(7);
  ends->setColor(Qt::black);
  ends->setBorderColor(Qt::black);
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const auto& g = r.gpus[i];
    auto* whisker = new QLineSeries;
    whisker->setPen(QPen(Qt::black, 1.5));
    whisker->append(double(i), g.lo_us);
    whisker->append(double(i), g.hi_us);
    chart->addSeries(whisker);
    whisker->attachAxis(axisX);
    whisker->attachAxis(axisY);
    *ends << QPointF(double(i), g.lo_us) << QPointF(double(i), g.hi_us);
  }
  chart->addSeries(ends);
  ends->attachAxis(axisX);
  ends->attachAxis(axisY);
  add_point_tooltips(ends, "(GPU index)", "µs");
  for (auto* marker : chart->legend()->markers())
    if (qobject_cast<QLineSeries*>(marker->series()) && !qobject_cast<QScatterSeries*>(marker->series())) marker->setVisible(false);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

void SpeedupTableModel::setResult(WhatIfResult r) {
  beginResetModel();
  r_ = std::move(r);
  endResetModel();
}

int SpeedupTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(r_.gpus.size()); }
int SpeedupTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SpeedupTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const WhatIfGpu& g = r_.gpus[static_cast<std::size_t>(index.row())];
  const double base = r_.gpus.front().total_us;
  const double speedup = g.total_us > 0 ? base / g.total_us : 0.0;
  if (role == SortRole) {
    switch (index.column()) {
      case Gpu: return g.gpu_name;
      case TotalUs: return g.total_us;
      case LoUs: return g.lo_us;
      case HiUs: return g.hi_us;
      case Speedup: return speedup;
      case Kernels: return g.predicted;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Gpu: return g.gpu_name;
      case TotalUs: return QString::number(g.total_us, 'f', 1);
      case LoUs: return QString::number(g.lo_us, 'f', 1);
      case HiUs: return QString::number(g.hi_us, 'f', 1);
      case Speedup: return QString::number(speedup, 'f', 2) + "×";
      case Kernels: return g.failed ? QString("%1 (%2 not runnable)").arg(g.predicted).arg(g.failed) : QString::number(g.predicted);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Gpu) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == Speedup)
    return QString("%1 is %2× as fast as %3 on these kernels").arg(g.gpu_name).arg(speedup, 0, 'f', 2).arg(r_.gpus.front().gpu_name);
  return {};
}

QVariant SpeedupTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"GPU", "total (µs)", "low, p10 (µs)", "high, p90 (µs)", "speedup vs first", "kernels"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

WhatIfView::WhatIfView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent)
    : QWidget(parent), gpus_(gpus), predictor_(std::move(predictor)), path_(new QLineEdit(this)),
      picker_(new GpuPicker(gpus, this)), chart_view_(new QChartView(this)), model_(new SpeedupTableModel(this)),
      table_(new QTableView(this)), status_(new QLabel(this)) {
  path_->setPlaceholderText(tr("kernel list CSV (op,dtype,M,N,K,...)"));
  auto* open = new QPushButton(tr("Open…"), this);
  auto* fileRow = new QHBoxLayout;
  fileRow->addWidget(path_, 1);
  fileRow->addWidget(open);
  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addLayout(fileRow);
  leftLayout->addWidget(new QLabel(tr("Target GPUs (the first is the baseline)"), left));
  leftLayout->addWidget(picker_, 1);

  setup_chart_view(chart_view_, QChartView::VerticalRubberBand);
  setup_table_view(table_, model_);
  auto* right = new QWidget(this);
  auto* rightLayout = panel_layout(right);
  rightLayout->addWidget(chart_over_table(this, chart_view_, table_, 500, 180), 1);
  rightLayout->addWidget(status_);
  fill_with_side_panels(this, left, right);

  connect(open, &QPushButton::clicked, this, &WhatIfView::openFile);
  connect(path_, &QLineEdit::editingFinished, this, &WhatIfView::recompute);
  connect(picker_, &GpuPicker::selectionChanged, this, [this] { if (!updating_) recompute(); });
  updating_ = true;
  picker_->setCheckedIds({"a100-sxm-80gb", "h100-sxm", "h200", "b200"});
  updating_ = false;
  status_->setText(tr("Open a kernel list CSV to compare GPUs."));
}

WhatIfView::~WhatIfView() { ++generation_; }

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
  const QString path = path_->text().trimmed();
  std::vector<GpuSpec> gpus;
  for (const QString& id : picker_->checkedIds())
    if (const GpuSpec* g = gpus_.find(id.toStdString())) gpus.push_back(*g);
  if (path.isEmpty() || gpus.empty()) {
    status_->setText(path.isEmpty() ? tr("Open a kernel list CSV to compare GPUs.") : tr("Pick at least one GPU."));
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
  replace_chart(chart_view_, build_whatif_chart(r));
  status_->setText(QString("%1 kernels predicted%2; bars: predicted time by family; whiskers: the 80% interval (sum of per-kernel p10 and p90)")
                       .arg(r.kernels)
                       .arg(r.bad_rows ? QString(", %1 rows skipped (invalid)").arg(r.bad_rows) : QString()));
  return true;
}

}  // namespace perfloom::ui
