#pragma once
// The Traces view's "Group by" (issue 59): a source's kernels grouped by kernel name or by the
// framework op that launched them, with the count, total and mean measured time and the share of
// the source's total, as a profiler's summary shows them. storage::group_kernels does the grouping;
// group_kernel_rows() feeds it the rows the view already holds, after the view's filter, and
// KernelGroupModel runs that as a job on the thread pool and shows its result.
#include <QAbstractTableModel>
#include <QRegularExpression>
#include <QString>
#include <atomic>
#include <memory>
#include <vector>

#include "storage/kernel_groups.h"
#include "ui/kernel_table_model.h"

namespace perfloom::ui {

struct GroupRow {
  QString key;
  qint64 count = 0;
  double total_us = 0, mean_us = 0;
  double share = 0;  // of the source's total measured time, 0..1
};

struct KernelGroups {
  std::vector<GroupRow> rows;  // the groups shown, by total descending
  int groups_in_source = 0;    // groups of all the source's kernels, the filter aside
  qint64 kernels_shown = 0;    // the kernels in the shown groups
  double total_us = 0;         // the shown groups' total
  bool cancelled = false;
  QString error;  // why the rows could not be grouped; no rows then
};

// Groups `kernels` by `by`. A kernel counts when `filter` (an empty pattern keeps all) matches its
// name, family or shape, or its group key (so a framework op's name finds the op's kernels). Shares
// are of the whole source's total. Stops early, with `cancelled` and no rows, when `cancel` is set.
// Callable from any thread.
KernelGroups group_kernel_rows(const SourceKernels& kernels, storage::GroupBy by, const QRegularExpression& filter,
                               const std::atomic<bool>* cancel = nullptr);

// "850.0 µs", "12.3 ms", "3.21 s": a time in the unit that keeps it short (three or four digits).
QString duration_text(double us);

// The groups as a table. setInput() starts a job on the thread pool (tagged with a generation, as
// KernelFilterProxy's are) and the GUI thread only swaps its result in; a result for an input that
// has been replaced since is dropped. Sorting by a header sorts the groups in place: there is one
// row per distinct key, not per kernel.
class KernelGroupModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Key, Count, TotalUs, MeanUs, Share, ColumnCount };
  static constexpr int SortRole = KernelTableModel::SortRole;
  explicit KernelGroupModel(QObject* parent = nullptr);
  ~KernelGroupModel() override;

  void setInput(std::shared_ptr<const SourceKernels> kernels, storage::GroupBy by, const QRegularExpression& filter);
  storage::GroupBy groupBy() const { return by_; }
  const KernelGroups& groups() const { return groups_; }
  bool busy() const { return pending_; }
  quint64 generation() const { return generation_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

 signals:
  void groupsApplied(int rows);

 private:
  void apply(quint64 generation, KernelGroups groups);
  void sortRows();

  KernelGroups groups_;
  storage::GroupBy by_ = storage::GroupBy::KernelName;
  int sort_column_ = TotalUs;
  Qt::SortOrder sort_order_ = Qt::DescendingOrder;
  quint64 generation_ = 0;
  bool pending_ = false;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace perfloom::ui
