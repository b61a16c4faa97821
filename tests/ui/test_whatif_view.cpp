#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QSettings>
#include <QStackedBarSeries>
#include <QTemporaryDir>
#include <QValueAxis>
#include <memory>
#include <QtTest>

#include <QLineSeries>
#include <cmath>
#include <filesystem>

#include <sqlite3.h>
#include <QComboBox>
#include <QLineEdit>
#include <QListWidget>
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "storage/database.h"
#include "storage/kernel_list_csv.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"
#include "ui/chart_style.h"
#include "ui/gpu_picker.h"
#include "ui/whatif_models.h"
#include "ui/whatif_view.h"

using namespace perfloom;

namespace {
// The real H100 trace in data (found from this file: the test target has no source-dir define).
QString h100Trace() {
  return QDir(QFileInfo(QStringLiteral(__FILE__)).absolutePath()).absoluteFilePath("../../data/h100-sxm/trace.json.gz");
}
bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }
}  // namespace

class TestWhatIfView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();
  std::shared_ptr<const KernelPredictor> predictor_ = make_default_predictor(nullptr);
  QTemporaryDir dir_;
  QString csv_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("perfloom-tests");
    QCoreApplication::setApplicationName("perfloom-ui-whatif-tests");
    // Settings must never be the user's: ctest points XDG_CONFIG_HOME into the build tree.
    QVERIFY(!qEnvironmentVariableIsEmpty("XDG_CONFIG_HOME"));
    QVERIFY2(QSettings().fileName().startsWith(qEnvironmentVariable("XDG_CONFIG_HOME")),
             qPrintable(QSettings().fileName()));
    QSettings().clear();
    csv_ = dir_.filePath("kernels.csv");
    QFile f(csv_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "op,dtype,M,N,K,T,H\n"
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
    QCOMPARE(model.data(model.index(0, ui::SpeedupTableModel::Speedup), ui::SpeedupTableModel::SortRole).toDouble(),
             1.0);
    QVERIFY(model.data(model.index(1, ui::SpeedupTableModel::Speedup), ui::SpeedupTableModel::SortRole).toDouble() >
            1.0);
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
      if (!picker.list()->item(i)->isHidden())
        QCOMPARE(picker.list()->item(i)->data(Qt::UserRole + 1).toString(), QString("ampere"));
    picker.setCheckedIds({"h100-sxm", "a100-sxm-80gb"});
    QCOMPARE(picker.checkedIds().size(), 2);
  }

  void costPerMillionTokensArithmetic() {
    // $2/GPU-hour, one hour of GPU time for a million tokens: $2 per million tokens.
    QVERIFY(close(*ui::cost_per_million_tokens(2.0, 3600e6, 1e6), 2.0));
    // $3.50/h x 1.8 s / 1000 tokens x 1e6 = $1.75.
    QVERIFY(close(*ui::cost_per_million_tokens(3.5, 1.8e6, 1000), 1.75));
    QVERIFY(close(*ui::cost_per_million_tokens(3.5, 0.9e6, 1000), 0.875));  // half the time, half the cost
    QVERIFY(!ui::cost_per_million_tokens(0, 1.8e6, 1000));                  // no price
    QVERIFY(!ui::cost_per_million_tokens(3.5, 1.8e6, 0));                   // no token count
    QVERIFY(!ui::cost_per_million_tokens(3.5, 0, 1000));                    // nothing predicted

    // The speedup table: the price column is editable per GPU and the cost follows the total.
    ui::SpeedupTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(ui::compute_whatif_file(csv_, {gpus_.get("a100-sxm-80gb"), gpus_.get("h100-sxm")}, *predictor_));
    const QModelIndex price = model.index(1, ui::SpeedupTableModel::PricePerHour);
    const QModelIndex cost = model.index(1, ui::SpeedupTableModel::CostPerMTokens);
    QVERIFY(model.flags(price) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(cost) & Qt::ItemIsEditable));
    QCOMPARE(model.data(cost, ui::SpeedupTableModel::SortRole).toDouble(), -1.0);  // nothing set: no cost
    QVERIFY(model.setData(price, "2.5"));
    QCOMPARE(model.price("h100-sxm"), 2.5);
    QCOMPARE(model.data(cost, ui::SpeedupTableModel::SortRole).toDouble(), -1.0);  // no token count yet
    model.setTokens(4096);
    const double total =
        model.data(model.index(1, ui::SpeedupTableModel::TotalUs), ui::SpeedupTableModel::SortRole).toDouble();
    QVERIFY(
        close(model.data(cost, ui::SpeedupTableModel::SortRole).toDouble(), 2.5 / 3600 * total * 1e-6 / 4096 * 1e6));
    QCOMPARE(
        model.data(model.index(0, ui::SpeedupTableModel::CostPerMTokens), ui::SpeedupTableModel::SortRole).toDouble(),
        -1.0);
    QVERIFY(!model.setData(price, "cheap"));
    QVERIFY(!model.setData(price, "-1"));
    QCOMPARE(model.price("h100-sxm"), 2.5);
    QVERIFY(model.setData(price, "$3"));
    QCOMPARE(model.price("h100-sxm"), 3.0);
    QVERIFY(model.setData(price, 2.5));
    // Prices belong to the GPU, not the row: they survive a new result.
    model.setResult(ui::compute_whatif_file(csv_, {gpus_.get("h100-sxm")}, *predictor_));
    QCOMPARE(
        model.data(model.index(0, ui::SpeedupTableModel::PricePerHour), ui::SpeedupTableModel::SortRole).toDouble(),
        2.5);
  }

  void cleanupTestCase() { QSettings().clear(); }

  // A price per GPU-hour entered in the table is there again in a new view (the next start).
  void pricesSurviveARestart() {
    QSettings().clear();
    {
      ui::WhatIfView view(gpus_, predictor_);
      QVERIFY(view.speedupModel()->prices().isEmpty());
      view.setSelection(csv_, {"a100-sxm-80gb", "h100-sxm"});
      QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 20000);
      ui::SpeedupTableModel* model = view.speedupModel();
      QCOMPARE(model->rowCount(), 2);
      QVERIFY(model->setData(model->index(1, ui::SpeedupTableModel::PricePerHour), "$2.75"));
      QVERIFY(model->setData(model->index(0, ui::SpeedupTableModel::PricePerHour), "1.5"));
      QVERIFY(model->setData(model->index(0, ui::SpeedupTableModel::PricePerHour), ""));  // cleared: forgotten
    }
    QCOMPARE(QSettings().value("whatif/prices/h100-sxm").toDouble(), 2.75);
    QVERIFY(!QSettings().contains("whatif/prices/a100-sxm-80gb"));
    ui::WhatIfView again(gpus_, predictor_);
    QCOMPARE(again.speedupModel()->price("h100-sxm"), 2.75);  // before any result
    QCOMPARE(again.speedupModel()->price("a100-sxm-80gb"), 0.0);
    again.setSelection(csv_, {"h100-sxm"});
    QTRY_VERIFY_WITH_TIMEOUT(!again.busy(), 20000);
    QCOMPARE(again.speedupModel()->index(0, ui::SpeedupTableModel::PricePerHour).data().toString(), QString("$2.75"));
    QCOMPARE(ui::load_gpu_prices(), (QMap<QString, double>{{"h100-sxm", 2.75}}));
    QSettings().clear();
  }

  // A trace's speedups are against its own GPU as measured; a target chosen instead, and the GPUs
  // ticked, are there again in a new view (the next start).
  void traceBaselineIsTheMeasuredGpuAndChoicesSurvive() {
    QSettings().clear();
    QTemporaryDir dir;
    const std::filesystem::path db_path = dir.filePath("baseline.db").toStdString();
    int64_t source_id = 0;
    {
      storage::Database db(db_path);
      storage::ImportControl control;
      control.gpus = &gpus_;
      source_id = storage::KernelStore(db).import_file(h100Trace().toStdString(), control).source_id;
    }
    const QStringList ids{"b200", "h200"};
    {
      ui::WhatIfView view(gpus_, predictor_, nullptr, db_path);
      view.setSelection({}, ids);
      view.selectSource(source_id);
      QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 60000);
      const ui::WhatIfResult& r = view.result();
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      ui::SpeedupTableModel* m = view.speedupModel();
      QCOMPARE(view.baselineCombo()->currentIndex(), 0);
      QVERIFY(view.baselineCombo()->currentText().startsWith("measured on"));
      QVERIFY(close(m->baselineUs(), r.source_measured_us));
      for (int row = 0; row < 2; ++row)
        QVERIFY(close(m->index(row, ui::SpeedupTableModel::Speedup).data(ui::SpeedupTableModel::SortRole).toDouble(),
                      r.source_measured_us / r.gpus[std::size_t(row)].total_us));
      // Against the H200 instead: its own row is 1x.
      const int h200 = view.baselineCombo()->findText(r.gpus[1].gpu_name);
      QVERIFY(h200 > 0);
      view.baselineCombo()->setCurrentIndex(h200);
      QVERIFY(close(m->index(1, ui::SpeedupTableModel::Speedup).data(ui::SpeedupTableModel::SortRole).toDouble(), 1.0));
    }
    QCOMPARE(QSettings().value("whatif/targets").toStringList(), ids);
    ui::WhatIfView again(gpus_, predictor_, nullptr, db_path);
    QCOMPARE(again.gpuPicker()->checkedIds(), ids);
    again.selectSource(source_id);
    QTRY_VERIFY_WITH_TIMEOUT(!again.busy(), 60000);
    QCOMPARE(again.speedupModel()->baselineIndex(), 1);
    QSettings().clear();
  }

  // Large totals read in ms (or s), with the values scaled to the unit the axis names.
  void chartAxisReadsInMsForLargeTotals() {
    ui::WhatIfResult r;
    r.kernels = 2;
    r.families = {"gemm", "elementwise"};
    ui::WhatIfGpu g;
    g.gpu_id = "h200";
    g.gpu_name = "H200";
    g.family_us = {80000, 47000};
    g.total_us = 127000;
    g.lo_us = 119000;
    g.hi_us = 136000;
    r.gpus = {g};
    std::unique_ptr<QChart> chart(ui::build_whatif_chart(r));
    auto* bars = qobject_cast<QStackedBarSeries*>(chart->series().value(0));
    QVERIFY(bars);
    QCOMPARE(bars->barSets()[0]->at(0), 80.0);
    QCOMPARE(bars->barSets()[1]->at(0), 47.0);
    auto* axis = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).value(0));
    QVERIFY(axis);
    QCOMPARE(axis->titleText(), QString("predicted time (ms)"));
    QVERIFY(axis->max() >= 136.0 && axis->max() < 200.0);
    QCOMPARE(ui::time_scale_for(5000).unit, QString("µs"));
    QCOMPARE(ui::time_scale_for(2.5e7).unit, QString("s"));
  }

  void traceModeMatchesTheEngine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path db_path = dir.filePath("whatif.db").toStdString();
    QVERIFY2(QFileInfo::exists(h100Trace()), qPrintable(h100Trace()));
    int64_t source_id = 0;
    {
      storage::Database db(db_path);
      storage::ImportControl control;
      control.gpus = &gpus_;
      source_id = storage::KernelStore(db).import_file(h100Trace().toStdString(), control).source_id;
    }
    QVERIFY(source_id > 0);

    ui::WhatIfView view(gpus_, predictor_, nullptr, db_path);
    QAbstractItemModelTester tester(view.kernelModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QStringList ids{"a100-sxm-80gb", "h100-sxm", "h200"};
    view.setSelection({}, ids);  // no CSV: nothing to compute yet
    view.selectSource(source_id);
    QCOMPARE(view.selectedSourceId(), qint64(source_id));
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 60000);
    // The selector lists the imported source and shows it selected.
    QVERIFY(view.sourceCombo()->findData(qint64(source_id)) > 0);
    QCOMPARE(view.sourceCombo()->currentData().toLongLong(), qint64(source_id));

    const ui::WhatIfResult& r = view.result();
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.source_id, qint64(source_id));
    QCOMPARE(r.source_gpu_id, QString("h100-sxm"));
    QCOMPARE(r.gpus.size(), std::size_t(3));

    // The engine on its own connection, without the cache the view filled.
    storage::Database db(db_path);
    storage::KernelStore store(db);
    std::vector<const GpuSpec*> targets;
    for (const QString& id : ids) targets.push_back(&gpus_.get(id.toStdString()));
    storage::WhatIfOptions options;
    options.use_cache = false;
    const storage::TraceWhatIf t =
        storage::run_trace_whatif(store, source_id, gpus_.get("h100-sxm"), targets, *predictor_, options);
    QCOMPARE(r.kernels, int(t.kernels.size()));
    QVERIFY(r.kernels > 0);
    double measured = 0;
    for (const auto& k : t.kernels) measured += k.measured_us.value_or(0.0);
    QVERIFY(measured > 0);
    QVERIFY(close(r.source_measured_us, measured));
    for (std::size_t i = 0; i < r.gpus.size(); ++i) {
      const ui::WhatIfGpu& g = r.gpus[i];
      QCOMPARE(g.gpu_id, ids[int(i)]);
      QVERIFY2(close(g.total_us, t.targets[i].total.pred_us),
               qPrintable(QString("%1: %2 vs %3").arg(g.gpu_id).arg(g.total_us).arg(t.targets[i].total.pred_us)));
      QVERIFY(close(g.lo_us, t.targets[i].total.lo_us));
      QVERIFY(close(g.hi_us, t.targets[i].total.hi_us));
      QCOMPARE(g.predicted, int(t.targets[i].total.kernels));
      QCOMPARE(g.failed, int(t.targets[i].total.errors));
      double families = 0;
      for (double v : g.family_us) families += v;
      QVERIFY(close(families, g.total_us));  // the stacks add up to the total
      QCOMPARE(g.family_us.size(), std::size_t(r.families.size()));
    }

    // The chart: one stacked set per family with one value per GPU, plus the measured reference.
    auto* bars = qobject_cast<QStackedBarSeries*>(view.chartView()->chart()->series().value(0));
    QVERIFY(bars);
    QCOMPARE(bars->count(), int(r.families.size()));
    QCOMPARE(bars->barSets()[0]->count(), 3);
    bool reference = false;
    for (auto* series : view.chartView()->chart()->series())
      if (auto* line = qobject_cast<QLineSeries*>(series); line && line->name().startsWith("measured on"))
        reference = line->count() == 2 && close(line->at(0).y(), measured);
    QVERIFY(reference);
    QCOMPARE(view.speedupModel()->rowCount(), 3);

    // Measured vs predicted per kernel, on the first target, then on the second.
    ui::KernelCompareModel* km = view.kernelModel();
    QCOMPARE(km->rowCount(), int(t.kernels.size()));
    QCOMPARE(km->target(), 0);
    QCOMPARE(view.targetCombo()->count(), 3);
    auto checkTarget = [&](std::size_t target) {
      double predicted = 0;
      for (int row = 0; row < km->rowCount(); ++row) {
        const auto& cell = t.targets[target].cells[std::size_t(row)];
        const double shown =
            km->data(km->index(row, ui::KernelCompareModel::PredictedUs), ui::KernelCompareModel::SortRole).toDouble();
        QCOMPARE(km->data(km->index(row, ui::KernelCompareModel::Method)).toString(),
                 QString::fromStdString(std::string(storage::whatif_method_name(cell.method))));
        if (cell.method == storage::WhatIfMethod::error) {
          QCOMPARE(shown, -1.0);
          continue;
        }
        QVERIFY(close(shown, cell.pred_us));
        predicted += shown;
        const auto& k = t.kernels[std::size_t(row)];
        if (k.measured_us && *k.measured_us > 0) {
          QVERIFY(close(
              km->data(km->index(row, ui::KernelCompareModel::MeasuredUs), ui::KernelCompareModel::SortRole).toDouble(),
              *k.measured_us));
          QVERIFY(close(
              km->data(km->index(row, ui::KernelCompareModel::Ratio), ui::KernelCompareModel::SortRole).toDouble(),
              cell.pred_us / *k.measured_us));
        }
      }
      QVERIFY(close(predicted, t.targets[target].total.pred_us));
    };
    checkTarget(0);
    view.targetCombo()->setCurrentIndex(1);
    QCOMPARE(km->target(), 1);
    checkTarget(1);
    QVERIFY(
        km->headerData(ui::KernelCompareModel::PredictedUs, Qt::Horizontal).toString().contains(r.gpus[1].gpu_name));

    // Another view on the same database lists the source as soon as it is shown.
    {
      ui::WhatIfView shown(gpus_, predictor_, nullptr, db_path);
      QCOMPARE(shown.sourceCombo()->count(), 1);  // only "Kernel list CSV" until shown
      shown.show();
      QTRY_COMPARE_WITH_TIMEOUT(shown.sourceCombo()->count(), 2, 10000);
      QCOMPARE(shown.sourceCombo()->itemData(1).toLongLong(), qint64(source_id));
      QCOMPARE(shown.selectedSourceId(), qint64(0));
    }

    // Back to the CSV: the kernel table empties, the CSV is predicted as before.
    view.selectSource(0);
    view.setSelection(csv_, {"h100-sxm"});
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 10000);
    QCOMPARE(view.result().source_id, qint64(0));
    QCOMPARE(view.result().kernels, 3);
    QCOMPARE(km->rowCount(), 0);
  }

  // A read-only database is predicted from and never written: no prediction is cached in it.
  void traceModeOnAReadOnlyDatabaseWritesNoCache() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path db_path = dir.filePath("ro.db").toStdString();
    int64_t source_id = 0;
    {
      storage::Database db(db_path);
      storage::ImportControl control;
      control.gpus = &gpus_;
      source_id = storage::KernelStore(db).import_file(h100Trace().toStdString(), control).source_id;
    }
    std::filesystem::permissions(db_path, std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                              std::filesystem::perms::others_read);
    QFile before(QString::fromStdString(db_path.string()));
    QVERIFY(before.open(QIODevice::ReadOnly));
    const QByteArray bytes = before.readAll();
    before.close();

    const ui::WhatIfResult r = ui::compute_trace_whatif(db_path, source_id, gpus_, {gpus_.get("h200")}, *predictor_);
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QVERIFY(r.kernels > 0);
    QCOMPARE(r.gpus.size(), std::size_t(1));
    QVERIFY(r.gpus[0].total_us > 0);
    QFile after(QString::fromStdString(db_path.string()));
    QVERIFY(after.open(QIODevice::ReadOnly));
    QVERIFY(after.readAll() == bytes);
    {
      storage::Database db(db_path);
      QVERIFY(db.read_only());
      sqlite3_stmt* st = nullptr;
      QCOMPARE(sqlite3_prepare_v2(db.handle(), "SELECT count(*) FROM predictions", -1, &st, nullptr), SQLITE_OK);
      QCOMPARE(sqlite3_step(st), SQLITE_ROW);
      QCOMPARE(sqlite3_column_int64(st, 0), sqlite3_int64(0));
      sqlite3_finalize(st);
    }
    std::filesystem::permissions(db_path, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  }

  void unknownSourceIsAnError() {
    QTemporaryDir dir;
    const std::filesystem::path db_path = dir.filePath("empty.db").toStdString();
    const ui::WhatIfResult r = ui::compute_trace_whatif(db_path, 42, gpus_, {gpus_.get("h100-sxm")}, *predictor_);
    QVERIFY(!r.error.isEmpty());
    QVERIFY(r.gpus.empty());
    QVERIFY(!r.kernel_rows);
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
