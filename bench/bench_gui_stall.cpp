// perfloom-bench-gui-stall: does importing a large trace freeze the explorer?
//
// Opens the main window offscreen, writes a synthetic torch.profiler trace of N MB
// (storage/importers/synthetic_trace.h), imports it through the Traces view's real job (the same
// path as a drop) and, until the kernel table is filled, records the longest gap between ticks of a
// 10 ms timer on the GUI thread. A gap much longer than 10 ms is a stall a user would feel. Then
// sorts the filled table (a text and a numeric column, as header clicks do) and filters it (typed
// into the filter box) and reports, for each, the longest stall until the new order is shown, the
// time until then, and how long the GUI thread spent swapping the order in (sorting and filtering
// run in a job). Not part of ctest.
//
//   perfloom-bench-gui-stall [--mb N] [--gzip] [--dir DIR] [--keep]     (default 64 MB)
#include <unistd.h>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QRegularExpression>
#include <QTableView>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "storage/importers/synthetic_trace.h"
#include "ui/kernel_table_model.h"
#include "ui/main_window.h"
#include "ui/traces_view.h"

namespace {

// The longest interval between consecutive ticks of a 10 ms timer, and how many exceeded 50 ms.
class StallMeter : public QObject {
 public:
  explicit StallMeter(QObject* parent) : QObject(parent) {
    timer_.setInterval(10);
    timer_.setTimerType(Qt::PreciseTimer);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const double gap_ms = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
      clock_.restart();
      if (gap_ms > longest_ms_) longest_ms_ = gap_ms;
      if (gap_ms > 50) ++over_50ms_;
      ++ticks_;
    });
  }
  void start() {
    longest_ms_ = 0;
    over_50ms_ = 0;
    ticks_ = 0;
    clock_.start();
    timer_.start();
  }
  void stop() { timer_.stop(); }
  double longest_ms() const { return longest_ms_; }
  int over_50ms() const { return over_50ms_; }
  long ticks() const { return ticks_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  double longest_ms_ = 0;
  int over_50ms_ = 0;
  long ticks_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  uint64_t mb = 64;
  bool gzip = false, keep = false;
  std::filesystem::path dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc)
      mb = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--gzip")
      gzip = true;
    else if (a == "--keep")
      keep = true;
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else {
      std::cerr << "usage: perfloom-bench-gui-stall [--mb N] [--gzip] [--dir DIR] [--keep]\n";
      return 2;
    }
  }
  const std::filesystem::path work = dir / ("perfloom-gui-stall-" + std::to_string(::getpid()));
  std::filesystem::create_directories(work);
  // Offscreen, and settings of its own: the benchmark must not touch the user's.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString((work / "config").string()));
  QApplication app(argc, argv);
  QApplication::setOrganizationName("perfloom-bench");
  QApplication::setApplicationName("perfloom-bench-gui-stall");

  const std::filesystem::path trace = work / (gzip ? "trace.json.gz" : "trace.json");
  QElapsedTimer writing;
  writing.start();
  const perfloom::storage::SyntheticTraceStats stats = perfloom::storage::write_synthetic_trace(trace, mb << 20, gzip);
  std::printf("wrote %s: %.1f MB, %llu kernels in %.1f s\n", trace.c_str(),
              static_cast<double>(stats.bytes) / 1048576.0, static_cast<unsigned long long>(stats.kernels),
              static_cast<double>(writing.elapsed()) / 1000.0);

  perfloom::ui::MainWindow window(perfloom::GpuDatabase::builtin(), work / "bench.db");
  window.show();
  perfloom::ui::TracesView* view = window.tracesView();
  // Let the window settle (its first jobs, the first paint) before measuring.
  QElapsedTimer settle;
  settle.start();
  while (view->busy() || settle.elapsed() < 500) QApplication::processEvents(QEventLoop::AllEvents, 50);

  StallMeter meter(&app);
  QElapsedTimer clock;
  double import_s = 0, table_s = 0;
  int rows = 0;
  QString error;
  QObject::connect(view, &perfloom::ui::TracesView::importFinished, &app, [&](const perfloom::ui::ImportOutcome& o) {
    import_s = static_cast<double>(clock.nsecsElapsed()) / 1e9;
    if (!o.error.isEmpty() || o.cancelled) {
      error = o.error.isEmpty() ? o.summary : o.error;
      app.quit();
    }
  });
  QObject::connect(view, &perfloom::ui::TracesView::kernelsLoaded, &app, [&](qint64, int n) {
    table_s = static_cast<double>(clock.nsecsElapsed()) / 1e9;
    rows = n;
    app.quit();
  });
  meter.start();
  clock.start();
  view->importFiles({QString::fromStdString(trace.string())});
  app.exec();
  meter.stop();
  const double longest = meter.longest_ms();

  if (!error.isEmpty()) {
    std::cerr << "perfloom-bench-gui-stall: " << error.toStdString() << "\n";
    return 1;
  }
  // Sorting and filtering the filled table, the way the user does it; the meter runs throughout.
  perfloom::ui::KernelFilterProxy* proxy = view->kernelProxy();
  struct Step {
    const char* what;
    double longest_ms, until_ms, apply_ms;
    int rows;
    long ticks;
  };
  std::vector<Step> steps;
  auto measure = [&](const char* what, const std::function<void()>& trigger) {
    QMetaObject::Connection done =
        QObject::connect(proxy, &perfloom::ui::KernelFilterProxy::orderApplied, &app, [&app] { app.quit(); });
    meter.start();
    clock.restart();
    trigger();
    if (proxy->busy() || view->filterEdit()->text() != proxy->filterRegularExpression().pattern()) app.exec();
    const double until_ms = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    // 50 ms more: the repaint after the swap belongs to the step, and a step that took less than a
    // tick still gets its gap measured (the first tick's gap covers the request and the swap).
    QTimer::singleShot(50, &app, [&app] { app.quit(); });
    app.exec();
    meter.stop();
    QObject::disconnect(done);
    steps.push_back({what, meter.longest_ms(), until_ms, proxy->lastApplyMs(), proxy->rowCount(), meter.ticks()});
  };
  QTableView* table = view->kernelTable();
  measure("sort by kernel name (header click)",
          [&] { table->sortByColumn(perfloom::ui::KernelTableModel::Name, Qt::AscendingOrder); });
  measure("sort by measured time, descending",
          [&] { table->sortByColumn(perfloom::ui::KernelTableModel::MeasuredUs, Qt::DescendingOrder); });
  measure("filter \"gemm\" typed (300 ms debounce)", [&] { view->filterEdit()->setText("gemm"); });
  measure("filter cleared", [&] { view->filterEdit()->clear(); });

  const double mb_read = static_cast<double>(stats.bytes) / 1048576.0;
  std::printf("import through the Traces view: %.1f MB%s in %.2f s (%.1f MB/s), %d kernels\n", mb_read,
              gzip ? " (compressed)" : "", import_s, mb_read / import_s, rows);
  std::printf("kernel table filled (ceilings on the source's GPU) after %.2f s\n", table_s);
  std::printf("longest GUI-thread stall: %.1f ms (10 ms timer, %ld ticks, %d gaps over 50 ms)\n", longest,
              meter.ticks(), meter.over_50ms());
  double worst = 0;
  for (const Step& st : steps) {
    std::printf(
        "%s: shown after %.0f ms, %d rows; GUI thread swapping the order in: %.2f ms; longest GUI-thread stall: %.1f "
        "ms (%ld ticks)\n",
        st.what, st.until_ms, st.rows, st.apply_ms, st.longest_ms, st.ticks);
    worst = std::max(worst, st.longest_ms);
  }
  std::printf("longest GUI-thread stall while sorting and filtering %d rows: %.1f ms\n", rows, worst);
  if (!keep)
    std::filesystem::remove_all(work);
  else
    std::printf("kept %s\n", work.c_str());
  return 0;
}
