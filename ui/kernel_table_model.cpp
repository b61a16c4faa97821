#include "ui/kernel_table_model.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHash>
#include <QRegularExpression>
#include <QtConcurrent>
#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

#include "model/families/family_models.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "ui/kernel_spec.h"

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
    std::unordered_map<std::string, QString> launched_by;
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
      if (k.shape_known && k.dtype_known && k.desc.op != Op::unknown && !validate_shape(k.desc.op, k.desc.shape))
        row.spec = kernel_spec_string(k.desc);
      // Shared per distinct op: a trace launches thousands of kernels from a few dozen ops.
      auto op = launched_by.find(k.launched_by);
      if (op == launched_by.end()) op = launched_by.emplace(k.launched_by, QString::fromStdString(k.launched_by)).first;
      row.launched_by = op->second;
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
    out.error = QString("%1: source %2: %3")
                    .arg(QString::fromStdString(db_path.string()))
                    .arg(source_id)
                    .arg(QString::fromUtf8(e.what()));
  }
  return out;
}

void KernelTableModel::setKernels(SourceKernels kernels) {
  beginResetModel();
  kernels_ = std::make_shared<const SourceKernels>(std::move(kernels));
  endResetModel();
}

int KernelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(kernels_->rows.size());
}
int KernelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant KernelTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const KernelRow& r = kernels_->rows[static_cast<std::size_t>(index.row())];
  const bool numeric = index.column() == MeasuredUs || index.column() == Share || index.column() == CeilingUs;
  if (role == SortRole && numeric) {
    switch (index.column()) {
      case MeasuredUs:
        return r.measured_us;
      case Share:
        return r.share;
      default:
        return r.ceiling_us ? *r.ceiling_us : -1.0;  // no ceiling sorts below every ceiling
    }
  }
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case Name:
        return r.name;
      case FamilyColumn:
        return r.family;
      case ShapeColumn:
        return r.shape;
      case MeasuredUs:
        return format_us(r.measured_us);
      case Share:
        return QString::number(100.0 * r.share, 'f', 2);
      case CeilingUs:
        return r.ceiling_us ? format_us(*r.ceiling_us) : QString();
      case Bound:
        return r.bound;
    }
  }
  if (role == Qt::TextAlignmentRole && numeric) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Name) return r.name;
    if (index.column() == CeilingUs && !r.ceiling_us)
      return kernels_->gpu_id.isEmpty() ? tr("The source's GPU is unknown")
                                        : tr("No shape, or the model does not cover this kernel");
    if (index.column() == CeilingUs || index.column() == Bound)
      return tr("Analytical lower bound and limiting pipe on %1").arg(kernels_->gpu_id);
  }
  return {};
}

QVariant KernelTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"kernel", "family", "shape", "measured (µs)", "share (%)", "ceiling (µs)", "bound"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

