// Step kernel lists (counts and shapes per layer) and step cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/engine.h"
#include "model/sim/memory.h"
#include "model/sim/step.h"
#include "model/sim/step_cost.h"
#include "model/sim/step_report.h"

using namespace perfloom;
using namespace perfloom::sim;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

std::vector<SeqWork> decodes(int64_t n, int64_t context) {
  return std::vector<SeqWork>(static_cast<std::size_t>(n), {1, context});
}

const StepKernel& find(const StepPlan& p, const std::string& label, int nth = 0) {
  for (const auto& k : p.kernels)
    if (label == k.label && nth-- == 0) return k;
  throw std::runtime_error("no kernel " + label);
}

int count_label(const StepPlan& p, const std::string& label) {
  return static_cast<int>(
      std::count_if(p.kernels.begin(), p.kernels.end(), [&](const StepKernel& k) { return label == k.label; }));
}

std::vector<std::string> labels(const StepPlan& p) {
  std::vector<std::string> out;
  for (const auto& k : p.kernels) out.push_back(k.label);
  return out;
}

}  // namespace

TEST(SimStep, Llama3_8BDecodeLayerKernelsAndShapes) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  const StepPlan p = build_step(c, {}, decodes(8, 100));
  const std::vector<std::string> want = {
      "embedding",           "input_norm",   "qkv_proj", "rotary",    "kv_cache_write", "attn_decode", "o_proj",
      "post_attention_norm", "gate_up_proj", "silu_mul", "down_proj", "final_norm",     "lm_head",     "sampling"};
  EXPECT_EQ(labels(p), want);
  EXPECT_EQ(p.seqs, 8);
  EXPECT_EQ(p.tokens, 8);
  EXPECT_EQ(p.decode_seqs, 8);
  EXPECT_EQ(p.prefill_seqs, 0);
  for (const auto& k : p.kernels) {
    const bool per_layer = std::string(k.label) != "embedding" && std::string(k.label) != "final_norm" &&
                           std::string(k.label) != "lm_head" && std::string(k.label) != "sampling";
    EXPECT_EQ(k.count, per_layer ? 32 : 1) << k.label;
  }
  const Shape& qkv = find(p, "qkv_proj").kernel.shape;
  EXPECT_EQ(qkv.M, 8);
  EXPECT_EQ(qkv.N, (32 + 2 * 8) * 128);
  EXPECT_EQ(qkv.K, 4096);
  EXPECT_EQ(find(p, "o_proj").kernel.shape.K, 4096);
  EXPECT_EQ(find(p, "gate_up_proj").kernel.shape.N, 2 * 14336);
  EXPECT_EQ(find(p, "down_proj").kernel.shape.K, 14336);
  EXPECT_EQ(find(p, "silu_mul").kernel.shape.I, 14336);
  const Shape& a = find(p, "attn_decode").kernel.shape;
  EXPECT_EQ(a.B, 8);
  EXPECT_EQ(a.L, 101);  // the cached context plus the new token
  EXPECT_EQ(a.Hq, 32);
  EXPECT_EQ(a.Hkv, 8);
  EXPECT_EQ(a.D, 128);
  const Shape& lm = find(p, "lm_head").kernel.shape;
  EXPECT_EQ(lm.M, 8);
  EXPECT_EQ(lm.N, 128256);
  EXPECT_EQ(find(p, "sampling").kernel.shape.V, 128256);
  for (const auto& k : p.kernels) EXPECT_FALSE(validate_shape(k.kernel.op, k.kernel.shape).has_value()) << k.label;
}

TEST(SimStep, TensorParallelShardsAndAddsAllReduces) {
  const LlmConfig c = load_llm_config("llama-3.1-70b");
  const StepPlan p = build_step(c, {4, 1, 1}, decodes(16, 1000));
  EXPECT_EQ(find(p, "qkv_proj").kernel.shape.N, (64 / 4 + 2 * 8 / 4) * 128);
  EXPECT_EQ(find(p, "gate_up_proj").kernel.shape.N, 2 * 28672 / 4);
  EXPECT_EQ(find(p, "down_proj").kernel.shape.K, 28672 / 4);
  EXPECT_EQ(find(p, "lm_head").kernel.shape.N, 128256 / 4);
  const StepKernel& ar = find(p, "attn_allreduce");
  EXPECT_EQ(ar.kernel.op, Op::allreduce);
  EXPECT_EQ(ar.kernel.shape.bytes, 16 * 8192 * 2);
  EXPECT_EQ(ar.kernel.shape.ranks, 4);
  EXPECT_EQ(ar.count, 80);
  EXPECT_EQ(find(p, "mlp_allreduce").count, 80);
  EXPECT_EQ(count_label(p, "embedding_allreduce"), 1);
  EXPECT_EQ(count_label(p, "logits_gather"), 1);
  // Eight KV heads over TP 16: each rank holds one, replicated.
  const LlmConfig small = load_llm_config("llama-3-8b");
  EXPECT_EQ(kv_heads_per_rank(small, 16), 1);
  EXPECT_EQ(find(build_step(small, {16, 1, 1}, decodes(1, 10)), "qkv_proj").kernel.shape.N, (2 + 2) * 128);
}

TEST(SimStep, ParallelismThatDoesNotDivideIsRefused) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  try {
    validate_parallelism(c, {3, 1, 1});
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_attention_heads (32)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_parallelism(load_llm_config("llama-3.2-3b"), {16, 1, 1}), std::invalid_argument);  // 24 heads
  EXPECT_THROW(validate_parallelism(c, {1, 40, 1}), std::invalid_argument);  // more stages than layers
  EXPECT_THROW(validate_parallelism(c, {2, 1, 2}), std::invalid_argument);   // EP on a dense model
  EXPECT_NO_THROW(validate_parallelism(c, {8, 4, 1}));
}

