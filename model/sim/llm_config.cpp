#include "model/sim/llm_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace perfloom::embedded {
// Generated from resources/llm/*.json by cmake/EmbedFiles.cmake (model/CMakeLists.txt).
std::vector<std::pair<std::string_view, std::string_view>> llm_files();
}  // namespace perfloom::embedded

namespace perfloom::sim {

using nlohmann::json;

std::string_view weight_quant_name(WeightQuant q) {
  switch (q) {
    case WeightQuant::none: return "none";
    case WeightQuant::fp8: return "fp8";
    case WeightQuant::int4: return "int4";
    case WeightQuant::int8: return "int8";
    case WeightQuant::mxfp4: return "mxfp4";
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
      "LlamaForCausalLM",    "MistralForCausalLM",    "Qwen2ForCausalLM",      "Qwen3ForCausalLM",
      "Qwen3MoeForCausalLM", "MixtralForCausalLM",    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
      "GptOssForCausalLM"};
  return a;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

// Reads fields of one config, naming the file and the field in every error.
class Reader {
 public:
  Reader(const json& j, std::string file) : j_(j), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
    throw LlmConfigError(file_, field, reason);
  }
  bool has(const char* field) const { return j_.contains(field) && !j_.at(field).is_null(); }

  int64_t integer(const char* field) const {
    if (!has(field)) fail(field, "missing (required for this architecture)");
    return as_int(j_.at(field), field);
  }
  int64_t integer_or(const char* field, int64_t fallback) const {
    return has(field) ? as_int(j_.at(field), field) : fallback;
  }
  int64_t positive(const char* field) const {
    const int64_t v = integer(field);
    if (v <= 0) fail(field, "must be positive (got " + std::to_string(v) + ")");
    return v;
  }
  int64_t positive_or(const char* field, int64_t fallback) const {
    if (!has(field)) return fallback;
    return positive(field);
  }
  bool boolean_or(const char* field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!j_.at(field).is_boolean()) fail(field, "must be true or false");
    return j_.at(field).get<bool>();
  }
  std::string string_or(const char* field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    if (!j_.at(field).is_string()) fail(field, "must be a string");
    return j_.at(field).get<std::string>();
  }
  const json& at(const char* field) const { return j_.at(field); }

 private:
  int64_t as_int(const json& v, const char* field) const {
    if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
    }
    fail(field, "must be an integer (got " + v.dump() + ")");
  }
  const json& j_;
  std::string file_;
};

Dtype parse_torch_dtype(const Reader& r) {
  // transformers >= 4.56 writes "dtype"; older configs "torch_dtype". Missing: bf16, as vLLM's
  // "auto" would pick on a GPU with bf16. float32 checkpoints are served in bf16 by vLLM as well.
  const char* key = r.has("torch_dtype") ? "torch_dtype" : "dtype";
  const std::string s = r.string_or(key, "bfloat16");
  if (s == "bfloat16" || s == "float32" || s == "auto") return Dtype::bf16;
  if (s == "float16" || s == "half") return Dtype::fp16;
  r.fail(key, "unsupported dtype '" + s + "' (expected bfloat16, float16 or float32)");
}

