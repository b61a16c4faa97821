#include "ui/traces_view.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <chrono>

#include "model/resources.h"
#include "storage/database.h"
#include "storage/importers/registry.h"
#include "storage/kernel_store.h"
#include "ui/chart_export.h"

namespace perfloom::ui {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }

QString seconds_text(double s) { return QString::number(s, 'f', s < 10 ? 2 : 1) + " s"; }

constexpr auto kGroupByKey = "traces/groupBy";
// The settings' text of each GroupChoice, in its order.
const char* const kGroupChoiceNames[] = {"kernels", "kernel-name", "framework-op", "op-tree"};

// The stacked widget's page of each GroupChoice: the kernel table, the group table, the op tree.
int page_of(int choice) { return choice == 0 ? 0 : choice == 3 ? 2 : 1; }
}  // namespace

ImportOutcome run_import(const std::filesystem::path& db_path, const QString& file, const GpuDatabase& gpus,
                         ImportJobState& state) {
  ImportOutcome o;
  o.file = file;
  const auto started = std::chrono::steady_clock::now();
  try {
    const auto db = std::make_unique<storage::Database>(db_path);
    storage::KernelStore store(*db);
    storage::ImportControl control;
    control.gpus = &gpus;
    control.cancel = &state.cancel;
    control.progress = [&state](const storage::ImportProgress& p) {
      std::lock_guard lock(state.mutex);
      state.progress = p;
    };
    try {
      const storage::ImportSummary s = store.import_file(file.toStdString(), control);
      o.source_id = s.source_id;
      const QString gpu = !s.gpu_id.empty()     ? qs(s.gpu_id)
                          : !s.gpu_name.empty() ? qs(s.gpu_name) + " (unknown)"
                                                : "GPU unknown";
      o.summary = QString("%1: %2, %3 kernels, %4, %5")
                      .arg(QFileInfo(file).fileName(), qs(s.format))
                      .arg(s.kernels)
                      .arg(gpu, seconds_text(s.seconds));
      for (const auto& w : s.warnings) o.warnings << qs(w);
    } catch (const storage::AlreadyImported& e) {
      // Not a failure for the user: the content is there, so the view shows that source.
      o.already_imported = true;
      o.source_id = e.source_id();
      o.summary = QString::fromUtf8(e.what());
    } catch (const storage::ImportCancelled&) {
      o.cancelled = true;
      o.summary = QString("%1: import cancelled, the database is unchanged").arg(file);
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    o.sources = list_sources(db_path);
  } catch (const std::exception& e) {
    // The database itself: the message names it.
    if (o.error.isEmpty()) o.error = QString("%1: %2").arg(file, QString::fromUtf8(e.what()));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return o;
}

std::optional<QString> why_not_importable(const QString& path) {
  const QFileInfo info(path);
  if (!info.exists()) return QString("%1: does not exist").arg(path);
  if (!info.isReadable()) return QString("%1: not readable").arg(path);
  try {
    const storage::SniffInput in = storage::ImporterRegistry::sniff_input(path.toStdString());
    if (!storage::ImporterRegistry::builtin().detect(in))
      return QString("%1: not a format perfloom reads (%2)")
          .arg(path, qs(storage::ImporterRegistry::describe_content(in)));
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return std::nullopt;
}

QStringList importable_paths(const QList<QUrl>& urls, QStringList* refused) {
  QStringList out;
  for (const QUrl& url : urls) {
    if (!url.isLocalFile()) {
      if (refused) *refused << QString("%1: not a local file").arg(url.toString());
      continue;
    }
    if (const std::optional<QString> why = why_not_importable(url.toLocalFile())) {
      if (refused) *refused << *why;
    } else {
      out << url.toLocalFile();
    }
  }
  return out;
}

TracesView::TracesView(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent)
    : QWidget(parent),
      gpus_(std::make_shared<const GpuDatabase>(gpus)),
      db_path_(std::move(db_path)),
      sources_(new SourceListModel(this)),
      kernels_(new KernelTableModel(this)),
      proxy_(new KernelFilterProxy(this)),
      source_table_(new QTableView(this)),
      kernel_table_(new QTableView(this)),
      groups_(new KernelGroupModel(this)),
      group_table_(new QTableView(this)),
      op_tree_(new OpTreeModel(this)),
      op_tree_view_(new QTreeView(this)),
      find_(new QLineEdit(this)),
      find_previous_(new QToolButton(this)),
      find_next_(new QToolButton(this)),
      find_status_(new QLabel(this)),
      tables_(new QStackedWidget(this)),
      table_bar_(new QWidget(this)),
      group_by_(new QComboBox(this)),
      count_(new QLabel(this)),
      filter_(new QLineEdit(this)),
      filter_timer_(new QTimer(this)),
      import_bar_(new QWidget(this)),
      stage_(new QLabel(this)),
      progress_(new QProgressBar(this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      status_(new QLabel(this)),
      errors_(new QLabel(this)),
      progress_timer_(new QTimer(this)),
      open_whatif_(new QAction(tr("Open in What-if"), this)),
      open_bottleneck_(new QAction(tr("Open in Bottleneck"), this)),
      open_tuner_(new QAction(tr("Open in Tuner"), this)),
      empty_(new QWidget(this)),
      sample_button_(new QPushButton(tr("Open sample trace"), this)) {
  auto* open = new QPushButton(tr("Open…"), this);
  open->setToolTip(
      tr("Import a torch.profiler trace, an Nsight Systems SQLite export, an Nsight Compute CSV, a "
         "collector CSV or a dataset folder (Ctrl+O); or drop files anywhere on the window"));
  auto* barLayout = new QHBoxLayout(import_bar_);
  barLayout->setContentsMargins(0, 0, 0, 0);
  barLayout->addWidget(stage_, 1);
  barLayout->addWidget(progress_, 1);
  barLayout->addWidget(cancel_);
  progress_->setRange(0, 1000);
  import_bar_->hide();

  source_table_->setModel(sources_);
  source_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  source_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  source_table_->verticalHeader()->hide();
  // A handful of rows: measuring them is cheap, and every column stays readable.
  source_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  source_table_->horizontalHeader()->setSectionResizeMode(SourceListModel::File, QHeaderView::Stretch);
  source_table_->verticalHeader()->setDefaultSectionSize(source_table_->fontMetrics().height() + 8);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(open);
  leftLayout->addWidget(new QLabel(tr("Imported sources"), left));
  leftLayout->addWidget(source_table_, 1);
  // The selected trace moved to other GPUs: the main window shows the What-if view with it.
  open_whatif_->setToolTip(tr("Predict the selected trace on other GPUs in the What-if view"));
  open_whatif_->setEnabled(false);
  connect(open_whatif_, &QAction::triggered, this, [this] {
    if (const int64_t id = selectedSourceId()) emit openInWhatIf(id);
  });
  source_table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  source_table_->addAction(open_whatif_);
  auto* whatif = new QPushButton(tr("Open in What-if"), left);
  whatif->setObjectName("openInWhatIf");
  whatif->setToolTip(open_whatif_->toolTip());
  whatif->setEnabled(false);
  connect(open_whatif_, &QAction::changed, whatif, [this, whatif] { whatif->setEnabled(open_whatif_->isEnabled()); });
  connect(whatif, &QPushButton::clicked, open_whatif_, &QAction::trigger);
  leftLayout->addWidget(whatif);

  // Sorted and filtered on the thread pool (KernelFilterProxy); the GUI thread only swaps the order in.
  proxy_->setSourceModel(kernels_);
  kernel_table_->setModel(proxy_);
  auto updateKernelActions = [this] {
    const QString spec = currentKernelSpec();
    open_bottleneck_->setEnabled(!spec.isEmpty());
    open_tuner_->setEnabled(spec.startsWith("gemm:"));
  };
  connect(kernel_table_->selectionModel(), &QItemSelectionModel::currentChanged, this, updateKernelActions);
  connect(proxy_, &QAbstractItemModel::modelReset, this, updateKernelActions);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, updateKernelActions);
  kernel_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  kernel_table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  kernel_table_->verticalHeader()->hide();
  // Fixed row heights and column widths: nothing here may measure 100,000 rows on the GUI thread.
  kernel_table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  kernel_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  kernel_table_->verticalHeader()->setDefaultSectionSize(kernel_table_->fontMetrics().height() + 8);
  // The kernel name takes the spare width: the other columns are short and fixed.
  kernel_table_->horizontalHeader()->setSectionResizeMode(KernelTableModel::Name, QHeaderView::Stretch);
  kernel_table_->horizontalHeader()->setMinimumSectionSize(40);
  kernel_table_->setColumnWidth(KernelTableModel::FamilyColumn, 90);
  kernel_table_->setColumnWidth(KernelTableModel::ShapeColumn, 190);
  for (int c : {KernelTableModel::MeasuredUs, KernelTableModel::Share, KernelTableModel::CeilingUs})
    kernel_table_->setColumnWidth(
        c, kernel_table_->fontMetrics().horizontalAdvance(kernels_->headerData(c, Qt::Horizontal).toString()) + 20);
  kernel_table_->setColumnWidth(KernelTableModel::Bound, 80);
  kernel_table_->setWordWrap(false);
  kernel_table_->setTextElideMode(Qt::ElideMiddle);  // kernel names differ at the end (tile, layout)
  // File order until the user clicks a header (a sort indicator of -1 means unsorted).
  kernel_table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  kernel_table_->setSortingEnabled(true);
  auto* copy = new QAction(tr("Copy"), kernel_table_);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copy, &QAction::triggered, this, [this] { copySelection(); });
  auto* exportCsv = new QAction(tr("Export CSV…"), kernel_table_);
  connect(exportCsv, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export kernels"), "kernels.csv", "CSV (*.csv)");
    QString error;
    if (!path.isEmpty() && !ChartExporter::saveCsv(proxy_, path, &error)) QMessageBox::warning(this, "perfloom", error);
  });
  kernel_table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  kernel_table_->addAction(copy);
  kernel_table_->addAction(exportCsv);
  // The current kernel to the Bottleneck view (any shaped kernel) or the Tuner (GEMMs), on the GPU
  // the trace was measured on.
  open_bottleneck_->setObjectName("openInBottleneck");
  open_tuner_->setObjectName("openInTuner");
  open_bottleneck_->setEnabled(false);
  open_tuner_->setEnabled(false);
  kernel_table_->addAction(open_bottleneck_);
  kernel_table_->addAction(open_tuner_);
  auto sourceGpu = [this] {
    const int row = sources_->rowOf(shown_source_id_);
    return row < 0 ? QString() : sources_->sources()[static_cast<std::size_t>(row)].gpu_id;
  };
  connect(open_bottleneck_, &QAction::triggered, this, [this, sourceGpu] {
    if (const QString spec = currentKernelSpec(); !spec.isEmpty()) emit openInBottleneck(spec, sourceGpu());
  });
  connect(open_tuner_, &QAction::triggered, this, [this, sourceGpu] {
    if (const QString spec = currentKernelSpec(); spec.startsWith("gemm:")) emit openInTuner(spec, sourceGpu());
  });

  // The grouped table: one row per kernel name or framework op, by total descending; the key takes
  // the spare width. Sorting its few rows is the model's own (one row per distinct key).
  group_table_->setObjectName("kernelGroups");
  group_table_->setModel(groups_);
  group_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  group_table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  group_table_->verticalHeader()->hide();
  group_table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  group_table_->verticalHeader()->setDefaultSectionSize(kernel_table_->verticalHeader()->defaultSectionSize());
  group_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  group_table_->horizontalHeader()->setSectionResizeMode(KernelGroupModel::Key, QHeaderView::Stretch);
  group_table_->horizontalHeader()->setMinimumSectionSize(40);
  for (int c : {KernelGroupModel::Count, KernelGroupModel::TotalUs, KernelGroupModel::MeanUs, KernelGroupModel::Share})
    group_table_->setColumnWidth(
        c, group_table_->fontMetrics().horizontalAdvance(groups_->headerData(c, Qt::Horizontal).toString()) + 28);
  group_table_->setWordWrap(false);
  group_table_->setTextElideMode(Qt::ElideMiddle);
  group_table_->horizontalHeader()->setSortIndicator(KernelGroupModel::TotalUs, Qt::DescendingOrder);
  group_table_->setSortingEnabled(true);
  auto* copyGroups = new QAction(tr("Copy"), group_table_);
  copyGroups->setShortcut(QKeySequence::Copy);
  copyGroups->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copyGroups, &QAction::triggered, this, [this] { copySelection(); });
  auto* exportGroups = new QAction(tr("Export CSV…"), group_table_);
  connect(exportGroups, &QAction::triggered, this, [this] {
    const QString name = groupChoice() == ByFrameworkOp ? "kernels-by-framework-op.csv" : "kernels-by-name.csv";
    const QString path = QFileDialog::getSaveFileName(this, tr("Export kernel groups"), name, "CSV (*.csv)");
    QString error;
    if (!path.isEmpty() && !ChartExporter::saveCsv(groups_, path, &error))
      QMessageBox::warning(this, "perfloom", error);
  });
  group_table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  group_table_->addAction(copyGroups);
  group_table_->addAction(exportGroups);
  tables_->addWidget(kernel_table_);
  tables_->addWidget(group_table_);

  // The op tree: the name takes the spare width, the numbers fixed columns; its order is the
  // tree's own (total descending), so there is no header sort.
  op_tree_view_->setObjectName("opTree");
  op_tree_view_->setModel(op_tree_);
  op_tree_view_->setUniformRowHeights(true);
  op_tree_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  op_tree_view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  op_tree_view_->setWordWrap(false);
  op_tree_view_->setTextElideMode(Qt::ElideMiddle);
  op_tree_view_->header()->setStretchLastSection(false);
  op_tree_view_->header()->setMinimumSectionSize(40);
  op_tree_view_->header()->setSectionResizeMode(QHeaderView::Interactive);
  op_tree_view_->header()->setSectionResizeMode(OpTreeModel::Name, QHeaderView::Stretch);
  for (int c = OpTreeModel::Calls; c < OpTreeModel::ColumnCount; ++c)
    op_tree_view_->setColumnWidth(
        c, op_tree_view_->fontMetrics().horizontalAdvance(op_tree_->headerData(c, Qt::Horizontal).toString()) + 28);
  auto* copyTree = new QAction(tr("Copy"), op_tree_view_);
  copyTree->setShortcut(QKeySequence::Copy);
  copyTree->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copyTree, &QAction::triggered, this, [this] { copySelection(); });
  op_tree_view_->setContextMenuPolicy(Qt::ActionsContextMenu);
  op_tree_view_->addAction(copyTree);
  connect(op_tree_, &OpTreeModel::treeApplied, this, [this] {
    op_tree_view_->expandToDepth(0);
    updateCount();
  });
  tables_->addWidget(op_tree_view_);

  // Find: moves the current row, filters nothing. F3 / Shift+F3 anywhere in the view.
  find_->setObjectName("find");
  find_->setPlaceholderText(tr("Find"));
  find_->setToolTip(tr("Find a row whose name contains this text (case-insensitive); Enter or F3 for the next, "
                       "Shift+F3 for the previous"));
  find_->setClearButtonEnabled(true);
  find_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  find_->setMinimumWidth(60);
  find_->setMaximumWidth(find_->fontMetrics().averageCharWidth() * 24);
  find_previous_->setObjectName("findPrevious");
  find_previous_->setArrowType(Qt::UpArrow);
  find_previous_->setToolTip(tr("Previous match (Shift+F3)"));
  find_next_->setObjectName("findNext");
  find_next_->setArrowType(Qt::DownArrow);
  find_next_->setToolTip(tr("Next match (F3)"));
  find_status_->setObjectName("findStatus");
  auto* findNextAction = new QAction(tr("Find next"), this);
  findNextAction->setShortcut(QKeySequence(Qt::Key_F3));
  findNextAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  auto* findPreviousAction = new QAction(tr("Find previous"), this);
  findPreviousAction->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3));
  findPreviousAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  addAction(findNextAction);
  addAction(findPreviousAction);
  connect(findNextAction, &QAction::triggered, this, &TracesView::findNext);
  connect(findPreviousAction, &QAction::triggered, this, &TracesView::findPrevious);
  connect(find_next_, &QToolButton::clicked, this, &TracesView::findNext);
  connect(find_previous_, &QToolButton::clicked, this, &TracesView::findPrevious);
  connect(find_, &QLineEdit::returnPressed, this, &TracesView::findNext);
  connect(find_, &QLineEdit::textChanged, find_status_, &QLabel::clear);

  group_by_->setObjectName("groupBy");
  group_by_->addItem(tr("Kernels"), QString(kGroupChoiceNames[Kernels]));
  group_by_->addItem(tr("Kernel name"), QString(kGroupChoiceNames[ByKernelName]));
  group_by_->addItem(tr("Framework op"), QString(kGroupChoiceNames[ByFrameworkOp]));
  group_by_->addItem(tr("Op tree"), QString(kGroupChoiceNames[ByOpTree]));
  group_by_->setToolTip(
      tr("Every kernel, the kernels grouped by name or by the framework op that launched them (count, "
         "total, mean and share of the source's time), or the framework ops as a tree down to their kernels"));
  {
    const int saved = group_by_->findData(QSettings().value(kGroupByKey).toString());
    group_by_->setCurrentIndex(saved >= 0 ? saved : 0);
    tables_->setCurrentIndex(page_of(group_by_->currentIndex()));
  }
  connect(group_by_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    QSettings().setValue(kGroupByKey, group_by_->itemData(index).toString());
    tables_->setCurrentIndex(page_of(index));
    find_status_->clear();
    regroup();
    updateCount();
  });
  // The count of what is shown: "N of M kernels, T ms total". Ignored width: a narrow pane cuts the
  // line short rather than the line asking the window for room.
  count_->setObjectName("kernelCount");
  count_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  count_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  connect(proxy_, &KernelFilterProxy::orderApplied, this, &TracesView::updateCount);
  connect(proxy_, &QAbstractItemModel::modelReset, this, &TracesView::updateCount);
  connect(groups_, &KernelGroupModel::groupsApplied, this, &TracesView::updateCount);
  connect(kernels_, &QAbstractItemModel::modelReset, this, &TracesView::regroup);

  filter_->setPlaceholderText(
      tr("Filter kernels: regular expression on name, family and shape, or the group (case-insensitive)"));
  filter_->setClearButtonEnabled(true);
  filter_timer_->setSingleShot(true);
  filter_timer_->setInterval(300);  // a 100k-row filter per keystroke would stall typing
  connect(filter_, &QLineEdit::textChanged, filter_timer_, qOverload<>(&QTimer::start));
  connect(filter_timer_, &QTimer::timeout, this, &TracesView::applyFilter);

  // The first thing a new user sees: what perfloom reads, and a trace to try it on. A column of fixed
  // width (the text wraps in it) centred in the pane, so it never asks the window for more room than
  // the table does.
  empty_->setObjectName("tracesEmptyState");
  auto* column = new QWidget(empty_);
  column->setFixedWidth(std::min(440, column->fontMetrics().averageCharWidth() * 64));
  auto* emptyTitle = new QLabel(tr("No traces imported yet"), column);
  QFont titleFont = emptyTitle->font();
  titleFont.setPointSizeF(titleFont.pointSizeF() * 1.3);
  titleFont.setBold(true);
  emptyTitle->setFont(titleFont);
  emptyTitle->setAlignment(Qt::AlignHCenter);
  const auto paragraph = [column](const QString& text) {
    auto* label = new QLabel(text, column);
    label->setWordWrap(true);
    label->setAlignment(Qt::AlignHCenter);
    return label;
  };
  sample_button_->setObjectName("openSampleTrace");
  sample_button_->setDefault(true);  // drawn as the pane's main action
  sample_button_->setToolTip(tr("Import the trace bundled with perfloom (%1)").arg(qs(sample_trace_path().string())));
  auto* emptyOpen = new QPushButton(tr("Open…"), column);
  emptyOpen->setToolTip(open->toolTip());
  auto* emptyButtons = new QHBoxLayout;
  emptyButtons->addStretch(1);
  emptyButtons->addWidget(sample_button_);
  emptyButtons->addWidget(emptyOpen);
  emptyButtons->addStretch(1);
  auto* columnLayout = new QVBoxLayout(column);
  columnLayout->setContentsMargins(0, 0, 0, 0);
  columnLayout->addWidget(emptyTitle);
  columnLayout->addWidget(
      paragraph(tr("Drop a torch.profiler trace, an Nsight Systems SQLite export or an Nsight "
                   "Compute CSV anywhere on the window, or open one with Ctrl+O.")));
  columnLayout->addWidget(
      paragraph(tr("No trace at hand? The sample is a real torch.profiler trace of a small "
                   "Llama-like model on an H100: its kernels, their ceilings, and what they "
                   "would take on other GPUs.")));
  columnLayout->addSpacing(column->fontMetrics().height() / 2);
  columnLayout->addLayout(emptyButtons);
  auto* emptyRow = new QHBoxLayout;
  emptyRow->addStretch(1);
  emptyRow->addWidget(column);
  emptyRow->addStretch(1);
  auto* emptyLayout = new QVBoxLayout(empty_);
  emptyLayout->addStretch(1);
  emptyLayout->addLayout(emptyRow);
  emptyLayout->addStretch(2);
  empty_->hide();  // until the first source list says the database is empty

  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  auto* tableBarLayout = new QHBoxLayout(table_bar_);
  tableBarLayout->setContentsMargins(0, 0, 0, 0);
  tableBarLayout->addWidget(filter_, 1);
  auto* groupLabel = new QLabel(tr("Group by"), table_bar_);
  groupLabel->setBuddy(group_by_);
  tableBarLayout->addWidget(groupLabel);
  tableBarLayout->addWidget(group_by_);
  rightLayout->addWidget(table_bar_);
  rightLayout->addWidget(tables_, 1);
  auto* countRow = new QHBoxLayout;
  countRow->addWidget(count_, 1);
  countRow->addWidget(find_);
  countRow->addWidget(find_previous_);
  countRow->addWidget(find_next_);
  countRow->addWidget(find_status_);
  rightLayout->addLayout(countRow);
  rightLayout->addWidget(empty_, 1);
  auto* splitter = new QSplitter(this);
  splitter->addWidget(left);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({320, 880});

  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Every failed file of a batch, not only the last: a drop of ten files may fail for ten reasons.
  errors_->setObjectName("importErrors");
  errors_->setWordWrap(true);
  errors_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  errors_->setStyleSheet("color: #c44e52");
  errors_->hide();
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(import_bar_);
  layout->addWidget(splitter, 1);
  layout->addWidget(status_);
  layout->addWidget(errors_);

  progress_timer_->setInterval(100);
  connect(progress_timer_, &QTimer::timeout, this, &TracesView::pollProgress);
  connect(open, &QPushButton::clicked, this, &TracesView::openFiles);
  connect(emptyOpen, &QPushButton::clicked, this, &TracesView::openFiles);
  connect(sample_button_, &QPushButton::clicked, this, &TracesView::openSample);
  connect(cancel_, &QPushButton::clicked, this, &TracesView::cancelImport);
  connect(source_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    open_whatif_->setEnabled(selectedSourceId() != 0);
    if (!selecting_) loadKernels(selectedSourceId());
  });
  showStatus(
      tr("Drop a torch.profiler trace, an Nsight Systems SQLite export or an Nsight Compute CSV anywhere "
         "on the window, or open one with Ctrl+O."));
  refreshSources(0);
}

