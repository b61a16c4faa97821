#pragma once
// The Traces view's "Op tree" (issue 59): a source's framework ops as a profiler's top-down tree,
// aten op -> nested ops -> kernels, each node with its calls, kernels, total and mean measured time
// and share of the source's total (storage::op_tree builds it, identical sibling paths merged).
// OpTreeModel builds the tree in a job on the thread pool, with its own database connection, once
// per source, and filters it in a job too (storage::filter_op_tree: a node shows when its name, an
// ancestor's or a descendant's matches the view's filter); the GUI thread only swaps the result in.
#include <QAbstractItemModel>
#include <QHash>
#include <QRegularExpression>
#include <QString>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "storage/op_tree.h"

namespace perfloom::ui {

struct OpTreeResult {
  std::shared_ptr<const storage::OpTree> full;  // the source's whole tree
  storage::OpTree shown;                        // what the filter keeps of it
  bool cancelled = false;
  QString error;  // why the tree could not be built; an empty tree then
};

// Builds (when `full` is null or of another source) and filters the tree of `source_id` in the
// database at `db_path`. A node counts when `filter` (an empty pattern keeps all) matches its name.
// Never throws: an error lands in `error`. Callable from any thread.
OpTreeResult build_op_tree(const std::filesystem::path& db_path, int64_t source_id,
                           std::shared_ptr<const storage::OpTree> full, const QRegularExpression& filter,
                           const std::atomic<bool>* cancel = nullptr);

class OpTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Name, Calls, Kernels, TotalUs, MeanUs, Share, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // numbers for the number columns
  explicit OpTreeModel(QObject* parent = nullptr);
  ~OpTreeModel() override;

  // Starts a job for this source and filter; `source_id` 0 empties the tree.
  void setInput(const std::filesystem::path& db_path, int64_t source_id, const QRegularExpression& filter);
  bool busy() const { return pending_; }
  int64_t sourceId() const { return shown_.source_id; }
  const storage::OpTree& tree() const { return shown_; }          // what is shown
  const storage::OpTree* fullTree() const { return full_.get(); }  // the source's, the filter aside
  const QString& error() const { return error_; }
  const storage::OpTreeNode* node(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void treeApplied();

 private:
  void apply(quint64 generation, OpTreeResult result);
  void indexParents(const storage::OpTreeNode& n);

  std::shared_ptr<const storage::OpTree> full_;
  storage::OpTree shown_;
  QString error_;
  struct Place {
    const storage::OpTreeNode* parent;
    int row;
  };
  QHash<const storage::OpTreeNode*, Place> places_;  // each shown node's parent and row
  quint64 generation_ = 0;
  bool pending_ = false;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace perfloom::ui
