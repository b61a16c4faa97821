#pragma once
// The serving engine a simulation or a kernel list stands for, and what it runs on a given GPU:
// which attention kernels (vLLM's and SGLang's backend choice by architecture) and whether Qwen3's
// q/k norms are fused into the rotary kernel.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/gpu_spec.h"
#include "model/sim/step.h"

namespace perfloom::sim {

enum class ServingEngine { vllm, sglang };
std::optional<ServingEngine> parse_serving_engine(std::string_view s);  // "vllm", "sglang"
std::string_view serving_engine_name(ServingEngine e);

struct AttentionChoice {
  AttentionImpl impl = AttentionImpl::flash;
  std::string reason;  // one line: which rule chose it
};

// The attention implementation `engine` runs on `gpu` for heads of `head_dim` (MLA: `mla`):
//   vLLM (0.14, vllm/platforms/cuda.py's backend priorities): FlashInfer first on sm100/sm103, whose
//     prefill and decode run TensorRT-LLM's trtllm-gen FMHA kernels there; FlashAttention elsewhere
//     from sm80 (FA3 on sm90, FA2 on sm80/sm86/sm89/sm120); FlashInfer below sm80.
//   SGLang (0.5.10, as aiconfigurator's tables record each row's kernel_source): TensorRT-LLM MHA on
//     sm100 for head dims 64, 128 and 256, Triton for the others; Triton on sm120 and below sm80;
//     FlashAttention on sm80-sm90.
//   MLA models and GPUs of other vendors: the engine's own kernels, not told apart (flash).
AttentionChoice engine_attention(ServingEngine engine, const GpuSpec& gpu, int64_t head_dim, bool mla);

// `requested` unless it is AttentionImpl::serving, which becomes engine_attention's choice.
AttentionChoice resolve_attention(AttentionImpl requested, ServingEngine engine, const GpuSpec& gpu,
                                  int64_t head_dim, bool mla);

// vLLM v1 compiles Qwen3's per-head q/k RMSNorm into the rotary kernel; SGLang runs them apart.
inline bool engine_fuses_qk_norm_rope(ServingEngine e) { return e == ServingEngine::vllm; }

}  // namespace perfloom::sim
