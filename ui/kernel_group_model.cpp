#include "ui/kernel_group_model.h"

#include <QFutureWatcher>
#include <QHash>
#include <QtConcurrent>
#include <algorithm>
#include <deque>
#include <string>

namespace perfloom::ui {

KernelGroups group_kernel_rows(const SourceKernels& kernels, storage::GroupBy by, const QRegularExpression& filter,
                               const std::atomic<bool>* cancel) {
  auto cancelled = [cancel] { return cancel && cancel->load(std::memory_order_relaxed); };
  auto stopped = [] {
    KernelGroups none;
    none.cancelled = true;
    return none;
  };
  KernelGroups out;
  const bool all = filter.pattern().isEmpty();
  QHash<QString, bool> matched;  // matched once per distinct text: a trace repeats its names
  auto matches = [&filter, &matched](const QString& text) {
    auto it = matched.constFind(text);
    if (it == matched.constEnd()) it = matched.insert(text, filter.match(text).hasMatch());
    return *it;
  };
  // Each distinct text converted to UTF-8 once; a deque does not move its strings, so the views
  // handed to group_kernels stay valid.
  std::deque<std::string> texts;
  QHash<QString, std::string_view> utf8;
  auto text_of = [&texts, &utf8](const QString& s) {
    auto it = utf8.constFind(s);
    if (it == utf8.constEnd()) it = utf8.insert(s, texts.emplace_back(s.toStdString()));
    return *it;
  };
  const QString no_op = QString::fromUtf8(storage::kNoFrameworkOp.data(), qsizetype(storage::kNoFrameworkOp.size()));
  QHash<QString, bool> keys;  // every group's key, the filter aside
  std::vector<storage::GroupInput> inputs;
  inputs.reserve(all ? kernels.rows.size() : 0);
  for (std::size_t i = 0; i < kernels.rows.size(); ++i) {
    if ((i & 4095) == 0 && cancelled()) return stopped();
    const KernelRow& r = kernels.rows[i];
    const QString& key = by == storage::GroupBy::KernelName ? r.name : r.launched_by.isEmpty() ? no_op : r.launched_by;
    keys.insert(key, true);
    if (all || matches(r.name) || matches(r.family) || matches(r.shape) || matches(key))
      inputs.push_back({text_of(r.name), text_of(r.launched_by), r.measured_us});
  }
  std::vector<storage::KernelGroup> groups;
  try {
    groups = storage::group_kernels(inputs, by, kernels.total_us);
  } catch (const std::exception& e) {
    KernelGroups refused;
    refused.error = QString("source %1: %2").arg(kernels.source_id).arg(QString::fromUtf8(e.what()));
    return refused;
  }
  out.groups_in_source = static_cast<int>(keys.size());
  out.rows.reserve(groups.size());
  for (const storage::KernelGroup& g : groups) {
    out.rows.push_back({QString::fromStdString(g.key), g.count, g.total_us, g.mean_us, g.share});
    out.kernels_shown += g.count;
    out.total_us += g.total_us;
  }
  if (cancelled()) return stopped();
  return out;
}

QString duration_text(double us) {
  const auto number = [](double v) { return QString::number(v, 'f', v < 10 ? 2 : 1); };
  if (us < 1000) return number(us) + " µs";
  if (us < 1e6) return number(us / 1e3) + " ms";
  return number(us / 1e6) + " s";
}

KernelGroupModel::KernelGroupModel(QObject* parent) : QAbstractTableModel(parent) {}

KernelGroupModel::~KernelGroupModel() {
  // The job holds its own share of the rows and never touches the model; it only needs to stop.
  if (cancel_) *cancel_ = true;
}

void KernelGroupModel::setInput(std::shared_ptr<const SourceKernels> kernels, storage::GroupBy by,
                                const QRegularExpression& filter) {
  const quint64 generation = ++generation_;
  if (cancel_) *cancel_ = true;  // its result would be dropped anyway
  cancel_.reset();
  if (by != by_) {
    by_ = by;
    emit headerDataChanged(Qt::Horizontal, Key, Key);
  }
  if (!kernels || kernels->rows.empty()) {
    apply(generation, {});
    return;
  }
  pending_ = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  using Result = std::shared_ptr<KernelGroups>;
  auto* watcher = new QFutureWatcher<Result>(this);
  connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    apply(generation, std::move(*watcher->result()));
  });
  // The pattern travels as text: each job compiles its own expression.
  watcher->setFuture(QtConcurrent::run([kernels = std::move(kernels), by, pattern = filter.pattern(),
                                        options = filter.patternOptions(), cancel = cancel_] {
    return std::make_shared<KernelGroups>(
        group_kernel_rows(*kernels, by, QRegularExpression(pattern, options), cancel.get()));
  }));
}

void KernelGroupModel::apply(quint64 generation, KernelGroups groups) {
  if (generation != generation_) return;
  pending_ = false;
  cancel_.reset();
  beginResetModel();
  groups_ = std::move(groups);
  sortRows();
  endResetModel();
  emit groupsApplied(static_cast<int>(groups_.rows.size()));
}

void KernelGroupModel::sortRows() {
  auto less = [column = sort_column_](const GroupRow& a, const GroupRow& b) {
    switch (column) {
      case Key:
        return QString::compare(a.key, b.key, Qt::CaseInsensitive) < 0;
      case Count:
        return a.count < b.count;
      case MeanUs:
        return a.mean_us < b.mean_us;
      default:  // the total and the share order alike
        return a.total_us < b.total_us;
    }
  };
  auto& rows = groups_.rows;
  // Stable from the grouping's order (total descending, then key), whichever way the header points.
  if (sort_order_ == Qt::AscendingOrder)
    std::stable_sort(rows.begin(), rows.end(), less);
  else
    std::stable_sort(rows.begin(), rows.end(), [&less](const GroupRow& a, const GroupRow& b) { return less(b, a); });
}

void KernelGroupModel::sort(int column, Qt::SortOrder order) {
  // -1 (no indicator): the grouping's own order, by total descending.
  sort_column_ = column >= 0 && column < ColumnCount ? column : TotalUs;
  sort_order_ = column >= 0 && column < ColumnCount ? order : Qt::DescendingOrder;
  emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
  sortRows();
  emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

int KernelGroupModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(groups_.rows.size());
}
int KernelGroupModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelGroupModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const GroupRow& g = groups_.rows[static_cast<std::size_t>(index.row())];
  const auto us = [](double v) { return QString::number(v, 'f', v < 10 ? 2 : 1); };
  if (role == SortRole) {
    switch (index.column()) {
      case Key:
        return g.key;
      case Count:
        return g.count;
      case TotalUs:
        return g.total_us;
      case MeanUs:
        return g.mean_us;
      default:
        return g.share;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Key:
        return g.key;
      case Count:
        return QString::number(g.count);
      case TotalUs:
        return us(g.total_us);
      case MeanUs:
        return us(g.mean_us);
      default:
        return QString::number(100.0 * g.share, 'f', 2);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Key) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == Key) return g.key;
  return {};
}

QVariant KernelGroupModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == Key) return by_ == storage::GroupBy::KernelName ? tr("kernel name") : tr("framework op");
  static const char* names[] = {"", "count", "total (µs)", "mean (µs)", "share (%)"};
  return section > 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace perfloom::ui
