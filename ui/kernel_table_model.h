#pragma once
// The kernels of one imported source as the Traces view lists them: what each kernel is, how long
// it took, its share of the source's time, and the analytical ceiling and bound on the source's
// GPU. load_source_kernels() does the work (in a worker: it opens its own database connection);
// the table model only holds the plain rows it returns.
#include <QAbstractTableModel>
#include <QRegularExpression>
#include <QString>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom::ui {

struct KernelRow {
  QString name, family, shape;
  QString launched_by;               // the framework op that launched the kernel; empty when unknown
  double measured_us = 0;            // 0 when the source measured nothing
  double share = 0;                  // of the source's total measured time, 0..1
  std::optional<double> ceiling_us;  // unset: no GPU, no shape, or the model refused the kernel
  QString bound;
  QString spec;                      // "gemm:bf16:M=..,N=..,K=.." (ui/kernel_spec.h); empty without a whole shape
};

struct SourceKernels {
  int64_t source_id = 0;
  QString gpu_id;  // the GPU the ceilings are computed for; empty when the source's is unknown
  std::vector<KernelRow> rows;
  double total_us = 0;
  bool cancelled = false;
  QString error;
};

// "bf16 M=4096, N=4096, K=4096"; empty when the trace gave no shape.
QString readable_shape(const KernelDesc& k, bool dtype_known, bool shape_known);

// Reads the source's kernels from the database at `db_path` and computes each one's ceiling and
// bound on `gpu` (none: columns stay empty). Stops early, with `cancelled` set, when `cancel` is.
// Never throws: a database error lands in `error`.
SourceKernels load_source_kernels(const std::filesystem::path& db_path, int64_t source_id,
                                  const std::optional<GpuSpec>& gpu, const std::atomic<bool>* cancel = nullptr);

class KernelTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, FamilyColumn, ShapeColumn, MeasuredUs, Share, CeilingUs, Bound, ColumnCount };
  // Numbers for numeric columns (so sorting is numeric), the display text otherwise.
  static constexpr int SortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  void setKernels(SourceKernels kernels);
  const SourceKernels& kernels() const { return *kernels_; }
  // The same rows, shared: a sort or filter job reads them while the GUI thread may swap in others.
  std::shared_ptr<const SourceKernels> sharedKernels() const { return kernels_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const SourceKernels> kernels_ = std::make_shared<const SourceKernels>();
};

// The order the Traces view shows `rows` in: indices into `rows` of those whose name, family or
// shape matches `filter` (an empty pattern keeps all), sorted by `column` (-1: file order) with
// ties in file order. Numeric columns compare as numbers (a missing ceiling below every ceiling),
// text columns case-insensitively. Stops early, handing back nothing, when `cancel` is set.
// Callable from any thread: it is what the sort/filter job of KernelFilterProxy runs.
std::vector<int> kernel_row_order(const std::vector<KernelRow>& rows, const QRegularExpression& filter, int column,
                                  Qt::SortOrder order, const std::atomic<bool>* cancel = nullptr);

// The kernel table as the view shows it: KernelTableModel's rows filtered and sorted. Not a
// QSortFilterProxyModel: that sorts and filters on the GUI thread (0.3 s for 300,000 kernels).
// Here sort() and setFilterRegularExpression() start a job on the thread pool that computes the
// row order (kernel_row_order) tagged with a generation; the GUI thread only swaps the order in,
// and drops a result whose generation is no longer the current one (the user asked for another
// order meanwhile). A new source's rows show in file order at once (none while a filter is set)
// until their order arrives.
class KernelFilterProxy : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit KernelFilterProxy(QObject* parent = nullptr);
  ~KernelFilterProxy() override;

  void setSourceModel(KernelTableModel* model);
  KernelTableModel* sourceModel() const { return source_; }
  // Case-insensitive by convention of the caller (the Traces view); applied as given.
  void setFilterRegularExpression(const QRegularExpression& re);
  const QRegularExpression& filterRegularExpression() const { return filter_; }
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
  int sortColumn() const { return sort_column_; }
  Qt::SortOrder sortOrder() const { return sort_order_; }

  // The source model's row shown at `row`.
  int mapToSource(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  // Each request (sort, filter, new rows) is a new generation; a job's result is applied only
  // when it is still the current one.
  quint64 generation() const { return generation_; }
  // The current order is still being computed (the table shows the previous one meanwhile).
  bool busy() const { return pending_; }
  int jobsRunning() const { return running_; }  // including those whose result will be dropped
  // Applies the order computed for `generation`; false, changing nothing, when it is stale.
  bool applyOrder(quint64 generation, std::vector<int> rows);
  int droppedResults() const { return dropped_; }        // stale results dropped so far
  double lastApplyMs() const { return last_apply_ms_; }  // GUI-thread time of the last applyOrder

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void orderApplied(int rows);

 private:
  void sourceAboutToBeReset();
  void sourceReset();
  void startJob();
  bool identityOrder() const { return filter_.pattern().isEmpty() && sort_column_ < 0; }

  KernelTableModel* source_ = nullptr;
  std::shared_ptr<const SourceKernels> kernels_;  // the rows `rows_` indexes
  std::vector<int> rows_;
  QRegularExpression filter_;
  // The filter `rows_` was computed with (none: no rows yet). A result for the same filter holds
  // the same rows in another order, which the view can take without losing its selection.
  std::optional<QRegularExpression> applied_filter_;
  int sort_column_ = -1;
  Qt::SortOrder sort_order_ = Qt::AscendingOrder;
  quint64 generation_ = 0;
  bool pending_ = false;  // the current generation's order is still being computed
  int running_ = 0;
  int dropped_ = 0;
  double last_apply_ms_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

// The given rows (of `model`, in that order) as tab-separated text with a header line, as
// spreadsheets paste it.
QString rows_as_tsv(const QAbstractItemModel& model, const QList<int>& rows);

}  // namespace perfloom::ui
