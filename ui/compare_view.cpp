#include "ui/compare_view.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFont>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>

#include "model/input_error.h"
#include "model/json_fields.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "ui/chart_panel.h"

namespace perfloom::ui {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

constexpr int kIsTotalRole = Qt::UserRole + 2;

// Sorts by CompareGroupModel::SortRole and keeps the total the last row in either order.
class TotalLastProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool lessThan(const QModelIndex& l, const QModelIndex& r) const override {
    const bool lt = l.data(kIsTotalRole).toBool(), rt = r.data(kIsTotalRole).toBool();
    if (lt != rt) return sortOrder() == Qt::AscendingOrder ? rt : lt;
    return QSortFilterProxyModel::lessThan(l, r);
  }
};

}  // namespace

CompareViewResult compute_comparison(const std::filesystem::path& db_path, qint64 source_a, qint64 source_b,
                                     const QString& predicted_on, const GpuDatabase& gpus,
                                     const KernelPredictor& predictor, const std::atomic<bool>* cancel) {
  CompareViewResult r;
  r.source_a = source_a;
  r.source_b = source_b;
  r.predicted_on = predicted_on;
  try {
    const auto database = std::make_unique<storage::Database>(db_path);
    storage::KernelStore store(*database);
    storage::CompareSide a{source_a}, b{source_b};
    storage::CompareOptions options;
    options.whatif.cancel = cancel;
    // A read-only database is read, its prediction cache included, and never written.
    options.whatif.write_cache = !database->read_only();
    if (!predicted_on.isEmpty()) {
      const auto src = store.source(source_a);
      if (!src) throw std::invalid_argument("source " + std::to_string(source_a) + " is not in the database");
      a.source_gpu = src->gpu_id.empty() ? nullptr : gpus.find(src->gpu_id);
      if (!a.source_gpu)
        throw std::runtime_error(
            printable_name(src->path) + ": the trace does not say which known GPU it was measured on" +
            (src->gpu_name.empty() ? std::string() : " (it names " + quote_excerpt(src->gpu_name) + ")") +
            ", so it cannot be predicted on another");
      a.predicted_on = &gpus.get(predicted_on.toStdString());
      options.predictor = &predictor;
    }
    auto c = std::make_shared<storage::TraceComparison>(storage::compare_traces(store, a, b, options));
    if (c->kernels.empty())
      throw std::runtime_error(printable_name(c->a.source.path) + " and " + printable_name(c->b.source.path) +
                               " have no kernel in common");
    r.comparison = std::move(c);
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
  }
  return r;
}

// ---- CompareGroupModel ----

CompareGroupModel::CompareGroupModel(bool by_name, QObject* parent) : QAbstractTableModel(parent), by_name_(by_name) {}

void CompareGroupModel::setGroups(std::vector<storage::CompareGroup> groups, storage::CompareGroup total) {
  beginResetModel();
  rows_ = std::move(groups);
  rows_.push_back(std::move(total));
  endResetModel();
}

void CompareGroupModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

int CompareGroupModel::rowOf(const QString& key) const {
  const std::string k = key.toStdString();
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].key == k) return static_cast<int>(i);
  return -1;
}

int CompareGroupModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CompareGroupModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CompareGroupModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* const names[ColumnCount] = {"",    "kernel on B", "family",     "kernels", "A (µs)", "B (µs)",
                                                 "B/A", "Δ B−A (µs)",  "share of Δ", "only A",  "only B"};
  if (section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole)
    return section == Key ? (by_name_ ? tr("kernel name") : tr("family")) : QString::fromUtf8(names[section]);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case NameB:
        return tr("The kernel side B ran where it is not the same (cuBLAS picks other kernels on other GPUs)");
      case Kernels:
        return tr("Matched kernels (by position within each launching op, family and op, else by name)");
      case AUs:
      case BUs:
        return tr("Time of the matched kernels that have a time on both sides");
      case Ratio:
        return tr("B's time over A's");
      case DeltaUs:
        return tr("B's time minus A's");
      case Share:
        return tr("This row's difference over the total difference (signed: the rows add up to 100%)");
      case OnlyA:
      case OnlyB:
        return tr("Kernels without a partner on the other side (not in the sums)");
      default:
        return {};
    }
  }
  return {};
}

