#pragma once
// Which configurations cuBLASLt refuses (DESIGN.md, idea 3). A configuration as the tuner names it
// (tile, stages, split-K, cluster) is set on one of cuBLASLt's heuristic results for the GEMM
// (cublasLtMatmulAlgoConfigSetAttribute, then cublasLtMatmulAlgoCheck); at some shapes cuBLASLt
// refuses it (CUBLAS_STATUS_NOT_SUPPORTED on every heuristic result that offers the tile) while it
// runs at others, and which shapes is cuBLASLt's own business: on the H200's timed query lists cuBLASLt
// refuses 7.3% of the 532,535 (shape, configuration) points the tuner listed, and over those and the
// tuner's checks 403 configurations are refused at some shapes and run at others (fp8 128x176 cluster 1x2
// at 39% of its shapes, mostly small M). A refused first choice is of no use to the user, and on the H200
// it is the largest single loss of the first choice above M = 1,000.
//
// The acceptance model learns, from the collector's plan runs (every plan point of a shape it
// reached either ran or was refused: tools/tuner_sweep.h read_acceptance), the probability that
// cuBLASLt refuses a configuration at a shape. A query moves the configurations it predicts refused
// behind the others (tuner.h rank_with_table).
#include <array>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/tuner/tuner_table.h"

namespace perfloom::tuner {

// One (shape, configuration) point of a plan run: cuBLASLt ran it or refused it.
struct AcceptanceSample {
  GemmShape shape;
  TileConfig config;
  bool accepted = true;
};

// The model's inputs: wave_model.h learned_features and log2 of the output tiles along M and N.
inline constexpr std::size_t kAcceptanceFeatureCount = kLearnedCount + 2;
const std::array<std::string, kAcceptanceFeatureCount>& acceptance_feature_names();
std::array<float, kAcceptanceFeatureCount> acceptance_features(const GemmShape& s, const TileConfig& t,
                                                               const WaveFeatures& f);

// 300 rounds of depth 6: 600 of depth 8 score the same on held-out H200 checks in a table 2.2 MB larger.
struct AcceptanceFitOptions {
  int rounds = 300;
  int depth = 6;
  double eta = 0.1;
};

// Trains binary:logistic trees on the samples (label 1: refused); `slots` as the table's. Fewer than
// 20 refused or 20 accepted points: an empty model (every configuration kept where it ranks).
AcceptanceModel fit_acceptance_model(const std::vector<AcceptanceSample>& samples, const GpuSpec& gpu,
                                     const SlotsByCluster& slots, const AcceptanceFitOptions& opt = {});

// The probability that cuBLASLt refuses each of `configs` at `shape` (one batched prediction);
// `features` their wave features (wave_model.h wave_features with the table's slots). NaN for every
// one where the model is empty.
std::vector<double> refusal_probabilities(const AcceptanceModel& model, const GemmShape& shape,
                                          const std::vector<TileConfig>& configs,
                                          const std::vector<WaveFeatures>& features);

}  // namespace perfloom::tuner
