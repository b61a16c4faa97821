#include "model/sim/llm_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/file_reader.h"
#include "model/json_fields.h"

namespace perfloom::embedded {
// Generated from resources/llm/*.json by cmake/EmbedFiles.cmake (model/CMakeLists.txt).
std::vector<std::pair<std::string_view, std::string_view>> llm_files();
}  // namespace perfloom::embedded

namespace perfloom::sim {

using nlohmann::json;

std::string_view weight_quant_name(WeightQuant q) {
  switch (q) {
    case WeightQuant::none:
      return "none";
    case WeightQuant::fp8:
      return "fp8";
    case WeightQuant::int4:
      return "int4";
    case WeightQuant::int8:
      return "int8";
    case WeightQuant::mxfp4:
      return "mxfp4";
    case WeightQuant::nvfp4:
      return "nvfp4";
  }
  return "none";
}

int64_t LlmConfig::moe_layer_count() const {
  int64_t n = 0;
  for (int64_t i = 0; i < layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

int64_t LlmConfig::full_attention_layer_count() const {
  int64_t n = 0;
  for (int64_t i = 0; i < layers; ++i) n += is_sliding_layer(i) ? 0 : 1;
  return n;
}

namespace {

const std::vector<std::string>& known_architectures() {
  static const std::vector<std::string> a = {
      "LlamaForCausalLM",    "MistralForCausalLM", "Qwen2ForCausalLM",      "Qwen3ForCausalLM",
      "Qwen3MoeForCausalLM", "MixtralForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
      "GptOssForCausalLM",   "Glm4MoeForCausalLM", "MiniMaxM2ForCausalLM",  "Llama4ForConditionalGeneration",
      "Llama4ForCausalLM"};
  return a;
}

// Architectures whose layers the step builder has no kernels for, and why (refused by name, so that
// the message says what is missing rather than only "unknown").
std::string unmodelled_reason(const std::string& arch) {
  static const std::vector<std::pair<std::string, std::string>> reasons = {
      {"Mamba", "Mamba (state-space) layers are not modelled"},
      {"Jamba", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"NemotronH", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"FalconH1", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"Zamba", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"Bamba", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"GraniteMoeHybrid", "hybrid Mamba (state-space) and attention layers are not modelled"},
      {"MiniMaxText01", "lightning (linear) attention layers are not modelled"},
      {"MiniMaxM1", "lightning (linear) attention layers are not modelled"},
      {"Qwen3Next", "Gated DeltaNet (linear attention) layers are not modelled"},
      {"Qwen3_5", "Gated DeltaNet (linear attention) layers are not modelled"},
      {"KimiLinear", "Kimi Delta Attention (linear attention) layers are not modelled"},
      {"DeepseekV32", "DeepSeek sparse attention (its indexer and top-k key selection) is not modelled"},
  };
  for (const auto& [prefix, reason] : reasons)
    if (arch.rfind(prefix, 0) == 0) return reason;
  return "";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

constexpr FieldErrorFn kRaise = &throw_field_error<LlmConfigError>;
// A Hugging Face config writes null for "not set"; which fields are required depends on the architecture.
const JsonReadOptions kHfOptions{true, "missing (required for this architecture)"};
const NumberRange kPositive = NumberRange::positive();
// Per-layer tables are allocated from num_hidden_layers: far past any model (hundreds), far below
// what would exhaust memory.
const NumberRange kLayerCount = NumberRange::between(1, 100000);
// Widths, heads and the vocabulary as the kernel shapes carry them (model/kernel.h validate_shape).
const NumberRange kDimension = NumberRange::between(1, 2147483647);

Dtype parse_torch_dtype(const JsonFields& r) {
  // transformers >= 4.56 writes "dtype"; older configs "torch_dtype". Missing: bf16, as vLLM's
  // "auto" would pick on a GPU with bf16. float32 checkpoints are served in bf16 by vLLM as well.
  const char* key = r.has("torch_dtype") ? "torch_dtype" : "dtype";
  const std::string s = r.string_or(key, "bfloat16");
  if (s == "bfloat16" || s == "float32" || s == "auto") return Dtype::bf16;
  if (s == "float16" || s == "half") return Dtype::fp16;
  r.fail(key, "unsupported dtype " + quote_excerpt(s) + " (expected bfloat16, float16 or float32)");
}

void parse_quantization(const JsonFields& r, LlmConfig& c) {
  const auto q = r.optional_object("quantization_config");
  if (!q) return;
  if (!q->has("quant_method")) q->fail("quant_method", "missing");
  const std::string method = q->string("quant_method");
  c.quant_method = method;
  std::vector<std::string> not_converted_modules;
  if (const auto m = q->optional("modules_to_not_convert"))
    for (const JsonValue& name : m->array()) not_converted_modules.push_back(name.string());
  auto not_converted = [&](std::string_view what) {
    return std::any_of(not_converted_modules.begin(), not_converted_modules.end(),
                       [&](const std::string& m) { return m.find(what) != std::string::npos; });
  };
  auto weight_only = [&](int64_t bits, int64_t group) {
    if (bits == 4)
      c.quant = WeightQuant::int4;
    else if (bits == 8)
      c.quant = WeightQuant::int8;
    else
      q->fail("bits", "only 4- and 8-bit weights are modelled (got " + std::to_string(bits) + ")");
    // 16-bit scale per group of weights; per-channel scales (group -1) are negligible.
    c.quant_weight_bytes = static_cast<double>(bits) / 8.0 + (group > 0 ? 2.0 / static_cast<double>(group) : 0.0);
  };
  if (method == "fp8" || method == "fbgemm_fp8") {
    c.quant = WeightQuant::fp8;
    double scale_bytes = 0;
    if (const auto block = q->optional("weight_block_size")) {
      const std::vector<JsonValue> dims = block->array();
      if (dims.size() != 2)
        block->fail("must be the [rows, columns] of a scale's block, got " + json_excerpt(block->value()));
      scale_bytes = 4.0 / (dims[0].number(kPositive) * dims[1].number(kPositive));  // one fp32 scale per block
    }
    c.quant_weight_bytes = 1.0 + scale_bytes;
  } else if (method == "awq" || method == "awq_marlin" || method == "gptq" || method == "gptq_marlin") {
    weight_only(q->integer_or("bits", q->integer_or("w_bit", 4)),
                q->integer_or("group_size", q->integer_or("q_group_size", 128)));
  } else if (method == "mxfp4") {
    c.quant = WeightQuant::mxfp4;
    c.quant_weight_bytes = 0.5 + 1.0 / 32.0;  // e2m1 pairs per byte, one e8m0 scale per 32 weights
  } else if (method == "compressed-tensors") {
    if (!q->has("config_groups")) q->fail("config_groups", "missing (needed to read the weight format)");
    const JsonFields groups = q->object("config_groups");
    const std::vector<std::string> names = groups.keys();
    if (names.empty()) groups.fail("is empty (needed to read the weight format)");
    const JsonFields g = groups.object(names.front());
    if (!g.has("weights")) g.fail("weights", "missing");
    const JsonFields w = g.object("weights");
    const int64_t bits = w.integer("num_bits");
    const std::string type = w.string_or("type", "int");
    if (bits == 8 && type == "float") {
      c.quant = WeightQuant::fp8;
      c.quant_weight_bytes = 1.0;
    } else {
      weight_only(bits, w.integer_or("group_size", -1));
    }
  } else {
    q->fail("quant_method", "unsupported quantization method " + quote_excerpt(method) +
                                " (modelled: fp8, fbgemm_fp8, awq, gptq, mxfp4, compressed-tensors)");
  }
  if (not_converted("self_attn") || not_converted("attn")) c.quant_attention = false;
  if (c.quant == WeightQuant::mxfp4) {
    // gpt-oss quantizes only the experts; attention, router, embeddings and LM head stay bf16.
    c.quant_attention = false;
    c.quant_dense_mlp = false;
  }
}

// `layer_types`: per layer, whether it is a local-attention layer (sliding or chunked); empty when
// absent. Any other layer type (linear attention, Mamba, ...) is refused: its kernels are not modelled.
struct LayerTypes {
  std::vector<bool> local;
  bool sliding = false, chunked = false;  // which local kind appears
};
LayerTypes layer_types_or_empty(const JsonFields& r, int64_t layers) {
  LayerTypes out;
  const auto lt = r.optional("layer_types");
  if (!lt) return out;
  const std::vector<JsonValue> types = lt->array();
  if (static_cast<int64_t>(types.size()) != layers)
    lt->fail("has " + std::to_string(types.size()) + " entries but num_hidden_layers is " + std::to_string(layers));
  for (const JsonValue& t : types) {
    const std::string s = t.string();
    if (s == "sliding_attention") {
      out.local.push_back(true);
      out.sliding = true;
    } else if (s == "chunked_attention") {
      out.local.push_back(true);
      out.chunked = true;
    } else if (s == "full_attention") {
      out.local.push_back(false);
    } else {
      t.fail("layer type " + quote_excerpt(s) +
             " is not modelled (perfloom models full_attention, sliding_attention and chunked_attention layers; "
             "linear-attention and state-space layers have no kernels here)");
    }
  }
  if (out.sliding && out.chunked)
    lt->fail("mixes sliding_attention and chunked_attention layers, which is not modelled");
  return out;
}

// Llama-4: which layers are MoE and which use rotary (and chunked attention), as transformers'
// Llama4TextConfig derives them when the config leaves them out.
void parse_llama4(const JsonFields& t, LlmConfig& c) {
  c.num_experts = t.integer("num_local_experts", kPositive);
  c.experts_per_token = t.integer_or("num_experts_per_tok", 1, kPositive);
  c.moe_intermediate = c.intermediate;                             // intermediate_size: each expert's width
  c.intermediate = t.integer("intermediate_size_mlp", kPositive);  // the dense layers' MLP
  c.shared_experts = 1;                                            // one shared expert per MoE layer
  c.qkv_bias = c.o_bias = t.boolean_or("attention_bias", false);
  const auto index_list = [&](const JsonValue& list, std::vector<bool>& into) {
    for (const JsonValue& v : list.array()) {
      const int64_t i = v.integer();
      if (i < 0 || i >= c.layers)
        v.fail("is not a layer index in [0, " + std::to_string(c.layers) + ") (got " + std::to_string(i) + ")");
      into[static_cast<std::size_t>(i)] = true;
    }
  };
  if (const auto ml = t.optional("moe_layers")) {
    index_list(*ml, c.moe_layers);
  } else {
    const int64_t step = t.integer_or("interleave_moe_layer_step", 1, kPositive);
    for (int64_t i = step - 1; i < c.layers; i += step) c.moe_layers[static_cast<std::size_t>(i)] = true;
  }
  // no_rope_layers[i] is 1 where layer i uses rotary; empty or absent: every interval-th layer is NoPE.
  std::vector<bool> rope(static_cast<std::size_t>(c.layers), true);
  std::vector<JsonValue> given;
  if (const auto nr = t.optional("no_rope_layers")) given = nr->array();
  if (!given.empty()) {
    if (static_cast<int64_t>(given.size()) != c.layers)
      t.fail("no_rope_layers",
             "has " + std::to_string(given.size()) + " entries but num_hidden_layers is " + std::to_string(c.layers));
    for (std::size_t i = 0; i < given.size(); ++i) {
      const int64_t v = given[i].integer();
      if (v != 0 && v != 1) given[i].fail("must be 0 (NoPE) or 1 (rotary) (got " + std::to_string(v) + ")");
      rope[i] = v == 1;
    }
  } else {
    const int64_t interval = t.integer_or("no_rope_layer_interval", 4, kPositive);
    for (int64_t i = 0; i < c.layers; ++i) rope[static_cast<std::size_t>(i)] = (i + 1) % interval != 0;
  }
  // Llama-4 normalises q and k (an L2 norm, no weights) on the rotary layers only.
  c.qk_norm = t.boolean_or("use_qk_norm", true);
  c.qk_norm_kind = LlmConfig::QkNorm::weightless;
  // vLLM and transformers run chunked local attention on the rotary layers and full attention on the
  // NoPE layers; without attention_chunk_size every layer attends to the whole context.
  c.attention_chunk = t.integer_or("attention_chunk_size", 0, NumberRange::at_least(0));
  if (c.attention_chunk > 0) {
    c.sliding_layers = rope;
    c.nope_full_layers = true;
  }
}

}  // namespace

LlmConfig parse_llm_config(std::string_view json_text, const std::string& file_label) {
  const json j = parse_json_object(json_text, file_label, kRaise, "a Hugging Face config.json");
  const JsonFields r(j, file_label, kRaise, "", kHfOptions);
  LlmConfig c;
  c.id = file_label;
  c.source = file_label;

  if (!r.has("architectures")) r.fail("architectures", "missing (expected e.g. [\"LlamaForCausalLM\"])");
  const std::vector<JsonValue> archs = r.array("architectures");
  if (archs.empty()) r.fail("architectures", "must be a non-empty array of names");
  c.architecture = archs[0].string();
  const auto& known = known_architectures();
  if (std::find(known.begin(), known.end(), c.architecture) == known.end()) {
    const std::string why = unmodelled_reason(c.architecture);
    r.fail("architectures", "unknown architecture '" + text_excerpt(c.architecture) + "'" +
                                (why.empty() ? "" : " (" + why + ")") + "; supported: " + join(known, ", "));
  }
  c.model_type = r.string_or("model_type", "");
  const std::string& a = c.architecture;
  const bool deepseek = a == "DeepseekV2ForCausalLM" || a == "DeepseekV3ForCausalLM";
  const bool gpt_oss = a == "GptOssForCausalLM";
  const bool glm = a == "Glm4MoeForCausalLM";
  const bool minimax = a == "MiniMaxM2ForCausalLM";
  const bool llama4 = a == "Llama4ForConditionalGeneration" || a == "Llama4ForCausalLM";

  // Llama-4's multimodal config holds the language model's figures in text_config (its vision
  // encoder runs only for images and is not simulated); every other config is flat.
  std::optional<JsonFields> text;
  if (a == "Llama4ForConditionalGeneration") {
    if (!r.has("text_config")) r.fail("text_config", "missing (Llama-4 keeps the language model's figures there)");
    text = r.object("text_config");
  }
  const JsonFields& m = text ? *text : r;

  c.hidden = m.integer("hidden_size", kDimension);
  c.layers = m.integer("num_hidden_layers", kLayerCount);
  c.heads = m.integer("num_attention_heads", kDimension);
  c.kv_heads = m.integer_or("num_key_value_heads", c.heads, kDimension);  // transformers' default: MHA
  c.vocab = m.integer("vocab_size", kDimension);
  c.intermediate = m.integer("intermediate_size", kDimension);
  c.max_position_embeddings = m.integer_or("max_position_embeddings", 0);
  c.tied_embeddings = m.boolean_or("tie_word_embeddings", text ? r.boolean_or("tie_word_embeddings", false) : false);
  c.dtype = parse_torch_dtype(text && (m.has("torch_dtype") || m.has("dtype")) ? m : r);

  if (m.has("head_dim")) {
    c.head_dim = m.integer("head_dim", kPositive);
  } else if (!deepseek) {
    if (c.hidden % c.heads != 0)
      m.fail("head_dim", "missing, and hidden_size (" + std::to_string(c.hidden) +
                             ") is not a multiple of num_attention_heads (" + std::to_string(c.heads) + ")");
    c.head_dim = c.hidden / c.heads;
  }
  if (!deepseek && c.heads % c.kv_heads != 0)
    m.fail("num_key_value_heads", "num_attention_heads (" + std::to_string(c.heads) + ") is not a multiple of it (" +
                                      std::to_string(c.kv_heads) + ")");

  if (a == "Qwen2ForCausalLM") c.qkv_bias = true;
  if (a == "Qwen3ForCausalLM" || a == "Qwen3MoeForCausalLM") {
    c.qk_norm = true;
    c.qkv_bias = r.boolean_or("attention_bias", false);
  }
  if (a == "LlamaForCausalLM") c.qkv_bias = c.o_bias = r.boolean_or("attention_bias", false);

  // Mixture of experts.
  c.moe_layers.assign(static_cast<std::size_t>(c.layers), false);
  if (a == "MixtralForCausalLM") {
    c.num_experts = r.integer("num_local_experts", kPositive);
    c.experts_per_token = r.integer("num_experts_per_tok", kPositive);
    c.moe_intermediate = c.intermediate;
    c.moe_layers.assign(static_cast<std::size_t>(c.layers), true);
  } else if (a == "Qwen3MoeForCausalLM") {
    c.num_experts = r.integer("num_experts", kPositive);
    c.experts_per_token = r.integer("num_experts_per_tok", kPositive);
    c.moe_intermediate = r.integer("moe_intermediate_size", kPositive);
    const int64_t step = r.integer_or("decoder_sparse_step", 1, kPositive);
    std::vector<bool> mlp_only(static_cast<std::size_t>(c.layers), false);
    if (const auto only = r.optional("mlp_only_layers")) {
      for (const JsonValue& v : only->array()) {
        const int64_t i = v.integer();
        if (i < 0 || i >= c.layers)
          v.fail("is not a layer index in [0, " + std::to_string(c.layers) + ") (got " + std::to_string(i) + ")");
        mlp_only[static_cast<std::size_t>(i)] = true;
      }
    }
    for (int64_t i = 0; i < c.layers; ++i)
      c.moe_layers[static_cast<std::size_t>(i)] = !mlp_only[static_cast<std::size_t>(i)] && (i + 1) % step == 0;
  } else if (deepseek) {
    if (r.has("n_routed_experts")) {
      c.num_experts = r.integer("n_routed_experts", kPositive);
      c.experts_per_token = r.integer("num_experts_per_tok", kPositive);
      c.moe_intermediate = r.integer("moe_intermediate_size", kPositive);
      c.shared_experts = r.integer_or("n_shared_experts", 0, NumberRange::at_least(0));
      const int64_t first_dense = r.integer_or("first_k_dense_replace", 0);
      const int64_t freq = r.integer_or("moe_layer_freq", 1, kPositive);
      if (first_dense < 0 || first_dense > c.layers)
        r.fail("first_k_dense_replace", "must be in [0, num_hidden_layers] (got " + std::to_string(first_dense) + ")");
      for (int64_t i = 0; i < c.layers; ++i)
        c.moe_layers[static_cast<std::size_t>(i)] = i >= first_dense && i % freq == 0;
    }
    c.mla = true;
    c.q_lora_rank = r.integer_or("q_lora_rank", 0, NumberRange::at_least(0));
    c.kv_lora_rank = r.integer("kv_lora_rank", kPositive);
    c.qk_nope_head_dim = r.integer("qk_nope_head_dim", kPositive);
    c.qk_rope_head_dim = r.integer("qk_rope_head_dim", kPositive);
    c.v_head_dim = r.integer("v_head_dim", kPositive);
    c.head_dim = c.v_head_dim;
    c.kv_heads = c.heads;  // MLA: every head reads the shared latent; see the step builder
    c.mtp_layers = r.integer_or("num_nextn_predict_layers", 0);
  } else if (gpt_oss) {
    c.num_experts = r.integer("num_local_experts", kPositive);
    c.experts_per_token =
        r.integer(r.has("experts_per_token") ? "experts_per_token" : "num_experts_per_tok", kPositive);
    c.moe_intermediate = c.intermediate;
    c.moe_layers.assign(static_cast<std::size_t>(c.layers), true);
    c.qkv_bias = c.o_bias = r.boolean_or("attention_bias", true);
    c.attention_sinks = true;
    c.expert_bias = true;
  } else if (glm) {
    // GLM-4.5 (transformers' Glm4Moe): DeepSeek-V3's MoE (sigmoid router with a correction bias,
    // shared experts, the first layers dense) under grouped-query attention with partial rotary.
    c.num_experts = r.integer("n_routed_experts", kPositive);
    c.experts_per_token = r.integer("num_experts_per_tok", kPositive);
    c.moe_intermediate = r.integer("moe_intermediate_size", kPositive);
    c.shared_experts = r.integer_or("n_shared_experts", 1, NumberRange::at_least(0));
    const int64_t first_dense = r.integer_or("first_k_dense_replace", 1);
    if (first_dense < 0 || first_dense > c.layers)
      r.fail("first_k_dense_replace", "must be in [0, num_hidden_layers] (got " + std::to_string(first_dense) + ")");
    for (int64_t i = first_dense; i < c.layers; ++i) c.moe_layers[static_cast<std::size_t>(i)] = true;
    c.router_bias = true;
    c.qkv_bias = r.boolean_or("attention_bias", false);  // q, k and v only; o_proj has none
    c.qk_norm = r.boolean_or("use_qk_norm", false);
    c.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, NumberRange::at_least(0));
  } else if (minimax) {
    // MiniMax-M2: every layer MoE (intermediate_size is each expert's width), no shared expert.
    c.num_experts = r.integer("num_local_experts", kPositive);
    c.experts_per_token = r.integer("num_experts_per_tok", kPositive);
    c.moe_intermediate = c.intermediate;
    c.moe_layers.assign(static_cast<std::size_t>(c.layers), true);
    if (r.integer_or("shared_intermediate_size", 0, NumberRange::at_least(0)) > 0)
      r.fail("shared_intermediate_size", "a shared expert beside the routed ones is not modelled for MiniMax-M2");
    c.router_bias = r.boolean_or("use_routing_bias", false);
    c.qk_norm = r.boolean_or("use_qk_norm", false);
    const std::string kind = r.string_or("qk_norm_type", "per_layer");
    if (kind == "per_layer")
      c.qk_norm_kind = LlmConfig::QkNorm::per_layer;
    else if (kind == "per_head")
      c.qk_norm_kind = LlmConfig::QkNorm::per_head;
    else
      r.fail("qk_norm_type", "must be per_layer or per_head (got " + quote_excerpt(kind) + ")");
    // attn_type_list: 1 = softmax attention, 0 = lightning (linear) attention (MiniMax-Text-01).
    if (const auto types = r.optional("attn_type_list")) {
      const std::vector<JsonValue> list = types->array();
      if (static_cast<int64_t>(list.size()) != c.layers)
        types->fail("has " + std::to_string(list.size()) + " entries but num_hidden_layers is " +
                    std::to_string(c.layers));
      for (const JsonValue& v : list) {
        const int64_t t = v.integer();
        if (t == 0) v.fail("is 0: lightning (linear) attention layers are not modelled");
        if (t != 1) v.fail("must be 1 (softmax attention) (got " + std::to_string(t) + ")");
      }
    }
    if (r.boolean_or("use_mtp", false)) c.mtp_layers = r.integer_or("num_mtp_modules", 0, NumberRange::at_least(0));
  } else if (llama4) {
    parse_llama4(m, c);
  }
  if (c.num_experts > 0 && c.experts_per_token > c.num_experts)
    m.fail("num_experts_per_tok", "is " + std::to_string(c.experts_per_token) + ", more than the " +
                                      std::to_string(c.num_experts) + " experts");

  // Local attention: sliding windows and chunks.
  const LayerTypes types = layer_types_or_empty(m, c.layers);
  const bool any_local_type = std::find(types.local.begin(), types.local.end(), true) != types.local.end();
  if (llama4) {
    if (any_local_type) {
      // A layer_types list, where a newer writer gives one, says which layers are chunked.
      if (types.sliding) m.fail("layer_types", "Llama-4 has chunked_attention layers, not sliding_attention");
      if (c.attention_chunk == 0) m.fail("attention_chunk_size", "missing (layer_types has chunked_attention layers)");
      c.sliding_layers = types.local;
    }
  } else if (any_local_type) {
    if (types.chunked) m.fail("layer_types", "chunked_attention layers are modelled for Llama-4 only");
    c.sliding_window = r.integer("sliding_window", kPositive);
    c.sliding_layers = types.local;
  } else if (a == "MistralForCausalLM" && r.has("sliding_window")) {
    c.sliding_window = r.integer("sliding_window", kPositive);
    c.sliding_layers.assign(static_cast<std::size_t>(c.layers), true);
  } else if ((a == "Qwen2ForCausalLM" || a == "Qwen3ForCausalLM" || a == "Qwen3MoeForCausalLM") &&
             r.boolean_or("use_sliding_window", false) && r.has("sliding_window")) {
    // transformers' Qwen2: layers from max_window_layers on use the window.
    c.sliding_window = r.integer("sliding_window", kPositive);
    const int64_t first = r.integer_or("max_window_layers", c.layers);
    c.sliding_layers.assign(static_cast<std::size_t>(c.layers), false);
    for (int64_t i = std::max<int64_t>(0, first); i < c.layers; ++i)
      c.sliding_layers[static_cast<std::size_t>(i)] = true;
    if (c.full_attention_layer_count() == c.layers) c.sliding_window = 0;
  } else if (minimax && r.has("sliding_window")) {
    r.fail("sliding_window", "a sliding window is not modelled for MiniMax-M2 (null or absent expected)");
  }
  if (gpt_oss && !any_local_type)
    r.fail("layer_types", "missing: gpt-oss alternates sliding and full attention layers");

  parse_quantization(r, c);
  return c;
}

LayerParams layer_parameters(const LlmConfig& c, int64_t layer) {
  LayerParams p;
  const double H = static_cast<double>(c.hidden), Hq = static_cast<double>(c.heads);
  if (c.mla) {
    const double qk = static_cast<double>(c.qk_head_dim());
    if (c.q_lora_rank > 0) {
      p.attention_replicated += H * c.q_lora_rank + c.q_lora_rank;  // q_a_proj and its norm
      p.attention += static_cast<double>(c.q_lora_rank) * Hq * qk;  // q_b_proj
    } else {
      p.attention += H * Hq * qk;  // q_proj
    }
    p.attention_replicated += H * static_cast<double>(c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank;
    p.attention += static_cast<double>(c.kv_lora_rank) * Hq * static_cast<double>(c.qk_nope_head_dim + c.v_head_dim);
    p.attention += Hq * static_cast<double>(c.v_head_dim) * H;  // o_proj
  } else {
    const double D = static_cast<double>(c.head_dim), Hkv = static_cast<double>(c.kv_heads);
    p.attention = H * (Hq + 2.0 * Hkv) * D + Hq * D * H;
    if (c.qkv_bias) p.attention += (Hq + 2.0 * Hkv) * D;
    if (c.o_bias) p.attention += H;
    if (c.qk_norm && c.qk_norm_kind == LlmConfig::QkNorm::per_head) p.attention_replicated += 2.0 * D;
    if (c.qk_norm && c.qk_norm_kind == LlmConfig::QkNorm::per_layer) p.attention += (Hq + Hkv) * D;  // split by TP
    if (c.attention_sinks) p.attention += Hq;
  }
  p.norms = 2.0 * H;
  if (c.is_moe_layer(layer)) {
    const double I = static_cast<double>(c.moe_intermediate), E = static_cast<double>(c.num_experts);
    p.mlp = E * 3.0 * H * I + (c.expert_bias ? E * (2.0 * I + H) : 0.0);
    p.shared = static_cast<double>(c.shared_experts) * 3.0 * H * I;
    // gpt-oss router bias; DeepSeek, GLM-4.5 and MiniMax-M2 score-correction bias.
    p.router = H * E + (c.expert_bias || c.mla || c.router_bias ? E : 0.0);
  } else {
    p.mlp = 3.0 * H * static_cast<double>(c.intermediate);
  }
  return p;
}

ParamCount count_parameters(const LlmConfig& c) {
  ParamCount p;
  const double VH = static_cast<double>(c.vocab) * static_cast<double>(c.hidden);
  p.embedding = VH;
  p.lm_head = c.tied_embeddings ? 0.0 : VH;
  p.layer_norms = static_cast<double>(c.hidden);
  for (int64_t i = 0; i < c.layers; ++i) {
    const LayerParams l = layer_parameters(c, i);
    p.attention += l.attention + l.attention_replicated;
    if (c.is_moe_layer(i))
      p.routed_experts += l.mlp;
    else
      p.dense_mlp += l.mlp;
    p.shared_experts += l.shared;
    p.routers += l.router;
    p.layer_norms += l.norms;
  }
  const double share =
      c.num_experts > 0 ? static_cast<double>(c.experts_per_token) / static_cast<double>(c.num_experts) : 0;
  p.active = p.total() - p.routed_experts + p.routed_experts * share;
  return p;
}

void apply_quantization(LlmConfig& c, std::string_view method) {
  c.quant_method = std::string(method);
  c.quant_attention = true;
  c.quant_dense_mlp = true;
  if (method == "bf16" || method == "none") {
    c.quant = WeightQuant::none;
    c.quant_weight_bytes = dtype_bytes(c.dtype);
    c.quant_method.clear();
  } else if (method == "fp8") {
    c.quant = WeightQuant::fp8;
    c.quant_weight_bytes = 1.0;  // one fp32 scale per tensor
  } else if (method == "fp8-block") {
    c.quant = WeightQuant::fp8;
    c.quant_weight_bytes = 1.0 + 4.0 / (128.0 * 128.0);  // one fp32 scale per 128x128 block
  } else if (method == "int4") {
    c.quant = WeightQuant::int4;
    c.quant_weight_bytes = 0.5 + 2.0 / 128.0;  // a 16-bit scale per group of 128
  } else if (method == "nvfp4") {
    c.quant = WeightQuant::nvfp4;
    c.quant_weight_bytes = 0.5 + 1.0 / 16.0;  // an e4m3 scale per 16 weights
  } else if (method == "mxfp4") {
    c.quant = WeightQuant::mxfp4;
    c.quant_weight_bytes = 0.5 + 1.0 / 32.0;  // an e8m0 scale per 32 weights
    // vLLM's mxfp4 method quantises the fused MoE experts only; a dense model's MLPs stand for them.
    c.quant_attention = false;
    c.quant_dense_mlp = !c.has_moe();
  } else {
    throw std::invalid_argument("--quantization: unknown method " + quote_excerpt(method) +
                                " (expected bf16, fp8, fp8-block, int4, nvfp4 or mxfp4)");
  }
}

Dtype parse_kv_cache_dtype(const LlmConfig& c, std::string_view name) {
  if (name == "auto") return c.dtype;
  if (name == "bf16" || name == "bfloat16") return Dtype::bf16;
  if (name == "fp16" || name == "float16" || name == "half") return Dtype::fp16;
  if (name == "fp8" || name == "fp8_e4m3") return Dtype::fp8e4m3;
  if (name == "fp8_e5m2") return Dtype::fp8e5m2;
  throw std::invalid_argument("--kv-cache-dtype: unknown dtype " + quote_excerpt(name) +
                              " (expected auto, bf16, fp16, fp8, fp8_e4m3 or fp8_e5m2)");
}

bool nvfp4_on_tensor_cores(const GpuSpec& gpu) { return gpu.vendor == "nvidia" && gpu.supports(Dtype::fp4); }

void check_serving_dtypes(const LlmConfig& c, const GpuSpec& gpu, Dtype kv) {
  const std::string who = gpu.id + " (compute capability " + gpu.compute_capability + ")";
  if (kv == Dtype::fp8e4m3 || kv == Dtype::fp8e5m2) {
    if (!gpu.supports(Dtype::fp8e4m3))
      throw std::invalid_argument("--kv-cache-dtype " + std::string(dtype_name(kv)) + ": " + who +
                                  " has no fp8 tensor cores, which the fp8 KV cache's attention kernels run on "
                                  "(Ada, Hopper and Blackwell have them)");
  } else if (kv == Dtype::bf16 || kv == Dtype::fp16) {
    if (!gpu.supports(kv))
      throw std::invalid_argument("--kv-cache-dtype " + std::string(dtype_name(kv)) + ": " + who + " has no " +
                                  std::string(dtype_name(kv)) + " tensor cores");
  } else {
    throw std::invalid_argument("--kv-cache-dtype " + std::string(dtype_name(kv)) +
                                ": the KV cache is held in bf16, fp16 or fp8");
  }
  if (!gpu.supports(c.dtype))
    throw std::invalid_argument(c.id + " computes in " + std::string(dtype_name(c.dtype)) + ", and " + who +
                                " has no " + std::string(dtype_name(c.dtype)) + " tensor cores");
  if (c.quant == WeightQuant::none) return;
  // The tensor-core paths: fp8 W8A8 on fp8 tensor cores, nvfp4 W4A4 on fp4 ones. Everything else is
  // a weight-only kernel, which vLLM has from Ampere on only.
  const bool tensor_path = (c.quant == WeightQuant::fp8 && gpu.supports(Dtype::fp8e4m3)) ||
                           (c.quant == WeightQuant::nvfp4 && nvfp4_on_tensor_cores(gpu));
  double cc = 0;
  try {
    cc = std::stod(gpu.compute_capability);
  } catch (const std::exception&) {
    cc = 0;
  }
  if (!tensor_path && cc < 8.0)
    throw std::invalid_argument(c.id + " with " + std::string(weight_quant_name(c.quant)) + " weights: " + who +
                                " has no " + std::string(weight_quant_name(c.quant)) +
                                " tensor cores, and the weight-only kernels that serve them elsewhere (Marlin) need "
                                "compute capability 8.0 or later");
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}
std::string id_of(std::string_view rel_path) {
  std::string name(rel_path.substr(rel_path.find_last_of('/') + 1));
  return name.substr(0, name.size() - 5);  // ".json"
}
}  // namespace

std::vector<std::string> bundled_llm_ids() {
  std::vector<std::string> ids;
  for (const auto& [path, text] : embedded::llm_files()) ids.push_back(id_of(path));
  std::sort(ids.begin(), ids.end());
  return ids;
}

LlmConfig load_llm_config(const std::string& id_or_path) {
  const std::string want = lower(id_or_path);
  for (const auto& [path, text] : embedded::llm_files()) {
    if (lower(id_of(path)) == want) {
      LlmConfig c = parse_llm_config(text, std::string(path));
      c.id = id_of(path);
      return c;
    }
  }
  std::error_code ec;
  std::filesystem::path path = id_or_path;
  if (std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(path / "config.json", ec))
    path /= "config.json";  // a model folder as downloaded from the Hub
  // A named pipe or a device of that name is refused by the reader, by its type; a folder without a
  // config.json is no model.
  if (!std::filesystem::exists(path, ec) || std::filesystem::is_directory(path, ec))
    throw std::invalid_argument("unknown model " + quote_excerpt(id_or_path) + ": not a bundled id (" +
                                join(bundled_llm_ids(), ", ") + ") and no config.json file of that name");
  return parse_llm_config(read_file_guarded(path, file_limits::llm_config, kRaise), path.string());
}

}  // namespace perfloom::sim
