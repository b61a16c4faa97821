// The wave tuner (model/tuner/): wave arithmetic, least squares, table lookup, JSON validation,
// the sampling plan and the analytical fallback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "model/compressed_text.h"
#include "model/families/family_models.h"
#include "model/families/gemm/gemm_model.h"
#include "model/features.h"
#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/training.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/least_squares.h"
#include "model/tuner/moe_tuner.h"
#include "model/tuner/sampling_plan.h"
#include "model/tuner/tuner.h"
#include "model/tuner/tuner_fit.h"
#include "model/tuner/variant_model.h"
#include "tools/tuner_sweep.h"

using namespace perfloom;
using namespace perfloom::tuner;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

TileConfig tile(int m, int n, int k, int split = 1, int cm = 1, int cn = 1) {
  TileConfig t;
  t.tile_m = m;
  t.tile_n = n;
  t.tile_k = k;
  t.split_k = split;
  t.cluster_m = cm;
  t.cluster_n = cn;
  return t;
}

// A one-group table whose classes cost a constant each (only the "one" feature is non-zero).
TunerTable constant_table(const std::vector<std::pair<TileConfig, double>>& classes,
                          const std::vector<TileConfig>& bucket, BucketKey key) {
  TunerTable t;
  t.gpu_id = "h100-sxm";
  t.sm_count = 132;
  t.support_penalty = 0;
  GroupTable g;
  g.global[0] = 1000;
  for (const auto& [cfg, cost] : classes) {
    ClassFit f;
    f.coef[0] = cost;
    f.samples = 10;
    g.classes[class_of(cfg)] = f;
  }
  g.buckets[key] = bucket;
  g.shapes = 1;
  t.groups["16bit"] = g;
  return t;
}

// Measurements of one shape (512 x 2048 x 1024 bf16), one per configuration.
std::vector<TunerSample> one_shape_samples(const std::vector<std::pair<TileConfig, double>>& latencies) {
  std::vector<TunerSample> out;
  for (const auto& [cfg, us] : latencies) {
    TunerSample s;
    s.shape = {512, 2048, 1024, Dtype::bf16};
    s.config = cfg;
    s.latency_us = us;
    out.push_back(s);
  }
  return out;
}

// A fit without the learned residual and the chooser (the linear parts and table 1 only).
FitOptions without_trees() {
  FitOptions opt;
  opt.learned_rounds = 0;
  opt.ranker_rounds = 0;
  return opt;
}

// A table's JSON with one feature name (quoted, as the file has it) renamed must be refused, and
// the error must name `field`: a model trained on other features is not used.
void expect_refused_with_renamed_feature(const TunerTable& t, const std::string& from, const std::string& to,
                                         const std::string& field) {
  std::string text = tuner_table_to_json(t);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    parse_tuner_table(text, "bad.json");
    ADD_FAILURE() << "a model over other features (" << to << ") was accepted";
  } catch (const TunerTableError& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

// What parse_tuner_table says of `text` with the first `from` after `section` replaced by `to`: its error, "" where it
// parses, "not found: FROM" where there is no such `from`.
std::string parse_error_after(std::string text, const std::string& section, const std::string& from,
                              const std::string& to) {
  const auto at = text.find(from, text.find(section));
  if (at == std::string::npos) return "not found: " + from;
  text.replace(at, from.size(), to);
  try {
    parse_tuner_table(text, "t.json");
  } catch (const TunerTableError& e) {
    return e.what();
  }
  return "";
}

// The head of a collector plan-mode CSV with the columns tools/tuner_sweep.h reads.
const std::string kPlanSweepHeader =
    "# "
    "sweep=plan\nop,dtype,M,N,K,latency_us,kernel_name,algo_id,tile,stages,splitk,cluster,heuristic_rank,grid,reps,"
    "source\n";

}  // namespace

// ---- waves and partial waves, by hand ----

TEST(TunerWaves, OneWaveNotQuiteFull) {
  // 384x5120x2560 on 128x128x64: 3 x 40 = 120 tiles on 132 slots: one wave, 120/132 full.
  const WaveGrid g = wave_grid({384, 5120, 2560, Dtype::bf16}, tile(128, 128, 64), 132);
  EXPECT_EQ(g.tiles_m, 3);
  EXPECT_EQ(g.tiles_n, 40);
  EXPECT_EQ(g.ctas, 120);
  EXPECT_EQ(g.waves, 1);
  EXPECT_NEAR(g.last_wave_fill, 120.0 / 132.0, 1e-12);
  EXPECT_EQ(g.k_iters, 40);
}

TEST(TunerWaves, SeveralWavesWithAPartialLastOne) {
  // 4096^3 on 256x128x64: 16 x 32 = 512 tiles; 3 full waves of 132 and 116 left over.
  const WaveGrid g = wave_grid({4096, 4096, 4096, Dtype::bf16}, tile(256, 128, 64), 132);
  EXPECT_EQ(g.ctas, 512);
  EXPECT_EQ(g.waves, 4);
  EXPECT_NEAR(g.last_wave_fill, 116.0 / 132.0, 1e-12);
  EXPECT_EQ(g.k_iters, 64);
}

TEST(TunerWaves, RaggedTilesAndSplitK) {
  // 8x7168x18432, tile 8x192x64, split-K 3: ceil(7168/192) = 38 tiles x 3 slices = 114 CTAs;
  // K per slice 6144 = 96 iterations.
  const WaveGrid g = wave_grid({8, 7168, 18432, Dtype::bf16}, tile(8, 192, 64, 3), 120);
  EXPECT_EQ(g.tiles_n, 38);
  EXPECT_EQ(g.split_k, 3);
  EXPECT_EQ(g.ctas, 114);
  EXPECT_EQ(g.waves, 1);
  EXPECT_NEAR(g.last_wave_fill, 0.95, 1e-12);
  EXPECT_EQ(g.k_iters, 96);
  // K not a multiple of split x tile_k: the slices round up.
  EXPECT_EQ(wave_grid({64, 64, 1000, Dtype::bf16}, tile(64, 64, 64, 3), 132).k_iters, 6);  // ceil(334/64)
}

TEST(TunerWaves, ExactlyOnTheBoundaryAndOnePast) {
  // 264 CTAs on 132 slots: exactly two full waves; 265: a third wave with one CTA.
  const WaveGrid on = wave_grid({128 * 12, 128 * 22, 512, Dtype::bf16}, tile(128, 128, 64), 132);
  EXPECT_EQ(on.ctas, 264);
  EXPECT_EQ(on.waves, 2);
  EXPECT_DOUBLE_EQ(on.last_wave_fill, 1.0);
  const WaveGrid past = wave_grid({128 * 5, 128 * 53, 512, Dtype::bf16}, tile(128, 128, 64), 132);
  EXPECT_EQ(past.ctas, 265);
  EXPECT_EQ(past.waves, 3);
  EXPECT_NEAR(past.last_wave_fill, 1.0 / 132.0, 1e-12);
  EXPECT_EQ(describe_grid(past), "3 waves, last 1% full, 8 K-iterations");
  EXPECT_EQ(describe_grid(wave_grid({384, 5120, 2560, Dtype::bf16}, tile(128, 128, 64), 132)),
            "1 wave, 91% full, 40 K-iterations");
}

TEST(TunerWaves, ClustersPadTheTileGridAndCountInTheWaves) {
  // 384x5120x3456 on 128x128x64: 3 x 40 = 120 tiles. Clusters of 2 (M) x 4 (N) take 2 x 4 blocks of
  // tiles, so M's 3 tiles round up to 4: 160 CTAs on 120 slots (clusters of 8), two waves. On the
  // H100 this configuration took 34.98 us against 21.50 us for the same tile in 1 x 2 clusters, whose
  // 120 CTAs are one wave.
  const WaveGrid padded = wave_grid({384, 5120, 3456, Dtype::bf16}, tile(128, 128, 64, 1, 2, 4), 120);
  EXPECT_EQ(padded.ctas, 120);
  EXPECT_EQ(padded.cluster_ctas, 160);
  EXPECT_EQ(padded.waves, 2);
  EXPECT_NEAR(padded.last_wave_fill, 40.0 / 120.0, 1e-12);
  EXPECT_EQ(describe_grid(padded), "2 waves, last 33% full, 54 K-iterations, 40 CTAs of cluster padding");
  const WaveGrid whole = wave_grid({384, 5120, 3456, Dtype::bf16}, tile(128, 128, 64, 1, 1, 2), 132);
  EXPECT_EQ(whole.cluster_ctas, 120);
  EXPECT_EQ(whole.waves, 1);
  EXPECT_EQ(describe_grid(whole), "1 wave, 91% full, 54 K-iterations");
  // Split-K slices multiply the padded grid: 5 x 3 tiles in 2 x 2 clusters -> 6 x 4, x 3 slices.
  const WaveGrid split = wave_grid({5 * 64, 3 * 64, 4096, Dtype::bf16}, tile(64, 64, 64, 3, 2, 2), 132);
  EXPECT_EQ(split.ctas, 45);
  EXPECT_EQ(split.cluster_ctas, 72);
  EXPECT_EQ(split.waves, 1);
}

TEST(TunerWaves, SlotsFromOccupancyAndClusters) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  // One warp-specialised CTA per SM; clusters of 4 and 8 lose SMs to GPC fragmentation (measured).
  EXPECT_EQ(concurrent_ctas(tile(128, 128, 64), Dtype::bf16, hw), 132);
  EXPECT_EQ(concurrent_ctas(tile(128, 128, 64, 1, 2, 1), Dtype::bf16, hw), 132);
  EXPECT_EQ(concurrent_ctas(tile(128, 128, 64, 1, 1, 4), Dtype::bf16, hw), 120);
  EXPECT_EQ(concurrent_ctas(tile(128, 128, 64, 1, 2, 4), Dtype::bf16, hw), 120);
  // A small tile with few stages fits twice per SM by shared memory, but 384 threads x 168
  // registers still allow one.
  TileConfig small = tile(64, 64, 64);
  small.stages = 2;
  EXPECT_EQ(concurrent_ctas(small, Dtype::bf16, hw), 132);
  // Measured slots win.
  EXPECT_EQ(concurrent_ctas(tile(128, 128, 64, 1, 1, 4), Dtype::bf16, hw, {{4, 116}}), 116);
  EXPECT_THROW(wave_grid({0, 1, 1, Dtype::bf16}, tile(64, 64, 64), 132), std::invalid_argument);
  EXPECT_THROW(wave_grid({1, 1, 1, Dtype::bf16}, tile(64, 64, 64), 0), std::invalid_argument);
}

TEST(TunerWaves, FeaturesAreBilinearInFillAndKLoop) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  const TileConfig t = tile(128, 128, 64);
  const WaveFeatures a = wave_features({384, 5120, 2560, Dtype::bf16}, t, hw, 132);
  ASSERT_EQ(tuner::feature_names().size(), a.x.size());
  EXPECT_DOUBLE_EQ(a.x[0], 1.0);
  EXPECT_NEAR(a.x[1], 40 * mma_iteration_us(t, Dtype::bf16, hw), 1e-12);  // u = k x one iteration
  EXPECT_DOUBLE_EQ(a.x[2], a.grid.last_wave_fill);
  EXPECT_DOUBLE_EQ(a.x[3], a.x[1] * a.x[2]);
  EXPECT_DOUBLE_EQ(a.x[4], 0.0);  // one wave: no extra full waves
  EXPECT_DOUBLE_EQ(a.x[8], 0.0);  // no split-K
  // One iteration of a 128x128x64 bf16 tile: 2 x 128 x 128 x 64 FLOPs at 4096 FLOPs/clk/SM.
  EXPECT_NEAR(mma_iteration_us(t, Dtype::bf16, hw), 2.0 * 128 * 128 * 64 / 4096 / h100.clock_hz() * 1e6, 1e-12);
  // Narrow tiles are padded to the MMA shape: an 8-wide tile costs as much as a 64-wide one.
  EXPECT_DOUBLE_EQ(mma_iteration_us(tile(8, 192, 64), Dtype::bf16, hw),
                   mma_iteration_us(tile(64, 192, 64), Dtype::bf16, hw));
}

// ---- least squares ----

