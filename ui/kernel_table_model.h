#pragma once
// The kernels of one imported source as the Traces view lists them: what each kernel is, how long
// it took, its share of the source's time, and the analytical ceiling and bound on the source's
// GPU. load_source_kernels() does the work (in a worker: it opens its own database connection);
// the table model only holds the plain rows it returns.
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom::ui {

struct KernelRow {
  QString name, family, shape;
  double measured_us = 0;              // 0 when the source measured nothing
  double share = 0;                    // of the source's total measured time, 0..1
  std::optional<double> ceiling_us;    // unset: no GPU, no shape, or the model refused the kernel
  QString bound;
};

struct SourceKernels {
  int64_t source_id = 0;
  QString gpu_id;         // the GPU the ceilings are computed for; empty when the source's is unknown
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
  const SourceKernels& kernels() const { return kernels_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  SourceKernels kernels_;
};

// Filters on name, family and shape together, so "gemm" finds GEMMs whatever their kernel name.
// Sorts by comparing the rows' values directly: through QVariant, sorting 300,000 kernels took a
// second on the GUI thread.
class KernelFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

// The given rows (of `model`, in that order) as tab-separated text with a header line, as
// spreadsheets paste it.
QString rows_as_tsv(const QAbstractItemModel& model, const QList<int>& rows);

}  // namespace perfloom::ui
