#pragma once
// An LLM's architecture as the simulator needs it, read from a Hugging Face `config.json`
// (DESIGN.md, idea 2). The bundled configs of resources/llm/ are embedded in the binary, so a
// bundled id (`llama-3-8b`) works from anywhere; anything else is read as a path.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"
#include "model/gpu_spec.h"
#include "model/input_error.h"

namespace perfloom::sim {

// A config that cannot be used: which file, which field, and why. what() reads "FILE: FIELD: REASON":
// the field is a Hugging Face key, often dotted (quantization_config.bits), that reads plainly unquoted.
class LlmConfigError : public InputError {
 public:
  LlmConfigError(std::string file, std::string field, std::string reason)
      : InputError(std::move(file), std::move(field), std::move(reason), Place::as_given) {}
};

// How the linear-layer weights are stored.
//   none  : in `dtype` (bf16/fp16).
//   fp8   : fp8 e4m3 with block or per-channel scales; GEMMs run in fp8 where the GPU has an fp8
//           tensor path (W8A8 with dynamic activation scales, as vLLM runs DeepSeek-V3), else
//           weight-only (Marlin-style fp8 weights, 16-bit compute).
//   int4  : AWQ/GPTQ 4-bit integers with 16-bit group scales: weight-only, 16-bit compute.
//   mxfp4 : OCP MX fp4 (gpt-oss experts) with one 8-bit scale per 32 weights: weight-only here.
//   nvfp4 : NVIDIA fp4 (e2m1) with one fp8 scale per 16 weights (and a per-tensor fp32 one): W4A4
//           GEMMs on fp4 tensor cores (Blackwell, activations quantised in front), else weight-only
//           (vLLM's FP4 Marlin kernels, 16-bit compute).
// Weight-only GEMMs read `weight_bytes` per weight and compute in `dtype`; model/sim/step_cost.cpp
// explains how their time is predicted from 16-bit GEMMs.
enum class WeightQuant { none, fp8, int4, int8, mxfp4, nvfp4 };
std::string_view weight_quant_name(WeightQuant q);

struct LlmConfig {
  std::string id;            // bundled id, or the path the config was read from
  std::string source;        // "resources/llm/llama-3-8b.json" or the path
  std::string architecture;  // "LlamaForCausalLM", ...
  std::string model_type;    // "llama", ... (informative)

  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0;
  int64_t head_dim = 0;      // may differ from hidden / heads (Qwen3-32B, gpt-oss)
  int64_t intermediate = 0;  // dense MLP width (Mixtral, gpt-oss: each expert's width)
  int64_t vocab = 0;
  int64_t max_position_embeddings = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2, gpt-oss: bias on the QKV projection (fused in the GEMM epilogue)
  bool o_bias = false;    // gpt-oss
  bool qk_norm = false;   // Qwen3: RMSNorm of each q and k head before rotary
  // Which q/k norm: per_head (Qwen3, GLM-4.5: a weight per head dimension), per_layer (MiniMax-M2:
  // one RMSNorm over all the heads of q and of k, a weight per element, its variance all-reduced over
  // TP), weightless (Llama-4: an L2 norm without weights, on the rotary layers only).
  enum class QkNorm { per_head, per_layer, weightless };
  QkNorm qk_norm_kind = QkNorm::per_head;

  // Mixture of experts; num_experts == 0 for a dense model.
  int64_t num_experts = 0, experts_per_token = 0, moe_intermediate = 0;
  int64_t shared_experts = 0;    // DeepSeek: always-on experts, each moe_intermediate wide
  bool expert_bias = false;      // gpt-oss: biases in the expert GEMMs
  std::vector<bool> moe_layers;  // per layer: the MLP is the MoE block
  bool router_bias = false;      // GLM-4.5, MiniMax-M2: a per-expert score-correction bias

  // Multi-head latent attention (DeepSeek-V2/V3).
  bool mla = false;
  int64_t q_lora_rank = 0;  // 0: q is projected straight from the hidden state (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int64_t mtp_layers = 0;  // DeepSeek-V3 num_nextn_predict_layers: not run, not counted

  // Local attention: a sliding window (Mistral, gpt-oss) or chunks (Llama-4), and the layers that use
  // it (sliding_layers; the other layers attend to the whole context). A model has one kind or none.
  int64_t sliding_window = 0;
  int64_t attention_chunk = 0;  // Llama-4 attention_chunk_size: a query sees its chunk's earlier keys
  std::vector<bool> sliding_layers;
  bool nope_full_layers = false;  // Llama-4: the full-attention layers have no rotary (NoPE)
  bool attention_sinks = false;   // gpt-oss: one learned sink logit per head

