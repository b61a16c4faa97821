#pragma once
// The set-up the chart views share: a chart view and a table with the export actions, the
// inputs-left / results-right splitter that fills a view, a chart over a table, and swapping in a
// freshly built chart (the old one deleted); and what every chart builder hands a series: a bounded
// number of points, none that a log axis cannot show.
#include <QChartView>
#include <QList>
#include <QPointF>

class QAbstractItemModel;
class QXYSeries;
class QChart;
class QSplitter;
class QTableView;
class QVBoxLayout;
class QWidget;

namespace perfloom::ui {

// Antialiased, with the given rubber band, and "Export…" / "Copy image" in its context menu.
void setup_chart_view(QChartView* view, QChartView::RubberBand band);
// Shows `model`, no row header, columns sized to their contents, "Export CSV…" / "Copy".
void setup_table_view(QTableView* table, QAbstractItemModel* model);
// A vertical layout without margins on `panel` (the left inputs and right results columns).
QVBoxLayout* panel_layout(QWidget* panel);
// `chart` above `table` in a vertical splitter of the given heights.
QSplitter* chart_over_table(QWidget* parent, QWidget* chart, QWidget* table, int chart_height, int table_height);
// Fills `view` with a horizontal splitter: `left` (the inputs, `left_width` wide) and `right`,
// which takes the extra space.
QSplitter* fill_with_side_panels(QWidget* view, QWidget* left, QWidget* right, int left_width = 260);
// Shows `chart` in `view` and deletes the chart it showed before.
void replace_chart(QChartView* view, QChart* chart);

// The most points a builder hands one series. Qt Charts slows down badly past 10,000 points (a
// scatter series first), and a chart a few thousand pixels wide shows no more than this anyway.
constexpr int kMaxSeriesPoints = 4000;
// At most `max_points` (>= 4) of `points`, which are in x order: the first and the last, and in
// each of (max_points - 2) / 2 buckets of consecutive points the lowest and the highest, in their
// order. Peaks, dips and steps survive; what is dropped lies between them. Fewer points: unchanged.
QList<QPointF> downsample_points(const QList<QPointF>& points, int max_points = kMaxSeriesPoints);
// The points a log axis can take: x > 0 when `log_x`, y > 0 when `log_y` (QLogValueAxis has no
// place for zero or a negative value; handed one, it breaks the whole axis range). NaNs go too.
QList<QPointF> log_axis_points(const QList<QPointF>& points, bool log_x, bool log_y);
// Hands `points` to `series` in one go (one repaint instead of one per append): without what a log
// axis cannot take, then downsampled. Every chart builder fills its XY series through this.
void set_series_points(QXYSeries* series, const QList<QPointF>& points, bool log_x = false, bool log_y = false);

}  // namespace perfloom::ui
