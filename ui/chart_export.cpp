#include "ui/chart_export.h"

#include <QAbstractItemModel>
#include <QAction>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QClipboard>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QImage>
#include <QMessageBox>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QTextStream>

namespace perfloom::ui {

namespace {

// Draws the chart in a scene of its own (with no view), so it renders the same with or without a
// display. The chart is moved back to its original scene afterwards.
void paintChart(QChart* chart, QPainter* painter, QSize size) {
  QGraphicsScene* original = chart->scene();
  const QSizeF originalSize = chart->size();
  const QPointF originalPos = chart->pos();
  QGraphicsScene scene;
  if (original) original->removeItem(chart);
  scene.addItem(chart);
  chart->setPos(0, 0);
  chart->resize(size);
  scene.setSceneRect(0, 0, size.width(), size.height());
  // Layout of a QGraphicsWidget is deferred; a posted event would come too late.
  QApplication::sendPostedEvents();
  if (chart->layout()) chart->layout()->activate();
  scene.render(painter, QRectF(0, 0, size.width(), size.height()), scene.sceneRect());
  scene.removeItem(chart);
  if (original) {
    original->addItem(chart);
    chart->setPos(originalPos);
    chart->resize(originalSize);
  }
}

QString csvField(QString s) {
  if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace("\"", "\"\"") + '"';
  return s;
}

bool fail(QString* error, const QString& message) {
  if (error) *error = message;
  return false;
}

}  // namespace

QImage ChartExporter::renderImage(QChart* chart, QSize size, qreal dpr) {
  QImage image(size * dpr, QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(dpr);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  paintChart(chart, &painter, size);
  painter.end();
  return image;
}

bool ChartExporter::savePng(QChart* chart, const QString& path, QSize size, qreal dpr, QString* error) {
  const QImage image = renderImage(chart, size, dpr);
  if (!image.save(path, "PNG")) return fail(error, path + ": cannot be written");
  return true;
}

bool ChartExporter::saveSvg(QChart* chart, const QString& path, QSize size, QString* error) {
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(size);
  svg.setViewBox(QRect(QPoint(0, 0), size));
  svg.setTitle(chart->title());
  QPainter painter;
  if (!painter.begin(&svg)) return fail(error, path + ": cannot be written");
  paintChart(chart, &painter, size);
  painter.end();
  return QFileInfo(path).size() > 0 || fail(error, path + ": write failed");
}

bool ChartExporter::savePdf(QChart* chart, const QString& path, QSize size, QString* error) {
  QPdfWriter pdf(path);
  pdf.setResolution(96);
  pdf.setPageSize(QPageSize(QSizeF(size.width(), size.height()), QPageSize::Point));
  pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
  pdf.setTitle(chart->title());
  QPainter painter;
  if (!painter.begin(&pdf)) return fail(error, path + ": cannot be written");
  const QRect page = painter.viewport();
  painter.scale(page.width() / double(size.width()), page.height() / double(size.height()));
  paintChart(chart, &painter, size);
  painter.end();
  return QFileInfo(path).size() > 0 || fail(error, path + ": write failed");
}

bool ChartExporter::save(QChart* chart, const QString& path, QSize size, qreal dpr, QString* error) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "png") return savePng(chart, path, size, dpr, error);
  if (suffix == "svg") return saveSvg(chart, path, size, error);
  if (suffix == "pdf") return savePdf(chart, path, size, error);
  return fail(error, path + ": unknown format (use .png, .svg or .pdf)");
}

bool ChartExporter::saveCsv(const QAbstractItemModel* model, const QString& path, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text))
    return fail(error, path + ": cannot be written");
  QTextStream out(&f);
  QStringList fields;
  for (int c = 0; c < model->columnCount(); ++c) fields << csvField(model->headerData(c, Qt::Horizontal).toString());
  out << fields.join(',') << '\n';
  for (int r = 0; r < model->rowCount(); ++r) {
    fields.clear();
    for (int c = 0; c < model->columnCount(); ++c) fields << csvField(model->index(r, c).data().toString());
    out << fields.join(',') << '\n';
  }
  out.flush();
  return f.error() == QFile::NoError || fail(error, path + ": write failed");
}

