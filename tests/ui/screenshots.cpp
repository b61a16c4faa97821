// Grabs each view of the main window into docs/screenshots/*.png (run under xvfb-run -a or offscreen):
//   perfloom_ui_screenshots OUT_DIR KERNELS.csv
#include <QApplication>
#include <QDir>
#include <QTabWidget>
#include <QTest>

#include "model/gpu_database.h"
#include "ui/bottleneck_view.h"
#include "ui/gpu_view.h"
#include "ui/main_window.h"
#include "ui/plan_view.h"
#include "ui/simulator_view.h"
#include "ui/traces_view.h"
#include "ui/tuner_view.h"
#include "ui/whatif_view.h"

using namespace perfloom;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("perfloom-screenshots");
  const QString out = argc > 1 ? argv[1] : "docs/screenshots";
  const QString csv = argc > 2 ? argv[2] : QString();
  QDir().mkpath(out);
  ui::MainWindow w(GpuDatabase::builtin(), "/tmp/perfloom-screenshots.db");
  w.resize(1280, 780);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return 1;
  auto wait = [](auto* view) {
    for (int i = 0; i < 600 && view->busy(); ++i) QTest::qWait(50);
    QTest::qWait(300);
  };
  w.bottleneckView()->setSelection("gemm:bf16:M=4096,N=4096,K=4096", {"h100-sxm", "a100-sxm-80gb", "b200"});
  w.tabs()->setCurrentWidget(w.bottleneckView());
  wait(w.bottleneckView());
  w.grab().save(out + "/bottleneck.png");
  if (!csv.isEmpty()) {
    w.whatIfView()->setSelection(csv, {"a100-sxm-80gb", "h100-sxm", "h200", "b200", "l40s"});
    w.tabs()->setCurrentWidget(w.whatIfView());
    wait(w.whatIfView());
    w.grab().save(out + "/whatif.png");
  }
  w.simulatorView()->setSelection("llama-3.1-8b", {"h100-sxm", "a100-sxm-80gb", "l40s"}, 1,
                                  "poisson:rate=1,n=100,input=512,output=128,seed=1", "1,2,4,8,16");
  w.tabs()->setCurrentWidget(w.simulatorView());
  wait(w.simulatorView());
  w.grab().save(out + "/simulator.png");
  w.tunerView()->setSelection(4096, 14336, 4096, "bf16", "h100-sxm", 'M');
  w.tabs()->setCurrentWidget(w.tunerView());
  wait(w.tunerView());
  w.grab().save(out + "/tuner.png");
  // The Plan view's Pareto chart (TP 1 and 2, up to 128 clients, to stay within the wait).
  w.planView()->setTpDegrees({1, 2});
  w.planView()->setMaxNumSeqs(128);
  w.planView()->setSelection("llama-3.1-8b", {"h100-sxm", "a100-sxm-80gb"}, "poisson:rate=1,n=200,lengths=chat,seed=1",
                             "ttft_p90=1000,tpot_p90=50", "", 8);
  w.tabs()->setCurrentWidget(w.planView());
  wait(w.planView());
  w.grab().save(out + "/plan.png");
  w.tabs()->setCurrentWidget(w.gpuView());
  QTest::qWait(200);
  w.grab().save(out + "/gpus.png");
  // The Traces view on the project's own H100 trace (already imported on a second run: it is selected).
  w.importFiles({PERFLOOM_SOURCE_DIR "/data/h100-sxm/trace.json.gz"});
  wait(w.tracesView());
  w.grab().save(out + "/traces.png");
  return 0;
}
