#include "model/sim/step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/classify/kernel_classifier.h"

namespace perfloom::sim {

namespace {
std::string s(int64_t v) { return std::to_string(v); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

void validate_parallelism(const LlmConfig& c, const Parallelism& p) {
  if (p.tp < 1 || p.pp < 1 || p.ep < 1) throw std::invalid_argument("--tp, --pp and --ep must be at least 1");
  const std::string who = c.id + " ";
  if (c.heads % p.tp != 0)
    throw std::invalid_argument(who + "cannot run at TP " + s(p.tp) + ": num_attention_heads (" + s(c.heads) +
                                ") is not a multiple of the TP degree; each GPU must hold whole heads");
  if (!c.mla) {
    if (c.kv_heads >= p.tp && c.kv_heads % p.tp != 0)
      throw std::invalid_argument(who + "cannot run at TP " + s(p.tp) + ": num_key_value_heads (" + s(c.kv_heads) +
                                  ") is not a multiple of the TP degree");
    if (c.kv_heads < p.tp && p.tp % c.kv_heads != 0)
      throw std::invalid_argument(who + "cannot run at TP " + s(p.tp) +
                                  ": the TP degree is not a multiple of num_key_value_heads (" + s(c.kv_heads) +
                                  "), so KV heads cannot be replicated evenly");
  }
  const bool dense_layers = c.moe_layer_count() < c.layers;
  if (dense_layers && c.intermediate % p.tp != 0)
    throw std::invalid_argument(who + "cannot run at TP " + s(p.tp) + ": intermediate_size (" + s(c.intermediate) +
                                ") is not a multiple of the TP degree");
  if (c.has_moe()) {
    if (p.ep > 1) {
      if (p.ep % p.tp != 0)
        throw std::invalid_argument(
            "--ep must be 1, the TP degree, or a multiple of it (wide EP over EP/TP "
            "data-parallel attention ranks); got EP " +
            s(p.ep) + " at TP " + s(p.tp));
      if (c.num_experts % p.ep != 0)
        throw std::invalid_argument(who + "cannot run at EP " + s(p.ep) + ": the " + s(c.num_experts) +
                                    " experts do not split evenly");
    } else if (c.moe_intermediate % p.tp != 0) {
      throw std::invalid_argument(who + "cannot run at TP " + s(p.tp) + ": moe_intermediate_size (" +
                                  s(c.moe_intermediate) + ") is not a multiple of the TP degree");
    }
  } else if (p.ep > 1) {
    throw std::invalid_argument(who + "has no experts: --ep applies to MoE models only");
  }
  if (p.pp > c.layers)
    throw std::invalid_argument(who + "cannot run at PP " + s(p.pp) + ": it has only " + s(c.layers) + " layers");
}

std::vector<std::pair<int64_t, int64_t>> pipeline_stages(int64_t layers, int pp) {
  std::vector<int64_t> n(static_cast<std::size_t>(pp), layers / pp);
  const int64_t rem = layers % pp;
  for (int64_t i = 2; i < rem + 2; ++i) n[static_cast<std::size_t>(pp - i)] += 1;
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t first = 0;
  for (int64_t k : n) {
    out.emplace_back(first, first + k);
    first += k;
  }
  return out;
}

int64_t kv_heads_per_rank(const LlmConfig& c, int tp) {
  if (c.mla) return 1;
  return c.kv_heads >= tp ? c.kv_heads / tp : 1;
}

double attention_scores(int64_t c, int64_t p, int64_t w) {
  const double C = static_cast<double>(c), P = static_cast<double>(p);
  if (w <= 0) return C * P + C * (C + 1.0) / 2.0;
  // Query i (0-based) sees min(p + i + 1, w) keys: terms p+1 .. p+c, each capped at w.
  const double a = P + 1.0, b = P + C, W = static_cast<double>(w);
  if (b <= W) return (a + b) * C / 2.0;
  if (a >= W) return C * W;
  return (a + W) * (W - a + 1.0) / 2.0 + (b - W) * W;
}

void append_equivalent_seqlens(std::vector<int64_t>& seqlens, int64_t c, int64_t p, int64_t w) {
  const double scores = attention_scores(c, p, w);
  // One causal sequence of length l has l(l+1)/2 scores. A chunk after a prefix becomes one longer
  // sequence (the same tensor work, spread over more query tiles); a long chunk under a short
  // window becomes several sequences of about the window's reach.
  const double one = (-1.0 + std::sqrt(1.0 + 8.0 * scores)) / 2.0;
  if (one >= static_cast<double>(c) - 0.5) {
    seqlens.push_back(std::max<int64_t>(1, std::llround(one)));
    return;
  }
  const double len = std::max(1.0, 2.0 * scores / static_cast<double>(c) - 1.0);
  const int64_t pieces = std::max<int64_t>(1, std::llround(static_cast<double>(c) / len));
  seqlens.insert(seqlens.end(), static_cast<std::size_t>(pieces), std::max<int64_t>(1, std::llround(len)));
}

double chunked_attention_scores(int64_t c, int64_t p, int64_t chunk) {
  // Query at position q (0-based) sees the keys of its chunk up to itself: q % chunk + 1 of them.
  double total = 0;
  int64_t q = p;
  const int64_t end = p + c;
  while (q < end) {
    const int64_t chunk_end = (q / chunk + 1) * chunk;
    const int64_t last = std::min(end, chunk_end);  // queries [q, last) share a chunk
    const double a = static_cast<double>(q % chunk + 1), n = static_cast<double>(last - q);
    total += n * a + n * (n - 1.0) / 2.0;
    q = last;
  }
  return total;
}

void append_chunked_seqlens(std::vector<int64_t>& seqlens, int64_t c, int64_t p, int64_t chunk) {
  // Each chunk is its own causal sequence: the part of the first chunk after the cached prefix,
  // then whole chunks, then the remainder.
  int64_t q = p;
  const int64_t end = p + c;
  while (q < end) {
    const int64_t chunk_end = (q / chunk + 1) * chunk;
    const int64_t last = std::min(end, chunk_end);
    append_equivalent_seqlens(seqlens, last - q, q % chunk, 0);
    q = last;
  }
}

namespace {

// Everything a layer's kernels depend on, computed once per step.
struct Ctx {
  Ctx(const LlmConfig& cfg, const Parallelism& p, const StepOptions& o) : c(cfg), par(p), opt(o) {}
  const LlmConfig& c;
  const Parallelism& par;
  const StepOptions& opt;
  int64_t T = 0;  // query tokens
  int64_t H = 0;
  int64_t hq = 0, hkv = 0;  // heads per rank
  Dtype act = Dtype::bf16, kv = Dtype::bf16;
  // Prefill sequences as equivalent causal lengths, for full and sliding-window layers.
  std::vector<int64_t> prefill_full, prefill_sliding;
  int64_t prefill_kv_tokens = 0;  // MLA: context + new tokens of prefill sequences (kv_b up-projection)
  int64_t decode_seqs = 0;
  int64_t decode_l_full = 0, decode_l_sliding = 0;
  std::vector<StepKernel>* out = nullptr;
  int stage = 0;
  int64_t count = 1;

  void add(Op op, Dtype dt, const Shape& sh, const char* label, double weight_ratio = 1.0) const {
    StepKernel k;
    k.kernel.op = op;
    k.kernel.dtype = dt;
    k.kernel.shape = sh;
    if (op == Op::attn_prefill || op == Op::attn_decode) k.kernel.name = attention_kernel_name(opt.attention_impl);
    k.count = count;
    k.label = label;
    k.stage = stage;
    k.weight_ratio = weight_ratio;
    out->push_back(std::move(k));
  }
  // A GEMM over weights that may be quantized: its dtype and weight-byte ratio.
  std::pair<Dtype, double> weights(bool quantized_part) const {
    if (!quantized_part || c.quant == WeightQuant::none) return {act, 1.0};
    if (c.quant == WeightQuant::fp8 && opt.fp8_tensor_cores) return {Dtype::fp8e4m3, 1.0};
    if (c.quant == WeightQuant::nvfp4 && opt.fp4_tensor_cores) return {Dtype::fp4, 1.0};
    return {act, c.quant_weight_bytes / dtype_bytes(act)};
  }
  void gemm(int64_t M, int64_t N, int64_t K, bool quantized_part, const char* label) const {
    Shape sh;
    sh.M = M;
    sh.N = N;
    sh.K = K;
    const auto [dt, ratio] = weights(quantized_part);
    add(Op::gemm, dt, sh, label, ratio);
    // A serving framework's fp8 (fp4) linear quantises its activations in front of the GEMM.
    if (dt != act && (dt == Dtype::fp8e4m3 || dt == Dtype::fp4)) out->back().kernel.act_quant = true;
  }
  void rows(Op op, int64_t t, int64_t h, const char* label, Dtype dt) const {
    Shape sh;
    sh.T = t;
    if (op == Op::silu_mul)
      sh.I = h;
    else if (op == Op::softmax)
      sh.V = h;
    else
      sh.H = h;
    add(op, dt, sh, label);
  }
  void collective(Op op, double bytes, int ranks, const char* label) const {
    Shape sh;
    sh.bytes = std::max<int64_t>(1, std::llround(bytes));
    sh.ranks = ranks;
    add(op, act, sh, label);
  }
};

void attention_gqa(const Ctx& x, bool sliding) {
  const LlmConfig& c = x.c;
  const int64_t D = c.head_dim;
  x.gemm(x.T, (x.hq + 2 * x.hkv) * D, x.H, c.quant_attention, "qkv_proj");
  // Llama-4's NoPE layers (its full-attention ones) have neither rotary nor the q/k norm.
  const bool rope = !(c.nope_full_layers && !sliding);
  const bool qk_norm = c.qk_norm && rope;
  // A per-layer norm (MiniMax-M2) reduces over every head, so the sum of squares crosses the TP ranks
  // (an all-reduce of two fp32 values per token) and the norm cannot join rotary's per-head kernel.
  const bool per_layer = c.qk_norm_kind == LlmConfig::QkNorm::per_layer;
  const bool fused_qk_norm = qk_norm && x.opt.fuse_qk_norm_rope && !per_layer;
  if (qk_norm && !fused_qk_norm) {
    x.rows(Op::rmsnorm, x.T * x.hq, D, "q_norm", x.act);
    x.rows(Op::rmsnorm, x.T * x.hkv, D, "k_norm", x.act);
    if (per_layer && x.par.tp > 1)
      x.collective(Op::allreduce, static_cast<double>(x.T) * 2.0 * 4.0, x.par.tp, "qk_norm_allreduce");
  }
  if (rope) {
    Shape rot;
    rot.T = x.T;
    rot.Hq = x.hq;
    rot.Hkv = x.hkv;
    rot.D = D;
    // Fused, the norms read and write q and k in registers between rotary's load and store: the
    // kernel moves rotary's bytes, so rotary's model predicts it.
    x.add(Op::rotary, x.act, rot, fused_qk_norm ? "qk_norm_rotary" : "rotary");
  }
  Shape kvw;
  kvw.T = x.T;
  kvw.Hkv = x.hkv;
  kvw.D = D;
  x.add(Op::kv_cache_write, x.kv, kvw, "kv_cache_write");
  const auto& lens = sliding ? x.prefill_sliding : x.prefill_full;
  if (!lens.empty()) {
    Shape a;
    a.seqlens = lens;
    a.B = static_cast<int64_t>(lens.size());
    a.S = *std::max_element(lens.begin(), lens.end());
    a.Hq = x.hq;
    a.Hkv = x.hkv;
    a.D = D;
    x.add(Op::attn_prefill, x.kv, a, "attn_prefill");
  }
  if (x.decode_seqs > 0) {
    Shape a;
    a.B = x.decode_seqs;
    a.L = sliding ? x.decode_l_sliding : x.decode_l_full;
    a.Hq = x.hq;
    a.Hkv = x.hkv;
    a.D = D;
    x.add(Op::attn_decode, x.kv, a, "attn_decode");
  }
  x.gemm(x.T, x.H, x.hq * D, c.quant_attention, "o_proj");
}

// Multi-head latent attention as vLLM runs DeepSeek: prefill un-absorbed (latents up-projected by
// kv_b_proj, then FlashAttention over 192-wide q/k heads), decode absorbed (q_nope through W_UK, MQA
// over the 576-wide latent+rope cache as FlashMLA does, then W_UV).
void attention_mla(const Ctx& x) {
  const LlmConfig& c = x.c;
  const int64_t latent = c.kv_lora_rank + c.qk_rope_head_dim;
  if (c.q_lora_rank > 0) {
    x.gemm(x.T, c.q_lora_rank + latent, x.H, c.quant_attention, "fused_qkv_a_proj");
    x.rows(Op::rmsnorm, x.T, c.q_lora_rank, "q_a_norm", x.act);
    x.gemm(x.T, x.hq * c.qk_head_dim(), c.q_lora_rank, c.quant_attention, "q_b_proj");
  } else {
    x.gemm(x.T, x.hq * c.qk_head_dim(), x.H, c.quant_attention, "q_proj");
    x.gemm(x.T, latent, x.H, c.quant_attention, "kv_a_proj");
  }
  x.rows(Op::rmsnorm, x.T, c.kv_lora_rank, "kv_a_norm", x.act);
  Shape rot;
  rot.T = x.T;
  rot.Hq = x.hq;
  rot.Hkv = 1;
  rot.D = c.qk_rope_head_dim;
  x.add(Op::rotary, x.act, rot, "rotary");
  Shape kvw;
  kvw.T = x.T;
  kvw.Hkv = 1;
  kvw.D = latent;
  x.add(Op::kv_cache_write, x.kv, kvw, "kv_cache_write");
  if (!x.prefill_full.empty()) {
    x.gemm(x.prefill_kv_tokens, x.hq * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank, c.quant_attention,
           "kv_b_proj");
    Shape a;
    a.seqlens = x.prefill_full;
    a.B = static_cast<int64_t>(x.prefill_full.size());
    a.S = *std::max_element(x.prefill_full.begin(), x.prefill_full.end());
    a.Hq = x.hq;
    a.Hkv = x.hq;
    a.D = c.qk_head_dim();
    x.add(Op::attn_prefill, x.act, a, "attn_prefill");
  }
  if (x.decode_seqs > 0) {
    Shape uk;
    uk.Bt = x.hq;
    uk.M = x.decode_seqs;
    uk.N = c.kv_lora_rank;
    uk.K = c.qk_nope_head_dim;
    x.add(Op::bmm, x.act, uk, "q_nope_w_uk");
    Shape a;
    a.B = x.decode_seqs;
    a.L = x.decode_l_full;
    a.Hq = x.hq;
    a.Hkv = 1;
    a.D = latent;
    x.add(Op::attn_decode, x.kv, a, "attn_decode_mla");
    Shape uv;
    uv.Bt = x.hq;
    uv.M = x.decode_seqs;
    uv.N = c.v_head_dim;
    uv.K = c.kv_lora_rank;
    x.add(Op::bmm, x.act, uv, "attn_w_uv");
  }
  x.gemm(x.T, x.H, x.hq * c.v_head_dim, c.quant_attention, "o_proj");
}

void mlp_dense(const Ctx& x) {
  const int64_t I = x.c.intermediate / x.par.tp;
  x.rows(Op::fused_add_rmsnorm, x.T, x.H, "post_attention_norm", x.act);
  x.gemm(x.T, 2 * I, x.H, x.c.quant_dense_mlp, "gate_up_proj");
  x.rows(Op::silu_mul, x.T, I, "silu_mul", x.act);
  x.gemm(x.T, x.H, I, x.c.quant_dense_mlp, "down_proj");
  if (x.par.tp > 1)
    x.collective(Op::allreduce, static_cast<double>(x.T) * x.H * dtype_bytes(x.act), x.par.tp, "mlp_allreduce");
}

void mlp_moe(const Ctx& x) {
  const LlmConfig& c = x.c;
  const bool ep = x.par.ep > 1;
  x.rows(Op::fused_add_rmsnorm, x.T, x.H, "post_attention_norm", x.act);
  x.gemm(x.T, c.num_experts, x.H, false, "router");
  x.rows(Op::softmax, x.T, c.num_experts, "topk_softmax", Dtype::fp32);
  // Expert parallel: each GPU of the TP group dispatches its share of the step's tokens to the
  // experts' owners and gets the results back. Under wide EP every data-parallel rank sends its own
  // tokens the same way, so with balanced routing a GPU's experts get as many (token, expert) pairs
  // as it sent: t_local * topk. The busiest GPU gets `expert_imbalance` times that.
  const int64_t t_local = ep ? ceil_div(x.T, x.par.tp) : x.T;
  const int64_t e_local = ep ? c.num_experts / x.par.ep : c.num_experts;
  const int64_t i_local = ep ? c.moe_intermediate : c.moe_intermediate / x.par.tp;
  const double imbalance = ep ? std::max(1.0, x.opt.expert_imbalance) : 1.0;
  const double a2a_bytes = static_cast<double>(t_local) * c.experts_per_token * x.H * dtype_bytes(x.act) * imbalance;
  if (ep) x.collective(Op::alltoall, a2a_bytes, x.par.ep, "moe_dispatch");
  Shape m;
  m.T = static_cast<int64_t>(std::ceil(static_cast<double>(t_local) * imbalance));
  m.E = e_local;
  m.topk = std::min(c.experts_per_token, e_local);
  m.H = x.H;
  m.I = i_local;
  const auto [dt, ratio] = x.weights(true);
  // The engines' fused MoE around its two GEMMs: align sorts the (token, expert) pairs by expert and
  // pads each expert's run to the GEMM's row block (int32 ids in, sorted ids out); the top-k sum reads
  // every pair's down output and writes one row per token (vLLM's moe_align_block_size and moe_sum;
  // tools/moe/layer_check.py measures both parts beside the GEMMs). Both as the bytes they move.
  Shape align;
  align.bytes = m.T * m.topk * 4;
  x.add(Op::copy, Dtype::fp32, align, "moe_align");
  x.add(Op::moe, dt, m, "moe_experts", ratio);
  x.rows(Op::silu_mul, m.T * c.experts_per_token, i_local, "moe_silu_mul", x.act);
  if (m.topk > 1) {
    Shape sum;
    sum.bytes = static_cast<int64_t>(static_cast<double>(m.T) * x.H * dtype_bytes(x.act) * (m.topk + 1) / 2.0);
    x.add(Op::copy, x.act, sum, "moe_sum");
  }
  if (ep) x.collective(Op::alltoall, a2a_bytes, x.par.ep, "moe_combine");
  if (c.shared_experts > 0) {
    // Under EP the shared experts run whole on every rank and their output joins the combine.
    const int64_t I = c.shared_experts * c.moe_intermediate / (ep ? 1 : x.par.tp);
    x.gemm(x.T, 2 * I, x.H, c.quant_dense_mlp, "shared_gate_up_proj");
    x.rows(Op::silu_mul, x.T, I, "shared_silu_mul", x.act);
    x.gemm(x.T, x.H, I, c.quant_dense_mlp, "shared_down_proj");
  }
  if (x.par.tp > 1 && !ep)
    x.collective(Op::allreduce, static_cast<double>(x.T) * x.H * dtype_bytes(x.act), x.par.tp, "moe_allreduce");
}

void layer(const Ctx& x, bool sliding, bool moe) {
  x.rows(Op::fused_add_rmsnorm, x.T, x.H, "input_norm", x.act);
  if (x.c.mla)
    attention_mla(x);
  else
    attention_gqa(x, sliding);
  if (x.par.tp > 1)
    x.collective(Op::allreduce, static_cast<double>(x.T) * x.H * dtype_bytes(x.act), x.par.tp, "attn_allreduce");
  if (moe)
    mlp_moe(x);
  else
    mlp_dense(x);
}

}  // namespace

std::optional<AttentionImpl> parse_attention_impl(std::string_view s) {
  for (AttentionImpl i : {AttentionImpl::serving, AttentionImpl::flash, AttentionImpl::flash_attn2, AttentionImpl::cudnn,
                          AttentionImpl::triton, AttentionImpl::trtllm})
    if (s == attention_impl_name(i)) return i;
  return std::nullopt;
}

std::string_view attention_impl_name(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::serving:
      return "serving";
    case AttentionImpl::flash:
      return "flash";
    case AttentionImpl::flash_attn2:
      return "fa2";
    case AttentionImpl::cudnn:
      return "cudnn";
    case AttentionImpl::triton:
      return "triton";
    case AttentionImpl::trtllm:
      return "trtllm";
  }
  return "serving";
}

std::string attention_kernel_name(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::serving:
    case AttentionImpl::flash:
      return "";
    case AttentionImpl::flash_attn2:
      return std::string(kFlashAttention2KernelName);
    case AttentionImpl::cudnn:
      return std::string(kCudnnAttentionKernelName);
    case AttentionImpl::triton:
      return std::string(kTritonAttentionKernelName);
    case AttentionImpl::trtllm:
      return std::string(kTrtllmAttentionKernelName);
  }
  return "";
}

StepPlan build_step(const LlmConfig& c, const Parallelism& par, const std::vector<SeqWork>& batch,
                    const StepOptions& opt) {
  if (batch.empty()) throw std::invalid_argument("a step needs at least one sequence");
  StepPlan plan;
  plan.stages = par.pp;
  Ctx x(c, par, opt);
  x.H = c.hidden;
  x.hq = c.heads / par.tp;
  x.hkv = kv_heads_per_rank(c, par.tp);
  x.act = c.dtype;
  x.kv = opt.kv_dtype_set ? opt.kv_dtype : c.dtype;
  x.out = &plan.kernels;

  double decode_l_sum = 0, decode_l_sliding_sum = 0;
  // Local layers: a sliding window, whose query sees at most the window's keys, or Llama-4's chunks,
  // whose query sees its chunk's keys up to itself (position % chunk + 1: from 1 at a chunk's start
  // to the chunk's length at its end). Both are costed as full attention over those keys.
  const bool any_sliding = c.has_local_attention();
  const int64_t chunk = c.attention_chunk;
  const int64_t local_span = chunk > 0 ? chunk : c.sliding_window;
  for (const SeqWork& w : batch) {
    if (w.new_tokens <= 0 || w.context < 0)
      throw std::invalid_argument("every sequence of a step needs at least one new token");
    plan.seqs += 1;
    plan.tokens += w.new_tokens;
    if (is_decode(w)) {
      plan.decode_seqs += 1;
      decode_l_sum += static_cast<double>(w.context + 1);
      if (chunk > 0)
        decode_l_sliding_sum += static_cast<double>(w.context % chunk + 1);
      else if (any_sliding)
        decode_l_sliding_sum += static_cast<double>(std::min(w.context + 1, c.sliding_window));
    } else {
      plan.prefill_seqs += 1;
      plan.prefill_tokens += w.new_tokens;
      append_equivalent_seqlens(x.prefill_full, w.new_tokens, w.context, 0);
      if (chunk > 0)
        append_chunked_seqlens(x.prefill_sliding, w.new_tokens, w.context, chunk);
      else if (any_sliding)
        append_equivalent_seqlens(x.prefill_sliding, w.new_tokens, w.context, c.sliding_window);
      x.prefill_kv_tokens += w.new_tokens + w.context;
    }
  }
  x.T = plan.tokens;
  x.decode_seqs = plan.decode_seqs;
  if (plan.decode_seqs > 0) {
    const int64_t q = std::max<int64_t>(1, opt.context_quantum);
    auto mean_up = [&](double sum) {
      const int64_t mean = static_cast<int64_t>(std::ceil(sum / static_cast<double>(plan.decode_seqs) - 1e-9));
      return ceil_div(std::max<int64_t>(1, mean), q) * q;
    };
    x.decode_l_full = mean_up(decode_l_sum);
    if (any_sliding) x.decode_l_sliding = std::min(mean_up(decode_l_sliding_sum), std::max(local_span, q));
  }

  const auto stages = pipeline_stages(c.layers, par.pp);
  for (int st = 0; st < par.pp; ++st) {
    x.stage = st;
    x.count = 1;
    if (st == 0) {
      Shape e;
      e.T = x.T;
      e.H = x.H;
      e.V = ceil_div(c.vocab, par.tp);
      x.add(Op::embedding, x.act, e, "embedding");
      if (par.tp > 1)
        x.collective(Op::allreduce, static_cast<double>(x.T) * x.H * dtype_bytes(x.act), par.tp, "embedding_allreduce");
    }
    // Group the stage's layers by kind; identical layers become one entry with a count.
    const auto [first, last] = stages[static_cast<std::size_t>(st)];
    int64_t kinds[2][2] = {{0, 0}, {0, 0}};  // [sliding][moe]
    for (int64_t i = first; i < last; ++i) {
      const bool sliding = c.is_sliding_layer(i);
      kinds[sliding ? 1 : 0][c.is_moe_layer(i) ? 1 : 0] += 1;
    }
    for (int sl = 0; sl < 2; ++sl)
      for (int moe = 0; moe < 2; ++moe) {
        if (kinds[sl][moe] == 0) continue;
        x.count = kinds[sl][moe];
        layer(x, sl == 1, moe == 1);
      }
    x.count = 1;
    if (st + 1 < par.pp) {
      // Hidden state and residual travel to the next stage.
      x.collective(Op::sendrecv, 2.0 * static_cast<double>(x.T) * x.H * dtype_bytes(x.act), 2, "pp_sendrecv");
    } else {
      x.rows(Op::fused_add_rmsnorm, x.T, x.H, "final_norm", x.act);
      // vLLM v1 computes logits at one position per scheduled request (the last one).
      x.gemm(plan.seqs, ceil_div(c.vocab, par.tp), x.H, false, "lm_head");
      if (par.tp > 1)
        x.collective(Op::allgather, static_cast<double>(plan.seqs) * static_cast<double>(c.vocab) * dtype_bytes(x.act),
                     par.tp, "logits_gather");
      x.rows(Op::softmax, plan.seqs, c.vocab, "sampling", Dtype::fp32);
    }
  }
  return plan;
}

}  // namespace perfloom::sim
