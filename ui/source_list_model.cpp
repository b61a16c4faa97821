#include "ui/source_list_model.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QLocale>
#include <QtConcurrent>

#include "storage/database.h"
#include "storage/kernel_store.h"

namespace perfloom::ui {

void list_sources_async(QObject* context, std::filesystem::path db_path,
                        std::function<void(std::vector<SourceRow> rows, QString error)> done) {
  using Result = std::pair<std::vector<SourceRow>, QString>;
  auto* watcher = new QFutureWatcher<Result>(context);
  QObject::connect(watcher, &QFutureWatcher<Result>::finished, context, [watcher, done = std::move(done)] {
    Result r = watcher->result();
    watcher->deleteLater();
    done(std::move(r.first), std::move(r.second));
  });
  watcher->setFuture(QtConcurrent::run([db = std::move(db_path)]() -> Result {
    try {
      return {list_sources(db), {}};
    } catch (const std::exception& e) {
      return {{}, QString::fromUtf8(e.what())};
    }
  }));
}

std::vector<SourceRow> list_sources(const std::filesystem::path& db_path) {
  const auto db = std::make_unique<storage::Database>(db_path);
  storage::KernelStore store(*db);
  std::vector<SourceRow> out;
  for (const storage::SourceRecord& s : store.sources()) {
    SourceRow r;
    r.id = s.id;
    r.path = QString::fromStdString(s.path);
    r.format = QString::fromStdString(s.format);
    r.gpu_id = QString::fromStdString(s.gpu_id);
    r.gpu_name = QString::fromStdString(s.gpu_name);
    r.imported_at = QString::fromStdString(s.imported_at);
    r.kernels = s.kernel_count;
    r.bytes = s.bytes;
    out.push_back(std::move(r));
  }
  return out;
}

void SourceListModel::setSources(std::vector<SourceRow> sources) {
  beginResetModel();
  sources_ = std::move(sources);
  endResetModel();
}

int SourceListModel::rowOf(int64_t source_id) const {
  for (std::size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].id == source_id) return static_cast<int>(i);
  return -1;
}

int SourceListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(sources_.size());
}
int SourceListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SourceListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const SourceRow& s = sources_[static_cast<std::size_t>(index.row())];
  if (role == SourceIdRole) return QVariant::fromValue<qlonglong>(s.id);
  if (role == SortRole && index.column() == Kernels) return QVariant::fromValue<qlonglong>(s.kernels);
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case File:
        return QFileInfo(s.path).fileName();
      case Format:
        return s.format;
      case Gpu:
        return !s.gpu_id.isEmpty() ? s.gpu_id : !s.gpu_name.isEmpty() ? s.gpu_name + tr(" (unknown)") : tr("unknown");
      case Kernels:
        return QLocale().toString(qlonglong(s.kernels));
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() == Kernels) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole)
    return tr("%1\nsource %2, imported %3, %4 bytes%5")
        .arg(s.path)
        .arg(s.id)
        .arg(s.imported_at)
        .arg(s.bytes)
        .arg(s.gpu_name.isEmpty() ? QString() : "\n" + s.gpu_name);
  return {};
}

QVariant SourceListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"file", "format", "GPU", "kernels"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace perfloom::ui