TEST(SimStep, MixedBatchHasRaggedPrefillAndDecode) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  const std::vector<SeqWork> batch = {{512, 0}, {100, 300}, {1, 50}, {1, 70}};
  const StepPlan p = build_step(c, {}, batch);
  EXPECT_EQ(p.tokens, 614);
  EXPECT_EQ(p.prefill_tokens, 612);
  EXPECT_EQ(p.prefill_seqs, 2);
  EXPECT_EQ(p.decode_seqs, 2);
  EXPECT_EQ(find(p, "qkv_proj").kernel.shape.M, 614);
  const Shape& pre = find(p, "attn_prefill").kernel.shape;
  // A fresh prompt keeps its length; a 100-token chunk after 300 cached tokens has 100*300 + 100*101/2
  // scores, the same as one causal sequence of 264.
  ASSERT_EQ(pre.seqlens.size(), 2u);
  EXPECT_EQ(pre.seqlens[0], 512);
  EXPECT_EQ(pre.seqlens[1], 264);
  EXPECT_NEAR(attention_scores(100, 300, 0), 264.0 * 265.0 / 2.0, 300.0);
  const Shape& dec = find(p, "attn_decode").kernel.shape;
  EXPECT_EQ(dec.B, 2);
  EXPECT_EQ(dec.L, 61);  // mean of 51 and 71
  // The LM head runs once per sequence, not per token.
  EXPECT_EQ(find(p, "lm_head").kernel.shape.M, 4);
}

TEST(SimStep, SlidingWindowScores) {
  EXPECT_DOUBLE_EQ(attention_scores(10, 0, 0), 55.0);
  EXPECT_DOUBLE_EQ(attention_scores(10, 0, 4), 1 + 2 + 3 + 4 * 7.0);
  EXPECT_DOUBLE_EQ(attention_scores(5, 100, 4), 20.0);
  std::vector<int64_t> lens;
  append_equivalent_seqlens(lens, 1024, 0, 128);
  double total = 0, rows = 0;
  for (auto l : lens) {
    total += l * (l + 1) / 2.0;
    rows += static_cast<double>(l);
  }
  EXPECT_GT(lens.size(), 1u);
  EXPECT_NEAR(total, attention_scores(1024, 0, 128), 0.12 * attention_scores(1024, 0, 128));
  EXPECT_NEAR(rows, 1024, 100);
}

TEST(SimStep, MixtralUsesTheFusedMoeKernel) {
  const LlmConfig c = load_llm_config("mixtral-8x7b");
  const StepPlan p = build_step(c, {2, 1, 1}, decodes(32, 500));
  const StepKernel& moe = find(p, "moe_experts");
  EXPECT_EQ(moe.kernel.op, Op::moe);
  EXPECT_EQ(moe.count, 32);
  EXPECT_EQ(moe.kernel.shape.T, 32);
  EXPECT_EQ(moe.kernel.shape.E, 8);
  EXPECT_EQ(moe.kernel.shape.topk, 2);
  EXPECT_EQ(moe.kernel.shape.H, 4096);
  EXPECT_EQ(moe.kernel.shape.I, 14336 / 2);
  EXPECT_EQ(find(p, "router").kernel.shape.N, 8);
  EXPECT_EQ(count_label(p, "gate_up_proj"), 0);
  EXPECT_EQ(count_label(p, "moe_allreduce"), 1);
  // Around the GEMMs, as the engines' fused MoE runs them: align (int32 ids of the 64 pairs) and the
  // top-k sum (reads 2 rows of 4096 bf16 per token, writes one: 3/2 of a copy of the output).
  const StepKernel& align = find(p, "moe_align");
  EXPECT_EQ(align.kernel.op, Op::copy);
  EXPECT_EQ(align.kernel.shape.bytes, 32 * 2 * 4);
  EXPECT_EQ(align.count, 32);
  const StepKernel& sum = find(p, "moe_sum");
  EXPECT_EQ(sum.kernel.op, Op::copy);
  EXPECT_EQ(sum.kernel.shape.bytes, 32 * 4096 * 2 * 3 / 2);
}

TEST(SimStep, ExpertParallelAddsAllToAll) {
  const LlmConfig c = load_llm_config("qwen3-30b-a3b");
  const StepPlan p = build_step(c, {4, 1, 4}, decodes(64, 100));
  const StepKernel& moe = find(p, "moe_experts");
  EXPECT_EQ(moe.kernel.shape.E, 32);
  EXPECT_EQ(moe.kernel.shape.T, 16);
  EXPECT_EQ(moe.kernel.shape.I, 768);
  EXPECT_EQ(find(p, "moe_dispatch").kernel.op, Op::alltoall);
  EXPECT_EQ(find(p, "moe_dispatch").kernel.shape.bytes, 16 * 8 * 2048 * 2);
  EXPECT_EQ(count_label(p, "moe_combine"), 1);
  EXPECT_EQ(count_label(p, "moe_allreduce"), 0);
  // Qwen3 normalizes q and k per head, inside the rotary kernel as vLLM v1 compiles it
  EXPECT_EQ(count_label(p, "qk_norm_rotary"), 1);
  EXPECT_EQ(count_label(p, "q_norm"), 0);
  EXPECT_EQ(count_label(p, "rotary"), 0);
}

