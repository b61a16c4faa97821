// The Compare view (ui/compare_view.h) on the real torch.profiler traces of data: the same program
// measured on an H100 and an H200. Its tables show what storage::compare_traces computes.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <memory>

#include "model/families/family_models.h"
#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/trace_compare.h"
#include "ui/compare_view.h"
#include "ui/main_window.h"

using namespace perfloom;

namespace {
const QString kH100 = QStringLiteral(PERFLOOM_SOURCE_DIR "/data/h100-sxm/trace.json.gz");
const QString kH200 = QStringLiteral(PERFLOOM_SOURCE_DIR "/data/h200/trace.json.gz");

// The roofline baseline: a what-if in milliseconds (the learned models take a second to load).
class CompareTestRoofline : public KernelPredictor {
 public:
  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override { return predict_roofline(k, gpu); }
  std::string name() const override { return "roofline-compare-view-test"; }
};

double sortValue(const ui::CompareGroupModel* m, int row, int column) {
  return m->data(m->index(row, column), ui::CompareGroupModel::SortRole).toDouble();
}
}  // namespace

class TestCompareView : public QObject {
  Q_OBJECT
  GpuDatabase gpus_ = GpuDatabase::builtin();
  std::shared_ptr<const KernelPredictor> predictor_ = std::make_shared<CompareTestRoofline>();
  QTemporaryDir dir_;
  std::filesystem::path db_;
  qint64 h100_ = 0, h200_ = 0;

  storage::TraceComparison direct(const storage::CompareSide& a, const storage::CompareSide& b) {
    storage::Database db(db_);
    storage::KernelStore store(db);
    storage::CompareOptions options;
    options.predictor = predictor_.get();
    return storage::compare_traces(store, a, b, options);
  }
  // Waits for the view's job and returns whether it produced a comparison.
  bool settle(ui::CompareView& view) {
    return QTest::qWaitFor([&] { return !view.busy(); }, 10000) && view.result().comparison != nullptr;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("perfloom-tests");
    QCoreApplication::setApplicationName("perfloom-ui-compare-tests");
    QVERIFY(!qEnvironmentVariableIsEmpty("XDG_CONFIG_HOME"));
    QSettings().clear();
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("compare.db").toStdString();
    storage::Database db(db_);
    storage::KernelStore store(db);
    storage::ImportControl control;
    control.gpus = &gpus_;
    h100_ = store.import_file(kH100.toStdString(), control).source_id;
    h200_ = store.import_file(kH200.toStdString(), control).source_id;
  }

