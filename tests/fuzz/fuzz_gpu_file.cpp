// libFuzzer target: a GPU file (perfloom-gpu/1, model/gpu_database.h), as --gpus-dir reads each.
#include <cmath>
#include <string_view>

#include "model/gpu_database.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  try {
    const GpuSpec g = parse_gpu_spec(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    // What validation let through must be usable: positive, finite rates.
    if (!(g.sm_count > 0) || !(std::isfinite(g.memory_bandwidth_gb_s) && g.memory_bandwidth_gb_s > 0)) __builtin_trap();
  } catch (const GpuSpecError&) {}
  return 0;
}
