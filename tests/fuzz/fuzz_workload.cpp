// libFuzzer target: the simulator's workloads (model/sim/workload.h): a --workload spec when the
// input's first byte is even, a trace CSV otherwise. A spec naming a file (trace:, lengths=) is
// left out: the target reads no files.
#include <string>

#include "model/sim/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  if (size == 0 || size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      if (text.find("trace") != std::string::npos || text.find("lengths") != std::string::npos) return 0;
      const sim::Workload w = sim::parse_workload(text);
      for (const auto& r : w.requests)
        if (r.input_tokens <= 0 || r.output_tokens <= 0 || !(r.arrival_s >= 0)) __builtin_trap();
    } else {
      for (const auto& r : sim::parse_trace_csv(text, "fuzz.csv"))
        if (r.input_tokens <= 0 || r.output_tokens <= 0 || !(r.arrival_s >= 0)) __builtin_trap();
    }
  } catch (const std::invalid_argument&) {}
  return 0;
}
