#include "model/sim/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace perfloom::sim {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes_gib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes_gib);
  return buf;
}
}  // namespace

double weight_bytes_per_gpu(const LlmConfig& c, const Parallelism& par, int stage) {
  const double act = c.act_bytes();
  const auto bytes = [&](bool quantized_part) {
    return quantized_part && c.quant != WeightQuant::none ? c.quant_weight_bytes : act;
  };
  const double tp = par.tp;
  const auto stages = pipeline_stages(c.layers, par.pp);
  const auto [first, last] = stages[static_cast<std::size_t>(stage)];
  double b = 0;
  for (int64_t i = first; i < last; ++i) {
    const LayerParams p = layer_parameters(c, i);
    b += p.attention * bytes(c.quant_attention) / tp;
    b += p.attention_replicated * act;
    // Routed experts split over TP (columns) or EP (whole experts): the same share when EP = TP;
    // wide EP spreads them over all EP GPUs.
    const double mlp_split = c.is_moe_layer(i) ? std::max(tp, static_cast<double>(par.ep)) : tp;
    b += p.mlp * bytes(c.is_moe_layer(i) || c.quant_dense_mlp) / mlp_split;
    b += p.shared * bytes(c.quant_dense_mlp) / (par.ep > 1 ? 1.0 : tp);
    b += (p.router + p.norms) * act;
  }
  const double vocab_shard = static_cast<double>(c.vocab) * static_cast<double>(c.hidden) * act / tp;
  if (stage == 0) b += vocab_shard;                                                 // embedding
  if (stage == par.pp - 1 && (!c.tied_embeddings || par.pp > 1)) b += vocab_shard;  // LM head
  if (stage == par.pp - 1) b += static_cast<double>(c.hidden) * act;                // final norm
  return b;
}

double kv_bytes_per_token_per_gpu(const LlmConfig& c, const Parallelism& par, int stage, Dtype kv_dtype) {
  const auto stages = pipeline_stages(c.layers, par.pp);
  const auto [first, last] = stages[static_cast<std::size_t>(stage)];
  const bool hybrid = c.has_local_attention() && c.full_attention_layer_count() > 0;
  const double eb = dtype_bytes(kv_dtype);
  double per_layer = 0;
  if (c.mla)
    per_layer = static_cast<double>(c.kv_lora_rank + c.qk_rope_head_dim) * eb;
  else
    per_layer = 2.0 * static_cast<double>(kv_heads_per_rank(c, par.tp)) * static_cast<double>(c.head_dim) * eb;
  double b = 0;
  for (int64_t i = first; i < last; ++i)
    if (!(hybrid && c.is_sliding_layer(i))) b += per_layer;
  return b;
}

namespace {
double activation_bytes(const LlmConfig& c, const Parallelism& par, const MemoryOptions& opt) {
  const double act = c.act_bytes(), tp = par.tp;
  const double T = static_cast<double>(opt.max_num_batched_tokens);
  const int64_t heads_per_rank = c.heads / par.tp;  // TP divides the heads (checked by the caller)
  const double qkv = static_cast<double>(heads_per_rank) * c.qk_head_dim() * 2.0 +
                     static_cast<double>(kv_heads_per_rank(c, par.tp)) * c.qk_head_dim() * 2.0;
  double mlp = 0;
  if (c.moe_layer_count() < c.layers) mlp = 3.0 * static_cast<double>(c.intermediate) / tp;
  if (c.has_moe()) {
    const double i_moe = static_cast<double>(c.moe_intermediate) / (par.ep > 1 ? 1.0 : tp);
    mlp = std::max(mlp, 3.0 * static_cast<double>(c.experts_per_token) * i_moe +
                            3.0 * static_cast<double>(c.shared_experts * c.moe_intermediate) / tp);
  }
  const double per_token = (4.0 * static_cast<double>(c.hidden) + qkv + mlp) * act;
  const double logits = static_cast<double>(opt.max_num_seqs) * static_cast<double>(c.vocab) * 4.0 * 2.0;
  return T * per_token + logits;
}
}  // namespace

MemoryPlan plan_memory(const LlmConfig& c, const Parallelism& par, const GpuSpec& gpu, const MemoryOptions& opt) {
  validate_parallelism(c, par);
  if (opt.block_size <= 0) throw std::invalid_argument("the KV block size must be positive");
  if (opt.gpu_memory_utilization <= 0 || opt.gpu_memory_utilization > 1)
    throw std::invalid_argument("gpu_memory_utilization must be in (0, 1]");
  MemoryPlan m;
  m.block_size = opt.block_size;
  m.memory_gib = gpu.memory_gib;
  m.usable_gib = gpu.memory_gib * opt.gpu_memory_utilization;
  m.reserve_gib = opt.reserve_gib;
  m.activation_gib = activation_bytes(c, par, opt) / kGiB;
  const Dtype kv = opt.kv_dtype_set ? opt.kv_dtype : c.dtype;
  double min_blocks = -1;
  for (int st = 0; st < par.pp; ++st) {
    const double w = weight_bytes_per_gpu(c, par, st) / kGiB;
    const double per_token = kv_bytes_per_token_per_gpu(c, par, st, kv);
    m.weights_gib = std::max(m.weights_gib, w);
    m.kv_bytes_per_token = std::max(m.kv_bytes_per_token, per_token);
    const double left = m.usable_gib - w - m.activation_gib - m.reserve_gib;
    const std::string where =
        c.id + " on " + gpu.id + " at TP " + std::to_string(par.tp) + ", PP " + std::to_string(par.pp);
    if (left <= 0)
      throw std::runtime_error(where + " does not fit in memory: " + gib(w) + " of weights per GPU" +
                               (par.pp > 1 ? " (stage " + std::to_string(st) + ")" : "") + ", but only " +
                               gib(m.usable_gib) + " usable (" + gib(gpu.memory_gib) + " x gpu_memory_utilization " +
                               std::to_string(opt.gpu_memory_utilization).substr(0, 4) + ") minus " +
                               gib(m.activation_gib) + " of activations and " + gib(m.reserve_gib) +
                               " reserved; use more GPUs (--tp, --pp), a GPU with more memory, or a quantized model");
    if (per_token <= 0) continue;  // a stage of sliding-window layers only: its windows do not limit the cache
    const double blocks = std::floor(left * kGiB / (per_token * static_cast<double>(opt.block_size)));
    if (blocks < 1)
      throw std::runtime_error(where + " leaves no room for a single KV-cache block (" + gib(left) + " free per GPU)");
    if (min_blocks < 0 || blocks < min_blocks) {
      min_blocks = blocks;
      m.kv_gib = left;
    }
  }
  if (min_blocks < 0) throw std::runtime_error(c.id + " has no layer that caches every token");
  m.num_blocks = opt.num_blocks_override > 0 ? opt.num_blocks_override : static_cast<int64_t>(min_blocks);
  return m;
}

}  // namespace perfloom::sim
