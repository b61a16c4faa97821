#include <algorithm>
#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QtTest>

#include "model/gpu_database.h"
#include "model/tuner/tuner.h"
#include "ui/tuner_view.h"

using namespace perfloom;

class TestTunerView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();

  static QHorizontalBarSeries* bars(ui::TunerView& v) {
    return qobject_cast<QHorizontalBarSeries*>(v.barChartView()->chart()->series().value(0));
  }

 private slots:
  void rankModelPassesTheModelTester() {
    ui::TunerRankModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ui::TunerRequest req;
    req.shape = {2048, 8192, 4096, Dtype::bf16};
    req.gpu = gpus_.get("h200");
    const ui::TunerViewResult r = ui::compute_tuner(req);
    QVERIFY(r.error.isEmpty());
    model.setResult(r);
    QCOMPARE(model.rowCount(), static_cast<int>(r.ranked.size()));
    QVERIFY(model.rowCount() > 1);
    QCOMPARE(model.data(model.index(0, ui::TunerRankModel::PredUs), ui::TunerRankModel::SortRole).toDouble(),
             r.ranked.front().pred_us);
    QCOMPARE(model.data(model.index(0, ui::TunerRankModel::Reason)).toString().toStdString(), r.ranked.front().reason);
    model.setResult({});
    QCOMPARE(model.rowCount(), 0);
  }

  void barsAreTheTunersPredictionsAndTheSweepShowsWaveSteps() {
    ui::TunerView view(gpus_);
    view.setSelection(4096, 4096, 4096, "bf16", "h100-sxm", 'M');
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const GpuSpec& gpu = gpus_.get("h100-sxm");
    const tuner::TuneResult expected = tuner::tune_gemm({4096, 4096, 4096, Dtype::bf16}, gpu, 12);
    QCOMPARE(QString::fromStdString(expected.method), QString("wave-table"));
    auto* series = bars(view);
    QVERIFY(series);
    QCOMPARE(series->count(), 1);
    QBarSet* set = series->barSets().front();
    // At most 8 bars, the best on top: a horizontal bar chart draws its first bar at the bottom.
    const int shown = std::min<int>(8, static_cast<int>(expected.ranked.size()));
    QCOMPARE(set->count(), shown);
    for (int i = 0; i < set->count(); ++i) {
      QCOMPARE(set->at(i), expected.ranked[static_cast<std::size_t>(shown - 1 - i)].pred_us);
      QCOMPARE(set->isBarSelected(i), i == shown - 1);  // the best is highlighted, only it
    }
    QCOMPARE(view.rankModel()->rowCount(), static_cast<int>(view.result().ranked.size()));
    QVERIFY(view.statusLabel()->text().contains(QString::fromStdString(expected.ranked.front().reason)));
    // The sweep: the top three configurations along M, each point the tuner's own prediction, and
    // at least one jump of more than 5% between neighbouring M (a wave boundary).
    const auto& r = view.result();
    QCOMPARE(r.sweep.size(), std::size_t(3));
    const auto* table = tuner::bundled_tuner_table(gpu);
    QVERIFY(table);
    for (const auto& s : r.sweep) {
      bool jump = false;
      for (std::size_t j = 0; j < s.dims.size(); ++j) {
        const tuner::GemmShape sh{static_cast<int64_t>(s.dims[j]), 4096, 4096, Dtype::bf16};
        QCOMPARE(s.pred_us[j], tuner::evaluate_with_table(*table, gpu, sh, s.config).pred_us);
        if (j > 0 && s.pred_us[j] > 1.05 * s.pred_us[j - 1]) jump = true;
      }
      QVERIFY2(jump, qPrintable(s.label));
    }
    QCOMPARE(view.sweepChartView()->chart()->series().size(), 3);
    // Sweeping N instead gives the same bars and N on the sweep's axis.
    view.setSelection(4096, 4096, 4096, "bf16", "h100-sxm", 'N');
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().sweep_dim, 'N');
    QCOMPARE(bars(view)->barSets().front()->at(shown - 1), expected.ranked.front().pred_us);
  }

  void aStaleResultIsDropped() {
    ui::TunerView view(gpus_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    view.setSelection(1024, 1024, 1024, "bf16", "h100-sxm");
    const quint64 old = view.generation();
    view.setSelection(8192, 8192, 1024, "bf16", "h100-sxm");
    QVERIFY(view.generation() > old);
    ui::TunerViewResult fake;
    fake.shape = {1, 1, 1, Dtype::bf16};
    QVERIFY(!view.applyResult(old, fake));  // an older request's result is not shown
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().shape.M, int64_t(8192));
    QCOMPARE(view.result().shape.N, int64_t(8192));
  }

  void gpusWithoutATableUseTheAnalyticalModelAndErrorsAreShown() {
    ui::TunerView view(gpus_);
    view.setSelection(4096, 4096, 4096, "bf16", "a100-sxm-80gb");
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().method, QString("analytical"));
    QVERIFY(bars(view)->barSets().front()->count() > 0);
    view.setSelection(4096, 4096, 4096, "fp8e4m3", "a100-sxm-80gb");  // Ampere has no fp8 tensor cores
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QVERIFY(view.statusLabel()->text().contains("fp8"));
    QCOMPARE(view.result().method, QString("analytical"));  // the last good result stays
  }
};

QTEST_MAIN(TestTunerView)
#include "test_tuner_view.moc"