TEST(TunerLeastSquares, RecoversKnownBilinearCoefficients) {
  // lat = a + b k + c f + d k f, sampled on a grid of K-loop lengths and fills.
  const std::vector<double> truth = {3.5, 0.42, -1.25, 0.8};
  LeastSquares ls(4);
  for (double k : {4.0, 8.0, 16.0, 64.0, 128.0})
    for (double f : {0.05, 0.3, 0.5, 0.75, 1.0}) {
      const std::vector<double> x = {1.0, k, f, k * f};
      double y = 0;
      for (std::size_t i = 0; i < 4; ++i) y += truth[i] * x[i];
      ls.add(x, y, 1.0 / (y * y));
    }
  const auto beta = ls.solve();
  ASSERT_EQ(beta.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(beta[i], truth[i], 1e-9) << i;
}

TEST(TunerLeastSquares, RidgePullsTowardThePriorAndUndeterminedStaysThere) {
  LeastSquares empty(3);
  const std::vector<double> prior = {1, 2, 3};
  EXPECT_EQ(empty.solve(1.0, prior), prior);
  EXPECT_EQ(empty.solve(0.0, prior), prior);  // nothing determined: the prior
  // One row determines only x0 + x1; a strong ridge keeps the solution near the prior.
  LeastSquares one(2);
  one.add({1, 1}, 10);
  const auto strong = one.solve(1e6, {1, 1});
  EXPECT_NEAR(strong[0], 1, 1e-3);
  const auto weak = one.solve(1e-9, {1, 1});
  EXPECT_NEAR(weak[0] + weak[1], 10, 1e-6);
  EXPECT_THROW(one.add({1}, 1), std::invalid_argument);
  EXPECT_THROW(one.solve(0, {1, 2, 3}), std::invalid_argument);
}

TEST(TunerFit, SlotsAreReadFromPersistentLaunchesSmallerThanTheClusterPaddedGrid) {
  const GpuSpec& h100 = db().get("h100-sxm");
  TunerSample s;
  s.shape = {384, 5120, 3456, Dtype::bf16};
  s.config = tile(128, 128, 64, 1, 2, 4);  // 120 tiles, 160 CTAs in whole clusters of 8
  s.latency_us = 35;
  s.launched_ctas = 120;  // one persistent CTA per slot
  EXPECT_EQ(measured_slots({s}, h100).at(8), 120);
  s.launched_ctas = 160;  // a launch of the whole grid says nothing about the slots
  EXPECT_TRUE(measured_slots({s}, h100).empty());
}

TEST(TunerFit, ReproducesSyntheticLatencies) {
  // Samples whose latency is exactly a known coefficient vector applied to the wave features:
  // the fit must predict them back (the features are not all independent, so compare latencies).
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  const Coefficients truth = {2.0, 1.1, 0.5, -0.2, 0.3, 0.9, 1.0, 1.2, 1.5, 0.4};
  std::vector<TunerSample> samples;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> dim(1, 60);
  const std::vector<TileConfig> configs = {tile(128, 128, 64), tile(128, 256, 64, 1, 2, 1), tile(64, 128, 64, 2),
                                           tile(256, 128, 64, 1, 1, 4)};
  for (int i = 0; i < 400; ++i) {
    TunerSample s;
    s.shape = {64 * dim(rng), 64 * dim(rng), 64 * dim(rng), Dtype::bf16};
    s.config = configs[static_cast<std::size_t>(i) % configs.size()];
    const auto f = wave_features(s.shape, s.config, hw, concurrent_ctas(s.config, Dtype::bf16, hw));
    for (std::size_t j = 0; j < kFeatureCount; ++j) s.latency_us += truth[j] * f.x[j];
    samples.push_back(s);
  }
  FitOptions opt;
  opt.class_ridge = 1e-6;
  const TunerTable t = fit_tuner_table(samples, h100, opt);
  ASSERT_EQ(t.groups.count("16bit"), 1u);
  for (std::size_t i = 0; i < samples.size(); i += 37) {
    const auto r = evaluate_with_table(t, h100, samples[i].shape, samples[i].config);
    EXPECT_NEAR(r.pred_us / samples[i].latency_us, 1.0, 1e-6) << i;
  }
  // Coefficients the data pins down come back: the bilinear ones.
  const Coefficients& g = t.groups.at("16bit").global;
  EXPECT_NEAR(g[1], truth[1], 1e-4);
  EXPECT_NEAR(g[3], truth[3], 1e-4);
  EXPECT_THROW(fit_tuner_table({}, h100), std::invalid_argument);
}

TEST(TunerFit, ResidualCorrectionAndConfigurationFactorLearnWhatTheLinearFormCannot) {
  // Latency = a linear wave model x 1.15 for clusters along M x 1.25 for one exact configuration:
  // multiplicative effects the additive form cannot express. With the correction and the
  // per-configuration factor the fit predicts them back closely; without them it cannot.
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  const Coefficients truth = {2.0, 1.1, 0.5, -0.2, 0.3, 0.9, 1.0, 0.0, 0.0, 0.4};
  const std::vector<TileConfig> configs = {tile(128, 128, 64, 1, 2, 1), tile(128, 128, 64, 1, 1, 2),
                                           tile(128, 256, 64, 1, 2, 1), tile(128, 256, 64, 1, 1, 2),
                                           tile(256, 128, 64, 1, 1, 1)};
  std::vector<TunerSample> samples;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> dim(1, 60);
  for (int i = 0; i < 600; ++i) {
    TunerSample s;
    s.shape = {64 * dim(rng), 64 * dim(rng), 64 * dim(rng), Dtype::bf16};
    s.config = configs[static_cast<std::size_t>(i) % configs.size()];
    const auto f = wave_features(s.shape, s.config, hw, concurrent_ctas(s.config, Dtype::bf16, hw));
    for (std::size_t j = 0; j < kFeatureCount; ++j) s.latency_us += truth[j] * f.x[j];
    if (s.config.cluster_m > 1) s.latency_us *= 1.15;
    if (s.config == configs[3]) s.latency_us *= 1.25;
    samples.push_back(s);
  }
  auto mape = [&](const TunerTable& t) {
    double sum = 0;
    for (const auto& s : samples)
      sum += std::abs(evaluate_with_table(t, h100, s.shape, s.config).pred_us / s.latency_us - 1.0);
    return sum / static_cast<double>(samples.size());
  };
  FitOptions plain;
  plain.class_ridge = 1e6;  // one shared linear model: the multiplicative effects are left to the correction
  plain.residual_ridge = -1;
  plain.config_ridge = -1;
  plain.learned_rounds = 0;
  FitOptions corrected = plain;
  corrected.residual_ridge = 1e-3;
  corrected.config_ridge = 1.0;
  const TunerTable a = fit_tuner_table(samples, h100, plain), b = fit_tuner_table(samples, h100, corrected);
  const GroupTable& g = b.groups.at("16bit");
  ASSERT_EQ(g.config_factor.count(config_key(configs[3])), 1u);
  ASSERT_EQ(g.config_factor.count(config_key(configs[1])), 1u);
  // The configuration that alone is 25% slower ends up well above its cluster-mate of the same class.
  EXPECT_GT(g.config_factor.at(config_key(configs[3])) / g.config_factor.at(config_key(configs[1])), 1.1);
  EXPECT_LT(mape(b), 0.02);
  EXPECT_GT(mape(a), 2.0 * mape(b));
  // Both survive the JSON form, and a wrong-length correction is rejected by name.
  const TunerTable back = parse_tuner_table(tuner_table_to_json(b), "round-trip");
  EXPECT_NEAR(mape(back), mape(b), 1e-4);
  std::string text = tuner_table_to_json(b);
  const auto at = text.find("\"residual\": [");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 13, "0.5,");
  try {
    parse_tuner_table(text, "bad.json");
    ADD_FAILURE() << "a residual of the wrong length was accepted";
  } catch (const TunerTableError& e) {
    EXPECT_NE(std::string(e.what()).find("residual"), std::string::npos) << e.what();
  }
}

TEST(TunerFit, LearnedResidualRanksWhatTheLinearCorrectionsCannot) {
  // Two configurations of one class whose latency differs only through an interaction: the wide
  // cluster is 20% slower when the last wave is less than half full and 20% faster otherwise. The
  // linear model, the log-linear correction and the per-configuration factor see the same average
  // for both, so they cannot tell which one to pick; the learned residual can.
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  const Coefficients truth = {2.0, 1.1, 0.5, -0.2, 0.3, 0.9, 1.0, 0.0, 0.0, 0.4};
  const TileConfig narrow = tile(128, 128, 64, 1, 1, 2), wide = tile(128, 128, 64, 1, 2, 1);
  std::vector<TunerSample> samples;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dim(1, 60);
  for (int i = 0; i < 300; ++i) {
    const GemmShape shape{64 * dim(rng), 64 * dim(rng), 64 * dim(rng), Dtype::bf16};
    for (const TileConfig& c : {narrow, wide}) {
      TunerSample s;
      s.shape = shape;
      s.config = c;
      const auto f = wave_features(s.shape, c, hw, concurrent_ctas(c, Dtype::bf16, hw));
      for (std::size_t j = 0; j < kFeatureCount; ++j) s.latency_us += truth[j] * f.x[j];
      if (c.cluster_m > 1) s.latency_us *= f.grid.last_wave_fill < 0.5 ? 1.2 : 1.0 / 1.2;
      samples.push_back(s);
    }
  }
  auto right_picks = [&](const TunerTable& t) {
    int right = 0;
    for (std::size_t i = 0; i < samples.size(); i += 2) {
      const auto ranked = rank_with_table(t, h100, samples[i].shape, {narrow, wide}, false);
      const bool wide_faster = samples[i + 1].latency_us < samples[i].latency_us;
      right += (ranked.front().config == wide) == wide_faster;
    }
    return right;
  };
  FitOptions without;
  without.learned_rounds = 0;
  FitOptions with;
  with.learned_rounds = 100;
  const TunerTable a = fit_tuner_table(samples, h100, without), b = fit_tuner_table(samples, h100, with);
  ASSERT_FALSE(a.groups.at("16bit").learned);
  ASSERT_TRUE(b.groups.at("16bit").learned);
  EXPECT_GE(right_picks(b), 290);  // of 300 shapes
  EXPECT_LT(right_picks(a), 240);
  // The trees survive the JSON form, and a table whose feature list differs is refused by name.
  const TunerTable back = parse_tuner_table(tuner_table_to_json(b), "round-trip");
  ASSERT_TRUE(back.groups.at("16bit").learned);
  for (std::size_t i = 0; i < samples.size(); i += 29) {
    const double p = evaluate_with_table(b, h100, samples[i].shape, samples[i].config).pred_us;
    EXPECT_NEAR(evaluate_with_table(back, h100, samples[i].shape, samples[i].config).pred_us / p, 1.0, 1e-4)
        << i;  // coefficients stored to 5-7 digits
  }
  expect_refused_with_renamed_feature(b, "\"log2_M\"", "\"log2_Q\"", "learned_features");
}

TEST(TunerFit, ChooserLearnsToRankExhaustiveShapesAndSurvivesTheJsonForm) {
  // 40 shapes measured on 18 configurations each (an exhaustive sweep) and 40 on 6 (a sampling
  // plan's few): the chooser trains on the former only, orders a query's candidates by its score,
  // and is stored in the table's JSON; a table without one still ranks by the model's score.
  const GpuSpec& h100 = db().get("h100-sxm");
  const HardwareRates hw = hardware_rates(h100, Dtype::bf16);
  const Coefficients truth = {2.0, 1.1, 0.5, -0.2, 0.3, 0.9, 1.0, 0.0, 0.0, 0.4};
  std::vector<TileConfig> configs;
  for (int m : {64, 128, 256})
    for (int n : {64, 128, 256})
      for (int k : {64, 128}) configs.push_back(tile(m, n, k));
  std::vector<TunerSample> samples;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dim(2, 80);
  std::normal_distribution<double> noise(0.0, 0.03);
  for (int i = 0; i < 80; ++i) {
    const GemmShape shape{32 * dim(rng), 32 * dim(rng), 64 * dim(rng), Dtype::bf16};
    const bool exhaustive = i < 40;
    for (std::size_t c = 0; c < configs.size(); ++c) {
      if (!exhaustive && c % 3 != 0) continue;
      TunerSample s;
      s.shape = shape;
      s.config = configs[c];
      const auto f = wave_features(shape, s.config, hw, concurrent_ctas(s.config, Dtype::bf16, hw));
      for (std::size_t j = 0; j < kFeatureCount; ++j) s.latency_us += truth[j] * f.x[j];
      s.latency_us *= std::exp(noise(rng)) * (f.grid.last_wave_fill < 0.5 ? 1.15 : 1.0);
      samples.push_back(s);
    }
  }
  FitOptions opt;
  opt.learned_rounds = 20;
  opt.learned_depth = 3;
  opt.ranker_rounds = 30;
  const TunerTable t = fit_tuner_table(samples, h100, opt);
  ASSERT_TRUE(t.ranker.booster);
  EXPECT_EQ(t.ranker.shapes, 40);  // the exhaustive shapes only
  EXPECT_TRUE(t.ranker.objective == "rank:pairwise" || t.ranker.objective == "rank:ndcg") << t.ranker.objective;
  const GemmShape q = samples.front().shape;
  const auto ranked = rank_with_table(t, h100, q, configs, false);
  ASSERT_EQ(ranked.size(), configs.size());
  // Highest first; the configurations beyond the chooser's kChooserRows (NaN: it did not score them) last.
  for (std::size_t i = 1; i < ranked.size(); ++i)
    if (!std::isnan(ranked[i].rank_score)) {
      EXPECT_GE(ranked[i - 1].rank_score, ranked[i].rank_score) << i;
    }
  EXPECT_EQ(std::count_if(ranked.begin(), ranked.end(), [](const RankedConfig& c) { return std::isnan(c.rank_score); }),
            static_cast<std::ptrdiff_t>(configs.size() - kChooserRows));
  // The latency stays the model's: the same prediction as one configuration alone.
  EXPECT_NEAR(evaluate_with_table(t, h100, q, ranked.front().config).pred_us / ranked.front().pred_us, 1.0, 1e-9);
  const TunerTable back = parse_tuner_table(tuner_table_to_json(t), "round-trip");
  ASSERT_TRUE(back.ranker.booster);
  EXPECT_EQ(back.ranker.objective, t.ranker.objective);
  EXPECT_EQ(back.ranker.grading, t.ranker.grading);
  for (std::size_t i = 0; i < samples.size(); i += 97) {
    const auto a = rank_with_table(t, h100, samples[i].shape, configs, false);
    const auto b = rank_with_table(back, h100, samples[i].shape, configs, false);
    EXPECT_EQ(a.front().config, b.front().config) << i;
  }
  // The chooser's fold tables also give each group its latency interval: the 10th and 90th percentiles
  // of measured over predicted among the configurations predicted near-best (3% noise, and the 1.15x
  // the linear form misses).
  const GroupTable& g16 = t.groups.at("16bit");
  EXPECT_GE(g16.interval.rows, 40);  // at least the one predicted fastest at each exhaustive shape
  EXPECT_LT(g16.interval.lo_log, 0.0);
  EXPECT_GT(g16.interval.hi_log, 0.0);
  EXPECT_LT(g16.interval.hi_log - g16.interval.lo_log, 0.5);
  for (const auto& c : ranked) {
    EXPECT_NEAR(c.lo_us, c.pred_us * std::exp(g16.interval.lo_log), 1e-9 * c.pred_us);
    EXPECT_NEAR(c.hi_us, c.pred_us * std::exp(g16.interval.hi_log), 1e-9 * c.pred_us);
  }
  // It survives the JSON form (to 5 digits).
  EXPECT_EQ(back.groups.at("16bit").interval.rows, g16.interval.rows);
  EXPECT_NEAR(back.groups.at("16bit").interval.lo_log, g16.interval.lo_log, 1e-4 * std::abs(g16.interval.lo_log));
  EXPECT_NEAR(back.groups.at("16bit").interval.hi_log, g16.interval.hi_log, 1e-4 * std::abs(g16.interval.hi_log));
  // The chooser's training groups as the fit computes them (perfloom-tuner-fit --dump-ranker): one per
  // exhaustive shape, in its fold, every measured configuration against the group's fastest; watching
  // them changes nothing in the table.
  FitOptions watched = opt;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  watched.on_ranker_group = [&](const FitOptions::RankerGroup& g) {
    EXPECT_TRUE(seen.emplace(g.shape.M, g.shape.N, g.shape.K).second) << "a shape twice";
    EXPECT_EQ(g.fold, shape_fold(g.shape, opt.ranker_folds));
    EXPECT_EQ(g.configs.size(), configs.size());
    ASSERT_EQ(g.ratio.size(), g.configs.size());
    ASSERT_EQ(g.pred_us.size(), g.configs.size());
    EXPECT_DOUBLE_EQ(*std::min_element(g.ratio.begin(), g.ratio.end()), 1.0);
    for (std::size_t i = 0; i < g.configs.size(); ++i) EXPECT_GE(g.score[i], g.pred_us[i]);  // the support penalty adds
  };
  EXPECT_EQ(tuner_table_to_json(fit_tuner_table(samples, h100, watched)), tuner_table_to_json(t));
  EXPECT_EQ(seen.size(), 40u);
  // Fitted on several threads (the dtype groups, the fold tables, the cross-validation's boosters at once),
  // the table is the same, to the byte, as on one; here with an fp8 group too.
  std::vector<TunerSample> two_groups = samples;
  for (TunerSample s : samples) {
    s.shape.dtype = Dtype::fp8e4m3;
    s.latency_us *= 0.6;
    two_groups.push_back(s);
  }
  FitOptions serial = opt, parallel = opt;
  serial.threads = 1;
  parallel.threads = 3;
  const std::string serial_json = tuner_table_to_json(fit_tuner_table(two_groups, h100, serial));
  EXPECT_NE(serial_json.find("\"fp8\""), std::string::npos);
  EXPECT_EQ(tuner_table_to_json(fit_tuner_table(two_groups, h100, parallel)), serial_json);
  // Too few exhaustive shapes: no chooser, and the order is the score's.
  FitOptions few = opt;
  few.ranker_min_shapes = 41;
  const TunerTable none = fit_tuner_table(samples, h100, few);
  EXPECT_FALSE(none.ranker.booster);
  EXPECT_EQ(tuner_table_to_json(none).find("\"ranker\""), std::string::npos);
  const auto by_score = rank_with_table(none, h100, q, configs, false);
  for (std::size_t i = 1; i < by_score.size(); ++i) EXPECT_LE(by_score[i - 1].score, by_score[i].score);
  EXPECT_EQ(none.groups.at("16bit").interval.rows, 0);  // nor an interval: no out-of-sample predictions
  EXPECT_TRUE(std::isnan(by_score.front().lo_us));
  EXPECT_EQ(tuner_table_to_json(none).find("\"interval\""), std::string::npos);
  // A chooser over other features is refused by name.
  expect_refused_with_renamed_feature(t, "\"model:score_rank\"", "\"model:score_rink\"", "ranker.features");
}

