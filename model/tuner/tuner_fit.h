#pragma once
// Fitting the tuner's tables from measured (shape, configuration, latency) points: a cuBLASLt
// tile-configuration sweep (data/<gpu>/tiles.csv) or the points a sampling plan asked for.
#include <functional>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/tuner/tuner_table.h"

namespace perfloom::tuner {

struct TunerSample {
  GemmShape shape;
  TileConfig config;  // perfloom's orientation: tile_m along M
  double latency_us = 0;
  int launched_ctas = 0;   // CTAs of the launch grid (0: unknown); persistent kernels cap it at the slots
  int heuristic_rank = 0;  // the collector's: 1 = cuBLASLt's default choice (informational)
  double weight = 1.0;     // the row's weight in the fits (e.g. plan rows against sweep rows)
  // cuBLASLt's custom option the kernel ran with (variant_model.h nvjet_custom_option: read from its
  // nvjet kernel's name), -1: unknown. to_fastest_option() uses it.
  int custom_option = -1;
};

struct FitOptions {
  double class_ridge = 3.0;        // pull of a class's coefficients toward its group's fit
  double support_penalty = 0.10;   // ranking prefers classes the fit saw often (tuner_table.h)
  double candidate_within = 1.10;  // configurations this close to a shape's best become candidates
  int candidates_per_shape = 4;
  int bucket_cap = 8;    // candidates kept per shape bucket
  int common_count = 6;  // most frequent winners of a group, candidates of every query
  // Rows slower than `far_from_best` x their shape's best weigh `far_weight` in the fits: the
  // ranking needs the model right among the fast configurations more than among the slow ones.
  double far_from_best = 1e30;
  double far_weight = 1.0;
  int shape_effect_rounds = 0;  // alternating rounds with a free scale per shape (0: none)
  int min_class_samples = 2;    // rarer classes are not stored: they use the group's coefficients
  // Residual correction (wave_model.h residual_features): per group a ridge fit of
  // log(measured / linear model) on the residual features; negative: off. Rows slower than
  // `residual_near` x their shape's best weigh `residual_far_weight`.
  double residual_ridge = 1.0;
  double residual_near = 1.25;
  double residual_far_weight = 0.2;
  // Per exact configuration (tile, split-K, cluster) a multiplicative factor, the mean log
  // residual left after the correction shrunk toward 1 by `config_ridge` pseudo-points; negative: off.
  double config_ridge = 10.0;
  // Learned residual (tuner_table.h GroupTable::learned): per group gradient-boosted trees on
  // wave_model.h learned_features, fitted to log(measured / the prediction with the corrections
  // above) minus its shape's mean (how the configurations of one shape differ, which is what the
  // ranking needs), rows weighted as for the residual correction; 0 rounds: off.
  // 400 rounds of depth 6: chosen by nested cross-validation among 200/400 rounds x depth 4/6.
  int learned_rounds = 400;
  int learned_depth = 6;
  double learned_eta = 0.05;
  // Chooser (tuner_table.h TunerRanker): learning-to-rank trees over the exhaustively measured
  // shapes (those with at least `ranker_min_configs` configurations: a tile sweep's, not a sampling
  // plan's ~9), one query group each. Its model inputs must be out-of-sample, as at a query: the
  // shapes are split into `ranker_folds` folds by shape_fold(), and each fold's shapes are predicted
  // by a table fitted without them (every other row kept). The objective (rank:pairwise or
  // rank:ndcg) and the relevance grading are chosen by cross-validation over the same folds (the
  // share of held-out shapes whose first choice is within 3% of their best). 0 rounds: none.
  // 800 rounds of depth 8: with ~5,000 query groups a chooser of 200 rounds of depth 4 underfits; by
  // the same fold cross-validation (rank:ndcg, 1/3/5/10%) its held-out first choice is within 3% on
  // 79.9 / 80.9% of the shapes (H100 / H200), 86.8 / 87.2% with 800 of depth 8, 86.8 / 86.9% with
  // 1,500 of depth 8 at eta 0.05.
  int ranker_rounds = 800;
  int ranker_depth = 8;
  double ranker_eta = 0.1;
  int ranker_min_configs = 18;
  int ranker_folds = 5;
  int ranker_min_shapes = 20;  // fewer exhaustive shapes: no chooser
  // Offline experiments on the chooser (perfloom-tuner-fit --dump-ranker): called once per query group
  // the chooser is trained on, with its inputs as the fit computes them (out-of-sample, by the fold
  // table). Unset: nothing is called.
  struct RankerGroup {
    const GemmShape& shape;
    int fold;
    const std::vector<TileConfig>& configs;
    const std::vector<WaveFeatures>& features;
    const std::vector<double>& pred_us;
    const std::vector<double>& score;
    const std::vector<double>& ratio;  // measured latency / the group's fastest
  };
  std::function<void(const RankerGroup&)> on_ranker_group;
  // Work fitted at once: the dtype groups, the chooser's fold tables and its cross-validation's
  // boosters (0: one per hardware thread). The table is the same, to the byte, for any number:
  // every booster trains on one thread with a fixed seed, and the results are gathered in order.
  int threads = 0;
};

// The fold of a shape, 0..folds-1: FNV-1a of "dtype:M,N,K" (the tuner evaluation's folds).
int shape_fold(const GemmShape& s, int folds);

// Concurrent CTAs per cluster size as the launch grids of persistent kernels show them (the
// largest grid launched with fewer CTAs than there were tiles).
SlotsByCluster measured_slots(const std::vector<TunerSample>& samples, const GpuSpec& gpu);

// Least squares per dtype group (relative error: every row weighted by 1 / latency^2), then per
// configuration class a ridge fit pulled toward the group's coefficients; buckets from the
// fastest configurations per shape. Throws std::invalid_argument when `samples` is empty.
TunerTable fit_tuner_table(const std::vector<TunerSample>& samples, const GpuSpec& gpu, const FitOptions& options = {},
                           const std::string& source = "");

// Table 1 (buckets, the shapes' winners, the most frequent winners) of every group of `table` again
// from `samples`, as fit_tuner_table builds it; the fitted coefficients and models are left alone.
// It is cheap (a sort per shape): a table's candidates can follow a change in how they are chosen
// without a refit of its models. perfloom-tuner-fit builds them in fit_tuner_table; only the tests
// call this.
void refit_candidates(TunerTable& table, const std::vector<TunerSample>& samples, const FitOptions& options = {});

}  // namespace perfloom::tuner