std::vector<int> kernel_row_order(const std::vector<KernelRow>& rows, const QRegularExpression& filter, int column,
                                  Qt::SortOrder order, const std::atomic<bool>* cancel) {
  auto cancelled = [cancel] { return cancel && cancel->load(std::memory_order_relaxed); };
  std::vector<int> out;
  out.reserve(rows.size());
  const bool all = filter.pattern().isEmpty();
  // Matched once per distinct text: a trace repeats the same names, families and shapes.
  QHash<QString, bool> matched;
  auto matches = [&filter, &matched](const QString& text) {
    auto it = matched.constFind(text);
    if (it == matched.constEnd()) it = matched.insert(text, filter.match(text).hasMatch());
    return *it;
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if ((i & 4095) == 0 && cancelled()) return {};
    const KernelRow& r = rows[i];
    if (all || matches(r.name) || matches(r.family) || matches(r.shape)) out.push_back(static_cast<int>(i));
  }
  if (column < 0 || column >= KernelTableModel::ColumnCount || cancelled())
    return cancelled() ? std::vector<int>{} : out;
  const bool numeric = column == KernelTableModel::MeasuredUs || column == KernelTableModel::Share ||
                       column == KernelTableModel::CeilingUs;
  // Text columns: each distinct case-folded text gets its rank, and the rows sort by rank. A trace
  // repeats a few hundred kernel names over and over; comparing the long names themselves in each
  // of the n log n comparisons made sorting 300,000 kernels by name take seconds.
  std::vector<int> rank;
  if (!numeric) {
    rank.assign(rows.size(), 0);
    QHash<QString, int> ids;
    std::vector<QString> distinct;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if ((i & 4095) == 0 && cancelled()) return {};
      const KernelRow& r = rows[static_cast<std::size_t>(out[i])];
      const QString& text = column == KernelTableModel::Name           ? r.name
                            : column == KernelTableModel::FamilyColumn ? r.family
                            : column == KernelTableModel::ShapeColumn  ? r.shape
                                                                       : r.bound;
      auto it = ids.constFind(text);  // folded once per distinct text, not once per row
      if (it == ids.constEnd()) {
        it = ids.insert(text, static_cast<int>(distinct.size()));
        distinct.push_back(text.toCaseFolded());
      }
      rank[static_cast<std::size_t>(out[i])] = *it;
    }
    std::vector<int> by_text(distinct.size());
    std::iota(by_text.begin(), by_text.end(), 0);
    std::sort(by_text.begin(), by_text.end(), [&distinct](int a, int b) {
      return distinct[static_cast<std::size_t>(a)] < distinct[static_cast<std::size_t>(b)];
    });
    // Texts that differ only in case share a position: they are equal to this sort.
    std::vector<int> position(distinct.size());
    for (std::size_t p = 0, shared = 0; p < by_text.size(); ++p) {
      if (p > 0 && distinct[static_cast<std::size_t>(by_text[p])] != distinct[static_cast<std::size_t>(by_text[p - 1])])
        shared = p;
      position[static_cast<std::size_t>(by_text[p])] = static_cast<int>(shared);
    }
    for (int row : out)
      rank[static_cast<std::size_t>(row)] = position[static_cast<std::size_t>(rank[static_cast<std::size_t>(row)])];
  }
  // The rows themselves, not data(): a QVariant per comparison made sorting 300,000 kernels take a second.
  auto less = [&rows, &rank, column, numeric](int left, int right) {
    if (!numeric) return rank[static_cast<std::size_t>(left)] < rank[static_cast<std::size_t>(right)];
    const KernelRow& a = rows[static_cast<std::size_t>(left)];
    const KernelRow& b = rows[static_cast<std::size_t>(right)];
    switch (column) {
      case KernelTableModel::MeasuredUs:
        return a.measured_us < b.measured_us;
      case KernelTableModel::Share:
        return a.share < b.share;
      default:
        return a.ceiling_us.value_or(-1.0) < b.ceiling_us.value_or(-1.0);
    }
  };
  // Stable both ways: equal kernels keep their file order whichever way the header points.
  if (order == Qt::AscendingOrder)
    std::stable_sort(out.begin(), out.end(), less);
  else
    std::stable_sort(out.begin(), out.end(), [&less](int a, int b) { return less(b, a); });
  return cancelled() ? std::vector<int>{} : out;
}

KernelFilterProxy::KernelFilterProxy(QObject* parent)
    : QAbstractTableModel(parent),
      kernels_(std::make_shared<const SourceKernels>()),
      applied_filter_(QRegularExpression()) {}

KernelFilterProxy::~KernelFilterProxy() {
  // The job holds its own share of the rows and never touches the proxy; it only needs to stop.
  if (cancel_) *cancel_ = true;
}

void KernelFilterProxy::setSourceModel(KernelTableModel* model) {
  if (source_) disconnect(source_, nullptr, this, nullptr);
  beginResetModel();
  source_ = model;
  if (source_) {
    connect(source_, &QAbstractItemModel::modelAboutToBeReset, this, &KernelFilterProxy::sourceAboutToBeReset);
    connect(source_, &QAbstractItemModel::modelReset, this, &KernelFilterProxy::sourceReset);
  }
  kernels_ = source_ ? source_->sharedKernels() : std::make_shared<const SourceKernels>();
  rows_.clear();
  applied_filter_.reset();
  endResetModel();
  startJob();
}

