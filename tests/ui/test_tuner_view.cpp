#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include <QScatterSeries>
#include <cmath>
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/sim/llm_config.h"
#include "model/tuner/moe_tuner.h"
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

  // Mixtral-8x7B's experts at TP 1 (perfloom tune --moe 8,14336,4096,2 --dtype bf16 --gpu h200).
  static constexpr tuner::MoeShape kMixtral{8, 14336, 4096, 2};

  // The view in fused-MoE mode on Mixtral-8x7B's experts, bf16, H200, its job done.
  void showMixtral(ui::TunerView& view) const {
    view.setMoeSelection(kMixtral.E, kMixtral.N, kMixtral.H, kMixtral.topk, "bf16", "h200");
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QVERIFY2(view.moeResult().error.isEmpty(), qPrintable(view.moeResult().error));
  }

  static std::string readFile(const std::filesystem::path& path) {
    std::ifstream is(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(is), std::istreambuf_iterator<char>()};
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

  // Fused-MoE mode: the table is tuner::tune_moe's ranking at the token count selected (the function
  // `perfloom tune --moe` calls), the chart each token count's first against vLLM's default.
  void moeModeRanksAsTuneMoeDoes() {
    ui::TunerView view(gpus_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    showMixtral(view);
    QCOMPARE(view.kernel(), ui::TunerKernel::moe);
    QCOMPARE(view.kernelCombo()->currentText(), QString("Fused MoE"));
    const auto expected =
        tuner::tune_moe(kMixtral, tuner::MoeDtype::bf16, gpus_.get("h200"), tuner::vllm_moe_token_counts());
    const auto& r = view.moeResult();
    QCOMPARE(r.gpu_id, QString("h200"));
    QCOMPARE(r.tokens.size(), expected.size());
    QCOMPARE(view.moeTokensCombo()->count(), static_cast<int>(expected.size()));
    const ui::MoeRankModel* model = view.moeRankModel();
    for (int64_t tokens : {int64_t{64}, int64_t{4096}}) {
      QVERIFY(view.setMoeTokens(tokens));
      QCOMPARE(view.moeTokens(), tokens);
      const auto it = std::find_if(expected.begin(), expected.end(), [&](const auto& t) { return t.tokens == tokens; });
      QVERIFY(it != expected.end());
      const tuner::MoeCandidate& best = it->ranked.front();
      QCOMPARE(model->rowCount(), static_cast<int>(it->ranked.size()));
      auto cell = [&](int column, int role = Qt::DisplayRole) { return model->data(model->index(0, column), role); };
      QCOMPARE(cell(ui::MoeRankModel::BlockM).toInt(), best.config.block_m);
      QCOMPARE(cell(ui::MoeRankModel::BlockN).toInt(), best.config.block_n);
      QCOMPARE(cell(ui::MoeRankModel::BlockK).toInt(), best.config.block_k);
      QCOMPARE(cell(ui::MoeRankModel::GroupM).toInt(), best.config.group_m);
      QCOMPARE(cell(ui::MoeRankModel::Warps).toInt(), best.config.num_warps);
      QCOMPARE(cell(ui::MoeRankModel::Stages).toInt(), best.config.num_stages);
      QCOMPARE(cell(ui::MoeRankModel::PredUs, ui::MoeRankModel::SortRole).toDouble(), best.pred_us);
      QCOMPARE(cell(ui::MoeRankModel::PredUs).toString(), QString::number(best.pred_us, 'f', 2));
      QCOMPARE(cell(ui::MoeRankModel::Reason).toString().toStdString(), best.reason);
      QCOMPARE(cell(ui::MoeRankModel::VsDefault, ui::MoeRankModel::SortRole).toDouble(),
               it->engine_default.pred_us / best.pred_us);
      QVERIFY(view.statusLabel()->text().contains(QString("Best at %1 tokens").arg(tokens)));
    }
    QVERIFY(!view.setMoeTokens(5));  // not one of vLLM's counts
    // The chart: each token count's first, vLLM's default, and the selected count marked.
    const QList<QAbstractSeries*> series = view.moeChartView()->chart()->series();
    QCOMPARE(series.size(), 3);
    auto* tuned = qobject_cast<QLineSeries*>(series[0]);
    auto* fallback = qobject_cast<QLineSeries*>(series[1]);
    QVERIFY(tuned && fallback);
    QCOMPARE(tuned->count(), static_cast<int>(expected.size()));
    for (int i = 0; i < tuned->count(); ++i) {
      const auto& t = expected[static_cast<std::size_t>(i)];
      QCOMPARE(tuned->at(i), QPointF(static_cast<double>(t.tokens), t.ranked.front().pred_us));
      QCOMPARE(fallback->at(i), QPointF(static_cast<double>(t.tokens), t.engine_default.pred_us));
    }
    QCOMPARE(qobject_cast<QXYSeries*>(series[2])->at(0), QPointF(4096, expected.back().ranked.front().pred_us));
    ui::MoeRankModel tested;
    QAbstractItemModelTester tester(&tested, QAbstractItemModelTester::FailureReportingMode::QtTest);
    tested.setResult(expected.front());
    QCOMPARE(tested.rowCount(), static_cast<int>(expected.front().ranked.size()));
  }

  void moeErrorsAreShownAndKeepTheLastRanking() {
    ui::TunerView view(gpus_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    showMixtral(view);
    QVERIFY(view.vllmConfigButton()->isEnabled());
    view.setMoeSelection(8, 14336, 4096, 9, "bf16", "h200");  // top-9 of 8 experts
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QVERIFY2(view.statusLabel()->text().contains("topk 9 is above the 8 experts"),
             qPrintable(view.statusLabel()->text()));
    QVERIFY(!view.vllmConfigButton()->isEnabled());
    view.setMoeSelection(8, 14336, 4096, 2, "fp8", "a100-sxm-80gb");  // Ampere has no fp8 tensor cores
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QVERIFY2(view.statusLabel()->text().contains("fp8"), qPrintable(view.statusLabel()->text()));
    QCOMPARE(view.moeResult().gpu_id, QString("h200"));  // the last good result stays
    QCOMPARE(view.moeResult().shape.topk, int64_t(2));
  }

  // "From model": a bundled MoE model's E, N (its expert width over the TP degree), H and top-k.
  void fromModelFillsTheMoeFields() {
    ui::TunerView view(gpus_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const QStringList ids = view.moeModelIds();
    QVERIFY(ids.contains("mixtral-8x7b") && ids.contains("qwen3-30b-a3b") && ids.contains("deepseek-v3"));
    QVERIFY(!ids.contains("llama-3-8b"));  // dense
    for (const QString& id : ids) QVERIFY2(sim::load_llm_config(id.toStdString()).has_moe(), qPrintable(id));
    QCOMPARE(view.fromModelCombo()->count(), ids.size() + 1);  // and "(pick a model)"

    QString error;
    QVERIFY2(view.fillFromModel("mixtral-8x7b", 1, &error), qPrintable(error));
    QCOMPARE(view.moeExpertsBox()->value(), 8);
    QCOMPARE(view.moeIntermediateBox()->value(), 14336);
    QCOMPARE(view.moeHiddenBox()->value(), 4096);
    QCOMPARE(view.moeTopkBox()->value(), 2);
    QVERIFY(view.fillFromModel("mixtral-8x7b", 2, &error));
    QCOMPARE(view.moeIntermediateBox()->value(), 7168);  // per tensor-parallel rank, as vLLM names it
    QVERIFY(!view.busy());                               // in GEMM mode the fields change, nothing is computed

    // Picking a model in the list while in fused-MoE mode fills the fields and ranks them.
    showMixtral(view);
    const sim::LlmConfig qwen = sim::load_llm_config("qwen3-30b-a3b");
    QComboBox* combo = view.fromModelCombo();
    const int row = combo->findText("qwen3-30b-a3b");
    QVERIFY(row > 0);
    view.moeTpBox()->setValue(1);  // no model picked: nothing to fill
    QCOMPARE(view.moeIntermediateBox()->value(), 14336);
    combo->setCurrentIndex(row);
    emit combo->activated(row);
    QCOMPARE(view.moeExpertsBox()->value(), static_cast<int>(qwen.num_experts));
    QCOMPARE(view.moeIntermediateBox()->value(), static_cast<int>(qwen.moe_intermediate));
    QCOMPARE(view.moeHiddenBox()->value(), static_cast<int>(qwen.hidden));
    QCOMPARE(view.moeTopkBox()->value(), static_cast<int>(qwen.experts_per_token));
    QCOMPARE(qwen.num_experts, int64_t(128));
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const auto& r = view.moeResult();
    QCOMPARE(r.shape.E, qwen.num_experts);
    QCOMPARE(r.shape.N, qwen.moe_intermediate);
    QCOMPARE(r.shape.H, qwen.hidden);
    QCOMPARE(r.shape.topk, qwen.experts_per_token);
    view.moeTpBox()->setValue(2);  // the picked model's experts again, at TP 2
    QCOMPARE(view.moeIntermediateBox()->value(), static_cast<int>(qwen.moe_intermediate / 2));
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.moeResult().shape.N, qwen.moe_intermediate / 2);

    // A dense model, a width the TP degree does not divide, an unknown id: refused, saying why.
    QVERIFY(!view.fillFromModel("llama-3-8b", 1, &error));
    QVERIFY2(error.contains("llama-3-8b") && error.contains("dense"), qPrintable(error));
    QVERIFY(!view.fillFromModel("mixtral-8x7b", 3, &error));
    QVERIFY2(error.contains("14336") && error.contains("TP 3"), qPrintable(error));
    QVERIFY(!view.fillFromModel("no-such-model", 1, &error));
    QVERIFY2(error.contains("no-such-model"), qPrintable(error));
    QCOMPARE(view.moeExpertsBox()->value(), static_cast<int>(qwen.num_experts));  // unchanged
  }

  // "Export vLLM config…": the file `perfloom tune --moe ... --out DIR` writes (tuner::write_vllm_moe_config
  // of the same ranking), byte for byte.
  void theVllmConfigExportIsTheFileTuneMoeWrites() {
    ui::TunerView view(gpus_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QString error;
    QVERIFY(!view.saveVllmConfig("/tmp/unused.json", &error));  // nothing ranked in fused-MoE mode yet
    QVERIFY(error.contains("nothing ranked"));
    showMixtral(view);
    QVERIFY(view.vllmConfigButton()->isEnabled());
    const GpuSpec& h200 = gpus_.get("h200");
    QCOMPARE(view.moeResult().config_file, QString("E=8,N=14336,device_name=NVIDIA_H200.json"));
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("perfloom-vllm-config-" + std::to_string(QCoreApplication::applicationPid()));
    std::filesystem::create_directories(dir);
    const std::filesystem::path cli = dir / tuner::vllm_moe_config_file_name(kMixtral, tuner::MoeDtype::bf16, h200);
    const auto ranked = tuner::tune_moe(kMixtral, tuner::MoeDtype::bf16, h200, tuner::vllm_moe_token_counts());
    tuner::write_vllm_moe_config(cli, ranked);
    const std::filesystem::path exported = dir / "exported.json";
    QVERIFY2(view.saveVllmConfig(QString::fromStdString(exported.string()), &error), qPrintable(error));
    const std::string bytes = readFile(exported);
    QCOMPARE(bytes, readFile(cli));
    // What it holds: every vLLM token count, in order, each with its first configuration's six keys.
    QVERIFY(bytes.size() > 2 && bytes.back() == '\n');
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(bytes);
    QCOMPARE(doc.size(), ranked.size());
    std::size_t i = 0;
    for (const auto& [key, value] : doc.items()) {
      const tuner::MoeTokenResult& t = ranked[i++];
      QCOMPARE(key, std::to_string(t.tokens));
      const tuner::MoeConfig& c = t.ranked.front().config;
      QCOMPARE(value.dump(), nlohmann::ordered_json({{"BLOCK_SIZE_M", c.block_m},
                                                     {"BLOCK_SIZE_N", c.block_n},
                                                     {"BLOCK_SIZE_K", c.block_k},
                                                     {"GROUP_SIZE_M", c.group_m},
                                                     {"num_warps", c.num_warps},
                                                     {"num_stages", c.num_stages}})
                                 .dump());
    }
    std::filesystem::remove_all(dir);
    QVERIFY(!view.saveVllmConfig("/nonexistent-perfloom-dir/E=8.json", &error));
    QVERIFY2(error.contains("/nonexistent-perfloom-dir/E=8.json"), qPrintable(error));
  }

  // Back to GEMM: the GEMM inputs, page and ranking as they were.
  void switchingBackToGemmRestoresTheGemmRanking() {
    ui::TunerView view(gpus_);
    view.setSelection(2048, 8192, 4096, "bf16", "h200", 'M');
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const tuner::TuneResult expected = tuner::tune_gemm({2048, 8192, 4096, Dtype::bf16}, gpus_.get("h200"), 12);
    auto sameRanking = [&] {
      const auto& ranked = view.result().ranked;
      if (ranked.size() != expected.ranked.size()) return false;
      for (std::size_t i = 0; i < ranked.size(); ++i)
        if (!(ranked[i].config == expected.ranked[i].config) || ranked[i].pred_us != expected.ranked[i].pred_us)
          return false;
      return view.rankModel()->rowCount() == static_cast<int>(ranked.size()) &&
             bars(view)->barSets().front()->at(bars(view)->barSets().front()->count() - 1) == ranked.front().pred_us;
    };
    QVERIFY(sameRanking());
    view.setKernel(ui::TunerKernel::moe);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.moeResult().shape.E, int64_t(8));  // the default inputs: Mixtral-8x7B's
    QVERIFY(view.statusLabel()->text().contains("Best at"));
    QVERIFY(!view.timingPlanButton()->isVisibleTo(&view));
    QVERIFY(view.vllmConfigButton()->isVisibleTo(&view));
    view.setKernel(ui::TunerKernel::gemm);
    QCOMPARE(view.kernelCombo()->currentText(), QString("GEMM"));
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().shape.M, int64_t(2048));
    QVERIFY(sameRanking());
    QVERIFY(view.statusLabel()->text().contains(QString::fromStdString(expected.ranked.front().reason)));
    QVERIFY(view.timingPlanButton()->isVisibleTo(&view) && view.timingPlanButton()->isEnabled());
    QVERIFY(!view.vllmConfigButton()->isVisibleTo(&view));
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
