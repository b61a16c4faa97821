#include "ui/chart_panel.h"

#include <QChart>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/chart_export.h"

namespace perfloom::ui {

void setup_chart_view(QChartView* view, QChartView::RubberBand band) {
  view->setRenderHint(QPainter::Antialiasing);
  view->setRubberBand(band);
  ChartExporter::installActions(view);
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
  view->setChart(chart);
  delete old;
}

}  // namespace perfloom::ui
