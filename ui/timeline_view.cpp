#include "ui/timeline_view.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QSettings>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "storage/kernel_store.h"
#include "ui/chart_style.h"

namespace perfloom::ui {

namespace {

QColor family_color(Family f) {
  switch (f) {
    case Family::gemm: return QColor(0x3b, 0x75, 0xaf);
    case Family::attention: return QColor(0xd6, 0x61, 0x2a);
    case Family::norm: return QColor(0x51, 0x9e, 0x3e);
    case Family::elementwise: return QColor(0x8d, 0x69, 0xb8);
    case Family::moe: return QColor(0xc4, 0x3c, 0x68);
    case Family::communication: return QColor(0xcc, 0xa0, 0x2c);
    case Family::unknown: break;
  }
  return QColor(0x88, 0x88, 0x88);
}

// Ops in calm hues by name, so that the same op reads the same everywhere.
QColor op_color(const std::string& name, int depth) {
  const auto h = static_cast<int>(std::hash<std::string>()(name) % 360);
  return QColor::fromHsl(h, 70, std::clamp(190 - 12 * depth, 120, 200));
}

// "+12.5 ms": a time relative to the trace's start in the unit its size reads best in.
QString relative(double us) { return (us < 0 ? "-" : "+") + format_us(std::abs(us)); }

QString elide(const std::string& s, std::size_t n = 240) {
  QString q = QString::fromStdString(s);
  return q.size() > static_cast<qsizetype>(n) ? q.left(static_cast<qsizetype>(n)) + "…" : q;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TimelineCanvas

TimelineCanvas::TimelineCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(false);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::WheelFocus);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void TimelineCanvas::setTimelines(std::shared_ptr<const storage::Timeline> measured,
                                  std::shared_ptr<const storage::PredictedTimeline> predicted,
                                  const QString& target_name) {
  const bool same_source = measured_ && measured && measured_->source_id == measured->source_id;
  measured_ = std::move(measured);
  predicted_ = std::move(predicted);
  target_name_ = target_name;
  buildLanes();
  if (!same_source) {
    scroll_y_ = 0;
    fit();
  } else {
    update();
  }
}

void TimelineCanvas::addLanes(const storage::Timeline& t, bool predicted, bool with_threads) {
  auto push = [](Row& row, double start, double end, std::size_t index) {
    const double max_end = row.items.empty() ? end : std::max(end, row.items.back().end);
    // `end` holds the running maximum of the row's ends: the first item that can reach a time is
    // then a binary search away even where items overlap.
    row.items.push_back(Item{start, max_end, static_cast<uint32_t>(index)});
  };
  if (with_threads) {
    std::size_t i = 0;
    while (i < t.ops.size()) {
      const int64_t pid = t.ops[i].pid, tid = t.ops[i].tid;
      Lane lane;
      lane.label = tr("thread %1").arg(tid) + (pid != tid ? tr(" (pid %1)").arg(pid) : QString());
      for (; i < t.ops.size() && t.ops[i].pid == pid && t.ops[i].tid == tid; ++i) {
        const storage::TimelineOp& o = t.ops[i];
        const auto depth = static_cast<std::size_t>(std::clamp(o.depth, 0, 63));
        if (lane.rows.size() <= depth) lane.rows.resize(depth + 1);
        push(lane.rows[depth], o.start_us, o.start_us + o.dur_us, i);
        ++lane.items;
      }
      // Kineto sorts a thread's ops by start; a row must be too (the window query keeps it).
      lanes_.push_back(std::move(lane));
    }
  }
  std::size_t i = 0;
  while (i < t.kernels.size()) {
    const std::optional<int64_t> stream = t.kernels[i].stream;
    Lane lane;
    lane.stream = true;
    lane.predicted = predicted;
    lane.label = stream ? tr("stream %1").arg(*stream) : tr("kernels (no stream)");
    if (predicted) lane.label += tr(" · %1").arg(target_name_);
    lane.rows.resize(1);
    for (; i < t.kernels.size() && t.kernels[i].stream == stream; ++i) {
      push(lane.rows[0], t.kernels[i].start_us, t.kernels[i].start_us + t.kernels[i].dur_us, i);
      ++lane.items;
    }
    lanes_.push_back(std::move(lane));
  }
}

void TimelineCanvas::buildLanes() {
  lanes_.clear();
  lane_top_.clear();
  predicted_header_y_ = -1;
  if (measured_) addLanes(*measured_, false, true);
  const std::size_t measured_lanes = lanes_.size();
  if (predicted_) addLanes(predicted_->timeline, true, false);
  int y = kAxisHeight + kHeaderHeight;
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    if (l == measured_lanes && predicted_) {
      y += kLaneGap;
      predicted_header_y_ = y;
      y += kHeaderHeight;
    }
    lane_top_.push_back(y);
    y += static_cast<int>(lanes_[l].rows.size()) * kRowHeight + kLaneGap;
  }
  begin_ = 0;
  end_ = 1;
  bool any = false;
  for (const storage::Timeline* t : {measured_.get(), predicted_ ? &predicted_->timeline : nullptr}) {
    if (!t || (t->kernels.empty() && t->ops.empty())) continue;
    begin_ = any ? std::min(begin_, t->begin_us) : t->begin_us;
    end_ = any ? std::max(end_, t->end_us) : t->end_us;
    any = true;
  }
  if (end_ <= begin_) end_ = begin_ + 1;
}

QString TimelineCanvas::laneLabel(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<std::size_t>(lane)].label : QString();
}
int TimelineCanvas::laneItemCount(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<std::size_t>(lane)].items : 0;
}
bool TimelineCanvas::laneIsPredicted(int lane) const {
  return lane >= 0 && lane < laneCount() && lanes_[static_cast<std::size_t>(lane)].predicted;
}
bool TimelineCanvas::laneIsStream(int lane) const {
  return lane >= 0 && lane < laneCount() && lanes_[static_cast<std::size_t>(lane)].stream;
}

