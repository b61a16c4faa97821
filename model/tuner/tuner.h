#pragma once
// The wave-aware GEMM tuner (DESIGN.md, idea 3): ranked tile configurations with predicted
// latency, waves and the reason, in microseconds per query. With a fitted table for the GPU
// (resources/tuner/<gpu-id>.json.gz) the candidates come from the query's shape bucket and the
// latency from the wave model's class coefficients ("wave-table"). Without one, the analytical
// GEMM model's candidate tiles are ranked by the roofline predictor with the tile given
// ("analytical").
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/gpu_spec.h"
#include "model/predictor.h"
#include "model/tuner/tuner_table.h"

namespace perfloom::tuner {

struct RankedConfig {
  TileConfig config;
  double pred_us = 0;
  double score = 0;  // what the ranking sorts by (the latency, with the support penalty)
  WaveGrid grid;
  int class_samples = -1;  // points the class's fit saw; -1 for the analytical model
  // The table's chooser (TunerTable::ranker), higher first; 0 without one; NaN for a configuration it did not
  // score (beyond the kChooserRows the latency model scores best), which comes after those it did.
  double rank_score = 0;
  std::size_t index = 0;  // position in the configurations given to the ranking
  std::string reason;     // "1 wave, 97% full, 112 K-iterations"
  // The kernel variant the table's variant model names (TunerTable::variants, variant_model.h):
  // cuBLASLt's custom option to set (CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION; -1: none named, as for
  // GPUs without a table) and what its kernels showed where it was measured ("raster v, TNN").
  int custom_option = -1;
  std::string variant;
  // An 80% interval of the latency (NaN: none): the table's out-of-sample spread of measured over
  // predicted latency among near-best configurations (GroupTable::interval), or the predictor's
  // p10..p90 (KernelPredictor), scaled with pred_us where the analytical ranking is (rank_analytical).
  double lo_us = NAN, hi_us = NAN;
  // The probability that cuBLASLt refuses the configuration at the shape (the table's acceptance model,
  // acceptance_model.h; NaN: none). The ranking puts those at or above the model's threshold last.
  double refusal_p = NAN;
};

// Whether the acceptance model predicts that cuBLASLt refuses `c` (its refusal_p at or above `threshold`: the table's
// AcceptanceModel::threshold, TuneResult::refusal_threshold); false where either is NaN (no model).
inline bool likely_refused(const RankedConfig& c, double threshold) { return c.refusal_p >= threshold; }

struct TuneResult {
  std::string method;  // "wave-table" or "analytical"
  std::string note;    // which table, or why there was none
  // What orders `ranked`: "chooser" (the table's learned chooser, rank_score; two configurations
  // whose pred_us are within a few percent may come in either order) or "pred_us".
  std::string ranked_by = "pred_us";
  std::vector<RankedConfig> ranked;
  // "analytical" only: the learned predictor's latency of the GEMM with no tile given (what `perfloom
  // predict` answers for it) that the ranking's latencies were scaled to (rank_analytical); NaN: not scaled.
  double anchor_us = NAN;
  // "wave-table" with the table's acceptance model: its threshold (AcceptanceModel::threshold); configurations whose
  // refusal_p is at least this come after the others. NaN: no acceptance model.
  double refusal_threshold = NAN;
};

// The table's prediction for one configuration. Throws TunerTableError when the table has no fit
// for the shape's dtype group.
RankedConfig evaluate_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                 const TileConfig& config);
// Every configuration predicted, in the order given (no chooser, no reasons).
std::vector<RankedConfig> predict_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                             const std::vector<TileConfig>& configs);
// The chooser scores only the kChooserRows configurations of a query's list (~27) that the latency model scores best;
// the rest follow them in the model's order. Its 800 trees of depth 8 on the whole list are about half of a query
// (perfloom-bench-tune: 3.2-3.5 of 7.1-7.3 ms; on 16 rows 2.1-2.5 ms); on the whole list its first choice lies
// beyond the model's 16 best at 0-4 of 800 held-out GEMMs per timed lists file (H100 and H200), and the share of
// first choices within 3% of the fastest differs by at most 0.1 points.
inline constexpr std::size_t kChooserRows = 16;
// Every configuration predicted and ordered best first: by the table's chooser (TunerTable::ranker)
// where it has one, else by score, those the table's acceptance model predicts cuBLASLt refuses
// (TunerTable::acceptance) after the others, in the same order (reasons only when asked: a string per candidate is most
// of a query's cost). `chooser_rows`: how many the chooser scores (SIZE_MAX: every one).
std::vector<RankedConfig> rank_with_table(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                          const std::vector<TileConfig>& configs, bool with_reasons = true,
                                          std::size_t chooser_rows = kChooserRows);
// The candidates of a query: the configurations of the nearest shape buckets (octaves of M, N and
// K, nearest first, at least `want` of them), the winners of the `nearest` measured shapes closest
// to it (distance: the sum of |log2| ratios of M, N and K; GroupTable::winners) and the group's
// most frequent winners. 4 nearest shapes: with the buckets' candidates they hold a configuration within 3% of the
// best on 85.1 / 84.1% of held-out shapes (H100 / H200), the buckets alone on 77.8 / 76.5%; 4 is the smallest count
// that closes most of that gap.
inline constexpr std::size_t kNearestShapes = 4;
// The `n` measured shapes of the group nearest to `shape` (same distance), nearest first, with their distance.
std::vector<std::pair<double, const ShapeWinners*>> nearest_winners(const GroupTable& group, const GemmShape& shape,
                                                                    std::size_t n);
