// The bundled sample trace (issue 61): the empty Traces view offers it, File > Open sample trace
// imports it through the same background job as a dropped file, opening it again selects the source
// it is already in, and a missing samples folder is reported with the path the file belongs at.
#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "model/gpu_database.h"
#include "model/resources.h"
#include "ui/bottleneck_view.h"
#include "ui/kernel_table_model.h"
#include "ui/main_window.h"
#include "ui/source_list_model.h"
#include "ui/traces_view.h"

using namespace perfloom;

namespace {
const QString kH200Trace = QStringLiteral(PERFLOOM_SOURCE_DIR "/data/h200/trace.json.gz");

// The smallest screen perfloom is laid out for.
const QSize kSmallScreen(1366, 768);

bool fits(const QSize& s, const QSize& screen) { return s.width() <= screen.width() && s.height() <= screen.height(); }

QString sizeText(const QSize& s) { return QString("%1x%2").arg(s.width()).arg(s.height()); }

// $PERFLOOM_RESOURCES set for one scope, the previous value (or its absence) restored after it.
class ResourcesOverride {
 public:
  explicit ResourcesOverride(const QString& dir)
      : had_(qEnvironmentVariableIsSet("PERFLOOM_RESOURCES")), old_(qgetenv("PERFLOOM_RESOURCES")) {
    qputenv("PERFLOOM_RESOURCES", dir.toLocal8Bit());
  }
  ~ResourcesOverride() {
    if (had_)
      qputenv("PERFLOOM_RESOURCES", old_);
    else
      qunsetenv("PERFLOOM_RESOURCES");
  }

 private:
  bool had_;
  QByteArray old_;
};
}  // namespace

