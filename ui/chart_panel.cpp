#include "ui/chart_panel.h"

#include <QChart>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QXYSeries>
#include <algorithm>
#include <cmath>

#include "ui/chart_export.h"
#include "ui/chart_style.h"

namespace perfloom::ui {

void setup_chart_view(QChartView* view, QChartView::RubberBand band) {
  view->setRenderHint(QPainter::Antialiasing);
  view->setRubberBand(band);
  ChartExporter::installActions(view);
  follow_palette(view);
}

void setup_table_view(QTableView* table, QAbstractItemModel* model) {
  table->setModel(model);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  ChartExporter::installTableActions(table, model);
}

QVBoxLayout* panel_layout(QWidget* panel) {
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  return layout;
}

QSplitter* chart_over_table(QWidget* parent, QWidget* chart, QWidget* table, int chart_height, int table_height) {
  auto* split = new QSplitter(Qt::Vertical, parent);
  split->addWidget(chart);
  split->addWidget(table);
  split->setSizes({chart_height, table_height});
  return split;
}

QSplitter* fill_with_side_panels(QWidget* view, QWidget* left, QWidget* right, int left_width) {
  auto* splitter = new QSplitter(view);
  splitter->addWidget(left);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({left_width, 900});
  auto* layout = new QHBoxLayout(view);
  layout->addWidget(splitter);
  return splitter;
}

void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  style_chart(chart);
  view->setChart(chart);
  delete old;
}

QList<QPointF> downsample_points(const QList<QPointF>& points, int max_points) {
  max_points = std::max(max_points, 4);
  const qsizetype n = points.size();
  if (n <= max_points) return points;
  const qsizetype buckets = (max_points - 2) / 2;
  const qsizetype inner = n - 2;  // the first and the last are always kept
  QList<QPointF> out;
  out.reserve(2 + 2 * buckets);
  out << points.front();
  for (qsizetype b = 0; b < buckets; ++b) {
    const qsizetype begin = 1 + b * inner / buckets, end = 1 + (b + 1) * inner / buckets;
    if (begin >= end) continue;
    qsizetype lo = begin, hi = begin;
    for (qsizetype i = begin + 1; i < end; ++i) {
      if (points[i].y() < points[lo].y()) lo = i;
      if (points[i].y() > points[hi].y()) hi = i;
    }
    out << points[std::min(lo, hi)];
    if (lo != hi) out << points[std::max(lo, hi)];
  }
  out << points.back();
  return out;
}

QList<QPointF> log_axis_points(const QList<QPointF>& points, bool log_x, bool log_y) {
  QList<QPointF> out;
  out.reserve(points.size());
  for (const QPointF& p : points) {
    if (std::isnan(p.x()) || std::isnan(p.y())) continue;
    if ((log_x && !(p.x() > 0)) || (log_y && !(p.y() > 0))) continue;
    out << p;
  }
  return out;
}

void set_series_points(QXYSeries* series, const QList<QPointF>& points, bool log_x, bool log_y) {
  series->replace(downsample_points(log_axis_points(points, log_x, log_y)));
}

}  // namespace perfloom::ui
