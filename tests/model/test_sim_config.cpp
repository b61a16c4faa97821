// LLM configs: every bundled model parses with its published figures; bad configs fail clearly.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/sim/llm_config.h"

using namespace perfloom;
using namespace perfloom::sim;
using nlohmann::json;

namespace {

double billions(const LlmConfig& c) { return count_parameters(c).total() / 1e9; }

json bundled_json(const std::string& id) {
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/resources/llm/" + id + ".json");
  return json::parse(in);
}

// Parses `j` and returns the error it raises (or fails the test).
LlmConfigError error_of(const json& j) {
  try {
    parse_llm_config(j.dump(), "bad/config.json");
  } catch (const LlmConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << j.dump();
  return LlmConfigError("", "", "");
}

}  // namespace

TEST(LlmConfig, EveryBundledModelParses) {
  const auto ids = bundled_llm_ids();
  for (const char* want : {"llama-3-8b",  "llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b",     "llama-3.2-3b",
                           "llama-2-7b",  "llama-2-70b",  "qwen2.5-7b",    "qwen2.5-14b",      "qwen2.5-72b",
                           "qwen3-8b",    "qwen3-32b",    "qwen3-30b-a3b", "mixtral-8x7b",     "deepseek-v3",
                           "gpt-oss-20b", "gpt-oss-120b", "deepseek-r1",   "kimi-k2",          "qwen3-235b-a22b",
                           "glm-4.5",     "glm-4.5-air",  "llama-4-scout", "llama-4-maverick", "minimax-m2.5"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), want), ids.end()) << want << " is not bundled";
  for (const auto& id : ids) {
    const LlmConfig c = load_llm_config(id);
    EXPECT_EQ(c.id, id);
    EXPECT_GT(c.layers, 0) << id;
    EXPECT_GT(billions(c), 1.0) << id;
    EXPECT_EQ(static_cast<int64_t>(c.moe_layers.size()), c.layers) << id;
  }
  EXPECT_EQ(load_llm_config("LLAMA-3-8B").id, "llama-3-8b");  // ids are case-insensitive
}

TEST(LlmConfig, Llama3_8BHasItsPublishedShape) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.layers, 32);
  EXPECT_EQ(c.hidden, 4096);
  EXPECT_EQ(c.heads, 32);
  EXPECT_EQ(c.kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.intermediate, 14336);
  EXPECT_EQ(c.vocab, 128256);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_EQ(c.dtype, Dtype::bf16);
  EXPECT_EQ(c.quant, WeightQuant::none);
  EXPECT_FALSE(c.has_moe());
  EXPECT_NEAR(billions(c), 8.03, 8.03 * 0.02);
}

TEST(LlmConfig, ParameterCountsMatchPublishedSizes) {
  EXPECT_NEAR(billions(load_llm_config("llama-3.1-70b")), 70.6, 70.6 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("llama-2-7b")), 6.74, 6.74 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("llama-3.2-1b")), 1.24, 1.24 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("mixtral-8x7b")), 46.7, 46.7 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("deepseek-v3")), 671.0, 671.0 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("qwen3-30b-a3b")), 30.5, 30.5 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("qwen2.5-7b")), 7.61, 7.61 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("qwen3-32b")), 32.8, 32.8 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("gpt-oss-120b")), 116.8, 116.8 * 0.02);
  EXPECT_NEAR(billions(load_llm_config("gpt-oss-20b")), 20.9, 20.9 * 0.02);
  // Active parameters of the MoE models: 3.3B for Qwen3-30B-A3B, 12.9B for Mixtral.
  EXPECT_NEAR(count_parameters(load_llm_config("qwen3-30b-a3b")).active / 1e9, 3.3, 0.1);
  EXPECT_NEAR(count_parameters(load_llm_config("mixtral-8x7b")).active / 1e9, 12.9, 0.3);
}

