#pragma once
// The deployment planner behind `perfloom plan` (docs/cli.md): which GPUs and which deployment serve
// a model's workload under a latency SLA at the lowest cost, for every GPU of the database.
//
// With a target load it searches, per GPU type and TP degree, the fewest data-parallel replicas
// that meet the SLA: a replica behind a round-robin router of R sees 1/R of the arrivals, so one
// instance is simulated at load/R (binary search over R), and the cheapest candidates ("finalists")
// are then simulated whole, R instances behind a least-loaded router at the full load, which is
// what the ranking reports. Without a target load it sweeps a closed loop over concurrency per GPU
// type and TP degree and keeps the Pareto front of throughput per GPU against tokens/s per user
// (1 / TPOT), the chart hardware choices are made on; with --disaggregated also, per GPU type, one
// prefill instance and 1, 2 or 3 decode instances of each TP degree, a front of their own.
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"

namespace perfloom::plan {

// One percentile bound: "ttft_p90=500" (ms; a trailing "ms" is accepted). Percentiles p50, p90,
// p99, or mean.
struct PercentileBound {
  enum class Metric { ttft, tpot, e2e } metric = Metric::ttft;
  int percentile = 90;  // 50, 90, 99; 0: the mean
  double ms = 0;
  std::string name() const;  // "ttft_p90"
  double value(const sim::SimulationResult& r) const;
};
struct PlanSla {
  std::vector<PercentileBound> bounds;
};
// Throws std::invalid_argument naming the part that is wrong.
PlanSla parse_plan_sla(const std::string& spec);

// "20req/s" (requests per second) or "5000tok/s" (output tokens per second).
struct Load {
  enum class Kind { requests, output_tokens } kind = Kind::requests;
  double value = 0;
};
Load parse_load(const std::string& spec);

// $/GPU-hour by GPU id, with where each figure comes from.
struct Prices {
  struct Entry {
    double usd_per_gpu_hour = 0;
    std::string source;
  };
  std::map<std::string, Entry> by_gpu;
  const Entry* find(const std::string& gpu_id) const;
};
// The bundled table (resources/plan/prices.csv): typical on-demand prices, dated and sourced.
Prices bundled_prices();
// A CSV `gpu,usd_per_gpu_hour[,source]` (a header row optional); GPU ids or aliases are resolved by
// the caller. Throws std::invalid_argument naming the file and line.
Prices parse_prices_csv(const std::string& text, const std::string& label);

// The engine settings a deployment runs with, searched besides the GPU type, TP and replicas (vLLM's
// --quantization, --kv-cache-dtype, --enable-chunked-prefill, --max-num-seqs).
struct EngineSettings {
  std::string quantization;    // "": the model's weights; else a method as `simulate --quantization` takes it
  std::string kv_cache_dtype;  // "": the model's dtype; else as `simulate --kv-cache-dtype` takes it
  bool chunked_prefill = true;
  int64_t max_num_seqs = sim::SchedulerConfig{}.max_num_seqs;
  int64_t max_num_batched_tokens = sim::SchedulerConfig{}.max_num_batched_tokens;  // tokens per step at most
  // What differs from the engine's defaults: "fp8 weights, fp8 KV cache, max_num_seqs 64,
  // max_num_batched_tokens 2048, no chunked prefill"; "" when nothing does.
  std::string describe() const;
  bool operator==(const EngineSettings&) const = default;
  bool operator<(const EngineSettings& o) const;
};
// Every combination of the values listed, in the order given (an empty list: the default's value;
// "auto" and "" both mean the model's KV dtype, "" the model's weights).
std::vector<EngineSettings> engine_settings_grid(const std::vector<std::string>& quantizations,
                                                 const std::vector<std::string>& kv_cache_dtypes,
                                                 const std::vector<bool>& chunked_prefill,
                                                 const std::vector<int64_t>& max_num_seqs,
                                                 const std::vector<int64_t>& max_num_batched_tokens = {});

struct PlanOptions {
  std::string workload;  // poisson:... with a target load (its rate is replaced), closed:... without
  PlanSla sla;
  std::optional<Load> load;
  int max_gpus = 8;  // GPUs of one deployment at most
  std::vector<int> tp = {1, 2, 4, 8};
  std::vector<int> pp = {1};  // pipeline-parallel degrees, each with every TP degree (every pool's)
  double uncertainty = 0.2;    // relative error of a prediction, for the interval
  int finalists = 3;           // per GPU type, simulated whole
  sim::SimulationConfig base;  // scheduler, memory, overheads as `simulate` takes them
  // The engine settings searched, every one for every GPU type and TP degree (a GPU that cannot
  // serve one, an fp8 KV cache on an A100 say, is left out saying so). Empty: one, base's own.
  std::vector<EngineSettings> settings;
  // Also search disaggregated deployments: with a target load, a prefill pool and a decode pool of
  // any GPU types; without one, the Pareto sweep of prefill:decode instances 1:1, 1:2, 1:3, 2:1 and
  // 3:1 per GPU type.
  bool disaggregated = false;
  // Also search wide expert parallelism for MoE models (with a target load): G expert groups of R
  // data-parallel attention ranks of TP t, each group over t x R GPUs and stepping in lockstep.
  bool wide_ep = false;
  // The link a prompt's KV cache takes from a prefill to a decode instance, GB/s per GPU one way,
  // where the two pools are not one GPU type with NVLink (then half its NVLink figure): 50, one
  // 400 Gb/s NIC per GPU.
  double kv_transfer_gb_s = 50;
  // Asked before each simulation (the explorer's Cancel); once it returns true no further simulation
  // runs and plan_deployments throws PlanCancelled instead of returning a partial answer.
  std::function<bool()> cancelled;
};

struct PlanCancelled : std::runtime_error {
  PlanCancelled() : std::runtime_error("the plan was canceled") {}
};

struct Deployment {
  const GpuSpec* gpu = nullptr;  // disaggregated: the prefill pool's GPU type
  int tp = 1, replicas = 1;      // disaggregated: the prefill pool's TP and instances
  EngineSettings settings;
  int pp = 1;  // pipeline-parallel stages of an instance (disaggregated: of a prefill instance)
  // Wide EP (MoE models): the `replicas` instances are the data-parallel attention ranks of
  // `ep_groups` expert groups, each group's experts split over its tp x replicas / ep_groups GPUs
  // (a router in front of the groups). false: EP over each TP group.
  bool wide_ep = false;
  int ep_groups = 1;
  int ep() const { return wide_ep ? tp * replicas / ep_groups : tp; }  // GPUs one expert group spans
  // Disaggregated prefill/decode: the decode pool (null: one aggregated pool).
  const GpuSpec* decode_gpu = nullptr;
  int decode_tp = 1, decode_pp = 1, decode_replicas = 1;
  bool disaggregated() const { return decode_gpu != nullptr; }
  int gpus() const { return tp * pp * replicas + (decode_gpu ? decode_tp * decode_pp * decode_replicas : 0); }
  // "4 x h100-sxm (TP 2, 2 replicas)", "2 x h100-sxm (TP 1, PP 2)", "1 x h200 (TP 1; fp8 weights)", "1 x h100-sxm (TP 1) prefill +
  // 2 x h200 (TP 1, 2 replicas) decode"
  std::string describe() const;
};

struct Candidate {
  Deployment d;
  bool feasible = false;
  std::string why_not;  // when not feasible: memory, SLA (which bound, by how much), no price
  // The whole deployment's simulation at the target load (finalists), or one instance's at load/R.
  bool simulated_whole = false;
  double ttft_p90_ms = 0, tpot_p90_ms = 0, e2e_p90_ms = 0;
  std::vector<double> bound_values;  // per SLA bound, as measured
  double output_tokens_per_s = 0, requests_per_s = 0;
  double usd_per_hour = 0, usd_per_million_output_tokens = 0;
  bool priced = false;
  double headroom = 0;   // min over the bounds of (bound - value) / bound
  bool at_risk = false;  // the prediction's interval reaches past a bound
};

struct ParetoPoint {
  const GpuSpec* gpu = nullptr;  // disaggregated: both pools' GPU type
  int tp = 1, concurrency = 1;   // disaggregated: TP of every instance of both pools
  int pp = 1;                    // disaggregated: PP of every instance of both pools
  EngineSettings settings;
  // Disaggregated prefill/decode (with --disaggregated): `prefill_replicas` prefill instances and
  // `decode_replicas` decode instances (xPyD: 1P1D-1P3D, 2P1D, 3P1D); decode_replicas 0: one
  // aggregated instance. Its own curve per GPU type.
  int prefill_replicas = 1, decode_replicas = 0;
  bool disaggregated() const { return decode_replicas > 0; }
  int gpus() const { return tp * pp * (disaggregated() ? prefill_replicas + decode_replicas : 1); }
  Deployment deployment() const;  // of one replica
  std::string describe() const { return deployment().describe(); }
  double tokens_per_s_per_gpu = 0, tokens_per_s_per_user = 0;
  double ttft_p90_ms = 0, tpot_p90_ms = 0;
  bool meets_sla = true;
  double usd_per_million_output_tokens = 0;
  bool priced = false;
  bool on_front = false;  // not dominated by another point of the same GPU type
};

struct PlanResult {
  std::string model, workload;
  PlanSla sla;
  std::optional<Load> load;
  int max_gpus = 8;          // the options the plan ran with, for its report and a merge's checks
  double uncertainty = 0.2;
  std::vector<std::string> gpu_types;  // the GPU ids planned for, in the order given
  std::vector<EngineSettings> settings;  // the engine settings searched
  bool disaggregated = false;            // disaggregated deployments searched too
  bool wide_ep = false;                  // wide-EP deployments searched too
  std::string engine = "vllm";           // the serving engine simulated (options.base.engine)
  double kv_transfer_gb_s = 50;
  double rate = 0;                  // requests per second simulated (target load)
  std::vector<Candidate> ranked;    // feasible, cheapest first (unpriced after priced, by GPUs)
  std::vector<Candidate> rejected;  // with the reason
  std::vector<ParetoPoint> pareto;  // without a target load
  std::size_t simulations = 0;
  std::vector<std::string> notes;  // GPUs without a price, ...
};

// Throws std::invalid_argument for an unusable request (empty GPU list, bad workload kind, ...).
PlanResult plan_deployments(const sim::LlmConfig& model, const std::vector<const GpuSpec*>& gpus,
                            const KernelPredictor& predictor, const Prices& prices, const PlanOptions& options);

// Ranks feasible candidates as the planner does: priced first, then cost per hour, GPUs, headroom,
// and the deployment itself (GPU id, TP, replicas, settings) so that any order of the same candidates
// ranks alike.
void rank_candidates(std::vector<Candidate>& candidates);

// `key=value` set in a workload spec's body (replaced where the key is there, appended otherwise).
std::string with_key(const std::string& spec, const std::string& key, const std::string& value);

}  // namespace perfloom::plan