TracesView::~TracesView() {
  // Workers hold only shared state and copies, but a running import would go on writing; stop
  // both jobs and wait (they check the flag every few MB or every row, so this is short).
  ++sources_generation_;
  ++kernels_generation_;
  if (import_state_) import_state_->cancel = true;
  if (kernels_cancel_) *kernels_cancel_ = true;
  import_future_.waitForFinished();
  kernels_future_.waitForFinished();
}

void TracesView::openFiles() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, tr("Import traces"), {},
      tr("Traces and kernel data (*.json *.json.gz *.pt.trace.json *.sqlite *.csv);;All files (*)"));
  importFiles(files);
}

void TracesView::openSample() {
  const QString path = qs(sample_trace_path().string());
  if (QFileInfo::exists(path)) {
    importFiles({path});
    return;
  }
  // A broken install (or $PERFLOOM_RESOURCES elsewhere): say where the file belongs, the way a refused drop is said.
  const QString why = tr("%1: no such file; the sample trace belongs there (reinstall perfloom, or point "
                         "$PERFLOOM_RESOURCES at a resources folder that has samples/)")
                          .arg(path);
  importFiles({}, {why});
}

void TracesView::importFiles(const QStringList& paths, const QStringList& refused) {
  if (!import_running_ && pending_.isEmpty()) batch_errors_.clear();  // a new batch
  batch_errors_ << refused;
  showImportErrors();
  if (!refused.isEmpty() && paths.isEmpty() && !import_running_) emit importFailed(batch_errors_);
  for (const QString& p : paths)
    if (!p.isEmpty()) pending_ << QFileInfo(p).absoluteFilePath();
  if (import_running_) {
    import_total_ = import_index_ + static_cast<int>(pending_.size());
    return;
  }
  import_index_ = 0;
  import_total_ = static_cast<int>(pending_.size());
  startNextImport();
}