TEST(TunerUntiledGemm, TheAnalysisTakesTheTunersTopConfigurationWhenTheTileIsUnknown) {
  const GpuSpec& h100 = db().get("h100-sxm");
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = Dtype::bf16;
  k.shape.M = 4096;
  k.shape.N = 4096;
  k.shape.K = 4096;
  const UntiledGemmTile before = untiled_gemm_tile();
  set_untiled_gemm_tile(UntiledGemmTile::tuner);
  const Analysis a = analyze_kernel(k, h100);
  const auto top = tune_gemm({4096, 4096, 4096, Dtype::bf16}, h100, 1);
  ASSERT_EQ(top.method, "wave-table");
  EXPECT_EQ(a.tile_origin, "tuner");
  ASSERT_TRUE(a.tile.has_value());
  EXPECT_EQ(a.tile->tile_m, top.ranked.front().config.tile_m);
  EXPECT_EQ(a.tile->tile_n, top.ranked.front().config.tile_n);
  EXPECT_EQ(a.tile->tile_k, top.ranked.front().config.tile_k);
  EXPECT_EQ(a.tile->split_k, std::max(1, top.ranked.front().config.split_k));
  EXPECT_FALSE(a.schedule_exact);  // a predicted tile, not a known one
  // A given tile still wins, and a GPU without a table (or the heuristic setting) uses the heuristic.
  KernelDesc given = k;
  given.tile = tile(64, 64, 64);
  EXPECT_EQ(analyze_kernel(given, h100).tile_origin, "given");
  EXPECT_EQ(analyze_kernel(k, db().get("a100-sxm-80gb")).tile_origin, "heuristic");
  set_untiled_gemm_tile(UntiledGemmTile::heuristic);
  const Analysis heuristic = analyze_kernel(k, h100);
  EXPECT_EQ(heuristic.tile_origin, "heuristic");
  // Training analyses untiled samples with the same setting as prediction (what eval measures ships).
  set_untiled_gemm_tile(UntiledGemmTile::tuner);
  const auto rows = prepare_rows({TrainingSample{k, "h100-sxm", 200.0, "test"}}, db(), nullptr);
  ASSERT_EQ(rows.size(), 1u);
  const auto& names = perfloom::feature_names();
  const auto tm = static_cast<std::size_t>(std::find(names.begin(), names.end(), "tile_m") - names.begin());
  const auto tn = static_cast<std::size_t>(std::find(names.begin(), names.end(), "tile_n") - names.begin());
  ASSERT_LT(tn, rows[0].features.size());
  EXPECT_EQ(rows[0].features[tm], static_cast<float>(a.tile->tile_m));
  EXPECT_EQ(rows[0].features[tn], static_cast<float>(a.tile->tile_n));
  EXPECT_EQ(untiled_gemm_tile(), UntiledGemmTile::tuner);
  set_untiled_gemm_tile(before);
}

// ---- lookup ----

TEST(TunerLookup, ReturnsTheBestCandidateOfASyntheticTable) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const GemmShape shape{1024, 1024, 1024, Dtype::bf16};
  const TileConfig a = tile(128, 128, 64), b = tile(128, 256, 64, 1, 2, 1), c = tile(64, 64, 64);
  const TunerTable t = constant_table({{a, 20}, {b, 5}, {c, 9}}, {a, b, c}, bucket_of(1024, 1024, 1024));
  const TuneResult r = tune_gemm(shape, h100, 3, &t);
  EXPECT_EQ(r.method, "wave-table");
  ASSERT_EQ(r.ranked.size(), 3u);
  EXPECT_EQ(r.ranked[0].config, b);
  EXPECT_DOUBLE_EQ(r.ranked[0].pred_us, 5.0);
  EXPECT_EQ(r.ranked[1].config, c);
  EXPECT_EQ(r.ranked[2].config, a);
  EXPECT_FALSE(r.ranked[0].reason.empty());
  EXPECT_EQ(tune_gemm(shape, h100, 1, &t).ranked.size(), 1u);
  // A shape far from every bucket still gets the nearest bucket's candidates.
  EXPECT_EQ(tune_gemm({16, 256, 128, Dtype::bf16}, h100, 1, &t).ranked[0].config, b);
  // A class the table has not seen costs the group's coefficients (1000 here): it ranks last.
  const TunerTable t2 = constant_table({{a, 20}}, {c, a}, bucket_of(1024, 1024, 1024));
  EXPECT_EQ(tune_gemm(shape, h100, 2, &t2).ranked[0].config, a);
}

TEST(TunerLookup, TheNearestMeasuredShapesLendTheirWinners) {
  // One bucket far away offers a (cost 20); two measured shapes near the query won with b (cost 5)
  // and c (9), a farther one with d (1): with the 2 nearest shapes, b and c become candidates, d not.
  const GpuSpec& h100 = db().get("h100-sxm");
  const TileConfig a = tile(128, 128, 64), b = tile(128, 256, 64, 1, 2, 1), c = tile(64, 64, 64),
                   d = tile(256, 128, 64);
  TunerTable t = constant_table({{a, 20}, {b, 5}, {c, 9}, {d, 1}}, {a}, bucket_of(16, 16, 16));
  GroupTable& g = t.groups["16bit"];
  g.winners = {{1000, 1000, 1100, {b}}, {900, 1024, 1024, {c, b}}, {4096, 4096, 4096, {d}}};
  const GemmShape shape{1024, 1024, 1024, Dtype::bf16};
  const auto cands = table_candidates(g, shape, 1, 2);
  ASSERT_EQ(cands.size(), 3u);  // a, then b (nearest: |log2 1100/1024| = 0.10) and c (0.19)
  EXPECT_EQ(cands[0], a);
  EXPECT_EQ(cands[1], b);
  EXPECT_EQ(cands[2], c);
  EXPECT_EQ(table_candidates(g, shape, 1, 0).size(), 1u);  // nearest 0: the buckets alone
  EXPECT_EQ(table_candidates(g, shape, 1, 3).back(), d);
  EXPECT_EQ(tune_gemm(shape, h100, 1, &t).ranked[0].config, d);  // kNearestShapes (4) reaches d
  // nearest_winners: the measured shapes themselves, nearest first with their distance, at most n.
  const auto near = nearest_winners(g, shape, 2);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0].second->K, 1100);
  EXPECT_NEAR(near[0].first, std::log2(1100.0 / 1024) + std::log2(1024.0 / 1000) * 2, 1e-9);
  EXPECT_EQ(near[1].second->M, 900);
  EXPECT_EQ(nearest_winners(g, shape, 10).size(), 3u);
  EXPECT_TRUE(nearest_winners(g, shape, 0).empty());
  // The winners survive the JSON form, and a malformed entry is refused with its place.
  const std::string text = tuner_table_to_json(t);
  const TunerTable back = parse_tuner_table(text, "w.json");
  ASSERT_EQ(back.groups.at("16bit").winners.size(), 3u);
  EXPECT_EQ(back.groups.at("16bit").winners[1].configs, (std::vector<TileConfig>{c, b}));
  EXPECT_EQ(back.groups.at("16bit").winners[1].M, 900);
  for (const auto& [from, to, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"[900,1024,1024,", "[900,-1024,1024,", "groups.16bit.winners[1][1]': must be positive (got -1024)"},
           {"[4096,4096,4096,\"256x128x64/s1/c1x1\"]", "[4096,4096,4096]", "groups.16bit.winners[2]': is not [M, N, K"},
           {"[900,1024,1024,\"64x64x64", "[900,1024,1024,\"64x6zx64", "groups.16bit.winners[1].configurations[0]'"}}) {
    std::string bad = text;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      parse_tuner_table(bad, "w.json");
      ADD_FAILURE() << "accepted " << to;
    } catch (const TunerTableError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  // A fit records every measured shape with its fastest configurations, best first.
  const std::vector<TunerSample> samples = one_shape_samples({{a, 12}, {b, 10}, {c, 10.5}, {d, 30}});
  const FitOptions opt = without_trees();
  TunerTable fitted = fit_tuner_table(samples, h100, opt);
  ASSERT_EQ(fitted.groups.at("16bit").winners.size(), 1u);
  EXPECT_EQ(fitted.groups.at("16bit").winners[0].configs, (std::vector<TileConfig>{b, c}));  // a is 20% slower, d 3x
  fitted.groups.at("16bit").winners.clear();
  refit_candidates(fitted, samples, opt);
  EXPECT_EQ(fitted.groups.at("16bit").winners[0].M, 512);
  EXPECT_EQ(fitted.groups.at("16bit").winners[0].configs.size(), 2u);
}

TEST(TunerLookup, TheLatencyModelsBestOfTheWholeTableJoinTheCandidates) {
  // The bucket and the 4 nearest measured shapes offer only a (cost 20); a far shape won with c (9)
  // and d (1): table_candidates misses both, the whole catalogue has them, and query_candidates adds
  // the model's best of it, so that the query answers d.
  const GpuSpec& h100 = db().get("h100-sxm");
  const TileConfig a = tile(128, 128, 64), c = tile(64, 64, 64), d = tile(256, 128, 64);
  TileConfig d_staged = d;
  d_staged.stages = 4;
  TunerTable t = constant_table({{a, 20}, {c, 9}, {d, 1}}, {a}, bucket_of(1024, 1024, 1024));
  GroupTable& g = t.groups["16bit"];
  g.winners = {{1000, 1000, 1000, {a}}, {1100, 1000, 1000, {a}}, {1000, 1100, 1000, {a}},
               {1000, 1000, 1100, {a}}, {1100, 1100, 1100, {a}}, {8192, 8192, 8192, {c, d_staged}}};
  const GemmShape shape{1024, 1024, 1024, Dtype::bf16};
  EXPECT_EQ(table_candidates(g, shape), (std::vector<TileConfig>{a}));
  // A table built by hand has no catalogue until index_catalogue: the candidates stay the table's.
  EXPECT_TRUE(g.catalogue.empty());
  EXPECT_EQ(tune_gemm(shape, h100, 1, &t).ranked[0].config, a);
  index_catalogue(g);
  const TileConfig d_unstaged = d;
  // Buckets, then winners, then common; each configuration once, its stages cleared.
  EXPECT_EQ(g.catalogue, (std::vector<TileConfig>{a, c, d_unstaged}));
  EXPECT_EQ(model_best(t, h100, shape, 2, 0), (std::vector<TileConfig>{d_unstaged, c}));
  EXPECT_EQ(model_best(t, h100, shape, 5, 0).size(), 3u);  // at most the catalogue
  EXPECT_EQ(model_best(t, h100, shape, 1, 2),
            (std::vector<TileConfig>{d_unstaged}));  // the wave model's best 2, then 1
  const auto cands = query_candidates(t, h100, shape);
  ASSERT_EQ(cands.size(), 3u);
  EXPECT_EQ(cands[0], a);  // the table's own first
  const TuneResult r = tune_gemm(shape, h100, 3, &t);
  EXPECT_EQ(r.ranked[0].config, d_unstaged);
  EXPECT_EQ(r.ranked[1].config, c);
  // A parsed table builds its catalogue; a fit does too.
  const TunerTable back = parse_tuner_table(tuner_table_to_json(t), "c.json");
  EXPECT_EQ(back.groups.at("16bit").catalogue, g.catalogue);
  EXPECT_EQ(tune_gemm(shape, h100, 1, &back).ranked[0].config, d_unstaged);
  const TunerTable fitted =
      fit_tuner_table(one_shape_samples({{a, 12}, {c, 10}, {d_staged, 30}}), h100, without_trees());
  EXPECT_FALSE(fitted.groups.at("16bit").catalogue.empty());
  // A group without a fit for the dtype: no candidates.
  EXPECT_TRUE(query_candidates(t, h100, {1024, 1024, 1024, Dtype::fp8e4m3}).empty());
}

