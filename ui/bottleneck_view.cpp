#include "ui/bottleneck_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QtConcurrent>
#include <algorithm>

#include "ui/chart_export.h"
#include "ui/chart_panel.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"
#include "ui/kernel_spec.h"

namespace perfloom::ui {

namespace {
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }
}  // namespace

BottleneckResult compute_bottleneck(const KernelDesc& k, const std::vector<GpuSpec>& gpus,
                                    const KernelPredictor& predictor) {
  BottleneckResult r;
  r.kernel = kernel_spec_string(k);
  r.predictor = QString::fromStdString(predictor.name());
  for (const GpuSpec& gpu : gpus) {
    BottleneckBar bar;
    bar.gpu_id = QString::fromStdString(gpu.id);
    bar.gpu_name = QString::fromStdString(gpu.name);
    try {
      const Bottleneck b = bottleneck_of(k, gpu, predictor.predict(k, gpu));
      for (const PipeBusy& pipe : b.pipes) bar.pipe_us[static_cast<std::size_t>(pipe.pipe)] = pipe.busy_us;
      bar.pred_us = b.pred_us;
      bar.lo_us = b.lo_us;
      bar.hi_us = b.hi_us;
      bar.ceiling_us = b.ceiling_us;
      bar.bound = b.bound;
      bar.headroom = QString::fromStdString(b.headroom);
    } catch (const std::exception& e) {
      bar.error = QString::fromUtf8(e.what());
      bar.headroom = bar.gpu_name + ": " + bar.error;
    }
    r.gpus.push_back(std::move(bar));
  }
  return r;
}

QChart* build_bottleneck_chart(const BottleneckResult& r) {
  auto* chart = new QChart;
  chart->setTitle(QString("Where the time goes: %1").arg(r.kernel));
  // Pipes that no GPU uses are left out; the ceiling and the prediction come last (top).
  QStringList categories;
  std::vector<int> pipes;
  for (int i = 0; i < kPipeCount; ++i) {
    bool used = false;
    for (const auto& g : r.gpus) used = used || g.pipe_us[static_cast<std::size_t>(i)] > 0;
    if (used) {
      pipes.push_back(i);
      categories << qs(pipe_name(static_cast<Pipe>(i)));
    }
  }
  categories << "ceiling"
             << "predicted";
  auto* series = new QHorizontalBarSeries;
  double maxValue = 0;
  int colour = 0;
  for (const auto& g : r.gpus) {
    if (!g.error.isEmpty()) continue;
    auto* set = new QBarSet(g.gpu_name);
    set->setColor(series_color(colour++));
    for (int p : pipes) *set << g.pipe_us[static_cast<std::size_t>(p)];
    *set << g.ceiling_us << g.pred_us;
    for (int i = 0; i < set->count(); ++i) maxValue = std::max(maxValue, set->at(i));
    maxValue = std::max(maxValue, g.hi_us);
    add_bar_tooltips(set, categories, "µs");
    series->append(set);
  }
  chart->addSeries(series);
  auto* axisY = new QBarCategoryAxis;
  axisY->append(categories);
  chart->addAxis(axisY, Qt::AlignLeft);
  series->attachAxis(axisY);
  auto* axisX = new QValueAxis;
  axisX->setTitleText("time on the busiest SM (µs)");
  axisX->setRange(0, maxValue > 0 ? maxValue * 1.05 : 1.0);
  axisX->applyNiceNumbers();
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisX);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->legend()->setVisible(true);
  return chart;
}

