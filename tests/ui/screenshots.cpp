// Grabs each view of the main window into docs/screenshots/*.png (run under xvfb-run -a or offscreen):
//   perfloom_ui_screenshots OUT_DIR
// The window is 1366 x 768 (the smallest laptop screen the layout must fit); the traces are the
// project's own (data/h100-sxm, data/h200, tests/data/traces), imported into a fresh database.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>

#include "model/gpu_database.h"
#include "ui/bottleneck_view.h"
#include "ui/compare_view.h"
#include "ui/gpu_picker.h"
#include "ui/gpu_view.h"
#include "ui/main_window.h"
#include "ui/plan_view.h"
#include "ui/simulator_view.h"
#include "ui/source_list_model.h"
#include "ui/theme.h"
#include "ui/timeline_view.h"
#include "ui/traces_view.h"
#include "ui/tuner_view.h"
#include "ui/whatif_view.h"

using namespace perfloom;

namespace {
qint64 source_of(ui::TracesView* traces, const QString& file_name) {
  for (const auto& s : traces->sourceModel()->sources())
    if (s.path.endsWith(file_name)) return s.id;
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("perfloom-screenshots");
  const QString out = argc > 1 ? argv[1] : "docs/screenshots";
  QDir().mkpath(out);
  const QString db = QDir::temp().filePath("perfloom-screenshots.db");
  for (const QString& f : {db, db + "-wal", db + "-shm"}) QFile::remove(f);
  ui::MainWindow w(GpuDatabase::builtin(), db.toStdString());
  w.resize(1366, 768);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return 1;
  auto wait = [](auto* view) {
    for (int i = 0; i < 1200 && view->busy(); ++i) QTest::qWait(50);
    QTest::qWait(300);
  };
  auto shot = [&](QWidget* view, const char* name) {
    w.tabs()->setCurrentWidget(view);
    QTest::qWait(200);
    w.grab().save(out + "/" + name);
  };

  // Traces: a Hugging Face Llama-3-8B prefill on an H200, grouped by framework op.
  const QString llama = "llama-3-8b_eager-prefill_b4s1024.json.gz";
  w.importFiles({PERFLOOM_SOURCE_DIR "/data/h100-sxm/trace.json.gz", PERFLOOM_SOURCE_DIR "/data/h200/trace.json.gz",
                 PERFLOOM_SOURCE_DIR "/tests/data/traces/" + llama});
  wait(w.tracesView());
  const qint64 h100 = source_of(w.tracesView(), "h100-sxm/trace.json.gz");
  const qint64 h200 = source_of(w.tracesView(), "h200/trace.json.gz");
  const qint64 hf = source_of(w.tracesView(), llama);
  w.tracesView()->selectSource(hf);
  wait(w.tracesView());
  w.tracesView()->setGroupChoice(ui::TracesView::ByFrameworkOp);
  wait(w.tracesView());
  shot(w.tracesView(), "traces.png");

  // What-if: that trace on other GPUs, against its own measured total.
  w.whatIfView()->gpuPicker()->setCheckedIds({"a100-sxm-80gb", "h100-sxm", "h200", "b200", "l40s"});
  w.openInWhatIf(hf);
  wait(w.whatIfView());
  shot(w.whatIfView(), "whatif.png");

  // Timeline: the same trace measured, and replayed on an H100 below.
  w.tabs()->setCurrentWidget(w.timelineView());
  w.timelineView()->selectSource(hf);
  QSignalSpy loaded(w.timelineView(), &ui::TimelineView::timelineLoaded);
  loaded.wait(30000);
  const int target = w.timelineView()->targetCombo()->findData("h100-sxm");
  if (target >= 0) {
    QSignalSpy predicted(w.timelineView(), &ui::TimelineView::predictionReady);
    w.timelineView()->targetCombo()->setCurrentIndex(target);
    predicted.wait(60000);
  }
  shot(w.timelineView(), "timeline.png");

  // Compare: the same program measured on an H100 and an H200.
  w.compareView()->selectSources(h100, h200);
  wait(w.compareView());
  shot(w.compareView(), "compare.png");

  w.bottleneckView()->setSelection("gemm:bf16:M=4096,N=4096,K=4096", {"h100-sxm", "a100-sxm-80gb", "b200"});
  wait(w.bottleneckView());
  shot(w.bottleneckView(), "bottleneck.png");
  w.simulatorView()->setSelection("llama-3.1-8b", {"h100-sxm", "a100-sxm-80gb", "l40s"}, 1,
                                  "poisson:rate=1,n=100,input=512,output=128,seed=1", "1,2,4,8,16");
  wait(w.simulatorView());
  shot(w.simulatorView(), "simulator.png");
  w.tunerView()->setSelection(4096, 14336, 4096, "bf16", "h100-sxm", 'M');
  wait(w.tunerView());
  shot(w.tunerView(), "tuner.png");
  w.tunerView()->setMoeSelection(8, 14336, 4096, 2, "bf16", "h200");
  wait(w.tunerView());
  shot(w.tunerView(), "tuner-moe.png");
  // The Plan view's Pareto chart (TP 1 and 2, up to 128 clients, to stay within the wait).
  w.planView()->setTpDegrees({1, 2});
  w.planView()->setMaxNumSeqs(128);
  w.planView()->setSelection("llama-3.1-8b", {"h100-sxm", "a100-sxm-80gb"}, "poisson:rate=1,n=200,lengths=chat,seed=1",
                             "ttft_p90=1000,tpot_p90=50", "", 8);
  wait(w.planView());
  shot(w.planView(), "plan.png");
  shot(w.gpuView(), "gpus.png");
  // The dark theme, charts included.
  ui::apply_theme(ui::Theme::Dark);
  QTest::qWait(300);
  shot(w.simulatorView(), "simulator-dark.png");
  ui::apply_theme(ui::Theme::System);
  return 0;
}