void parse_quantization(const Reader& r, const std::string& file, LlmConfig& c) {
  if (!r.has("quantization_config")) return;
  const json& q = r.at("quantization_config");
  if (!q.is_object()) r.fail("quantization_config", "must be an object");
  Reader qr(q, file);
  const std::string method = qr.string_or("quant_method", "");
  if (method.empty()) r.fail("quantization_config.quant_method", "missing");
  c.quant_method = method;
  auto not_converted = [&](std::string_view what) {
    if (!qr.has("modules_to_not_convert") || !q.at("modules_to_not_convert").is_array()) return false;
    for (const auto& m : q.at("modules_to_not_convert"))
      if (m.is_string() && m.get<std::string>().find(what) != std::string::npos) return true;
    return false;
  };
  auto weight_only = [&](int64_t bits, int64_t group) {
    if (bits == 4) c.quant = WeightQuant::int4;
    else if (bits == 8) c.quant = WeightQuant::int8;
    else r.fail("quantization_config.bits", "only 4- and 8-bit weights are modelled (got " + std::to_string(bits) + ")");
    // 16-bit scale per group of weights; per-channel scales (group -1) are negligible.
    c.quant_weight_bytes = static_cast<double>(bits) / 8.0 + (group > 0 ? 2.0 / static_cast<double>(group) : 0.0);
  };
  if (method == "fp8" || method == "fbgemm_fp8") {
    c.quant = WeightQuant::fp8;
    double scale_bytes = 0;
    if (qr.has("weight_block_size") && q.at("weight_block_size").is_array() && q.at("weight_block_size").size() == 2) {
      const double b0 = q.at("weight_block_size")[0].get<double>(), b1 = q.at("weight_block_size")[1].get<double>();
      if (b0 > 0 && b1 > 0) scale_bytes = 4.0 / (b0 * b1);  // one fp32 scale per block
    }
    c.quant_weight_bytes = 1.0 + scale_bytes;
  } else if (method == "awq" || method == "awq_marlin" || method == "gptq" || method == "gptq_marlin") {
    weight_only(qr.integer_or("bits", qr.integer_or("w_bit", 4)), qr.integer_or("group_size", qr.integer_or("q_group_size", 128)));
  } else if (method == "mxfp4") {
    c.quant = WeightQuant::mxfp4;
    c.quant_weight_bytes = 0.5 + 1.0 / 32.0;  // e2m1 pairs per byte, one e8m0 scale per 32 weights
  } else if (method == "compressed-tensors") {
    if (!qr.has("config_groups") || !q.at("config_groups").is_object() || q.at("config_groups").empty())
      r.fail("quantization_config.config_groups", "missing (needed to read the weight format)");
    const json& g = q.at("config_groups").begin().value();
    if (!g.contains("weights") || !g.at("weights").is_object())
      r.fail("quantization_config.config_groups.weights", "missing");
    Reader wr(g.at("weights"), file);
    const int64_t bits = wr.integer("num_bits");
    const std::string type = wr.string_or("type", "int");
    if (bits == 8 && type == "float") {
      c.quant = WeightQuant::fp8;
      c.quant_weight_bytes = 1.0;
    } else {
      weight_only(bits, wr.integer_or("group_size", -1));
    }
  } else {
    r.fail("quantization_config.quant_method",
           "unsupported quantization method '" + method + "' (modelled: fp8, fbgemm_fp8, awq, gptq, mxfp4, compressed-tensors)");
  }
  if (not_converted("self_attn") || not_converted("attn")) c.quant_attention = false;
  if (c.quant == WeightQuant::mxfp4) {
    // gpt-oss quantizes only the experts; attention, router, embeddings and LM head stay bf16.
    c.quant_attention = false;
    c.quant_dense_mlp = false;
  }
}

std::vector<bool> layer_types_or_empty(const Reader& r, int64_t layers) {
  if (!r.has("layer_types")) return {};
  const json& lt = r.at("layer_types");
  if (!lt.is_array()) r.fail("layer_types", "must be an array");
  if (static_cast<int64_t>(lt.size()) != layers)
    r.fail("layer_types", "has " + std::to_string(lt.size()) + " entries but num_hidden_layers is " + std::to_string(layers));
  std::vector<bool> sliding;
  for (const auto& t : lt) {
    if (!t.is_string()) r.fail("layer_types", "entries must be strings");
    const std::string s = t.get<std::string>();
    if (s == "sliding_attention") sliding.push_back(true);
    else if (s == "full_attention") sliding.push_back(false);
    else r.fail("layer_types", "unknown layer type '" + s + "' (expected sliding_attention or full_attention)");
  }
  return sliding;
}

}  // namespace

