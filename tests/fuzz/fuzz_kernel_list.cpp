// libFuzzer target: a kernel list CSV (storage/kernel_list_csv.h, predict --kernels), then the
// analytical prediction of its first valid rows on an H100: a row the reader accepts must be
// predicted as a finite, non-negative time or refused by name, never a crash or a NaN.
#include <cmath>
#include <string>

#include "fuzz_common.h"
#include "model/families/family_models.h"
#include "model/predictor.h"
#include "storage/kernel_list_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  static const GpuSpec& h100 = fuzz::gpus().get("h100-sxm");
  storage::KernelList list;
  try {
    list = storage::parse_kernel_list(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const std::runtime_error&) {
    return 0;  // the file as a whole is unusable: named in the message
  }
  int predicted = 0;
  for (const auto& row : list.rows) {
    if (!row.kernel || ++predicted > 8) continue;
    try {
      const Prediction p = predict_roofline(*row.kernel, h100);
      if (!(std::isfinite(p.pred_us) && p.pred_us >= 0)) __builtin_trap();
    } catch (const UnsupportedKernel&) {}
  }
  return 0;
}
