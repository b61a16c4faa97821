#pragma once
// One forward step, predicted, as the `perfloom step` command and the GUI show it.
#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "model/sim/engine.h"
#include "model/sim/step.h"
#include "model/sim/step_cost.h"

namespace perfloom::sim {

enum class Phase { prefill, decode };

struct StepQuery {
  Phase phase = Phase::decode;
  int64_t batch = 1;
  int64_t tokens = 0;   // prefill: new tokens per sequence
  int64_t context = 0;  // decode: cached tokens per sequence; prefill: an already cached prefix
  Parallelism par;
  bool graphs = false;
  AttentionImpl attention_impl = AttentionImpl::serving;  // serving: what `engine` runs on the GPU
  ServingEngine engine = ServingEngine::vllm;
  ClockState clocks = ClockState::burst;  // sustained: the step repeated back to back (step_cost.h)
  std::optional<Dtype> kv_dtype;          // the KV cache's element type; unset: the model's
};

struct StepPrediction {
  AttentionChoice attention;  // the attention kernels the step runs, and why
  StepPlan plan;
  StepCost cost;  // kernels point into plan.kernels
};

// Validates the parallelism and that weights and the batch's KV cache fit the GPU (plan_memory),
// then predicts the step. Throws std::invalid_argument / std::runtime_error with the reason.
StepPrediction predict_step(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor,
                            const StepQuery& q, const Overheads& overheads = {});

// {"latency_us", "breakdown_us": {family: us}, "kernels": [...], ...}
nlohmann::json step_to_json(const LlmConfig& cfg, const GpuSpec& gpu, const StepQuery& q, const StepPrediction& p);

}  // namespace perfloom::sim