TEST(SimStep, QkNormFusedIntoRotaryOrSeparate) {
  const LlmConfig c = load_llm_config("qwen3-8b");
  const StepPlan fused = build_step(c, {1, 1, 1}, {{512, 0}});
  const StepKernel& rot = find(fused, "qk_norm_rotary");
  EXPECT_EQ(rot.kernel.op, Op::rotary);  // rotary's traffic: q and k read and written once
  EXPECT_EQ(rot.kernel.shape.T, 512);
  EXPECT_EQ(rot.kernel.shape.Hq, 32);
  EXPECT_EQ(rot.kernel.shape.Hkv, 8);
  EXPECT_EQ(count_label(fused, "q_norm") + count_label(fused, "k_norm"), 0);
  StepOptions sep;
  sep.fuse_qk_norm_rope = false;
  const StepPlan separate = build_step(c, {1, 1, 1}, {{512, 0}}, sep);
  EXPECT_EQ(find(separate, "q_norm").kernel.shape.T, 512 * 32);  // one row per head
  EXPECT_EQ(find(separate, "k_norm").kernel.shape.T, 512 * 8);
  EXPECT_EQ(find(separate, "rotary").kernel.op, Op::rotary);
  EXPECT_EQ(count_label(separate, "qk_norm_rotary"), 0);
  // Llama has no q/k norm: the option changes nothing
  const LlmConfig l = load_llm_config("llama-3-8b");
  EXPECT_EQ(build_step(l, {1, 1, 1}, {{512, 0}}).kernels.size(),
            build_step(l, {1, 1, 1}, {{512, 0}}, sep).kernels.size());
  EXPECT_EQ(count_label(build_step(l, {1, 1, 1}, {{512, 0}}), "rotary"), 1);
}

TEST(SimStep, DeepSeekV3MlaDecodeAtTp8) {
  const LlmConfig c = load_llm_config("deepseek-v3");
  const StepPlan p = build_step(c, {8, 1, 1}, decodes(32, 2000));
  const StepKernel& a = find(p, "attn_decode_mla");
  EXPECT_EQ(a.kernel.shape.Hq, 16);
  EXPECT_EQ(a.kernel.shape.Hkv, 1);
  EXPECT_EQ(a.kernel.shape.D, 512 + 64);
  EXPECT_EQ(a.count, 3);  // the dense layers; the 58 MoE layers have their own entry
  EXPECT_EQ(find(p, "attn_decode_mla", 1).count, 58);
  EXPECT_EQ(find(p, "fused_qkv_a_proj").kernel.shape.N, 1536 + 512 + 64);
  EXPECT_EQ(find(p, "q_b_proj").kernel.shape.N, 16 * 192);
  EXPECT_EQ(find(p, "q_b_proj").kernel.dtype, Dtype::fp8e4m3);  // fp8 weights, fp8 tensor cores
  EXPECT_TRUE(find(p, "q_b_proj").kernel.act_quant);            // the fp8 linear quantises its input
  EXPECT_FALSE(find(p, "attn_decode_mla").kernel.act_quant);
  EXPECT_EQ(find(p, "q_nope_w_uk").kernel.shape.Bt, 16);
  EXPECT_EQ(find(p, "gate_up_proj").count, 3);  // the dense layers
  EXPECT_EQ(find(p, "moe_experts").count, 58);
  EXPECT_EQ(find(p, "moe_experts").kernel.shape.I, 2048 / 8);
  EXPECT_EQ(find(p, "shared_gate_up_proj").kernel.shape.N, 2 * 2048 / 8);
  // Without fp8 tensor cores the fp8 weights are read at one byte and multiplied in bf16.
  StepOptions ampere;
  ampere.fp8_tensor_cores = false;
  const StepPlan ampere_plan = build_step(c, {8, 1, 1}, decodes(1, 10), ampere);  // the kernel refers into it
  const StepKernel& w = find(ampere_plan, "q_b_proj");
  EXPECT_EQ(w.kernel.dtype, Dtype::bf16);
  EXPECT_FALSE(w.kernel.act_quant);
  EXPECT_NEAR(w.weight_ratio, 0.5, 0.01);
  // Prefill takes the un-absorbed path: latents up-projected for context and new tokens.
  const StepPlan pre = build_step(c, {8, 1, 1}, {{128, 384}});
  EXPECT_EQ(find(pre, "kv_b_proj").kernel.shape.M, 512);
  EXPECT_EQ(find(pre, "attn_prefill").kernel.shape.D, 192);
}

TEST(SimStep, GptOssAlternatesSlidingAndFullLayers) {
  const LlmConfig c = load_llm_config("gpt-oss-20b");
  const StepPlan p = build_step(c, {}, decodes(4, 1000));
  ASSERT_EQ(count_label(p, "attn_decode"), 2);
  const StepKernel& full = find(p, "attn_decode", 0);
  const StepKernel& window = find(p, "attn_decode", 1);
  EXPECT_EQ(full.kernel.shape.L, 1001);
  EXPECT_EQ(window.kernel.shape.L, 128);
  EXPECT_EQ(full.count + window.count, 24);
  const StepKernel& moe = find(p, "moe_experts");
  EXPECT_EQ(moe.kernel.dtype, Dtype::bf16);
  EXPECT_NEAR(moe.weight_ratio, (0.5 + 1.0 / 32.0) / 2.0, 1e-9);  // mxfp4 read, bf16 compute
  EXPECT_DOUBLE_EQ(find(p, "qkv_proj").weight_ratio, 1.0);        // attention stays bf16
}

TEST(SimStep, ChunkedAttentionScores) {
  // Chunks of 4: positions 0..9 see 1 2 3 4 | 1 2 3 4 | 1 2 keys.
  EXPECT_DOUBLE_EQ(chunked_attention_scores(10, 0, 4), 23.0);
  // Three queries after 6 cached tokens: positions 6, 7 (3 and 4 keys), 8 (a new chunk: 1 key).
  EXPECT_DOUBLE_EQ(chunked_attention_scores(3, 6, 4), 8.0);
  // A chunk no shorter than the sequence is plain causal attention.
  EXPECT_DOUBLE_EQ(chunked_attention_scores(10, 5, 1000), attention_scores(10, 5, 0));
  std::vector<int64_t> lens;
  append_chunked_seqlens(lens, 10, 0, 4);
  EXPECT_EQ(lens, (std::vector<int64_t>{4, 4, 2}));
  lens.clear();
  append_chunked_seqlens(lens, 20000, 0, 8192);
  EXPECT_EQ(lens, (std::vector<int64_t>{8192, 8192, 3616}));
}