LlmConfig parse_llm_config(std::string_view json_text, const std::string& file_label) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw LlmConfigError(file_label, "", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw LlmConfigError(file_label, "", "not a JSON object (expected a Hugging Face config.json)");
  Reader r(j, file_label);
  LlmConfig c;
  c.id = file_label;
  c.source = file_label;

  if (!r.has("architectures")) r.fail("architectures", "missing (expected e.g. [\"LlamaForCausalLM\"])");
  const json& archs = j.at("architectures");
  if (!archs.is_array() || archs.empty() || !archs[0].is_string())
    r.fail("architectures", "must be a non-empty array of names");
  c.architecture = archs[0].get<std::string>();
  const auto& known = known_architectures();
  if (std::find(known.begin(), known.end(), c.architecture) == known.end())
    r.fail("architectures", "unknown architecture '" + c.architecture + "'; supported: " + join(known, ", "));
  c.model_type = r.string_or("model_type", "");
  const std::string& a = c.architecture;
  const bool deepseek = a == "DeepseekV2ForCausalLM" || a == "DeepseekV3ForCausalLM";
  const bool gpt_oss = a == "GptOssForCausalLM";

  c.hidden = r.positive("hidden_size");
  c.layers = r.positive("num_hidden_layers");
  c.heads = r.positive("num_attention_heads");
  c.kv_heads = r.positive_or("num_key_value_heads", c.heads);  // transformers' default: MHA
  c.vocab = r.positive("vocab_size");
  c.intermediate = r.positive("intermediate_size");
  c.max_position_embeddings = r.integer_or("max_position_embeddings", 0);
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  c.dtype = parse_torch_dtype(r);

  if (r.has("head_dim")) {
    c.head_dim = r.positive("head_dim");
  } else if (!deepseek) {
    if (c.hidden % c.heads != 0)
      r.fail("head_dim", "missing, and hidden_size (" + std::to_string(c.hidden) +
                             ") is not a multiple of num_attention_heads (" + std::to_string(c.heads) + ")");
    c.head_dim = c.hidden / c.heads;
  }
  if (!deepseek && c.heads % c.kv_heads != 0)
    r.fail("num_key_value_heads", "num_attention_heads (" + std::to_string(c.heads) + ") is not a multiple of it (" +
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
    c.num_experts = r.positive("num_local_experts");
    c.experts_per_token = r.positive("num_experts_per_tok");
    c.moe_intermediate = c.intermediate;
    c.moe_layers.assign(static_cast<std::size_t>(c.layers), true);
  } else if (a == "Qwen3MoeForCausalLM") {
    c.num_experts = r.positive("num_experts");
    c.experts_per_token = r.positive("num_experts_per_tok");
    c.moe_intermediate = r.positive("moe_intermediate_size");
    const int64_t step = r.positive_or("decoder_sparse_step", 1);
    std::vector<bool> mlp_only(static_cast<std::size_t>(c.layers), false);
    if (r.has("mlp_only_layers")) {
      if (!j.at("mlp_only_layers").is_array()) r.fail("mlp_only_layers", "must be an array of layer indices");
      for (const auto& v : j.at("mlp_only_layers")) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.layers)
          r.fail("mlp_only_layers", "entry " + v.dump() + " is not a layer index in [0, " + std::to_string(c.layers) + ")");
        mlp_only[static_cast<std::size_t>(v.get<int64_t>())] = true;
      }
    }
    for (int64_t i = 0; i < c.layers; ++i)
      c.moe_layers[static_cast<std::size_t>(i)] = !mlp_only[static_cast<std::size_t>(i)] && (i + 1) % step == 0;
  } else if (deepseek) {
    if (r.has("n_routed_experts")) {
      c.num_experts = r.positive("n_routed_experts");
      c.experts_per_token = r.positive("num_experts_per_tok");
      c.moe_intermediate = r.positive("moe_intermediate_size");
      c.shared_experts = r.integer_or("n_shared_experts", 0);
      if (c.shared_experts < 0) r.fail("n_shared_experts", "must not be negative");
      const int64_t first_dense = r.integer_or("first_k_dense_replace", 0);
      const int64_t freq = r.positive_or("moe_layer_freq", 1);
      if (first_dense < 0 || first_dense > c.layers)
        r.fail("first_k_dense_replace", "must be in [0, num_hidden_layers] (got " + std::to_string(first_dense) + ")");
      for (int64_t i = 0; i < c.layers; ++i)
        c.moe_layers[static_cast<std::size_t>(i)] = i >= first_dense && i % freq == 0;
    }
    c.mla = true;
    c.q_lora_rank = r.integer_or("q_lora_rank", 0);
    if (c.q_lora_rank < 0) r.fail("q_lora_rank", "must not be negative");
    c.kv_lora_rank = r.positive("kv_lora_rank");
    c.qk_nope_head_dim = r.positive("qk_nope_head_dim");
    c.qk_rope_head_dim = r.positive("qk_rope_head_dim");
    c.v_head_dim = r.positive("v_head_dim");
    c.head_dim = c.v_head_dim;
    c.kv_heads = c.heads;  // MLA: every head reads the shared latent; see the step builder
    c.mtp_layers = r.integer_or("num_nextn_predict_layers", 0);
  } else if (gpt_oss) {
    c.num_experts = r.positive("num_local_experts");
    c.experts_per_token = r.has("experts_per_token") ? r.positive("experts_per_token") : r.positive("num_experts_per_tok");
    c.moe_intermediate = c.intermediate;
    c.moe_layers.assign(static_cast<std::size_t>(c.layers), true);
    c.qkv_bias = c.o_bias = r.boolean_or("attention_bias", true);
    c.attention_sinks = true;
    c.expert_bias = true;
  }
  if (c.num_experts > 0 && c.experts_per_token > c.num_experts)
    r.fail("num_experts_per_tok", "is " + std::to_string(c.experts_per_token) + ", more than the " +
                                      std::to_string(c.num_experts) + " experts");

  // Sliding-window attention.
  std::vector<bool> sliding = layer_types_or_empty(r, c.layers);
  const bool any_sliding_type = std::find(sliding.begin(), sliding.end(), true) != sliding.end();
  if (any_sliding_type) {
    c.sliding_window = r.positive("sliding_window");
    c.sliding_layers = sliding;
  } else if (a == "MistralForCausalLM" && r.has("sliding_window")) {
    c.sliding_window = r.positive("sliding_window");
    c.sliding_layers.assign(static_cast<std::size_t>(c.layers), true);
  } else if ((a == "Qwen2ForCausalLM" || a == "Qwen3ForCausalLM" || a == "Qwen3MoeForCausalLM") &&
             r.boolean_or("use_sliding_window", false) && r.has("sliding_window")) {
    // transformers' Qwen2: layers from max_window_layers on use the window.
    c.sliding_window = r.positive("sliding_window");
    const int64_t first = r.integer_or("max_window_layers", c.layers);
    c.sliding_layers.assign(static_cast<std::size_t>(c.layers), false);
    for (int64_t i = std::max<int64_t>(0, first); i < c.layers; ++i) c.sliding_layers[static_cast<std::size_t>(i)] = true;
    if (c.full_attention_layer_count() == c.layers) c.sliding_window = 0;
  }
  if (gpt_oss && !any_sliding_type) r.fail("layer_types", "missing: gpt-oss alternates sliding and full attention layers");

  parse_quantization(r, file_label, c);
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
    if (c.qk_norm) p.attention_replicated += 2.0 * D;
    if (c.attention_sinks) p.attention += Hq;
  }
  p.norms = 2.0 * H;
  if (c.is_moe_layer(layer)) {
    const double I = static_cast<double>(c.moe_intermediate), E = static_cast<double>(c.num_experts);
    p.mlp = E * 3.0 * H * I + (c.expert_bias ? E * (2.0 * I + H) : 0.0);
    p.shared = static_cast<double>(c.shared_experts) * 3.0 * H * I;
    p.router = H * E + (c.expert_bias || c.mla ? E : 0.0);  // gpt-oss router bias, DeepSeek correction bias
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
    if (c.is_moe_layer(i)) p.routed_experts += l.mlp;
    else p.dense_mlp += l.mlp;
    p.shared_experts += l.shared;
    p.routers += l.router;
    p.layer_norms += l.norms;
  }
  const double share = c.num_experts > 0 ? static_cast<double>(c.experts_per_token) / static_cast<double>(c.num_experts) : 0;
  p.active = p.total() - p.routed_experts + p.routed_experts * share;
  return p;
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
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::invalid_argument("unknown model \"" + id_or_path + "\": not a bundled id (" + join(bundled_llm_ids(), ", ") +
                                ") and no config.json file of that name");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LlmConfigError(path.string(), "", "cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_llm_config(ss.str(), path.string());
}

}  // namespace perfloom::sim
