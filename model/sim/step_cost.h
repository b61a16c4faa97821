#pragma once
// The time of a step: every kernel predicted by a KernelPredictor (memoised by op, dtype, shape
// and GPU), plus launch and host overheads.
//
// Overheads (constants below; first guesses unless said measured):
// - Eager mode: the host issues each kernel through PyTorch's dispatcher and cudaLaunchKernel,
//   about 4 us per launch on a server CPU (PyTorch eager per-op overhead is commonly measured at
//   3-10 us; 4 us is the cudaLaunchKernel-plus-dispatch floor of a compiled vLLM model). When the
//   GPU runs kernels faster than the host issues them, the host sets the pace: a stage takes
//   max(GPU time, kernels x 4 us). This is the steady state of the launch queue; the host's lead
//   over the GPU is never more than that.
// - CUDA graphs: one graph launch per stage and step (10 us, cudaGraphLaunch plus the copies into
//   the graph's static input buffers); kernels then run back to back. vLLM captures graphs up to
//   512 tokens per step (its default max capture size); larger steps run eager.
// - Between two kernels the GPU spends 0.38 us (the drain of one, the start of the next; counted
//   with the launches): measured inside CUDA graphs of 50 and 400 chained kernels against the
//   kernels' CUPTI durations, median over five kernels of 1-15 us, 0.37 us on an H100 SXM and 0.40
//   on an H200 (tools/step_check/graph_gap_probe.py, data/step/graph_gap_*.json). A
//   Llama-3-8B decode step runs about 420 kernels: about 160 us.
// - Host work per step (scheduling, preparing inputs and block tables, output processing): 250 us
//   plus 3 us per scheduled sequence. First guesses in line with vLLM v1 profiles, where the CPU
//   side of a decode step is a few hundred microseconds for small batches and around 1 ms at 256
//   sequences.
//
// Clocks: the kernel models predict kernels as short measurements run them, at the boost clock
// ("burst"). With ClockState::sustained the step runs in the steady state of a GPU kept busy step
// after step: the step's tensor utilisation (its tensor work at the datasheet peak over its burst
// duration, host time included; per pipeline stage, each on its own GPU) picks the slowdowns of the
// GPU's sustained-power curve (model/power.h, from its calibration), and each kernel is slowed by
// memory + share x (compute - memory), `share` being the part of the kernel bound by SM-clocked
// pipes rather than DRAM (from its analysis). Communication kernels keep their time. Given the GPU's
// PowerHistory (a simulation), the load is lagged across steps and idle gaps as model/power.h says;
// without one (`perfloom step`), the step is repeated back to back and runs at its steady state.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/gpu_spec.h"
#include "model/predictor.h"
#include "model/sim/step.h"

namespace perfloom::sim {

struct Overheads {
  double eager_launch_us = 4.0;
  double graph_launch_us = 10.0;
  double host_step_us = 250.0;
  double host_per_seq_us = 3.0;
  int64_t max_graph_tokens = 512;
  double kernel_gap_us = 0.38;  // between two kernels of a stage, graphs or not
  bool operator==(const Overheads&) const = default;
};

enum class ClockState { burst, sustained };
std::optional<ClockState> parse_clock_state(std::string_view s);  // "burst", "sustained"
const char* clock_state_name(ClockState c);

// A kernel's tensor work at the GPU's dense datasheet peak for its dtype, in µs: the unit of the
// sustained-power curve's utilisation (model/power.h); 0 for a kernel without tensor work.
double tensor_us_at_peak(const Analysis& a, const GpuSpec& gpu, Dtype dtype);

// Breakdown columns: the six kernel families, then the launch overhead and host time.
inline constexpr int kBreakdownCount = 8;
inline constexpr int kBreakdownLaunch = 6;
inline constexpr int kBreakdownHost = 7;
const char* breakdown_name(int i);  // "gemm", ..., "communication", "launch", "host"

struct KernelTime {
  const StepKernel* kernel = nullptr;  // into the plan the cost was computed for
  double us_each = 0;
  Family family = Family::unknown;
};

struct StepCost {
  double latency_us = 0;  // the step, start to last token: stages + overheads
  double kernels_us = 0;  // predicted kernels, communication included, all stages
  double launch_us = 0;   // eager launches the GPU waited for, or graph launches
  double host_us = 0;
  double interval_us = 0;  // pipeline parallel: the next step can start this much later
  bool graphs = false;     // ran under CUDA graphs
  ClockState clocks = ClockState::burst;
  // Sustained clocks: the busiest stage's tensor utilisation at burst speed (lagged, given a history)
  // and the slowdowns it got.
  double tensor_utilization = 0;
  PowerFactors power;
  std::array<double, kBreakdownCount> breakdown_us{};
  std::vector<KernelTime> kernels;  // filled when asked for
};

class StepCostModel {
 public:
  // The predictor and GPU must outlive the model. Not thread-safe: one per simulation.
  // Sustained clocks need the GPU's sustained-power curve (GpuSpec::sustained): std::invalid_argument
  // says how to get one otherwise.
  StepCostModel(const KernelPredictor& predictor, const GpuSpec& gpu, Overheads overheads = {},
                ClockState clocks = ClockState::burst);

  // `graphs`: run under CUDA graphs when the step is small enough to have been captured.
  // `history`, `start_us`: sustained clocks across steps; the step starts at `start_us` (the same
  // clock as history->end_us) and the history is advanced past it. Ignored at burst clocks.
  StepCost cost(const StepPlan& plan, bool graphs, bool with_kernels = false, PowerHistory* history = nullptr,
                double start_us = 0);

  const GpuSpec& gpu() const { return gpu_; }
  const Overheads& overheads() const { return overheads_; }
  ClockState clocks() const { return clocks_; }
  std::size_t cache_size() const { return cache_.size(); }
  std::size_t cache_hits() const { return hits_; }
  std::size_t cache_misses() const { return misses_; }

 private:
  struct Key {
    std::array<int64_t, 23> v{};
    std::vector<int64_t> seqlens;
    bool operator==(const Key& o) const { return v == o.v && seqlens == o.seqlens; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  struct Memo {
    double us = 0;           // burst time
    double tensor_us = 0;    // its tensor work at the datasheet peak
    double clock_share = 1;  // the part bound by SM-clocked pipes (1) rather than DRAM (0)
  };
  // One kernel's prediction at burst clocks, memoised. Throws UnsupportedKernel from the predictor.
  const Memo& entry(const StepKernel& k);
  Memo predict_uncached(const StepKernel& k) const;

  const KernelPredictor& predictor_;
  const GpuSpec& gpu_;
  Overheads overheads_;
  ClockState clocks_;
  std::unordered_map<Key, Memo, KeyHash> cache_;
  std::size_t hits_ = 0, misses_ = 0;
};

}  // namespace perfloom::sim