TEST(SimStep, Llama4ChunkedRotaryLayersAndFullNopeLayers) {
  const LlmConfig c = load_llm_config("llama-4-scout");
  const StepPlan p = build_step(c, {8, 1, 1}, decodes(4, 10000));
  ASSERT_EQ(count_label(p, "attn_decode"), 2);
  const StepKernel& full = find(p, "attn_decode", 0);
  const StepKernel& chunked = find(p, "attn_decode", 1);
  EXPECT_EQ(full.count, 12);
  EXPECT_EQ(full.kernel.shape.L, 10001);
  EXPECT_EQ(chunked.count, 36);
  EXPECT_EQ(chunked.kernel.shape.L, 10000 % 8192 + 1);  // the new token's place in its chunk
  // Rotary and the q/k norm run on the 36 chunked layers only.
  ASSERT_EQ(count_label(p, "qk_norm_rotary"), 1);
  EXPECT_EQ(find(p, "qk_norm_rotary").count, 36);
  EXPECT_EQ(count_label(p, "rotary"), 0);
  // Every layer is MoE with one shared expert; top-1 routing.
  EXPECT_EQ(find(p, "moe_experts").kernel.shape.topk, 1);
  EXPECT_EQ(find(p, "shared_gate_up_proj").kernel.shape.N, 2 * 8192 / 8);

  const StepPlan pre = build_step(c, {8, 1, 1}, {{10000, 0}});
  EXPECT_EQ(find(pre, "attn_prefill", 0).kernel.shape.seqlens, (std::vector<int64_t>{10000}));
  EXPECT_EQ(find(pre, "attn_prefill", 1).kernel.shape.seqlens, (std::vector<int64_t>{8192, 1808}));
  // The chunked layers hold no KV beyond their chunk (vLLM's hybrid allocator): 12 layers count.
  const double per_layer = 2.0 * 1 * 128 * 2;  // one KV head per rank at TP 8, bf16
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(c, {8, 1, 1}, 0, Dtype::bf16), 12 * per_layer);
}

TEST(SimStep, Maverick_Glm45AndMiniMaxLayerKinds) {
  const LlmConfig m = load_llm_config("llama-4-maverick");
  const StepPlan pm = build_step(m, {8, 1, 1}, decodes(8, 4096));
  EXPECT_EQ(find(pm, "gate_up_proj").kernel.shape.N, 2 * 16384 / 8);  // dense layers: intermediate_size_mlp
  EXPECT_EQ(find(pm, "moe_experts").kernel.shape.I, 8192 / 8);

  const LlmConfig g = load_llm_config("glm-4.5");
  const StepPlan pg = build_step(g, {8, 1, 1}, decodes(8, 4096));
  EXPECT_EQ(find(pg, "gate_up_proj").count, 3);
  EXPECT_EQ(find(pg, "moe_experts").count, 89);
  EXPECT_EQ(find(pg, "shared_gate_up_proj").count, 89);
  EXPECT_EQ(count_label(pg, "qk_norm_rotary"), 2);  // per-head norms fuse into rotary (dense and MoE layers)
  EXPECT_EQ(count_label(pg, "q_norm"), 0);

  // MiniMax-M2's norm spans every head: separate kernels and an all-reduce of its sums of squares.
  const LlmConfig x = load_llm_config("minimax-m2.5");
  const StepPlan px = build_step(x, {8, 1, 1}, decodes(8, 4096));
  EXPECT_EQ(count_label(px, "qk_norm_rotary"), 0);
  EXPECT_EQ(find(px, "q_norm").kernel.shape.T, 8 * 48 / 8);
  EXPECT_EQ(find(px, "qk_norm_allreduce").kernel.shape.bytes, 8 * 2 * 4);
  EXPECT_EQ(find(px, "rotary").count, 62);
  EXPECT_EQ(count_label(build_step(x, {}, decodes(8, 4096)), "qk_norm_allreduce"), 0);  // one GPU: no reduction
}

