#pragma once
// The rules of the what-if (issue 6): how a kernel measured on one GPU gets its time on another,
// from its measurement and the model's predictions on both GPUs. Pure functions of plain values;
// storage/trace_whatif.h reads a trace's kernels and the prediction cache and calls them, for the
// CLI (`perfloom predict --trace`) and the GUI alike.
//
// How each kernel's time on a target is obtained (the `method` of a row):
//   measured     the target is the source GPU and the kernel has a measurement: that measurement.
//   scaled       measured_source x pred_target / pred_source: the model's systematic error on this
//                kernel cancels in the ratio. Used for the families where the evaluation showed it
//                beats the direct prediction (whatif_family_rule(), `perfloom-whatif-eval`).
//   model        the model's direct prediction on the target (the families where that was better,
//                and every kernel without a measurement).
//   scaled-spec  the model cannot analyse the kernel (its op or shape is unknown to the trace):
//                measured_source x a ratio of datasheet figures, source over target: the dense
//                tensor peak of the kernel's dtype for gemm, attention and moe, the DRAM bandwidth
//                for norm, elementwise and unknown kernels, 1 for communication.
//                A norm or elementwise kernel with a launch grid is scaled by the DRAM pipe's
//                bandwidth and latency instead (bytes in flight from its resident threads: a small
//                grid keeps its time between GPUs of one latency; whatif_memory_kernel_us).
//                The interval spans what any bound could make of the measured time: scaled by the
//                tensor peak, the DRAM bandwidth and the clock ratio (a compute-, memory- or
//                latency-bound kernel), with the estimate inside; communication by the NVLink
//                ratio. Wide on purpose: without a shape nothing narrows it.
//   error        the kernel cannot run on the target as described (fp8 on Ampere), or it has
//                neither a measurement nor a shape the model can use: no number, the reason instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom {

enum class WhatIfMethod { measured, scaled, model, scaled_spec, error };
std::string_view whatif_method_name(WhatIfMethod m);

// The method for a kernel of family `f` that has a measurement and a prediction on both GPUs:
// `scaled` or `model`, chosen per family by the what-if evaluation.
WhatIfMethod whatif_family_rule(Family f);

// The `scaled-spec` factor: source over target datasheet figure for a kernel of `family` (dtype
// unknown: bf16). Nothing when a GPU lacks the figure (no tensor cores for the dtype).
std::optional<double> whatif_spec_ratio(Family family, std::optional<Dtype> dtype, const GpuSpec& source,
                                        const GpuSpec& target);

// A kernel of a trace as the what-if sees it.
struct WhatIfKernel {
  int64_t id = 0, seq = 0;  // the kernel's row and place in its trace (the store's; the rules do not read them)
  KernelDesc desc;
  Family family = Family::unknown;
  bool dtype_known = false, shape_known = false;
  std::optional<double> measured_us;  // on the source GPU
};

// A norm or elementwise kernel the model cannot analyse but whose launch grid the trace gives: its
// time on `target`, from `source_us` on `source`, scaled by the DRAM pipe's bandwidth and latency.
// Nothing for another family or a kernel without a known grid.
std::optional<double> whatif_memory_kernel_us(const WhatIfKernel& k, double source_us, const GpuSpec& source,
                                              const GpuSpec& target);

// The model's answer for one kernel on one GPU: what the rules combine, and what the trace's
// prediction cache holds.
struct WhatIfPrediction {
  double pred_us = 0, lo_us = 0, hi_us = 0, ceiling_us = 0;
  std::string bound;
  std::string error;  // non-empty: not predictable, the reason
};

// One kernel on one target GPU.
struct WhatIfCell {
  double pred_us = 0;
  std::optional<double> lo_us, hi_us, ceiling_us;
  std::string bound;
  WhatIfMethod method = WhatIfMethod::error;
  std::string error;  // set when method == error
};

// The kernel's time on `target` by the rules above. `on_target` is the model's prediction there;
// `on_source` the one on the source GPU, or null where there is none (the target is the source).
WhatIfCell whatif_cell(const WhatIfKernel& k, const GpuSpec& source, const GpuSpec& target,
                       const WhatIfPrediction& on_target, const WhatIfPrediction* on_source);

}  // namespace perfloom