TEST(LlmConfig, DeepSeekV3HasMlaAndSharedExpertMoe) {
  const LlmConfig c = load_llm_config("deepseek-v3");
  EXPECT_TRUE(c.mla);
  EXPECT_EQ(c.q_lora_rank, 1536);
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.qk_nope_head_dim, 128);
  EXPECT_EQ(c.qk_rope_head_dim, 64);
  EXPECT_EQ(c.v_head_dim, 128);
  EXPECT_EQ(c.qk_head_dim(), 192);
  EXPECT_EQ(c.heads, 128);
  EXPECT_EQ(c.layers, 61);
  EXPECT_EQ(c.num_experts, 256);
  EXPECT_EQ(c.experts_per_token, 8);
  EXPECT_EQ(c.shared_experts, 1);
  EXPECT_EQ(c.moe_intermediate, 2048);
  EXPECT_EQ(c.intermediate, 18432);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(c.is_moe_layer(i)) << i;
  for (int i = 3; i < 61; ++i) EXPECT_TRUE(c.is_moe_layer(i)) << i;
  EXPECT_EQ(c.moe_layer_count(), 58);
  EXPECT_EQ(c.quant, WeightQuant::fp8);
  EXPECT_NEAR(c.quant_weight_bytes, 1.0, 0.001);
  EXPECT_EQ(c.mtp_layers, 1);

  const LlmConfig lite = load_llm_config("deepseek-v2-lite");
  EXPECT_EQ(lite.architecture, "DeepseekV2ForCausalLM");
  EXPECT_EQ(lite.q_lora_rank, 0);  // null: q straight from the hidden state
  EXPECT_EQ(lite.shared_experts, 2);
  EXPECT_FALSE(lite.is_moe_layer(0));
  EXPECT_TRUE(lite.is_moe_layer(1));
  EXPECT_NEAR(billions(lite), 15.7, 15.7 * 0.02);
}

TEST(LlmConfig, QwenMoeGptOssAndHeadDims) {
  const LlmConfig q = load_llm_config("qwen3-30b-a3b");
  EXPECT_EQ(q.num_experts, 128);
  EXPECT_EQ(q.experts_per_token, 8);
  EXPECT_EQ(q.moe_intermediate, 768);
  EXPECT_EQ(q.kv_heads, 4);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.moe_layer_count(), 48);
  EXPECT_TRUE(q.qk_norm);

  const LlmConfig q32 = load_llm_config("qwen3-32b");
  EXPECT_EQ(q32.head_dim * q32.heads, 8192);  // not the hidden size
  EXPECT_EQ(q32.hidden, 5120);

  const LlmConfig q25 = load_llm_config("qwen2.5-7b");
  EXPECT_TRUE(q25.qkv_bias);
  EXPECT_EQ(q25.sliding_window, 0);  // use_sliding_window is false

  const LlmConfig m = load_llm_config("mixtral-8x7b");
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.moe_intermediate, 14336);

  const LlmConfig g = load_llm_config("gpt-oss-120b");
  EXPECT_EQ(g.num_experts, 128);
  EXPECT_EQ(g.experts_per_token, 4);
  EXPECT_EQ(g.head_dim, 64);
  EXPECT_EQ(g.sliding_window, 128);
  EXPECT_TRUE(g.is_sliding_layer(0));
  EXPECT_FALSE(g.is_sliding_layer(1));
  EXPECT_EQ(g.full_attention_layer_count(), 18);
  EXPECT_TRUE(g.attention_sinks);
  EXPECT_EQ(g.quant, WeightQuant::mxfp4);
  EXPECT_FALSE(g.quant_attention);
  EXPECT_EQ(load_llm_config("gpt-oss-20b").num_experts, 32);

  const LlmConfig mistral = load_llm_config("mistral-7b");
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_EQ(mistral.full_attention_layer_count(), 0);

  const LlmConfig small = load_llm_config("llama-3.2-1b");
  EXPECT_TRUE(small.tied_embeddings);
  EXPECT_EQ(small.head_dim, 64);
  EXPECT_EQ(load_llm_config("llama-2-7b").dtype, Dtype::fp16);
}

// The most-served open MoE models against their model cards. Totals within 2% (the cards round; the
// counts leave out MTP layers, GLM-4.5's one among them, and Llama-4's vision encoder, about 0.9B).
// Cards differ on whether active parameters include the embedding and the LM head (DeepSeek's and
// Meta's do, OpenAI's count the LM head only, GLM's and MiniMax's neither), so the published active
// figure must lie between the count without both and the count with both.
TEST(LlmConfig, MostServedModelsMatchTheirCards) {
  struct Card {
    const char* id;
    double total_b, active_b;
  };
  for (const Card& card : {Card{"deepseek-r1", 671, 37}, Card{"kimi-k2", 1040, 32}, Card{"qwen3-235b-a22b", 235, 22},
                           Card{"glm-4.5", 355, 32}, Card{"glm-4.5-air", 106, 12}, Card{"llama-4-scout", 109, 17},
                           Card{"llama-4-maverick", 400, 17}, Card{"minimax-m2.5", 230, 10},
                           Card{"gpt-oss-120b", 117, 5.1}, Card{"gpt-oss-20b", 21, 3.6}}) {
    const ParamCount p = count_parameters(load_llm_config(card.id));
    EXPECT_NEAR(p.total() / 1e9, card.total_b, 0.02 * card.total_b) << card.id;
    const double with_embeddings = p.active / 1e9, without = (p.active - p.embedding - p.lm_head) / 1e9;
    EXPECT_GE(card.active_b, 0.97 * without) << card.id << ": " << without << " .. " << with_embeddings;
    EXPECT_LE(card.active_b, 1.03 * with_embeddings) << card.id << ": " << without << " .. " << with_embeddings;
  }
}