TEST(SimStep, QuantisedServingForAnyModel) {
  LlmConfig c = load_llm_config("llama-3-8b");
  apply_quantization(c, "fp8-block");
  EXPECT_EQ(c.quant, WeightQuant::fp8);
  EXPECT_DOUBLE_EQ(c.quant_weight_bytes, 1.0 + 4.0 / (128.0 * 128.0));
  StepOptions h200;  // fp8 tensor cores, no fp4 ones
  EXPECT_EQ(find(build_step(c, {}, decodes(8, 1000), h200), "qkv_proj").kernel.dtype, Dtype::fp8e4m3);

  apply_quantization(c, "nvfp4");
  EXPECT_EQ(c.quant, WeightQuant::nvfp4);
  EXPECT_TRUE(c.quant_attention && c.quant_dense_mlp);
  const StepPlan weight_only_plan = build_step(c, {}, decodes(8, 1000), h200);
  const StepKernel& weight_only = find(weight_only_plan, "gate_up_proj");
  EXPECT_EQ(weight_only.kernel.dtype, Dtype::bf16);
  EXPECT_DOUBLE_EQ(weight_only.weight_ratio, (0.5 + 1.0 / 16.0) / 2.0);
  StepOptions b200;
  b200.fp4_tensor_cores = true;
  const StepPlan w4a4_plan = build_step(c, {}, decodes(8, 1000), b200);
  const StepKernel& w4a4 = find(w4a4_plan, "gate_up_proj");
  EXPECT_EQ(w4a4.kernel.dtype, Dtype::fp4);
  EXPECT_TRUE(w4a4.kernel.act_quant);
  EXPECT_DOUBLE_EQ(w4a4.weight_ratio, 1.0);
  EXPECT_EQ(find(build_step(c, {}, decodes(8, 1000), b200), "lm_head").kernel.dtype, Dtype::bf16);  // stays 16-bit

  // mxfp4, as vLLM runs it, quantises a MoE model's experts only.
  LlmConfig moe = load_llm_config("qwen3-30b-a3b");
  apply_quantization(moe, "mxfp4");
  const StepPlan pm = build_step(moe, {}, decodes(8, 1000), h200);
  EXPECT_NEAR(find(pm, "moe_experts").weight_ratio, (0.5 + 1.0 / 32.0) / 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(find(pm, "qkv_proj").weight_ratio, 1.0);
  apply_quantization(moe, "bf16");
  EXPECT_EQ(moe.quant, WeightQuant::none);
  EXPECT_THROW(apply_quantization(moe, "int3"), std::invalid_argument);

  // An fp8 KV cache: attention reads fp8, and the cache holds twice the tokens.
  EXPECT_EQ(parse_kv_cache_dtype(c, "fp8"), Dtype::fp8e4m3);
  EXPECT_EQ(parse_kv_cache_dtype(c, "auto"), Dtype::bf16);
  EXPECT_THROW(parse_kv_cache_dtype(c, "int8"), std::invalid_argument);
  RooflinePredictor predictor;
  StepQuery q;
  q.batch = 8;
  q.context = 1000;
  const LlmConfig plain = load_llm_config("llama-3-8b");
  q.kv_dtype = Dtype::fp8e4m3;
  const StepPrediction p8 = predict_step(plain, db().get("h200"), predictor, q);
  EXPECT_EQ(find(p8.plan, "attn_decode").kernel.dtype, Dtype::fp8e4m3);
  EXPECT_EQ(find(p8.plan, "kv_cache_write").kernel.dtype, Dtype::fp8e4m3);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(plain, {}, 0, Dtype::fp8e4m3),
                   kv_bytes_per_token_per_gpu(plain, {}, 0, Dtype::bf16) / 2);
}

TEST(SimStep, ADtypeTheGpuLacksIsRefused) {
  LlmConfig c = load_llm_config("llama-3-8b");
  EXPECT_NO_THROW(check_serving_dtypes(c, db().get("h200"), Dtype::fp8e4m3));
  try {
    check_serving_dtypes(c, db().get("a100-sxm-80gb"), Dtype::fp8e4m3);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a100-sxm-80gb (compute capability 8.0) has no fp8 tensor cores"),
              std::string::npos)
        << e.what();
  }
  apply_quantization(c, "int4");
  EXPECT_NO_THROW(check_serving_dtypes(c, db().get("a100-sxm-80gb"), Dtype::bf16));  // weight-only Marlin
  c.dtype = Dtype::fp16;
  try {
    check_serving_dtypes(c, db().get("t4"), Dtype::fp16);  // sm75: fp16 tensor cores, no Marlin
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("compute capability 8.0 or later"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_serving_dtypes(load_llm_config("llama-3-8b"), db().get("v100-sxm2"), Dtype::bf16),
               std::invalid_argument);  // no bf16 tensor cores
  apply_quantization(c, "nvfp4");
  c.dtype = Dtype::bf16;
  EXPECT_NO_THROW(check_serving_dtypes(c, db().get("b200"), Dtype::fp8e4m3));
  // CDNA 4 has fp4 matrix cores, but for MX scales: nvfp4 is read by a weight-only kernel there.
  EXPECT_TRUE(nvfp4_on_tensor_cores(db().get("b200")));
  EXPECT_TRUE(db().get("mi355x").supports(Dtype::fp4));
  EXPECT_FALSE(nvfp4_on_tensor_cores(db().get("mi355x")));
  EXPECT_FALSE(nvfp4_on_tensor_cores(db().get("h100-sxm")));
  EXPECT_NO_THROW(check_serving_dtypes(c, db().get("mi355x"), Dtype::bf16));
}

TEST(SimStep, PipelineStagesSplitLayersLikeVllm) {
  auto s = pipeline_stages(61, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], (std::pair<int64_t, int64_t>{0, 15}));
  EXPECT_EQ(s[2], (std::pair<int64_t, int64_t>{30, 46}));  // the remainder goes before the last stage
  EXPECT_EQ(s[3].second, 61);
  const StepPlan p = build_step(load_llm_config("llama-3-8b"), {1, 2, 1}, decodes(4, 10));
  EXPECT_EQ(p.stages, 2);
  EXPECT_EQ(find(p, "embedding").stage, 0);
  EXPECT_EQ(find(p, "lm_head").stage, 1);
  EXPECT_EQ(find(p, "pp_sendrecv").stage, 0);
  EXPECT_EQ(find(p, "pp_sendrecv").kernel.shape.bytes, 2 * 4 * 4096 * 2);
  EXPECT_EQ(find(p, "qkv_proj", 0).count + find(p, "qkv_proj", 1).count, 32);
}

