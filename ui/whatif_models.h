#pragma once
// The what-if view's per-kernel table (a trace's kernels: measured on the source GPU against the
// prediction on one target) and the cost arithmetic of the speedup table. Plain values and models,
// no widget logic, so tests and the CLI can use them.
#include <QAbstractTableModel>
#include <QMap>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

namespace perfloom::ui {

// One kernel of a trace on one target GPU (storage::WhatIfCell as plain Qt values).
struct WhatIfKernelCell {
  double pred_us = 0;
  bool ok = false;  // false: the method is "error" and `error` says why
  QString method, error;
};

// One kernel of a trace: its measurement on the source GPU and one cell per target, in target order.
struct WhatIfKernelRow {
  QString name, family;
  std::optional<double> measured_us;
  std::vector<WhatIfKernelCell> cells;
};

// The dollars that `tokens` tokens cost on a GPU rented at `price_per_gpu_hour` when the workload
// takes `total_us`, scaled to a million tokens: price / 3600 x seconds / tokens x 1e6. Nothing when
// the price or the token count is not set (<= 0) or the time is not positive.
std::optional<double> cost_per_million_tokens(double price_per_gpu_hour, double total_us, double tokens);

// The $/GPU-hour prices the user entered in the What-if view, by GPU id, kept in QSettings
// ("whatif/prices/<gpu id>") so that they are there on the next start.
QMap<QString, double> load_gpu_prices();
// Stores one price; <= 0 forgets it.
void save_gpu_price(const QString& gpu_id, double dollars_per_hour);

// Measured vs predicted per kernel, for the target picked with setTarget() (the first by default).
class KernelCompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Family, MeasuredUs, PredictedUs, Ratio, Method, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  void setRows(std::shared_ptr<const std::vector<WhatIfKernelRow>> rows, QStringList targets);
  void setTarget(int target);
  int target() const { return target_; }
  const QStringList& targets() const { return targets_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const std::vector<WhatIfKernelRow>> rows_;
  QStringList targets_;
  int target_ = 0;
};

}  // namespace perfloom::ui
