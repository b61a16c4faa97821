#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QStackedBarSeries>
#include <QBarSet>
#include <QTemporaryDir>
#include <QtTest>

#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "storage/kernel_list_csv.h"
#include "ui/gpu_picker.h"
#include <QComboBox>
#include <QLineEdit>
#include <QListWidget>
#include "ui/whatif_view.h"

using namespace perfloom;

class TestWhatIfView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();
  std::shared_ptr<const KernelPredictor> predictor_ = make_default_predictor(nullptr);
  QTemporaryDir dir_;
  QString csv_;

 private slots:
  void initTestCase() {
    csv_ = dir_.filePath("kernels.csv");
    QFile f(csv_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("op,dtype,M,N,K,T,H\n"
            "gemm,bf16,4096,4096,4096,,\n"
            "gemm,bf16,128,14336,4096,,\n"
            "rmsnorm,bf16,,,,4096,4096\n"
            "silu_mul,bf16,,,,,\n");  // invalid row: no T, I
  }

  void speedupModelPassesTheModelTester() {
    ui::SpeedupTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(ui::compute_whatif_file(csv_, {gpus_.get("a100-sxm-80gb"), gpus_.get("h100-sxm")}, *predictor_));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.data(model.index(0, ui::SpeedupTableModel::Speedup), ui::SpeedupTableModel::SortRole).toDouble(), 1.0);
    QVERIFY(model.data(model.index(1, ui::SpeedupTableModel::Speedup), ui::SpeedupTableModel::SortRole).toDouble() > 1.0);
    model.setResult({});
    QCOMPARE(model.rowCount(), 0);
  }

  void totalsMatchThePredictorsSum() {
    ui::WhatIfView view(gpus_, predictor_);
    view.setSelection(csv_, {"a100-sxm-80gb", "h100-sxm"});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const ui::WhatIfResult& r = view.result();
    QCOMPARE(r.kernels, 3);
    QCOMPARE(r.bad_rows, 1);
    QCOMPARE(r.gpus.size(), std::size_t(2));
    const auto list = storage::read_kernel_list(csv_.toStdString());
    for (const auto& g : r.gpus) {
      double sum = 0, lo = 0;
      for (const auto& row : list.rows)
        if (row.kernel) {
          const Prediction p = predictor_->predict(*row.kernel, gpus_.get(g.gpu_id.toStdString()));
          sum += p.pred_us;
          lo += p.lo_us;
        }
      QVERIFY(qFuzzyCompare(g.total_us, sum));
      QVERIFY(qFuzzyCompare(g.lo_us, lo));
      double families = 0;
      for (double v : g.family_us) families += v;
      QVERIFY(qFuzzyCompare(families, sum));
    }
    QCOMPARE(r.families, QStringList({"gemm", "norm"}));
    // The chart stacks one set per family with one value per GPU.
    auto* bars = qobject_cast<QStackedBarSeries*>(view.chartView()->chart()->series().value(0));
    QVERIFY(bars);
    QCOMPARE(bars->count(), 2);
    QCOMPARE(bars->barSets()[0]->count(), 2);
    QCOMPARE(view.speedupModel()->rowCount(), 2);
  }

  void pickerFiltersBySearchAndArchitecture() {
    ui::GpuPicker picker(gpus_);
    picker.searchEdit()->setText("h100");
    int visible = 0;
    for (int i = 0; i < picker.list()->count(); ++i) visible += picker.list()->item(i)->isHidden() ? 0 : 1;
    QVERIFY(visible >= 2 && visible < picker.list()->count());
    picker.searchEdit()->clear();
    picker.architectureFilter()->setCurrentIndex(picker.architectureFilter()->findData("ampere"));
    for (int i = 0; i < picker.list()->count(); ++i)
      if (!picker.list()->item(i)->isHidden()) QCOMPARE(picker.list()->item(i)->data(Qt::UserRole + 1).toString(), QString("ampere"));
    picker.setCheckedIds({"h100-sxm", "a100-sxm-80gb"});
    QCOMPARE(picker.checkedIds().size(), 2);
  }

  void lateResultIsDropped() {
    ui::WhatIfView view(gpus_, predictor_);
    view.setSelection(csv_, {"h100-sxm"});
    const quint64 old = view.generation();
    view.setSelection(csv_, {"a100-sxm-80gb", "b200"});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().gpus.size(), std::size_t(2));
    QVERIFY(!view.applyResult(old, ui::compute_whatif_file(csv_, {gpus_.get("h100-sxm")}, *predictor_)));
    QCOMPARE(view.result().gpus.size(), std::size_t(2));
  }
};

QTEST_MAIN(TestWhatIfView)
#include "test_whatif_view.moc"