TEST(TunerLookup, TuneRanksInOnePassWhatCandidatesThenRankingRankAndTheChooserScoresTheModelsBest) {
  // tune_gemm predicts the model's shortlist and the nearest shapes' candidates in one batch instead of
  // query_candidates then rank_with_table: the same list, order, latencies and chooser scores. The chooser scores
  // only the kChooserRows configurations the latency model scores best, with the inputs of the whole list (the
  // same scores as when it scores them all); the rest follow, unscored (NaN), in the model's order. The order
  // checked here is without the acceptance model, which then moves those it predicts refused last, in that order.
  const GpuSpec& h100 = db().get("h100-sxm");
  const TunerTable* bundled = bundled_tuner_table(h100);
  ASSERT_NE(bundled, nullptr);
  ASSERT_TRUE(bundled->ranker.booster);
  ASSERT_TRUE(bundled->acceptance.booster);
  TunerTable plain = *bundled;
  plain.acceptance = {};
  const TunerTable* table = &plain;
  std::size_t beyond = 0, moved = 0;
  for (const GemmShape shape : {GemmShape{4096, 14336, 4096, Dtype::bf16}, GemmShape{1000, 3000, 7000, Dtype::bf16},
                                GemmShape{16, 8192, 4096, Dtype::bf16}, GemmShape{333, 5120, 2048, Dtype::fp8e4m3}}) {
    const auto tuned = tune_gemm(shape, h100, 1000, table).ranked;
    const auto two_pass = rank_with_table(*table, h100, shape, query_candidates(*table, h100, shape), false);
    ASSERT_EQ(tuned.size(), two_pass.size());
    ASSERT_GT(tuned.size(), 1u);
    for (std::size_t i = 0; i < tuned.size(); ++i) {
      EXPECT_EQ(tuned[i].config, two_pass[i].config) << i;
      EXPECT_EQ(tuned[i].pred_us, two_pass[i].pred_us) << i;
      EXPECT_EQ(std::isnan(tuned[i].rank_score), std::isnan(two_pass[i].rank_score)) << i;
      if (!std::isnan(tuned[i].rank_score)) {
        EXPECT_EQ(tuned[i].rank_score, two_pass[i].rank_score) << i;
      }
    }
    const auto all = rank_with_table(*table, h100, shape, query_candidates(*table, h100, shape), false, SIZE_MAX);
    std::vector<double> scores;
    for (const auto& c : tuned) scores.push_back(c.score);
    std::sort(scores.begin(), scores.end());
    const std::size_t scored = std::min(kChooserRows, tuned.size());
    for (std::size_t i = 0; i < tuned.size(); ++i) {
      if (i < scored) {
        ASSERT_FALSE(std::isnan(tuned[i].rank_score)) << i;
        EXPECT_LE(tuned[i].score, scores[scored - 1]) << i;  // among the model's kChooserRows best
        if (i > 0) {
          EXPECT_GE(tuned[i - 1].rank_score, tuned[i].rank_score) << i;
        }
        const auto same =
            std::find_if(all.begin(), all.end(), [&](const RankedConfig& a) { return a.config == tuned[i].config; });
        ASSERT_NE(same, all.end());
        EXPECT_FLOAT_EQ(static_cast<float>(same->rank_score), static_cast<float>(tuned[i].rank_score)) << i;
      } else {
        ++beyond;
        EXPECT_TRUE(std::isnan(tuned[i].rank_score)) << i;
        if (i > scored) {
          EXPECT_LE(tuned[i - 1].score, tuned[i].score) << i;
        }  // in the model's order
      }
    }
    // With the acceptance model: the same list, those predicted refused moved last, each part in the order above.
    const auto accepted = tune_gemm(shape, h100, 1000, bundled).ranked;
    ASSERT_EQ(accepted.size(), tuned.size());
    const double thr = bundled->acceptance.threshold;
    for (std::size_t i = 0; i < tuned.size(); ++i) {
      EXPECT_FALSE(std::isnan(accepted[i].refusal_p)) << i;
      if (i + 1 < tuned.size()) {
        EXPECT_FALSE(accepted[i].refusal_p >= thr && accepted[i + 1].refusal_p < thr) << i;
      }
    }
    std::vector<TileConfig> plain_order;
    for (const auto& c : tuned) plain_order.push_back(c.config);
    std::stable_partition(plain_order.begin(), plain_order.end(), [&](const TileConfig& c) {
      const auto it =
          std::find_if(accepted.begin(), accepted.end(), [&](const RankedConfig& a) { return a.config == c; });
      return it != accepted.end() && !(it->refusal_p >= thr);
    });
    for (std::size_t i = 0; i < tuned.size(); ++i) {
      EXPECT_EQ(plain_order[i], accepted[i].config) << i;
      moved += accepted[i].config != tuned[i].config;
    }
  }
  EXPECT_GT(beyond, 0u);  // some list was longer than what the chooser scores
  EXPECT_GT(moved, 0u);   // and the acceptance model moved some configuration of these lists
}

TEST(TunerLookup, SupportPenaltyBreaksNearTiesTowardWellMeasuredClasses) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const TileConfig a = tile(128, 128, 64), b = tile(64, 64, 64);
  TunerTable t = constant_table({{a, 10.0}, {b, 9.9}}, {a, b}, bucket_of(1024, 1024, 1024));
  t.groups["16bit"].classes[class_of(b)].samples = 0;  // b was seen once at most
  t.support_penalty = 0.05;
  EXPECT_EQ(tune_gemm({1024, 1024, 1024, Dtype::bf16}, h100, 1, &t).ranked[0].config, a);
  t.support_penalty = 0;
  EXPECT_EQ(tune_gemm({1024, 1024, 1024, Dtype::bf16}, h100, 1, &t).ranked[0].config, b);
}

TEST(TunerLookup, NoTableOrNoGroupFallsBackToTheAnalyticalModel) {
  const GpuSpec& l40s = db().get("l40s");
  EXPECT_EQ(bundled_tuner_table(l40s), nullptr);
  const TuneResult r = tune_gemm({4096, 4096, 4096, Dtype::bf16}, l40s, 4);
  EXPECT_EQ(r.method, "analytical");
  EXPECT_NE(r.note.find("no tuner table"), std::string::npos);
  ASSERT_EQ(r.ranked.size(), 4u);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) EXPECT_LE(r.ranked[i - 1].pred_us, r.ranked[i].pred_us);
  for (const auto& c : r.ranked) {
    EXPECT_GT(c.pred_us, 0);
    EXPECT_GE(c.grid.waves, 1);
    EXPECT_EQ(c.class_samples, -1);
  }
  // The bundled H100 table has no tf32 fit: analytical, and it says why.
  const GpuSpec& h100 = db().get("h100-sxm");
  const TuneResult tf = tune_gemm({4096, 4096, 4096, Dtype::tf32}, h100, 2);
  EXPECT_EQ(tf.method, "analytical");
  EXPECT_NE(tf.note.find("no tf32 fit"), std::string::npos);
  EXPECT_THROW(tune_gemm({0, 4096, 4096, Dtype::bf16}, h100, 2), std::invalid_argument);
  EXPECT_THROW(tune_gemm({64, 64, 64, Dtype::bf16}, h100, 0), std::invalid_argument);
}

TEST(TunerLookup, ATablelessGpuOfATileSweptArchitectureRanksWithTheLearnedPredictor) {
  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  ASSERT_EQ(predictor->name(), "xgboost") << warning;
  EXPECT_TRUE(tile_swept("hopper", Dtype::bf16));  // the H100 SXM's and H200's tables
  EXPECT_TRUE(tile_swept("hopper", Dtype::fp8e4m3));
  EXPECT_FALSE(tile_swept("hopper", Dtype::tf32));  // no tf32 fit: never swept
  EXPECT_FALSE(tile_swept("ada", Dtype::bf16));
  const GpuSpec& pcie = db().get("h100-pcie");
  ASSERT_EQ(bundled_tuner_table(pcie), nullptr);
  const GemmShape shape{4096, 4096, 4096, Dtype::bf16};
  const std::vector<TileConfig> candidates = analytical_candidates(pcie, shape);
  ASSERT_GE(candidates.size(), 5u);
  const TuneResult r = tune_gemm(shape, pcie, candidates.size(), predictor.get());
  EXPECT_EQ(r.method, "learned");
  EXPECT_EQ(r.ranked_by, "pred_us");
  EXPECT_NE(r.note.find("no tuner table for h100-pcie"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("learned predictor"), std::string::npos) << r.note;
  ASSERT_EQ(r.ranked.size(), candidates.size());  // every candidate, each once
  std::set<std::size_t> seen;
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const RankedConfig& c = r.ranked[i];
    if (i) {
      EXPECT_LE(r.ranked[i - 1].pred_us, c.pred_us);
    }
    ASSERT_LT(c.index, candidates.size());
    seen.insert(c.index);
    EXPECT_EQ(c.config.tile_m, candidates[c.index].tile_m);
    EXPECT_EQ(c.config.tile_n, candidates[c.index].tile_n);
    EXPECT_EQ(c.config.split_k, candidates[c.index].split_k);
    // The batched ranking answers what the predictor answers for the kernel with that tile.
    const Prediction p = predictor->predict(gemm_kernel(shape, candidates[c.index]), pcie);
    EXPECT_NEAR(c.pred_us, p.pred_us, 1e-6 * c.pred_us);
    EXPECT_NEAR(c.lo_us, p.lo_us, 1e-6 * c.pred_us);  // and its interval
    EXPECT_NEAR(c.hi_us, p.hi_us, 1e-6 * c.pred_us);
    EXPECT_LT(c.lo_us, c.hi_us);
    EXPECT_GE(c.grid.waves, 1);
    EXPECT_FALSE(c.reason.empty());
  }
  EXPECT_EQ(seen.size(), candidates.size());
  // Another predictor, or a GPU of an architecture no tile sweep covered, keeps the analytical ranking.
  const RooflinePredictor roofline;
  EXPECT_EQ(tune_gemm(shape, pcie, 3, &roofline).method, "analytical");
  const TuneResult ada = tune_gemm(shape, db().get("l40s"), 3, predictor.get());
  EXPECT_EQ(ada.method, "analytical");
  EXPECT_NE(ada.note.find("no ada GPU was tile-swept in 16bit"), std::string::npos) << ada.note;
  EXPECT_EQ(tune_gemm({4096, 4096, 4096, Dtype::tf32}, pcie, 3, predictor.get()).method, "analytical");
  // A GPU with a table keeps it.
  EXPECT_EQ(tune_gemm(shape, db().get("h100-sxm"), 3, predictor.get()).method, "wave-table");
}

TEST(TunerLookup, TheAnalyticalRankingTakesTheLearnedPredictorsLatencyOfTheGemm) {
  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  ASSERT_EQ(predictor->name(), "xgboost") << warning;
  for (const char* id : {"a100-sxm-80gb", "l40s", "b200"}) {
    const GpuSpec& gpu = db().get(id);
    for (const GemmShape& shape : {GemmShape{4096, 4096, 4096, Dtype::bf16}, GemmShape{16, 8192, 4096, Dtype::bf16}}) {
      const TuneResult plain = tune_gemm(shape, gpu, 6);  // no predictor: the roofline's latencies
      const TuneResult anchored = tune_gemm(shape, gpu, 6, predictor.get());
      ASSERT_EQ(anchored.method, "analytical") << id;
      EXPECT_TRUE(std::isnan(plain.anchor_us));
      EXPECT_EQ(plain.note.find("scaled"), std::string::npos) << plain.note;
      // The first takes what `perfloom predict` answers for the GEMM with no tile given...
      const Prediction library = predictor->predict(gemm_kernel(shape, TileConfig{}), gpu);
      const double library_us = library.pred_us;
      EXPECT_NEAR(anchored.anchor_us, library_us, 1e-9 * library_us) << id;
      ASSERT_EQ(anchored.ranked.size(), plain.ranked.size());
      EXPECT_NEAR(anchored.ranked[0].pred_us, library_us, 1e-9 * library_us) << id;
      EXPECT_NE(anchored.note.find("latencies scaled so that the first takes the learned predictor's"),
                std::string::npos)
          << anchored.note;
      // ... the order and every ratio stay the analytical model's.
      const double scale = anchored.ranked[0].pred_us / plain.ranked[0].pred_us;
      EXPECT_NE(scale, 1.0);
      for (std::size_t i = 0; i < plain.ranked.size(); ++i) {
        EXPECT_EQ(config_to_string(anchored.ranked[i].config), config_to_string(plain.ranked[i].config))
            << id << " rank " << i;
        EXPECT_NEAR(anchored.ranked[i].pred_us, plain.ranked[i].pred_us * scale, 1e-9 * anchored.ranked[i].pred_us);
        EXPECT_EQ(anchored.ranked[i].grid.waves, plain.ranked[i].grid.waves);
        // Its interval is the learned prediction's, relative to its latency.
        EXPECT_NEAR(anchored.ranked[i].lo_us / anchored.ranked[i].pred_us, library.lo_us / library_us, 1e-9);
        EXPECT_NEAR(anchored.ranked[i].hi_us / anchored.ranked[i].pred_us, library.hi_us / library_us, 1e-9);
      }
    }
  }
  // A GPU without the dtype's path is refused as before, and another predictor scales nothing.
  EXPECT_THROW(tune_gemm({4096, 4096, 4096, Dtype::fp8e4m3}, db().get("a100-sxm-80gb"), 3, predictor.get()),
               UnsupportedKernel);
  const RooflinePredictor roofline;
  EXPECT_TRUE(std::isnan(tune_gemm({4096, 4096, 4096, Dtype::bf16}, db().get("l40s"), 3, &roofline).anchor_us));
  EXPECT_TRUE(uses_learned_predictor(nullptr, Dtype::bf16));
  EXPECT_FALSE(uses_learned_predictor(bundled_tuner_table(db().get("h100-sxm")), Dtype::bf16));
  EXPECT_TRUE(uses_learned_predictor(bundled_tuner_table(db().get("h100-sxm")), Dtype::tf32));
}

