#pragma once
// The set-up the chart views share: a chart view and a table with the export actions, the
// inputs-left / results-right splitter that fills a view, a chart over a table, and swapping in a
// freshly built chart (the old one deleted).
#include <QChartView>

class QAbstractItemModel;
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

}  // namespace perfloom::ui
