#pragma once
// The Timeline view (issue 59): a trace's CPU threads (framework ops nested by depth) and CUDA
// streams (kernels coloured by family) on one time axis, zoomed with the wheel and panned by
// dragging, with the same streams replayed on a target GPU (storage/timeline.h says how) in a
// second set of lanes below the measured ones.
//
// The canvas paints only what the visible range holds: each row's items are sorted by start and do
// not overlap, so the first visible item is a binary search away, and items narrower than a pixel
// are merged into one mark per pixel column (a jump to the next column's first item), so a frame
// costs about rows x width, not the number of kernels.
#include <QWidget>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "storage/timeline.h"

class QComboBox;
class QLabel;
class QPushButton;

namespace perfloom::ui {

class TimelineCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineCanvas(QWidget* parent = nullptr);

  // Shows `measured` (and `predicted`'s streams below it, when given); keeps the visible range
  // when the source is the same, else fits the whole trace.
  void setTimelines(std::shared_ptr<const storage::Timeline> measured,
                    std::shared_ptr<const storage::PredictedTimeline> predicted, const QString& target_name);

  // A lane is one CPU thread or one stream (of the measured or the predicted set); its rows are the
  // op depths of a thread, one row for a stream.
  int laneCount() const { return static_cast<int>(lanes_.size()); }
  QString laneLabel(int lane) const;
  int laneItemCount(int lane) const;       // the items the lane holds, visible or not
  bool laneIsPredicted(int lane) const;
  bool laneIsStream(int lane) const;
  int visibleItemCount() const;            // items that overlap the visible range, in all lanes

  // The visible range on the trace's clock, in µs.
  double visibleBegin() const { return t0_; }
  double visibleEnd() const { return t1_; }
  void setVisibleRange(double t0_us, double t1_us);
  void fit();
  // Zooms by `factor` (> 1: in) around the time at pixel `x` of the canvas.
  void zoomAt(double x, double factor);
  // The tooltip text for the item at a point ("" where there is none): name, duration, launching op.
  QString toolTipAt(const QPoint& pos) const;
  // Marks painted in the last frame (merged runs count once): the cost of a frame.
  int lastPaintedMarks() const { return last_marks_; }
  // Tick step of the time axis for the visible range, in µs (1, 2 or 5 times a power of ten).
  double tickStepUs() const;

  QSize sizeHint() const override { return {900, 400}; }
  QSize minimumSizeHint() const override { return {300, 120}; }

 signals:
  void visibleRangeChanged(double t0_us, double t1_us);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Item {
    double start, end;
    uint32_t index;  // into the kernels or ops of its timeline
  };
  struct Row {
    std::vector<Item> items;  // by start, not overlapping
  };
  struct Lane {
    QString label;
    bool stream = false, predicted = false;
    std::vector<Row> rows;
    int items = 0;
  };
  void buildLanes();
  void addLanes(const storage::Timeline& t, bool predicted, bool with_threads);
  double timeAt(double x) const;
  double xOf(double t) const;
  int plotLeft() const { return kLabelWidth; }
  int rowTop(int lane, int row) const;
  const storage::Timeline* timelineOf(const Lane& lane) const;

  static constexpr int kLabelWidth = 150, kAxisHeight = 24, kRowHeight = 16, kLaneGap = 6, kHeaderHeight = 18;
  std::shared_ptr<const storage::Timeline> measured_;
  std::shared_ptr<const storage::PredictedTimeline> predicted_;
  QString target_name_;
  std::vector<Lane> lanes_;
  std::vector<int> lane_top_;  // y of each lane's first row
  int predicted_header_y_ = -1;
  double begin_ = 0, end_ = 1;  // the whole trace
  double t0_ = 0, t1_ = 1;      // what is visible
  int scroll_y_ = 0;
  std::optional<QPoint> drag_from_;
  double drag_t0_ = 0, drag_t1_ = 0;
  int drag_scroll_ = 0;
  int last_marks_ = 0;
};

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  TimelineView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr);
  ~TimelineView() override;
  void setDatabasePath(std::filesystem::path db_path) { db_path_ = std::move(db_path); }

  TimelineCanvas* canvas() const { return canvas_; }
  QComboBox* targetCombo() const { return target_; }
  QLabel* statusLabel() const { return status_; }
  qint64 sourceId() const { return source_id_; }
  const storage::Timeline* timeline() const { return measured_.get(); }
  const storage::PredictedTimeline* predicted() const { return predicted_.get(); }

 public slots:
  // Loads the source's timeline in a job (and its replay on the chosen target, if any), now when
  // the view is shown, else when it is next shown.
  void selectSource(qint64 source_id);
  void recompute();

 signals:
  void timelineLoaded(qint64 source_id, int kernels, int ops);
  void predictionReady(qint64 source_id, const QString& gpu_id);
  void failed(const QString& error);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  bool stale_ = false;  // a source was selected while the view was hidden
  void startPrediction();
  const GpuDatabase& gpus_;
  std::shared_ptr<const GpuDatabase> gpus_copy_;
  std::shared_ptr<const KernelPredictor> predictor_;
  std::filesystem::path db_path_;
  TimelineCanvas* canvas_;
  QComboBox* target_;
  QPushButton* fit_;
  QLabel* status_;
  qint64 source_id_ = 0;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<const storage::Timeline> measured_;
  std::shared_ptr<const storage::PredictedTimeline> predicted_;
};

}  // namespace perfloom::ui