TEST(SimStep, CostIsMemoisedAndBreaksDown) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  const GpuSpec& h100 = db().get("h100-sxm");
  RooflinePredictor predictor;
  StepCostModel model(predictor, h100);
  const StepPlan p = build_step(c, {}, decodes(16, 512));
  const StepCost first = model.cost(p, true, true);
  const std::size_t misses = model.cache_misses();
  EXPECT_EQ(misses, p.kernels.size() - 2);  // three fused_add_rmsnorm kernels share one shape
  const StepCost again = model.cost(p, true);
  EXPECT_EQ(model.cache_misses(), misses);
  EXPECT_DOUBLE_EQ(first.latency_us, again.latency_us);
  double sum = 0;
  for (double v : first.breakdown_us) sum += v;
  EXPECT_NEAR(sum, first.latency_us, 1e-6 * first.latency_us);
  EXPECT_TRUE(first.graphs);
  EXPECT_GT(first.breakdown_us[0], first.breakdown_us[1]);  // decode at 512 context: weights dominate
  EXPECT_EQ(first.kernels.size(), p.kernels.size());
  // Weights of 16 GB read once: a decode step cannot beat the memory bandwidth.
  EXPECT_GT(first.latency_us, 16.06e9 / (h100.memory_bandwidth_gb_s * 1e9) * 1e6);
}

TEST(SimStep, EagerPaysLaunchesWhenTheHostIsSlower) {
  // Every kernel takes 1 us on the GPU: the host's 4 us per launch sets the pace in eager mode.
  class OneMicrosecond : public KernelPredictor {
   public:
    Prediction predict(const KernelDesc&, const GpuSpec&) const override {
      Prediction p;
      p.pred_us = 1.0;
      return p;
    }
    std::string name() const override { return "1us"; }
  } one_us;
  const LlmConfig c = load_llm_config("llama-3.2-1b");
  const GpuSpec& h100 = db().get("h100-sxm");
  StepCostModel model(one_us, h100);
  const StepPlan p = build_step(c, {}, decodes(1, 128));
  const StepCost eager = model.cost(p, false), graphs = model.cost(p, true);
  int64_t launches = 0;
  for (const auto& k : p.kernels) launches += k.count;
  EXPECT_DOUBLE_EQ(eager.kernels_us, static_cast<double>(launches));
  EXPECT_DOUBLE_EQ(eager.latency_us - eager.host_us, launches * 4.0);
  EXPECT_DOUBLE_EQ(eager.launch_us, launches * 3.0);
  // Under graphs the GPU runs the kernels back to back, with the measured gap between two kernels.
  const double gap = Overheads{}.kernel_gap_us;
  EXPECT_DOUBLE_EQ(graphs.latency_us - graphs.host_us, launches * (1.0 + gap) + 10.0);
  EXPECT_DOUBLE_EQ(graphs.launch_us, launches * gap + 10.0);
  // When the GPU is the slower side, eager costs the GPU time and the gaps between its kernels.
  RooflinePredictor roofline;
  StepCostModel real(roofline, h100);
  const StepPlan big = build_step(c, {}, {{4096, 0}});
  const StepCost prefill = real.cost(big, false);
  int64_t big_launches = 0;
  for (const auto& k : big.kernels) big_launches += k.count;
  EXPECT_NEAR(prefill.launch_us, big_launches * gap, 1e-6);
  // A prefill of 4096 tokens is past the largest captured graph: eager even when asked for graphs.
  EXPECT_FALSE(real.cost(big, true).graphs);
  // The host overhead grows with the batch.
  EXPECT_GT(model.cost(build_step(c, {}, decodes(64, 128)), true).host_us, graphs.host_us);
}

TEST(SimStep, Int4WeightsMakeDecodeFasterThanFp16) {
  const GpuSpec& h100 = db().get("h100-sxm");
  RooflinePredictor predictor;
  const LlmConfig awq = load_llm_config("qwen2.5-7b-instruct-awq");
  LlmConfig fp16 = awq;
  fp16.quant = WeightQuant::none;
  StepQuery q;
  q.phase = Phase::decode;
  q.batch = 1;
  q.context = 256;
  q.graphs = true;
  const double t_awq = predict_step(awq, h100, predictor, q).cost.breakdown_us[0];
  const double t_fp16 = predict_step(fp16, h100, predictor, q).cost.breakdown_us[0];
  EXPECT_LT(t_awq, 0.6 * t_fp16);
  // Prefill of a long prompt is compute-bound: int4 weights save little there.
  q.phase = Phase::prefill;
  q.tokens = 4096;
  q.context = 0;
  const double p_awq = predict_step(awq, h100, predictor, q).cost.breakdown_us[0];
  const double p_fp16 = predict_step(fp16, h100, predictor, q).cost.breakdown_us[0];
  EXPECT_GT(p_awq, 0.8 * p_fp16);
}

TEST(SimStep, PredictStepChecksMemory) {
  const GpuSpec& h100 = db().get("h100-sxm");
  RooflinePredictor predictor;
  StepQuery q;
  q.phase = Phase::decode;
  q.batch = 1;
  q.context = 100;
  try {
    predict_step(load_llm_config("llama-3.1-70b"), h100, predictor, q);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit in memory"), std::string::npos) << e.what();
  }
  q.par.tp = 4;
  EXPECT_GT(predict_step(load_llm_config("llama-3.1-70b"), h100, predictor, q).cost.latency_us, 0);
  q.par.tp = 1;
  q.batch = 4096;
  q.context = 100000;
  EXPECT_THROW(predict_step(load_llm_config("llama-3-8b"), h100, predictor, q), std::runtime_error);  // KV too big
}