void TracesView::startNextImport() {
  if (pending_.isEmpty()) return;
  importing_file_ = pending_.takeFirst();
  ++import_index_;
  import_running_ = true;
  import_state_ = std::make_shared<ImportJobState>();
  stage_->setText(tr("Importing %1…").arg(QFileInfo(importing_file_).fileName()));
  progress_->setValue(0);
  cancel_->setEnabled(true);
  import_bar_->show();
  progress_timer_->start();
  auto* watcher = new QFutureWatcher<ImportOutcome>(this);
  connect(watcher, &QFutureWatcher<ImportOutcome>::finished, this, [this, watcher] {
    watcher->deleteLater();
    applyImport(watcher->result());
  });
  import_future_ = QtConcurrent::run([db = db_path_, file = importing_file_, gpus = gpus_, state = import_state_] {
    return run_import(db, file, *gpus, *state);
  });
  watcher->setFuture(import_future_);
}

void TracesView::pollProgress() {
  if (!import_state_) return;
  storage::ImportProgress p;
  {
    std::lock_guard lock(import_state_->mutex);
    p = import_state_->progress;
  }
  const QString batch = import_total_ > 1 ? tr("(%1 of %2) ").arg(import_index_).arg(import_total_) : QString();
  QString stage = p.stage.empty() ? tr("starting") : qs(p.stage);
  if (p.kernels) stage += tr(", %1 kernels").arg(p.kernels);
  stage_->setText(QString("%1%2: %3").arg(batch, QFileInfo(importing_file_).fileName(), stage));
  if (p.bytes_total > 0)
    progress_->setValue(static_cast<int>(1000.0 * static_cast<double>(std::min(p.bytes_done, p.bytes_total)) /
                                         static_cast<double>(p.bytes_total)));
}

