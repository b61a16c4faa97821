#pragma once
// The GPU database as a table: one row per GPU, the figures users compare GPUs by.
#include <QAbstractTableModel>
#include <vector>

#include "model/gpu_spec.h"

namespace perfloom::ui {

class GpuTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Id,
    Name,
    Architecture,
    ComputeCapability,
    Sms,
    ClockMhz,
    Bf16Tflops,
    Fp8Tflops,
    Tf32Tflops,
    Fp32Tflops,
    MemoryGib,
    BandwidthGbS,
    L2Mib,
    ColumnCount
  };
  // Role that returns the raw number (for sorting and charts) rather than display text.
  static constexpr int SortRole = Qt::UserRole + 1;

  explicit GpuTableModel(QObject* parent = nullptr);
  void setGpus(std::vector<GpuSpec> gpus);
  const GpuSpec* gpuAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<GpuSpec> gpus_;
};

}  // namespace perfloom::ui
