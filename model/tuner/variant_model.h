#pragma once
// The kernel variant of a tile configuration (DESIGN.md, idea 3). A configuration as the tuner names
// it (tile, stages, split-K, cluster) leaves cuBLASLt's custom option (CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)
// open; on Hopper's nvjet kernels the option picks the raster order, the cooperative schedule and the
// operand order (seen in the kernels' names: _v_ / _h_, coopA / coopB, ...TNN / ...TNT). Forced on a
// heuristic result, a configuration takes that result's option, chosen by cuBLASLt for another tile.
// Measured on the H100 (896 held-out shapes, every accepted option of the table path's first choice
// timed 3 times): that first choice is within 3% of the best on 72.8% of the shapes with the option it
// was forced with and on 81.8% with its fastest.
//
// The variant model learns, from such measurements (`perfloom-collect --sweep plan --variants`), how
// much slower each option of a configuration is than the configuration's fastest option at the shape,
// and names the option predicted fastest among those cuBLASLt accepted for the configuration.
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/tuner/tuner_fit.h"
#include "model/tuner/tuner_table.h"

namespace perfloom::tuner {

// One measured (shape, configuration, custom option) point: the median of its repetitions.
struct VariantSample {
  GemmShape shape;
  TileConfig config;
  int custom = 0;  // CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION
  double latency_us = 0;
  std::string kernel;  // the kernel that ran (its name says what the option chose), may be empty
};

// The model's inputs: wave_model.h learned_features, log2 of the output tiles along M and N, and the
// custom option's three low bits (what an option chooses is cuBLASLt's; the trees learn it).
inline constexpr std::size_t kVariantFeatureCount = kLearnedCount + 5;
const std::array<std::string, kVariantFeatureCount>& variant_feature_names();
std::array<float, kVariantFeatureCount> variant_features(const GemmShape& s, const TileConfig& t, const WaveFeatures& f,
                                                         int custom);

// "raster v, TNN" from an nvjet kernel name ("cooperative" where it runs coopA or coopB); empty for
// another kernel.
std::string nvjet_variant_label(const std::string& kernel_name);

// The custom option an nvjet kernel's name shows (bit 0: operand order TNT, bit 1: raster h, bit 2:
// a cooperative schedule), as every option timed on the H100 and H200 ran (data/<gpu>/
// variants.csv: 27,918 nvjet rows, every one with a TNT or TNN name); -1 for another kernel or a name
// without a raster and an operand order.
int nvjet_custom_option(const std::string& kernel_name);

struct VariantFitOptions {
  int rounds = 300;
  int depth = 5;
  double eta = 0.08;
};

// Trains on every (shape, configuration) that was timed with two options or more; the label is
// log(latency / the fastest option's at that shape and configuration). `slots` as the table's.
// Fewer than 20 such points: an empty model.
VariantModel fit_variant_model(const std::vector<VariantSample>& samples, const GpuSpec& gpu,
                               const SlotsByCluster& slots, const VariantFitOptions& opt = {});

// Relabels every sample whose option is known (TunerSample::custom_option) with the latency its
// configuration is predicted to take with its fastest option: the measured latency divided by the
// model's predicted ratio of the sample's option to the fastest of the options accepted for the
// configuration (as choose_variants() knows them; the sample's own counted in). A sample whose
// configuration has no other known option is left as measured. The tuner's fit then learns and ranks
// configurations by what they take with the option `perfloom tune` names, not with the option a
// sweep happened to force on them. Returns how many samples changed. `slots` as the table's.
std::size_t to_fastest_option(std::vector<TunerSample>& samples, const VariantModel& model, const GpuSpec& gpu,
                              const SlotsByCluster& slots);

// The accepted option predicted fastest (CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION; -1: none named) for
// each of `configs` at `shape` on `gpu` (one batched prediction; `slots` as the table's): among the
// options cuBLASLt accepted for the configuration where it was measured, else among those every
// measured configuration of its tile (split-K or not) was accepted with; none where neither.
std::vector<int> choose_variants(const VariantModel& model, const GpuSpec& gpu, const SlotsByCluster& slots,
                                 const GemmShape& shape, const std::vector<TileConfig>& configs);
// The same for one configuration.
int choose_variant(const VariantModel& model, const GpuSpec& gpu, const SlotsByCluster& slots, const GemmShape& shape,
                   const TileConfig& config);

}  // namespace perfloom::tuner
