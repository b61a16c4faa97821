#pragma once
// The tuner view (DESIGN.md idea 3, issues #8, #9 and #60). Kernel "GEMM": for a GEMM shape and a
// GPU, the predicted latency of each candidate tile configuration (best highlighted, with its
// reason) and the wave steps: the predicted latency of the top configurations as M (or N) sweeps.
// Kernel "Fused MoE": for E, N, H, top-k, a dtype and a GPU, the fused-MoE kernel's configurations
// ranked per token count by tuner::tune_moe (as `perfloom tune --moe`), the tuned time against vLLM's
// default across the token counts, and vLLM's configuration file to export. Computed in a background
// job; results of an older selection are dropped.
#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "model/gpu_database.h"
#include "model/tuner/moe_tuner.h"
#include "model/tuner/tuner.h"
#include "ui/result_table_model.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableView;

namespace perfloom::ui {

class GpuPicker;

struct TunerRequest {
  tuner::GemmShape shape;
  GpuSpec gpu;
  char sweep_dim = 'M';   // 'M' or 'N'
  int top = 12;           // configurations in the bar chart and the table
  int sweep_configs = 3;  // the best few, swept
  int sweep_points = 121;
  // Ranks a GPU without a tuner table when it is the learned predictor (tuner::tune_gemm); may be null.
  std::shared_ptr<const KernelPredictor> predictor;
};

struct TunerSweepSeries {
  QString label;
  TileConfig config;
  std::vector<double> dims, pred_us;  // the swept dimension and the prediction there
};

struct TunerViewResult {
  QString gpu_id, gpu_name;
  tuner::GemmShape shape;
  QString method, note, error;
  std::vector<tuner::RankedConfig> ranked;  // best first
  double refusal_threshold = NAN;           // tuner::TuneResult's: refusal_p at or above it, likely refused by cuBLASLt
  char sweep_dim = 'M';
  std::vector<TunerSweepSeries> sweep;
};

// "128×256×64 s1 c2×1": tile M×N×K, split-K, cluster (perfloom's orientation, M first).
QString config_label(const TileConfig& t);
// Ranks the configurations and sweeps the dimension (tune_gemm and the same table, learned or
// analytical model for every point). Errors (a dtype the GPU lacks, a corrupt table) land in `error`.
TunerViewResult compute_tuner(const TunerRequest& req);
QChart* build_tuner_bar_chart(const TunerViewResult& r);
QChart* build_tuner_sweep_chart(const TunerViewResult& r);

// One row per ranked configuration.
class TunerRankModel : public ResultTableModel<TunerRankModel, TunerViewResult, &TunerViewResult::ranked> {
  Q_OBJECT
 public:
  // Option: cuBLASLt's custom option the table's variant model names (its tooltip: what its kernels showed).
  // Range: the 80% interval of the latency (tuner.h RankedConfig::lo_us..hi_us), "–" where there is none.
  // A configuration the table's acceptance model predicts cuBLASLt refuses is greyed, its reason says why.
  enum Column { Rank, Tile, SplitK, Cluster, PredUs, Range, Waves, Fill, Option, Reason, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr const char* kHeaders[ColumnCount] = {"rank",      "tile M×N×K",     "split-K", "cluster M×N",
                                                        "pred (µs)", "80% range (µs)", "waves",   "last wave",
                                                        "option",    "reason"};
  using ResultTableModel::ResultTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
};

// The fused-MoE mode's inputs: tuner::tune_moe's.
struct MoeTunerRequest {
  tuner::MoeShape shape;
  tuner::MoeDtype dtype = tuner::MoeDtype::bf16;
  GpuSpec gpu;
  std::vector<int64_t> tokens = tuner::vllm_moe_token_counts();
};

struct MoeTunerViewResult {
  QString gpu_id, gpu_name, error;
  tuner::MoeShape shape;
  tuner::MoeDtype dtype = tuner::MoeDtype::bf16;
  QString config_file;                        // tuner::vllm_moe_config_file_name
  std::vector<tuner::MoeTokenResult> tokens;  // tune_moe's, one per token count
};

// "64×128×128 g16 w4 s3": BLOCK_SIZE_M×N×K, GROUP_SIZE_M, num_warps, num_stages.
QString moe_config_label(const tuner::MoeConfig& c);
// "bf16", "fp8", "fp8-block" (also "fp8_block", "bfloat16", "fp8_w8a8", as `tune --dtype` takes them).
std::optional<tuner::MoeDtype> parse_moe_dtype(const QString& name);
// tuner::tune_moe over the request's token counts (and the file name vLLM reads). Errors (topk
// above E, a dtype the GPU has no tensor path for) land in `error`.
MoeTunerViewResult compute_moe_tuner(const MoeTunerRequest& req);
// Each token count's first configuration against vLLM's default, predicted µs over the token
// counts (both axes logarithmic), the two at `selected_tokens` marked.
QChart* build_moe_tuner_chart(const MoeTunerViewResult& r, int64_t selected_tokens);

// One row per ranked fused-MoE configuration at one token count.
class MoeRankModel : public ResultTableModel<MoeRankModel, tuner::MoeTokenResult, &tuner::MoeTokenResult::ranked> {
  Q_OBJECT
 public:
  // vs default: vLLM's default configuration's predicted time over this one's.
  enum Column { Rank, BlockM, BlockN, BlockK, GroupM, Warps, Stages, PredUs, VsDefault, Reason, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr const char* kHeaders[ColumnCount] = {"rank",         "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K",
                                                        "GROUP_SIZE_M", "num_warps",    "num_stages",   "pred (µs)",
                                                        "vs default",   "reason"};
  using ResultTableModel::ResultTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
};

enum class TunerKernel { gemm, moe };

class TunerView : public QWidget {
  Q_OBJECT
 public:
  explicit TunerView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor = nullptr,
                     QWidget* parent = nullptr);
  ~TunerView() override;
  // Sets the inputs and recomputes; `dtype` by name (bf16, fp8e4m3, ...), `sweep_dim` 'M' or 'N'.
  void setSelection(int64_t M, int64_t N, int64_t K, const QString& dtype, const QString& gpu_id, char sweep_dim = 'M');
  const TunerViewResult& result() const { return result_; }
  TunerRankModel* rankModel() const { return model_; }
  QChartView* barChartView() const { return bars_view_; }
  QChartView* sweepChartView() const { return sweep_view_; }
  GpuPicker* gpuPicker() const { return picker_; }
  QLabel* statusLabel() const { return status_; }
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0; }
  // Shows `r` when `generation` is still the newest request; returns false (and drops it) otherwise.
  bool applyResult(quint64 generation, const TunerViewResult& r);
  // Writes the shown ranking's first `top` configurations as a collector plan (sampling_plan.h
  // timing_plan: each with its custom option) to `path`, to time on the GPU; false with `error` set
  // when there is nothing ranked or the file cannot be written. The "Export timing plan…" button.
  bool saveTimingPlan(const QString& path, int top = 3, QString* error = nullptr) const;
  QPushButton* timingPlanButton() const { return timing_plan_; }

