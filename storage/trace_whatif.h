#pragma once
// What-if for a profiled trace (issue 6): every kernel of an imported source, measured on the GPU
// the trace was recorded on, predicted on other GPUs, with totals per family and for the whole
// trace. The CLI (`perfloom predict --trace`) and the GUI call this one function (DESIGN.md).
//
// How each kernel's time on a target is obtained (the `method` of a row):
//   measured     the target is the source GPU and the kernel has a measurement: that measurement.
//   scaled       measured_source x pred_target / pred_source: the model's systematic error on this
//                kernel cancels in the ratio. Used for the families where the evaluation showed it
//                beats the direct prediction (whatif_family_rule(); bench/results/whatif_eval.md).
//   model        the model's direct prediction on the target (the families where that was better,
//                and every kernel without a measurement).
//   scaled-spec  the model cannot analyse the kernel (its op or shape is unknown to the trace):
//                measured_source x a ratio of datasheet figures, source over target: the dense
//                tensor peak of the kernel's dtype for gemm, attention and moe, the DRAM bandwidth
//                for norm, elementwise and unknown kernels, 1 for communication. No interval.
//                A norm or elementwise kernel with a launch grid is scaled by the DRAM pipe's
//                bandwidth and latency instead (bytes in flight from its resident threads: a small
//                grid keeps its time between GPUs of one latency; trace_whatif.cpp memory_kernel_us).
//   error        the kernel cannot run on the target as described (fp8 on Ampere), or it has
//                neither a measurement nor a shape the model can use: no number, the reason instead.
//
// Predictions are cached in the database per (source, GPU, model version) through
// KernelStore::put_predictions: what is cached is the model's raw prediction of each kernel on that
// GPU (the source GPU too, for `scaled`), so re-opening a trace costs a read. Kernels that are the
// same (name, op, dtype, shape, tile, launch) are predicted and cached once, under the id of the
// first of them. A kernel the model cannot predict on a GPU is cached with pred_us 0 and bound
// "error: REASON".
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/predictor.h"
#include "storage/kernel_store.h"

namespace perfloom::storage {

enum class WhatIfMethod { measured, scaled, model, scaled_spec, error };
std::string_view whatif_method_name(WhatIfMethod m);

// The method for a kernel of family `f` that has a measurement and a prediction on both GPUs:
// `scaled` or `model`, chosen per family by bench/results/whatif_eval.md.
WhatIfMethod whatif_family_rule(Family f);

// The cache key of a predictor: "xgboost/<training data hash>/f<feature version>" for the learned
// models (from their manifest), the predictor's name otherwise ("roofline").
std::string predictor_version(const KernelPredictor& predictor);

// One kernel on one target GPU.
struct WhatIfCell {
  double pred_us = 0;
  std::optional<double> lo_us, hi_us, ceiling_us;
  std::string bound;
  WhatIfMethod method = WhatIfMethod::error;
  std::string error;  // set when method == error
};

struct WhatIfTotal {
  Family family = Family::unknown;  // ignored for the whole-trace total
  std::size_t kernels = 0;          // kernels with a number on this target
  std::size_t errors = 0;           // kernels without one
  double measured_us = 0;           // source measurements of the kernels with a number here
  double pred_us = 0;
  double lo_us = 0, hi_us = 0;      // sums of the rows' intervals; a row without one counts pred_us
  std::map<std::string, std::size_t> methods;  // method name -> kernels
};

struct WhatIfTarget {
  const GpuSpec* gpu = nullptr;
  std::vector<WhatIfCell> cells;    // one per kernel, in kernel order
  std::map<Family, WhatIfTotal> by_family;
  WhatIfTotal total;
  bool from_cache = false;          // the model's predictions were read from the database
  std::size_t predicted_kernels = 0;  // distinct kernels the model predicted in this run (0 when cached)
};

struct WhatIfKernel {
  int64_t id = 0, seq = 0;
  KernelDesc desc;
  Family family = Family::unknown;
  bool dtype_known = false, shape_known = false;
  std::optional<double> measured_us;  // on the source GPU
};

struct TraceWhatIf {
  SourceRecord source;
  const GpuSpec* source_gpu = nullptr;
  std::string model_version;
  std::vector<WhatIfKernel> kernels;
  std::size_t distinct_kernels = 0;    // kernels that differ in name, op, dtype, shape, tile or launch
  std::vector<WhatIfTarget> targets;
  bool source_from_cache = false;      // the source GPU's predictions (for `scaled`) came from the cache
  std::size_t source_predicted_kernels = 0;
};

struct WhatIfOptions {
  bool use_cache = true;    // read and write the prediction cache
  const std::atomic<bool>* cancel = nullptr;  // set -> std::runtime_error("cancelled")
  std::function<void(const std::string& stage)> progress;
};

// Reads the source's kernels and predicts them on `targets`. `source_gpu` is the GPU the trace was
// measured on (the source's own GPU unless the caller knows better). Throws std::invalid_argument
// for a source id that is not in the database.
TraceWhatIf run_trace_whatif(KernelStore& store, int64_t source_id, const GpuSpec& source_gpu,
                             const std::vector<const GpuSpec*>& targets, const KernelPredictor& predictor,
                             const WhatIfOptions& options = {});

// The `scaled-spec` factor: source over target datasheet figure for a kernel of `family` (dtype
// unknown: bf16). Nothing when a GPU lacks the figure (no tensor cores for the dtype).
std::optional<double> whatif_spec_ratio(Family family, std::optional<Dtype> dtype, const GpuSpec& source,
                                        const GpuSpec& target);

// "M=512,N=3072,K=2048": the shape columns of the op; empty when the op is unknown.
std::string readable_shape(const KernelDesc& k, bool shape_known);

}  // namespace perfloom::storage
