#include "ui/kernel_table_model.h"

#include <QRegularExpression>

#include "model/families/family_models.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/database.h"

namespace perfloom::ui {

namespace {
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

QString format_us(double us) { return QString::number(us, 'f', us < 10 ? 2 : 1); }

// The measurement taken on the source's own GPU (the first one: importers store one per kernel).
double measured_us(const storage::StoredKernel& k) {
  for (const auto& m : k.measurements)
    if (m.gpu_id.empty()) return m.latency_us;
  return k.measurements.empty() ? 0.0 : k.measurements.front().latency_us;
}
}  // namespace

QString readable_shape(const KernelDesc& k, bool dtype_known, bool shape_known) {
  QString text;
  if (dtype_known) text = qs(dtype_name(k.dtype));
  if (!shape_known) return text;
  QStringList dims;
  for (std::string_view column : shape_columns(k.op)) {
    const int64_t v = shape_value(k.shape, column);
    if (v > 0) dims << qs(column) + "=" + QString::number(v);
  }
  if (!k.shape.seqlens.empty()) dims << QString("seqlens×%1").arg(k.shape.seqlens.size());
  if (dims.isEmpty()) return text;
  return text.isEmpty() ? dims.join(", ") : text + " " + dims.join(", ");
}

SourceKernels load_source_kernels(const std::filesystem::path& db_path, int64_t source_id,
                                  const std::optional<GpuSpec>& gpu, const std::atomic<bool>* cancel) {
  SourceKernels out;
  out.source_id = source_id;
  if (gpu) out.gpu_id = QString::fromStdString(gpu->id);
  try {
    const auto db = std::make_unique<storage::Database>(db_path);
    storage::KernelStore store(*db);
    // Stopping inside visit_kernels would need an exception through SQLite's stepping; checking
    // every row and skipping the work is cheap and leaves the statement to finish normally.
    store.visit_kernels(source_id, [&](storage::StoredKernel&& k) {
      if (out.cancelled || (cancel && cancel->load(std::memory_order_relaxed))) {
        out.cancelled = true;
        return;
      }
      KernelRow row;
      row.name = QString::fromStdString(k.desc.name.empty() ? std::string(op_name(k.desc.op)) : k.desc.name);
      row.family = qs(family_name(k.family));
      row.shape = readable_shape(k.desc, k.dtype_known, k.shape_known);
      row.measured_us = measured_us(k);
      out.total_us += row.measured_us;
      if (gpu && k.shape_known) {
        try {
          const Analysis a = analyze_kernel(k.desc, *gpu);
          row.ceiling_us = a.ceiling_us;
          row.bound = qs(pipe_name(a.bound));
        } catch (const std::exception&) {
          // The model refuses this kernel on this GPU (unsupported dtype, incomplete shape): no ceiling.
        }
      }
      out.rows.push_back(std::move(row));
    });
    if (out.cancelled) out.rows.clear();
    if (out.total_us > 0)
      for (KernelRow& r : out.rows) r.share = r.measured_us / out.total_us;
  } catch (const std::exception& e) {
    out.rows.clear();
    out.error = QString("%1: source %2: %3").arg(QString::fromStdString(db_path.string())).arg(source_id).arg(QString::fromUtf8(e.what()));
  }
  return out;
}

void KernelTableModel::setKernels(SourceKernels kernels) {
  beginResetModel();
  kernels_ = std::move(kernels);
  endResetModel();
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(kernels_.rows.size());
}
int KernelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const KernelRow& r = kernels_.rows[static_cast<std::size_t>(index.row())];
  const bool numeric = index.column() == MeasuredUs || index.column() == Share || index.column() == CeilingUs;
  if (role == SortRole && numeric) {
    switch (index.column()) {
      case MeasuredUs: return r.measured_us;
      case Share: return r.share;
      default: return r.ceiling_us ? *r.ceiling_us : -1.0;  // no ceiling sorts below every ceiling
    }
  }
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case Name: return r.name;
      case FamilyColumn: return r.family;
      case ShapeColumn: return r.shape;
      case MeasuredUs: return format_us(r.measured_us);
      case Share: return QString::number(100.0 * r.share, 'f', 2);
      case CeilingUs: return r.ceiling_us ? format_us(*r.ceiling_us) : QString();
      case Bound: return r.bound;
    }
  }
  if (role == Qt::TextAlignmentRole && numeric) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Name) return r.name;
    if (index.column() == CeilingUs && !r.ceiling_us)
      return kernels_.gpu_id.isEmpty() ? tr("The source's GPU is unknown") : tr("No shape, or the model does not cover this kernel");
    if (index.column() == CeilingUs || index.column() == Bound)
      return tr("Analytical lower bound and limiting pipe on %1").arg(kernels_.gpu_id);
  }
  return {};
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"kernel", "family", "shape", "measured (µs)", "share (%)", "ceiling (µs)", "bound"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

bool KernelFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QRegularExpression& re = filterRegularExpression();
  if (re.pattern().isEmpty()) return true;
  // The rows themselves, not data(): a QVariant per cell made filtering 300,000 rows take seconds.
  if (const auto* model = qobject_cast<const KernelTableModel*>(sourceModel())) {
    const KernelRow& r = model->kernels().rows[static_cast<std::size_t>(source_row)];
    return re.match(r.name).hasMatch() || re.match(r.family).hasMatch() || re.match(r.shape).hasMatch();
  }
  for (int column : {KernelTableModel::Name, KernelTableModel::FamilyColumn, KernelTableModel::ShapeColumn})
    if (re.match(sourceModel()->index(source_row, column, source_parent).data().toString()).hasMatch()) return true;
  return false;
}

bool KernelFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const auto* model = qobject_cast<const KernelTableModel*>(sourceModel());
  if (!model || left.column() != right.column()) return QSortFilterProxyModel::lessThan(left, right);
  const KernelRow& a = model->kernels().rows[static_cast<std::size_t>(left.row())];
  const KernelRow& b = model->kernels().rows[static_cast<std::size_t>(right.row())];
  switch (left.column()) {
    case KernelTableModel::Name: return QString::compare(a.name, b.name, Qt::CaseInsensitive) < 0;
    case KernelTableModel::FamilyColumn: return QString::compare(a.family, b.family, Qt::CaseInsensitive) < 0;
    case KernelTableModel::ShapeColumn: return QString::compare(a.shape, b.shape, Qt::CaseInsensitive) < 0;
    case KernelTableModel::MeasuredUs: return a.measured_us < b.measured_us;
    case KernelTableModel::Share: return a.share < b.share;
    case KernelTableModel::CeilingUs: return a.ceiling_us.value_or(-1.0) < b.ceiling_us.value_or(-1.0);
    case KernelTableModel::Bound: return QString::compare(a.bound, b.bound, Qt::CaseInsensitive) < 0;
  }
  return false;
}

QString rows_as_tsv(const QAbstractItemModel& model, const QList<int>& rows) {
  // Tabs and line breaks inside a cell would shift the columns; a space keeps the table intact.
  auto cell = [](QString s) { return s.replace('\t', ' ').replace('\n', ' '); };
  QStringList lines;
  QStringList header;
  for (int c = 0; c < model.columnCount(); ++c) header << cell(model.headerData(c, Qt::Horizontal).toString());
  lines << header.join('\t');
  for (int r : rows) {
    QStringList fields;
    for (int c = 0; c < model.columnCount(); ++c) fields << cell(model.index(r, c).data().toString());
    lines << fields.join('\t');
  }
  return lines.join('\n') + '\n';
}

}  // namespace perfloom::ui