TEST(LlmConfig, DeepSeekV3FamilyKimiK2AndR1) {
  const LlmConfig r1 = load_llm_config("deepseek-r1");
  const LlmConfig v3 = load_llm_config("deepseek-v3");
  EXPECT_EQ(r1.architecture, "DeepseekV3ForCausalLM");
  EXPECT_DOUBLE_EQ(count_parameters(r1).total(), count_parameters(v3).total());  // same architecture
  EXPECT_EQ(r1.quant, WeightQuant::fp8);

  const LlmConfig k = load_llm_config("kimi-k2");
  EXPECT_TRUE(k.mla);
  EXPECT_EQ(k.num_experts, 384);
  EXPECT_EQ(k.heads, 64);
  EXPECT_EQ(k.shared_experts, 1);
  EXPECT_FALSE(k.is_moe_layer(0));  // first_k_dense_replace 1
  EXPECT_EQ(k.moe_layer_count(), 60);
  EXPECT_EQ(k.mtp_layers, 0);
  EXPECT_EQ(k.vocab, 163840);

  const LlmConfig q = load_llm_config("qwen3-235b-a22b");
  EXPECT_EQ(q.num_experts, 128);
  EXPECT_EQ(q.moe_intermediate, 1536);
  EXPECT_EQ(q.moe_layer_count(), 94);
  EXPECT_EQ(q.kv_heads, 4);
  EXPECT_EQ(q.sliding_window, 0);
}

TEST(LlmConfig, Glm45HasDenseFirstLayersSharedExpertsAndQkNorm) {
  const LlmConfig g = load_llm_config("glm-4.5");
  EXPECT_EQ(g.architecture, "Glm4MoeForCausalLM");
  EXPECT_EQ(g.layers, 92);
  EXPECT_EQ(g.head_dim, 128);  // not hidden / heads (5120 / 96)
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(g.is_moe_layer(i)) << i;
  EXPECT_EQ(g.moe_layer_count(), 89);
  EXPECT_EQ(g.num_experts, 160);
  EXPECT_EQ(g.shared_experts, 1);
  EXPECT_TRUE(g.qk_norm);
  EXPECT_EQ(g.qk_norm_kind, LlmConfig::QkNorm::per_head);
  EXPECT_TRUE(g.qkv_bias);
  EXPECT_FALSE(g.o_bias);
  EXPECT_TRUE(g.router_bias);
  EXPECT_EQ(g.mtp_layers, 1);
  EXPECT_FALSE(g.mla);
  // The router: its weight and its score-correction bias.
  EXPECT_DOUBLE_EQ(layer_parameters(g, 3).router, 5120.0 * 160 + 160);

  const LlmConfig air = load_llm_config("glm-4.5-air");
  EXPECT_FALSE(air.qk_norm);
  EXPECT_EQ(air.moe_layer_count(), 45);
  EXPECT_EQ(air.num_experts, 128);
}

