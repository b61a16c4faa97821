#pragma once
// The sources imported into the database (one per file or folder), as the Traces view lists them.
#include <QAbstractTableModel>
#include <QString>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace perfloom::ui {

struct SourceRow {
  int64_t id = 0;
  QString path, format, gpu_id, gpu_name, imported_at;
  int64_t kernels = 0;
  int64_t bytes = 0;
};

// Opens its own connection to `db_path` (call it from a worker). Throws storage::DatabaseError.
std::vector<SourceRow> list_sources(const std::filesystem::path& db_path);
// list_sources on the thread pool; `done(rows, error)` runs on `context`'s thread once it is there
// (`error` empty on success), and not at all once `context` is destroyed.
void list_sources_async(QObject* context, std::filesystem::path db_path,
                        std::function<void(std::vector<SourceRow> rows, QString error)> done);

class SourceListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { File, Format, Gpu, Kernels, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr int SourceIdRole = Qt::UserRole + 2;
  using QAbstractTableModel::QAbstractTableModel;

  void setSources(std::vector<SourceRow> sources);
  const std::vector<SourceRow>& sources() const { return sources_; }
  // The row of a source id, -1 when it is not listed.
  int rowOf(int64_t source_id) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<SourceRow> sources_;
};

}  // namespace perfloom::ui