const storage::Timeline* TimelineCanvas::timelineOf(const Lane& lane) const {
  return lane.predicted ? (predicted_ ? &predicted_->timeline : nullptr) : measured_.get();
}

int TimelineCanvas::visibleItemCount() const {
  int n = 0;
  for (const Lane& lane : lanes_) {
    const storage::Timeline* t = timelineOf(lane);
    if (!t) continue;
    for (const Row& row : lane.rows)
      for (const Item& it : row.items) {
        const double end = lane.stream ? t->kernels[it.index].start_us + t->kernels[it.index].dur_us
                                       : t->ops[it.index].start_us + t->ops[it.index].dur_us;
        if (it.start <= t1_ && end >= t0_) ++n;
      }
  }
  return n;
}

double TimelineCanvas::timeAt(double x) const {
  const double w = std::max(1, width() - plotLeft());
  return t0_ + (x - plotLeft()) / w * (t1_ - t0_);
}
double TimelineCanvas::xOf(double t) const {
  const double w = std::max(1, width() - plotLeft());
  return plotLeft() + (t - t0_) / (t1_ - t0_) * w;
}
int TimelineCanvas::rowTop(int lane, int row) const {
  return lane_top_[static_cast<std::size_t>(lane)] + row * kRowHeight - scroll_y_;
}

void TimelineCanvas::setVisibleRange(double t0_us, double t1_us) {
  const double whole = end_ - begin_;
  double span = std::clamp(t1_us - t0_us, 1e-3, whole * 1.2);
  double lo = t0_us, hi = t0_us + span;
  const double margin = whole * 0.1;
  if (lo < begin_ - margin) lo = begin_ - margin, hi = lo + span;
  if (hi > end_ + margin) hi = end_ + margin, lo = hi - span;
  if (lo == t0_ && hi == t1_) return;
  t0_ = lo;
  t1_ = hi;
  update();
  emit visibleRangeChanged(t0_, t1_);
}

void TimelineCanvas::fit() {
  const double pad = (end_ - begin_) * 0.01;
  t0_ = t1_ = 0;  // so that setVisibleRange always emits
  setVisibleRange(begin_ - pad, end_ + pad);
}

void TimelineCanvas::zoomAt(double x, double factor) {
  if (!(factor > 0)) return;
  const double at = timeAt(x);
  setVisibleRange(at - (at - t0_) / factor, at + (t1_ - at) / factor);
}