  Dtype dtype = Dtype::bf16;  // activations, KV cache and unquantized weights (torch_dtype)
  WeightQuant quant = WeightQuant::none;
  std::string quant_method;         // as the config names it
  double quant_weight_bytes = 2.0;  // bytes per quantized weight, scales included
  bool quant_attention = true;      // attention projections quantized too (gpt-oss: no)
  bool quant_dense_mlp = true;      // dense MLPs and shared experts quantized too

  bool is_moe_layer(int64_t i) const { return num_experts > 0 && moe_layers[static_cast<std::size_t>(i)]; }
  bool has_local_attention() const { return sliding_window > 0 || attention_chunk > 0; }
  bool is_sliding_layer(int64_t i) const {
    return has_local_attention() && sliding_layers[static_cast<std::size_t>(i)];
  }
  bool has_moe() const { return num_experts > 0; }
  int64_t moe_layer_count() const;
  int64_t full_attention_layer_count() const;
  // Per-head dimension of q and k (MLA: nope + rope) and of v.
  int64_t qk_head_dim() const { return mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim; }
  int64_t v_dim() const { return mla ? v_head_dim : head_dim; }
  double act_bytes() const { return dtype_bytes(dtype); }
};

// Parameters by part, for one copy of the model (no MTP layers).
struct ParamCount {
  double embedding = 0, lm_head = 0;  // lm_head 0 when tied
  double attention = 0;               // every layer's attention, norms of q/k/latents included
  double dense_mlp = 0;               // dense layers' MLPs
  double routed_experts = 0, shared_experts = 0, routers = 0;
  double layer_norms = 0;  // the two RMSNorms per layer and the final one
  double total() const {
    return embedding + lm_head + attention + dense_mlp + routed_experts + shared_experts + routers + layer_norms;
  }
  // Parameters one token touches (routed experts: top-k of them).
  double active = 0;
};
ParamCount count_parameters(const LlmConfig& cfg);

// Parameters of one layer, by part (used to size each pipeline stage's weights).
struct LayerParams {
  double attention = 0;             // projections split by tensor parallelism
  double attention_replicated = 0;  // MLA's q_a/kv_a projections and latent norms: every rank holds them
  double mlp = 0;                   // dense MLP, or the routed experts of a MoE layer
  double shared = 0;                // shared experts
  double router = 0;                // replicated
  double norms = 0;                 // replicated
};
LayerParams layer_parameters(const LlmConfig& cfg, int64_t layer);

// Parses one config.json; `file_label` names the file in errors. Throws LlmConfigError.
LlmConfig parse_llm_config(std::string_view json_text, const std::string& file_label);

// Serving a model quantised as vLLM's --quantization does, whatever its config says: "bf16" (16-bit
// weights in the model's dtype), "fp8" (per-tensor scales; W8A8 where the GPU has fp8 tensor cores),
// "fp8-block" (fp32 scales per 128x128 block, DeepSeek-V3's), "int4" (AWQ/GPTQ-style, a 16-bit scale
// per 128 weights), "nvfp4", "mxfp4" (see WeightQuant). fp8, fp8-block, int4 and nvfp4 quantise every
// linear layer but the embedding, the LM head and the router; mxfp4, as vLLM runs it, the routed
// experts only (a dense model's MLPs). Throws std::invalid_argument naming the methods.
void apply_quantization(LlmConfig& cfg, std::string_view method);
// --kv-cache-dtype as vLLM names it: "auto" (the model's dtype), "bf16"/"bfloat16",
// "fp16"/"float16"/"half", "fp8"/"fp8_e4m3", "fp8_e5m2". Throws std::invalid_argument.
Dtype parse_kv_cache_dtype(const LlmConfig& cfg, std::string_view name);
// Refuses, with the GPU and the reason, a weight format or KV-cache dtype `gpu` cannot serve: an fp8
// KV cache needs fp8 tensor cores (the fp8 attention kernels, FA3's and FlashInfer's, run on them);
// a 16-bit dtype needs its tensor path (bf16 from Ampere on); the weight-only fp8, int4 and fp4
// kernels (Marlin) need compute capability 8.0 or later.
void check_serving_dtypes(const LlmConfig& cfg, const GpuSpec& gpu, Dtype kv_dtype);
// Whether nvfp4 W4A4 GEMMs run on `gpu`'s fp4 tensor cores: NVIDIA's fp4 GPUs (Blackwell). AMD CDNA 4's
// fp4 matrix cores take MX scales (an E8M0 per 32 values), not nvfp4's (an E4M3 per 16): there, as on
// GPUs without fp4, nvfp4 weights are read by a weight-only kernel.
bool nvfp4_on_tensor_cores(const GpuSpec& gpu);

// The bundled model ids, sorted.
std::vector<std::string> bundled_llm_ids();
// A bundled id (case-insensitive), a path to a config.json, or a model folder holding one. Throws
// LlmConfigError when the
// file is bad, std::invalid_argument when it names neither.
LlmConfig load_llm_config(const std::string& id_or_path);

}  // namespace perfloom::sim