QVariant CompareGroupModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const storage::CompareGroup& g = rows_[static_cast<std::size_t>(index.row())];
  const bool total = index.row() == static_cast<int>(rows_.size()) - 1;
  if (role == kIsTotalRole) return total;
  if (role == Qt::TextAlignmentRole)
    return index.column() >= Kernels ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
  if (role == Qt::FontRole && total) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ToolTipRole && (index.column() == Key || index.column() == NameB))
    return qs(index.column() == Key ? g.key : g.name_b);
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool sort = role == SortRole;
  const auto ratio = g.ratio();
  switch (index.column()) {
    case Key:
      return qs(g.key);
    case NameB:
      return qs(g.name_b);
    case Family:
      return total ? QString() : qs(family_name(g.family));
    case Kernels:
      return static_cast<qulonglong>(g.kernels);
    case AUs:
      return sort ? QVariant(g.a_us) : QVariant(QString::number(g.a_us, 'f', 1));
    case BUs:
      return sort ? QVariant(g.b_us) : QVariant(QString::number(g.b_us, 'f', 1));
    case Ratio:
      if (sort) return ratio ? *ratio : -1.0;
      return ratio ? QString::number(*ratio, 'f', 3) : QStringLiteral("–");
    case DeltaUs:
      return sort ? QVariant(g.delta_us()) : QVariant(QString::asprintf("%+.1f", g.delta_us()));
    case Share:
      return sort ? QVariant(g.share) : QVariant(QString::asprintf("%.1f%%", 100.0 * g.share));
    case OnlyA:
      return static_cast<qulonglong>(g.only_a);
    case OnlyB:
      return static_cast<qulonglong>(g.only_b);
    default:
      return {};
  }
}

// ---- CompareView ----

namespace {
QTableView* group_table(QWidget* parent, QSortFilterProxyModel* proxy, CompareGroupModel* model) {
  auto* table = new QTableView(parent);
  proxy->setSourceModel(model);
  proxy->setSortRole(CompareGroupModel::SortRole);
  setup_table_view(table, proxy);
  table->setSortingEnabled(true);
  table->sortByColumn(CompareGroupModel::Share, Qt::DescendingOrder);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  if (!model->byName()) {
    table->setColumnHidden(CompareGroupModel::NameB, true);
    table->setColumnHidden(CompareGroupModel::Family, true);
  } else {
    // A kernel name is hundreds of characters: it takes the spare width and is cut, whole in the tooltip.
    table->horizontalHeader()->setSectionResizeMode(CompareGroupModel::Key, QHeaderView::Stretch);
    table->horizontalHeader()->setSectionResizeMode(CompareGroupModel::NameB, QHeaderView::Interactive);
    table->setTextElideMode(Qt::ElideMiddle);
  }
  return table;
}
}  // namespace