TEST(SimEngine, EachEngineRunsItsOwnAttentionKernelsPerGpu) {
  auto impl = [](ServingEngine e, const char* gpu, int64_t d, bool mla = false) {
    const AttentionChoice c = engine_attention(e, db().get(gpu), d, mla);
    EXPECT_FALSE(c.reason.empty());
    return c.impl;
  };
  // vLLM: FlashInfer (TensorRT-LLM's kernels) on datacenter Blackwell, FlashAttention from sm80 on.
  EXPECT_EQ(impl(ServingEngine::vllm, "h100-sxm", 128), AttentionImpl::flash);
  EXPECT_EQ(impl(ServingEngine::vllm, "a100-sxm-80gb", 128), AttentionImpl::flash);
  EXPECT_EQ(impl(ServingEngine::vllm, "b200", 128), AttentionImpl::trtllm);
  EXPECT_EQ(impl(ServingEngine::vllm, "rtx-pro-6000-server", 128), AttentionImpl::flash);
  // SGLang, as aiconfigurator's tables record its kernel_source: TensorRT-LLM MHA on sm100 where it
  // has the head dim (Triton for 192), Triton on sm120 and before Ampere, FlashAttention between.
  EXPECT_EQ(impl(ServingEngine::sglang, "b200", 128), AttentionImpl::trtllm);
  EXPECT_EQ(impl(ServingEngine::sglang, "b200", 192), AttentionImpl::triton);
  EXPECT_EQ(impl(ServingEngine::sglang, "rtx-pro-6000-server", 128), AttentionImpl::triton);
  EXPECT_EQ(impl(ServingEngine::sglang, "t4", 128), AttentionImpl::triton);
  EXPECT_EQ(impl(ServingEngine::sglang, "l40s", 128), AttentionImpl::flash);
  EXPECT_EQ(impl(ServingEngine::sglang, "h100-sxm", 128), AttentionImpl::flash);
  EXPECT_EQ(impl(ServingEngine::sglang, "b200", 128, true), AttentionImpl::flash);  // MLA: not told apart
  // An explicit implementation is kept.
  EXPECT_EQ(resolve_attention(AttentionImpl::flash_attn2, ServingEngine::sglang, db().get("b200"), 128, false).impl,
            AttentionImpl::flash_attn2);
  for (std::string_view w : {"serving", "flash", "fa2", "cudnn", "triton", "trtllm"})
    EXPECT_EQ(attention_impl_name(*parse_attention_impl(w)), w);
  EXPECT_FALSE(parse_attention_impl("fa3"));
  EXPECT_FALSE(parse_serving_engine("trtllm"));

  // A step names its attention kernels after the choice, and SGLang runs Qwen3's q/k norms apart.
  RooflinePredictor predictor;
  StepQuery q;
  q.phase = Phase::prefill;
  q.tokens = 512;
  q.engine = ServingEngine::sglang;
  const StepPrediction p = predict_step(load_llm_config("qwen3-8b"), db().get("rtx-pro-6000-server"), predictor, q);
  EXPECT_EQ(p.attention.impl, AttentionImpl::triton);
  EXPECT_EQ(find(p.plan, "attn_prefill").kernel.name, attention_kernel_name(AttentionImpl::triton));
  EXPECT_EQ(count_label(p.plan, "q_norm"), 1);
  q.engine = ServingEngine::vllm;
  const StepPrediction v = predict_step(load_llm_config("qwen3-8b"), db().get("rtx-pro-6000-server"), predictor, q);
  EXPECT_EQ(v.attention.impl, AttentionImpl::flash);
  EXPECT_EQ(find(v.plan, "attn_prefill").kernel.name, "");
  EXPECT_EQ(count_label(v.plan, "q_norm"), 0);
}

TEST(SimMemory, KvCacheCapacityFromGpuMemory) {
  const GpuSpec& h100 = db().get("h100-sxm");
  const LlmConfig c = load_llm_config("llama-3-8b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(c, {}, 0, Dtype::bf16), 32 * 2 * 8 * 128 * 2.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(c, {2, 1, 1}, 0, Dtype::bf16), 32 * 2 * 4 * 128 * 2.0);
  const MemoryPlan m = plan_memory(c, {}, h100, {});
  EXPECT_NEAR(m.weights_gib, 8.03e9 * 2 / (1024.0 * 1024 * 1024), 0.2);
  EXPECT_NEAR(m.kv_gib, 80 * 0.9 - m.weights_gib - m.activation_gib - 1.0, 1e-9);
  EXPECT_EQ(m.num_blocks, static_cast<int64_t>(std::floor(m.kv_gib * 1024.0 * 1024 * 1024 / (131072.0 * 16))));
  // MLA caches one 576-wide latent per layer, the same on every rank.
  const LlmConfig ds = load_llm_config("deepseek-v3");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(ds, {8, 1, 1}, 0, Dtype::bf16), 61 * 576 * 2.0);
  // gpt-oss: only the full-attention layers hold every token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(load_llm_config("gpt-oss-20b"), {}, 0, Dtype::bf16),
                   12 * 2 * 8 * 64 * 2.0);
  // DeepSeek-V3 in fp8 takes ~640 GiB: it fits eight H200s, not eight H100s.
  EXPECT_THROW(plan_memory(ds, {8, 1, 1}, h100, {}), std::runtime_error);
  EXPECT_NO_THROW(plan_memory(ds, {8, 1, 1}, db().get("h200"), {}));
}

