#include "model/sim/step_report.h"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "model/sim/memory.h"

namespace perfloom::sim {

StepPrediction predict_step(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor,
                            const StepQuery& q, const Overheads& overheads) {
  if (q.batch <= 0) throw std::invalid_argument("--batch must be a positive number of sequences");
  if (q.phase == Phase::prefill && q.tokens <= 0)
    throw std::invalid_argument("a prefill step needs --tokens T (new tokens per sequence)");
  if (q.phase == Phase::decode && q.context <= 0)
    throw std::invalid_argument("a decode step needs --context C (cached tokens per sequence)");
  if (q.context < 0) throw std::invalid_argument("--context must not be negative");
  validate_parallelism(cfg, q.par);
  const int64_t new_tokens = q.phase == Phase::prefill ? q.tokens : 1;
  MemoryOptions mo;
  mo.max_num_seqs = q.batch;
  mo.max_num_batched_tokens = q.batch * new_tokens;
  if (q.kv_dtype) {
    mo.kv_dtype = *q.kv_dtype;
    mo.kv_dtype_set = true;
  }
  const MemoryPlan mem = plan_memory(cfg, q.par, gpu, mo);
  const int64_t per_seq = q.context + new_tokens;
  const int64_t blocks_needed = q.batch * ((per_seq + mem.block_size - 1) / mem.block_size);
  if (blocks_needed > mem.num_blocks)
    throw std::runtime_error("the batch needs " + std::to_string(blocks_needed * mem.block_size) +
                             " tokens of KV cache (" + std::to_string(q.batch) + " x " + std::to_string(per_seq) +
                             ", in blocks of " + std::to_string(mem.block_size) + "), but " + cfg.id + " on " + gpu.id +
                             " at TP " + std::to_string(q.par.tp) + " leaves room for " +
                             std::to_string(mem.kv_tokens()));
  std::vector<SeqWork> batch(static_cast<std::size_t>(q.batch), SeqWork{new_tokens, q.context});
  StepOptions opt;
  opt.fp8_tensor_cores = gpu.supports(Dtype::fp8e4m3);
  opt.fp4_tensor_cores = nvfp4_on_tensor_cores(gpu);
  if (q.kv_dtype) {
    opt.kv_dtype = *q.kv_dtype;
    opt.kv_dtype_set = true;
  }
  StepPrediction p;
  p.attention = resolve_attention(q.attention_impl, q.engine, gpu, cfg.head_dim, cfg.mla);
  opt.attention_impl = p.attention.impl;
  opt.fuse_qk_norm_rope = engine_fuses_qk_norm_rope(q.engine);
  p.plan = build_step(cfg, q.par, batch, opt);
  StepCostModel model(predictor, gpu, overheads, q.clocks);
  p.cost = model.cost(p.plan, q.graphs, true);
  return p;
}

nlohmann::json step_to_json(const LlmConfig& cfg, const GpuSpec& gpu, const StepQuery& q, const StepPrediction& p) {
  using nlohmann::json;
  json j;
  j["model"] = cfg.id;
  j["gpu"] = gpu.id;
  j["phase"] = q.phase == Phase::prefill ? "prefill" : "decode";
  j["batch"] = q.batch;
  if (q.phase == Phase::prefill) j["tokens"] = q.tokens;
  j["context"] = q.context;
  j["tp"] = q.par.tp;
  j["attention_impl"] = attention_impl_name(q.attention_impl);
  j["engine"] = serving_engine_name(q.engine);
  j["attention"] = {{"implementation", attention_impl_name(p.attention.impl)}, {"reason", p.attention.reason}};
  j["pp"] = q.par.pp;
  j["quantization"] = cfg.quant == WeightQuant::none ? "none" : std::string(weight_quant_name(cfg.quant));
  j["kv_cache_dtype"] = std::string(dtype_name(q.kv_dtype ? *q.kv_dtype : cfg.dtype));
  j["cuda_graphs"] = p.cost.graphs;
  j["latency_us"] = p.cost.latency_us;
  j["kernels_us"] = p.cost.kernels_us;
  j["launch_overhead_us"] = p.cost.launch_us;
  j["host_overhead_us"] = p.cost.host_us;
  j["clocks"] = clock_state_name(p.cost.clocks);
  if (p.cost.clocks == ClockState::sustained) {
    j["tensor_utilization"] = p.cost.tensor_utilization;
    j["sustained_slowdown"] = {{"compute", p.cost.power.compute}, {"memory", p.cost.power.memory}};
    j["sustained_origin"] = gpu.sustained ? gpu.sustained->origin() : "";
  }
  json b = json::object();
  for (int i = 0; i < kBreakdownCount; ++i) b[breakdown_name(i)] = p.cost.breakdown_us[static_cast<std::size_t>(i)];
  j["breakdown_us"] = b;
  int64_t launches = 0;
  json ks = json::array();
  for (const KernelTime& kt : p.cost.kernels) {
    const StepKernel& k = *kt.kernel;
    launches += k.count;
    json shape = json::object();
    for (auto col : shape_columns(k.kernel.op)) {
      if (k.kernel.op == Op::attn_prefill && !k.kernel.shape.seqlens.empty() && (col == "B" || col == "S")) continue;
      shape[std::string(col)] = shape_value(k.kernel.shape, col);
    }
    if (!k.kernel.shape.seqlens.empty()) shape["seqlens"] = k.kernel.shape.seqlens;
    json e = {{"label", k.label},
              {"op", std::string(op_name(k.kernel.op))},
              {"family", std::string(family_name(kt.family))},
              {"dtype", std::string(dtype_name(k.kernel.dtype))},
              {"shape", shape},
              {"count", k.count},
              {"stage", k.stage},
              {"us_each", kt.us_each},
              {"us_total", kt.us_each * static_cast<double>(k.count)}};
    if (k.weight_ratio != 1.0) e["weight_bytes_ratio"] = k.weight_ratio;
    ks.push_back(std::move(e));
  }
  j["kernel_launches"] = launches;
  j["kernels"] = std::move(ks);
  return j;
}

}  // namespace perfloom::sim
