#pragma once
// Small helpers the chart builders share: hover tooltips with value and unit, colours per series.
#include <QColor>
#include <QList>
#include <QString>

class QBarSet;
class QChart;
class QChartView;
class QXYSeries;

namespace perfloom::ui {

QColor series_color(int index);
// Shows "<set> · <category>: <value> <unit>" at the cursor while a bar is hovered, and, where
// `totals` has the category, "of <total> <unit>" (a stacked bar's whole).
void add_bar_tooltips(QBarSet* set, const QStringList& categories, const QString& unit,
                      const QList<double>& totals = {});
// The unit a time axis reads best in: µs below 10 ms, ms below 10 s, s above (values times
// `per_us` are in `unit`).
struct TimeScale {
  double per_us = 1;
  QString unit = QStringLiteral("µs");
};
TimeScale time_scale_for(double max_us);
// Shows "<series>: x <xunit>, y <yunit>" at the cursor while a point is hovered.
void add_point_tooltips(QXYSeries* series, const QString& xunit, const QString& yunit);
QString format_us(double us);
// Colours a chart's background, title, legend, axes and grid from the application's palette (the
// dark theme's too); the series keep their own colours.
void style_chart(QChart* chart);
// Styles the view's chart now and again whenever the application's palette changes.
void follow_palette(QChartView* view);

}  // namespace perfloom::ui
