// The Plan view: the planner in a background job, the ranked table and what was left out, the Pareto
// chart (one curve per GPU type), Cancel, and a price file's errors. A small space (two GPU types,
// TP 1 and 2, Llama-3.2-1B, a few short requests) and the roofline predictor keep it quick and
// deterministic.
#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFile>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <set>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/llm_config.h"
#include "ui/export_chart_command.h"
#include "ui/plan_view.h"

using namespace perfloom;

namespace {
const QString kWorkload = "poisson:rate=1,n=16,input=256,output=32,seed=1";
const QString kSla = "ttft_p90=1000,tpot_p90=50";
const QStringList kGpus = {"h100-sxm", "a100-sxm-80gb"};

std::unique_ptr<ui::PlanView> small_view(const GpuDatabase& gpus) {
  auto view = std::make_unique<ui::PlanView>(gpus, std::make_shared<RooflinePredictor>());
  view->setTpDegrees({1, 2});
  view->setMaxNumSeqs(8);  // the Pareto sweep: concurrency 1, 2, 4, 8
  return view;
}

// Llama-3.2-1B on the H100 and A100 at 6 requests/s, up to 2 GPUs, as the tests below plan it.
ui::PlanRequest small_request(const GpuDatabase& gpus) {
  ui::PlanRequest req;
  req.model = "llama-3.2-1b";
  req.workload = kWorkload;
  req.sla = kSla;
  req.load = "6req/s";
  req.gpus = {gpus.get("h100-sxm"), gpus.get("a100-sxm-80gb")};
  req.max_gpus = 2;
  return req;
}
}  // namespace