double TimelineCanvas::tickStepUs() const {
  const double per_px = (t1_ - t0_) / std::max(1, width() - plotLeft());
  const double raw = per_px * 90;  // a label every 90 px or more
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  last_marks_ = 0;
  const int left = plotLeft(), right = width();
  if (lanes_.empty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Select a trace in the Traces view to see its timeline."));
    return;
  }
  const QFontMetrics fm(font());
  // Lanes, below the axis, scrolled vertically.
  p.save();
  p.setClipRect(QRect(0, kAxisHeight, right, height() - kAxisHeight));
  auto header = [&](int y, const QString& text) {
    p.setPen(pal.color(QPalette::Text));
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(4, y - scroll_y_, right - 8, kHeaderHeight), Qt::AlignVCenter | Qt::AlignLeft, text);
    p.setFont(font());
  };
  header(kAxisHeight, tr("Measured"));
  if (predicted_header_y_ >= 0) header(predicted_header_y_, tr("Predicted on %1 (streams replayed serially, measured gaps kept)").arg(target_name_));
  const double us_per_px = (t1_ - t0_) / std::max(1, right - left);
  for (int l = 0; l < laneCount(); ++l) {
    const Lane& lane = lanes_[static_cast<std::size_t>(l)];
    const storage::Timeline* t = timelineOf(lane);
    const int top = rowTop(l, 0), bottom = rowTop(l, static_cast<int>(lane.rows.size()));
    if (bottom < kAxisHeight || top > height() || !t) continue;
    p.fillRect(QRect(left, top, right - left, bottom - top),
               lane.predicted ? pal.color(QPalette::AlternateBase).darker(104) : pal.color(QPalette::AlternateBase));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRect(4, top, left - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
               fm.elidedText(lane.label, Qt::ElideRight, left - 8));
    p.setClipRect(QRect(left, std::max(top, kAxisHeight), right - left, bottom - std::max(top, kAxisHeight)));
    for (std::size_t r = 0; r < lane.rows.size(); ++r) {
      const std::vector<Item>& items = lane.rows[r].items;
      const int y = rowTop(l, static_cast<int>(r)) + 1;
      if (y > height() || y + kRowHeight < kAxisHeight) continue;
      // The first item whose running end reaches the visible range.
      auto first = std::lower_bound(items.begin(), items.end(), t0_,
                                    [](const Item& it, double v) { return it.end < v; });
      std::size_t i = static_cast<std::size_t>(first - items.begin());
      while (i < items.size() && items[i].start <= t1_) {
        const double start = items[i].start;
        const double end = lane.stream ? t->kernels[items[i].index].start_us + t->kernels[items[i].index].dur_us
                                       : t->ops[items[i].index].start_us + t->ops[items[i].index].dur_us;
        const QColor color = lane.stream ? family_color(t->kernels[items[i].index].family)
                                         : op_color(t->text(t->ops[items[i].index].name), static_cast<int>(r));
        const double x0 = xOf(start), x1 = xOf(end);
        if (end < t0_) {
          ++i;
          continue;
        }
        if (x1 - x0 >= 1.0) {
          const QRectF box(std::max(x0, double(left) - 1), y, std::min(x1, double(right) + 1) - std::max(x0, double(left) - 1),
                           kRowHeight - 2);
          p.fillRect(box, color);
          if (box.width() > 40) {
            const std::string& name = lane.stream ? t->text(t->kernels[items[i].index].name)
                                                  : t->text(t->ops[items[i].index].name);
            p.setPen(Qt::black);
            p.drawText(box.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(QString::fromStdString(name), Qt::ElideRight, static_cast<int>(box.width()) - 5));
          }
          ++last_marks_;
          ++i;
          continue;
        }
        // Narrower than a pixel: one mark for everything that starts in this pixel column, as wide
        // as the last of them reaches; then on to the first item of the next column.
        const double column = std::floor(x0);
        const double next_t = t0_ + (column + 1 - left) * us_per_px;
        auto next = std::lower_bound(items.begin() + static_cast<std::ptrdiff_t>(i) + 1, items.end(), next_t,
                                     [](const Item& it, double v) { return it.start < v; });
        std::size_t j = static_cast<std::size_t>(next - items.begin());
        if (j - 1 > i) {  // the column's last item may be wide: it is drawn as itself
          const Item& last = items[j - 1];
          const double last_end = lane.stream ? t->kernels[last.index].start_us + t->kernels[last.index].dur_us
                                              : t->ops[last.index].start_us + t->ops[last.index].dur_us;
          if (xOf(last_end) - xOf(last.start) >= 1.0) --j;
        }
        p.fillRect(QRectF(column, y, 1.0, kRowHeight - 2), j - i > 1 ? color.darker(115) : color);
        ++last_marks_;
        i = j;
      }
    }
    p.setClipRect(QRect(0, kAxisHeight, right, height() - kAxisHeight));
  }
  p.restore();

  // The time axis: relative to the trace's start, round ticks in µs, ms or s.
  p.fillRect(QRect(0, 0, right, kAxisHeight), pal.color(QPalette::Window));
  p.setPen(pal.color(QPalette::Mid));
  p.drawLine(left, kAxisHeight - 1, right, kAxisHeight - 1);
  const double step = tickStepUs();
  const double unit = step >= 1e5 ? 1e6 : step >= 100 ? 1e3 : 1;
  const QString unit_name = unit == 1e6 ? tr("s") : unit == 1e3 ? tr("ms") : tr("µs");
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step / unit) - 1e-9)));
  p.setPen(pal.color(QPalette::WindowText));
  for (double tick = std::ceil((t0_ - begin_) / step) * step; begin_ + tick <= t1_; tick += step) {
    const double x = xOf(begin_ + tick);
    if (x < left) continue;
    p.drawLine(QPointF(x, kAxisHeight - 6), QPointF(x, kAxisHeight - 1));
    p.drawText(QPointF(x + 2, kAxisHeight - 8), QString::number(tick / unit, 'f', decimals) + " " + unit_name);
  }
  p.drawText(QRect(4, 0, left - 8, kAxisHeight), Qt::AlignVCenter | Qt::AlignLeft,
             tr("span %1").arg(format_us(t1_ - t0_)));
}

