#pragma once
// One forward step of an LLM server as a list of kernels, built the way vLLM runs it (DESIGN.md,
// idea 2): per layer fused add+RMSNorm, QKV GEMM, rotary, KV-cache write, attention (ragged
// prefill and paged decode, both in one step under chunked prefill), O projection, all-reduce,
// fused add+RMSNorm, gate-up GEMM, SiLU-and-mul, down GEMM, all-reduce; MoE layers use the fused
// `moe` kernel; then the final norm, the LM head for the sampled tokens only, and sampling.
// Identical layers are one entry with a count, so a step costs a few dozen predictions, not
// thousands.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/kernel.h"
#include "model/sim/llm_config.h"

namespace perfloom::sim {

struct Parallelism {
  int tp = 1;  // tensor parallel: heads, MLP columns and vocabulary split over tp GPUs
  int pp = 1;  // pipeline parallel: layers split over pp stages
  // Expert parallel (MoE layers only): 1; tp (the experts split over the TP group); or a multiple of
  // tp, wide EP (DeepSeek-style): the experts split over every GPU of ep / tp data-parallel attention
  // ranks, each rank running attention for its own requests over its TP group.
  int ep = 1;
};

// Throws std::invalid_argument, saying which dimension does not divide and why, when the model
// cannot be split this way. KV heads: when tp > num_key_value_heads and tp is a multiple of it,
// each KV head is replicated on tp / Hkv ranks, as vLLM does; otherwise tp must divide them.
void validate_parallelism(const LlmConfig& cfg, const Parallelism& par);

// The layers [first, last) of each pipeline stage: vLLM's split, equal shares with the remainder
// going to the last stages.
std::vector<std::pair<int64_t, int64_t>> pipeline_stages(int64_t layers, int pp);

// KV heads held by one tensor-parallel rank (replicated heads count once per rank).
int64_t kv_heads_per_rank(const LlmConfig& cfg, int tp);

// One sequence's share of a step.
struct SeqWork {
  int64_t new_tokens = 0;  // query tokens computed now (1 for a decode)
  int64_t context = 0;     // tokens already in the KV cache before this step
};

// A kernel of the step, `count` times (identical layers), on pipeline stage `stage`.
struct StepKernel {
  KernelDesc kernel;
  int64_t count = 1;
  const char* label = "";  // "qkv_proj", "attn_decode", ...
  int stage = 0;
  // Weight-only quantized GEMM/MoE: the weights take weight_ratio x the bytes of kernel.dtype.
  double weight_ratio = 1.0;
};

struct StepPlan {
  std::vector<StepKernel> kernels;
  int stages = 1;
  int64_t seqs = 0, tokens = 0;  // sequences and query tokens in the step
  int64_t prefill_seqs = 0, prefill_tokens = 0;
  int64_t decode_seqs = 0;
};

// The attention kernels a step runs: `serving`, what the serving engine runs on the GPU
// (model/sim/engine.h resolve_attention; build_step reads an unresolved one as `flash`);
// `flash`, FlashAttention as the engines ship it for the GPU (FA3 on Hopper, FA2 elsewhere; what
// an unnamed attention kernel stands for); Triton's or TensorRT-LLM's attention kernels (SGLang's
// and FlashInfer's choices on Blackwell); FlashAttention-2, or cuDNN's fused attention (PyTorch
// SDPA's flash and cudnn backends; what a hand-written PyTorch step runs).
enum class AttentionImpl { serving, flash, flash_attn2, cudnn, triton, trtllm };
// "serving", "flash", "fa2", "cudnn", "triton", "trtllm"
std::optional<AttentionImpl> parse_attention_impl(std::string_view s);
std::string_view attention_impl_name(AttentionImpl impl);
inline constexpr std::string_view kAttentionImplWords = "serving, flash, fa2, cudnn, triton or trtllm";
// A kernel name that the classifier maps to that implementation ("" for serving and flash).
std::string attention_kernel_name(AttentionImpl impl);

struct StepOptions {
  // Expert load imbalance: the busiest GPU's routed tokens against the mean (1: balanced routing).
  // Its expert GEMMs and its share of the all-to-all set the MoE layer's time.
  double expert_imbalance = 1.0;
  // Decode context lengths are averaged over the batch and rounded up to a multiple of this
  // (the simulator uses the KV block size so that predictions are reused; 1: exact).
  int64_t context_quantum = 1;
  bool fp8_tensor_cores = true;   // the GPU runs fp8 GEMMs (else fp8 weights are weight-only)
  bool fp4_tensor_cores = false;  // the GPU runs nvfp4 GEMMs (nvfp4_on_tensor_cores; else weight-only)
  Dtype kv_dtype = Dtype::bf16;   // the KV cache's element type (attention reads it)
  bool kv_dtype_set = false;      // false: the model's dtype
  // Which attention kernels the engine runs (the learned model tells implementations apart,
  // classify/kernel_classifier.h implementation_class): the serving engines' own by default.
  AttentionImpl attention_impl = AttentionImpl::serving;
  // Models with per-head q/k RMSNorm (Qwen3): true, the norms run inside the rotary kernel, as
  // vLLM v1 compiles them (Inductor fuses them; its qk-norm+RoPE fusion pass does the same), so
  // the step has one kernel with rotary's traffic; false, two rmsnorm kernels before the rotary
  // one, as engines without that fusion (SGLang) run them.
  bool fuse_qk_norm_rope = true;
};

// A sequence counts as a decode when it computes one token on top of a non-empty cache.
inline bool is_decode(const SeqWork& s) { return s.new_tokens == 1 && s.context > 0; }

StepPlan build_step(const LlmConfig& cfg, const Parallelism& par, const std::vector<SeqWork>& batch,
                    const StepOptions& opt = {});

// The (query, key) score count of causal attention for `c` new tokens after `p` cached ones, within
// a sliding window `w` (0: none); and the ragged causal sequence lengths with the same scores and
// about the same query rows, which the attention model (queries over as many keys) can predict.
double attention_scores(int64_t c, int64_t p, int64_t w);
void append_equivalent_seqlens(std::vector<int64_t>& seqlens, int64_t c, int64_t p, int64_t w);
// The same under chunked local attention (Llama-4): the queries at positions [p, p + c) each see the
// keys of their `chunk`-token chunk up to themselves; the causal sequences are the chunks' parts.
double chunked_attention_scores(int64_t c, int64_t p, int64_t chunk);
void append_chunked_seqlens(std::vector<int64_t>& seqlens, int64_t c, int64_t p, int64_t chunk);

}  // namespace perfloom::sim
