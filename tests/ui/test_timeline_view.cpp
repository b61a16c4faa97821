// The Timeline view (issue 59): its lanes hold the trace's events (ops per CPU thread, kernels per
// stream), the wheel zooms and a drag pans the visible range, a tooltip names an item, the
// predicted lanes appear for a target GPU, and a frame of 100k kernels paints a bounded number of
// marks.
#include <zlib.h>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <nlohmann/json.hpp>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/timeline.h"
#include "ui/main_window.h"
#include "ui/timeline_view.h"
#include "ui/traces_view.h"

using namespace perfloom;

namespace {

const char* kSample = PERFLOOM_SOURCE_DIR "/resources/samples/h100-sxm-llama-trace.json.gz";

std::string gunzip(const char* path) {
  gzFile gz = gzopen(path, "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(gz);
  return out;
}

// The trace's events as counted from its JSON: cpu_op events per thread, kernels per stream.
struct Counts {
  std::map<QString, int> per_lane;
  int kernels = 0, ops = 0;
};
Counts count_sample() {
  Counts c;
  const auto doc = nlohmann::json::parse(gunzip(kSample));
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    if (e.value("cat", "") == "kernel") {
      ++c.per_lane[QString("stream %1").arg(e.at("args").at("stream").get<qint64>())];
      ++c.kernels;
    } else if (e.value("cat", "") == "cpu_op") {
      ++c.per_lane[QString("thread %1").arg(e.at("tid").get<qint64>())];
      ++c.ops;
    }
  }
  return c;
}

}  // namespace