TEST(TunerLookup, BundledTablesServeH100AndH200) {
  for (const char* id : {"h100-sxm", "h200"}) {
    const GpuSpec& gpu = db().get(id);
    const TunerTable* t = bundled_tuner_table(gpu);
    ASSERT_NE(t, nullptr) << id;
    EXPECT_EQ(t->gpu_id, id);
    EXPECT_EQ(t->groups.count("16bit"), 1u);
    EXPECT_EQ(t->groups.count("fp8"), 1u);
    // The shipped fit: the exhaustive sweep and the sampling plan's points
    // together, so the buckets cover the plan's ~1,600 shapes besides the sweep's 250.
    EXPECT_NE(t->source.find("/tiles.csv:"), std::string::npos) << t->source;
    EXPECT_NE(t->source.find("/tiles_plan.csv:"), std::string::npos) << t->source;
    EXPECT_GT(t->groups.at("16bit").shapes + t->groups.at("fp8").shapes, 1000) << id;
    const TuneResult r = tune_gemm({4096, 4096, 4096, Dtype::bf16}, gpu, 5);
    EXPECT_EQ(r.method, "wave-table");
    ASSERT_FALSE(r.ranked.empty());
    // A large square GEMM wants a large tile, and about 84% of the bf16 peak is what cuBLASLt reaches.
    EXPECT_GE(r.ranked[0].config.tile_m * r.ranked[0].config.tile_n, 128 * 128);
    const double ideal_us = 2.0 * 4096.0 * 4096.0 * 4096.0 / *gpu.peak_flops_per_s(Dtype::bf16) * 1e6;
    EXPECT_GT(r.ranked[0].pred_us, ideal_us);
    EXPECT_LT(r.ranked[0].pred_us, 2.0 * ideal_us);
  }
  const auto ids = bundled_tuner_gpus();
  EXPECT_NE(std::find(ids.begin(), ids.end(), "h200"), ids.end());
}

// ---- JSON ----

TEST(TunerTableJson, RoundTripsAndPredictsTheSame) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const TunerTable* bundled = bundled_tuner_table(h100);
  ASSERT_NE(bundled, nullptr);
  const TunerTable back = parse_tuner_table(tuner_table_to_json(*bundled), "round-trip");
  EXPECT_EQ(back.groups.size(), bundled->groups.size());
  EXPECT_EQ(back.slots_by_cluster, bundled->slots_by_cluster);
  const GemmShape s{1000, 3000, 2000, Dtype::fp8e4m3};
  const auto a = tune_gemm(s, h100, 3, bundled), b = tune_gemm(s, h100, 3, &back);
  ASSERT_EQ(a.ranked.size(), b.ranked.size());
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    EXPECT_EQ(a.ranked[i].config, b.ranked[i].config);
    EXPECT_NEAR(a.ranked[i].pred_us, b.ranked[i].pred_us, 1e-9 * a.ranked[i].pred_us);
  }
  EXPECT_EQ(config_to_string(config_from_string("128x256x64/s2/c1x2/st4")), "128x256x64/s2/c1x2/st4");
}

TEST(TunerTableJson, RejectsCorruptAndMismatchedTablesWithAClearError) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const std::string good = tuner_table_to_json(*bundled_tuner_table(h100));
  auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_tuner_table(text, "t.json");
    } catch (const TunerTableError& e) {
      return e.what();
    }
    return "";
  };
  auto replace = [&](std::string from, std::string to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  EXPECT_NE(error_of(good.substr(0, good.size() / 2)).find("t.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(replace("perfloom-tuner/2", "perfloom-tuner/9")).find("field 'schema'"), std::string::npos);
  EXPECT_NE(error_of(replace("\"l2_us\"", "\"l3_us\"")).find("refit the table"), std::string::npos);
  EXPECT_NE(error_of(replace("\"global\": [", "\"global\": [1,")).find("coefficients, this build's model has 10"),
            std::string::npos);
  EXPECT_NE(error_of(replace("\"global\": [", "\"global\": [\"x\",")).find("field 'groups.16bit.global'"),
            std::string::npos);
  EXPECT_NE(error_of(replace("/s1/c1x4\"", "/s1/cz\"")).find("configuration '"), std::string::npos);
  EXPECT_NE(error_of(replace("\"sm_count\": 132", "\"sm_count\": -4")).find("field 'sm_count'"), std::string::npos);
  EXPECT_NE(error_of(replace("\"support_penalty\"", "\"no_penalty\"")).find("field 'support_penalty': is missing"),
            std::string::npos);
  // The latency interval: finite log ratios, the 10th percentile not above the 90th.
  EXPECT_NE(error_of(replace("\"p10_log_ratio\": ", "\"p10_log_ratio\": \"x\", \"z\": "))
                .find("field 'groups.16bit.interval.p10_log_ratio'"),
            std::string::npos);
  EXPECT_NE(error_of(replace("\"p10_log_ratio\": ", "\"p10_log_ratio\": 3, \"z\": "))
                .find("p10_log_ratio is above p90_log_ratio"),
            std::string::npos);
  EXPECT_NE(error_of(replace("\"rows\": ", "\"rows\": 0, \"z\": ")).find("interval.rows"), std::string::npos);
  EXPECT_EQ(error_of(good), "");
  // Mismatched: an H100 table used for the H200, or for an H100 with another SM count.
  TunerTable t = parse_tuner_table(good, "h100-sxm.json");
  try {
    check_table_matches(t, db().get("h200"));
    ADD_FAILURE() << "no error for a table of another GPU";
  } catch (const TunerTableError& e) {
    EXPECT_NE(std::string(e.what()).find("fitted for GPU 'h100-sxm', not for 'h200'"), std::string::npos) << e.what();
  }
  GpuSpec cut = h100;
  cut.sm_count = 114;
  try {
    check_table_matches(t, cut);
    ADD_FAILURE() << "no error for another SM count";
  } catch (const TunerTableError& e) {
    EXPECT_NE(std::string(e.what()).find("fitted on 132 SMs but h100-sxm has 114"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_table_matches(t, h100));
  // A table without the query's dtype group answers with the reason.
  EXPECT_THROW(evaluate_with_table(t, h100, {64, 64, 64, Dtype::tf32}, tile(64, 64, 64)), TunerTableError);
}

// ---- sampling plan ----

TEST(TunerPlan, PointsSitOnWaveBoundaries) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const std::vector<TileConfig> configs = {tile(128, 256, 64, 1, 2, 1), tile(64, 128, 64, 2, 1, 4)};
  PlanOptions opt;
  opt.max_waves = 3;
  const auto plan = plan_wave_samples(h100, Dtype::bf16, configs, opt);
  // Per configuration: a half wave, then per boundary a full and a one-cluster-past point, at two K lengths.
  EXPECT_EQ(plan.size(), configs.size() * (1 + 2 * 3) * 2);
  for (const auto& p : plan) {
    const int cs = p.config.cluster_m * p.config.cluster_n;
    EXPECT_EQ(p.shape.M % p.config.tile_m, 0);
    EXPECT_EQ(p.shape.N % p.config.tile_n, 0);
    // Whole clusters: no padding, so the grid's waves are the ones the point was placed at.
    EXPECT_EQ(p.grid.tiles_m % p.config.cluster_m, 0) << p.why;
    EXPECT_EQ(p.grid.tiles_n % p.config.cluster_n, 0) << p.why;
    EXPECT_EQ(p.grid.cluster_ctas, p.grid.ctas) << p.why;
    EXPECT_TRUE(p.grid.k_iters == 8 || p.grid.k_iters == 64) << p.why;
    if (p.why.find(": full") != std::string::npos) {
      EXPECT_DOUBLE_EQ(p.grid.last_wave_fill, 1.0) << p.why;
    } else if (p.why.find("+1 cluster") != std::string::npos) {
      // One cluster past the boundary, or one per split-K slice when the slices make it come in more.
      EXPECT_GT(p.grid.cluster_ctas, (p.grid.waves - 1) * p.grid.slot_count) << p.why;
      EXPECT_LE(p.grid.cluster_ctas, (p.grid.waves - 1) * p.grid.slot_count + cs * p.config.split_k) << p.why;
      if (p.config.split_k == 1) {
        EXPECT_EQ(p.grid.cluster_ctas, (p.grid.waves - 1) * p.grid.slot_count + cs) << p.why;
      }
    } else {
      EXPECT_EQ(p.grid.waves, 1);
      EXPECT_NEAR(p.grid.last_wave_fill, 0.5, 0.1);
    }
  }
  const std::string csv = plan_to_csv(plan);
  EXPECT_EQ(csv.rfind("op,dtype,M,N,K,config,cublaslt_tile,", 0), 0u);
  EXPECT_NE(csv.find("gemm,bf16,"), std::string::npos);
  EXPECT_NE(csv.find(",256x128,1x2x1,"), std::string::npos);  // cuBLASLt orientation: N first
  EXPECT_NE(csv.find(",why,cublaslt_stages,heuristic_rank\n"), std::string::npos);
  EXPECT_NE(csv.find("\",64xAUTO,0\n"), std::string::npos);  // stages left to cuBLASLt; a forced configuration
  EXPECT_THROW(plan_wave_samples(h100, Dtype::bf16, {}), std::invalid_argument);
}

// ---- the exhaustive sweeps' reader (tools/tuner_sweep.h) ----

TEST(TunerSweep, FileNamesSortWithTheirNumbersAsNumbers) {
  std::vector<std::string> names{"tiles_s10.csv",  "tiles_s2.csv.gz", "tiles_s1.csv", "lease_d_session9.csv.gz",
                                 "tiles_s016.csv", "lease_c.csv.gz",  "tiles_s9.csv", "tiles_s16.csv"};
  std::sort(names.begin(), names.end(), bench::natural_less);
  EXPECT_EQ(names,
            (std::vector<std::string>{"lease_c.csv.gz", "lease_d_session9.csv.gz", "tiles_s1.csv", "tiles_s2.csv.gz",
                                      "tiles_s9.csv", "tiles_s10.csv", "tiles_s16.csv", "tiles_s016.csv"}));
  EXPECT_FALSE(bench::natural_less("a", "a"));
  EXPECT_TRUE(bench::natural_less("a", "ab"));
  EXPECT_FALSE(bench::natural_less("ab", "a"));
  EXPECT_TRUE(bench::natural_less("s9x", "s10"));
}

TEST(TunerSweep, RandomGemmsNameTheirShapesBySeedAndAnMMinRaisesOnlyM) {
  const std::vector<Dtype> dtypes{Dtype::bf16, Dtype::fp8e4m3};
  const auto all = bench::random_gemms(dtypes, 200, 4343);
  const auto large = bench::random_gemms(dtypes, 200, 4343, 96);
  ASSERT_EQ(all.size(), 400u);
  ASSERT_EQ(large.size(), 400u);
  EXPECT_EQ(bench::random_gemms(dtypes, 200, 4343)[17].M, all[17].M);  // a seed names its shapes
  int small = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].dtype, dtypes[i % 2]);  // interleaved: a run cut short keeps both dtypes
    EXPECT_EQ(large[i].dtype, all[i].dtype);
    EXPECT_EQ(large[i].N, all[i].N);  // the same draws: --m-min moves M alone
    EXPECT_EQ(large[i].K, all[i].K);
    EXPECT_GE(large[i].M, all[i].M);
    EXPECT_GE(large[i].M, 96);
    EXPECT_LE(large[i].M, 10000);
    EXPECT_GE(all[i].M, 1);
    EXPECT_EQ(all[i].N % 64, 0);
    EXPECT_GE(all[i].K, 512);
    small += all[i].M < 96;
  }
  EXPECT_GT(small, 100);                                               // log-uniform from 1: about half below 96
  const auto band = bench::random_gemms(dtypes, 200, 4343, 96, 1000);  // --m-min 96 --m-max 1000: the middle band alone
  ASSERT_EQ(band.size(), 400u);
  for (std::size_t i = 0; i < band.size(); ++i) {
    EXPECT_EQ(band[i].N, all[i].N);
    EXPECT_EQ(band[i].K, all[i].K);
    EXPECT_GE(band[i].M, 96);
    EXPECT_LE(band[i].M, 1000);
    EXPECT_LE(band[i].M, large[i].M);  // the same uniform draw, mapped onto a narrower range
  }
}