BottleneckView::BottleneckView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor,
                               QWidget* parent)
    : QWidget(parent),
      gpus_(gpus),
      predictor_(std::move(predictor)),
      op_(new QComboBox(this)),
      dtype_(new QComboBox(this)),
      shape_(new QLineEdit(this)),
      picker_(new GpuPicker(gpus, this)),
      chart_view_(new QChartView(this)),
      headroom_(new QLabel(this)) {
  for (int i = 0; i < static_cast<int>(Op::unknown); ++i) op_->addItem(qs(op_name(static_cast<Op>(i))));
  for (int i = 0; i <= static_cast<int>(Dtype::fp4); ++i) dtype_->addItem(qs(dtype_name(static_cast<Dtype>(i))));
  op_->setCurrentText("gemm");
  dtype_->setCurrentText("bf16");
  shape_->setText(default_shape_text(Op::gemm));
  shape_->setToolTip(tr("Shape dimensions, DIM=VALUE separated by commas"));
  auto* compute = new QPushButton(tr("Compute (F5)"), this);

  auto* form = new QFormLayout;
  form->addRow(tr("Op"), op_);
  form->addRow(tr("Dtype"), dtype_);
  form->addRow(tr("Shape"), shape_);
  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addLayout(form);
  leftLayout->addWidget(new QLabel(tr("GPUs"), left));
  leftLayout->addWidget(picker_, 1);
  leftLayout->addWidget(compute);

  setup_chart_view(chart_view_, QChartView::HorizontalRubberBand);
  headroom_->setWordWrap(true);
  headroom_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* right = new QWidget(this);
  auto* rightLayout = panel_layout(right);
  rightLayout->addWidget(chart_view_, 1);
  rightLayout->addWidget(headroom_);
  fill_with_side_panels(this, left, right);

  connect(op_, &QComboBox::currentTextChanged, this, [this](const QString& op) {
    if (updating_) return;
    if (auto o = parse_op(op.toStdString())) shape_->setText(default_shape_text(*o));
    recompute();
  });
  connect(dtype_, &QComboBox::currentTextChanged, this, [this] {
    if (!updating_) recompute();
  });
  connect(shape_, &QLineEdit::editingFinished, this, &BottleneckView::recompute);
  connect(picker_, &GpuPicker::selectionChanged, this, [this] {
    if (!updating_) recompute();
  });
  connect(compute, &QPushButton::clicked, this, &BottleneckView::recompute);

  const GpuSpec* h100 = gpus.find("h100-sxm");
  setSelection(kernelSpec(),
               QStringList{h100 ? QString::fromStdString(h100->id) : QString::fromStdString(gpus.all().front().id)});
}

BottleneckView::~BottleneckView() { ++generation_; }

QString BottleneckView::kernelSpec() const {
  return op_->currentText() + ':' + dtype_->currentText() + ':' + shape_->text();
}

bool BottleneckView::setSelection(const QString& kernel_spec, const QStringList& gpu_ids) {
  const QStringList parts = kernel_spec.split(':');
  updating_ = true;
  if (parts.size() == 3) {
    op_->setCurrentText(parts[0]);
    dtype_->setCurrentText(parts[1]);
    shape_->setText(parts[2]);
  }
  picker_->setCheckedIds(gpu_ids);
  updating_ = false;
  recompute();
  return parts.size() == 3;
}

void BottleneckView::showError(const QString& message) {
  headroom_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(message.toHtmlEscaped()));
}

void BottleneckView::recompute() {
  const quint64 generation = ++generation_;
  KernelDesc k;
  try {
    k = parse_kernel_spec(kernelSpec());
  } catch (const std::exception& e) {
    showError(QString::fromUtf8(e.what()));
    return;
  }
  std::vector<GpuSpec> gpus;
  for (const QString& id : picker_->checkedIds())
    if (const GpuSpec* g = gpus_.find(id.toStdString())) gpus.push_back(*g);
  if (gpus.empty()) {
    showError(tr("Pick at least one GPU."));
    return;
  }
  headroom_->setText(tr("Computing…"));
  ++running_;
  auto* watcher = new QFutureWatcher<BottleneckResult>(this);
  connect(watcher, &QFutureWatcher<BottleneckResult>::finished, this, [this, watcher, generation] {
    --running_;
    applyResult(generation, watcher->result());
    watcher->deleteLater();
  });
  // The job holds its own copies and the predictor (immutable, thread-safe).
  watcher->setFuture(
      QtConcurrent::run([k, gpus, predictor = predictor_] { return compute_bottleneck(k, gpus, *predictor); }));
}

bool BottleneckView::applyResult(quint64 generation, const BottleneckResult& r) {
  if (generation != generation_) return false;  // a late result for an older selection
  result_ = r;
  replace_chart(chart_view_, build_bottleneck_chart(r));
  QStringList lines;
  for (const auto& g : r.gpus) lines << g.headroom.toHtmlEscaped();
  headroom_->setText(
      lines.join("<br>") +
      QString("<br><small>predictor: %1; bars: ideal time of each pipe on the busiest SM</small>").arg(r.predictor));
  emit resultShown();
  return true;
}

}  // namespace perfloom::ui
