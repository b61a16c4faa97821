// A kernel perfloom does not recognise is kept and still gets the generic treatment its launch
// arguments allow: its waves, and the launch floor as its ceiling.
#include <algorithm>

#include "model/families/family_models.h"

namespace perfloom {

Analysis analyze_unknown(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  Analysis a;
  a.family = Family::unknown;
  a.op = k.op;
  if (k.launch && k.launch->known()) {
    const int threads = static_cast<int>(std::max<int64_t>(1, k.launch->threads_per_cta()));
    a.plan = plan_uniform_ctas(
        static_cast<double>(k.launch->ctas()),
        occupancy(threads, k.launch->registers_per_thread, static_cast<double>(k.launch->shared_memory_bytes), hw),
        threads, hw);
  } else {
    a.plan = plan_uniform_ctas(1, 1, 128, hw);
  }
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
