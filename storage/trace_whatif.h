#pragma once
// What-if for a profiled trace (issue 6): every kernel of an imported source, measured on the GPU
// the trace was recorded on, predicted on other GPUs, with totals per family and for the whole
// trace. The CLI (`perfloom predict --trace`) and the GUI call this one function (DESIGN.md).
//
// How each kernel's time on a target is obtained (measured, scaled, model, scaled-spec, error) is
// the what-if's rules, model/whatif_rules.h; this file reads the kernels, predicts or reads the cache,
// and applies them.
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
#include "model/whatif_rules.h"
#include "storage/kernel_store.h"

namespace perfloom::storage {

// The rules and the values they work on, under the names the store's callers know them by.
using perfloom::whatif_cell;
using perfloom::whatif_family_rule;
using perfloom::whatif_method_name;
using perfloom::whatif_spec_ratio;
using perfloom::WhatIfCell;
using perfloom::WhatIfKernel;
using perfloom::WhatIfMethod;

// The cache key of a predictor: KernelPredictor::version() ("xgboost/<models hash>/f<feature
// version>" for the learned models, "roofline" for the baseline).
std::string predictor_version(const KernelPredictor& predictor);

struct WhatIfTotal {
  Family family = Family::unknown;  // ignored for the whole-trace total
  std::size_t kernels = 0;          // kernels with a number on this target
  std::size_t errors = 0;           // kernels without one
  double measured_us = 0;           // source measurements of the kernels with a number here
  double pred_us = 0;
  double lo_us = 0, hi_us = 0;                 // sums of the rows' intervals; a row without one counts pred_us
  std::map<std::string, std::size_t> methods;  // method name -> kernels
};

struct WhatIfTarget {
  const GpuSpec* gpu = nullptr;
  std::vector<WhatIfCell> cells;  // one per kernel, in kernel order
  std::map<Family, WhatIfTotal> by_family;
  WhatIfTotal total;
  bool from_cache = false;            // the model's predictions were read from the database
  std::size_t predicted_kernels = 0;  // distinct kernels the model predicted in this run (0 when cached)
};

struct TraceWhatIf {
  SourceRecord source;
  const GpuSpec* source_gpu = nullptr;
  std::string model_version;
  std::vector<WhatIfKernel> kernels;
  std::size_t distinct_kernels = 0;  // kernels that differ in name, op, dtype, shape, tile or launch
  std::vector<WhatIfTarget> targets;
  bool source_from_cache = false;  // the source GPU's predictions (for `scaled`) came from the cache
  std::size_t source_predicted_kernels = 0;
  // The GPUs whose predictions could not be cached because another connection (an import) held the
  // write lock: the predictions stand, the next run predicts them again.
  std::vector<std::string> cache_skipped;
};

struct WhatIfOptions {
  bool use_cache = true;                      // read and write the prediction cache
  bool write_cache = true;                    // false: read it only (a read-only database)
  const std::atomic<bool>* cancel = nullptr;  // set -> std::runtime_error("cancelled")
  std::function<void(const std::string& stage)> progress;
};

// Reads the source's kernels and predicts them on `targets`. `source_gpu` is the GPU the trace was
// measured on (the source's own GPU unless the caller knows better). Throws std::invalid_argument
// for a source id that is not in the database.
TraceWhatIf run_trace_whatif(KernelStore& store, int64_t source_id, const GpuSpec& source_gpu,
                             const std::vector<const GpuSpec*>& targets, const KernelPredictor& predictor,
                             const WhatIfOptions& options = {});

// "M=512,N=3072,K=2048": the shape columns of the op; empty when the op is unknown.
std::string readable_shape(const KernelDesc& k, bool shape_known);

}  // namespace perfloom::storage