CompareView::CompareView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent,
                         std::filesystem::path db_path)
    : QWidget(parent),
      gpus_(gpus),
      gpus_copy_(std::make_shared<const GpuDatabase>(gpus)),
      predictor_(std::move(predictor)),
      db_path_(std::move(db_path)),
      source_a_(new QComboBox(this)),
      predicted_(new QComboBox(this)),
      source_b_(new QComboBox(this)),
      family_model_(new CompareGroupModel(false, this)),
      name_model_(new CompareGroupModel(true, this)),
      family_proxy_(new TotalLastProxy(this)),
      name_proxy_(new TotalLastProxy(this)),
      family_table_(group_table(this, family_proxy_, family_model_)),
      name_table_(group_table(this, name_proxy_, name_model_)),
      status_(new QLabel(this)) {
  source_a_->setToolTip(tr("Side A: a trace imported in the Traces view"));
  source_b_->setToolTip(tr("Side B: a trace imported in the Traces view (the same program on another GPU)"));
  predicted_->setToolTip(tr("Side A as measured, or its what-if on a GPU (predicted from the GPU A was measured on)"));
  predicted_->addItem(tr("measured"), QString());
  for (const GpuSpec& g : gpus_.all()) predicted_->addItem(tr("predicted on %1").arg(qs(g.name)), qs(g.id));
  for (QComboBox* c : {source_a_, source_b_, predicted_})
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);

  auto* left = new QWidget(this);
  auto* leftLayout = panel_layout(left);
  leftLayout->addWidget(new QLabel(tr("Trace A"), left));
  leftLayout->addWidget(source_a_);
  leftLayout->addWidget(predicted_);
  leftLayout->addWidget(new QLabel(tr("Trace B (measured)"), left));
  leftLayout->addWidget(source_b_);
  auto* note = new QLabel(tr("Kernels are paired by position within each launching op, family and op, else by "
                             "kernel name; those without a partner are counted as only A / only B."),
                          left);
  note->setWordWrap(true);
  leftLayout->addWidget(note);
  leftLayout->addStretch(1);

  auto* tables = new QTabWidget(this);
  tables->addTab(family_table_, tr("Per family"));
  tables->addTab(name_table_, tr("Per kernel name"));
  auto* right = new QWidget(this);
  auto* rightLayout = panel_layout(right);
  rightLayout->addWidget(tables, 1);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rightLayout->addWidget(status_);
  fill_with_side_panels(this, left, right);

  for (QComboBox* c : {source_a_, source_b_, predicted_})
    connect(c, &QComboBox::currentIndexChanged, this, [this] {
      if (updating_) return;
      want_a_ = chosen(source_a_);
      want_b_ = chosen(source_b_);
      recompute();
    });
  status_->setText(tr("Import two traces in the Traces view (the same program on two GPUs), then pick them here."));
}

CompareView::~CompareView() {
  ++generation_;
  ++sources_generation_;
  if (cancel_) cancel_->store(true);
}

qint64 CompareView::chosen(QComboBox* combo) const {
  return combo->currentIndex() < 0 ? 0 : combo->currentData().toLongLong();
}

void CompareView::setDatabasePath(std::filesystem::path db_path) {
  db_path_ = std::move(db_path);
  if (isVisible()) refreshSources();
}

void CompareView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refreshSources();
}

void CompareView::refreshSources() {
  if (db_path_.empty()) return;
  const quint64 generation = ++sources_generation_;
  ++sources_running_;
  list_sources_async(this, db_path_, [this, generation](std::vector<SourceRow> rows, const QString& error) {
    --sources_running_;
    if (generation != sources_generation_) return;
    if (!error.isEmpty()) status_->setText(error);
    fillSourceCombos(rows);
  });
}

void CompareView::fillSourceCombos(const std::vector<SourceRow>& sources) {
  const qint64 before_a = chosen(source_a_), before_b = chosen(source_b_);
  updating_ = true;
  for (auto [combo, want] : {std::pair{source_a_, want_a_}, std::pair{source_b_, want_b_}}) {
    combo->clear();
    combo->addItem(tr("(pick a trace)"), qint64(0));
    for (const SourceRow& s : sources)
      combo->addItem(QString("%1 · %2 · %3 kernels")
                         .arg(QFileInfo(s.path).fileName(), s.gpu_name.isEmpty() ? s.gpu_id : s.gpu_name)
                         .arg(s.kernels),
                     qint64(s.id));
    int index = combo->findData(want);
    if (index < 0 && want != 0) {  // chosen before the list knew it: keep showing the choice
      combo->addItem(tr("source %1").arg(want), want);
      index = combo->count() - 1;
    }
    combo->setCurrentIndex(std::max(index, 0));
  }
  // Nothing chosen yet and two traces there: the first two, the usual case of one program on two GPUs.
  if (want_a_ == 0 && want_b_ == 0 && sources.size() >= 2) {
    source_a_->setCurrentIndex(1);
    source_b_->setCurrentIndex(2);
    want_a_ = chosen(source_a_);
    want_b_ = chosen(source_b_);
  }
  updating_ = false;
  if (chosen(source_a_) != before_a || chosen(source_b_) != before_b || (!result_.comparison && running_ == 0))
    recompute();
}