void TracesView::cancelImport() {
  if (!import_running_) return;
  // Queued files are dropped too: Cancel means "stop importing", not "skip this one".
  pending_.clear();
  import_state_->cancel = true;
  cancel_->setEnabled(false);
  stage_->setText(tr("Cancelling %1…").arg(QFileInfo(importing_file_).fileName()));
}

void TracesView::applyImport(const ImportOutcome& o) {
  import_running_ = false;
  progress_timer_->stop();
  last_outcome_ = o;
  if (!o.error.isEmpty()) {
    batch_errors_ << o.error;
    showImportErrors();
    showStatus(o.error, true);
  } else if (o.cancelled) {
    showStatus(o.summary);
  } else {
    QString text = o.summary;
    if (!o.warnings.isEmpty()) text += "\n" + tr("Warnings: ") + o.warnings.join("; ");
    showStatus(text);
    emit fileImported(o.file);
  }
  // The worker read the source list after its import: newer than any list asked for before.
  if (!o.sources.empty() || o.error.isEmpty()) applySources(o.sources, o.source_id);
  emit importFinished(o);
  if (pending_.isEmpty()) {
    import_bar_->hide();
    import_state_.reset();
    if (!batch_errors_.isEmpty()) emit importFailed(batch_errors_);
  } else {
    startNextImport();
  }
}

