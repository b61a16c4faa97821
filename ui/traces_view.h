#pragma once
// The Traces view (issue 9): imports traces (dropped on the window, opened with Ctrl+O or given on
// the command line) in a background job with stage text, progress and Cancel; lists the imported
// sources; shows the selected source's kernels with their share of the time and their analytical
// ceiling and bound on the source's GPU, filterable (regex, 300 ms debounce), sortable, copyable.
// "Group by" (issue 59) shows the kernels grouped by kernel name or framework op instead (count,
// total, mean, share; KernelGroupModel), under the same filter; the choice is kept in QSettings
// ("traces/groupBy"). "Op tree" shows the framework ops as a top-down tree, aten op -> kernels
// (OpTreeModel, built in a job), a node shown when it, an ancestor or a descendant matches the
// filter. A line under the table counts what is shown: "N of M kernels, T ms total". Beside it,
// "Find" (Next / Previous, F3 / Shift+F3) moves the current row of the table or tree shown to the
// next or previous row whose name contains the text, without filtering, wrapping around.
//
// Threads (DESIGN.md): the import and the kernel loading run on the thread pool, each opening its
// own database connection; they hand back plain values. Sorting and filtering the kernel table is a
// job too (KernelFilterProxy): the GUI thread only swaps the finished row order in. The GUI polls
// the import's progress with a timer instead of receiving a signal per update, so a fast importer
// cannot flood the event loop.
#include <QFuture>
#include <QString>
#include <QStringList>
#include <QUrl>
#include <QWidget>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "model/gpu_database.h"
#include "storage/importers/importer.h"
#include "ui/kernel_group_model.h"
#include "ui/kernel_table_model.h"
#include "ui/op_tree_model.h"
#include "ui/source_list_model.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QAbstractItemView;
class QTableView;
class QToolButton;
class QTreeView;
class QTimer;

namespace perfloom::ui {

// What an import worker shares with the GUI while it runs.
struct ImportJobState {
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  storage::ImportProgress progress;  // guarded by mutex
};

struct ImportOutcome {
  QString file;
  int64_t source_id = 0;  // the new source, or the one that already holds this content
  bool already_imported = false;
  bool cancelled = false;
  QString error;    // "FILE: WHERE: REASON"; empty on success
  QString summary;  // one line for the status bar
  QStringList warnings;
  std::vector<SourceRow> sources;  // the source list after the import
  double seconds = 0;
};

// Imports `file` into the database at `db_path` on the calling thread (a worker). Never throws.
ImportOutcome run_import(const std::filesystem::path& db_path, const QString& file, const GpuDatabase& gpus,
                         ImportJobState& state);

// Why perfloom cannot import `path` (not there, unreadable, no importer recognises the content), or
// nothing when it can. Reads only the head of the file (what the importers sniff).
std::optional<QString> why_not_importable(const QString& path);
// The local files among `urls` that perfloom can import; why each other one cannot ("PATH: REASON")
// goes to `refused` when given.
QStringList importable_paths(const QList<QUrl>& urls, QStringList* refused = nullptr);

class TracesView : public QWidget {
  Q_OBJECT
 public:
  TracesView(const GpuDatabase& gpus, std::filesystem::path db_path, QWidget* parent = nullptr);
  ~TracesView() override;

  // Queues the files for import, one at a time, in the order given. `refused`: files of the same
  // drop that perfloom cannot read ("PATH: REASON"), reported with the batch's import errors.
  void importFiles(const QStringList& paths, const QStringList& refused = {});
  void selectSource(int64_t source_id);
  int64_t selectedSourceId() const;  // 0 when none
  // The selected rows of the table shown (kernels or groups) as tab-separated text with a header;
  // also put on the clipboard.
  QString copySelection();

  // What "Group by" offers, in the combo box's order.
  enum GroupChoice { Kernels, ByKernelName, ByFrameworkOp, ByOpTree };
  GroupChoice groupChoice() const;
  void setGroupChoice(GroupChoice choice);  // as if picked in the combo box; saved in QSettings
  // "N of M kernels, T ms total" (or "... groups ..."): what the table shows under the filter, of
  // what the source has; empty while no source is shown.
  QString countText() const;

  bool importing() const { return import_running_; }
  bool loadingKernels() const { return kernels_running_ > 0; }
  bool busy() const {
    return importing() || loadingKernels() || sources_running_ > 0 || !pending_.isEmpty() || proxy_->busy() ||
           groups_->busy() || op_tree_->busy();
  }
  const ImportOutcome& lastOutcome() const { return last_outcome_; }
  QString statusText() const;
  // Every file of the current (or last) batch that could not be imported, "FILE: WHERE: REASON",
  // in the order they failed; shown in a list under the status until the next batch starts.
  const QStringList& importErrors() const { return batch_errors_; }
  QLabel* errorsLabel() const { return errors_; }
  QAction* openInWhatIfAction() const { return open_whatif_; }
  QAction* openInBottleneckAction() const { return open_bottleneck_; }
  QAction* openInTunerAction() const { return open_tuner_; }
  // The current kernel row's spec ("" when it has no whole shape, or no row is current).
  QString currentKernelSpec() const;

