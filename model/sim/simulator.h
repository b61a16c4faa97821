#pragma once
// The serving simulator: a discrete-event loop in the style of vLLM v1's scheduler (DESIGN.md,
// idea 2). Each step it schedules, first-come first-served:
//   1. the running requests, in admission order: a decode token each, or the next chunk of a
//      prompt, within the token budget (max_num_batched_tokens); when the KV cache has no block for
//      one, the newest running request is preempted (its blocks freed, to be recomputed later) until
//      the block fits or the request itself was the one preempted;
//   2. if nothing was preempted, waiting requests in arrival order (preempted ones first), while
//      fewer than max_num_seqs run and budget is left, their cached prefix blocks taken for free
//      and the rest of their prompt (a chunk of it under chunked prefill) scheduled.
// The step's kernels are predicted (step.h, step_cost.h); when it ends, every request whose prompt
// is complete samples one token. Pipeline parallelism keeps up to PP steps in flight, a new one
// starting when the slowest stage is free; a request is in at most one of them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/gpu_spec.h"
#include "model/predictor.h"
#include "model/sim/llm_config.h"
#include "model/sim/engine.h"
#include "model/sim/memory.h"
#include "model/sim/step.h"
#include "model/sim/step_cost.h"
#include "model/sim/workload.h"