void TracesView::refreshSources(int64_t select_id) {
  const quint64 generation = ++sources_generation_;
  ++sources_running_;
  list_sources_async(this, db_path_,
                     [this, generation, select_id](std::vector<SourceRow> rows, const QString& error) {
                       --sources_running_;
                       if (generation != sources_generation_) return;  // a newer list is on its way or applied
                       if (!error.isEmpty())
                         showStatus(error, true);
                       else
                         applySources(std::move(rows), select_id);
                     });
}

void TracesView::applySources(std::vector<SourceRow> sources, int64_t select_id) {
  ++sources_generation_;  // a list requested earlier is older than this one
  const int64_t keep = select_id ? select_id : shown_source_id_;
  selecting_ = true;
  sources_->setSources(std::move(sources));
  selecting_ = false;
  showEmptyState(sources_->rowCount() == 0);
  if (sources_->rowOf(keep) >= 0) {
    selectSource(keep);
  } else if (keep && keep == shown_source_id_) {
    // The shown source is gone (removed by the CLI meanwhile): show nothing rather than stale rows.
    shown_source_id_ = 0;
    ++kernels_generation_;
    kernels_->setKernels({});
  }
}

void TracesView::selectSource(int64_t source_id) {
  const int row = sources_->rowOf(source_id);
  if (row < 0) return;
  selecting_ = true;
  source_table_->selectionModel()->setCurrentIndex(sources_->index(row, 0),
                                                   QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  selecting_ = false;
  if (source_id != shown_source_id_) loadKernels(source_id);
}

QString TracesView::currentKernelSpec() const {
  const QModelIndex current = kernel_table_->selectionModel() ? kernel_table_->selectionModel()->currentIndex()
                                                              : QModelIndex();
  if (!current.isValid() || current.row() >= proxy_->rowCount()) return {};
  const auto& rows = kernels_->kernels().rows;
  const int r = proxy_->mapToSource(current.row());
  return r >= 0 && r < static_cast<int>(rows.size()) ? rows[static_cast<std::size_t>(r)].spec : QString();
}

int64_t TracesView::selectedSourceId() const {
  const QModelIndex current = source_table_->selectionModel()->currentIndex();
  return current.isValid() ? current.data(SourceListModel::SourceIdRole).toLongLong() : 0;
}

void TracesView::loadKernels(int64_t source_id) {
  const quint64 generation = ++kernels_generation_;
  if (kernels_cancel_) *kernels_cancel_ = true;  // the older load's rows would be dropped anyway
  shown_source_id_ = source_id;
  updateCount();  // the count of the rows shown so far is not this source's
  if (source_id == 0) {
    kernels_->setKernels({});
    return;
  }
  std::optional<GpuSpec> gpu;
  const int row = sources_->rowOf(source_id);
  if (row >= 0)
    if (const GpuSpec* g = gpus_->find(sources_->sources()[static_cast<std::size_t>(row)].gpu_id.toStdString()))
      gpu = *g;
  kernels_cancel_ = std::make_shared<std::atomic<bool>>(false);
  ++kernels_running_;
  showStatus(tr("Loading the kernels of source %1…").arg(source_id));
  using Result = std::shared_ptr<SourceKernels>;
  auto* watcher = new QFutureWatcher<Result>(this);
  connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    --kernels_running_;
    if (generation != kernels_generation_) return;  // the selection changed meanwhile
    // Moved, not copied: a copy of 300,000 rows is tens of milliseconds on the GUI thread.
    SourceKernels k = std::move(*watcher->result());
    if (!k.error.isEmpty()) {
      showStatus(k.error, true);
      return;
    }
    const int64_t id = k.source_id;
    const int rows = static_cast<int>(k.rows.size());
    const double total = k.total_us;
    const QString gpu = k.gpu_id;
    kernels_->setKernels(std::move(k));
    const QString outcome =
        last_outcome_.source_id == id && !last_outcome_.summary.isEmpty() ? last_outcome_.summary + "\n" : QString();
    showStatus(outcome + tr("Source %1: %2 kernels, %3 µs measured in total; ceilings and bounds on %4")
                             .arg(id)
                             .arg(rows)
                             .arg(QString::number(total, 'f', 1))
                             .arg(gpu.isEmpty() ? tr("no GPU (the source's GPU is unknown)") : gpu));
    emit kernelsLoaded(id, rows);
  });
  kernels_future_ = QtConcurrent::run([db = db_path_, source_id, gpu, cancel = kernels_cancel_] {
    return std::make_shared<SourceKernels>(load_source_kernels(db, source_id, gpu, cancel.get()));
  });
  watcher->setFuture(kernels_future_);
}

