#pragma once
// Small helpers the chart builders share: hover tooltips with value and unit, colours per series.
#include <QColor>
#include <QString>

class QBarSet;
class QXYSeries;

namespace perfloom::ui {

QColor series_color(int index);
// Shows "<set> · <category>: <value> <unit>" at the cursor while a bar is hovered.
void add_bar_tooltips(QBarSet* set, const QStringList& categories, const QString& unit);
// Shows "<series>: x <xunit>, y <yunit>" at the cursor while a point is hovered.
void add_point_tooltips(QXYSeries* series, const QString& xunit, const QString& yunit);
QString format_us(double us);

}  // namespace perfloom::ui