TEST(LlmConfig, Llama4InterleavesMoeAndChunksItsRotaryLayers) {
  const LlmConfig s = load_llm_config("llama-4-scout");
  EXPECT_EQ(s.architecture, "Llama4ForConditionalGeneration");
  EXPECT_EQ(s.hidden, 5120);  // from text_config
  EXPECT_EQ(s.layers, 48);
  EXPECT_EQ(s.num_experts, 16);
  EXPECT_EQ(s.experts_per_token, 1);
  EXPECT_EQ(s.shared_experts, 1);
  EXPECT_EQ(s.moe_intermediate, 8192);  // intermediate_size
  EXPECT_EQ(s.intermediate, 16384);     // intermediate_size_mlp
  EXPECT_EQ(s.moe_layer_count(), 48);   // interleave_moe_layer_step 1
  EXPECT_EQ(s.attention_chunk, 8192);
  EXPECT_EQ(s.sliding_window, 0);
  EXPECT_TRUE(s.nope_full_layers);
  // no_rope_layers is empty: every fourth layer is NoPE with full attention, the rest chunked.
  for (int i = 0; i < 48; ++i) EXPECT_EQ(s.is_sliding_layer(i), (i + 1) % 4 != 0) << i;
  EXPECT_EQ(s.full_attention_layer_count(), 12);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_EQ(s.qk_norm_kind, LlmConfig::QkNorm::weightless);
  EXPECT_DOUBLE_EQ(layer_parameters(s, 0).attention_replicated, 0.0);  // the L2 norm has no weights

  const LlmConfig m = load_llm_config("llama-4-maverick");
  EXPECT_EQ(m.num_experts, 128);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(m.is_moe_layer(i), i % 2 == 1) << i;  // step 2: layers 1, 3, ...
  EXPECT_FALSE(m.qk_norm);
  EXPECT_DOUBLE_EQ(layer_parameters(m, 0).mlp, 3.0 * 5120 * 16384);  // a dense layer's MLP

  // Explicit lists win over the derived ones; a text-only Llama4ForCausalLM config is flat.
  json t = bundled_json("llama-4-scout")["text_config"];
  t["architectures"] = {"Llama4ForCausalLM"};
  t["num_hidden_layers"] = 4;
  t["moe_layers"] = {1, 3};
  t["no_rope_layers"] = {1, 0, 1, 0};
  const LlmConfig flat = parse_llm_config(t.dump(), "flat.json");
  EXPECT_EQ(flat.moe_layer_count(), 2);
  EXPECT_TRUE(flat.is_sliding_layer(0));
  EXPECT_FALSE(flat.is_sliding_layer(1));
}

TEST(LlmConfig, MiniMaxM2NormsQAndKPerLayer) {
  const LlmConfig c = load_llm_config("minimax-m2.5");
  EXPECT_EQ(c.architecture, "MiniMaxM2ForCausalLM");
  EXPECT_EQ(c.num_experts, 256);
  EXPECT_EQ(c.experts_per_token, 8);
  EXPECT_EQ(c.moe_intermediate, 1536);
  EXPECT_EQ(c.moe_layer_count(), 62);
  EXPECT_EQ(c.shared_experts, 0);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.qk_norm_kind, LlmConfig::QkNorm::per_layer);
  EXPECT_TRUE(c.router_bias);
  EXPECT_EQ(c.quant, WeightQuant::fp8);
  EXPECT_EQ(c.mtp_layers, 3);
  // A weight per element of q and of k, split over TP with the heads.
  const LayerParams p = layer_parameters(c, 0);
  const double qkv_o = 3072.0 * (48 + 16) * 128 + 48.0 * 128 * 3072;
  EXPECT_DOUBLE_EQ(p.attention, qkv_o + (48 + 8) * 128.0);
}

TEST(LlmConfig, LayersThatAreNotModelledAreRefusedByName) {
  {
    json b = bundled_json("qwen3-8b");
    b["architectures"] = {"Qwen3NextForCausalLM"};
    const auto e = error_of(b);
    EXPECT_EQ(e.field(), "architectures");
    EXPECT_NE(std::string(e.what()).find("Gated DeltaNet (linear attention) layers are not modelled"),
              std::string::npos)
        << e.what();
  }
  {
    json b = bundled_json("qwen3-8b");
    b["architectures"] = {"NemotronHForCausalLM"};
    EXPECT_NE(std::string(error_of(b).what()).find("Mamba"), std::string::npos);
  }
  {
    json b = bundled_json("gpt-oss-20b");
    b["layer_types"][3] = "linear_attention";
    const auto e = error_of(b);
    EXPECT_EQ(e.field(), "layer_types[3]");
    EXPECT_NE(std::string(e.what()).find("\"linear_attention\" is not modelled"), std::string::npos) << e.what();
  }
  {
    json b = bundled_json("minimax-m2.5");
    b["attn_type_list"] = json::array();
    for (int i = 0; i < 62; ++i) b["attn_type_list"].push_back(i % 8 == 7 ? 1 : 0);
    const auto e = error_of(b);
    EXPECT_EQ(e.field(), "attn_type_list[0]");
    EXPECT_NE(std::string(e.what()).find("lightning (linear) attention"), std::string::npos) << e.what();
  }
  {
    json b = bundled_json("minimax-m2.5");
    b["shared_intermediate_size"] = 1536;
    EXPECT_EQ(error_of(b).field(), "shared_intermediate_size");
  }
  {
    json b = bundled_json("llama-4-scout");
    b.erase("text_config");
    EXPECT_EQ(error_of(b).field(), "text_config");
  }
  {
    json b = bundled_json("llama-4-scout");
    b["text_config"].erase("hidden_size");
    EXPECT_EQ(error_of(b).field(), "text_config.hidden_size");
  }
  {
    json b = bundled_json("llama-4-maverick");
    b["text_config"]["no_rope_layers"] = {1, 0};
    EXPECT_EQ(error_of(b).field(), "text_config.no_rope_layers");
  }
  {
    json b = bundled_json("glm-4.5");
    b["first_k_dense_replace"] = 93;
    EXPECT_EQ(error_of(b).field(), "first_k_dense_replace");
  }
}