// Sustained clocks (model/power.h, step_cost.h): a long compute-bound step is slowed by the GPU's
// measured power limit, a weight-streaming decode is not, and host time between steps lowers the load.
TEST(SimStep, SustainedClocksSlowALongPrefillButNotADecode) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  const GpuSpec& h100 = db().get("h100-sxm");
  ASSERT_TRUE(h100.sustained.has_value());
  RooflinePredictor roofline;
  StepCostModel burst(roofline, h100), sustained(roofline, h100, {}, ClockState::sustained);
  const StepPlan prefill = build_step(c, {}, {{4096, 0}});
  const StepCost pb = burst.cost(prefill, false, true), ps = sustained.cost(prefill, false, true);
  EXPECT_EQ(pb.clocks, ClockState::burst);
  EXPECT_EQ(pb.tensor_utilization, 0.0);
  EXPECT_EQ(ps.clocks, ClockState::sustained);
  // The step's tensor work at the datasheet peak over its duration: Llama-3-8B at 4096 tokens does
  // about 66 TFLOP (67 ms at 989 TFLOP/s; the LM head runs for one token), and the roofline
  // baseline's step takes about 160 ms.
  const double linear = 2.0 * 4096 * 4096 * (6144 + 4096 + 2 * 14336 + 14336);
  const double attention = 4.0 * 4096 * 4096 * 128 * 32 / 2;  // causal: QK^T and PV, half the scores
  const double tflop = (linear + attention) * 32 / 1e12;
  EXPECT_NEAR(ps.tensor_utilization, tflop / 989.4 * 1e6 / pb.latency_us, 0.02 * ps.tensor_utilization);
  EXPECT_GT(ps.tensor_utilization, 0.35);
  EXPECT_DOUBLE_EQ(ps.power.compute, h100.sustained->at(ps.tensor_utilization).compute);
  EXPECT_GT(ps.power.compute, 1.01);  // the roofline's slow step only reaches the curve's knee
  EXPECT_GE(ps.power.compute, ps.power.memory);
  // The GEMMs are slowed by the compute factor; the host time is not.
  EXPECT_NEAR(ps.breakdown_us[0] / pb.breakdown_us[0], ps.power.compute, 0.01);
  EXPECT_DOUBLE_EQ(ps.host_us, pb.host_us);
  ASSERT_EQ(ps.kernels.size(), pb.kernels.size());
  for (std::size_t i = 0; i < ps.kernels.size(); ++i) {
    EXPECT_GE(ps.kernels[i].us_each, pb.kernels[i].us_each * ps.power.memory * (1 - 1e-12))
        << ps.kernels[i].kernel->label;
    EXPECT_LE(ps.kernels[i].us_each, pb.kernels[i].us_each * ps.power.compute * (1 + 1e-12))
        << ps.kernels[i].kernel->label;
  }
  // A decode step streams weights: low tensor utilisation, no slowdown to speak of.
  const StepPlan decode = build_step(c, {}, decodes(8, 1024));
  const StepCost db_ = burst.cost(decode, true), ds = sustained.cost(decode, true);
  EXPECT_LT(ds.tensor_utilization, 0.1);
  EXPECT_LT(ds.latency_us / db_.latency_us, 1.01);
  // The same prefill with the GPU idle most of the time between steps: less load, less slowdown.
  Overheads slow_host;
  slow_host.host_step_us = 4 * pb.latency_us;
  StepCostModel idle(roofline, h100, slow_host, ClockState::sustained);
  const StepCost pi = idle.cost(prefill, false);
  EXPECT_LT(pi.tensor_utilization, ps.tensor_utilization / 4);
  EXPECT_LT(pi.power.compute, ps.power.compute);
}

TEST(SimStep, SustainedClocksLagTheLoadAcrossStepsAndIdleGaps) {
  const LlmConfig c = load_llm_config("llama-3-8b");
  const GpuSpec& h100 = db().get("h100-sxm");
  ASSERT_TRUE(h100.sustained && h100.sustained->has_response());
  RooflinePredictor roofline;
  StepCostModel burst(roofline, h100), sustained(roofline, h100, {}, ClockState::sustained);
  const StepPlan prefill = build_step(c, {}, {{4096, 0}});
  const StepCost b = burst.cost(prefill, false), steady = sustained.cost(prefill, false);
  ASSERT_GT(steady.latency_us, 1.01 * b.latency_us);
  // The first prefill after a cold start runs below its steady load, so nearer its burst time.
  PowerHistory h;
  double t = 0;
  const StepCost first = sustained.cost(prefill, false, false, &h, t);
  EXPECT_LT(first.tensor_utilization, steady.tensor_utilization);
  EXPECT_LT(first.latency_us, steady.latency_us);
  EXPECT_GE(first.latency_us, b.latency_us);
  EXPECT_TRUE(h.started);
  EXPECT_DOUBLE_EQ(h.end_us, first.interval_us);
  // Back to back, the steps reach the steady state.
  StepCost last;
  for (int i = 0; i < 40; ++i) {
    t = h.end_us;
    last = sustained.cost(prefill, false, false, &h, t);
  }
  EXPECT_NEAR(last.latency_us, steady.latency_us, 1e-3 * steady.latency_us);
  // After a second idle the limit has let go: the next step is as the first.
  const StepCost rested = sustained.cost(prefill, false, false, &h, h.end_us + 1e6);
  EXPECT_NEAR(rested.latency_us, first.latency_us, 1e-3 * first.latency_us);
}

TEST(SimStep, SustainedClocksNeedAPowerCurve) {
  // A P100 has no tensor cores to scale a measured curve by (a B200 gets the H100's, scaled).
  const GpuSpec& p100 = db().get("p100-pcie");
  ASSERT_FALSE(p100.sustained.has_value());
  ASSERT_TRUE(db().get("b200").sustained.has_value());
  RooflinePredictor roofline;
  try {
    StepCostModel m(roofline, p100, {}, ClockState::sustained);
    FAIL() << "accepted sustained clocks without a sustained-power curve";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'p100-pcie'"), std::string::npos) << what;
    EXPECT_NE(what.find("no TDP or no 16-bit tensor peak"), std::string::npos) << what;
    EXPECT_NE(what.find("power_probe.py"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(StepCostModel(roofline, p100));
  EXPECT_EQ(parse_clock_state("sustained"), ClockState::sustained);
  EXPECT_EQ(parse_clock_state("burst"), ClockState::burst);
  EXPECT_FALSE(parse_clock_state("boost").has_value());
}
