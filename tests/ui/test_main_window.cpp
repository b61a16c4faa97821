#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QtTest>

#include "model/gpu_database.h"
#include "ui/gpu_table_model.h"
#include "ui/gpu_view.h"
#include "ui/main_window.h"

using namespace perfloom;

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void opensWithEveryView() {
    ui::MainWindow w(GpuDatabase::builtin(), "/tmp/perfloom-ui-test.db");
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.tabs()->count(), ui::MainWindow::viewNames().size());
    for (int i = 0; i < w.tabs()->count(); ++i) QCOMPARE(w.tabs()->tabText(i), ui::MainWindow::viewNames()[i]);
  }

  void gpuModelPassesTheModelTester() {
    ui::GpuTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGpus(GpuDatabase::builtin().all());
    QVERIFY(model.rowCount() >= 30);
    model.setGpus({});
    QCOMPARE(model.rowCount(), 0);
  }

  void gpuTableShowsRealFiguresAndFilters() {
    GpuDatabase gpus = GpuDatabase::builtin();
    ui::GpuView view(gpus);
    ui::GpuTableModel* m = view.model();
    int h100 = -1;
    for (int r = 0; r < m->rowCount(); ++r)
      if (m->data(m->index(r, ui::GpuTableModel::Id)).toString() == "h100-sxm") h100 = r;
    QVERIFY(h100 >= 0);
    QCOMPARE(m->data(m->index(h100, ui::GpuTableModel::Sms), ui::GpuTableModel::SortRole).toInt(), 132);
    QVERIFY(qAbs(m->data(m->index(h100, ui::GpuTableModel::Bf16Tflops), ui::GpuTableModel::SortRole).toDouble() -
                 989.4) < 10);
    QCOMPARE(m->data(m->index(h100, ui::GpuTableModel::Bf16Tflops)).toString(), QString("989"));
    QVERIFY(!m->data(m->index(h100, ui::GpuTableModel::BandwidthGbS), Qt::ToolTipRole).toString().isEmpty());

    view.filterEdit()->setText("HOPPER");
    QVERIFY(view.proxy()->rowCount() >= 3);
    QVERIFY(view.proxy()->rowCount() < m->rowCount());
    for (int r = 0; r < view.proxy()->rowCount(); ++r)
      QCOMPARE(view.proxy()->data(view.proxy()->index(r, ui::GpuTableModel::Architecture)).toString(),
               QString("hopper"));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
