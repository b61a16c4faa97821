#include "model/sim/step_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace perfloom::sim {

const char* breakdown_name(int i) {
  static const char* names[kBreakdownCount] = {"gemm", "attention", "norm", "elementwise", "moe", "communication",
                                               "launch", "host"};
  return i >= 0 && i < kBreakdownCount ? names[i] : "?";
}

StepCostModel::StepCostModel(const KernelPredictor& predictor, const GpuSpec& gpu, Overheads overheads)
    : predictor_(predictor), gpu_(gpu), overheads_(overheads) {
  cache_.reserve(4096);
}

std::size_t StepCostModel::KeyHash::operator()(const Key& k) const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    h = (h ^ x) * 1099511628211ull;
  };
  for (int64_t x : k.v) mix(static_cast<uint64_t>(x));
  for (int64_t x : k.seqlens) mix(static_cast<uint64_t>(x));
  return static_cast<std::size_t>(h);
}

// Weight-only quantized GEMMs (int4/mxfp4, or fp8 without fp8 tensor cores) read 4-bit or 8-bit
// weights and compute in 16 bits. Their time is the larger of: the 16-bit GEMM whose weight matrix
// has the same bytes (N, or the MoE's I, scaled by the byte ratio: the memory-bound side, right for
// decode), and the full 16-bit GEMM's time in proportion of its useful tensor work to its ceiling
// (the compute-bound side, right for prefill). The dequantisation work in the main loop is ignored.
double StepCostModel::predict_uncached(const StepKernel& k) const {
  if (k.weight_ratio == 1.0) return predictor_.predict(k.kernel, gpu_).pred_us;
  const Prediction full = predictor_.predict(k.kernel, gpu_);
  KernelDesc q = k.kernel;
  int64_t* scaled = k.kernel.op == Op::moe ? &q.shape.I : &q.shape.N;
  *scaled = std::max<int64_t>(1, std::llround(static_cast<double>(*scaled) * k.weight_ratio));
  const Prediction mem = predictor_.predict(q, gpu_);
  // The useful (unpadded) tensor work at the GPU's peak, scaled by the 16-bit GEMM's predicted
  // efficiency: about the whole 16-bit time for a large M, almost nothing for a decode's M.
  const double peak = gpu_.peak_flops_per_s(k.kernel.dtype).value_or(gpu_.fp32_flops_per_s());
  const double tensor_us = full.analysis.useful_flops / peak * 1e6;
  const double compute_us = full.ceiling_us > 0 ? full.pred_us * std::min(1.0, tensor_us / full.ceiling_us) : 0.0;
  return std::max(mem.pred_us, compute_us);
}

double StepCostModel::kernel_us(const StepKernel& k) {
  Key key;
  const Shape& s = k.kernel.shape;
  key.v = {static_cast<int64_t>(k.kernel.op),
           static_cast<int64_t>(k.kernel.dtype),
           std::bit_cast<int64_t>(k.weight_ratio),
           s.M, s.N, s.K, s.Bt, s.B, s.S, s.L, s.Hq, s.Hkv, s.D, s.T, s.H, s.I, s.V, s.E, s.topk, s.bytes, s.ranks,
           s.causal ? 1 : 0, k.kernel.act_quant ? 1 : 0};
  key.seqlens = s.seqlens;
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  const double us = predict_uncached(k);
  cache_.emplace(std::move(key), us);
  return us;
}

StepCost StepCostModel::cost(const StepPlan& plan, bool graphs, bool with_kernels) {
  StepCost c;
  c.graphs = graphs && plan.tokens <= overheads_.max_graph_tokens;
  std::vector<double> stage_gpu(static_cast<std::size_t>(plan.stages), 0.0);
  std::vector<double> stage_launches(static_cast<std::size_t>(plan.stages), 0.0);
  if (with_kernels) c.kernels.reserve(plan.kernels.size());
  for (const StepKernel& k : plan.kernels) {
    const double us = kernel_us(k);
    const double total = us * static_cast<double>(k.count);
    const Family f = family_of(k.kernel.op);
    stage_gpu[static_cast<std::size_t>(k.stage)] += total;
    stage_launches[static_cast<std::size_t>(k.stage)] += static_cast<double>(k.count);
    const int col = static_cast<int>(f);
    if (col < kBreakdownLaunch) c.breakdown_us[static_cast<std::size_t>(col)] += total;
    c.kernels_us += total;
    if (with_kernels) c.kernels.push_back({&k, us, f});
  }
  double slowest = 0;
  for (int st = 0; st < plan.stages; ++st) {
    const double gpu = stage_gpu[static_cast<std::size_t>(st)];
    const double stage = c.graphs ? gpu + overheads_.graph_launch_us
                                  : std::max(gpu, stage_launches[static_cast<std::size_t>(st)] * overheads_.eager_launch_us);
    c.launch_us += stage - gpu;
    c.latency_us += stage;
    slowest = std::max(slowest, stage);
  }
  c.host_us = overheads_.host_step_us + overheads_.host_per_seq_us * static_cast<double>(plan.seqs);
  c.latency_us += c.host_us;
  c.interval_us = slowest + c.host_us;
  c.breakdown_us[kBreakdownLaunch] = c.launch_us;
  c.breakdown_us[kBreakdownHost] = c.host_us;
  return c;
}

}  // namespace perfloom::sim