std::vector<TileConfig> table_candidates(const GroupTable& group, const GemmShape& shape, std::size_t want = 8,
                                         std::size_t nearest = kNearestShapes);
// The `n` configurations of the group's whole catalogue (GroupTable::catalogue) that the latency model
// (wave model, learned residual and support penalty: RankedConfig::score, not the chooser) scores best
// at `shape`, best first.
// `prefilter` > 0: only the `prefilter` best by the wave model without its learned residual (dot products)
// go through the residual's trees, which keeps a query under a millisecond (kModelPrefilter).
std::vector<TileConfig> model_best(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape, std::size_t n,
                                   std::size_t prefilter);
// What a query ranks: table_candidates plus the kModelBest of model_best: the nearest shapes' winners
// often miss a GEMM's best tile, which the latency model finds in the whole table. Timed against
// table_candidates alone at 496 / 503 new H100 / H200 GEMMs (mostly unmeasured shapes): the first choice
// within 3% of the fastest timed on 60.7 -> 68.3% / 61.2 -> 71.2% of them, the fastest of the first 3 on
// 74.6 -> 89.1% / 71.4 -> 92.2%; ~0.6-0.9 ms per query instead of ~0.15-0.18. Empty where the group has no
// table candidates.
// `nearest` and `prefilter` as table_candidates' and model_best's (experiments; the defaults are what tune_gemm uses).
inline constexpr std::size_t kModelBest = 10;
inline constexpr std::size_t kModelPrefilter = 60;
std::vector<TileConfig> query_candidates(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                                         std::size_t nearest = kNearestShapes, std::size_t prefilter = kModelPrefilter);

// The analytical model's candidate tiles (with split-K where the output leaves SMs idle), each
// predicted by the roofline predictor with the tile set, best first.
std::vector<RankedConfig> rank_analytical(const GpuSpec& gpu, const GemmShape& shape);
// The configurations rank_analytical predicts: the analytical GEMM model's candidate tiles, with split-K
// where the output tiles leave most SMs idle.
std::vector<TileConfig> analytical_candidates(const GpuSpec& gpu, const GemmShape& shape);
// `configs`, each predicted by `predictor` with its tile set (the learned models: one batched call per
// booster), best first; `index` is the position in `configs`. Configurations it refuses are left out.
std::vector<RankedConfig> rank_learned(const KernelPredictor& predictor, const GpuSpec& gpu, const GemmShape& shape,
                                       const std::vector<TileConfig>& configs);
// The GEMM of `shape` with `config` set, as the predictors take it.
KernelDesc gemm_kernel(const GemmShape& shape, const TileConfig& config);
// One configuration through the analytical model.
RankedConfig evaluate_analytical(const GpuSpec& gpu, const GemmShape& shape, const TileConfig& config);
// The learned predictor's prediction of the GEMM with no tile given (the library's own choice,
// `perfloom predict`'s answer); nullopt where `predictor` is not the learned one or refuses it.
std::optional<Prediction> library_prediction(const KernelPredictor* predictor, const GpuSpec& gpu,
                                             const GemmShape& shape);
// The analytical ranking's latencies are the roofline's over a median efficiency, far off the learned
// predictor's on a GPU it was trained on (A100 4096^3 bf16: 784 against 564 us, measured 549): rank_analytical's
// configurations at `shape`, scaled so that the fastest takes library_prediction's latency (`library_us`
// gets it), so that `perfloom tune` and `perfloom predict` agree on a GPU without a table; the others keep
// their analytical ratio to it, and each interval is the learned prediction's, relative to its latency.
// Unscaled, and `library_us` NaN, where there is no library_prediction.
std::vector<RankedConfig> rank_analytical(const GpuSpec& gpu, const GemmShape& shape, const KernelPredictor* predictor,
                                          double* library_us = nullptr);

// Whether a GPU of this architecture has a bundled tuner table with a fit for the dtype's group: its
// tile sweeps are in the learned predictor's training, which then ranks a table-less GPU's tiles well
// (H100 held out, the H200's sweeps in training: 78.6% within 3% of the best, the roofline 64.1%);
// with no GPU of the architecture swept it ranks them worse than the roofline (both Hopper GPUs held
// out: 39.8% / 35.1%).
bool tile_swept(const std::string& architecture, Dtype dtype);
// Whether tune_gemm uses the learned predictor for a query when given one: `table` (may be
// null) has no fit for the dtype's group, so that the predictor ranks the candidates (the architecture
// was tile-swept) or scales the analytical ranking (rank_analytical). A caller loads the learned
// models only then.
bool uses_learned_predictor(const TunerTable* table, Dtype dtype);
// Sets each configuration's custom_option and variant from the table's variant model (nothing where
// the table has none).
void name_variants(const TunerTable& table, const GpuSpec& gpu, const GemmShape& shape,
                   std::vector<RankedConfig>& ranked);
// The query. Without a table (or its dtype's fit) the analytical candidates are ranked by `predictor`
// where it is the learned one and the GPU's architecture was tile-swept ("learned"), else by the
// roofline predictor ("analytical"), their latencies scaled to the learned predictor's (rank_analytical). Throws
// std::invalid_argument for a non-positive dimension or top_k, UnsupportedKernel when the GPU has no path for the
// dtype.
TuneResult tune_gemm(const GemmShape& shape, const GpuSpec& gpu, std::size_t top_k, const TunerTable* table,
                     const KernelPredictor* predictor = nullptr);
// The same with the bundled table of the GPU, if there is one.
TuneResult tune_gemm(const GemmShape& shape, const GpuSpec& gpu, std::size_t top_k,
                     const KernelPredictor* predictor = nullptr);

}  // namespace perfloom::tuner