void TracesView::reload() {
  const int64_t keep = shown_source_id_;
  shown_source_id_ = 0;  // forces the kernels to load again once the list is back
  refreshSources(keep);
}

void TracesView::applyFilter() {
  const QRegularExpression re(filter_->text(), QRegularExpression::CaseInsensitiveOption);
  if (!re.isValid()) {
    // Keep the last valid filter: an unfinished pattern ("gemm(") should not empty the table.
    filter_->setStyleSheet("color: #c44e52");
    filter_->setToolTip(
        tr("Not a regular expression: %1 at offset %2").arg(re.errorString()).arg(re.patternErrorOffset()));
    return;
  }
  filter_->setStyleSheet({});
  filter_->setToolTip({});
  proxy_->setFilterRegularExpression(re);
  regroup();
}

void TracesView::regroup() {
  // Grouped only while a grouping is shown; picking one later groups the rows then.
  const GroupChoice choice = groupChoice();
  if (choice == Kernels) return;
  if (choice == ByOpTree) {
    // The tree of the source whose kernels are shown (built once per source, filtered per change).
    op_tree_->setInput(db_path_, kernels_->kernels().source_id, proxy_->filterRegularExpression());
    return;
  }
  groups_->setInput(kernels_->sharedKernels(),
                    choice == ByKernelName ? storage::GroupBy::KernelName : storage::GroupBy::FrameworkOp,
                    proxy_->filterRegularExpression());
}