  void familyRowIsTheStorageFunctionsNumbers() {
    ui::CompareView view(gpus_, predictor_, nullptr, db_);
    view.selectSources(h100_, h200_);
    QVERIFY(settle(view));
    const storage::TraceComparison c = direct({h100_}, {h200_});
    const ui::CompareGroupModel* m = view.familyModel();
    QCOMPARE(m->rowCount(), static_cast<int>(c.by_family.size()) + 1);  // the families and the total
    const int row = m->rowOf("gemm");
    QVERIFY(row >= 0);
    const storage::CompareGroup& gemm = c.by_family[0];
    QCOMPARE(gemm.key, std::string("gemm"));
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::Kernels), static_cast<double>(gemm.kernels));
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::AUs), gemm.a_us);
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::BUs), gemm.b_us);
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::Ratio), *gemm.ratio());
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::DeltaUs), gemm.delta_us());
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::Share), gemm.share);
    QCOMPARE(m->data(m->index(row, ui::CompareGroupModel::AUs)).toString(), QString("526.5"));
    QCOMPARE(m->data(m->index(row, ui::CompareGroupModel::BUs)).toString(), QString("443.8"));
    QCOMPARE(m->data(m->index(row, ui::CompareGroupModel::DeltaUs)).toString(), QString("-82.8"));
    // The status line names both sides and the matching.
    QVERIFY2(view.statusLabel()->text().contains("155 kernels matched (155 by position, 0 by name)"),
             qPrintable(view.statusLabel()->text()));
    // The kernel-name table: cuBLAS's other split-K GEMM on the H200 is named on B's side.
    const ui::CompareGroupModel* names = view.nameModel();
    const int split = names->rowOf("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT");
    QVERIFY(split >= 0);
    QCOMPARE(names->data(names->index(split, ui::CompareGroupModel::NameB)).toString(),
             QString("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT"));
    QCOMPARE(names->rowCount(), static_cast<int>(c.by_kernel_name.size()) + 1);
  }

  void sortingKeepsTheTotalLast() {
    ui::CompareView view(gpus_, predictor_, nullptr, db_);
    view.selectSources(h100_, h200_);
    QVERIFY(settle(view));
    QTableView* table = view.familyTable();
    auto* proxy = qobject_cast<QSortFilterProxyModel*>(table->model());
    QVERIFY(proxy);
    const int last = proxy->rowCount() - 1;
    for (int column : {int(ui::CompareGroupModel::Key), int(ui::CompareGroupModel::AUs),
                       int(ui::CompareGroupModel::DeltaUs), int(ui::CompareGroupModel::Share)})
      for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
        table->sortByColumn(column, order);
        QCOMPARE(proxy->index(last, ui::CompareGroupModel::Key).data().toString(), QString("TOTAL"));
        // The family rows in order of the column.
        for (int r = 1; r < last; ++r) {
          const double prev = proxy->index(r - 1, column).data(ui::CompareGroupModel::SortRole).toDouble();
          const double here = proxy->index(r, column).data(ui::CompareGroupModel::SortRole).toDouble();
          if (column != ui::CompareGroupModel::Key) QVERIFY(order == Qt::AscendingOrder ? prev <= here : prev >= here);
        }
      }
  }

  void predictedOnAGpuAgainstMeasured() {
    ui::CompareView view(gpus_, predictor_, nullptr, db_);
    view.selectSources(h100_, h200_, "h200");
    QVERIFY(settle(view));
    const auto& c = *view.result().comparison;
    QVERIFY(c.a.predicted);
    QCOMPARE(c.a.gpu_id, std::string("h200"));
    const storage::TraceComparison d = direct({h100_, gpus_.find("h100-sxm"), gpus_.find("h200")}, {h200_});
    const ui::CompareGroupModel* m = view.familyModel();
    const int row = m->rowOf("elementwise");
    QVERIFY(row >= 0);
    const auto it = std::find_if(d.by_family.begin(), d.by_family.end(),
                                 [](const storage::CompareGroup& g) { return g.family == Family::elementwise; });
    QVERIFY(it != d.by_family.end());
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::AUs), it->a_us);
    QCOMPARE(sortValue(m, row, ui::CompareGroupModel::BUs), it->b_us);
    QVERIFY(view.statusLabel()->text().contains("predicted on h200"));
    // Back to measured by the combo.
    view.predictedCombo()->setCurrentIndex(0);
    QVERIFY(settle(view));
    QVERIFY(!view.result().comparison->a.predicted);
  }

  void aTraceAgainstItselfAndAMissingSource() {
    ui::CompareView view(gpus_, predictor_, nullptr, db_);
    view.selectSources(h200_, h200_);
    QVERIFY(settle(view));
    const ui::CompareGroupModel* m = view.familyModel();
    for (int r = 0; r < m->rowCount(); ++r) {
      QCOMPARE(sortValue(m, r, ui::CompareGroupModel::Ratio), 1.0);
      QCOMPARE(sortValue(m, r, ui::CompareGroupModel::DeltaUs), 0.0);
    }
    view.selectSources(h100_, h200_ + 1000);
    QVERIFY(QTest::qWaitFor([&] { return !view.busy(); }, 10000));
    QVERIFY(!view.result().error.isEmpty());
    QVERIFY2(view.statusLabel()->text().contains("not in the database"), qPrintable(view.statusLabel()->text()));
    QCOMPARE(view.familyModel()->rowCount(), 0);
  }

  void modelPassesTheModelTester() {
    ui::CompareGroupModel model(true);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const storage::TraceComparison c = direct({h100_}, {h200_});
    model.setGroups(c.by_kernel_name, c.total);
    QCOMPARE(model.rowCount(), static_cast<int>(c.by_kernel_name.size()) + 1);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void staysWithinTheWindowsMinimumSize() {
    // Kernel names of hundreds of characters in the combos and tables must not widen the window
    // (its minimum is 651 x 460).
    ui::CompareView view(gpus_, predictor_, nullptr, db_);
    view.selectSources(h100_, h200_);
    QVERIFY(settle(view));
    QVERIFY2(view.minimumSizeHint().width() <= 651 && view.minimumSizeHint().height() <= 460,
             qPrintable(QString("%1x%2").arg(view.minimumSizeHint().width()).arg(view.minimumSizeHint().height())));
  }

  void theMainWindowHasACompareTab() { QVERIFY(ui::MainWindow::viewNames().contains("Compare")); }
};

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
