#include "ui/op_tree_model.h"

#include <QFont>
#include <QFutureWatcher>
#include <QtConcurrent>

#include "storage/database.h"
#include "ui/kernel_group_model.h"

namespace perfloom::ui {

OpTreeResult build_op_tree(const std::filesystem::path& db_path, int64_t source_id,
                           std::shared_ptr<const storage::OpTree> full, const QRegularExpression& filter,
                           const std::atomic<bool>* cancel) {
  OpTreeResult out;
  auto cancelled = [cancel] { return cancel && cancel->load(std::memory_order_relaxed); };
  try {
    if (!full || full->source_id != source_id) {
      const storage::Database db(db_path);
      full = std::make_shared<const storage::OpTree>(storage::op_tree(db, source_id));
    }
    if (cancelled()) {
      out.cancelled = true;
      return out;
    }
    out.full = full;
    if (filter.pattern().isEmpty()) {
      out.shown = *full;
    } else {
      QHash<QString, bool> matched;  // a merged tree still repeats kernel names under many ops
      out.shown = storage::filter_op_tree(*full, [&](const storage::OpTreeNode& n) {
        const QString name = QString::fromStdString(n.name);
        auto it = matched.constFind(name);
        if (it == matched.constEnd()) it = matched.insert(name, filter.match(name).hasMatch());
        return *it;
      });
    }
  } catch (const std::exception& e) {
    out = {};
    out.shown.source_id = source_id;
    out.error = QString("source %1: %2").arg(source_id).arg(QString::fromUtf8(e.what()));
  }
  return out;
}

OpTreeModel::OpTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

OpTreeModel::~OpTreeModel() {
  if (cancel_) *cancel_ = true;
}

void OpTreeModel::setInput(const std::filesystem::path& db_path, int64_t source_id, const QRegularExpression& filter) {
  const quint64 generation = ++generation_;
  if (cancel_) *cancel_ = true;
  cancel_.reset();
  if (source_id == 0) {
    apply(generation, {});
    return;
  }
  pending_ = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  using Result = std::shared_ptr<OpTreeResult>;
  auto* watcher = new QFutureWatcher<Result>(this);
  connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    apply(generation, std::move(*watcher->result()));
  });
  std::shared_ptr<const storage::OpTree> full = full_ && full_->source_id == source_id ? full_ : nullptr;
  watcher->setFuture(QtConcurrent::run([db_path, source_id, full = std::move(full), pattern = filter.pattern(),
                                        options = filter.patternOptions(), cancel = cancel_] {
    return std::make_shared<OpTreeResult>(
        build_op_tree(db_path, source_id, full, QRegularExpression(pattern, options), cancel.get()));
  }));
}

void OpTreeModel::apply(quint64 generation, OpTreeResult result) {
  if (generation != generation_) return;
  pending_ = false;
  cancel_.reset();
  if (result.cancelled) return;
  beginResetModel();
  full_ = std::move(result.full);
  shown_ = std::move(result.shown);
  error_ = result.error;
  places_.clear();
  indexParents(shown_.root);
  endResetModel();
  emit treeApplied();
}

void OpTreeModel::indexParents(const storage::OpTreeNode& n) {
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    places_.insert(&n.children[i], {&n, static_cast<int>(i)});
    indexParents(n.children[i]);
  }
}

const storage::OpTreeNode* OpTreeModel::node(const QModelIndex& index) const {
  return index.isValid() ? static_cast<const storage::OpTreeNode*>(index.internalPointer()) : &shown_.root;
}

QModelIndex OpTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= ColumnCount || row < 0) return {};
  const storage::OpTreeNode* p = node(parent);
  if (row >= static_cast<int>(p->children.size())) return {};
  return createIndex(row, column, const_cast<storage::OpTreeNode*>(&p->children[static_cast<std::size_t>(row)]));
}

QModelIndex OpTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const auto it = places_.constFind(node(child));
  if (it == places_.constEnd() || it->parent == &shown_.root) return {};
  const auto up = places_.constFind(it->parent);
  if (up == places_.constEnd()) return {};
  return createIndex(up->row, 0, const_cast<storage::OpTreeNode*>(it->parent));
}

int OpTreeModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(node(parent)->children.size());
}

int OpTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant OpTreeModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const storage::OpTreeNode& n = *node(index);
  const double mean = n.calls > 0 ? n.total_us / double(n.calls) : 0;
  const auto us = [](double v) { return QString::number(v, 'f', v < 10 ? 2 : 1); };
  if (role == SortRole) {
    switch (index.column()) {
      case Name:
        return QString::fromStdString(n.name);
      case Calls:
        return qint64(n.calls);
      case Kernels:
        return qint64(n.kernels);
      case TotalUs:
        return n.total_us;
      case MeanUs:
        return mean;
      default:
        return n.share;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name:
        return QString::fromStdString(n.name);
      case Calls:
        return QString::number(n.calls);
      case Kernels:
        return QString::number(n.kernels);
      case TotalUs:
        return us(n.total_us);
      case MeanUs:
        return us(mean);
      default:
        return QString::number(100.0 * n.share, 'f', 2);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Name) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == Name)
    return n.kind == storage::OpTreeKind::Kernel
               ? tr("kernel %1: %2 launches, %3").arg(QString::fromStdString(n.name)).arg(n.calls).arg(duration_text(n.total_us))
               : tr("%1: %2 calls, %3 kernels, %4")
                     .arg(QString::fromStdString(n.name))
                     .arg(n.calls)
                     .arg(n.kernels)
                     .arg(duration_text(n.total_us));
  if (role == Qt::FontRole && index.column() == Name && n.kind == storage::OpTreeKind::Kernel) {
    QFont f;
    f.setItalic(true);
    return f;
  }
  return {};
}

QVariant OpTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"op / kernel", "calls", "kernels", "total (µs)", "mean (µs)", "share (%)"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace perfloom::ui
