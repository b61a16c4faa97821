#pragma once
// The Compare view (issue 59): two traces imported into the database side by side, the same program
// measured on two GPUs or, with "predicted on" set for side A, A's what-if on a GPU against B
// measured. Two sortable tables: per kernel family and per kernel name, each with both sides' time,
// B/A, the difference and its share of the total difference, and the kernels only one side has.
// Computed in a background job through storage::compare_traces (what `perfloom compare` prints), on
// the job's own database connection; a result for a selection since changed is dropped.
#include <QAbstractTableModel>
#include <QString>
#include <QWidget>
#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "storage/trace_compare.h"
#include "ui/source_list_model.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace perfloom::ui {

struct CompareViewResult {
  QString error;  // the comparison could not be made: why
  qint64 source_a = 0, source_b = 0;
  QString predicted_on;  // GPU id of side A's what-if; empty: A measured
  std::shared_ptr<const storage::TraceComparison> comparison;
};

// Compares two imported sources on its own connection to `db_path` (call it from a worker). With
// `predicted_on` (a GPU id), side A is the what-if of A on that GPU from the GPU A names. Never
// throws: problems are in `error`.
CompareViewResult compute_comparison(const std::filesystem::path& db_path, qint64 source_a, qint64 source_b,
                                     const QString& predicted_on, const GpuDatabase& gpus,
                                     const KernelPredictor& predictor, const std::atomic<bool>* cancel = nullptr);

// The rows of a comparison per family or per kernel name (storage::CompareGroup), the total last.
class CompareGroupModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Key, NameB, Family, Kernels, AUs, BUs, Ratio, DeltaUs, Share, OnlyA, OnlyB, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  // `by_name`: the first column is the kernel name, else the family.
  explicit CompareGroupModel(bool by_name, QObject* parent = nullptr);
  // The groups, then `total` as the last row (sorting keeps it last).
  void setGroups(std::vector<storage::CompareGroup> groups, storage::CompareGroup total);
  void clear();
  const storage::CompareGroup& group(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  // The row whose key is `key`, -1 when none.
  int rowOf(const QString& key) const;
  bool byName() const { return by_name_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  bool by_name_;
  std::vector<storage::CompareGroup> rows_;  // the groups, the total last
};

class CompareView : public QWidget {
  Q_OBJECT
 public:
  CompareView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr,
              std::filesystem::path db_path = {});
  ~CompareView() override;
  void setDatabasePath(std::filesystem::path db_path);
  const std::filesystem::path& databasePath() const { return db_path_; }

  QComboBox* sourceACombo() const { return source_a_; }
  QComboBox* sourceBCombo() const { return source_b_; }
  QComboBox* predictedCombo() const { return predicted_; }
  CompareGroupModel* familyModel() const { return family_model_; }
  CompareGroupModel* nameModel() const { return name_model_; }
  QTableView* familyTable() const { return family_table_; }
  QTableView* nameTable() const { return name_table_; }
  QLabel* statusLabel() const { return status_; }
  const CompareViewResult& result() const { return result_; }
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0 || sources_running_ > 0; }
  bool applyResult(quint64 generation, const CompareViewResult& r);

 public slots:
  // Compares sources `a` and `b` (ids in the database); `predicted_on` a GPU id for A's what-if,
  // empty for A measured.
  void selectSources(qint64 a, qint64 b, const QString& predicted_on = {});
  void recompute();
  // Re-reads the list of imported sources (also done whenever the view is shown).
  void refreshSources();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void fillSourceCombos(const std::vector<SourceRow>& sources);
  qint64 chosen(QComboBox* combo) const;
  const GpuDatabase& gpus_;
  std::shared_ptr<const GpuDatabase> gpus_copy_;  // shared with workers, which may outlive the view
  std::shared_ptr<const KernelPredictor> predictor_;
  std::filesystem::path db_path_;
  QComboBox* source_a_;
  QComboBox* predicted_;
  QComboBox* source_b_;
  CompareGroupModel* family_model_;
  CompareGroupModel* name_model_;
  QSortFilterProxyModel* family_proxy_;
  QSortFilterProxyModel* name_proxy_;
  QTableView* family_table_;
  QTableView* name_table_;
  QLabel* status_;
  CompareViewResult result_;
  qint64 want_a_ = 0, want_b_ = 0;  // the selection, also before the lists know those sources
  std::shared_ptr<std::atomic<bool>> cancel_;
  quint64 generation_ = 0, sources_generation_ = 0;
  int running_ = 0, sources_running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