void ChartExporter::copyImage(QChart* chart, QSize size) {
  QApplication::clipboard()->setImage(renderImage(chart, size, 2.0));
}

QString ChartExporter::suggestedFileName(const QString& title, const QString& extension, const QString& fallback) {
  QString slug;
  for (const QChar c : title.toLower()) {
    if (c.isLetterOrNumber() && c.unicode() < 128)
      slug += c;
    else if (!slug.isEmpty() && !slug.endsWith('-'))
      slug += '-';
    if (slug.size() >= 72) break;
  }
  while (slug.endsWith('-')) slug.chop(1);
  return (slug.isEmpty() ? fallback : slug) + "." + extension;
}

void ChartExporter::installActions(QChartView* view) {
  view->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* exportAction = new QAction(QObject::tr("Export…"), view);
  QObject::connect(exportAction, &QAction::triggered, view, [view] {
    QString selected;
    const QString path = QFileDialog::getSaveFileName(
        view, QObject::tr("Export chart"), suggestedFileName(view->chart()->title(), "png", "chart"),
        QObject::tr("PNG image (*.png);;PNG image, 2x (*.png);;SVG (*.svg);;PDF (*.pdf)"), &selected);
    if (path.isEmpty()) return;
    QString error;
    const qreal dpr = selected.contains("2x") ? 2.0 : 1.0;
    if (!save(view->chart(), path, view->size(), dpr, &error)) QMessageBox::warning(view, "perfloom", error);
  });
  auto* copyAction = new QAction(QObject::tr("Copy image"), view);
  QObject::connect(copyAction, &QAction::triggered, view, [view] { copyImage(view->chart(), view->size()); });
  auto* resetZoom = new QAction(QObject::tr("Reset zoom"), view);
  QObject::connect(resetZoom, &QAction::triggered, view, [view] { view->chart()->zoomReset(); });
  view->addAction(exportAction);
  view->addAction(copyAction);
  view->addAction(resetZoom);
}

void ChartExporter::installTableActions(QWidget* table, const QAbstractItemModel* model) {
  table->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* exportAction = new QAction(QObject::tr("Export CSV…"), table);
  QObject::connect(exportAction, &QAction::triggered, table, [table, model] {
    // Named after the chart beside the table, where the view has one ("...-table.csv").
    QString title;
    for (QWidget* w = table->parentWidget(); w && title.isEmpty(); w = w->parentWidget())
      if (auto* chart = w->findChild<QChartView*>(); chart && chart->chart()) title = chart->chart()->title();
    const QString path = QFileDialog::getSaveFileName(
        table, QObject::tr("Export table"),
        suggestedFileName(title.isEmpty() ? QString() : title + " table", "csv", "table"), "CSV (*.csv)");
    if (path.isEmpty()) return;
    QString error;
    if (!saveCsv(model, path, &error)) QMessageBox::warning(table, "perfloom", error);
  });
  auto* copyAction = new QAction(QObject::tr("Copy"), table);
  copyAction->setShortcut(QKeySequence::Copy);
  copyAction->setShortcutContext(Qt::WidgetShortcut);
  QObject::connect(copyAction, &QAction::triggered, table, [model] {
    QString text;
    for (int c = 0; c < model->columnCount(); ++c)
      text += (c ? "\t" : "") + model->headerData(c, Qt::Horizontal).toString();
    text += '\n';
    for (int r = 0; r < model->rowCount(); ++r) {
      for (int c = 0; c < model->columnCount(); ++c) text += (c ? "\t" : "") + model->index(r, c).data().toString();
      text += '\n';
    }
    QApplication::clipboard()->setText(text);
  });
  table->addAction(exportAction);
  table->addAction(copyAction);
}

}  // namespace perfloom::ui
