#pragma once
// What the scheduler, workload and deployment tests share: a predictor that says every kernel takes
// no time, and a host overhead of exactly 1 ms per step, so that every step lasts 1 ms and times are
// step counts; and a trace workload from inline CSV text.
#include <string>

#include "model/gpu_database.h"
#include "model/predictor.h"
#include "model/sim/simulator.h"

namespace perfloom::sim::testing {

class ZeroPredictor : public KernelPredictor {
 public:
  Prediction predict(const KernelDesc&, const GpuSpec&) const override { return {}; }
  std::string name() const override { return "zero"; }
};

inline const GpuDatabase& gpu_database() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

inline SimulationConfig one_ms_steps(int64_t kv_blocks = 0) {
  SimulationConfig sc;
  sc.overheads = {0.0, 0.0, 1000.0, 0.0, 512, 0.0};  // 1 ms of host time, nothing else
  sc.memory.num_blocks_override = kv_blocks;
  return sc;
}

inline Workload trace(const std::string& csv) {
  Workload w;
  w.kind = WorkloadKind::trace;
  w.spec = "trace:inline";
  w.requests = parse_trace_csv(csv, "inline");
  return w;
}

}  // namespace perfloom::sim::testing