QString TimelineCanvas::toolTipAt(const QPoint& pos) const {
  if (pos.x() < plotLeft() || pos.y() < kAxisHeight) return {};
  for (int l = 0; l < laneCount(); ++l) {
    const Lane& lane = lanes_[static_cast<std::size_t>(l)];
    const int top = rowTop(l, 0);
    const int row = pos.y() >= top ? (pos.y() - top) / kRowHeight : -1;
    if (row < 0 || row >= static_cast<int>(lane.rows.size())) continue;
    const storage::Timeline* t = timelineOf(lane);
    if (!t) return {};
    const std::vector<Item>& items = lane.rows[static_cast<std::size_t>(row)].items;
    const double tol = 2 * (t1_ - t0_) / std::max(1, width() - plotLeft());
    const double at = timeAt(pos.x());
    auto after = std::upper_bound(items.begin(), items.end(), at + tol,
                                  [](double v, const Item& it) { return v < it.start; });
    for (auto it = after; it != items.begin();) {
      --it;
      if (it->end < at - tol) break;  // the running end: nothing earlier reaches `at`
      const std::size_t k = it->index;
      if (lane.stream) {
        const storage::TimelineKernel& kern = t->kernels[k];
        if (kern.start_us + kern.dur_us < at - tol) continue;
        QString tip = elide(t->text(kern.name)) + "\n" +
                      tr("%1 · %2").arg(lane.label, QString::fromStdString(std::string(family_name(kern.family)))) +
                      "\n" + tr("start %1 · duration %2").arg(relative(kern.start_us - begin_), format_us(kern.dur_us));
        if (lane.predicted) {
          tip += "\n" + (kern.predicted ? tr("predicted on %1").arg(target_name_)
                                        : tr("no prediction on %1: measured duration kept").arg(target_name_));
          if (measured_)
            for (const auto& m : measured_->kernels)
              if (m.kernel_id == kern.kernel_id) {
                tip += "\n" + tr("measured: start %1 · duration %2").arg(relative(m.start_us - begin_), format_us(m.dur_us));
                break;
              }
        }
        const std::string& op = t->text(kern.launched_by);
        tip += "\n" + (op.empty() ? tr("launching op unknown") : tr("launched by %1").arg(elide(op, 120)));
        return tip;
      }
      const storage::TimelineOp& o = t->ops[k];
      if (o.start_us + o.dur_us < at - tol) continue;
      return elide(t->text(o.name)) + "\n" + tr("%1 · depth %2").arg(lane.label).arg(o.depth) + "\n" +
             tr("start %1 · duration %2").arg(relative(o.start_us - begin_), format_us(o.dur_us));
    }
    return {};
  }
  return {};
}

