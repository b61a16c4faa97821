#include "ui/whatif_models.h"

#include <QSettings>

namespace perfloom::ui {

std::optional<double> cost_per_million_tokens(double price_per_gpu_hour, double total_us, double tokens) {
  if (!(price_per_gpu_hour > 0) || !(tokens > 0) || !(total_us > 0)) return std::nullopt;
  const double seconds = total_us * 1e-6;
  return price_per_gpu_hour / 3600.0 * seconds / tokens * 1e6;
}

namespace {
constexpr auto kPricesGroup = "whatif/prices";
}  // namespace

QMap<QString, double> load_gpu_prices() {
  QSettings settings;
  settings.beginGroup(kPricesGroup);
  QMap<QString, double> prices;
  for (const QString& id : settings.childKeys()) {
    bool ok = false;
    const double price = settings.value(id).toDouble(&ok);
    if (ok && price > 0) prices[id] = price;
  }
  return prices;
}

void save_gpu_price(const QString& gpu_id, double dollars_per_hour) {
  if (gpu_id.isEmpty()) return;
  QSettings settings;
  settings.beginGroup(kPricesGroup);
  if (dollars_per_hour > 0)
    settings.setValue(gpu_id, dollars_per_hour);
  else
    settings.remove(gpu_id);
}

void KernelCompareModel::setRows(std::shared_ptr<const std::vector<WhatIfKernelRow>> rows, QStringList targets) {
  beginResetModel();
  rows_ = std::move(rows);
  targets_ = std::move(targets);
  target_ = 0;
  endResetModel();
}

void KernelCompareModel::setTarget(int target) {
  if (target < 0 || target >= targets_.size() || target == target_) return;
  target_ = target;
  if (rowCount() > 0) emit dataChanged(index(0, PredictedUs), index(rowCount() - 1, Method));
  emit headerDataChanged(Qt::Horizontal, PredictedUs, PredictedUs);
}

int KernelCompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !rows_ ? 0 : static_cast<int>(rows_->size());
}
int KernelCompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelCompareModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const WhatIfKernelRow& k = (*rows_)[static_cast<std::size_t>(index.row())];
  const WhatIfKernelCell* c = target_ >= 0 && static_cast<std::size_t>(target_) < k.cells.size()
                                  ? &k.cells[static_cast<std::size_t>(target_)]
                                  : nullptr;
  const bool has_pred = c && c->ok;
  std::optional<double> ratio;
  if (has_pred && k.measured_us && *k.measured_us > 0) ratio = c->pred_us / *k.measured_us;
  if (role == SortRole) {
    switch (index.column()) {
      case Name:
        return k.name;
      case Family:
        return k.family;
      case MeasuredUs:
        return k.measured_us ? QVariant(*k.measured_us) : QVariant(-1.0);
      case PredictedUs:
        return has_pred ? QVariant(c->pred_us) : QVariant(-1.0);
      case Ratio:
        return ratio ? QVariant(*ratio) : QVariant(-1.0);
      case Method:
        return c ? c->method : QString();
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name:
        return k.name;
      case Family:
        return k.family;
      case MeasuredUs:
        return k.measured_us ? QString::number(*k.measured_us, 'f', 2) : QString("–");
      case PredictedUs:
        return has_pred ? QString::number(c->pred_us, 'f', 2) : QString("–");
      case Ratio:
        return ratio ? QString::number(*ratio, 'f', 2) + "×" : QString("–");
      case Method:
        return c ? c->method : QString();
    }
  }
  if (role == Qt::TextAlignmentRole &&
      (index.column() == MeasuredUs || index.column() == PredictedUs || index.column() == Ratio))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Name) return k.name;
    if (c && !c->ok && !c->error.isEmpty()) return c->error;
    if (index.column() == Ratio) return tr("predicted on the target over measured on the source GPU");
  }
  return {};
}

QVariant KernelCompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name:
      return tr("kernel");
    case Family:
      return tr("family");
    case MeasuredUs:
      return tr("measured (µs)");
    case PredictedUs:
      return target_ < targets_.size() ? tr("predicted on %1 (µs)").arg(targets_[target_]) : tr("predicted (µs)");
    case Ratio:
      return tr("predicted / measured");
    case Method:
      return tr("method");
  }
  return {};
}

}  // namespace perfloom::ui
