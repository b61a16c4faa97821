#pragma once
// A plan as JSON (what `perfloom plan --json` prints) and back, and plans of disjoint GPU types
// merged into the one a single run over all of them gives: `plan --shard K/N` runs the K-th of N
// shares of the GPU types (on N machines, or N jobs of a batch system), `plan --merge` joins them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gpu_database.h"
#include "model/plan/planner.h"

namespace perfloom::plan {

// The K-th (1-based) of N shares of a GPU list: every N-th GPU, from the K-th on.
struct Shard {
  int index = 1, count = 1;
};
// "2/4"; throws std::invalid_argument unless 1 <= K <= N <= 4096.
Shard parse_shard(const std::string& spec);
std::vector<const GpuSpec*> shard_of(const std::vector<const GpuSpec*>& gpus, Shard shard);

// `all_gpu_types`: the whole list a sharded run split (recorded so that a merge knows the order);
// empty for an unsharded plan.
nlohmann::json plan_to_json(const PlanResult& r, const Shard& shard = {},
                            const std::vector<std::string>& all_gpu_types = {});
// Reads what plan_to_json wrote; GPU ids are looked up in `gpus`. Throws std::invalid_argument
// naming `label` and the field that is missing or wrong.
struct PlanShard {
  PlanResult result;
  Shard shard;
  std::vector<std::string> all_gpu_types;
};
PlanShard plan_from_json(const nlohmann::json& j, const GpuDatabase& gpus, const std::string& label);
// The shards of one sharded run joined: every index 1..N once, the same model, workload, SLA, load,
// --max-gpus and --uncertainty (else std::invalid_argument naming the file that differs). Candidates
// ranked again (rank_candidates), left-out ones, Pareto points and notes in the GPU order of the run.
PlanResult merge_plans(const std::vector<PlanShard>& shards, const std::vector<std::string>& labels);

}  // namespace perfloom::plan
