#pragma once
// The fused-MoE configuration tuner (`perfloom tune --moe`): ranks the configurations of the serving
// engines' Triton fused-MoE kernel (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages: vLLM's
// and SGLang's tuning space) per token count on any GPU of the database, with the `moe` family's
// analytical model (model/families/moe/moe_model.h: expert occupancy, padding to BLOCK_SIZE_M, one
// grid of every expert's blocks per GEMM) and what a configuration changes on top of it: the waves of
// its CTAs and their busiest SM, the bytes its pipeline keeps in flight, the K-loop's load latency
// over its stages, and the MMA path its BLOCK_SIZE_M allows. One configuration serves both GEMMs of
// a layer (gate-up H -> 2N, down N -> H), as the engines run it, so the ranking is by their sum.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "model/families/moe/moe_model.h"
#include "model/gpu_spec.h"

namespace perfloom::tuner {

// E experts, N the intermediate size per expert as vLLM names it in its configuration files (w2's
// last dimension: the intermediate after the activation, per tensor-parallel rank), H the hidden
// size, topk the experts per token.
struct MoeShape {
  int64_t E = 0, N = 0, H = 0, topk = 0;
};

// bf16 weights and activations; fp8 (e4m3) weights with per-expert scales (vLLM's fp8_w8a8); fp8 with
// 128x128 block scales (fp8_w8a8 with block_shape [128, 128]).
enum class MoeDtype { bf16, fp8, fp8_block };
const char* moe_dtype_name(MoeDtype d);  // "bf16", "fp8", "fp8-block"

struct MoeConfig {
  int block_m = 0, block_n = 0, block_k = 0, group_m = 1, num_warps = 4, num_stages = 3;
  bool operator==(const MoeConfig&) const = default;
};
std::string moe_config_to_string(const MoeConfig& c);  // "64x128x128/g16/w4/s3"

// The fractions of the datasheet rates the estimate divides by (moe_model.h's fitted ones unless
// given, as for a held-out check).
struct MoeEfficiencies {
  double tensor_16bit = kMoeTensorEfficiency16Bit;
  double tensor_8bit = kMoeTensorEfficiency8Bit;
  double dram = kMoeDramEfficiency;
};

// One GEMM of the layer at a configuration.
struct MoeGemmEstimate {
  double pred_us = 0;
  double padded_rows = 0;  // expected sorted, padded assignment list
  double ctas = 0, cta_slots = 0, waves = 0, last_wave_fill = 0;
  int ctas_per_sm = 0;
  int k_iters = 0;
  std::string bound;  // the largest term: "tensor", "dram", "dram latency", "l2", "smem", "load latency"
};

struct MoeCandidate {
  MoeConfig config;
  double pred_us = 0;  // gate-up + down
  MoeGemmEstimate gate_up, down;
  std::string reason;
};

struct MoeTokenResult {
  int64_t tokens = 0;
  std::vector<MoeCandidate> ranked;  // best first
  MoeCandidate engine_default;       // vLLM's default heuristic configuration, estimated alike
};

// The load latency a K step waits for over its num_stages - 1 prefetched stages (cycles): the loaded
// latency of a load that hits L2. With the model's other terms, 500 to 1200 cycles choose within 3%
// of the sweep's best equally often (tools/moe/tune_check.py); 800 is the middle.
inline constexpr double kMoeLoadLatencyCycles = 800;
// The DRAM latency (ns) where no calibration of the GPU measured it (the H100's and H200's are 383
// and 381 ns).
inline constexpr double kMoeDefaultDramLatencyNs = 400;
// A K step narrower than 128 bytes a row (fp8 at BLOCK_SIZE_K 64, 16-bit at 32) keeps the tensor
// pipe less busy: its rate times (bytes / 128) to this power. Set on the H200 sweep's fp8 layers,
// where 0.3 to 1 choose alike (within 3% of the best at 54-55% of them, against 38% without).
inline constexpr double kMoeNarrowKStepExponent = 0.3;
// The terms of a GEMM's time (tensor, DRAM, L2, shared memory, the K loop's latency) overlap but
// not completely: their 4-norm.
inline constexpr double kMoeOverlapNorm = 4;
// A weight whose rows are not a multiple of 16 elements: Triton cannot prove its loads 16-byte
// aligned and loads it element by element. In the H200 sweep (gpt-oss-120b/tp8, N = 360, the one
// such shape) the configurations holding more than this many weight elements per thread and stage
// ran 4 to 40 times slower than the others, and BLOCK_SIZE_K 128 ran 1.5 to 4 times slower than 64;
// both are left out of the space for such shapes.
inline constexpr int kMoeUnalignedWeightElementsPerThread = 32;

// The engines' tuning space (vLLM's benchmark_moe.py: BLOCK_SIZE_M 16-256, BLOCK_SIZE_N 32-256,
// BLOCK_SIZE_K 64-256, GROUP_SIZE_M 1/16/32/64, num_warps 4/8, num_stages 2-5) less what cannot run
// or is known to run badly here: pipelined tiles over the GPU's shared memory per block; for block
// fp8, BLOCK_SIZE_N other than 128 or 256 and BLOCK_SIZE_K other than 128 (multiples of the 128-wide
// scale block, as vLLM requires, and a K step within one scale block, as the kernel's per-step scale
// needs); and for unaligned weights, BLOCK_SIZE_K over 64 and kMoeUnalignedWeightElementsPerThread.
std::vector<MoeConfig> moe_config_space(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu);

// vLLM's default configuration without a tuned file (get_default_config): (16, 32, 64, 1) while
// tokens <= E, else (64, 64, 32, 8); (64, 128, 128, 32) for block fp8; num_warps 4, num_stages 3.
MoeConfig moe_engine_default(MoeDtype dtype, int64_t tokens, int64_t E);

// One configuration's estimate at `tokens`.
MoeCandidate estimate_moe_config(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu, int64_t tokens,
                                 const MoeConfig& config, const MoeEfficiencies& eff = {});

// Every configuration of moe_config_space ranked at each token count, fastest first. GROUP_SIZE_M
// changes nothing the model sees: its variants tie, and the tie goes to GROUP_SIZE_M 16, then 1,
// 32, 64; so do num_warps 4 and 8 where the threads change no term (a DRAM-bound GEMM), the tie
// going to 4. Throws std::invalid_argument for a shape with a zero, topk above E, a token count below 1,
// or a GPU without the dtype's tensor-core path.
std::vector<MoeTokenResult> tune_moe(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu,
                                     const std::vector<int64_t>& tokens, const MoeEfficiencies& eff = {});

// The token counts vLLM's tuning script (benchmarks/kernels/benchmark_moe.py) writes: 1 to 4096.
const std::vector<int64_t>& vllm_moe_token_counts();

// torch.cuda.get_device_name() with spaces as underscores, as vLLM names its files: the GPU's
// driver-reported name (its first alias, else its name), any name of the H200 family as NVIDIA_H200.
std::string vllm_device_name(const GpuSpec& gpu);
// E=...,N=...,device_name=...[,dtype=fp8_w8a8][,block_shape=[128,128]].json
std::string vllm_moe_config_file_name(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu);

// A configuration as vLLM's files name its keys, in their order: BLOCK_SIZE_M, BLOCK_SIZE_N,
// BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages.
std::vector<std::pair<std::string, int>> moe_config_keys(const MoeConfig& c);
// vLLM's (and SGLang's) configuration file of a tuning: an object keyed by each result's token count,
// its value that count's first ranked configuration as moe_config_keys, indented by 4, with a
// newline at the end. Throws std::invalid_argument for a result with nothing ranked.
std::string vllm_moe_config_json(const std::vector<MoeTokenResult>& results);
// Writes vllm_moe_config_json(results) to `file` (`perfloom tune --moe --out DIR` to
// DIR/vllm_moe_config_file_name, the Tuner view's "Export vLLM config…" where the user saves it);
// std::runtime_error naming the file when it cannot be written.
void write_vllm_moe_config(const std::filesystem::path& file, const std::vector<MoeTokenResult>& results);

}  // namespace perfloom::tuner