TEST(LlmConfig, Int4AwqIsAHalfByteWeightWithFp16Compute) {
  const LlmConfig c = load_llm_config("qwen2.5-7b-instruct-awq");
  EXPECT_EQ(c.quant, WeightQuant::int4);
  EXPECT_EQ(c.quant_method, "awq");
  EXPECT_DOUBLE_EQ(c.quant_weight_bytes, 0.5 + 2.0 / 128.0);
  EXPECT_EQ(c.dtype, Dtype::fp16);
}

TEST(LlmConfig, ReadsAConfigFileByPath) {
  const auto path = std::filesystem::temp_directory_path() / ("perfloom-llm-" + std::to_string(::getpid()) + ".json");
  json j = bundled_json("llama-3-8b");
  j["num_hidden_layers"] = 2;
  std::ofstream(path) << j.dump();
  const LlmConfig c = load_llm_config(path.string());
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.id, path.string());
  std::filesystem::remove(path);
}

TEST(LlmConfig, BadConfigsNameTheFileAndTheField) {
  json j = bundled_json("llama-3-8b");
  {
    json b = j;
    b["architectures"] = {"MambaForCausalLM"};
    const auto e = error_of(b);
    EXPECT_EQ(e.file(), "bad/config.json");
    EXPECT_EQ(e.field(), "architectures");
    EXPECT_NE(std::string(e.what()).find("unknown architecture 'MambaForCausalLM'"), std::string::npos) << e.what();
  }
  {
    json b = j;
    b.erase("hidden_size");
    const auto e = error_of(b);
    EXPECT_EQ(e.field(), "hidden_size");
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  {
    json b = j;
    b["num_key_value_heads"] = 5;
    EXPECT_EQ(error_of(b).field(), "num_key_value_heads");
  }
  {
    json b = j;
    b["num_hidden_layers"] = "thirty-two";
    EXPECT_EQ(error_of(b).field(), "num_hidden_layers");
  }
  {
    json b = j;
    b["vocab_size"] = -1;
    EXPECT_EQ(error_of(b).field(), "vocab_size");
  }
  {
    json b = j;
    b.erase("architectures");
    EXPECT_EQ(error_of(b).field(), "architectures");
  }
  {
    json b = bundled_json("gpt-oss-20b");
    b["layer_types"].erase(0);
    EXPECT_EQ(error_of(b).field(), "layer_types");
  }
  {
    json b = bundled_json("mixtral-8x7b");
    b["num_experts_per_tok"] = 9;
    EXPECT_EQ(error_of(b).field(), "num_experts_per_tok");
  }
  {
    json b = bundled_json("deepseek-v3");
    b.erase("kv_lora_rank");
    EXPECT_EQ(error_of(b).field(), "kv_lora_rank");
  }
  {
    json b = j;
    b["quantization_config"] = {{"quant_method", "bitsandbytes"}};
    EXPECT_EQ(error_of(b).field(), "quantization_config.quant_method");
  }
  EXPECT_THROW(parse_llm_config("{not json", "x.json"), LlmConfigError);
  try {
    load_llm_config("no-such-model");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model \"no-such-model\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llama-3-8b"), std::string::npos) << e.what();
  }
}

TEST(LlmConfig, AbsurdLayerCountsAndWidthsAreRefusedBeforeAnythingIsAllocated) {
  // 1e12 layers used to end in std::bad_alloc from the per-layer tables.
  json j = bundled_json("llama-3-8b");
  j["num_hidden_layers"] = 1000000000000LL;
  const std::string layers = error_of(j).what();
  EXPECT_NE(layers.find("num_hidden_layers: must be between 1 and 100000 (got 1000000000000)"), std::string::npos)
      << layers;
  j = bundled_json("llama-3-8b");
  j["hidden_size"] = 1LL << 40;
  EXPECT_NE(std::string(error_of(j).what()).find("hidden_size"), std::string::npos);
}