bool TimelineCanvas::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString tip = toolTipAt(help->pos());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(e);
}

void TimelineCanvas::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ShiftModifier) {
    scroll_y_ = std::max(0, scroll_y_ - static_cast<int>(steps * 3 * kRowHeight));
    update();
  } else {
    zoomAt(e->position().x(), std::pow(1.25, steps));
  }
  e->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  drag_from_ = e->position().toPoint();
  drag_t0_ = t0_;
  drag_t1_ = t1_;
  drag_scroll_ = scroll_y_;
  setCursor(Qt::ClosedHandCursor);
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (!drag_from_) return QWidget::mouseMoveEvent(e);
  const QPoint d = e->position().toPoint() - *drag_from_;
  const double dt = d.x() * (drag_t1_ - drag_t0_) / std::max(1, width() - plotLeft());
  int content = lane_top_.empty() ? 0 : lane_top_.back() + static_cast<int>(lanes_.back().rows.size()) * kRowHeight;
  scroll_y_ = std::clamp(drag_scroll_ - d.y(), 0, std::max(0, content - height() + kRowHeight));
  setVisibleRange(drag_t0_ - dt, drag_t1_ - dt);
  update();
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* e) {
  drag_from_.reset();
  unsetCursor();
  QWidget::mouseReleaseEvent(e);
}

void TimelineCanvas::mouseDoubleClickEvent(QMouseEvent*) { fit(); }

// ---------------------------------------------------------------------------------------------
// TimelineView

namespace {

struct LoadResult {
  std::shared_ptr<const storage::Timeline> timeline;
  QString error;
};
struct PredictResult {
  std::shared_ptr<const storage::PredictedTimeline> predicted;
  QString error;
};

}  // namespace

TimelineView::TimelineView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent)
    : QWidget(parent),
      gpus_(gpus),
      gpus_copy_(std::make_shared<const GpuDatabase>(gpus)),
      predictor_(std::move(predictor)),
      canvas_(new TimelineCanvas(this)),
      target_(new QComboBox(this)),
      fit_(new QPushButton(tr("Fit"), this)),
      status_(new QLabel(this)) {
  target_->setObjectName("timelineTarget");
  target_->addItem(tr("(measured only)"), QString());
  for (const GpuSpec& g : gpus_.all()) target_->addItem(QString::fromStdString(g.name), QString::fromStdString(g.id));
  target_->setToolTip(tr("The GPU whose predicted timeline is shown below the measured one"));
  const QString saved = QSettings().value("timeline/target").toString();
  if (const int i = target_->findData(saved); i >= 0) target_->setCurrentIndex(i);
  fit_->setToolTip(tr("Show the whole trace (or double-click the timeline)"));
  // Long GPU names and status lines must not widen the window: the combo shrinks to a few
  // characters, the status line is elided by its width.
  target_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  target_->setMinimumContentsLength(14);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Predicted on:"), this));
  bar->addWidget(target_);
  bar->addWidget(fit_);
  bar->addWidget(status_, 1);
  setToolTip(tr("Wheel: zoom · drag: pan · Shift+wheel: scroll lanes · double-click: fit · hover an item: details"));
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(canvas_, 1);
  connect(fit_, &QPushButton::clicked, canvas_, &TimelineCanvas::fit);
  connect(target_, &QComboBox::currentIndexChanged, this, [this] {
    QSettings().setValue("timeline/target", target_->currentData().toString());
    startPrediction();
  });
}

TimelineView::~TimelineView() {
  if (cancel_) cancel_->store(true);
}

void TimelineView::selectSource(qint64 source_id) {
  if (source_id == 0) return;
  source_id_ = source_id;
  stale_ = true;
  if (isVisible()) recompute();
}

void TimelineView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (stale_) recompute();
}