  // The "Kernel" choice: GEMM or Fused MoE; switching recomputes the mode's ranking.
  void setKernel(TunerKernel kernel);
  TunerKernel kernel() const;
  QComboBox* kernelCombo() const { return kernel_; }
  // The fused-MoE inputs (`perfloom tune --moe E,N,H,topk --dtype DT --gpu ID`), switching to that
  // mode; `dtype` bf16, fp8 or fp8-block.
  void setMoeSelection(int64_t E, int64_t N, int64_t H, int64_t topk, const QString& dtype, const QString& gpu_id);
  // "From model": E, N, H and top-k of a bundled MoE model (N its expert width over `tp`, the
  // intermediate per tensor-parallel rank as vLLM names it). False, with `error` set, for a model that
  // cannot be loaded, a dense one, or an expert width `tp` does not divide.
  bool fillFromModel(const QString& model_id, int tp = 1, QString* error = nullptr);
  // The bundled models with experts (the "from model" list).
  QStringList moeModelIds() const;
  QSpinBox* moeExpertsBox() const { return e_; }
  QSpinBox* moeIntermediateBox() const { return moe_n_; }
  QSpinBox* moeHiddenBox() const { return h_; }
  QSpinBox* moeTopkBox() const { return topk_; }
  QComboBox* moeDtypeCombo() const { return moe_dtype_; }
  QComboBox* fromModelCombo() const { return from_model_; }
  QSpinBox* moeTpBox() const { return tp_; }  // the TP degree "from model" divides the expert width by
  // The token count whose ranking the table shows (one of vLLM's); false for another.
  bool setMoeTokens(int64_t tokens);
  int64_t moeTokens() const;
  QComboBox* moeTokensCombo() const { return tokens_; }
  const MoeTunerViewResult& moeResult() const { return moe_result_; }
  MoeRankModel* moeRankModel() const { return moe_model_; }
  QChartView* moeChartView() const { return moe_view_; }
  bool applyMoeResult(quint64 generation, const MoeTunerViewResult& r);
  // Writes vLLM's configuration file of the shown fused-MoE ranking (tuner::write_vllm_moe_config,
  // as `perfloom tune --moe --out DIR`) to `path`; false with `error` set when nothing is ranked or the
  // file cannot be written. The "Export vLLM config…" button, which proposes moeResult().config_file.
  bool saveVllmConfig(const QString& path, QString* error = nullptr) const;
  QPushButton* vllmConfigButton() const { return vllm_config_; }

 public slots:
  void recompute();

 private:
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QSpinBox* m_;
  QSpinBox* n_;
  QSpinBox* k_;
  QComboBox* dtype_;
  QComboBox* sweep_;
  GpuPicker* picker_;
  QChartView* bars_view_;
  QChartView* sweep_view_;
  TunerRankModel* model_;
  QTableView* table_;
  QLabel* status_;
  QPushButton* timing_plan_;
  QComboBox* kernel_;
  QStackedWidget* inputs_;
  QStackedWidget* outputs_;
  QStackedWidget* buttons_;
  QSpinBox* e_;
  QSpinBox* moe_n_;
  QSpinBox* h_;
  QSpinBox* topk_;
  QComboBox* moe_dtype_;
  QComboBox* from_model_;
  QSpinBox* tp_;
  QComboBox* tokens_;
  QChartView* moe_view_;
  MoeRankModel* moe_model_;
  QTableView* moe_table_;
  QPushButton* vllm_config_;
  QStringList moe_models_;
  MoeTunerViewResult moe_result_;
  void showMoeTokens();
  void recomputeMoe(quint64 generation, const GpuSpec& gpu);
  TunerViewResult result_;
  quint64 generation_ = 0;
  int running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
