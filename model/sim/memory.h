#pragma once
// GPU memory of a deployment and the paged KV cache it leaves room for, the way vLLM sizes it:
//   KV bytes = memory x gpu_memory_utilization - weights per GPU - activation peak - reserve,
//   blocks   = KV bytes / (block_size x KV bytes per token per GPU).
// Constants and estimates (first guesses, calibratable):
// - reserve: 1 GiB per GPU for the CUDA context, cuBLAS/NCCL workspaces and CUDA-graph pools
//   that vLLM's profiling run sees as non-torch memory.
// - activation peak: what vLLM's profiling forward at max_num_batched_tokens allocates at once:
//   the residual and hidden state, QKV and attention output, the MLP's gate-up output and its
//   activation (for MoE layers: top-k copies of the expert intermediate), and the sampler's fp32
//   logits for max_num_seqs sequences (twice: logits and probabilities).
// - KV bytes per token per GPU: 2 x KV heads per rank x head_dim x element bytes per full-attention
//   layer on the stage; MLA caches one latent (kv_lora_rank + qk_rope_head_dim) per layer on every
//   rank. Sliding-window layers of a hybrid model (gpt-oss) keep only their window per sequence and
//   are left out of the per-token cost; when every layer slides (Mistral) they count as full.
#include <cstdint>
#include <string>

#include "model/gpu_spec.h"
#include "model/sim/llm_config.h"
#include "model/sim/step.h"

namespace perfloom::sim {

struct MemoryOptions {
  double gpu_memory_utilization = 0.9;
  int64_t block_size = 16;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  double reserve_gib = 1.0;
  Dtype kv_dtype = Dtype::bf16;
  bool kv_dtype_set = false;        // false: the model's dtype
  int64_t num_blocks_override = 0;  // > 0: use this many blocks (tests, calibration), skip the estimate
};

struct MemoryPlan {
  double memory_gib = 0;   // the GPU's
  double usable_gib = 0;   // memory x utilization
  double weights_gib = 0;  // per GPU, on the fullest pipeline stage
  double activation_gib = 0;
  double reserve_gib = 0;
  double kv_gib = 0;              // left for the KV cache
  double kv_bytes_per_token = 0;  // per GPU, on the stage that needs the most
  int64_t block_size = 16;
  int64_t num_blocks = 0;
  int64_t kv_tokens() const { return num_blocks * block_size; }
};

// Weight bytes held by one GPU of pipeline stage `stage`.
double weight_bytes_per_gpu(const LlmConfig& cfg, const Parallelism& par, int stage);
// KV-cache bytes per token held by one GPU of `stage`.
double kv_bytes_per_token_per_gpu(const LlmConfig& cfg, const Parallelism& par, int stage, Dtype kv_dtype);

// Throws std::runtime_error when the model does not fit at this parallelism, naming the sizes.
MemoryPlan plan_memory(const LlmConfig& cfg, const Parallelism& par, const GpuSpec& gpu, const MemoryOptions& opt);

}  // namespace perfloom::sim
