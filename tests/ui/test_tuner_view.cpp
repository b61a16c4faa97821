#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QtTest>
#include <algorithm>
#include <cmath>

#include <QScatterSeries>
#include <cmath>
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/tuner/tuner.h"
#include "ui/chart_panel.h"
#include "ui/simulator_view.h"
#include "ui/tuner_view.h"

using namespace perfloom;

class TestTunerView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();

  // A request ranked with the learned models (GPUs without a tuner table use them).
  ui::TunerRequest learnedRequest(const char* gpu, int sweep_points) const {
    ui::TunerRequest req;
    req.shape = {2048, 8192, 4096, Dtype::bf16};
    req.gpu = gpus_.get(gpu);
    req.sweep_points = sweep_points;
    std::string warning;
    req.predictor = make_default_predictor(&warning);
    return req;
  }

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
    // The 80% range of the shipped table's prediction, and what it means.
    QCOMPARE(model.data(model.index(0, ui::TunerRankModel::Range)).toString(),
             QString("%1–%2").arg(r.ranked.front().lo_us, 0, 'f', 1).arg(r.ranked.front().hi_us, 0, 'f', 1));
    QVERIFY(r.ranked.front().lo_us < r.ranked.front().pred_us && r.ranked.front().pred_us < r.ranked.front().hi_us);
    QVERIFY(
        model.data(model.index(0, ui::TunerRankModel::Range), Qt::ToolTipRole).toString().contains("80% of measured"));
    // The shipped H200 table names each configuration's kernel variant.
    QVERIFY(r.ranked.front().custom_option >= 0);
    QCOMPARE(model.data(model.index(0, ui::TunerRankModel::Option)).toString(),
             QString("c%1").arg(r.ranked.front().custom_option));
    QVERIFY(model.data(model.index(0, ui::TunerRankModel::Option), Qt::ToolTipRole)
                .toString()
                .contains("CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION"));
    model.setResult({});
    QCOMPARE(model.rowCount(), 0);
  }

  void configurationsLikelyRefusedAreGreyedAndSayWhy() {
    // At this GEMM the shipped H200 table lists configurations cuBLASLt refused at similar shapes (CliTune.
    // ConfigurationsLikelyRefusedComeLast): they come last, greyed, their reason's tooltip names the acceptance model.
    ui::TunerRankModel model;
    ui::TunerRequest req;
    req.shape = {5169, 21056, 5632, Dtype::bf16};
    req.gpu = gpus_.get("h200");
    req.top = 100;
    req.sweep_configs = 0;
    const ui::TunerViewResult r = ui::compute_tuner(req);
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QVERIFY(std::isfinite(r.refusal_threshold));
    model.setResult(r);
    int refused = 0;
    for (int row = 0; row < model.rowCount(); ++row) {
      const bool likely = r.ranked[static_cast<std::size_t>(row)].refusal_p >= r.refusal_threshold;
      refused += likely;
      QCOMPARE(model.data(model.index(row, ui::TunerRankModel::Tile), Qt::ForegroundRole).isValid(), likely);
      const QString tip = model.data(model.index(row, ui::TunerRankModel::Reason), Qt::ToolTipRole).toString();
      QCOMPARE(tip.contains("acceptance model"), likely);
      if (likely)
        QVERIFY(
            model.data(model.index(row, ui::TunerRankModel::Reason)).toString().contains("cuBLASLt likely refuses it"));
      else
        QCOMPARE(refused, 0);  // none predicted to run after one predicted refused
    }
    QVERIFY(refused > 0);
  }

  void aTablelessHopperGpuIsRankedAndSweptByTheLearnedPredictor() {
    const ui::TunerRequest req = learnedRequest("h100-pcie", 9);
    QCOMPARE(QString::fromStdString(req.predictor->name()), QString("xgboost"));
    const ui::TunerViewResult r = ui::compute_tuner(req);
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.method, QString("learned"));
    QVERIFY(!r.ranked.empty());
    QVERIFY(!r.sweep.empty());
    for (const auto& s : r.sweep) {
      QCOMPARE(s.pred_us.size(), s.dims.size());
      QVERIFY(s.pred_us.size() >= 2);
      for (double p : s.pred_us) QVERIFY(std::isfinite(p) && p > 0);
    }
    // The swept curve passes through the ranked prediction at the query's own size.
    const auto& first = r.sweep.front();
    for (std::size_t i = 0; i < first.dims.size(); ++i)
      if (first.dims[i] == static_cast<double>(req.shape.M)) QCOMPARE(first.pred_us[i], r.ranked.front().pred_us);
  }

  void aGpuOfAnUnsweptArchitectureIsSweptAtTheLearnedPredictorsLevel() {
    const ui::TunerRequest req =
        learnedRequest("a100-sxm-80gb", 15);  // M: 512, 768, ... 4096, the query's 2048 among them
    QCOMPARE(QString::fromStdString(req.predictor->name()), QString("xgboost"));
    const ui::TunerViewResult r = ui::compute_tuner(req);
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.method, QString("analytical"));
    QVERIFY(r.note.contains("latencies scaled"));
    QVERIFY(!r.ranked.empty() && !r.sweep.empty());
    // The swept curves pass through the ranked (scaled) predictions at the query's own size, and the
    // first configuration there is what the learned predictor answers for the GEMM.
    const double library_us = req.predictor->predict(tuner::gemm_kernel(req.shape, TileConfig{}), req.gpu).pred_us;
    QVERIFY(std::abs(r.ranked.front().pred_us - library_us) <= 1e-9 * library_us);
    bool hit = false;
    for (std::size_t c = 0; c < r.sweep.size(); ++c)
      for (std::size_t i = 0; i < r.sweep[c].dims.size(); ++i)
        if (r.sweep[c].dims[i] == static_cast<double>(req.shape.M)) {
          QVERIFY(std::abs(r.sweep[c].pred_us[i] - r.ranked[c].pred_us) <= 1e-9 * r.ranked[c].pred_us);
          hit = true;
        }
    QVERIFY(hit);
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

  // Charts with many points stay smooth: one helper (chart_panel) bounds what every XY series
  // receives, keeping the extremes; the chart builders with an unbounded point count use it.
  void manyPointsAreDownsampledBeforeTheyReachQt() {
    QList<QPointF> points;
    for (int i = 0; i < 100000; ++i)
      points << QPointF(i, std::sin(i * 0.001) + (i == 54321 ? 50.0 : 0.0) - (i == 777 ? 40.0 : 0.0));
    const QList<QPointF> few = ui::downsample_points(points);
    QVERIFY(few.size() <= ui::kMaxSeriesPoints);
    QVERIFY(few.size() > ui::kMaxSeriesPoints / 2);
    QCOMPARE(few.front(), points.front());
    QCOMPARE(few.back(), points.back());
    QVERIFY(few.contains(points[54321]));  // the spike and the dip survive
    QVERIFY(few.contains(points[777]));
    for (int i = 1; i < few.size(); ++i) QVERIFY(few[i - 1].x() < few[i].x());  // still in x order
    QCOMPARE(ui::downsample_points(points.mid(0, 100)), points.mid(0, 100));    // few points: unchanged
    QCOMPARE(ui::downsample_points(points, 10).size(), 10);

    QLineSeries line;
    ui::set_series_points(&line, points);
    QVERIFY(line.count() <= ui::kMaxSeriesPoints);
    QScatterSeries scatter;
    ui::set_series_points(&scatter, points);
    QVERIFY(scatter.count() <= ui::kMaxSeriesPoints);

    // The tuner's sweep chart with a 100,000-point sweep (steps: twice the points).
    ui::TunerViewResult r;
    r.shape = {4096, 4096, 4096, Dtype::bf16};
    r.gpu_name = "H100";
    ui::TunerSweepSeries sweep;
    sweep.label = "fine";
    for (int i = 1; i <= 100000; ++i) {
      sweep.dims.push_back(i * 16.0);
      sweep.pred_us.push_back(10.0 + std::ceil(i / 1000.0));
    }
    r.sweep = {sweep, sweep};
    std::unique_ptr<QChart> chart(ui::build_tuner_sweep_chart(r));
    QCOMPARE(chart->series().size(), 2);
    for (QAbstractSeries* s : chart->series()) {
      auto* xy = qobject_cast<QXYSeries*>(s);
      QVERIFY(xy);
      QVERIFY2(xy->count() <= ui::kMaxSeriesPoints, qPrintable(QString::number(xy->count())));
      QCOMPARE(xy->points().back(), QPointF(sweep.dims.back(), sweep.pred_us.back()));
    }

    // The simulator's chart with 100,000 request rates on one GPU.
    ui::SimulatorResult sim;
    for (int i = 1; i <= 100000; ++i) {
      ui::SimulatorRun run;
      run.gpu_id = "h100-sxm";
      run.gpu_name = "H100";
      run.rate = i * 0.01;
      run.ttft_ms.p50 = 20 + i * 0.001;
      sim.runs.push_back(run);
    }
    std::unique_ptr<QChart> simChart(ui::build_simulator_chart(sim));
    QCOMPARE(simChart->series().size(), 1);
    QVERIFY(qobject_cast<QXYSeries*>(simChart->series()[0])->count() <= ui::kMaxSeriesPoints);
  }

  // "Export timing plan…": the ranking's first three, each with its custom option, as a collector plan.
  void theTimingPlanIsTheRankingsFirstThreeWithTheirOptions() {
    ui::TunerView view(gpus_);
    view.setSelection(1024, 4096, 4096, "bf16", "h100-sxm", 'M');
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QVERIFY(view.timingPlanButton()->isEnabled());
    const QString path =
        QDir::temp().filePath(QString("perfloom-timing-plan-%1.csv").arg(QCoreApplication::applicationPid()));
    QString error;
    QVERIFY2(view.saveTimingPlan(path, 3, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    f.remove();
    QCOMPARE(lines.size(), 4);
    QVERIFY2(lines[0].endsWith(",heuristic_rank,cublaslt_custom"), qPrintable(lines[0]));
    const auto& ranked = view.result().ranked;
    QVERIFY(ranked.size() >= 3);
    int named = 0;
    for (int i = 0; i < 3; ++i) {
      const auto& c = ranked[static_cast<std::size_t>(i)];
      QVERIFY2(
          lines[i + 1].startsWith(
              QString("gemm,bf16,1024,4096,4096,%1,").arg(QString::fromStdString(tuner::config_to_string(c.config)))),
          qPrintable(lines[i + 1]));
      QVERIFY2(lines[i + 1].contains(QString("\"tune %1\"").arg(i + 1)), qPrintable(lines[i + 1]));
      // The option the variant model names; none (an empty field) for a configuration whose tile was never timed
      // with options (one that only the latency model's best of the whole table brought in).
      QCOMPARE(lines[i + 1].section(',', -1), c.custom_option >= 0 ? QString::number(c.custom_option) : QString());
      named += c.custom_option >= 0;
    }
    QVERIFY(named > 0);
    // A place that cannot be written: refused with the path in the message.
    QVERIFY(!view.saveTimingPlan("/nonexistent-perfloom-dir/plan.csv", 3, &error));
    QVERIFY2(error.contains("/nonexistent-perfloom-dir/plan.csv"), qPrintable(error));
  }

  // A log axis never receives zero: the helper drops what it cannot show (no builder uses a log
  // axis today; any that does fills its series through set_series_points with log_x / log_y).
  void aLogAxisNeverReceivesZero() {
    const QList<QPointF> points{{1, 10}, {2, 0}, {0, 5}, {3, -1}, {4, 100}, {5, std::nan("")}};
    QCOMPARE(ui::log_axis_points(points, false, true), (QList<QPointF>{{1, 10}, {0, 5}, {4, 100}}));
    QCOMPARE(ui::log_axis_points(points, true, true), (QList<QPointF>{{1, 10}, {4, 100}}));
    QCOMPARE(ui::log_axis_points(points, true, false).size(), 4);  // x > 0, y anything but NaN
    QLineSeries line;
    ui::set_series_points(&line, points, false, true);
    QCOMPARE(line.count(), 3);
    for (const QPointF& p : line.points()) QVERIFY(p.y() > 0);
  }
};

QTEST_MAIN(TestTunerView)
#include "test_tuner_view.moc"