namespace perfloom::sim {

struct SchedulerConfig {
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  bool prefix_caching = true;  // vLLM v1's default
  bool cuda_graphs = true;     // vLLM's default (no --enforce-eager)
};

// A latency service-level objective: a request meets it when each of its latencies is within the
// bound (an unset bound is infinite). TPOT counts for requests of two or more output tokens.
struct Sla {
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0;  // 0: no bound
  bool set() const { return ttft_ms > 0 || tpot_ms > 0 || e2e_ms > 0; }
};
// "ttft=MS,tpot=MS,e2e=MS" (any of them); throws std::invalid_argument naming the part that is wrong.
Sla parse_sla(const std::string& spec);

// How requests are spread over an instance pool's engines (vLLM's data-parallel load balancer and
// the routers in front of engine replicas): in arrival order, or to the one with the fewest requests
// waiting and running.
enum class RouterPolicy { round_robin, least_loaded };
const char* router_policy_name(RouterPolicy p);
std::optional<RouterPolicy> parse_router_policy(const std::string& s);

// Where the model is served. Unified: `replicas` identical engine instances (data parallel), each of
// SimulationConfig::par. Disaggregated: a prefill pool and a decode pool, each of its own instances,
// parallelism and GPU; a prompt's KV cache goes from its prefill instance to a decode instance over a
// per-GPU link of kv_transfer_gb_s one way (0: NVLink, when both pools are of one GPU type that has it).
struct Deployment {
  int replicas = 1;
  RouterPolicy router = RouterPolicy::round_robin;
  bool disaggregated = false;
  int prefill_replicas = 1, decode_replicas = 1;
  Parallelism prefill_par, decode_par;
  const GpuSpec* prefill_gpu = nullptr;  // null: the simulation's GPU
  const GpuSpec* decode_gpu = nullptr;
  double kv_transfer_gb_s = 0;
};

// Speculative decoding: each decoding request's step verifies up to `tokens` drafted tokens (its
// last token and the drafts: tokens + 1 query positions) after the draft proposed them, one draft
// forward pass per token. Each draft token is accepted with probability `acceptance`, independently
// and only while the ones before it were: a step yields (1 - a^(k+1)) / (1 - a) tokens on average
// (k + 1 when a = 1). Requests emit that expectation exactly over their steps (a running credit), so
// a run is deterministic. The draft is `draft` (a model of its own, EAGLE-style heads or a small
// model), or with no draft config one decoder layer of the target and its head (DeepSeek's MTP
// layer, EAGLE's head).
struct Speculative {
  int tokens = 0;  // 0: off
  double acceptance = 0;
  std::optional<LlmConfig> draft;
  double expected_tokens_per_step(int drafted) const;
};

struct SimulationConfig {
  Parallelism par;
  SchedulerConfig sched;
  MemoryOptions memory;  // block size, utilization, KV dtype; its token limits follow `sched`
  // Which attention kernels the steps run; serving: what `engine` runs on each pool's GPU.
  AttentionImpl attention_impl = AttentionImpl::serving;
  ServingEngine engine = ServingEngine::vllm;
  Overheads overheads;
  ClockState clocks = ClockState::burst;  // sustained: each step at the power state its load holds
  bool record_steps = true;               // keep the per-step timeline
  Sla sla;                                // goodput: the requests that meet it
  Deployment deployment;
  Speculative speculative;
  // MoE under expert parallelism: the busiest GPU's routed tokens against the mean (>= 1).
  double expert_imbalance = 1.0;
  // Optional: the step-cost model (its memo of kernel predictions) to use for the unified or decode
  // pool, shared across simulations of one GPU (a planner runs many). Used only when it was built for
  // that GPU with these overheads and clocks; it must outlive the call.
  StepCostModel* shared_cost = nullptr;
  // The same for a disaggregated deployment's prefill pool.
  StepCostModel* shared_prefill_cost = nullptr;
  // Wide EP (ep > tp): the EP / TP data-parallel attention ranks of an expert group step in lockstep,
  // as SGLang's and vLLM's DP attention run them (an idle rank joins each step with a dummy batch,
  // and a step lasts as long as its slowest rank's); false: each rank steps on its own.
  bool dp_lockstep = true;
};

struct RequestRecord {
  int64_t id = 0;
  double arrival_s = 0, first_token_s = 0, finish_s = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens found in the prefix cache (summed over admissions)
  int preemptions = 0;
  int64_t session = -1;       // multi-turn session or closed-loop chain; -1: none
  bool measured = true;       // in the statistics (not warm-up or cool-down)
  int32_t instance = 0;       // the engine instance that decoded it
  double kv_transfer_ms = 0;  // disaggregated: from its first token to its KV's arrival in the decode pool
  double ttft_ms() const { return (first_token_s - arrival_s) * 1e3; }
  double e2e_ms() const { return (finish_s - arrival_s) * 1e3; }
  // Time per output token after the first; 0 for a single-token output.
  double tpot_ms() const {
    return output_tokens > 1 ? (finish_s - first_token_s) * 1e3 / static_cast<double>(output_tokens - 1) : 0.0;
  }
};

struct StepRecord {
  double start_s = 0, duration_ms = 0;
  int32_t instance = 0;  // which engine instance ran it (disaggregated: the prefill pool's come first)
  int32_t seqs = 0, prefill_seqs = 0, decode_seqs = 0;
  int64_t tokens = 0, prefill_tokens = 0;
  int64_t waiting = 0;  // requests waiting after scheduling
  int64_t kv_blocks_used = 0;
  int32_t preempted = 0;  // requests preempted while scheduling this step
  bool graphs = false;
};

struct LatencyStats {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
LatencyStats latency_stats(std::vector<double> values_ms);

struct SimulationResult {
  std::string model, gpu, workload;
  WorkloadKind kind = WorkloadKind::batch;
  Parallelism par;
  SchedulerConfig sched;  // as applied (batch workloads raise the limits)
  ClockState clocks = ClockState::burst;
  ServingEngine engine = ServingEngine::vllm;
  AttentionChoice attention;          // the attention kernels of each (decode) instance, and why
  AttentionChoice prefill_attention;  // disaggregated: of each prefill instance
  MemoryPlan memory;  // of each (decode) instance
  Deployment deployment;
  MemoryPlan prefill_memory;                        // disaggregated: of each prefill instance
  double kv_transfer_gb_s = 0, kv_transfer_us = 0;  // disaggregated: the link, and all transfers' time
  std::vector<RequestRecord> requests;              // in the workload's order
  std::vector<StepRecord> steps;
  std::array<double, kBreakdownCount> breakdown_us{};  // summed over all steps
  int64_t step_count = 0, preemptions = 0, cached_tokens = 0;
  double duration_s = 0;  // first arrival to last token
  // The statistics cover the measured requests; the throughput, the window from the first measured
  // arrival to the first cool-down arrival (without cool-down: the last token), open at its start: tokens
  // sampled by the steps that end in it, prompts whose first token comes in it, requests that finish in it.
  int64_t warmup = 0, cooldown = 0, measured = 0;
  double window_start_s = 0, window_end_s = 0;
  LatencyStats ttft_ms, tpot_ms, e2e_ms;
  double output_tokens_per_s = 0, total_tokens_per_s = 0, requests_per_s = 0;
  // With an SLA: measured requests that meet it, their share, and goodput = requests_per_s * attainment.
  Sla sla;
  int64_t sla_met = 0;
  double sla_attainment = 0, goodput_requests_per_s = 0;
  // batch workloads (CONTRACT.md): the prefill, the median decode step, all of it
  double prefill_ms = 0, median_decode_ms = 0, total_ms = 0;
  std::size_t predictions = 0, prediction_cache_hits = 0;
  Speculative speculative;  // as applied (the draft made concrete)
  // Speculative decoding: verify steps, tokens they emitted, the draft's time (in breakdown_us too).
  int64_t verify_steps = 0, verify_seqs = 0, verify_tokens = 0;
  double draft_us = 0;
  struct Sampled {
    double end_s = 0;
    int64_t tokens = 0;
  };
  std::vector<Sampled> sampled;  // per finished step: when it ended and how many tokens it sampled
};

// Throws std::invalid_argument / std::runtime_error with the reason (model too big, TP that does not
// divide the heads, a request longer than the whole KV cache, ...).
SimulationResult simulate(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor,
                          const Workload& workload, const SimulationConfig& config);

// The summary; with `details`, the per-request records and the per-step timeline too.
nlohmann::json simulation_to_json(const SimulationResult& r, bool details);

}  // namespace perfloom::sim