void TimelineView::recompute() {
  if (source_id_ == 0) return;
  if (db_path_.empty()) {
    status_->setText(tr("No database to read the trace from."));
    return;
  }
  stale_ = false;
  const quint64 generation = ++generation_;
  if (cancel_) cancel_->store(true);
  cancel_.reset();
  status_->setText(tr("Loading the timeline…"));
  auto* watcher = new QFutureWatcher<LoadResult>(this);
  connect(watcher, &QFutureWatcher<LoadResult>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;  // another source was selected meanwhile
    const LoadResult r = watcher->result();
    if (!r.timeline) {
      status_->setText(r.error);
      emit failed(r.error);
      return;
    }
    measured_ = r.timeline;
    predicted_.reset();
    canvas_->setTimelines(measured_, nullptr, QString());
    std::map<int64_t, int> streams;
    std::map<std::pair<int64_t, int64_t>, int> threads;
    for (const auto& k : measured_->kernels) ++streams[k.stream.value_or(-1)];
    for (const auto& o : measured_->ops) ++threads[{o.pid, o.tid}];
    status_->setText(tr("%1 kernels on %2 streams · %3 ops on %4 threads · %5")
                         .arg(measured_->kernels.size())
                         .arg(streams.size())
                         .arg(measured_->ops.size())
                         .arg(threads.size())
                         .arg(format_us(measured_->end_us - measured_->begin_us)));
    emit timelineLoaded(source_id_, static_cast<int>(measured_->kernels.size()), static_cast<int>(measured_->ops.size()));
    startPrediction();
  });
  watcher->setFuture(QtConcurrent::run([db = db_path_, id = source_id_] {
    LoadResult r;
    try {
      storage::Database d(db);
      r.timeline = std::make_shared<const storage::Timeline>(storage::load_timeline(d, id));
    } catch (const std::exception& e) {
      r.error = QString::fromUtf8(e.what());
    }
    return r;
  }));
}

void TimelineView::startPrediction() {
  if (!measured_) return;
  const QString gpu_id = target_->currentData().toString();
  const quint64 generation = ++generation_;
  if (cancel_) cancel_->store(true);
  cancel_.reset();
  if (gpu_id.isEmpty()) {
    predicted_.reset();
    canvas_->setTimelines(measured_, nullptr, QString());
    return;
  }
  const QString target_name = target_->currentText();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  status_->setText(tr("Predicting on %1…").arg(target_name));
  auto* watcher = new QFutureWatcher<PredictResult>(this);
  connect(watcher, &QFutureWatcher<PredictResult>::finished, this, [this, watcher, generation, gpu_id, target_name] {
    watcher->deleteLater();
    if (generation != generation_) return;
    const PredictResult r = watcher->result();
    if (!r.predicted) {
      status_->setText(r.error);
      emit failed(r.error);
      return;
    }
    predicted_ = r.predicted;
    canvas_->setTimelines(measured_, predicted_, target_name);
    status_->setText(tr("kernel span %1 measured, %2 on %3%4")
                         .arg(format_us(predicted_->measured_span_us), format_us(predicted_->predicted_span_us),
                              target_name)
                         .arg(predicted_->without_prediction
                                  ? tr(" (%1 kernels without a prediction keep their measured time)")
                                        .arg(predicted_->without_prediction)
                                  : QString()));
    emit predictionReady(source_id_, gpu_id);
  });
  watcher->setFuture(QtConcurrent::run([db = db_path_, id = source_id_, measured = measured_, gpus = gpus_copy_,
                                        predictor = predictor_, gpu_id, cancel = cancel_] {
    PredictResult r;
    try {
      storage::Database d(db);
      storage::KernelStore store(d);
      const auto source = store.source(id);
      if (!source) throw std::runtime_error("source " + std::to_string(id) + " is no longer in the database");
      const GpuSpec* from = gpus->find(source->gpu_id);
      if (!from)
        throw std::runtime_error("the trace's GPU (" + (source->gpu_name.empty() ? "unknown" : source->gpu_name) +
                                 ") is not in the GPU database: nothing to predict from");
      const GpuSpec* to = gpus->find(gpu_id.toStdString());
      if (!to) throw std::runtime_error("unknown GPU " + gpu_id.toStdString());
      storage::WhatIfOptions options;
      options.cancel = cancel.get();
      options.write_cache = !d.read_only();
      const storage::TraceWhatIf w = storage::run_trace_whatif(store, id, *from, {to}, *predictor, options);
      r.predicted = std::make_shared<const storage::PredictedTimeline>(storage::predict_timeline(*measured, w, 0));
    } catch (const std::exception& e) {
      r.error = QString::fromUtf8(e.what());
    }
    return r;
  }));
}

}  // namespace perfloom::ui