TracesView::GroupChoice TracesView::groupChoice() const {
  const int i = group_by_->currentIndex();
  return i == ByKernelName ? ByKernelName : i == ByFrameworkOp ? ByFrameworkOp : i == ByOpTree ? ByOpTree : Kernels;
}

void TracesView::setGroupChoice(GroupChoice choice) { group_by_->setCurrentIndex(int(choice)); }

QAbstractItemView* TracesView::shownView() const {
  switch (groupChoice()) {
    case Kernels:
      return kernel_table_;
    case ByOpTree:
      return op_tree_view_;
    default:
      return group_table_;
  }
}

QString TracesView::findText() const { return find_status_->text(); }

void TracesView::findNext() { find(true); }
void TracesView::findPrevious() { find(false); }

void TracesView::find(bool forward) {
  const QString text = find_->text();
  if (text.isEmpty()) {
    find_status_->clear();
    return;
  }
  QAbstractItemView* view = shownView();
  // Every row in the order shown: the table's rows, or the tree's nodes depth first (collapsed
  // ones too). Names are read from the rows the models hold, not through data().
  std::vector<QModelIndex> matches;
  if (view == kernel_table_) {
    const auto& rows = kernels_->kernels().rows;
    for (int r = 0; r < proxy_->rowCount(); ++r)
      if (rows[static_cast<std::size_t>(proxy_->mapToSource(r))].name.contains(text, Qt::CaseInsensitive))
        matches.push_back(proxy_->index(r, 0));
  } else if (view == group_table_) {
    for (int r = 0; r < groups_->rowCount(); ++r)
      if (groups_->groups().rows[static_cast<std::size_t>(r)].key.contains(text, Qt::CaseInsensitive))
        matches.push_back(groups_->index(r, 0));
  } else {
    std::vector<QModelIndex> stack{QModelIndex()};
    while (!stack.empty()) {
      const QModelIndex at = stack.back();
      stack.pop_back();
      if (at.isValid() && QString::fromStdString(op_tree_->node(at)->name).contains(text, Qt::CaseInsensitive))
        matches.push_back(at);
      for (int r = op_tree_->rowCount(at); r-- > 0;) stack.push_back(op_tree_->index(r, 0, at));
    }
  }
  if (matches.empty()) {
    find_status_->setText(tr("No matches"));
    return;
  }
  // Where the current row lies among the rows shown: its rank in the same depth-first order.
  const QModelIndex current = view->currentIndex().isValid() ? view->currentIndex().siblingAtColumn(0) : QModelIndex();
  std::size_t pick = 0;
  auto before = [&](const QModelIndex& a, const QModelIndex& b) {
    if (view != op_tree_view_) return a.row() < b.row();
    // Depth first: compare the paths from the root.
    auto path = [](QModelIndex i) {
      std::vector<int> p;
      for (; i.isValid(); i = i.parent()) p.push_back(i.row());
      std::reverse(p.begin(), p.end());
      return p;
    };
    return path(a) < path(b);
  };
  if (!current.isValid()) {
    pick = forward ? 0 : matches.size() - 1;
  } else if (forward) {
    pick = 0;  // wraps around when no match lies after the current row
    for (std::size_t i = 0; i < matches.size(); ++i)
      if (before(current, matches[i])) {
        pick = i;
        break;
      }
  } else {
    pick = matches.size() - 1;
    for (std::size_t i = matches.size(); i-- > 0;)
      if (before(matches[i], current)) {
        pick = i;
        break;
      }
  }
  const QModelIndex target = matches[pick];
  if (view == op_tree_view_)
    for (QModelIndex p = target.parent(); p.isValid(); p = p.parent()) op_tree_view_->expand(p);
  view->selectionModel()->setCurrentIndex(target, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view->scrollTo(target);
  find_status_->setText(tr("%1 of %2 matches").arg(pick + 1).arg(matches.size()));
}

QString TracesView::countText() const { return count_->text(); }

void TracesView::updateCount() {
  if (shown_source_id_ == 0 || kernels_->kernels().source_id != shown_source_id_) {
    count_->clear();
    return;
  }
  if (groupChoice() == Kernels) {
    // The shown rows' total: one addition per row, no text, no layout.
    const auto& rows = kernels_->kernels().rows;
    double total_us = 0;
    for (int r = 0; r < proxy_->rowCount(); ++r)
      total_us += rows[static_cast<std::size_t>(proxy_->mapToSource(r))].measured_us;
    count_->setText(tr("%1 of %2 kernels, %3 total")
                        .arg(proxy_->rowCount())
                        .arg(kernels_->rowCount())
                        .arg(duration_text(total_us)));
    return;
  }
  if (groupChoice() == ByOpTree) {
    if (op_tree_->busy()) {
      count_->setText(tr("Building the op tree…"));
      return;
    }
    if (!op_tree_->error().isEmpty()) {
      count_->setText(op_tree_->error());
      return;
    }
    const storage::OpTree& t = op_tree_->tree();
    if (t.source_id != shown_source_id_) {
      count_->clear();
      return;
    }
    count_->setText(tr("%1 of %2 kernels, %3 total")
                        .arg(t.root.kernels)
                        .arg(op_tree_->fullTree() ? op_tree_->fullTree()->root.kernels : 0)
                        .arg(duration_text(t.root.total_us)));
    return;
  }
  if (groups_->busy()) {
    count_->setText(tr("Grouping the kernels…"));
    return;
  }
  const KernelGroups& g = groups_->groups();
  if (!g.error.isEmpty()) {
    count_->setText(g.error);
    return;
  }
  count_->setText(tr("%1 of %2 groups (%3 kernels), %4 total")
                      .arg(groups_->rowCount())
                      .arg(g.groups_in_source)
                      .arg(g.kernels_shown)
                      .arg(duration_text(g.total_us)));
}

QString TracesView::copySelection() {
  if (groupChoice() == ByOpTree) {
    // The selected nodes, each indented by its depth, under the columns' header.
    QModelIndexList picked = op_tree_view_->selectionModel()->selectedRows();
    if (picked.isEmpty()) return {};
    QStringList header;
    for (int c = 0; c < OpTreeModel::ColumnCount; ++c) header << op_tree_->headerData(c, Qt::Horizontal).toString();
    QString text = header.join('\t') + '\n';
    for (const QModelIndex& i : picked) {
      int depth = 0;
      for (QModelIndex p = i.parent(); p.isValid(); p = p.parent()) ++depth;
      QStringList cells{QString(2 * depth, ' ') + i.data().toString()};
      for (int c = 1; c < OpTreeModel::ColumnCount; ++c) cells << i.siblingAtColumn(c).data().toString();
      text += cells.join('\t') + '\n';
    }
    QApplication::clipboard()->setText(text);
    return text;
  }
  QTableView* table = groupChoice() == Kernels ? kernel_table_ : group_table_;
  QList<int> rows;
  for (const QModelIndex& i : table->selectionModel()->selectedRows()) rows << i.row();
  if (rows.isEmpty()) return {};
  std::sort(rows.begin(), rows.end());
  QString text = rows_as_tsv(*table->model(), rows);
  QApplication::clipboard()->setText(text);
  return text;
}

QString TracesView::statusText() const { return status_->text(); }

void TracesView::showImportErrors() {
  errors_->setVisible(!batch_errors_.isEmpty());
  if (batch_errors_.isEmpty()) {
    errors_->clear();
    return;
  }
  errors_->setText(tr("%n file(s) could not be imported:", nullptr, static_cast<int>(batch_errors_.size())) + "\n• " +
                   batch_errors_.join("\n• "));
}

void TracesView::showEmptyState(bool empty) {
  empty_->setVisible(empty);
  table_bar_->setVisible(!empty);
  tables_->setVisible(!empty);
  count_->setVisible(!empty);
}

void TracesView::showStatus(const QString& text, bool error) {
  status_->setStyleSheet(error ? "color: #c44e52" : "");
  status_->setText(text);
}

}  // namespace perfloom::ui