  SourceListModel* sourceModel() const { return sources_; }
  KernelTableModel* kernelModel() const { return kernels_; }
  KernelFilterProxy* kernelProxy() const { return proxy_; }
  QTableView* sourceTable() const { return source_table_; }
  QTableView* kernelTable() const { return kernel_table_; }
  KernelGroupModel* groupModel() const { return groups_; }
  QTableView* groupTable() const { return group_table_; }
  QComboBox* groupByCombo() const { return group_by_; }
  OpTreeModel* opTreeModel() const { return op_tree_; }
  QTreeView* opTreeView() const { return op_tree_view_; }
  // The table or tree the view shows now.
  QAbstractItemView* shownView() const;
  QLineEdit* findEdit() const { return find_; }
  QToolButton* findNextButton() const { return find_next_; }
  QToolButton* findPreviousButton() const { return find_previous_; }
  // "3 of 17 matches", "No matches"; empty before a search.
  QString findText() const;
  QLabel* countLabel() const { return count_; }
  QLineEdit* filterEdit() const { return filter_; }
  QPushButton* cancelButton() const { return cancel_; }
  // Shown instead of the kernel table while the database has no sources: what to drop or open, and
  // a button that imports the bundled sample trace.
  QWidget* emptyState() const { return empty_; }
  QPushButton* sampleButton() const { return sample_button_; }
  QProgressBar* progressBar() const { return progress_; }

 signals:
  // A file is in the database (imported now or before): for the recent-files list.
  void fileImported(const QString& path);
  void importFinished(const perfloom::ui::ImportOutcome& outcome);
  void kernelsLoaded(qint64 source_id, int rows);
  // The batch ended and some of its files could not be imported (every one, with its reason).
  void importFailed(const QStringList& errors);
  // "Open in What-if" on the selected source.
  void openInWhatIf(qint64 source_id);
  // "Open in Bottleneck" / "Open in Tuner" on the current kernel row: its spec (ui/kernel_spec.h)
  // and the GPU the source was measured on (empty when unknown).
  void openInBottleneck(const QString& spec, const QString& gpu_id);
  void openInTuner(const QString& spec, const QString& gpu_id);

 public slots:
  void openFiles();  // Ctrl+O
  // Imports the bundled sample trace (sample_trace_path()) like a dropped file; content already in the
  // database selects that source. A missing file is reported as an import error naming where it belongs.
  void openSample();
  void cancelImport();
  void reload();  // F5: the source list and the selected source's kernels
  // The next / previous row (wrapping) of the shown table or tree whose name contains the find text.
  void findNext();
  void findPrevious();

 private:
  void startNextImport();
  void applyImport(const ImportOutcome& outcome);
  void pollProgress();
  void refreshSources(int64_t select_id);
  void applySources(std::vector<SourceRow> sources, int64_t select_id);
  void loadKernels(int64_t source_id);
  void applyFilter();
  void regroup();  // the grouped table's input changed (rows, filter or grouping)
  void updateCount();
  void find(bool forward);
  void showStatus(const QString& text, bool error = false);
  void showImportErrors();
  void showEmptyState(bool empty);

  std::shared_ptr<const GpuDatabase> gpus_;  // shared with workers, which may outlive the view
  std::filesystem::path db_path_;

  SourceListModel* sources_;
  KernelTableModel* kernels_;
  KernelFilterProxy* proxy_;
  QTableView* source_table_;
  QTableView* kernel_table_;
  KernelGroupModel* groups_;
  QTableView* group_table_;
  OpTreeModel* op_tree_;
  QTreeView* op_tree_view_;
  QLineEdit* find_;
  QToolButton* find_previous_;
  QToolButton* find_next_;
  QLabel* find_status_;
  QStackedWidget* tables_;
  QWidget* table_bar_;  // the filter and "Group by"
  QComboBox* group_by_;
  QLabel* count_;
  QLineEdit* filter_;
  QTimer* filter_timer_;
  QWidget* import_bar_;
  QLabel* stage_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QLabel* errors_;
  QTimer* progress_timer_;
  QAction* open_whatif_;
  QAction* open_bottleneck_;
  QAction* open_tuner_;
  QWidget* empty_;
  QPushButton* sample_button_;

  QStringList pending_;
  QString importing_file_;
  int import_total_ = 0, import_index_ = 0;  // of the current batch, for "file 2 of 3"
  bool import_running_ = false;
  std::shared_ptr<ImportJobState> import_state_;
  QFuture<ImportOutcome> import_future_;
  ImportOutcome last_outcome_;
  QStringList batch_errors_;

  quint64 sources_generation_ = 0;
  int sources_running_ = 0;
  quint64 kernels_generation_ = 0;
  int kernels_running_ = 0;
  int64_t shown_source_id_ = 0;  // the source whose kernels are shown or being loaded
  std::shared_ptr<std::atomic<bool>> kernels_cancel_;
  // Behind a pointer so the GUI thread moves the rows out instead of copying them (QFuture's
  // takeResult() would do that too, but it resets the future, and waitForFinished() then hangs).
  QFuture<std::shared_ptr<SourceKernels>> kernels_future_;
  bool selecting_ = false;  // a programmatic selection change, not the user's
};

}  // namespace perfloom::ui