void KernelFilterProxy::sourceAboutToBeReset() { beginResetModel(); }

void KernelFilterProxy::sourceReset() {
  ++generation_;  // a job still running computed an order of the old rows
  pending_ = false;
  kernels_ = source_->sharedKernels();
  // File order at once when that is what is asked for or a sort follows; nothing while a filter
  // is set (rows the filter rejects should not flash up).
  rows_.clear();
  applied_filter_.reset();
  if (filter_.pattern().isEmpty()) {
    rows_.resize(kernels_->rows.size());
    std::iota(rows_.begin(), rows_.end(), 0);
    applied_filter_ = filter_;
  }
  endResetModel();
  if (!identityOrder()) startJob();
}

void KernelFilterProxy::setFilterRegularExpression(const QRegularExpression& re) {
  if (re == filter_ && applied_filter_ == re && !pending_) return;
  filter_ = re;
  startJob();
}

void KernelFilterProxy::sort(int column, Qt::SortOrder order) {
  sort_column_ = column;
  sort_order_ = order;
  startJob();
}

void KernelFilterProxy::startJob() {
  const quint64 generation = ++generation_;
  if (cancel_) *cancel_ = true;  // its result would be dropped anyway
  cancel_.reset();
  const std::size_t n = kernels_->rows.size();
  if (n == 0 || identityOrder()) {
    // Nothing to compute: the file order (or no rows) costs less than a job would.
    std::vector<int> rows(identityOrder() ? n : 0);
    std::iota(rows.begin(), rows.end(), 0);
    applyOrder(generation, std::move(rows));
    return;
  }
  pending_ = true;
  ++running_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  using Result = std::shared_ptr<std::vector<int>>;
  auto* watcher = new QFutureWatcher<Result>(this);
  connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    --running_;
    applyOrder(generation, std::move(*watcher->result()));
  });
  // The pattern travels as text: each job compiles its own expression.
  watcher->setFuture(
      QtConcurrent::run([kernels = kernels_, pattern = filter_.pattern(), options = filter_.patternOptions(),
                         column = sort_column_, order = sort_order_, cancel = cancel_] {
        const QRegularExpression re(pattern, options);
        return std::make_shared<std::vector<int>>(kernel_row_order(kernels->rows, re, column, order, cancel.get()));
      }));
}

bool KernelFilterProxy::applyOrder(quint64 generation, std::vector<int> rows) {
  if (generation != generation_) {
    ++dropped_;
    return false;
  }
  QElapsedTimer clock;
  clock.start();
  pending_ = false;
  cancel_.reset();
  if (applied_filter_ && *applied_filter_ == filter_ && rows.size() == rows_.size()) {
    // The same rows in a new order: a layout change keeps the selection and the current row.
    emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList from = persistentIndexList();
    if (!from.isEmpty()) {
      std::vector<int> where(kernels_->rows.size(), -1);
      for (std::size_t i = 0; i < rows.size(); ++i) where[static_cast<std::size_t>(rows[i])] = static_cast<int>(i);
      QModelIndexList to;
      to.reserve(from.size());
      for (const QModelIndex& i : from) {
        const int row = where[static_cast<std::size_t>(rows_[static_cast<std::size_t>(i.row())])];
        to << (row < 0 ? QModelIndex() : index(row, i.column()));
      }
      changePersistentIndexList(from, to);
    }
    rows_ = std::move(rows);
    emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
  } else {
    beginResetModel();
    rows_ = std::move(rows);
    applied_filter_ = filter_;
    endResetModel();
  }
  last_apply_ms_ = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  emit orderApplied(static_cast<int>(rows_.size()));
  return true;
}

int KernelFilterProxy::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int KernelFilterProxy::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : KernelTableModel::ColumnCount;
}

QVariant KernelFilterProxy::data(const QModelIndex& index, int role) const {
  if (!source_ || !checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  return source_->data(source_->index(mapToSource(index.row()), index.column()), role);
}

QVariant KernelFilterProxy::headerData(int section, Qt::Orientation orientation, int role) const {
  return source_ && orientation == Qt::Horizontal ? source_->headerData(section, orientation, role) : QVariant();
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
