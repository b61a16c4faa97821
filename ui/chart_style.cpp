#include "ui/chart_style.h"

#include <QAbstractAxis>
#include <QApplication>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QLegend>
#include <QCursor>
#include <QToolTip>
#include <QXYSeries>

namespace perfloom::ui {

QColor series_color(int index) {
  static const QColor palette[] = {QColor("#4c72b0"), QColor("#dd8452"), QColor("#55a868"), QColor("#c44e52"),
                                   QColor("#8172b3"), QColor("#937860"), QColor("#da8bc3"), QColor("#8c8c8c"),
                                   QColor("#ccb974"), QColor("#64b5cd")};
  return palette[index % 10];
}

void style_chart(QChart* chart) {
  if (!chart || !qobject_cast<QApplication*>(QCoreApplication::instance())) return;
  const QPalette p = QApplication::palette();
  const QColor bg = p.color(QPalette::Base), fg = p.color(QPalette::WindowText);
  QColor grid = p.color(QPalette::Mid);
  grid.setAlpha(110);
  chart->setBackgroundBrush(bg);
  chart->setBackgroundPen(Qt::NoPen);
  chart->setTitleBrush(fg);
  chart->legend()->setLabelColor(fg);
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsColor(fg);
    axis->setTitleBrush(fg);
    axis->setLinePenColor(p.color(QPalette::Mid));
    axis->setGridLineColor(grid);
    axis->setMinorGridLineColor(grid.lighter(120));
  }
}

namespace {
// Re-styles the chart of the view it watches on every palette change (a theme switch).
class PaletteFollower : public QObject {
 public:
  explicit PaletteFollower(QChartView* view) : QObject(view), view_(view) {}
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == view_ && event->type() == QEvent::PaletteChange) style_chart(view_->chart());
    return false;
  }

 private:
  QChartView* view_;
};
}  // namespace

void follow_palette(QChartView* view) {
  view->installEventFilter(new PaletteFollower(view));
  style_chart(view->chart());
}

QString format_us(double us) {
  if (us >= 1e6) return QString::number(us / 1e6, 'f', 3) + " s";
  if (us >= 1e3) return QString::number(us / 1e3, 'f', 3) + " ms";
  return QString::number(us, 'f', us < 10 ? 2 : 1) + " µs";
}

TimeScale time_scale_for(double max_us) {
  if (max_us >= 1e7) return {1e-6, QStringLiteral("s")};
  if (max_us >= 1e4) return {1e-3, QStringLiteral("ms")};
  return {};
}

void add_bar_tooltips(QBarSet* set, const QStringList& categories, const QString& unit, const QList<double>& totals) {
  QObject::connect(set, &QBarSet::hovered, set, [set, categories, unit, totals](bool status, int index) {
    if (!status) {
      QToolTip::hideText();
      return;
    }
    auto text = [&unit](double v) { return unit == "µs" ? format_us(v) : QString::number(v, 'g', 4) + ' ' + unit; };
    QString tip = QString("%1 · %2: %3").arg(set->label(), categories.value(index), text(set->at(index)));
    if (index >= 0 && index < totals.size()) tip += QString(" of %1").arg(text(totals[index]));
    QToolTip::showText(QCursor::pos(), tip);
  });
}

void add_point_tooltips(QXYSeries* series, const QString& xunit, const QString& yunit) {
  QObject::connect(series, &QXYSeries::hovered, series, [series, xunit, yunit](const QPointF& p, bool state) {
    if (!state) {
      QToolTip::hideText();
      return;
    }
    QToolTip::showText(QCursor::pos(), QString("%1: %2 %3, %4 %5")
                                           .arg(series->name())
                                           .arg(p.x(), 0, 'g', 4)
                                           .arg(xunit)
                                           .arg(p.y(), 0, 'g', 4)
                                           .arg(yunit));
  });
}

}  // namespace perfloom::ui