void CompareView::selectSources(qint64 a, qint64 b, const QString& predicted_on) {
  want_a_ = a;
  want_b_ = b;
  updating_ = true;
  const int p = predicted_->findData(predicted_on);
  predicted_->setCurrentIndex(std::max(p, 0));
  for (auto [combo, want] : {std::pair{source_a_, a}, std::pair{source_b_, b}}) {
    int index = combo->findData(want);
    if (index < 0) {
      combo->addItem(tr("source %1").arg(want), want);
      index = combo->count() - 1;
    }
    combo->setCurrentIndex(index);
  }
  updating_ = false;
  refreshSources();
  recompute();
}

void CompareView::recompute() {
  const quint64 generation = ++generation_;
  if (cancel_) cancel_->store(true);  // the job for the older selection stops; its result is dropped anyway
  cancel_.reset();
  const qint64 a = want_a_, b = want_b_;
  const QString predicted_on = predicted_->currentData().toString();
  if (db_path_.empty()) {
    status_->setText(tr("No database to read the traces from."));
    return;
  }
  if (a == 0 || b == 0) {
    status_->setText(tr("Pick two traces: A and B."));
    return;
  }
  status_->setText(predicted_on.isEmpty() ? tr("Comparing…")
                                          : tr("Predicting A on %1 and comparing…").arg(predicted_on));
  ++running_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  auto* watcher = new QFutureWatcher<CompareViewResult>(this);
  connect(watcher, &QFutureWatcher<CompareViewResult>::finished, this, [this, watcher, generation] {
    --running_;
    applyResult(generation, watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(
      [db = db_path_, a, b, predicted_on, gpu_db = gpus_copy_, predictor = predictor_, cancel = cancel_] {
        return compute_comparison(db, a, b, predicted_on, *gpu_db, *predictor, cancel.get());
      }));
}

bool CompareView::applyResult(quint64 generation, const CompareViewResult& r) {
  if (generation != generation_) return false;
  result_ = r;
  if (!r.error.isEmpty() || !r.comparison) {
    family_model_->clear();
    name_model_->clear();
    status_->setText(QString("<span style='color:#c44e52'>%1</span>").arg(r.error.toHtmlEscaped()));
    return true;
  }
  const storage::TraceComparison& c = *r.comparison;
  family_model_->setGroups(c.by_family, c.total);
  name_model_->setGroups(c.by_kernel_name, c.total);
  auto side = [](const storage::CompareSideInfo& s) {
    return QString("%1 (%2 %3, %4 µs)")
        .arg(QFileInfo(qs(s.source.path)).fileName().toHtmlEscaped(),
             s.predicted ? QObject::tr("predicted on") : QObject::tr("measured on"), qs(s.gpu_id))
        .arg(s.total_us, 0, 'f', 1);
  };
  const auto ratio = c.total.ratio();
  status_->setText(tr("A: %1 · B: %2<br>%3 kernels matched (%4 by position, %5 by name), B/A %6, Δ %7 µs; only in A: "
                      "%8 kernels (%9 µs), only in B: %10 (%11 µs)")
                       .arg(side(c.a), side(c.b))
                       .arg(c.kernels.size())
                       .arg(c.by_position)
                       .arg(c.by_name)
                       .arg(ratio ? QString::number(*ratio, 'f', 3) : QStringLiteral("–"))
                       .arg(QString::asprintf("%+.1f", c.total.delta_us()))
                       .arg(c.only_a.size())
                       .arg(c.total.only_a_us, 0, 'f', 1)
                       .arg(c.only_b.size())
                       .arg(c.total.only_b_us, 0, 'f', 1));
  return true;
}

}  // namespace perfloom::ui