class TestTimelineView : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::filesystem::path db_path_;
  qint64 source_ = 0;
  GpuDatabase gpus_ = GpuDatabase::builtin();
  std::shared_ptr<const KernelPredictor> roofline_ = std::make_shared<RooflinePredictor>();

  // A shown view with the sample trace loaded.
  std::unique_ptr<ui::TimelineView> loadedView() {
    auto v = std::make_unique<ui::TimelineView>(gpus_, roofline_);
    v->targetCombo()->setCurrentIndex(0);  // measured only
    v->setDatabasePath(db_path_);
    v->resize(1000, 600);
    v->show();
    QSignalSpy loaded(v.get(), &ui::TimelineView::timelineLoaded);
    v->selectSource(source_);
    if (loaded.isEmpty()) loaded.wait(5000);
    return v;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_path_ = std::filesystem::path(dir_.path().toStdString()) / "t.db";
    storage::Database db(db_path_);
    storage::KernelStore store(db);
    storage::ImportControl c;
    c.gpus = &gpus_;
    source_ = store.import_file(kSample, c).source_id;
  }

  void lanesHoldTheTracesEventsPerThreadAndStream() {
    auto v = loadedView();
    QVERIFY(v->timeline());
    const Counts want = count_sample();
    ui::TimelineCanvas* c = v->canvas();
    std::map<QString, int> got;
    int kernels = 0, ops = 0;
    for (int l = 0; l < c->laneCount(); ++l) {
      QVERIFY(!c->laneIsPredicted(l));
      got[c->laneLabel(l)] = c->laneItemCount(l);
      (c->laneIsStream(l) ? kernels : ops) += c->laneItemCount(l);
    }
    QCOMPARE(got, want.per_lane);
    QCOMPARE(kernels, want.kernels);
    QCOMPARE(ops, want.ops);
    // Fitted: everything is visible.
    QCOMPARE(c->visibleItemCount(), want.kernels + want.ops);
    QVERIFY(v->statusLabel()->text().contains(QString::number(want.kernels) + " kernels"));
    // Long GPU names and status lines do not widen the main window (its minimum is 651 px).
    QVERIFY2(v->minimumSizeHint().width() < 600, qPrintable(QString::number(v->minimumSizeHint().width())));
  }

  void wheelZoomsAndDragPansTheVisibleRange() {
    auto v = loadedView();
    ui::TimelineCanvas* c = v->canvas();
    const double t0 = c->visibleBegin(), t1 = c->visibleEnd();
    const int all = c->visibleItemCount();
    const double step = c->tickStepUs();
    // Four wheel notches in at the middle: the span shrinks by 1.25^4 around that point.
    const QPointF mid(c->width() * 0.6, 60);
    QWheelEvent wheel(mid, c->mapToGlobal(mid), QPoint(), QPoint(0, 480), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(c, &wheel);
    const double span = c->visibleEnd() - c->visibleBegin();
    QVERIFY(std::abs(span - (t1 - t0) / std::pow(1.25, 4)) < 1e-6 * (t1 - t0));
    QVERIFY(c->visibleBegin() > t0 && c->visibleEnd() < t1);
    QVERIFY(c->visibleItemCount() < all);
    QVERIFY(c->tickStepUs() < step);  // finer ticks
    // A drag to the right by 100 px shows earlier times, by 100 px worth of the span.
    const double b0 = c->visibleBegin();
    QTest::mousePress(c, Qt::LeftButton, Qt::NoModifier, QPoint(400, 80));
    QMouseEvent move(QEvent::MouseMove, QPointF(500, 80), c->mapToGlobal(QPointF(500, 80)), Qt::NoButton,
                     Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(c, &move);
    QTest::mouseRelease(c, Qt::LeftButton, Qt::NoModifier, QPoint(500, 80));
    const double per_px = span / (c->width() - 150);
    QVERIFY(std::abs((b0 - c->visibleBegin()) - 100 * per_px) < 1e-6 * span);
    // Zooming far in leaves a handful of items; Fit shows them all again.
    c->zoomAt(c->width() / 2.0, 1000);
    QVERIFY(c->visibleItemCount() < all / 10);
    c->fit();
    QCOMPARE(c->visibleItemCount(), all);
  }

  void tooltipNamesTheKernelItsDurationAndLaunchingOp() {
    auto v = loadedView();
    ui::TimelineCanvas* c = v->canvas();
    const storage::Timeline* t = v->timeline();
    int lane = -1;
    for (int l = 0; l < c->laneCount(); ++l)
      if (c->laneIsStream(l)) lane = l;
    QVERIFY(lane >= 0);
    // Zoomed onto the first kernel, its middle is under the cursor.
    const storage::TimelineKernel& k = t->kernels.front();
    c->setVisibleRange(k.start_us - k.dur_us, k.start_us + 2 * k.dur_us);
    const double x = 150 + (c->width() - 150) * 0.5;
    // The lane's row: search down the canvas for the tooltip (rows' heights are the canvas's).
    QString tip;
    for (int y = 30; y < c->height() && tip.isEmpty(); y += 4) {
      const QString at = c->toolTipAt(QPoint(static_cast<int>(x), y));
      if (at.contains("stream")) tip = at;
    }
    QVERIFY2(tip.startsWith(QString::fromStdString(t->text(k.name)).left(40)), qPrintable(tip));
    QVERIFY2(tip.contains("launched by " + QString::fromStdString(t->text(k.launched_by))), qPrintable(tip));
    QVERIFY2(tip.contains("duration"), qPrintable(tip));
  }

  void predictedLanesAppearBesideTheMeasuredOnes() {
    auto v = loadedView();
    QSignalSpy ready(v.get(), &ui::TimelineView::predictionReady);
    v->targetCombo()->setCurrentIndex(v->targetCombo()->findData("a100-sxm-80gb"));
    QVERIFY(ready.wait(10000));
    QCOMPARE(ready.at(0).at(1).toString(), QString("a100-sxm-80gb"));
    ui::TimelineCanvas* c = v->canvas();
    std::map<QString, int> measured, predicted;
    for (int l = 0; l < c->laneCount(); ++l) {
      if (!c->laneIsStream(l)) continue;
      QString label = c->laneLabel(l);
      if (c->laneIsPredicted(l)) {
        label = label.section(" · ", 0, 0);
        predicted[label] = c->laneItemCount(l);
      } else {
        measured[label] = c->laneItemCount(l);
      }
    }
    QCOMPARE(predicted, measured);
    QVERIFY(v->predicted()->predicted_span_us > 0);
    // Back to measured only: the predicted lanes go.
    v->targetCombo()->setCurrentIndex(0);
    for (int l = 0; l < c->laneCount(); ++l) QVERIFY(!c->laneIsPredicted(l));
  }

  void aFrameOf100kKernelsPaintsAtMostAMarkPerPixelPerRow() {
    auto t = std::make_shared<storage::Timeline>();
    t->texts = {"", "gemm_kernel", "aten::mm"};
    for (int i = 0; i < 100000; ++i) {
      storage::TimelineKernel k;
      k.kernel_id = i + 1;
      k.seq = i;
      k.stream = i % 2 ? 7 : 13;
      k.start_us = i * 5.0;
      k.dur_us = 4.0;
      k.name = 1;
      k.launched_by = 2;
      k.family = i % 3 ? Family::gemm : Family::elementwise;
      t->kernels.push_back(k);
    }
    std::stable_sort(t->kernels.begin(), t->kernels.end(),
                     [](const auto& a, const auto& b) { return a.stream < b.stream; });
    t->begin_us = 0;
    t->end_us = 500000;
    ui::TimelineCanvas c;
    c.resize(1000, 300);
    c.setTimelines(t, nullptr, QString());
    QCOMPARE(c.laneCount(), 2);
    QCOMPARE(c.laneItemCount(0) + c.laneItemCount(1), 100000);
    QElapsedTimer timer;
    timer.start();
    c.grab();
    const qint64 ms = timer.elapsed();
    QVERIFY2(c.lastPaintedMarks() <= 2 * (1000 - 150 + 2), qPrintable(QString::number(c.lastPaintedMarks())));
    QVERIFY(c.lastPaintedMarks() > 100);
    QVERIFY2(ms < 500, qPrintable(QString::number(ms) + " ms"));
    // Zoomed in to 50 kernels a stream, each is its own box.
    c.setVisibleRange(100000, 100000 + 50 * 10.0);
    c.grab();
    QVERIFY2(c.lastPaintedMarks() >= 100 && c.lastPaintedMarks() <= 104, qPrintable(QString::number(c.lastPaintedMarks())));
  }

  void mainWindowHasTheTimelineTabFollowingTheTracesView() {
    ui::MainWindow w(gpus_, db_path_);
    const int tab = w.tabs()->indexOf(w.timelineView());
    QVERIFY(tab >= 0);
    QCOMPARE(w.tabs()->tabText(tab), QString("Timeline"));
    QVERIFY(ui::MainWindow::viewNames().contains("Timeline"));
    // The source the Traces view loads is the Timeline's, loaded when its tab is shown.
    emit w.tracesView()->kernelsLoaded(source_, 155);
    QCOMPARE(w.timelineView()->sourceId(), source_);
    QSignalSpy loaded(w.timelineView(), &ui::TimelineView::timelineLoaded);
    w.show();
    w.tabs()->setCurrentIndex(tab);
    QVERIFY(loaded.count() > 0 || loaded.wait(5000));
    QCOMPARE(loaded.at(0).at(0).toLongLong(), source_);
  }
};

QTEST_MAIN(TestTimelineView)
#include "test_timeline_view.moc"
