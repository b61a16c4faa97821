#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHorizontalBarSeries>
#include <QImage>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>
#include <iostream>
#include <sstream>

#include "model/bottleneck.h"
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "ui/bottleneck_view.h"
#include "ui/chart_export.h"
#include "ui/export_chart_command.h"
#include "ui/kernel_spec.h"
#include "ui/whatif_view.h"

using namespace perfloom;

namespace {
// Pixels that differ clearly from the white background.
int inkPixels(const QImage& image) {
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      if (c.red() < 200 || c.green() < 200 || c.blue() < 200) ++n;
    }
  return n;
}
}  // namespace

class TestBottleneckView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();
  std::shared_ptr<const KernelPredictor> predictor_ = make_default_predictor(nullptr);

 private slots:
  void parsesKernelSpecs() {
    const KernelDesc k = ui::parse_kernel_spec("gemm:bf16:M=4096,N=2048,K=1024");
    QCOMPARE(k.op, Op::gemm);
    QCOMPARE(k.shape.N, int64_t(2048));
    QCOMPARE(ui::kernel_spec_string(k), QString("gemm:bf16:M=4096,N=2048,K=1024"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ui::parse_kernel_spec("gemm:bf16:M=4096"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ui::parse_kernel_spec("nope:bf16:M=1"));
  }

  void barsMatchTheAnalysisForAnH100Gemm() {
    ui::BottleneckView view(gpus_, predictor_);
    view.setSelection("gemm:bf16:M=4096,N=4096,K=4096", {"h100-sxm"});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const ui::BottleneckResult& r = view.result();
    QCOMPARE(r.gpus.size(), std::size_t(1));
    const GpuSpec& h100 = gpus_.get("h100-sxm");
    const Prediction p = predictor_->predict(ui::parse_kernel_spec("gemm:bf16:M=4096,N=4096,K=4096"), h100);
    const auto& bar = r.gpus[0];
    QVERIFY(bar.error.isEmpty());
    for (int i = 0; i < kPipeCount; ++i)
      QVERIFY(qFuzzyCompare(1.0 + bar.pipe_us[i], 1.0 + p.analysis.cycles_busiest[i] / h100.clock_hz() * 1e6));
    QVERIFY(bar.pipe_us[static_cast<int>(Pipe::tensor)] > 0);
    QCOMPARE(bar.pred_us, p.pred_us);
    QCOMPARE(bar.ceiling_us, p.ceiling_us);
    QVERIFY(bar.headroom.contains("% of its"));
    QVERIFY(bar.headroom.contains("wave"));

    // The chart shows the same numbers: one set for the GPU, the predicted time last.
    auto* series = qobject_cast<QHorizontalBarSeries*>(view.chartView()->chart()->series().value(0));
    QVERIFY(series);
    QCOMPARE(series->count(), 1);
    QBarSet* set = series->barSets()[0];
    QCOMPARE(set->at(set->count() - 1), p.pred_us);
    QCOMPARE(set->at(set->count() - 2), p.ceiling_us);
    QCOMPARE(set->at(0), bar.pipe_us[static_cast<int>(Pipe::tensor)]);
  }

  // The view, export-chart and `perfloom predict --json` (tests/cli/test_cli_one_engine.cpp) show
  // model/bottleneck.h's numbers for the same kernel; the kernel-list what-if its prediction.
  void viewAndExportChartShowTheModelsBottleneck() {
    const QString spec = "gemm:bf16:M=4096,N=4096,K=4096";
    const KernelDesc k = ui::parse_kernel_spec(spec);
    ui::BottleneckView view(gpus_, predictor_);
    view.setSelection(spec, {"h100-sxm", "h200"});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    const ui::BottleneckResult& r = view.result();
    QCOMPARE(r.gpus.size(), std::size_t(2));
    std::vector<std::string> sentences;
    for (const auto& bar : r.gpus) {
      const GpuSpec& gpu = gpus_.get(bar.gpu_id.toStdString());
      const Bottleneck b = bottleneck_of(k, gpu, predictor_->predict(k, gpu));
      QVERIFY(bar.error.isEmpty());
      for (const PipeBusy& pipe : b.pipes) QCOMPARE(bar.pipe_us[static_cast<std::size_t>(pipe.pipe)], pipe.busy_us);
      QCOMPARE(bar.ceiling_us, b.ceiling_us);
      QCOMPARE(bar.pred_us, b.pred_us);
      QCOMPARE(bar.lo_us, b.lo_us);
      QCOMPARE(bar.hi_us, b.hi_us);
      QCOMPARE(bar.bound, b.bound);
      QCOMPARE(bar.headroom, QString::fromStdString(b.headroom));
      QVERIFY2(view.headroomLabel()->text().contains(QString::fromStdString(b.headroom).toHtmlEscaped()),
               qPrintable(view.headroomLabel()->text()));
      sentences.push_back(b.headroom);
    }
    // export-chart prints each GPU's sentence as it draws the same bars.
    QTemporaryDir dir;
    std::ostringstream err;
    std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
    const int rc = ui::runExportChart(
        {"export-chart", "bottleneck", "--gpu", "h100-sxm,h200", "--kernel", spec, "--out", dir.filePath("b.svg")});
    std::cerr.rdbuf(old);
    QCOMPARE(rc, 0);
    for (const std::string& s : sentences) QVERIFY2(err.str().find(s + "\n") != std::string::npos, err.str().c_str());
    // The what-if of a kernel list holding this kernel: its predicted time on each GPU.
    QFile csv(dir.filePath("k.csv"));
    QVERIFY(csv.open(QIODevice::WriteOnly));
    csv.write("op,dtype,M,N,K\ngemm,bf16,4096,4096,4096\n");
    csv.close();
    const ui::WhatIfResult w =
        ui::compute_whatif_file(csv.fileName(), {gpus_.get("h100-sxm"), gpus_.get("h200")}, *predictor_);
    QCOMPARE(w.gpus.size(), std::size_t(2));
    for (const auto& g : w.gpus) QCOMPARE(g.total_us, r.gpus[g.gpu_id == "h100-sxm" ? 0 : 1].pred_us);
  }

  void lateResultForAnOldSelectionIsDropped() {
    ui::BottleneckView view(gpus_, predictor_);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    view.setSelection("gemm:bf16:M=8192,N=8192,K=8192", {"h100-sxm"});
    const quint64 old = view.generation();
    view.setSelection("gemm:bf16:M=128,N=128,K=128", {"a100-sxm-80gb"});
    QVERIFY(view.generation() > old);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    // Both jobs finished; only the newer one is shown.
    QCOMPARE(view.result().kernel, QString("gemm:bf16:M=128,N=128,K=128"));
    QCOMPARE(view.result().gpus.at(0).gpu_id, QString("a100-sxm-80gb"));
    // Delivering the older job's result now changes nothing.
    ui::BottleneckResult stale = ui::compute_bottleneck(ui::parse_kernel_spec("gemm:bf16:M=8192,N=8192,K=8192"),
                                                        {gpus_.get("h100-sxm")}, *predictor_);
    QVERIFY(!view.applyResult(old, stale));
    QCOMPARE(view.result().kernel, QString("gemm:bf16:M=128,N=128,K=128"));
  }

  void exportsPngSvgPdfThatAreNotBlank() {
    const auto r = ui::compute_bottleneck(ui::parse_kernel_spec("gemm:bf16:M=4096,N=4096,K=4096"),
                                          {gpus_.get("h100-sxm"), gpus_.get("a100-sxm-80gb")}, *predictor_);
    std::unique_ptr<QChart> chart(ui::build_bottleneck_chart(r));
    QTemporaryDir dir;
    const QString png = dir.filePath("b.png");
    QString error;
    QVERIFY2(ui::ChartExporter::save(chart.get(), png, QSize(800, 500), 2.0, &error), qPrintable(error));
    QImage image(png);
    QCOMPARE(image.size(), QSize(1600, 1000));
    QVERIFY(inkPixels(image) > 20000);
    // The title is drawn: the band above the plot area (40 px, 80 at 2x) has ink.
    QVERIFY(inkPixels(image.copy(0, 0, 1600, 80)) > 200);
    QVERIFY(ui::ChartExporter::save(chart.get(), dir.filePath("b1.png"), QSize(800, 500), 1.0, &error));
    QCOMPARE(QImage(dir.filePath("b1.png")).size(), QSize(800, 500));
    QVERIFY2(ui::ChartExporter::save(chart.get(), dir.filePath("b.svg"), QSize(800, 500), 1.0, &error),
             qPrintable(error));
    QFile svg(dir.filePath("b.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray svgText = svg.readAll();
    QVERIFY(svgText.contains("<svg"));
    QVERIFY2(ui::ChartExporter::save(chart.get(), dir.filePath("b.pdf"), QSize(800, 500), 1.0, &error),
             qPrintable(error));
    QFile pdf(dir.filePath("b.pdf"));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QVERIFY(pdf.read(5) == "%PDF-");
    QVERIFY(!ui::ChartExporter::save(chart.get(), dir.filePath("b.bmpx"), QSize(800, 500), 1.0, &error));
  }

  void exportSuggestsAFileNameFromWhatIsShown() {
    QCOMPARE(ui::ChartExporter::suggestedFileName("TTFT p50 against request rate: llama-3.1-8b, TP 1", "png", "chart"),
             QString("ttft-p50-against-request-rate-llama-3-1-8b-tp-1.png"));
    QCOMPARE(ui::ChartExporter::suggestedFileName("Prédit : µs", "svg", "chart"), QString("pr-dit-s.svg"));  // non-ASCII letters split words
    QCOMPARE(ui::ChartExporter::suggestedFileName("", "csv", "table"), QString("table.csv"));
    QCOMPARE(ui::ChartExporter::suggestedFileName(":: --", "pdf", "chart"), QString("chart.pdf"));
    const QString longName = ui::ChartExporter::suggestedFileName(QString(500, 'a'), "png", "chart");
    QVERIFY(longName.size() <= 72 + 4);
  }

  void exportChartCommandRendersEveryViewHeadless() {
    QTemporaryDir dir;
    const QString png = dir.filePath("b.png");
    QCOMPARE(ui::runExportChart({"export-chart", "bottleneck", "--gpu", "h100-sxm", "--kernel",
                                 "gemm:bf16:M=4096,N=4096,K=4096", "--scale", "2", "--out", png}),
             0);
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1800, 1120));
    QVERIFY(inkPixels(image) > 20000);
    const QString csv = dir.filePath("k.csv");
    QFile f(csv);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("op,dtype,M,N,K\ngemm,bf16,4096,4096,4096\n");
    f.close();
    QCOMPARE(ui::runExportChart({"export-chart", "whatif", "--gpu", "h100-sxm,b200", "--kernels", csv, "--out",
                                 dir.filePath("w.svg")}),
             0);
    QVERIFY(QFileInfo(dir.filePath("w.svg")).size() > 1000);
    // A profiled trace: imported into --db on the first call, found there by its content on the second.
    const QString trace = QStringLiteral(PERFLOOM_SOURCE_DIR "/resources/samples/h100-sxm-llama-trace.json.gz");
    const QString db = dir.filePath("t.db");
    for (int run = 0; run < 2; ++run) {
      QCOMPARE(ui::runExportChart({"export-chart", "whatif", "--gpu", "h100-sxm,h200", "--trace", trace, "--db", db,
                                   "--out", dir.filePath("t.png")}),
               0);
      QVERIFY(inkPixels(QImage(dir.filePath("t.png"))) > 5000);
    }
    {
      storage::Database database(db.toStdString());
      storage::KernelStore store(database);
      QCOMPARE(static_cast<int>(store.sources().size()), 1);
    }
    // Both inputs, or a file that is no trace: refused.
    QCOMPARE(ui::runExportChart({"export-chart", "whatif", "--gpu", "h200", "--trace", trace, "--kernels", csv,
                                 "--out", png}),
             1);
    QCOMPARE(ui::runExportChart({"export-chart", "whatif", "--gpu", "h200", "--trace", dir.filePath("k.csv"), "--db",
                                 db, "--out", png}),
             1);
    QCOMPARE(ui::runExportChart({"export-chart", "simulator", "--gpu", "h100-sxm", "--model", "llama-3.2-1b",
                                 "--workload", "poisson:rate=1,n=10,input=128,output=16", "--rates", "1,2", "--out",
                                 dir.filePath("s.pdf")}),
             0);
    QVERIFY(QFileInfo(dir.filePath("s.pdf")).size() > 1000);
    // Mistakes are refused with a status, not a crash.
    QCOMPARE(ui::runExportChart({"export-chart", "nosuchview", "--gpu", "h100-sxm", "--out", png}), 2);
    QCOMPARE(ui::runExportChart({"export-chart", "bottleneck", "--gpu", "nosuchgpu", "--kernel",
                                 "gemm:bf16:M=1,N=1,K=1", "--out", png}),
             1);
    QCOMPARE(ui::runExportChart({"export-chart", "bottleneck", "--gpu", "h100-sxm", "--kernel", "gemm:bf16:M=1,N=1,K=1",
                                 "--out", dir.filePath("x.gif")}),
             1);
    // Sizes and scales that are no numbers, or absurd ones, are refused before any drawing.
    for (const QStringList& bad : {QStringList{"--width", "abc"}, QStringList{"--height", "0"},
                                   QStringList{"--width", "99999999999"}, QStringList{"--scale", "x"},
                                   QStringList{"--scale", "1000"}}) {
      QStringList args{"export-chart", "bottleneck", "--gpu", "h100-sxm", "--kernel", "gemm:bf16:M=1,N=1,K=1",
                       "--out", png};
      args << bad;
      QCOMPARE(ui::runExportChart(args), 1);
    }
  }
};

QTEST_MAIN(TestBottleneckView)
#include "test_bottleneck_view.moc"
