#pragma once
// The tuner's two lookup tables for one GPU (docs/prediction.md, the tuner), and their JSON form
// (resources/tuner/<gpu-id>.json.gz, schema perfloom-tuner/2, read at run time from the resources):
//   1. per shape bucket (dtype group, octave of M, N and K) the few configurations that were
//      fastest at the measured shapes in it: the candidates of a query;
//   2. per configuration class (tile M x N x K, split-K or not) the fitted coefficients of the
//      wave model (wave_model.h): a candidate's latency is one dot product.
// A query therefore costs a bucket lookup and a dozen dot products: microseconds.
#include <array>
#include <cmath>
#include <compare>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "model/gpu_spec.h"
#include "model/tuner/wave_model.h"
#include "model/xgb_booster.h"

namespace perfloom::tuner {

class TunerTableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Coefficients = std::array<double, kFeatureCount>;

// Configurations of one class share coefficients; cluster shape and stages change only the slots.
struct TileClassKey {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  bool split = false;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy misreads the defaulted comparison
  auto operator<=>(const TileClassKey&) const = default;
};
TileClassKey class_of(const TileConfig& t);

struct ClassFit {
  Coefficients coef{};  // the whole model of the class (global fit + the class's ridge deviation)
  int samples = 0;      // measured (shape, configuration) points of the class in the fit
};

// An exact configuration without its stage count (tile, split-K, cluster).
struct ConfigKey {
  int tile_m = 0, tile_n = 0, tile_k = 0, split_k = 1, cluster_m = 1, cluster_n = 1;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy misreads the defaulted comparison
  auto operator<=>(const ConfigKey&) const = default;
};
ConfigKey config_key(const TileConfig& t);

// Octaves: floor(log2(dim)).
struct BucketKey {
  int m = 0, n = 0, k = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy misreads the defaulted comparison
  auto operator<=>(const BucketKey&) const = default;
};
BucketKey bucket_of(int64_t M, int64_t N, int64_t K);

// A measured shape of the fit and its fastest configurations, best first (tuner_fit.h
// FitOptions::candidates_per_shape, within candidate_within of its best): a query's nearest measured
// shapes lend it their winners, which octave buckets blur (tuner.h table_candidates).
struct ShapeWinners {
  ShapeWinners(int64_t m, int64_t n, int64_t k, std::vector<TileConfig> best)
      : M(m),
        N(n),
        K(k),
        configs(std::move(best)),
        log2_dims{std::log2(static_cast<double>(m)), std::log2(static_cast<double>(n)),
                  std::log2(static_cast<double>(k))} {}
  int64_t M = 0, N = 0, K = 0;
  std::vector<TileConfig> configs;
  // log2 of M, N and K, taken once here rather than for every measured shape of every query.
  std::array<double, 3> log2_dims{};
};

struct GroupTable {
  Coefficients global{};  // a class the table has not seen uses these
  std::map<TileClassKey, ClassFit> classes;
  std::map<BucketKey, std::vector<TileConfig>> buckets;  // best first
  std::vector<TileConfig> common;                        // configurations that won most often in the group
  std::vector<ShapeWinners> winners;  // per measured shape (JSON "winners", optional: a table without it has none)
  // Every distinct configuration (tile, split-K, cluster) of buckets, winners and common, in that order:
  // what a query's latency model may pick from beyond the nearest shapes' candidates (tuner.h
  // query_candidates). Derived, not in the JSON: index_catalogue builds it after a parse or a fit.
  std::vector<TileConfig> catalogue;
  // Residual correction in log space (wave_model.h residual_features); all zero: none.
  std::array<double, kResidualCount> residual{};
  // Per exact configuration a shrunk multiplicative factor (JSON keys: config_key_string).
  std::map<ConfigKey, double> config_factor;
  // Learned residual: gradient-boosted trees on wave_model.h learned_features, predicting
  // log(measured / the prediction above) relative to the shape's other configurations; null: none.
  std::shared_ptr<const XgbBooster> learned;
  int shapes = 0, samples = 0;  // what the fit saw
  // How far a measured latency falls from the prediction (the 10th and 90th percentiles of
  // log(measured / predicted)) over the configurations predicted within 10% of their shape's
  // fastest, out-of-sample by the chooser's fold tables (tuner_fit.h): the near-best configurations
  // a query ranks first. Its 80% interval is the prediction times exp of these. rows 0: none (JSON "interval",
  // optional).
  struct Interval {
    double lo_log = 0, hi_log = 0;
    int rows = 0;
  } interval;
};

// Fills group.catalogue from its buckets, winners and common configurations (stages cleared).
void index_catalogue(GroupTable& group);

// The chooser (tuner_fit.h FitOptions::ranker_rounds): gradient-boosted trees trained with one of
// XGBoost's learning-to-rank objectives, one query group per exhaustively measured training shape,
// the relevance graded by how close each configuration came to that shape's best. Its inputs are
// wave_model.h learned_features and three of the latency model's outputs relative to the shape's
// other candidates (log predicted latency and log score above the lowest, and the score's rank,
// capped at 10), so that it learns when the model's gaps can be trusted. A query orders its
// candidates by it; the latency stays the model's.
inline constexpr std::size_t kRankerCount = kLearnedCount + 3;
const std::array<std::string, kRankerCount>& ranker_names();
// The ranker's rows (row-major, kRankerCount per configuration) for the configurations of one shape.
std::vector<float> ranker_rows(const GemmShape& shape, const std::vector<TileConfig>& configs,
                               const std::vector<WaveFeatures>& features, const std::vector<double>& pred_us,
                               const std::vector<double>& score);
struct TunerRanker {
  std::shared_ptr<const XgbBooster> booster;  // null: none (the candidates are ordered by score)
  std::string objective, grading;             // what the fit chose by cross-validation on its training shapes
  int shapes = 0;                             // query groups it was trained on
};

// The variant model (model/tuner/variant_model.h): gradient-boosted trees that predict how much
// slower each cuBLASLt custom option (CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: on Hopper's nvjet kernels
// the raster order, the cooperative schedule and the operand order) makes a configuration than its
// fastest option at a shape, and per dtype group and exact configuration (tile, split-K, cluster)
// the options cuBLASLt accepted for it where it was measured (a configuration not measured: the
// options every measured cluster of its tile was accepted with; none where the tile never was).
struct VariantModel {
  std::shared_ptr<const XgbBooster> booster;                              // null: none
  std::map<std::string, std::map<ConfigKey, std::vector<int>>> accepted;  // by dtype_group()
  std::map<int, std::string> labels;  // per custom option, what its kernels showed most often ("raster v, TNN")
  int points = 0;                     // (shape, configuration) points timed with two options or more
};

// The acceptance model (model/tuner/acceptance_model.h): gradient-boosted trees that predict the
// probability that cuBLASLt refuses a configuration at a shape. A query moves the configurations
// whose probability is at least `threshold` behind the others. 0.3: on 2,375 held-out GEMMs of the H200
// it leaves 17 of the first choice's 38 refusals, 0.5 and 0.7 21, the first choice within 3% of the
// fastest timed as often; at the GEMMs of 32 further seeds of random GEMMs where it moves the first
// choice, that choice is within 3% (refusals as misses) on 75.4% at 0.3, 69.5% at 0.5, 63.1% at 0.7: a
// demoted first choice costs little, a refused one is a miss.
struct AcceptanceModel {
  std::shared_ptr<const XgbBooster> booster;  // null: none
  double threshold = 0.3;
  int points = 0, refused = 0;  // the plan points it was trained on, and how many were refused
};

struct TunerTable {
  std::string gpu_id;
  int sm_count = 0;
  std::string source;                        // what it was fitted on
  double support_penalty = 0;                // ranking score = latency x (1 + penalty / sqrt(1 + class samples))
  SlotsByCluster slots_by_cluster;           // concurrent CTAs per cluster size, measured
  std::map<std::string, GroupTable> groups;  // by dtype_group()
  TunerRanker ranker;                        // optional (JSON "ranker"; tables without one rank by score)
  VariantModel variants;                     // optional (JSON "variants"; tables without one name no custom option)
  AcceptanceModel
      acceptance;     // optional (JSON "acceptance"; tables without one keep refused configurations where they rank)
  std::string label;  // where it was read from, for messages
};

// The group's predicted latency of one configuration from its wave features: the class's (else the
// group's) linear wave model, floored at 80% of the compulsory DRAM time and a microsecond, times
// the residual correction and the configuration's factor. `class_samples` gets the class's points
// (0: the group's fit). `with_correction` false gives the linear model alone (what the fit needs).
double group_latency(const GroupTable& group, const GemmShape& shape, const TileConfig& config, const WaveFeatures& f,
                     int* class_samples = nullptr, bool with_correction = true);
// One batched call of `booster` on each of `configs` of one shape, whose input row is
// `row(shape, config, its features)` (a std::array): the learned residual's and the acceptance
// model's prediction per listed configuration.
template <class RowFn>
std::vector<float> predict_each_config(const XgbBooster& booster, const GemmShape& shape,
                                       const std::vector<TileConfig>& configs,
                                       const std::vector<WaveFeatures>& features, RowFn row) {
  constexpr std::size_t width =
      std::tuple_size_v<std::invoke_result_t<RowFn, const GemmShape&, const TileConfig&, const WaveFeatures&>>;
  std::vector<float> rows;
  rows.reserve(configs.size() * width);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto r = row(shape, configs[i], features[i]);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return booster.predict(rows.data(), configs.size(), width);
}
// The learned residual's factor for each of `configs` of one shape (one batched prediction; every
// factor 1 when the group has none), exp of the prediction clamped to [-1, 1].
std::vector<double> learned_factors(const GroupTable& group, const GemmShape& shape,
                                    const std::vector<TileConfig>& configs, const std::vector<WaveFeatures>& features);
// config_to_string without the stage count: the key of GroupTable::config_factor.
std::string config_key_string(const TileConfig& t);

// "128x256x64/s1/c1x2" (tile M x N x K in perfloom's orientation, split-K, cluster M x N), with
// "/st4" appended when the stage count is known.
std::string config_to_string(const TileConfig& t);
// Throws TunerTableError naming the text when it is not in that form.
TileConfig config_from_string(std::string_view text);

// Parses and validates a table: schema, feature list, finite coefficients of the right length,
// well-formed configurations. Throws TunerTableError with `label`, the field and the reason.
TunerTable parse_tuner_table(std::string_view json_text, const std::string& label);
std::string tuner_table_to_json(const TunerTable& table);

// Throws TunerTableError when the table was fitted for another GPU (id or SM count differ).
void check_table_matches(const TunerTable& table, const GpuSpec& gpu);

// The bundled table for this GPU (<resources>/tuner/<id>.json.gz, read once at the first call), or
// nullptr when there is none. Throws TunerTableError naming the file when it is corrupt or was fitted
// for another GPU.
const TunerTable* bundled_tuner_table(const GpuSpec& gpu);
// Ids of the GPUs that have a bundled table file.
std::vector<std::string> bundled_tuner_gpus();

}  // namespace perfloom::tuner