TEST(TunerSweep, ExtraExhaustiveSweepsAddShapesAndKeepTheFirstMeasurementOfARepeatedShape) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("perfloom_tiles_more_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                        "_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir / "tiles_more");
  const std::string header =
      "# sweep=tiles\n# "
      "date=D0\nop,dtype,M,N,K,latency_us,kernel_name,algo_id,tile,stages,splitk,cluster,heuristic_rank,grid,reps,"
      "source\n";
  auto row = [](const std::string& shape, double lat, int rank) {
    return "gemm," + shape + "," + std::to_string(lat) +
           ",nvjet_sm90_tst_128x128_64x6_4x1_v_bz_TNT,66,128x128,64xAUTO,1,1x1x1," + std::to_string(rank) +
           ",4x30x1,20,x\n";
  };
  auto write = [&](const fs::path& p, const std::string& body, const std::string& date) {
    std::ofstream os(p);
    std::string h = header;
    h.replace(h.find("D0"), 2, date);
    os << h << body;
  };
  write(dir / "tiles.csv",
        row("bf16,128,4096,4096", 10, 1) + row("bf16,128,4096,4096", 11, 2) + row("fp8e4m3,64,1024,2048", 5, 1), "old");
  // A later sweep: one shape tiles.csv has (dropped, both rows), one new shape (kept, both rows).
  write(dir / "tiles_more" / "tiles_s2.csv",
        row("bf16,128,4096,4096", 9, 1) + row("bf16,256,4096,4096", 20, 1) + row("bf16,128,4096,4096", 9.5, 2) +
            row("bf16,256,4096,4096", 21, 2),
        "new2");
  // Files are read in name order: s1 before s2, so s2's new shape also repeats s1's and is dropped there.
  write(dir / "tiles_more" / "tiles_s1.csv", row("bf16,256,4096,4096", 30, 1), "new1");
  std::ofstream(dir / "tiles_more" / "log.txt") << "not a csv\n";
  {  // a compressed sweep is read too
    std::string h = header;
    h.replace(h.find("D0"), 2, "new3");
    const std::string text = h + row("bf16,512,4096,4096", 40, 1);
    std::ofstream(dir / "tiles_more" / "tiles_s3.csv.gz", std::ios::binary) << gzip_text(text);
  }
  // Seed 10 comes after seed 3 (numbers in names compare as numbers): its repeat of s3's shape is dropped.
  write(dir / "tiles_more" / "tiles_s10.csv", row("bf16,512,4096,4096", 41, 1) + row("bf16,1024,4096,4096", 80, 1),
        "new10");

  const bench::Sweep all = bench::read_exhaustive(dir);
  ASSERT_EQ(all.files, (std::vector<std::string>{"tiles.csv", "tiles_more/tiles_s1.csv", "tiles_more/tiles_s2.csv",
                                                 "tiles_more/tiles_s3.csv.gz", "tiles_more/tiles_s10.csv"}));
  EXPECT_EQ(all.file_shapes, (std::vector<std::size_t>{2, 1, 0, 1, 1}));
  // bf16 128 and bf16 256 (in s2), bf16 512 (in s10), each counted once per file
  EXPECT_EQ(all.duplicate_shapes, 3u);
  EXPECT_EQ(all.duplicate_rows, 5u);
  EXPECT_EQ(all.environment.at("date"), "old");  // tiles.csv's
  ASSERT_EQ(all.rows.size(), 6u);
  EXPECT_EQ(all.rows[4].file, 3);
  EXPECT_EQ(all.rows[4].sample.shape.M, 512);
  EXPECT_DOUBLE_EQ(all.rows[4].sample.latency_us, 40);
  EXPECT_EQ(all.rows[5].file, 4);
  EXPECT_EQ(all.rows[5].sample.shape.M, 1024);
  EXPECT_DOUBLE_EQ(all.rows[0].sample.latency_us, 10);  // tiles.csv's rows first, unchanged
  EXPECT_EQ(all.rows[0].file, 0);
  EXPECT_EQ(all.rows[3].file, 1);
  EXPECT_DOUBLE_EQ(all.rows[3].sample.latency_us, 30);
  EXPECT_EQ(all.rows[3].sample.shape.M, 256);
  EXPECT_TRUE(all.rows[3].modelled);

  // Without the extra sweeps (or without the folder): tiles.csv alone, row for row what read_sweep gives.
  const bench::Sweep only = bench::read_exhaustive(dir, false);
  const bench::Sweep plain = bench::read_sweep((dir / "tiles.csv").string());
  ASSERT_EQ(only.rows.size(), plain.rows.size());
  for (std::size_t i = 0; i < only.rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(only.rows[i].sample.latency_us, plain.rows[i].sample.latency_us);
    EXPECT_EQ(only.rows[i].sample.shape.M, plain.rows[i].sample.shape.M);
    EXPECT_EQ(only.rows[i].file, 0);
  }
  EXPECT_EQ(only.files, (std::vector<std::string>{"tiles.csv"}));
  fs::remove_all(dir / "tiles_more");
  EXPECT_EQ(bench::read_exhaustive(dir).rows.size(), plain.rows.size());
  fs::remove_all(dir);
}

TEST(TunerSweep, AReMeasurementsChoicesAreScaledToTheSweepByTheConfigurationsBothTimedAtTheShape) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("perfloom_tuner_align_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string& header = kPlanSweepHeader;
  auto row = [](int m, const std::string& tile, double lat, int rank, const std::string& source) {
    return "gemm,bf16," + std::to_string(m) + ",4096,4096," + std::to_string(lat) + ",nvjet_sm90_tst_" + tile +
           "_64x6_1x1_v_bz_TNT,66," + tile + ",64xAUTO,1,1x1x1," + std::to_string(rank) + ",4x30x1,20," + source + "\n";
  };
  // Shape M=128: the sweep timed three configurations; shape M=256: one.
  std::ofstream(dir / "tiles.csv") << header << row(128, "128x128", 10, 1, "x") << row(128, "128x64", 20, 2, "x")
                                   << row(128, "256x128", 30, 3, "x") << row(256, "128x128", 40, 1, "x");
  // The lease ran 5% slow at M=128 (two configurations the sweep timed, one of them twice) and 10% slow at
  // M=256, where it shares one configuration with the sweep: too few to say.
  std::ofstream(dir / "tuner_picks.csv") << header << row(128, "128x128", 10.5, 1, "plan:heuristic rep=1")
                                         << row(128, "128x64", 21, -2, "plan:64x128x64/s1/c1x1 measured 2 rep=1")
                                         << row(128, "128x64", 21.2, -2, "plan:64x128x64/s1/c1x1 measured 2 rep=2")
                                         << row(128, "64x64", 12.6, -2, "plan:64x64x64/s1/c1x1 table 1 rep=1")
                                         << row(256, "128x128", 44, 1, "plan:heuristic rep=1")
                                         << row(256, "64x64", 33, -2, "plan:64x64x64/s1/c1x1 table 1 rep=1");
  const bench::Sweep sweep = bench::read_sweep((dir / "tiles.csv").string());
  auto latency_at = [](const std::vector<bench::SweepRow>& rows, long long m) {
    for (const auto& r : rows)
      if (r.sample.shape.M == m) return r.sample.latency_us;
    return -1.0;
  };
  const auto aligned = bench::read_picks(dir, sweep, true);
  ASSERT_EQ(aligned.size(), 2u);
  // The median of 10 / 10.5 and 20 / 21.1 is 0.9524 / 1.05... : the choice's 12.6 us reads as 12.0 at the sweep's
  // scale.
  EXPECT_NEAR(latency_at(aligned, 128), 12.6 * ((10 / 10.5 + 20 / 21.1) / 2), 1e-9);
  EXPECT_NEAR(latency_at(aligned, 128), 12.0, 0.05);
  EXPECT_DOUBLE_EQ(latency_at(aligned, 256), 33);  // one shared configuration: kept as measured
  const auto raw = bench::read_picks(dir, sweep);  // the default: as measured
  EXPECT_DOUBLE_EQ(latency_at(raw, 128), 12.6);
  EXPECT_DOUBLE_EQ(latency_at(raw, 256), 33);
  fs::remove_all(dir);
}

