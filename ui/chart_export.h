#pragma once
// Renders charts to PNG (any device pixel ratio), SVG and PDF, and item models to CSV, with or
// without a display; the views' "Export…" / "Copy image" actions and `export-chart` use it.
#include <QSize>
#include <QString>

class QAbstractItemModel;
class QChart;
class QChartView;
class QImage;
class QWidget;

namespace perfloom::ui {

class ChartExporter {
 public:
  // The chart drawn at `size` logical pixels into an image of size x dpr physical pixels.
  static QImage renderImage(QChart* chart, QSize size, qreal dpr = 1.0);
  // Chooses the format from the suffix: .png, .svg, .pdf; dpr applies to PNG. Returns false and
  // sets `error` when the file cannot be written or the suffix is unknown.
  static bool save(QChart* chart, const QString& path, QSize size, qreal dpr = 1.0, QString* error = nullptr);
  static bool savePng(QChart* chart, const QString& path, QSize size, qreal dpr, QString* error = nullptr);
  static bool saveSvg(QChart* chart, const QString& path, QSize size, QString* error = nullptr);
  static bool savePdf(QChart* chart, const QString& path, QSize size, QString* error = nullptr);
  // Header row then one line per row, RFC 4180 quoting, DisplayRole text.
  static bool saveCsv(const QAbstractItemModel* model, const QString& path, QString* error = nullptr);
  static void copyImage(QChart* chart, QSize size);
  // Adds "Export…" and "Copy image" to the view's context menu.
  static void installActions(QChartView* view);
  // A file name from what is shown: "ttft-p50-against-request-rate-llama-3-1-8b-tp-1.png" from a
  // chart titled "TTFT p50 against request rate: llama-3.1-8b, TP 1"; `fallback` when nothing is left.
  static QString suggestedFileName(const QString& title, const QString& extension, const QString& fallback);
  // Adds "Export CSV…" and "Copy" to a table's context menu.
  static void installTableActions(QWidget* table, const QAbstractItemModel* model);
};

}  // namespace perfloom::ui
