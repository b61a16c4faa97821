// libFuzzer target: a calibration file (perfloom-calibration/1, model/calibration.h), as
// --calibration reads it, then the rates it gives the GPU it names.
#include <cmath>
#include <string_view>

#include "fuzz_common.h"
#include "model/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  try {
    const Calibration c = parse_calibration(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    if (const GpuSpec* gpu = fuzz::gpus().find(c.gpu_name)) {
      const AchievableFractions f = achievable_fractions(c, *gpu);
      (void)measured_rates(c, *gpu, f);
    }
  } catch (const CalibrationError&) {}
  return 0;
}