class TestSampleTrace : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("perfloom-tests");
    QCoreApplication::setApplicationName("perfloom-ui-sample-tests");
    // Settings must never be the user's: ctest points XDG_CONFIG_HOME into the build tree.
    QVERIFY(!qEnvironmentVariableIsEmpty("XDG_CONFIG_HOME"));
    QSettings().clear();
  }
  void cleanupTestCase() { QSettings().clear(); }

  // Found beside the binary at run time (a build tree's binary finds the source tree's resources/).
  void theSampleIsFoundInTheResources() {
    const std::filesystem::path p = sample_trace_path();
    QCOMPARE(p.parent_path().filename().string(), std::string("samples"));
    QCOMPARE(p.parent_path().parent_path(), resources_dir());
    QVERIFY2(QFileInfo::exists(QString::fromStdString(p.string())), p.c_str());
  }

  void emptyStateOffersTheSample() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QSize size = w.size();
    ui::TracesView* view = w.tracesView();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    w.tabs()->setCurrentWidget(view);
    QCOMPARE(view->sourceModel()->rowCount(), 0);
    QTRY_VERIFY(view->emptyState()->isVisible());
    QPushButton* button = view->sampleButton();
    QVERIFY(button->isVisible());
    QVERIFY(button->isEnabled());
    QCOMPARE(button->objectName(), QString("openSampleTrace"));
    QVERIFY(view->emptyState()->isAncestorOf(button));
    QVERIFY(!view->kernelTable()->isVisible());  // the empty state stands where the table would
    // In the File menu too.
    QMenu* file = w.menuBar()->actions().value(0)->menu();
    QVERIFY(file);
    QVERIFY(file->actions().contains(w.openSampleAction()));

    // Modest hints: the window keeps its size and fits a small laptop screen.
    const QSize hint = view->emptyState()->sizeHint();
    QVERIFY2(fits(hint, QSize(800, 500)), qPrintable(sizeText(hint)));
    QVERIFY2(fits(w.minimumSizeHint(), kSmallScreen), qPrintable(sizeText(w.minimumSizeHint())));
    QCOMPARE(w.size(), size);

    // The button imports the sample, and the table takes the empty state's place.
    button->click();
    QVERIFY(view->importing());
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));
    QCOMPARE(view->sourceModel()->rowCount(), 1);
    QVERIFY(!view->emptyState()->isVisible());
    QVERIFY(view->kernelTable()->isVisible());
    QVERIFY2(fits(w.minimumSizeHint(), kSmallScreen), qPrintable(sizeText(w.minimumSizeHint())));
    QCOMPARE(w.size(), size);
  }

  void fileMenuImportsTheSampleAndSelectsItAgain() {
    QTemporaryDir dir;
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.tabs()->setCurrentWidget(w.bottleneckView());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QSize size = w.size();
    ui::TracesView* view = w.tracesView();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    QSignalSpy failed(view, &ui::TracesView::importFailed);

    // Through the menu: the Traces view is shown and runs the same import job as a drop.
    QAction* action = w.openSampleAction();
    QVERIFY(action->isEnabled());
    action->trigger();
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    QVERIFY(view->importing());
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    const ui::ImportOutcome first = view->lastOutcome();
    QVERIFY2(first.error.isEmpty(), qPrintable(first.error));
    QVERIFY(!first.already_imported);
    QCOMPARE(first.file, QString::fromStdString(sample_trace_path().string()));
    const qint64 id = first.source_id;
    QVERIFY(id > 0);
    ui::SourceListModel* sources = view->sourceModel();
    QCOMPARE(sources->rowCount(), 1);
    QCOMPARE(sources->index(0, ui::SourceListModel::Format).data().toString(), QString("torch-trace"));
    QCOMPARE(sources->index(0, ui::SourceListModel::Gpu).data().toString(), QString("h100-sxm"));
    QCOMPARE(view->selectedSourceId(), id);
    // Its kernels, shown: every one the trace has, with the H100's ceilings.
    ui::KernelTableModel* kernels = view->kernelModel();
    QCOMPARE(kernels->kernels().source_id, id);
    QCOMPARE(kernels->kernels().gpu_id, QString("h100-sxm"));
    const int rows = kernels->rowCount();
    QVERIFY2(rows > 100, qPrintable(QString::number(rows)));
    QCOMPARE(sources->index(0, ui::SourceListModel::Kernels).data(ui::SourceListModel::SortRole).toLongLong(),
             qlonglong(rows));
    QCOMPARE(view->kernelProxy()->rowCount(), rows);
    QVERIFY(view->kernelTable()->isVisible());
    QVERIFY(!view->emptyState()->isVisible());

    // Another trace takes the selection; opening the sample again selects its source, and is no error.
    view->importFiles({kH200Trace});
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY2(view->lastOutcome().error.isEmpty(), qPrintable(view->lastOutcome().error));
    QCOMPARE(sources->rowCount(), 2);
    QVERIFY(view->selectedSourceId() != id);
    QSignalSpy loaded(view, &ui::TracesView::kernelsLoaded);
    action->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    const ui::ImportOutcome again = view->lastOutcome();
    QVERIFY(again.already_imported);
    QVERIFY2(again.error.isEmpty(), qPrintable(again.error));
    QCOMPARE(again.source_id, id);
    QCOMPARE(sources->rowCount(), 2);
    QCOMPARE(view->selectedSourceId(), id);
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(loaded[0][0].toLongLong(), id);
    QCOMPARE(loaded[0][1].toInt(), rows);
    QCOMPARE(kernels->kernels().source_id, id);
    QVERIFY(view->importErrors().isEmpty());
    QVERIFY(!view->errorsLabel()->isVisible());
    QCOMPARE(failed.count(), 0);
    // Once more with the sample already shown: still selected, still no error.
    action->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY(view->lastOutcome().already_imported);
    QCOMPARE(view->selectedSourceId(), id);
    QCOMPARE(kernels->kernels().source_id, id);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(w.size(), size);
  }

  void aMissingSamplesFolderIsReportedWithItsPath() {
    QTemporaryDir dir, resources;  // `resources`: a resources folder without samples/ (a broken install)
    ui::MainWindow w(gpus_, dir.filePath("p.db").toStdString());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ui::TracesView* view = w.tracesView();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    QSignalSpy failed(view, &ui::TracesView::importFailed);
    QString expected;
    {
      const ResourcesOverride broken(resources.path());
      expected = QString::fromStdString(sample_trace_path().string());
      w.openSampleAction()->trigger();
    }
    QCOMPARE(expected, QDir(resources.path()).filePath("samples/h100-sxm-llama-trace.json.gz"));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    QVERIFY(!view->importing());
    QVERIFY(view->lastOutcome().file.isEmpty());  // no import was started
    QCOMPARE(failed.count(), 1);
    QCOMPARE(view->importErrors().size(), 1);
    const QString error = view->importErrors()[0];
    QVERIFY2(error.startsWith(expected + ": "), qPrintable(error));
    QVERIFY2(error.contains("sample trace"), qPrintable(error));
    QVERIFY2(error.contains("PERFLOOM_RESOURCES"), qPrintable(error));
    QVERIFY(view->errorsLabel()->isVisible());
    QVERIFY2(view->errorsLabel()->text().contains(expected), qPrintable(view->errorsLabel()->text()));
    QTRY_VERIFY(!view->busy());
    QCOMPARE(view->sourceModel()->rowCount(), 0);
    QVERIFY(view->emptyState()->isVisible());  // still offered: the install may be repaired
  }
};

QTEST_MAIN(TestSampleTrace)
#include "test_sample_trace.moc"
