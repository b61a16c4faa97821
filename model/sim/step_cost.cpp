#include "model/sim/step_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace perfloom::sim {

const char* breakdown_name(int i) {
  static const char* names[kBreakdownCount] = {"gemm", "attention",     "norm",   "elementwise",
                                               "moe",  "communication", "launch", "host"};
  return i >= 0 && i < kBreakdownCount ? names[i] : "?";
}

std::optional<ClockState> parse_clock_state(std::string_view s) {
  if (s == "burst") return ClockState::burst;
  if (s == "sustained") return ClockState::sustained;
  return std::nullopt;
}

double tensor_us_at_peak(const Analysis& a, const GpuSpec& gpu, Dtype dtype) {
  if (a.cycles_balanced[static_cast<std::size_t>(Pipe::tensor)] <= 0) return 0;
  const auto peak = gpu.peak_flops_per_s(dtype);
  return peak ? a.useful_flops / *peak * 1e6 : 0;
}

const char* clock_state_name(ClockState c) { return c == ClockState::sustained ? "sustained" : "burst"; }

StepCostModel::StepCostModel(const KernelPredictor& predictor, const GpuSpec& gpu, Overheads overheads,
                             ClockState clocks)
    : predictor_(predictor), gpu_(gpu), overheads_(overheads), clocks_(clocks) {
  if (clocks_ == ClockState::sustained && !gpu_.sustained)
    throw std::invalid_argument("sustained clocks need a sustained-power curve of '" + gpu_.id +
                                "': its GPU file gives no TDP or no 16-bit tensor peak to scale a measured one by, "
                                "and its calibration has none (run tools/power/power_probe.py on that GPU, merge "
                                "it into its calibration with tools/power/merge_into_calibration.py and pass "
                                "--calibration FILE); or use burst clocks");
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
StepCostModel::Memo StepCostModel::predict_uncached(const StepKernel& k) const {
  const Prediction full = predictor_.predict(k.kernel, gpu_);
  Memo m;
  m.clock_share = clock_bound_share(full.analysis);
  m.tensor_us = tensor_us_at_peak(full.analysis, gpu_, k.kernel.dtype);
  if (k.weight_ratio == 1.0) {
    m.us = full.pred_us;
    return m;
  }
  KernelDesc q = k.kernel;
  int64_t* scaled = k.kernel.op == Op::moe ? &q.shape.I : &q.shape.N;
  *scaled = std::max<int64_t>(1, std::llround(static_cast<double>(*scaled) * k.weight_ratio));
  const Prediction mem = predictor_.predict(q, gpu_);
  // The useful (unpadded) tensor work at the GPU's peak, scaled by the 16-bit GEMM's predicted
  // efficiency: about the whole 16-bit time for a large M, almost nothing for a decode's M.
  const double peak = gpu_.peak_flops_per_s(k.kernel.dtype).value_or(gpu_.fp32_flops_per_s());
  const double tensor_us = full.analysis.useful_flops / peak * 1e6;
  const double compute_us = full.ceiling_us > 0 ? full.pred_us * std::min(1.0, tensor_us / full.ceiling_us) : 0.0;
  m.us = std::max(mem.pred_us, compute_us);
  if (mem.pred_us > compute_us) m.clock_share = clock_bound_share(mem.analysis);
  return m;
}

const StepCostModel::Memo& StepCostModel::entry(const StepKernel& k) {
  Key key;
  const Shape& s = k.kernel.shape;
  key.v = {static_cast<int64_t>(k.kernel.op),
           static_cast<int64_t>(k.kernel.dtype),
           std::bit_cast<int64_t>(k.weight_ratio),
           s.M,
           s.N,
           s.K,
           s.Bt,
           s.B,
           s.S,
           s.L,
           s.Hq,
           s.Hkv,
           s.D,
           s.T,
           s.H,
           s.I,
           s.V,
           s.E,
           s.topk,
           s.bytes,
           s.ranks,
           s.causal ? 1 : 0,
           k.kernel.act_quant ? 1 : 0};
  key.seqlens = s.seqlens;
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  return cache_.emplace(std::move(key), predict_uncached(k)).first->second;
}

StepCost StepCostModel::cost(const StepPlan& plan, bool graphs, bool with_kernels, PowerHistory* history,
                             double start_us) {
  StepCost c;
  c.graphs = graphs && plan.tokens <= overheads_.max_graph_tokens;
  c.clocks = clocks_;
  c.host_us = overheads_.host_step_us + overheads_.host_per_seq_us * static_cast<double>(plan.seqs);
  const auto stages = static_cast<std::size_t>(plan.stages);
  std::vector<const Memo*> memo;
  memo.reserve(plan.kernels.size());
  for (const StepKernel& k : plan.kernels) memo.push_back(&entry(k));  // map nodes do not move
  // The duration of a stage from its kernels' time and launch count.
  auto stage_us = [&](double gpu, double launches) {
    const double busy = gpu + launches * overheads_.kernel_gap_us;
    return c.graphs ? busy + overheads_.graph_launch_us : std::max(busy, launches * overheads_.eager_launch_us);
  };
  std::vector<PowerFactors> factors(stages);
  const bool lagged = clocks_ == ClockState::sustained && history && gpu_.sustained->has_response();
  double steady = 0, idle_us = 0;  // the busiest stage's steady load; the idle time before the step
  if (clocks_ == ClockState::sustained) {
    std::vector<double> gpu(stages, 0.0), launches(stages, 0.0), tensor(stages, 0.0);
    for (std::size_t i = 0; i < plan.kernels.size(); ++i) {
      const auto st = static_cast<std::size_t>(plan.kernels[i].stage);
      const auto n = static_cast<double>(plan.kernels[i].count);
      gpu[st] += memo[i]->us * n;
      launches[st] += n;
      tensor[st] += memo[i]->tensor_us * n;
    }
    double interval = 0;  // each stage's GPU repeats its part once per this long
    for (std::size_t st = 0; st < stages; ++st) interval = std::max(interval, stage_us(gpu[st], launches[st]));
    interval += c.host_us;
    for (std::size_t st = 0; st < stages; ++st) steady = std::max(steady, interval > 0 ? tensor[st] / interval : 0.0);
    // Lagged: every stage's load scaled by the busiest stage's mean lagged load over its steady one.
    double scale = 1;
    if (lagged) {
      idle_us = history->started ? std::max(0.0, start_us - history->end_us) : std::numeric_limits<double>::infinity();
      const double mean = gpu_.sustained->lag(history->utilization, idle_us, steady, interval).mean;
      scale = steady > 0 ? mean / steady : 0.0;
    }
    for (std::size_t st = 0; st < stages; ++st) {
      const double u = (interval > 0 ? tensor[st] / interval : 0.0) * scale;
      factors[st] = gpu_.sustained->at(u);
      if (u >= c.tensor_utilization) {
        c.tensor_utilization = u;
        c.power = factors[st];
      }
    }
  }
  std::vector<double> stage_gpu(stages, 0.0);
  std::vector<double> stage_launches(stages, 0.0);
  if (with_kernels) c.kernels.reserve(plan.kernels.size());
  for (std::size_t i = 0; i < plan.kernels.size(); ++i) {
    const StepKernel& k = plan.kernels[i];
    const Family f = family_of(k.kernel.op);
    const PowerFactors& pf = factors[static_cast<std::size_t>(k.stage)];
    const double slowdown = f == Family::communication ? 1.0 : sustained_slowdown(pf, memo[i]->clock_share);
    const double us = memo[i]->us * slowdown;
    const double total = us * static_cast<double>(k.count);
    stage_gpu[static_cast<std::size_t>(k.stage)] += total;
    stage_launches[static_cast<std::size_t>(k.stage)] += static_cast<double>(k.count);
    const int col = static_cast<int>(f);
    if (col < kBreakdownLaunch) c.breakdown_us[static_cast<std::size_t>(col)] += total;
    c.kernels_us += total;
    if (with_kernels) c.kernels.push_back({&k, us, f});
  }
  double slowest = 0;
  for (std::size_t st = 0; st < stages; ++st) {
    const double stage = stage_us(stage_gpu[st], stage_launches[st]);
    c.launch_us += stage - stage_gpu[st];
    c.latency_us += stage;
    slowest = std::max(slowest, stage);
  }
  c.latency_us += c.host_us;
  c.interval_us = slowest + c.host_us;
  if (lagged) {  // the load carried into the next step, over the step as it ran
    history->utilization = gpu_.sustained->lag(history->utilization, idle_us, steady, c.interval_us).at_end;
    history->end_us = start_us + c.interval_us;
    history->started = true;
  }
  c.breakdown_us[kBreakdownLaunch] = c.launch_us;
  c.breakdown_us[kBreakdownHost] = c.host_us;
  return c;
}

}  // namespace perfloom::sim
