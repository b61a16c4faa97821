// The Traces view (issue 9): drag and drop of real traces, the background import with progress and
// Cancel, the source list and kernel table models, the filter, copying rows, recent files, theme;
// "Group by" and the count under the table (issue 59).
#include <QAbstractItemModelTester>
#include <QAction>
#include <QClipboard>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QTreeView>
#include <QTemporaryDir>
#include <QWindow>
#include <QChart>
#include <QChartView>
#include <QtTest>
#include <functional>

#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/importers/synthetic_trace.h"
#include "storage/kernel_store.h"
#include "ui/kernel_group_model.h"
#include "ui/kernel_table_model.h"
#include "ui/main_window.h"
#include "ui/op_tree_model.h"
#include "ui/recent_files.h"
#include "ui/source_list_model.h"
#include "ui/theme.h"
#include "ui/bottleneck_view.h"
#include "ui/gpu_picker.h"
#include "ui/traces_view.h"
#include "ui/tuner_view.h"

using namespace perfloom;

namespace {
const QString kH100Trace = QStringLiteral(PERFLOOM_SOURCE_DIR "/data/h100-sxm/trace.json.gz");
const QString kH200Trace = QStringLiteral(PERFLOOM_SOURCE_DIR "/data/h200/trace.json.gz");
const QString kSampleTrace = QStringLiteral(PERFLOOM_SOURCE_DIR "/resources/samples/h100-sxm-llama-trace.json.gz");

std::unique_ptr<QMimeData> urlMime(const QList<QUrl>& urls) {
  auto mime = std::make_unique<QMimeData>();
  mime->setUrls(urls);
  return mime;
}

// Sends enter, move and (when `drop`) drop to the window's QWindow, the way the platform delivers a
// real drag: Qt then routes them to the widget under the cursor (here a table inside the Traces
// view, which does not take drops itself) or its first ancestor that does. Returns whether each
// was accepted, which is what the platform turns into the copy or the forbidden cursor.
struct DragAnswer {
  bool enter = false, move = false, drop = false;
};
DragAnswer drag(QWidget* window, const QMimeData* mime, bool drop) {
  DragAnswer a;
  QWindow* target = window->windowHandle();
  const QPoint inside(window->width() / 2, window->height() / 2);
  // Constructed as QGuiApplication's drag handling constructs them (not accepted until a widget says so).
  QDragEnterEvent enter(inside, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(target, &enter);
  a.enter = enter.isAccepted();
  QDragMoveEvent move(inside + QPoint(7, 5), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(target, &move);
  a.move = move.isAccepted();
  if (drop) {
    QDropEvent dropEvent(QPointF(inside + QPoint(7, 5)), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &dropEvent);
    a.drop = dropEvent.isAccepted();
  } else {
    QDragLeaveEvent leave;
    QApplication::sendEvent(target, &leave);
  }
  return a;
}
}  // namespace

class TestTracesView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();

  // A copy of a real trace in `dir` (the original stays untouched; the database keys on content).
  static QString copyInto(const QTemporaryDir& dir, const QString& source, const QString& name) {
    const QString path = dir.filePath(name);
    QFile::remove(path);
    if (!QFile::copy(source, path)) qFatal("cannot copy %s", qPrintable(source));
    return path;
  }

  // The per-kernel table's rows summed by key: what each group must hold.
  struct Sum {
    qint64 count = 0;
    double total_us = 0;
  };
  static QMap<QString, Sum> sumsByKey(ui::TracesView* view, ui::TracesView::GroupChoice choice) {
    QMap<QString, Sum> sums;
    const auto& rows = view->kernelModel()->kernels().rows;
    ui::KernelFilterProxy* table = view->kernelProxy();
    for (int r = 0; r < table->rowCount(); ++r) {
      const ui::KernelRow& row = rows[std::size_t(table->mapToSource(r))];
      QString key = table->index(r, ui::KernelTableModel::Name).data().toString();
      if (choice == ui::TracesView::ByFrameworkOp)
        key = row.launched_by.isEmpty() ? QString::fromUtf8(storage::kNoFrameworkOp.data()) : row.launched_by;
      Sum& s = sums[key];
      ++s.count;
      s.total_us += table->index(r, ui::KernelTableModel::MeasuredUs).data(ui::KernelTableModel::SortRole).toDouble();
    }
    return sums;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("perfloom-tests");
    QCoreApplication::setApplicationName("perfloom-ui-traces-tests");
    // Settings must never be the user's: ctest points XDG_CONFIG_HOME into the build tree.
    QVERIFY(!qEnvironmentVariableIsEmpty("XDG_CONFIG_HOME"));
    QVERIFY2(QSettings().fileName().startsWith(qEnvironmentVariable("XDG_CONFIG_HOME")),
             qPrintable(QSettings().fileName()));
    QSettings().clear();
  }
  void cleanupTestCase() { QSettings().clear(); }
  // Every test starts on the per-kernel table, whatever the one before it picked.
  void init() { QSettings().remove("traces/groupBy"); }

  void dropOfARealTraceImportsItAndFillsTheTable() {
    QTemporaryDir dir;
    const QString trace = copyInto(dir, kH100Trace, "h100 trace.json.gz");
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.tabs()->setCurrentIndex(2);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ui::TracesView* view = w.tracesView();
    QTRY_VERIFY(!view->busy());
    QCOMPARE(view->sourceModel()->rowCount(), 0);

    auto mime = urlMime({QUrl::fromLocalFile(trace)});
    const DragAnswer a = drag(&w, mime.get(), true);
    QVERIFY(a.enter);
    QVERIFY(a.move);
    QVERIFY(a.drop);
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));  // the drop shows the Traces view
    QVERIFY(view->importing());
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));

    // The source list: one source, its format, GPU and kernel count from the database.
    ui::SourceListModel* sources = view->sourceModel();
    QCOMPARE(sources->rowCount(), 1);
    QCOMPARE(sources->index(0, ui::SourceListModel::Format).data().toString(), QString("torch-trace"));
    QCOMPARE(sources->index(0, ui::SourceListModel::Gpu).data().toString(), QString("h100-sxm"));
    const int64_t id = view->lastOutcome().source_id;
    QVERIFY(id > 0);
    QCOMPARE(view->selectedSourceId(), id);
    storage::Database db(dir.filePath("p.db").toStdString());
    const auto stored = storage::KernelStore(db).kernels(id);
    QVERIFY(stored.size() > 100);
    QCOMPARE(sources->index(0, ui::SourceListModel::Kernels).data(ui::SourceListModel::SortRole).toLongLong(),
             qlonglong(stored.size()));

    // The kernel table: every kernel, shares summing to 1, ceilings on the H100 for GEMMs.
    ui::KernelTableModel* kernels = view->kernelModel();
    QCOMPARE(kernels->rowCount(), int(stored.size()));
    QCOMPARE(kernels->kernels().gpu_id, QString("h100-sxm"));
    double share = 0;
    int gemmsWithCeiling = 0;
    for (int r = 0; r < kernels->rowCount(); ++r) {
      share += kernels->index(r, ui::KernelTableModel::Share).data(ui::KernelTableModel::SortRole).toDouble();
      const auto& row = kernels->kernels().rows[std::size_t(r)];
      QVERIFY(row.measured_us > 0);
      if (row.family == "gemm" && row.ceiling_us) {
        ++gemmsWithCeiling;
        QVERIFY(*row.ceiling_us > 0);
        QVERIFY(*row.ceiling_us <= row.measured_us * 1.02);  // a lower bound (README: holds for 99.97%)
        QVERIFY(!row.bound.isEmpty());
        QVERIFY(row.shape.contains("M="));
      }
    }
    QVERIFY(qAbs(share - 1.0) < 1e-9);
    QVERIFY(gemmsWithCeiling > 0);
    QCOMPARE(ui::RecentFiles::list().value(0), trace);

    // The same content again is not an error: the existing source is selected, nothing is added.
    const QString again = copyInto(dir, kH100Trace, "again.json.gz");
    w.importFiles({again});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY(view->lastOutcome().already_imported);
    QVERIFY(view->lastOutcome().error.isEmpty());
    QCOMPARE(view->lastOutcome().source_id, id);
    QCOMPARE(sources->rowCount(), 1);
    QCOMPARE(view->selectedSourceId(), id);

    // F5 on the Traces view reads the source list and the selected source's kernels again.
    QSignalSpy loaded(view, &ui::TracesView::kernelsLoaded);
    QTest::keyClick(&w, Qt::Key_F5);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    QCOMPARE(loaded[0][0].toLongLong(), qlonglong(id));
    QCOMPARE(loaded[0][1].toInt(), int(stored.size()));
  }

  void dragOfSomethingUnreadableIsIgnored() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QFile text(dir.filePath("notes.json"));  // the extension says trace, the content does not
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write("{\"hello\": \"world\"}\n");
    text.close();
    QFile locked(dir.filePath("locked.json.gz"));
    QVERIFY(QFile::copy(kH100Trace, locked.fileName()));
    QVERIFY(locked.setPermissions(QFileDevice::Permissions()));
    const bool root = locked.open(QIODevice::ReadOnly);  // root reads anything; skip that case then
    locked.close();
    QList<QList<QUrl>> refused = {{QUrl::fromLocalFile(text.fileName())},
                                  {QUrl::fromLocalFile(dir.filePath("missing.json"))},
                                  {QUrl("https://example.com/trace.json")}};
    if (!root) refused << QList<QUrl>{QUrl::fromLocalFile(locked.fileName())};
    for (const auto& urls : refused) {
      auto mime = urlMime(urls);
      const DragAnswer a = drag(&w, mime.get(), false);
      QVERIFY2(!a.enter, qPrintable(urls[0].toString()));
      QVERIFY2(!a.move, qPrintable(urls[0].toString()));
      // Every widget that takes drops of its own (line edits, chart views, the window) can be the
      // target Qt picks under the cursor; none of them may take a URL drag perfloom cannot read.
      // (Qt delivers moves and drops only to the widget that accepted the enter.)
      QList<QWidget*> targets{&w};
      for (QWidget* child : w.findChildren<QWidget*>())
        if (child->acceptDrops()) targets << child;
      QVERIFY(targets.size() > 2);
      for (QWidget* child : targets) {
        QDragEnterEvent enter(QPoint(5, 5), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
        enter.setAccepted(true);  // the handlers must say no, not merely stay silent
        QApplication::sendEvent(child, &enter);
        QVERIFY2(!enter.isAccepted(), child->metaObject()->className());
      }
    }
    QVERIFY(!w.tracesView()->importing());
    QTRY_VERIFY(!w.tracesView()->busy());
    QVERIFY(w.tracesView()->lastOutcome().file.isEmpty());  // no import was ever started
    QCOMPARE(w.tracesView()->sourceModel()->rowCount(), 0);
    QVERIFY(ui::why_not_importable(text.fileName())->contains("notes.json"));
    QVERIFY(!ui::why_not_importable(kH100Trace));
  }

  void importErrorsShowFileWhereAndReason() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("broken.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": ");  // cut off mid-event
    f.close();
    ui::TracesView view(gpus_, dir.filePath("p.db").toStdString());
    view.importFiles({bad});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    const QString error = view.lastOutcome().error;
    QVERIFY2(error.startsWith(bad + ": "), qPrintable(error));
    QVERIFY2(view.statusText().contains(error), qPrintable(view.statusText()));
    QCOMPARE(view.sourceModel()->rowCount(), 0);
  }

  void modelsPassTheModelTester() {
    QTemporaryDir dir;
    const std::filesystem::path dbPath = dir.filePath("p.db").toStdString();
    int64_t id = 0;
    {
      storage::Database db(dbPath);
      storage::ImportControl control;
      control.gpus = &gpus_;
      id = storage::KernelStore(db).import_file(kH200Trace.toStdString(), control).source_id;
    }
    ui::SourceListModel sources;
    QAbstractItemModelTester sourceTester(&sources, QAbstractItemModelTester::FailureReportingMode::QtTest);
    sources.setSources(ui::list_sources(dbPath));
    QCOMPARE(sources.rowCount(), 1);
    QCOMPARE(sources.rowOf(id), 0);
    QCOMPARE(sources.index(0, 0).data(ui::SourceListModel::SourceIdRole).toLongLong(), qlonglong(id));
    sources.setSources({});
    QCOMPARE(sources.rowCount(), 0);

    ui::KernelTableModel kernels;
    QAbstractItemModelTester kernelTester(&kernels, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ui::SourceKernels loaded = ui::load_source_kernels(dbPath, id, gpus_.get("h200"));
    QVERIFY2(loaded.error.isEmpty(), qPrintable(loaded.error));
    QVERIFY(loaded.rows.size() > 100);
    kernels.setKernels(loaded);
    QCOMPARE(kernels.rowCount(), int(loaded.rows.size()));
    QCOMPARE(kernels.columnCount(), int(ui::KernelTableModel::ColumnCount));
    // Numeric columns sort as numbers: the sort role is a double, not text.
    QCOMPARE(kernels.index(0, ui::KernelTableModel::MeasuredUs).data(ui::KernelTableModel::SortRole).userType(),
             QMetaType::Double);
    ui::KernelFilterProxy proxy;
    QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&kernels);
    QCOMPARE(proxy.rowCount(), kernels.rowCount());  // file order at once
    proxy.sort(ui::KernelTableModel::MeasuredUs, Qt::DescendingOrder);
    QVERIFY(proxy.busy());  // sorted in a job, not here
    QTRY_VERIFY_WITH_TIMEOUT(!proxy.busy(), 10000);
    QCOMPARE(proxy.rowCount(), kernels.rowCount());
    for (int r = 1; r < proxy.rowCount(); ++r)
      QVERIFY(proxy.index(r - 1, ui::KernelTableModel::MeasuredUs).data(ui::KernelTableModel::SortRole).toDouble() >=
              proxy.index(r, ui::KernelTableModel::MeasuredUs).data(ui::KernelTableModel::SortRole).toDouble());
    // A filter, then new rows while it is set: the tester watches every reset and layout change.
    proxy.setFilterRegularExpression(QRegularExpression("gemm", QRegularExpression::CaseInsensitiveOption));
    QTRY_VERIFY_WITH_TIMEOUT(!proxy.busy(), 10000);
    QVERIFY(proxy.rowCount() > 0 && proxy.rowCount() < kernels.rowCount());
    kernels.setKernels(loaded);
    QTRY_VERIFY_WITH_TIMEOUT(!proxy.busy(), 10000);
    QVERIFY(proxy.rowCount() > 0 && proxy.rowCount() < kernels.rowCount());
    kernels.setKernels({});
    QCOMPARE(kernels.rowCount(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!proxy.busy(), 10000);
    QCOMPARE(proxy.rowCount(), 0);
    // A cancelled load hands back no rows.
    std::atomic<bool> cancel{true};
    QVERIFY(ui::load_source_kernels(dbPath, id, std::nullopt, &cancel).cancelled);
  }

  void filterCopyAndStaleSelections() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ui::TracesView* view = w.tracesView();
    w.importFiles({copyInto(dir, kH100Trace, "a.json.gz"), copyInto(dir, kH200Trace, "b.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 60000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));
    QCOMPARE(view->sourceModel()->rowCount(), 2);
    const int64_t first = view->sourceModel()->sources()[0].id, second = view->sourceModel()->sources()[1].id;

    // A result for a selection that changed is dropped: only the last selection's rows show.
    view->selectSource(first);
    view->selectSource(second);
    view->selectSource(first);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QCOMPARE(view->kernelModel()->kernels().source_id, first);
    QCOMPARE(view->kernelModel()->kernels().gpu_id, QString("h100-sxm"));

    // Filter: a case-insensitive regular expression, applied after the debounce.
    const int all = view->kernelProxy()->rowCount();
    QVERIFY(all > 100);
    view->filterEdit()->setText("^GEMM$|NVJET");
    QCOMPARE(view->kernelProxy()->rowCount(), all);  // not yet: 300 ms debounce
    QTRY_VERIFY(view->kernelProxy()->rowCount() < all);
    const int filtered = view->kernelProxy()->rowCount();
    QVERIFY(filtered > 0);
    for (int r = 0; r < filtered; ++r) {
      const QString family = view->kernelProxy()->index(r, ui::KernelTableModel::FamilyColumn).data().toString();
      const QString name = view->kernelProxy()->index(r, ui::KernelTableModel::Name).data().toString();
      QVERIFY2(family == "gemm" || name.contains("nvjet"), qPrintable(name));
    }
    view->filterEdit()->setText("gemm(");  // unfinished: the last valid filter stays
    QTest::qWait(400);
    QCOMPARE(view->kernelProxy()->rowCount(), filtered);

    // Ctrl+C on the table: the selected rows, tab-separated, with a header.
    QTableView* table = view->kernelTable();
    auto* sel = table->selectionModel();
    sel->clearSelection();
    for (int r : {0, 2})
      sel->select(table->model()->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    QApplication::clipboard()->clear();
    table->setFocus();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(table, Qt::Key_C, Qt::ControlModifier);
    const QStringList lines = QApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QVERIFY(lines[0].startsWith("kernel\tfamily\tshape\tmeasured (µs)\tshare (%)\tceiling (µs)\tbound"));
    for (const QString& line : lines) QCOMPARE(line.count('\t'), int(ui::KernelTableModel::ColumnCount) - 1);
    QCOMPARE(lines[1].section('\t', 0, 0), view->kernelProxy()->index(0, 0).data().toString());
    QCOMPARE(lines[2].section('\t', 0, 0), view->kernelProxy()->index(2, 0).data().toString());
    QCOMPARE(view->copySelection(), QApplication::clipboard()->text());
  }

  // 200,000 synthetic kernels: sorting and filtering them runs on the thread pool; the GUI thread
  // only swaps the finished order in (how long that takes is printed, not asserted).
  static ui::SourceKernels syntheticKernels(int n) {
    ui::SourceKernels k;
    k.source_id = 1;
    k.gpu_id = "h100-sxm";
    static const char* families[] = {"gemm", "attention", "norm", "elementwise"};
    k.rows.reserve(std::size_t(n));
    for (int i = 0; i < n; ++i) {
      ui::KernelRow r;
      r.family = families[i % 4];
      r.name = QString("%1_kernel_%2").arg(r.family.toUpper()).arg(i);
      r.shape = QString("bf16 M=%1").arg(i % 997);
      r.measured_us = double((i * 7919) % 100003) + 0.5;  // 0.5..100002.5 in a scrambled order
      if (i % 3) r.ceiling_us = r.measured_us / 2;
      k.total_us += r.measured_us;
      k.rows.push_back(std::move(r));
    }
    for (auto& r : k.rows) r.share = r.measured_us / k.total_us;
    return k;
  }

  void largeTableSortsAndFiltersInAJob() {
    ui::KernelTableModel kernels;
    ui::KernelFilterProxy proxy;
    proxy.setSourceModel(&kernels);
    // A table on screen, set up as the Traces view's, so that the time measured applying an order
    // includes the view's reaction to it.
    QTableView table;
    table.verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    table.setModel(&proxy);
    table.show();
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    ui::SourceKernels synthetic = syntheticKernels(200000);
    QElapsedTimer clock;
    clock.start();
    kernels.setKernels(std::move(synthetic));
    qDebug("200,000 rows handed to the model: %.2f ms on the GUI thread", double(clock.nsecsElapsed()) / 1e6);
    QCOMPARE(proxy.rowCount(), 200000);

    clock.restart();
    proxy.sort(ui::KernelTableModel::MeasuredUs, Qt::DescendingOrder);
    const double request_ms = double(clock.nsecsElapsed()) / 1e6;
    QVERIFY(proxy.busy());
    QSignalSpy applied(&proxy, &ui::KernelFilterProxy::orderApplied);
    QVERIFY(applied.wait(20000));
    qDebug("sort of 200,000 rows: %.2f ms to ask, %.1f ms until applied, the GUI thread blocked %.2f ms applying it",
           request_ms, double(clock.nsecsElapsed()) / 1e6, proxy.lastApplyMs());
    QCOMPARE(proxy.rowCount(), 200000);
    const auto& rows = kernels.kernels().rows;
    for (int r = 1; r < proxy.rowCount(); ++r)
      QVERIFY(rows[std::size_t(proxy.mapToSource(r - 1))].measured_us >=
              rows[std::size_t(proxy.mapToSource(r))].measured_us);
    QCOMPARE(proxy.index(0, ui::KernelTableModel::MeasuredUs).data().toString(), QString("100002.5"));

    // A filter on top of the sort: case-insensitive, on name, family and shape; still sorted.
    clock.restart();
    proxy.setFilterRegularExpression(QRegularExpression("^ATTENTION$|M=5$", QRegularExpression::CaseInsensitiveOption));
    QVERIFY(proxy.busy());
    QVERIFY(applied.wait(20000));
    qDebug("filter + sort of 200,000 rows: %.1f ms until applied, the GUI thread blocked %.2f ms applying it",
           double(clock.nsecsElapsed()) / 1e6, proxy.lastApplyMs());
    int expected = 0;
    for (const auto& r : rows) expected += r.family == "attention" || r.shape.endsWith("M=5");
    QCOMPARE(proxy.rowCount(), expected);
    for (int r = 0; r < proxy.rowCount(); ++r) {
      const auto& row = rows[std::size_t(proxy.mapToSource(r))];
      QVERIFY(row.family == "attention" || row.shape.endsWith("M=5"));
      if (r > 0) QVERIFY(rows[std::size_t(proxy.mapToSource(r - 1))].measured_us >= row.measured_us);
    }
    // The same function the job runs, for a text column ascending: ties keep the file order.
    const std::vector<int> byFamily =
        ui::kernel_row_order(rows, QRegularExpression(), ui::KernelTableModel::FamilyColumn, Qt::AscendingOrder);
    QCOMPARE(byFamily.size(), rows.size());
    QCOMPARE(rows[std::size_t(byFamily.front())].family, QString("attention"));
    QCOMPARE(byFamily[0], 1);
    QCOMPARE(byFamily[1], 5);
    std::atomic<bool> cancel{true};
    QVERIFY(ui::kernel_row_order(rows, QRegularExpression("gemm"), 0, Qt::AscendingOrder, &cancel).empty());
  }

  void aStaleSortOrFilterResultIsDropped() {
    ui::KernelTableModel kernels;
    ui::KernelFilterProxy proxy;
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&kernels);
    kernels.setKernels(syntheticKernels(200000));
    QSignalSpy applied(&proxy, &ui::KernelFilterProxy::orderApplied);
    // Two filters in a row, the second before the first's job can have reported: the first's
    // order arrives for a generation that is no longer current and never reaches the table.
    proxy.setFilterRegularExpression(QRegularExpression("gemm", QRegularExpression::CaseInsensitiveOption));
    const quint64 first = proxy.generation();
    proxy.setFilterRegularExpression(QRegularExpression("norm", QRegularExpression::CaseInsensitiveOption));
    QVERIFY(proxy.generation() > first);
    QTRY_VERIFY_WITH_TIMEOUT(proxy.jobsRunning() == 0, 20000);
    QCOMPARE(proxy.droppedResults(), 1);
    QCOMPARE(applied.count(), 1);
    QCOMPARE(proxy.rowCount(), 50000);
    for (int r = 0; r < proxy.rowCount(); r += 997)
      QCOMPARE(proxy.index(r, ui::KernelTableModel::FamilyColumn).data().toString(), QString("norm"));
    // A result for an older generation handed in directly: refused, nothing changes.
    QVERIFY(!proxy.applyOrder(first, {0, 1, 2}));
    QCOMPARE(proxy.rowCount(), 50000);
    QCOMPARE(proxy.droppedResults(), 2);
    // New rows while a sort runs: the sort's order (of the old rows) is dropped too.
    proxy.setFilterRegularExpression(QRegularExpression());
    proxy.sort(ui::KernelTableModel::Name, Qt::AscendingOrder);
    kernels.setKernels(syntheticKernels(1000));
    QTRY_VERIFY_WITH_TIMEOUT(proxy.jobsRunning() == 0, 20000);
    QCOMPARE(proxy.rowCount(), 1000);
    for (int r = 1; r < proxy.rowCount(); ++r)
      QVERIFY(QString::compare(proxy.index(r - 1, 0).data().toString(), proxy.index(r, 0).data().toString(),
                               Qt::CaseInsensitive) <= 0);
  }

  void headerClickSortsInTheBackgroundAndKeepsTheIndicator() {
    QTemporaryDir dir;
    ui::TracesView view(gpus_, dir.filePath("p.db").toStdString());
    view.kernelModel()->setKernels(syntheticKernels(20000));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTableView* table = view.kernelTable();
    QHeaderView* header = table->horizontalHeader();
    QCOMPARE(header->sortIndicatorSection(), -1);  // file order until a click
    const QPoint at(header->sectionViewportPosition(ui::KernelTableModel::MeasuredUs) + 5, header->height() / 2);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(header->sortIndicatorSection(), int(ui::KernelTableModel::MeasuredUs));
    QVERIFY(view.busy());
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.kernelProxy()->sortColumn(), int(ui::KernelTableModel::MeasuredUs));
    const Qt::SortOrder order = header->sortIndicatorOrder();
    QCOMPARE(view.kernelProxy()->sortOrder(), order);
    auto value = [&](int r) {
      return view.kernelProxy()
          ->index(r, ui::KernelTableModel::MeasuredUs)
          .data(ui::KernelTableModel::SortRole)
          .toDouble();
    };
    for (int r = 1; r < view.kernelProxy()->rowCount(); ++r)
      QVERIFY(order == Qt::AscendingOrder ? value(r - 1) <= value(r) : value(r - 1) >= value(r));
    // The selection follows its rows through a re-sort (a layout change, not a reset).
    const QString firstName = view.kernelProxy()->index(0, 0).data().toString();
    table->selectionModel()->select(view.kernelProxy()->index(0, 0),
                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, at);  // the other direction
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.kernelProxy()->sortOrder(), header->sortIndicatorOrder());
    QVERIFY(view.kernelProxy()->sortOrder() != order);
    const QModelIndexList selected = table->selectionModel()->selectedRows();
    QCOMPARE(selected.size(), 1);
    QCOMPARE(selected[0].data().toString(), firstName);
    QCOMPARE(selected[0].row(), view.kernelProxy()->rowCount() - 1);
    QCOMPARE(view.copySelection().split('\n', Qt::SkipEmptyParts).value(1).section('\t', 0, 0), firstName);
  }

  // A drop of two files perfloom cannot import and one it can: the good one is imported, and both
  // failures are listed by file name with their reason (not only the last one).
  void dropOfSeveralFilesReportsEveryError() {
    QTemporaryDir dir;
    const QString good = copyInto(dir, kH100Trace, "good.json.gz");
    const QString notes = dir.filePath("notes.json");  // refused when the drop is sniffed
    QFile text(notes);
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write("{\"hello\": \"world\"}\n");
    text.close();
    const QString broken = dir.filePath("broken.json");  // looks like a trace, fails in the import
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": ");
    f.close();
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ui::TracesView* view = w.tracesView();
    QTRY_VERIFY(!view->busy());
    QSignalSpy failed(view, &ui::TracesView::importFailed);
    auto mime = urlMime({QUrl::fromLocalFile(broken), QUrl::fromLocalFile(notes), QUrl::fromLocalFile(good)});
    const DragAnswer a = drag(&w, mime.get(), true);
    QVERIFY(a.drop);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 60000);
    QCOMPARE(view->sourceModel()->rowCount(), 1);  // the good one
    QCOMPARE(view->sourceModel()->sources()[0].path, good);
    const QStringList errors = view->importErrors();
    QCOMPARE(errors.size(), 2);
    QVERIFY2(errors.filter("broken.json").size() == 1, qPrintable(errors.join('\n')));
    QVERIFY2(errors.filter("notes.json").size() == 1, qPrintable(errors.join('\n')));
    for (const QString& e : errors) QVERIFY2(e.section(": ", 1).size() > 3, qPrintable(e));  // a reason after the name
    QVERIFY(!view->errorsLabel()->isHidden());
    for (const QString& e : errors)
      QVERIFY2(view->errorsLabel()->text().contains(e), qPrintable(view->errorsLabel()->text()));
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed[0][0].toStringList(), errors);
    // The next batch starts a new list.
    w.importFiles({copyInto(dir, kH200Trace, "b.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 60000);
    QVERIFY(view->importErrors().isEmpty());
    QVERIFY(view->errorsLabel()->isHidden());
  }

  void cancelLeavesTheDatabaseWithoutTheSource() {
    QTemporaryDir dir;
    const QString big = dir.filePath("big.json");
    storage::write_synthetic_trace(big.toStdString(), 150ull << 20);
    const std::filesystem::path dbPath = dir.filePath("p.db").toStdString();
    ui::TracesView view(gpus_, dbPath);
    QTRY_VERIFY(!view.busy());
    view.importFiles({big});
    QVERIFY(view.importing());
    QVERIFY(view.cancelButton()->isEnabled());
    QVERIFY(!view.progressBar()->parentWidget()->isHidden());
    QTRY_VERIFY_WITH_TIMEOUT(view.progressBar()->value() > 0 || !view.importing(), 30000);
    QVERIFY2(view.importing(), "the import finished before it could be cancelled");
    view.cancelButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    QVERIFY(view.lastOutcome().cancelled);
    QVERIFY(view.lastOutcome().error.isEmpty());
    QVERIFY(view.progressBar()->parentWidget()->isHidden());
    QCOMPARE(view.sourceModel()->rowCount(), 0);
    storage::Database db(dbPath);
    QVERIFY(storage::KernelStore(db).sources().empty());
  }

  // The bundled sample trace, grouped by kernel name and by framework op: every group's count and
  // total are those of the per-kernel table's rows with its key; the rows come by total descending;
  // the key column takes the spare width, and the window keeps its size.
  // A kernel row goes to the Bottleneck view (any whole shape) or the Tuner (GEMMs) on the trace's GPU.
  void kernelRowOpensInBottleneckAndTuner() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    ui::TracesView* view = w.tracesView();
    w.tabs()->setCurrentWidget(view);
    w.importFiles({copyInto(dir, kSampleTrace, "sample.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY(!view->openInBottleneckAction()->isEnabled());  // no current row yet
    const auto& rows = view->kernelModel()->kernels().rows;
    int gemm = -1, norm = -1;
    for (int r = 0; r < view->kernelProxy()->rowCount(); ++r) {
      const auto& row = rows[std::size_t(view->kernelProxy()->mapToSource(r))];
      if (gemm < 0 && row.spec.startsWith("gemm:")) gemm = r;
      if (norm < 0 && row.family == "norm" && !row.spec.isEmpty()) norm = r;
    }
    QVERIFY(gemm >= 0 && norm >= 0);
    view->kernelTable()->setCurrentIndex(view->kernelProxy()->index(gemm, 0));
    QCOMPARE(view->currentKernelSpec(), QString("gemm:bf16:M=512,N=3072,K=2048"));
    QVERIFY(view->openInTunerAction()->isEnabled());
    view->openInTunerAction()->trigger();
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.tunerView()));
    QCOMPARE(w.tunerView()->gpuPicker()->checkedIds(), QStringList{"h100-sxm"});
    QTRY_VERIFY_WITH_TIMEOUT(!w.tunerView()->busy(), 30000);
    QCOMPARE(w.tunerView()->result().shape.M, int64_t(512));
    QCOMPARE(w.tunerView()->result().shape.K, int64_t(2048));
    // A norm kernel: the Bottleneck view, not the Tuner.
    w.tabs()->setCurrentWidget(view);
    view->kernelTable()->setCurrentIndex(view->kernelProxy()->index(norm, 0));
    QVERIFY(!view->openInTunerAction()->isEnabled());
    QVERIFY(view->openInBottleneckAction()->isEnabled());
    const QString spec = view->currentKernelSpec();
    view->openInBottleneckAction()->trigger();
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.bottleneckView()));
    QCOMPARE(w.bottleneckView()->kernelSpec(), spec);
    QVERIFY(w.bottleneckView()->gpuPicker()->checkedIds().contains("h100-sxm"));
  }

  void groupByTotalsEqualTheKernelTable() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    ui::TracesView* view = w.tracesView();
    w.tabs()->setCurrentWidget(view);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QSize size = w.size();
    const QSize minimum = w.minimumSizeHint();
    QCOMPARE(view->groupChoice(), ui::TracesView::Kernels);
    QCOMPARE(view->groupByCombo()->count(), 4);
    QCOMPARE(view->groupByCombo()->itemText(0), QString("Kernels"));
    QCOMPARE(view->groupByCombo()->itemText(1), QString("Kernel name"));
    QCOMPARE(view->groupByCombo()->itemText(2), QString("Framework op"));
    QCOMPARE(view->groupByCombo()->itemText(3), QString("Op tree"));
    w.importFiles({copyInto(dir, kSampleTrace, "sample.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));
    const int kernels = view->kernelProxy()->rowCount();
    QVERIFY(kernels > 50);
    const double sourceTotal = view->kernelModel()->kernels().total_us;
    QVERIFY(sourceTotal > 0);
    QVERIFY(view->kernelTable()->isVisible());
    QCOMPARE(view->kernelTable()->horizontalHeader()->sectionResizeMode(ui::KernelTableModel::Name),
             QHeaderView::Stretch);

    for (const auto choice : {ui::TracesView::ByKernelName, ui::TracesView::ByFrameworkOp}) {
      const QMap<QString, Sum> sums = sumsByKey(view, choice);
      QVERIFY(sums.size() > 3);
      view->groupByCombo()->setCurrentIndex(int(choice));  // as the user picks it
      QCOMPARE(view->groupChoice(), choice);
      QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
      QTableView* table = view->groupTable();
      QVERIFY(table->isVisible());
      QVERIFY(!view->kernelTable()->isVisible());
      ui::KernelGroupModel* groups = view->groupModel();
      QCOMPARE(groups->headerData(ui::KernelGroupModel::Key, Qt::Horizontal).toString(),
               choice == ui::TracesView::ByKernelName ? QString("kernel name") : QString("framework op"));
      QCOMPARE(groups->rowCount(), int(sums.size()));
      qint64 count = 0;
      double total = 0, share = 0;
      for (int r = 0; r < groups->rowCount(); ++r) {
        const QString key = groups->index(r, ui::KernelGroupModel::Key).data().toString();
        QVERIFY2(sums.contains(key), qPrintable(key));
        const Sum& expected = sums[key];
        const auto value = [&](int column) {
          return groups->index(r, column).data(ui::KernelGroupModel::SortRole).toDouble();
        };
        QCOMPARE(qint64(value(ui::KernelGroupModel::Count)), expected.count);
        QVERIFY2(qAbs(value(ui::KernelGroupModel::TotalUs) - expected.total_us) <= 1e-9 * sourceTotal, qPrintable(key));
        QVERIFY(qAbs(value(ui::KernelGroupModel::MeanUs) - expected.total_us / double(expected.count)) <=
                1e-9 * sourceTotal);
        QVERIFY(qAbs(value(ui::KernelGroupModel::Share) - expected.total_us / sourceTotal) <= 1e-12);
        if (r > 0)
          QVERIFY(groups->index(r - 1, ui::KernelGroupModel::TotalUs).data(ui::KernelGroupModel::SortRole).toDouble() >=
                  value(ui::KernelGroupModel::TotalUs));
        count += qint64(value(ui::KernelGroupModel::Count));
        total += value(ui::KernelGroupModel::TotalUs);
        share += value(ui::KernelGroupModel::Share);
      }
      QCOMPARE(count, qint64(kernels));
      QVERIFY(qAbs(total - sourceTotal) <= 1e-9 * sourceTotal);
      QVERIFY(qAbs(share - 1.0) < 1e-9);
      // The key takes the spare width: wider than all the number columns together.
      QCOMPARE(table->horizontalHeader()->sectionResizeMode(ui::KernelGroupModel::Key), QHeaderView::Stretch);
      int numbers = 0;
      for (int c = ui::KernelGroupModel::Count; c < ui::KernelGroupModel::ColumnCount; ++c)
        numbers += table->columnWidth(c);
      QVERIFY2(table->columnWidth(ui::KernelGroupModel::Key) > numbers,
               qPrintable(QString("%1 <= %2").arg(table->columnWidth(ui::KernelGroupModel::Key)).arg(numbers)));
      // Copy takes the grouped rows.
      table->selectionModel()->select(groups->index(0, 0),
                                      QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      const QStringList lines = view->copySelection().split('\n', Qt::SkipEmptyParts);
      QCOMPARE(lines.size(), 2);
      QVERIFY2(lines[0].endsWith("\tcount\ttotal (µs)\tmean (µs)\tshare (%)"), qPrintable(lines[0]));
      QCOMPARE(lines[1].section('\t', 0, 0), groups->index(0, 0).data().toString());
    }
    QVERIFY2(view->groupModel()->groups().rows.size() < std::size_t(kernels),
             "the sample's ops launch several kernels each");
    view->setGroupChoice(ui::TracesView::ByOpTree);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    QVERIFY(view->opTreeView()->isVisible());
    QCOMPARE(w.size(), size);
    view->setGroupChoice(ui::TracesView::Kernels);
    QVERIFY(view->kernelTable()->isVisible());
    QCOMPARE(view->kernelProxy()->rowCount(), kernels);
    QCOMPARE(w.size(), size);
    // The window's minimum never grows with what the views show (it may shrink once a source fills
    // the views' combo boxes with elided names), and it fits the smallest laptop screen.
    QVERIFY2(w.minimumSizeHint().width() <= minimum.width() && w.minimumSizeHint().height() <= minimum.height(),
             qPrintable(QString("%1x%2 after, %3x%4 before")
                            .arg(w.minimumSizeHint().width())
                            .arg(w.minimumSizeHint().height())
                            .arg(minimum.width())
                            .arg(minimum.height())));
    QVERIFY(w.minimumSizeHint().width() <= 1366 && w.minimumSizeHint().height() <= 768);
  }

  // "Op tree": the framework ops of the sample (a real torch.profiler trace with its cpu_ops) as a
  // top-down tree; its top-level totals add up to the kernel table's, every kernel counted once, and
  // a filter keeps the matching nodes with their ancestors, the count line following it.
  void opTreeTotalsEqualTheKernelTable() {
    QTemporaryDir dir;
    // The view alone (the main window's size with every grouping is groupByTotalsEqualTheKernelTable's).
    ui::TracesView w(gpus_, dir.filePath("p.db").toStdString());
    ui::TracesView* view = &w;
    w.resize(1200, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    view->importFiles({copyInto(dir, kSampleTrace, "sample.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));
    const int kernels = view->kernelModel()->rowCount();
    double tableTotal = 0;
    for (const ui::KernelRow& r : view->kernelModel()->kernels().rows) tableTotal += r.measured_us;
    QVERIFY(tableTotal > 0);

    QElapsedTimer clock;
    clock.start();
    view->groupByCombo()->setCurrentIndex(int(ui::TracesView::ByOpTree));  // as the user picks it
    QCOMPARE(view->groupChoice(), ui::TracesView::ByOpTree);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    QVERIFY2(clock.elapsed() < 2000, qPrintable(QString::number(clock.elapsed())));
    QTreeView* tree = view->opTreeView();
    QVERIFY(tree->isVisible());
    QVERIFY(!view->kernelTable()->isVisible() && !view->groupTable()->isVisible());
    ui::OpTreeModel* model = view->opTreeModel();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(model->error().isEmpty());
    QVERIFY(model->rowCount() > 0);
    qint64 count = 0;
    double total = 0, share = 0;
    for (int r = 0; r < model->rowCount(); ++r) {
      count += model->index(r, ui::OpTreeModel::Kernels).data(ui::OpTreeModel::SortRole).toLongLong();
      total += model->index(r, ui::OpTreeModel::TotalUs).data(ui::OpTreeModel::SortRole).toDouble();
      share += model->index(r, ui::OpTreeModel::Share).data(ui::OpTreeModel::SortRole).toDouble();
      if (r > 0)
        QVERIFY(model->index(r - 1, ui::OpTreeModel::TotalUs).data(ui::OpTreeModel::SortRole).toDouble() >=
                model->index(r, ui::OpTreeModel::TotalUs).data(ui::OpTreeModel::SortRole).toDouble());
    }
    QCOMPARE(count, qint64(kernels));
    QVERIFY2(qAbs(total - tableTotal) <= 1e-9 * tableTotal, qPrintable(QString("%1 vs %2").arg(total).arg(tableTotal)));
    QVERIFY(qAbs(share - 1.0) < 1e-9);
    QCOMPARE(view->countText(),
             QString("%1 of %1 kernels, %2 total").arg(kernels).arg(ui::duration_text(total)));
    // Ops nest: the top level is expanded, and below it lie ops and, at the leaves, kernels.
    const QModelIndex top = model->index(0, 0);
    QVERIFY(tree->isExpanded(top));
    QVERIFY(model->rowCount(top) > 0);
    QCOMPARE(tree->header()->sectionResizeMode(ui::OpTreeModel::Name), QHeaderView::Stretch);
    int numbers = 0;
    for (int c = ui::OpTreeModel::Calls; c < ui::OpTreeModel::ColumnCount; ++c) numbers += tree->columnWidth(c);
    QVERIFY(tree->columnWidth(ui::OpTreeModel::Name) > numbers);

    // Filtered: the GEMMs (nvjet) with the ops above them; the count is of those kernels.
    int gemms = 0;
    double gemmTotal = 0;
    for (const ui::KernelRow& r : view->kernelModel()->kernels().rows)
      if (r.name.contains("nvjet")) {
        ++gemms;
        gemmTotal += r.measured_us;
      }
    QVERIFY(gemms > 0);
    view->filterEdit()->setText("nvjet");
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy() && model->tree().root.kernels < kernels, 10000);
    QCOMPARE(model->tree().root.kernels, qint64(gemms));
    QVERIFY(qAbs(model->tree().root.total_us - gemmTotal) <= 1e-9 * tableTotal);
    QCOMPARE(view->countText(),
             QString("%1 of %2 kernels, %3 total").arg(gemms).arg(kernels).arg(ui::duration_text(model->tree().root.total_us)));
    view->filterEdit()->clear();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy() && model->tree().root.kernels == kernels, 10000);

    const QSize size = w.size();
    const QSize minimum = w.minimumSizeHint();
    view->setGroupChoice(ui::TracesView::Kernels);
    QVERIFY(view->kernelTable()->isVisible());
    QCOMPARE(w.size(), size);
    QVERIFY(w.minimumSizeHint().width() <= minimum.width() && w.minimumSizeHint().height() <= minimum.height());
  }

  // Find moves the current row to each match in turn, in the order shown, without filtering, and
  // wraps around both ways; F3 and Shift+F3 do the same; the op tree is searched depth first.
  void findVisitsEveryMatchInOrderAndWraps() {
    QTemporaryDir dir;
    ui::TracesView view(gpus_, dir.filePath("p.db").toStdString());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.importFiles({copyInto(dir, kSampleTrace, "sample.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    const int all = view.kernelProxy()->rowCount();
    QList<int> expected;
    for (int r = 0; r < all; ++r)
      if (view.kernelProxy()->index(r, ui::KernelTableModel::Name).data().toString().contains("NVJET", Qt::CaseInsensitive))
        expected << r;
    QVERIFY(expected.size() > 3);
    view.findEdit()->setText("NVJET");
    auto currentRow = [&view] { return view.kernelTable()->currentIndex().row(); };
    for (int i = 0; i < expected.size(); ++i) {
      view.findNextButton()->click();
      QCOMPARE(currentRow(), expected[i]);
      QCOMPARE(view.findText(), QString("%1 of %2 matches").arg(i + 1).arg(expected.size()));
    }
    QCOMPARE(view.kernelProxy()->rowCount(), all);  // nothing filtered
    view.findNextButton()->click();  // wraps to the first
    QCOMPARE(currentRow(), expected.first());
    QCOMPARE(view.findText(), QString("1 of %1 matches").arg(expected.size()));
    view.findPreviousButton()->click();  // and back to the last
    QCOMPARE(currentRow(), expected.last());
    for (int i = expected.size() - 1; i-- > 0;) {
      QTest::keyClick(view.kernelTable(), Qt::Key_F3, Qt::ShiftModifier);
      QCOMPARE(currentRow(), expected[i]);
    }
    QTest::keyClick(view.kernelTable(), Qt::Key_F3);
    QCOMPARE(currentRow(), expected[1]);
    QCOMPARE(view.findText(), QString("2 of %1 matches").arg(expected.size()));
    view.findEdit()->setText("no-kernel-is-called-this");
    view.findNextButton()->click();
    QCOMPARE(view.findText(), QString("No matches"));
    QCOMPARE(currentRow(), expected[1]);

    // The op tree: every node named like aten::linear, collapsed ones too, depth first; each found
    // node is made visible.
    view.setGroupChoice(ui::TracesView::ByOpTree);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    ui::OpTreeModel* model = view.opTreeModel();
    QList<QModelIndex> nodes;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& at) {
      for (int r = 0; r < model->rowCount(at); ++r) {
        const QModelIndex i = model->index(r, 0, at);
        if (i.data().toString().contains("aten::linear")) nodes << i;
        walk(i);
      }
    };
    walk({});
    QVERIFY(!nodes.isEmpty());
    view.findEdit()->setText("aten::linear");
    for (int i = 0; i < nodes.size(); ++i) {
      view.findNextButton()->click();
      QCOMPARE(view.opTreeView()->currentIndex().siblingAtColumn(0), nodes[i]);
      QVERIFY(nodes[i].parent() == QModelIndex() || view.opTreeView()->isExpanded(nodes[i].parent()));
      QCOMPARE(view.findText(), QString("%1 of %2 matches").arg(i + 1).arg(nodes.size()));
    }
    view.findNextButton()->click();
    QCOMPARE(view.opTreeView()->currentIndex().siblingAtColumn(0), nodes.first());
    view.findPreviousButton()->click();
    QCOMPARE(view.opTreeView()->currentIndex().siblingAtColumn(0), nodes.last());
  }

  // "N of M kernels, T total" under the table: N the rows shown under the filter, M the source's,
  // T the shown rows' total; the same for groups, whose filter keeps the kernels it matches.
  void countLineFollowsTheFilter() {
    QCOMPARE(ui::duration_text(850), QString("850.0 µs"));
    QCOMPARE(ui::duration_text(8.5), QString("8.50 µs"));
    QCOMPARE(ui::duration_text(1234), QString("1.23 ms"));
    QCOMPARE(ui::duration_text(12340), QString("12.3 ms"));
    QCOMPARE(ui::duration_text(123456), QString("123.5 ms"));
    QCOMPARE(ui::duration_text(3.21e6), QString("3.21 s"));
    QCOMPARE(ui::duration_text(45.6e6), QString("45.6 s"));

    QTemporaryDir dir;
    ui::TracesView view(gpus_, dir.filePath("p.db").toStdString());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTRY_VERIFY(!view.busy());
    QVERIFY(view.countText().isEmpty());  // no source yet
    view.importFiles({copyInto(dir, kSampleTrace, "sample.json.gz")});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    QVERIFY(view.countLabel()->isVisible());
    const int all = view.kernelModel()->rowCount();
    const double sourceTotal = view.kernelModel()->kernels().total_us;
    QCOMPARE(view.countText(), QString("%1 of %1 kernels, %2 total").arg(all).arg(ui::duration_text(sourceTotal)));

    view.filterEdit()->setText("gemm|nvjet");
    QTRY_VERIFY_WITH_TIMEOUT(view.kernelProxy()->rowCount() < all && !view.busy(), 10000);
    const int shown = view.kernelProxy()->rowCount();
    QVERIFY(shown > 0);
    double shownTotal = 0;
    for (int r = 0; r < shown; ++r)
      shownTotal += view.kernelProxy()
                        ->index(r, ui::KernelTableModel::MeasuredUs)
                        .data(ui::KernelTableModel::SortRole)
                        .toDouble();
    QVERIFY(shownTotal < sourceTotal);
    QCOMPARE(view.countText(),
             QString("%1 of %2 kernels, %3 total").arg(shown).arg(all).arg(ui::duration_text(shownTotal)));

    // Grouped by name under the same filter: the same kernels, in fewer rows.
    QSet<QString> allNames, shownNames;
    for (const ui::KernelRow& r : view.kernelModel()->kernels().rows) allNames.insert(r.name);
    for (int r = 0; r < shown; ++r)
      shownNames.insert(view.kernelProxy()->index(r, ui::KernelTableModel::Name).data().toString());
    view.setGroupChoice(ui::TracesView::ByKernelName);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.groupModel()->rowCount(), int(shownNames.size()));
    QCOMPARE(view.groupModel()->groups().kernels_shown, qint64(shown));
    QVERIFY(qAbs(view.groupModel()->groups().total_us - shownTotal) <= 1e-9 * sourceTotal);
    QCOMPARE(view.countText(), QString("%1 of %2 groups (%3 kernels), %4 total")
                                   .arg(shownNames.size())
                                   .arg(allNames.size())
                                   .arg(shown)
                                   .arg(ui::duration_text(view.groupModel()->groups().total_us)));

    // By framework op, the filter finds an op by its name: all of its kernels count.
    view.filterEdit()->clear();
    view.setGroupChoice(ui::TracesView::ByFrameworkOp);
    QTRY_VERIFY_WITH_TIMEOUT(view.kernelProxy()->rowCount() == all && !view.busy(), 10000);
    const int ops = view.groupModel()->rowCount();
    QVERIFY(ops > 3);
    QCOMPARE(view.countText(),
             QString("%1 of %1 groups (%2 kernels), %3 total").arg(ops).arg(all).arg(ui::duration_text(sourceTotal)));
    const ui::GroupRow top = view.groupModel()->groups().rows.front();
    view.filterEdit()->setText("^" + QRegularExpression::escape(top.key) + "$");
    QTRY_VERIFY_WITH_TIMEOUT(view.groupModel()->rowCount() < ops && !view.busy(), 10000);
    const ui::KernelGroups& filtered = view.groupModel()->groups();
    QCOMPARE(filtered.rows.size(), std::size_t(1));
    QCOMPARE(filtered.rows[0].key, top.key);
    QCOMPARE(filtered.rows[0].count, top.count);
    QCOMPARE(filtered.groups_in_source, ops);
    QCOMPARE(
        view.countText(),
        QString("1 of %1 groups (%2 kernels), %3 total").arg(ops).arg(top.count).arg(ui::duration_text(top.total_us)));
    // A filter nothing matches: no rows, and the line says so.
    view.filterEdit()->setText("no-kernel-is-called-this");
    QTRY_VERIFY_WITH_TIMEOUT(view.groupModel()->rowCount() == 0 && !view.busy(), 10000);
    QCOMPARE(view.countText(), QString("0 of %1 groups (0 kernels), %2 total").arg(ops).arg(ui::duration_text(0)));
  }

  // The choice is kept: a view made later (the next start) shows the grouping picked before; an
  // unknown stored value falls back to the per-kernel table.
  void groupByChoicePersists() {
    QTemporaryDir dir;
    const std::filesystem::path dbPath = dir.filePath("p.db").toStdString();
    {
      ui::TracesView view(gpus_, dbPath);
      QCOMPARE(view.groupChoice(), ui::TracesView::Kernels);
      view.groupByCombo()->setCurrentIndex(int(ui::TracesView::ByFrameworkOp));
      QCOMPARE(QSettings().value("traces/groupBy").toString(), QString("framework-op"));
      QTRY_VERIFY(!view.busy());
    }
    {
      ui::TracesView view(gpus_, dbPath);
      QCOMPARE(view.groupChoice(), ui::TracesView::ByFrameworkOp);
      QCOMPARE(view.groupByCombo()->currentText(), QString("Framework op"));
      QCOMPARE(view.groupTable()->parentWidget(), view.kernelTable()->parentWidget());
      QCOMPARE(qobject_cast<QStackedWidget*>(view.groupTable()->parentWidget())->currentWidget(),
               static_cast<QWidget*>(view.groupTable()));
      view.setGroupChoice(ui::TracesView::ByKernelName);
      QTRY_VERIFY(!view.busy());
    }
    {
      ui::TracesView view(gpus_, dbPath);
      QCOMPARE(view.groupChoice(), ui::TracesView::ByKernelName);
      view.setGroupChoice(ui::TracesView::ByOpTree);
      QCOMPARE(QSettings().value("traces/groupBy").toString(), QString("op-tree"));
      QTRY_VERIFY(!view.busy());
    }
    {
      ui::TracesView view(gpus_, dbPath);
      QCOMPARE(view.groupChoice(), ui::TracesView::ByOpTree);
      QCOMPARE(view.groupByCombo()->currentText(), QString("Op tree"));
      QCOMPARE(qobject_cast<QStackedWidget*>(view.opTreeView()->parentWidget())->currentWidget(),
               static_cast<QWidget*>(view.opTreeView()));
      view.setGroupChoice(ui::TracesView::ByKernelName);
      QTRY_VERIFY(!view.busy());
    }
    {
      ui::TracesView view(gpus_, dbPath);
      QCOMPARE(view.groupChoice(), ui::TracesView::ByKernelName);
      QTRY_VERIFY(!view.busy());
    }
    QSettings().setValue("traces/groupBy", "by-colour");
    ui::TracesView view(gpus_, dbPath);
    QCOMPARE(view.groupChoice(), ui::TracesView::Kernels);
    QTRY_VERIFY(!view.busy());
  }

  void recentFilesUpdateAndClear() {
    QSettings().clear();
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    auto recentPaths = [&w] {
      QStringList paths;
      for (QAction* a : w.recentMenu()->actions())
        if (!a->data().toString().isEmpty()) paths << a->data().toString();
      return paths;
    };
    QVERIFY(recentPaths().isEmpty());
    const QString trace = copyInto(dir, kH100Trace, "recent.json.gz");
    w.importFiles({trace});
    QTRY_VERIFY_WITH_TIMEOUT(!w.tracesView()->busy(), 30000);
    QVERIFY2(w.tracesView()->lastOutcome().error.isEmpty(), qPrintable(w.tracesView()->lastOutcome().error));
    QCOMPARE(recentPaths(), QStringList{trace});
    for (int i = 0; i < 12; ++i) ui::RecentFiles::add(dir.filePath(QString("f%1.json").arg(i)));
    ui::RecentFiles::add(trace);  // again: moves to the front, no duplicate
    QStringList list = ui::RecentFiles::list();
    QCOMPARE(list.size(), ui::RecentFiles::kMax);
    QCOMPARE(list.front(), trace);
    QCOMPARE(list.count(trace), 1);
    auto* clear = w.recentMenu()->findChild<QAction*>("clearRecentFiles");
    if (!clear)
      for (QAction* a : w.recentMenu()->actions())
        if (a->objectName() == "clearRecentFiles") clear = a;
    QVERIFY(clear);
    clear->trigger();
    QVERIFY(ui::RecentFiles::list().isEmpty());
    QVERIFY(recentPaths().isEmpty());
    QVERIFY(!QSettings().contains("traces/recentFiles"));
  }

  void themeIsStoredAndApplied() {
    QSettings().clear();
    QTemporaryDir dir;
    const QColor startWindow = QApplication::palette().color(QPalette::Window);
    {
      ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
      QAction* dark = w.findChild<QAction*>("theme-dark");
      QVERIFY(dark);
      dark->trigger();
      QCOMPARE(QSettings().value("view/theme").toString(), QString("dark"));
      QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 100);
      QCOMPARE(QApplication::style()->name().toLower(), QString("fusion"));
      // The charts follow: a dark background and light text in every view's chart.
      const auto views = w.findChildren<QChartView*>();
      QVERIFY(views.size() >= 4);
      for (QChartView* v : views) {
        QTRY_VERIFY(v->chart()->backgroundBrush().color().lightness() < 100);
        QVERIFY(v->chart()->titleBrush().color().lightness() > 150);
      }
      w.findChild<QAction*>("theme-system")->trigger();
      for (QChartView* v : views) QTRY_VERIFY(v->chart()->backgroundBrush().color().lightness() > 150);
      QCOMPARE(QApplication::palette().color(QPalette::Window), startWindow);
    }
    // Applied at start from the stored choice.
    ui::save_theme(ui::Theme::Dark);
    ui::MainWindow again(gpus_, dir.filePath("p.db").toStdString());
    QCOMPARE(ui::current_theme(), ui::Theme::Dark);
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 100);
    QVERIFY(again.findChild<QAction*>("theme-dark")->isChecked());
    ui::apply_theme(ui::Theme::System);
    QSettings().clear();
  }
};

QTEST_MAIN(TestTracesView)
#include "test_traces_view.moc"