class TestPlanView : public QObject {
  Q_OBJECT
 private slots:
  // The engine settings and disaggregated pools searched as `perfloom plan` does (issue #57).
  void searchesWeightFormatsAndDisaggregatedPools() {
    const GpuDatabase gpus = GpuDatabase::builtin();
    ui::PlanRequest req = small_request(gpus);
    req.tp = {1};
    req.quantizations = "bf16, fp8";
    req.kv_cache_dtypes = "auto,fp8";
    req.disaggregated = true;
    req.predictor = std::make_shared<RooflinePredictor>();
    const ui::PlanViewResult r = ui::run_plan(req, [] { return false; });
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.plan.settings.size(), std::size_t(4));
    bool fp8 = false, pools = false;
    for (const auto& c : r.plan.ranked) {
      fp8 = fp8 || c.d.settings.quantization == "fp8";
      pools = pools || c.d.disaggregated();
    }
    QVERIFY(fp8);
    QVERIFY(pools);
    // The A100 has no fp8 tensor cores for an fp8 KV cache: left out, and the row says with which settings.
    ui::PlanRejectedModel rejected;
    rejected.setResult(r);
    bool said = false;
    for (int row = 0; row < rejected.rowCount(); ++row)
      if (rejected.index(row, 0).data().toString().contains("a100-sxm-80gb TP 1 (") &&
          rejected.index(row, 0).data().toString().contains("fp8 KV cache") &&
          rejected.index(row, 1).data().toString().contains("no fp8 tensor cores"))
        said = true;
    QVERIFY(said);
    // Wide EP for an MoE model.
    req.model = "qwen3-30b-a3b";
    req.quantizations.clear();
    req.kv_cache_dtypes.clear();
    req.disaggregated = false;
    req.wide_ep = true;
    req.gpus = {gpus.get("h100-sxm")};
    req.max_gpus = 4;
    const ui::PlanViewResult w = ui::run_plan(req, [] { return false; });
    QVERIFY2(w.error.isEmpty(), qPrintable(w.error));
    bool grouped = false;
    for (const auto& c : w.plan.ranked) grouped = grouped || c.d.wide_ep;
    QVERIFY(grouped);
  }

  void paretoModeRunsAClosedLoop() {
    QCOMPARE(ui::closed_loop_workload("poisson:rate=3,n=200,lengths=chat,burstiness=2,seed=1"),
             QString("closed:concurrency=1,n=200,lengths=chat,seed=1"));
    QCOMPARE(ui::closed_loop_workload("closed:concurrency=4,n=20"), QString("closed:concurrency=4,n=20"));
  }

  void fillsTheRankedTableAtATargetLoad() {
    const GpuDatabase gpus = GpuDatabase::builtin();
    auto view = small_view(gpus);
    QAbstractItemModelTester tester(view->tableModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester rejected(view->rejectedModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    view->setSelection("llama-3.2-1b", kGpus, kWorkload, kSla, "6req/s", 2);
    QVERIFY(view->busy());
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 20000);
    const ui::PlanViewResult& r = view->result();
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.predictor, QString("roofline"));  // the one it was given
    QVERIFY(r.plan.load.has_value());
    QCOMPARE(r.plan.rate, 6.0);
    QVERIFY(!r.plan.ranked.empty());
    // One row per ranked deployment, the cheapest first, each SLA bound a column of its own.
    ui::PlanTableModel* m = view->tableModel();
    QCOMPARE(m->rowCount(), int(r.plan.ranked.size()));
    QStringList headers;
    for (int c = 0; c < m->columnCount(); ++c) headers << m->headerData(c, Qt::Horizontal).toString();
    QVERIFY2(headers.contains("ttft_p90 (ms)") && headers.contains("tpot_p90 (ms)"), qPrintable(headers.join('|')));
    QCOMPARE(m->index(0, 0).data().toString(), QString::fromStdString(r.plan.ranked[0].d.describe()));
    const int ttft = int(headers.indexOf("ttft_p90 (ms)")), cost = int(headers.indexOf("$/hour"));
    for (int row = 0; row < m->rowCount(); ++row) {
      const plan::Candidate& c = r.plan.ranked[std::size_t(row)];
      QVERIFY(c.feasible);
      QCOMPARE(m->index(row, ttft).data(ui::PlanTableModel::SortRole).toDouble(), c.bound_values[0]);
      QVERIFY(c.bound_values[0] <= 1000 && c.bound_values[1] <= 50);
      if (row > 0 && c.priced && r.plan.ranked[std::size_t(row - 1)].priced)
        QVERIFY(m->index(row, cost).data(ui::PlanTableModel::SortRole).toDouble() >=
                m->index(row - 1, cost).data(ui::PlanTableModel::SortRole).toDouble());
    }
    QCOMPARE(view->rejectedModel()->rowCount(), int(r.plan.rejected.size()));
    for (int row = 0; row < view->rejectedModel()->rowCount(); ++row)
      QVERIFY(!view->rejectedModel()->index(row, 1).data().toString().isEmpty());
    QVERIFY2(view->statusLabel()->text().contains("cheapest"), qPrintable(view->statusLabel()->text()));
    // The chart: one bar per priced deployment, the cheapest on top (the last category).
    QChart* chart = view->chartView()->chart();
    QCOMPARE(chart->series().size(), 1);
    auto* bars = qobject_cast<QHorizontalBarSeries*>(chart->series().front());
    QVERIFY(bars);
    QBarSet* set = bars->barSets().front();
    int priced = 0;
    for (const auto& c : r.plan.ranked) priced += c.priced ? 1 : 0;
    QCOMPARE(set->count(), std::min(priced, 12));
    QCOMPARE(set->at(set->count() - 1), r.plan.ranked.front().usd_per_million_output_tokens);
  }

  void paretoChartHasOneCurvePerGpuType() {
    const GpuDatabase gpus = GpuDatabase::builtin();
    auto view = small_view(gpus);
    view->setSelection("llama-3.2-1b", kGpus, kWorkload, kSla, "", 2);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 20000);
    const ui::PlanViewResult& r = view->result();
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QVERIFY(r.workload.startsWith("closed:"));
    QVERIFY(!r.plan.pareto.empty());
    QCOMPARE(view->tableModel()->rowCount(), int(r.plan.pareto.size()));
    std::set<std::string> types;
    for (const auto& p : r.plan.pareto) types.insert(p.gpu->id);
    QCOMPARE(types.size(), std::size_t(2));
    QChart* chart = view->chartView()->chart();
    QStringList curves;
    for (QAbstractSeries* s : chart->series()) {
      if (s->type() != QAbstractSeries::SeriesTypeLine) continue;
      auto* line = static_cast<QLineSeries*>(s);
      curves << line->name();
      // The curve is the GPU type's front, in x order.
      const std::string id = line->property("gpu_id").toString().toStdString();
      int front = 0;
      for (const auto& p : r.plan.pareto) front += p.gpu->id == id && p.on_front ? 1 : 0;
      QCOMPARE(line->count(), front);
      for (int i = 1; i < line->count(); ++i) QVERIFY(line->at(i).x() >= line->at(i - 1).x());
    }
    QCOMPARE(curves.size(), 2);
    QVERIFY(curves.contains(QString::fromStdString(gpus.get("h100-sxm").name)));
    QVERIFY(curves.contains(QString::fromStdString(gpus.get("a100-sxm-80gb").name)));
    // A point's label names the deployment; a click simulates that point alone.
    const plan::ParetoPoint& p = r.plan.pareto.back();
    const QString label = ui::pareto_point_label(p);
    QVERIFY2(label.contains(QString::fromStdString(p.gpu->name)) && label.contains(QString("TP %1").arg(p.tp)) &&
                 label.contains(QString("concurrency %1").arg(p.concurrency)),
             qPrintable(label));
    if (p.priced) QVERIFY2(label.contains("per M output tokens"), qPrintable(label));
    const plan::ParetoPoint* hit = ui::nearest_pareto_point(r, QString::fromStdString(p.gpu->id),
                                                            QPointF(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu));
    QCOMPARE(hit, &p);
    const QString spec = ui::pareto_point_workload(r, p);
    QVERIFY2(spec.startsWith("closed:") && spec.contains(QString("concurrency=%1").arg(p.concurrency)),
             qPrintable(spec));
    QVERIFY2(spec.contains(QString("n=%1").arg(std::max(16, 4 * p.concurrency))), qPrintable(spec));
    // Clicking a curve's point asks for that deployment in the Simulator view.
    QSignalSpy open(view.get(), &ui::PlanView::openInSimulator);
    for (QAbstractSeries* s : chart->series())
      if (s->type() == QAbstractSeries::SeriesTypeLine) {
        auto* line = static_cast<QLineSeries*>(s);
        emit line->clicked(line->at(line->count() - 1));
        break;
      }
    QCOMPARE(open.count(), 1);
    const QList<QVariant> args = open.takeFirst();
    QCOMPARE(args[0].toString(), QString("llama-3.2-1b"));
    const plan::ParetoPoint* clicked = nullptr;
    for (const auto& q : r.plan.pareto)
      if (QString::fromStdString(q.gpu->id) == args[1].toString() && q.on_front &&
          (!clicked || q.tokens_per_s_per_user > clicked->tokens_per_s_per_user))
        clicked = &q;
    QVERIFY(clicked);
    QCOMPARE(args[2].toInt(), clicked->tp);
    QCOMPARE(args[3].toString(), ui::pareto_point_workload(r, *clicked));
    QCOMPARE(args[4].toString(), QString("vllm"));  // the engine the plan simulated
  }

  void cancelStopsThePlanner() {
    // The hook is asked before each simulation; a true answer stops the search with PlanCancelled.
    const GpuDatabase gpus = GpuDatabase::builtin();
    ui::PlanRequest req = small_request(gpus);
    req.tp = {1, 2};
    req.prices = plan::bundled_prices();
    req.predictor = std::make_shared<RooflinePredictor>();
    int asked = 0;
    QVERIFY_THROWS_EXCEPTION(plan::PlanCancelled, ui::run_plan(req, [&asked] { return ++asked > 2; }));
    QCOMPARE(asked, 3);
    // The view: Cancel right after Plan over every GPU type leaves no result and says so.
    auto view = small_view(gpus);
    view->setSelection("llama-3.2-1b", {}, kWorkload, kSla, "", 8);
    QVERIFY(view->busy());
    view->cancel();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 10000);
    QCOMPARE(view->statusLabel()->text(), QString("Canceled."));
    QCOMPARE(view->tableModel()->rowCount(), 0);
  }

  void exportChartDrawsTheParetoFront() {
    QTemporaryDir dir;
    const QString svg = dir.filePath("plan.svg");
    QCOMPARE(ui::runExportChart({"export-chart", "plan", "--gpu", "h100-sxm,a100-sxm-80gb", "--model", "llama-3.2-1b",
                                 "--workload", "poisson:rate=1,n=8,input=128,output=16,seed=1", "--sla", kSla, "--tp",
                                 "1", "--out", svg}),
             0);
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.contains("tokens/s per user"));
    // Without an SLA there is no plan: an error (exit 1), no file.
    const QString none = dir.filePath("none.svg");
    QCOMPARE(ui::runExportChart({"export-chart", "plan", "--gpu", "h100-sxm", "--model", "llama-3.2-1b", "--workload",
                                 kWorkload, "--out", none}),
             1);
    QVERIFY(!QFile::exists(none));
  }

  void priceFileOverridesAndBadOnesAreNamed() {
    const GpuDatabase gpus = GpuDatabase::builtin();
    QTemporaryDir dir;
    const QString good = dir.filePath("prices.csv"), bad = dir.filePath("bad.csv");
    {
      QFile f(good);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("gpu,usd_per_gpu_hour,source\na100-sxm-80gb,0.05,test\n");
      QFile g(bad);
      QVERIFY(g.open(QIODevice::WriteOnly));
      g.write("gpu,usd_per_gpu_hour\nno-such-gpu,1.0\n");
    }
    const plan::Prices prices = ui::load_prices(gpus, good);
    QCOMPARE(prices.find("a100-sxm-80gb")->usd_per_gpu_hour, 0.05);
    QVERIFY(prices.find("h100-sxm"));  // the bundled rows stay
    auto view = small_view(gpus);
    view->setSelection("llama-3.2-1b", kGpus, kWorkload, kSla, "6req/s", 2, bad);
    QVERIFY(!view->busy());
    QVERIFY2(view->statusLabel()->text().contains("bad.csv") && view->statusLabel()->text().contains("no-such-gpu"),
             qPrintable(view->statusLabel()->text()));
    // At 5 cents an hour the A100 is the cheapest deployment.
    view->setSelection("llama-3.2-1b", kGpus, kWorkload, kSla, "6req/s", 2, good);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 20000);
    QVERIFY2(view->result().error.isEmpty(), qPrintable(view->result().error));
    QVERIFY(!view->result().plan.ranked.empty());
    const plan::Candidate& top = view->result().plan.ranked.front();
    QCOMPARE(QString::fromStdString(top.d.gpu->id), QString("a100-sxm-80gb"));
    QCOMPARE(top.usd_per_hour, 0.05 * top.d.gpus());
    // A bad SLA is an error in the status line, not an empty table.
    view->setSelection("llama-3.2-1b", kGpus, kWorkload, "ttft_p90=fast", "6req/s", 2);
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 20000);
    QVERIFY(!view->result().error.isEmpty());
    QCOMPARE(view->statusLabel()->text(), view->result().error);
  }
};

QTEST_MAIN(TestPlanView)
#include "test_plan_view.moc"