TEST(TunerSweep, TheTablePathsMeasuredChoicesAreReadAsOneMedianRowPerConfigurationTheSweepLacks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("perfloom_tuner_picks_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string& header = kPlanSweepHeader;
  auto row = [](const std::string& tile, const std::string& cluster, double lat, int rank, const std::string& source) {
    return "gemm,bf16,128,4096,4096," + std::to_string(lat) + ",nvjet_sm90_tst_" + tile + "_64x6_1x1_v_bz_TNT,66," +
           tile + ",64xAUTO,1," + cluster + "," + std::to_string(rank) + ",4x30x1,20," + source + "\n";
  };
  std::ofstream(dir / "tiles.csv") << header << row("128x128", "1x1x1", 10, 1, "x");
  EXPECT_TRUE(bench::read_picks(dir, bench::read_sweep((dir / "tiles.csv").string())).empty());  // no file: none
  const std::string picks =
      header + row("128x64", "2x1x1", 12, -2, "plan:64x128x64/s1/c1x2 table 1 rep=1") +
      row("128x64", "2x1x1", 11, -2, "plan:64x128x64/s1/c1x2 table 1 rep=2") +
      row("128x64", "2x1x1", 15, -2, "plan:64x128x64/s1/c1x2 table 1 rep=3") +
      row("128x128", "1x1x1", 9, -2, "plan:128x128x64/s1/c1x1 table 2 rep=1") +  // the sweep measured it: its row stays
      row("256x64", "1x1x1", 20, -2, "plan:64x256x64/s1/c1x1 model 2 rep=1") +   // not one of the table path's
      row("128x64", "2x1x1", 10.5, 1, "plan:heuristic rep=1");                   // cuBLASLt's default, as it is
  std::ofstream(dir / "tuner_picks.csv.gz", std::ios::binary) << gzip_text(picks);
  const auto got = bench::read_picks(dir, bench::read_sweep((dir / "tiles.csv").string()));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_DOUBLE_EQ(got[0].sample.latency_us, 12);  // the median of 12, 11 and 15
  EXPECT_EQ(got[0].reps, 3);
  EXPECT_EQ(got[0].sample.config.tile_m, 64);  // perfloom's orientation: cuBLASLt's 128x64 is 64 along M
  EXPECT_EQ(got[0].sample.config.tile_n, 128);
  EXPECT_EQ(got[0].sample.config.cluster_n, 2);
  EXPECT_EQ(bench::picks_files_present(dir), "tuner_picks.csv.gz");
  // An earlier one-lease re-measurement kept in picks/ adds its repetitions of the same
  // configuration to the median, and its own table-path configurations ("earlier: table K" from a
  // merged plan too); the newest one, confirm.csv, scores and is not learned.
  fs::create_directories(dir / "picks");
  std::ofstream(dir / "confirm.csv") << header << row("512x64", "1x1x1", 5, -2, "plan:64x512x64/s1/c1x1 table 1 rep=1");
  std::ofstream(dir / "picks" / "lease_c.csv")
      << header << row("128x64", "2x1x1", 16, -2, "plan:64x128x64/s1/c1x2 earlier: table 1 rep=1")
      << row("128x64", "2x1x1", 17, -2, "plan:64x128x64/s1/c1x2 earlier: table 1 rep=2")
      << row("256x128", "1x2x1", 30, -2, "plan:128x256x64/s1/c2x1 table 1 via=r3 rep=1");
  const auto both = bench::read_picks(dir, bench::read_sweep((dir / "tiles.csv").string()));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(bench::picks_files_present(dir), "tuner_picks.csv.gz, picks/lease_c.csv");
  for (const auto& r : both) {
    if (r.sample.config.tile_n == 128) {
      EXPECT_DOUBLE_EQ(r.sample.latency_us, 15);  // the median of 12, 11, 15, 16 and 17
      EXPECT_EQ(r.reps, 5);
    } else {
      EXPECT_DOUBLE_EQ(r.sample.latency_us, 30);
      EXPECT_EQ(r.sample.config.tile_m, 128);
    }
  }
  fs::remove_all(dir / "picks");
  std::ofstream(dir / "tuner_picks.csv.gz", std::ios::binary)
      << gzip_text(picks).substr(0, 40);  // cut: refused by name
  try {
    bench::read_picks(dir, bench::read_sweep((dir / "tiles.csv").string()));
    ADD_FAILURE() << "a cut file was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tuner_picks.csv.gz"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(TunerSweep, TimedQueryListsAreReadAsOneMedianRowPerConfigurationAtShapesTheSweepLacks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("perfloom_tuner_lists_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string& header = kPlanSweepHeader;
  auto row = [](int64_t m, const std::string& tile, double lat, int rank, const std::string& source) {
    return "gemm,bf16," + std::to_string(m) + ",4096,4096," + std::to_string(lat) + ",nvjet_sm90_tst_" + tile +
           "_64x6_1x1_v_bz_TNT,66," + tile + ",64xAUTO,1,1x1x1," + std::to_string(rank) + ",4x30x1,20," + source + "\n";
  };
  std::ofstream(dir / "tiles.csv") << header << row(128, "128x128", 10, 1, "x");
  const bench::Sweep sweep = bench::read_sweep((dir / "tiles.csv").string());
  EXPECT_TRUE(bench::read_lists(dir, sweep).empty());  // no lists/ folder: none
  fs::create_directories(dir / "lists");
  std::ofstream(dir / "lists" / "lists_s1.csv")
      << header << row(300, "128x64", 12, -2, "plan:64x128x64/s1/c1x1 table 1 rep=1")
      << row(300, "128x64", 11, -2, "plan:64x128x64/s1/c1x1 table 1 rep=2")
      << row(300, "128x64", 16, 2, "plan:heuristic rep=1")  // the same configuration
      << row(300, "256x128", 20, -2, "plan:128x256x64/s1/c1x1 table 2 rep=1")
      << "gemm,bf16,300,4096,4096,30,magma_sgemm,1,,,1,,-2,4x30x1,20,plan:x table 3 rep=1\n"
      << row(128, "128x64", 9, -2, "plan:64x128x64/s1/c1x1 table 1 rep=1");  // a swept shape
  const auto got = bench::read_lists(dir, sweep);
  ASSERT_EQ(got.size(), 2u);  // 300x4096x4096's two nvjet configurations; the swept shape's row is not learned
  for (const auto& r : got) {
    EXPECT_EQ(r.sample.shape.M, 300);
    if (r.sample.config.tile_n == 128) {
      EXPECT_DOUBLE_EQ(r.sample.latency_us, 12);  // the median of 12, 11 and 16
      EXPECT_EQ(r.reps, 3);
    } else {
      EXPECT_DOUBLE_EQ(r.sample.latency_us, 20);
      EXPECT_EQ(r.sample.config.tile_m, 128);
    }
  }
  std::ofstream(dir / "lists" / "lists_s2.csv.gz", std::ios::binary)
      << gzip_text(header + row(77, "128x64", 5, 1, "x")).substr(0, 30);
  try {  // a cut file is refused by name
    bench::read_lists(dir, sweep);
    ADD_FAILURE() << "a cut file was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("lists_s2.csv.gz"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// ---- the kernel variant (cuBLASLt's custom option) of a configuration ----

namespace {

// Synthetic measurements of two configurations over many shapes, each timed with options 0, 1, 2
// and 3 (the first accepts only 0 and 2): option 2 (bit 1) is 8% faster where the grid has more
// tiles along M than along N and 8% slower where it has fewer; bit 0 costs 3% everywhere.
std::vector<VariantSample> synthetic_variants(const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  std::vector<VariantSample> out;
  const std::vector<std::pair<TileConfig, std::vector<int>>> configs = {{tile(128, 128, 64, 1, 1, 2), {0, 2}},
                                                                        {tile(64, 256, 64, 1, 2, 1), {0, 1, 2, 3}}};
  for (const auto& [m, n] : shapes)
    for (const auto& [cfg, customs] : configs)
      for (int c : customs) {
        const double grid_m = std::ceil(double(m) / cfg.tile_m), grid_n = std::ceil(double(n) / cfg.tile_n);
        double t = 100.0 * (c & 2 ? (grid_m > grid_n ? 0.92 : 1.08) : 1.0) * (c & 1 ? 1.03 : 1.0);
        VariantSample s;
        s.shape = {m, n, 4096, Dtype::bf16};
        s.config = cfg;
        s.custom = c;
        s.latency_us = t;
        s.kernel =
            std::string("nvjet_sm90_tst_128x128_64x4_2x1_") + (c & 2 ? "h" : "v") + "_bz_" + (c & 1 ? "TNT" : "TNN");
        out.push_back(s);
      }
  return out;
}

}  // namespace

TEST(TunerVariant, TheModelNamesTheFastestAcceptedOptionOfShapesItDidNotSee) {
  const GpuSpec& h100 = db().get("h100-sxm");
  std::vector<std::pair<int64_t, int64_t>> train, test;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> side(256, 16384);
  for (int i = 0; i < 160; ++i) train.emplace_back(side(rng), side(rng));
  for (int i = 0; i < 40; ++i) test.emplace_back(side(rng), side(rng));
  const VariantModel m = fit_variant_model(synthetic_variants(train), h100, {});
  ASSERT_NE(m.booster, nullptr);
  EXPECT_EQ(m.points, 320);
  EXPECT_EQ(m.accepted.at("16bit").at(config_key(tile(128, 128, 64, 1, 1, 2))), (std::vector<int>{0, 2}));
  EXPECT_EQ(m.labels.at(3), "raster h, TNT");
  EXPECT_EQ(m.labels.at(0), "raster v, TNN");
  int right = 0, n = 0;
  for (const auto& [M, N] : test)
    for (const TileConfig& cfg : {tile(128, 128, 64, 1, 1, 2), tile(64, 256, 64, 1, 2, 1)}) {
      const GemmShape s{M, N, 4096, Dtype::bf16};
      const double gm = std::ceil(double(M) / cfg.tile_m), gn = std::ceil(double(N) / cfg.tile_n);
      if (gm == gn) continue;
      const int c = choose_variant(m, h100, {}, s, cfg);
      ++n;
      right += c == (gm > gn ? 2 : 0);
      EXPECT_TRUE(c == 0 || c == 2 || cfg.tile_m == 64) << "an option cuBLASLt did not accept: " << c;
      EXPECT_NE(c & 1, 1) << "bit 0 costs 3% everywhere";
    }
  EXPECT_GE(right, n * 9 / 10) << right << " of " << n;
  // A configuration never measured: its tile's options where the tile was measured with another
  // cluster (those all accepted), none where the tile never was.
  const GemmShape s{4096, 1024, 4096, Dtype::bf16};
  const TileConfig other_cluster = tile(128, 128, 64, 1, 2, 1), unseen = tile(192, 128, 64);
  const int a = choose_variant(m, h100, {}, s, other_cluster);
  EXPECT_TRUE(a == 0 || a == 2) << a;
  EXPECT_EQ(choose_variant(m, h100, {}, s, unseen), -1);
  EXPECT_EQ(choose_variant(m, h100, {}, {4096, 1024, 4096, Dtype::fp8e4m3}, other_cluster), -1)
      << "no option for a dtype group the model was not measured in";
  // Too few points: no model, and nothing named.
  const VariantModel none = fit_variant_model(synthetic_variants({{1024, 1024}, {2048, 512}}), h100, {});
  EXPECT_EQ(none.booster, nullptr);
  EXPECT_EQ(nvjet_variant_label("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"), "raster h, cooperative, TNT");
  EXPECT_EQ(nvjet_variant_label("sm90_xmma_gemm_bf16bf16"), "");
}

TEST(TunerVariant, ASweepRowIsRelabeledToItsConfigurationsFastestOption) {
  // The option a kernel ran with, from its name: bit 0 TNT, bit 1 raster h, bit 2 cooperative.
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_128x128_64x4_2x1_v_bz_TNN"), 0);
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_128x128_64x4_2x1_h_bz_TNT"), 3);
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_256x128_64x4_1x2_v_bz_coopB_TNT"), 5);
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNN"), 6);
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_128x128_64x4_2x1_bz_TNN"), -1) << "no raster order";
  EXPECT_EQ(nvjet_custom_option("nvjet_sm90_tst_128x128_64x4_2x1_v_bz_TNN(Params)"), -1) << "no operand order";
  EXPECT_EQ(nvjet_custom_option("sm90_xmma_gemm_bf16bf16_h_TNT"), -1) << "not an nvjet kernel";

  const GpuSpec& h100 = db().get("h100-sxm");
  std::vector<std::pair<int64_t, int64_t>> train;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> side(256, 16384);
  for (int i = 0; i < 160; ++i) train.emplace_back(side(rng), side(rng));
  const VariantModel m = fit_variant_model(synthetic_variants(train), h100, {});
  ASSERT_NE(m.booster, nullptr);
  // A shape with many more tiles along M: option 2 (raster h) is the fastest, option 1 (TNT, raster
  // v) 1.08 x 1.03 = 1.11 x slower than it.
  const GemmShape s{16384, 512, 4096, Dtype::bf16};
  std::vector<TunerSample> rows(4);
  for (auto& r : rows) {
    r.shape = s;
    r.config = tile(64, 256, 64, 1, 2, 1);
    r.latency_us = 100;
  }
  rows[0].custom_option = 1;
  rows[1].custom_option = 2;
  rows[2].custom_option = -1;                                      // unknown: as measured
  rows[3].config = tile(192, 128, 64), rows[3].custom_option = 1;  // a tile never timed with another option
  EXPECT_GE(to_fastest_option(rows, m, h100, {}), 1u);
  // (the trees see 160 shapes: the ratio within 10%)
  EXPECT_LT(rows[0].latency_us, 100 / 1.09) << "option 1's time, as option 2 would take it";
  EXPECT_GT(rows[0].latency_us, 100 / 1.33) << "option 1's time, as option 2 would take it";
  EXPECT_NEAR(rows[1].latency_us, 100, 2.0) << "already the fastest option";
  EXPECT_EQ(rows[2].latency_us, 100);
  EXPECT_EQ(rows[3].latency_us, 100);
  for (const auto& r : rows) EXPECT_LE(r.latency_us, 100) << "never made slower";
  EXPECT_EQ(to_fastest_option(rows, VariantModel{}, h100, {}), 0u) << "no model: nothing changes";
}

TEST(TunerVariant, TablesCarryTheModelThroughJsonAndTuneNamesTheOption) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const TunerTable* bundled = bundled_tuner_table(h100);
  ASSERT_NE(bundled, nullptr);
  ASSERT_NE(bundled->variants.booster, nullptr) << "the shipped H100 table has a variant model (perfloom-tuner-fit)";
  const TunerTable back = parse_tuner_table(tuner_table_to_json(*bundled), "round-trip");
  ASSERT_NE(back.variants.booster, nullptr);
  EXPECT_EQ(back.variants.accepted, bundled->variants.accepted);
  EXPECT_EQ(back.variants.labels, bundled->variants.labels);
  const GemmShape s{4096, 4096, 4096, Dtype::bf16};
  const auto a = tune_gemm(s, h100, 5, bundled), b = tune_gemm(s, h100, 5, &back);
  ASSERT_EQ(a.ranked.size(), 5u);
  int named = 0;
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    EXPECT_EQ(a.ranked[i].custom_option, b.ranked[i].custom_option);
    if (a.ranked[i].custom_option < 0) continue;
    ++named;
    const auto& acc = bundled->variants.accepted.at("16bit");
    if (auto it = acc.find(config_key(a.ranked[i].config)); it != acc.end()) {
      EXPECT_NE(std::find(it->second.begin(), it->second.end(), a.ranked[i].custom_option), it->second.end());
    }
    EXPECT_FALSE(a.ranked[i].variant.empty());
  }
  EXPECT_GT(named, 0);
  // A table without the model names none.
  TunerTable plain = *bundled;
  plain.variants = {};
  for (const auto& c : tune_gemm(s, h100, 5, &plain).ranked) EXPECT_EQ(c.custom_option, -1);
  // Bad variant sections are refused, naming the field.
  const std::string good = tuner_table_to_json(*bundled);
  auto error_of = [&](const std::string& from, const std::string& to) {
    return parse_error_after(good, "\"variants\"", from, to);
  };
  EXPECT_NE(error_of("\"variant:custom_bit2\"", "\"variant:custom_bit9\"").find("variants.features"),
            std::string::npos);
  EXPECT_NE(error_of("\"accepted\": {", "\"accepted\": {\"bad\": {\"128x128x64/s1/c1x1\": [99]}, ")
                .find("not a cuBLASLt custom option"),
            std::string::npos);
  EXPECT_NE(error_of("\"accepted\": {", "\"accepted\": {\"bad\": {\"128xq/s1\": [1]}, ").find("variants.accepted.bad"),
            std::string::npos);
  EXPECT_NE(error_of("\"labels\": {", "\"labels\": {\"seven\": \"x\", ").find("variants.labels.seven"),
            std::string::npos);
  EXPECT_NE(error_of("\"model\": {", "\"model\": [1], \"m2\": {").find("variants.model"), std::string::npos);
}

TEST(TunerSweep, AVariantMeasurementIsReadAsOneMedianPerOptionWithTheForcedOneMarked) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("perfloom_tuner_variants_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::string& header = kPlanSweepHeader;
  auto row = [](const std::string& raster, double lat, int rank, const std::string& source) {
    return "gemm,bf16,512,4096,4096," + std::to_string(lat) + ",nvjet_sm90_tst_128x64_64x6_1x2_" + raster +
           "_bz_TNT,66,128x64,64xAUTO,1,1x2x1," + std::to_string(rank) + ",4x30x1,20," + source + "\n";
  };
  std::ofstream(dir / "variants.csv") << header << row("v", 30, 1, "plan:heuristic rep=1")
                                      << row("v", 32, 1, "plan:heuristic rep=2")
                                      << row("v", 20, -2,
                                             "plan:64x128x64/s1/c2x1 table 1; joint 2 via=r5 variant=c1/s0 base rep=1")
                                      << row("h", 18, -2, "plan:64x128x64/s1/c2x1 table 1 variant=c3/s0 rep=1")
                                      << row("v", 22, -2, "plan:64x128x64/s1/c2x1 table 1 variant=c1/s0 base rep=2")
                                      << row("h", 19, -2, "plan:64x128x64/s1/c2x1 table 1 variant=c3/s0 rep=2")
                                      << row("v", 21, -2, "plan:64x128x64/s1/c2x1 table 1 variant=c1/s0 base rep=3");
  const bench::VariantData v = bench::read_variants((dir / "variants.csv").string());
  ASSERT_EQ(v.shapes.size(), 1u);
  const bench::VariantShape& s = v.shapes.front();
  EXPECT_DOUBLE_EQ(s.default_us, 31);
  ASSERT_EQ(s.points.size(), 1u);
  const bench::VariantPoint& p = s.points.begin()->second;
  EXPECT_EQ(p.config, "64x128x64/s1/c2x1");
  EXPECT_EQ(p.why, "table 1; joint 2") << "the plan's tags, without the collector's base result";
  EXPECT_EQ(p.base_custom, 1);
  EXPECT_DOUBLE_EQ(p.latency_us.at(1), 21);
  EXPECT_DOUBLE_EQ(p.latency_us.at(3), 18.5);
  EXPECT_DOUBLE_EQ(s.best_us(), 18.5);
  ASSERT_EQ(v.samples.size(), 2u);
  EXPECT_EQ(v.samples[0].config, config_from_string("64x128x64/s1/c2x1"));
  // A plan row without its option is not a variant measurement: refused, naming the file.
  std::ofstream(dir / "plain.csv") << header << row("v", 20, -2, "plan:64x128x64/s1/c2x1 table 1 rep=1");
  try {
    bench::read_variants((dir / "plain.csv").string());
    ADD_FAILURE() << "a plan run without variants was read as one";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("plain.csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a --variants run"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// ---- which configurations cuBLASLt refuses (model/tuner/acceptance_model.h) ----

namespace {
bool same_key(const TileConfig& a, const TileConfig& b) { return config_key(a) == config_key(b); }
}  // namespace

TEST(TunerAcceptance, TheModelLearnsWhereCuBlasLtRefusesAConfigurationAndTuneMovesItLast) {
  const GpuSpec& h200 = db().get("h200");
  const TunerTable* bundled = bundled_tuner_table(h200);
  ASSERT_NE(bundled, nullptr);
  ASSERT_NE(bundled->acceptance.booster, nullptr)
      << "the shipped H200 table has an acceptance model (perfloom-tuner-fit)";
  // The bundled first choice at a shape, refused by a synthetic cuBLASLt at every M below 1,024 and run above it; the
  // table's other candidates there always run.
  const GemmShape query{300, 8192, 4096, Dtype::bf16};
  TunerTable plain = *bundled;
  plain.acceptance = {};
  const TuneResult before = tune_gemm(query, h200, 6, &plain);
  ASSERT_GE(before.ranked.size(), 3u);
  for (const auto& r : before.ranked) EXPECT_TRUE(std::isnan(r.refusal_p));  // no model: nothing predicted
  const TileConfig refused = before.ranked[0].config;
  std::vector<AcceptanceSample> samples;
  for (int64_t m : {16, 48, 100, 160, 250, 300, 400, 700, 900, 1200, 1600, 2500, 4000, 6000, 9000})
    for (int64_t n : {2048, 4096, 8192, 16384})
      for (int64_t k : {1024, 4096, 16384})
        for (std::size_t i = 0; i < 4; ++i) {
          AcceptanceSample s;
          s.shape = {m, n, k, Dtype::bf16};
          s.config = before.ranked[i].config;
          s.accepted = i > 0 || m >= 1024;
          samples.push_back(s);
        }
  TunerTable with = plain;
  with.acceptance = fit_acceptance_model(samples, h200, with.slots_by_cluster);
  ASSERT_NE(with.acceptance.booster, nullptr);
  EXPECT_EQ(with.acceptance.points, static_cast<int>(samples.size()));
  EXPECT_EQ(with.acceptance.refused, 9 * 4 * 3);  // the 9 M below 1,024, at every N and K
  const TuneResult after = tune_gemm(query, h200, 6, &with);
  ASSERT_EQ(after.ranked.size(), before.ranked.size());
  EXPECT_FALSE(same_key(after.ranked[0].config, refused)) << "a configuration predicted refused stays first";
  EXPECT_TRUE(same_key(after.ranked[0].config, before.ranked[1].config));  // the others keep their order
  const double thr = with.acceptance.threshold;
  EXPECT_LT(after.ranked[0].refusal_p, thr);
  for (const auto& r : after.ranked) EXPECT_FALSE(std::isnan(r.refusal_p));
  // Above M = 1,024 it runs and keeps its place.
  const GemmShape large{4000, 8192, 4096, Dtype::bf16};
  const std::vector<RankedConfig> at_large = rank_with_table(with, h200, large, {refused, before.ranked[1].config});
  const auto it = std::find_if(at_large.begin(), at_large.end(),
                               [&](const RankedConfig& r) { return same_key(r.config, refused); });
  ASSERT_NE(it, at_large.end());
  EXPECT_LT(it->refusal_p, thr);
  const std::vector<RankedConfig> at_small = rank_with_table(with, h200, query, {refused, before.ranked[1].config});
  EXPECT_TRUE(same_key(at_small.back().config, refused));
  EXPECT_GE(at_small.back().refusal_p, thr);
  EXPECT_NE(at_small.back().reason.find("cuBLASLt likely refuses it (p "), std::string::npos) << at_small.back().reason;
  // Through JSON: the same model, the same order; a bad section is refused, naming the field.
  const std::string text = tuner_table_to_json(with);
  const TunerTable back = parse_tuner_table(text, "round-trip");
  ASSERT_NE(back.acceptance.booster, nullptr);
  EXPECT_EQ(back.acceptance.points, with.acceptance.points);
  EXPECT_EQ(back.acceptance.refused, with.acceptance.refused);
  EXPECT_DOUBLE_EQ(back.acceptance.threshold, thr);
  const TuneResult again = tune_gemm(query, h200, 6, &back);
  for (std::size_t i = 0; i < after.ranked.size(); ++i) {
    EXPECT_TRUE(same_key(again.ranked[i].config, after.ranked[i].config));
    EXPECT_NEAR(again.ranked[i].refusal_p, after.ranked[i].refusal_p, 1e-6);
  }
  auto error_of = [&](const std::string& from, const std::string& to) {
    return parse_error_after(text, "\"acceptance\"", from, to);
  };
  EXPECT_NE(error_of("\"threshold\": 0.3", "\"threshold\": 1.5").find("acceptance.threshold"), std::string::npos);
  EXPECT_NE(error_of("\"acceptance:log2_tiles_n\"", "\"acceptance:tiles_n\"").find("acceptance.features"),
            std::string::npos);
  EXPECT_NE(error_of("\"model\": {", "\"model\": [1], \"m2\": {").find("acceptance.model"), std::string::npos);
  // Too few refusals to learn from: no model.
  std::vector<AcceptanceSample> few(samples.begin(), samples.begin() + 30);
  for (auto& s : few) s.accepted = true;
  EXPECT_EQ(fit_acceptance_model(few, h200, with.slots_by_cluster).booster, nullptr);
}

TEST(TunerSweep, PlanRunsAreReadAsAcceptedAndRefusedPointsOfTheShapesTheyReached) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("perfloom_tuner_accept_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir / "lists");
  const std::string plan_header =
      "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,waves,last_wave_fill,k_iters,why,cublaslt_stages,"
      "heuristic_rank,"
      "cublaslt_custom\n";
  auto plan_row = [](int64_t m, const std::string& config, int rank = 0) {
    return "gemm,bf16," + std::to_string(m) + ",4096,4096," + config + ",128x64,1x1x1,1,1,1,64,\"table 1\",64xAUTO," +
           std::to_string(rank) + ",0\n";
  };
  std::ofstream(dir / "run_s1_plan.csv") << plan_header << plan_row(300, "64x128x64/s1/c1x1")
                                         << plan_row(300, "128x256x64/s1/c1x2")
                                         << plan_row(300, "64x128x64/s1/c1x1")    // twice: one point
                                         << plan_row(300, "64x64x64/s1/c1x1", 3)  // cuBLASLt's own result: not a point
                                         << plan_row(500, "64x128x64/s1/c1x1");   // a shape the run did not reach
  auto row = [](int64_t m, const std::string& source) {
    return "gemm,bf16," + std::to_string(m) +
           ",4096,4096,12,nvjet_sm90_tst_128x64_64x6_1x1_v_bz_TNT,66,128x64,64xAUTO,1,1x1x1,-2,4x30x1,20," + source +
           "\n";
  };
  const std::string head = "# plan_files=/root/out/h200/run_s1_plan.csv\n" + kPlanSweepHeader;
  std::ofstream(dir / "lists" / "run_s1.csv")
      << head << row(300, "plan:heuristic rep=1") << row(300, "plan:64x128x64/s1/c1x1 table 1 rep=1");
  std::ofstream(dir / "lists" / "run_s2.csv")
      << "# plan_files=/root/out/h200/gone_plan.csv\n" + kPlanSweepHeader << row(300, "plan:heuristic rep=1");
  const bench::AcceptanceData got =
      bench::read_acceptance(dir, {dir / "lists" / "run_s1.csv", dir / "lists" / "run_s2.csv"});
  ASSERT_EQ(got.samples.size(), 2u);
  std::map<std::string, bool> accepted;
  for (const auto& s : got.samples) {
    EXPECT_EQ(s.shape.M, 300);
    accepted[config_to_string(s.config)] = s.accepted;
  }
  EXPECT_TRUE(accepted.at("64x128x64/s1/c1x1"));
  EXPECT_FALSE(accepted.at("128x256x64/s1/c1x2"));
  ASSERT_EQ(got.files.size(), 1u);
  ASSERT_EQ(got.missing_plans.size(), 1u);  // the run whose plan is not there is named and left out
  EXPECT_NE(got.missing_plans[0].find("run_s2.csv"), std::string::npos);
  EXPECT_NE(got.missing_plans[0].find("gone_plan.csv"), std::string::npos);
  // A plan row with a configuration that is not one is refused, naming the plan file.
  std::ofstream(dir / "run_s1_plan.csv", std::ios::app) << plan_row(300, "128xq");
  try {
    bench::read_acceptance(dir, {dir / "lists" / "run_s1.csv"});
    ADD_FAILURE() << "a bad configuration was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("run_s1_plan.csv"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// The fused-MoE tuner (moe_tuner.h).
TEST(MoeTuner, SpaceKeepsWhatFitsAndWhatTheShapeAllows) {
  const GpuSpec& h200 = db().get("h200");
  const MoeShape aligned{128, 768, 4096, 8}, ragged{128, 360, 2880, 4};
  const auto space = moe_config_space(aligned, MoeDtype::bf16, h200);
  ASSERT_FALSE(space.empty());
  for (const auto& c : space)
    EXPECT_LE(c.num_stages * (c.block_m + c.block_n) * c.block_k * 2, h200.max_shared_memory_per_block_kib * 1024)
        << moe_config_to_string(c);
  // fp8 halves the tile bytes: more of the space fits.
  EXPECT_GT(moe_config_space(aligned, MoeDtype::fp8, h200).size(), space.size());
  // A weight row of 360 elements (not a multiple of 16): BLOCK_SIZE_K 64 and at most 32 weight elements per thread.
  const auto r = moe_config_space(ragged, MoeDtype::bf16, h200);
  ASSERT_FALSE(r.empty());
  EXPECT_LT(r.size(), moe_config_space({128, 368, 2880, 4}, MoeDtype::bf16, h200).size());
  for (const auto& c : r) {
    EXPECT_LE(c.block_n * c.block_k / (32 * c.num_warps), 32) << moe_config_to_string(c);
    EXPECT_EQ(c.block_k, 64) << moe_config_to_string(c);
  }
}

TEST(MoeTuner, FewTokensPickSmallRowBlocksAndManyTokensLargeOnes) {
  const GpuSpec& h200 = db().get("h200");
  const MoeShape qwen{128, 1536, 4096, 8};
  const auto res = tune_moe(qwen, MoeDtype::bf16, h200, {1, 8192});
  ASSERT_EQ(res.size(), 2u);
  // One token: 8 assignments over 128 experts, each padded to BLOCK_SIZE_M; the smallest row block pads least.
  EXPECT_EQ(res[0].ranked.front().config.block_m, 16) << moe_config_to_string(res[0].ranked.front().config);
  // 8192 tokens: 512 assignments per expert; row blocks of 64 and more reach the warpgroup MMA.
  EXPECT_GE(res[1].ranked.front().config.block_m, 64) << moe_config_to_string(res[1].ranked.front().config);
  for (const auto& t : res) {
    EXPECT_TRUE(std::is_sorted(t.ranked.begin(), t.ranked.end(),
                               [](const auto& a, const auto& b) { return a.pred_us < b.pred_us; }));
    // The engine's default is a configuration like any other: never predicted faster than the first choice.
    EXPECT_LE(t.ranked.front().pred_us, t.engine_default.pred_us);
  }
  // More prefetched stages keep more weight bytes in flight: at one token (latency-bound loads) 2 stages are slower.
  const MoeConfig two{16, 64, 128, 16, 4, 2}, five{16, 64, 128, 16, 4, 5};
  EXPECT_GT(estimate_moe_config(qwen, MoeDtype::bf16, h200, 1, two).pred_us,
            estimate_moe_config(qwen, MoeDtype::bf16, h200, 1, five).pred_us);
}

TEST(MoeTuner, NamesTheFileAsVllmDoes) {
  const GpuSpec& h200 = db().get("h200");
  EXPECT_EQ(vllm_moe_config_file_name({256, 256, 7168, 8}, MoeDtype::bf16, h200),
            "E=256,N=256,device_name=NVIDIA_H200.json");
  EXPECT_EQ(vllm_moe_config_file_name({8, 14336, 4096, 2}, MoeDtype::fp8, db().get("a100-sxm-80gb")),
            "E=8,N=14336,device_name=NVIDIA_A100-SXM4-80GB,dtype=fp8_w8a8.json");
  EXPECT_EQ(vllm_moe_config_file_name({256, 256, 7168, 8}, MoeDtype::fp8_block, db().get("rtx-4090")),
            "E=256,N=256,device_name=NVIDIA_GeForce_RTX_4090,dtype=fp8_w8a8,block_shape=[128,128].json");
  GpuSpec nvl = h200;
  nvl.aliases = {"NVIDIA H200 NVL"};
  EXPECT_EQ(vllm_device_name(nvl), "NVIDIA_H200");  // vLLM files the H200 family under one name
  GpuSpec gh = db().get("gh200");
  EXPECT_EQ(vllm_device_name(gh), "NVIDIA_GH200_480GB");
  EXPECT_EQ(vllm_moe_token_counts().front(), 1);
  EXPECT_EQ(vllm_moe_token_counts().back(), 4096);
  EXPECT_EQ(vllm_moe_token_counts().size(), 18u);
  EXPECT_THROW(tune_moe({8, 768, 4096, 9}, MoeDtype::bf16, h200, {1}), std::invalid_argument);
  EXPECT_THROW(tune_moe({8, 768, 4096, 2}, MoeDtype::fp8, db().get("a100-sxm-80gb"), {1}), std::invalid_argument);
  EXPECT_THROW(tune_moe({8, 768, 4096, 2}, MoeDtype::bf16, h200, {0}), std::invalid_argument);
}

// vLLM's configuration file (`tune --moe --out`, the Tuner view's export): each token count's first, its six
// keys in vLLM's order, indented by 4, a newline at the end.
TEST(MoeTuner, WritesVllmsConfigurationFile) {
  MoeTokenResult one, many;
  one.tokens = 1;
  one.ranked.push_back({MoeConfig{16, 64, 256, 16, 4, 5}, 10.0, {}, {}, ""});
  one.ranked.push_back({MoeConfig{32, 64, 128, 1, 8, 3}, 11.0, {}, {}, ""});
  many.tokens = 4096;
  many.ranked.push_back({MoeConfig{128, 128, 64, 32, 8, 4}, 900.0, {}, {}, ""});
  const std::string expected =
      "{\n"
      "    \"1\": {\n"
      "        \"BLOCK_SIZE_M\": 16,\n"
      "        \"BLOCK_SIZE_N\": 64,\n"
      "        \"BLOCK_SIZE_K\": 256,\n"
      "        \"GROUP_SIZE_M\": 16,\n"
      "        \"num_warps\": 4,\n"
      "        \"num_stages\": 5\n"
      "    },\n"
      "    \"4096\": {\n"
      "        \"BLOCK_SIZE_M\": 128,\n"
      "        \"BLOCK_SIZE_N\": 128,\n"
      "        \"BLOCK_SIZE_K\": 64,\n"
      "        \"GROUP_SIZE_M\": 32,\n"
      "        \"num_warps\": 8,\n"
      "        \"num_stages\": 4\n"
      "    }\n"
      "}\n";
  EXPECT_EQ(vllm_moe_config_json({one, many}), expected);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("perfloom-moe-config-" + std::to_string(::getpid()) + ".json");
  write_vllm_moe_config(file, {one, many});
  std::ifstream is(file, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(is), std::istreambuf_iterator<char>()), expected);
  std::filesystem::remove(file);
  try {
    write_vllm_moe_config("/nonexistent-perfloom-dir/E=8.json", {one});
    ADD_FAILURE() << "an unwritable file was written";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-perfloom-dir/E=8.json"), std::string::npos) << e.what();
  }
  MoeTokenResult none;
  none.tokens = 8;
  EXPECT_THROW(vllm_moe_config_json({one, none}), std::invalid_argument);
}
