#pragma once
// A trace's timeline (issue 59): its kernels by CUDA stream and its framework ops by CPU thread,
// as imported (kernels.stream, kernels.launch_us, cpu_ops), for the Timeline view; and the same
// kernels replayed on another GPU with the what-if's per-kernel predictions.
//
// The predicted timeline: each stream is replayed on its own, in its measured order. A stream's
// first kernel keeps its measured start; every later kernel starts after the one before it on the
// same stream ends (at its predicted duration) plus the idle gap measured between the two, and
// never before its own launch call started on the CPU (the launch time where the trace records
// it, else its measured start). Streams that overlapped are not re-simulated against each other:
// contention and cross-stream dependencies (events, collectives) are taken as measured. The CPU
// ops stay where they were measured.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/kernel.h"
#include "storage/database.h"
#include "storage/trace_whatif.h"

namespace perfloom::storage {

struct TimelineKernel {
  int64_t kernel_id = 0, seq = 0;
  std::optional<int64_t> stream;  // none: the format does not say
  double start_us = 0, dur_us = 0;
  std::optional<double> launch_us;
  uint32_t name = 0;         // index into Timeline::texts
  uint32_t launched_by = 0;  // index into Timeline::texts ("" when unknown)
  Family family = Family::unknown;
  bool predicted = true;  // predicted timelines: false where the target had no number (measured kept)
};

struct TimelineOp {
  int64_t pid = 0, tid = 0;
  double start_us = 0, dur_us = 0;
  uint32_t name = 0;  // index into Timeline::texts
  int depth = 0;
};

struct Timeline {
  int64_t source_id = 0;
  std::vector<std::string> texts;       // names, interned: texts[0] is ""
  std::vector<TimelineKernel> kernels;  // by stream (none first), then start, then seq
  std::vector<TimelineOp> ops;          // by (pid, tid), then start, then depth
  // The source's whole extent (not only the window), over kernels and ops; 0, 0 when empty.
  double begin_us = 0, end_us = 0;

  const std::string& text(uint32_t i) const { return texts.at(i); }
};

// The kernels (with a start and a measurement) and ops of a source that overlap [t0_us, t1_us] on
// the trace's clock; by default all of them. Throws std::invalid_argument for an unknown source.
Timeline load_timeline(const Database& db, int64_t source_id,
                       double t0_us = -std::numeric_limits<double>::infinity(),
                       double t1_us = std::numeric_limits<double>::infinity());

// The replay rule above on `kernels` (each with its measured start and duration): the predicted
// start of each, in the same order, given its predicted duration (`pred_us`, one per kernel).
std::vector<double> replay_streams(const std::vector<TimelineKernel>& kernels, const std::vector<double>& pred_us);

struct PredictedTimeline {
  std::string gpu_id;
  Timeline timeline;  // the kernels at their predicted starts and durations; the ops as measured
  std::size_t without_prediction = 0;  // kernels the target had no number for (measured duration kept)
  double measured_span_us = 0, predicted_span_us = 0;  // first kernel start to last kernel end
};

// `measured` must hold the whole source (load_timeline without a window); `whatif` is
// run_trace_whatif's answer for the same source, `target` an index into whatif.targets.
PredictedTimeline predict_timeline(const Timeline& measured, const TraceWhatIf& whatif, std::size_t target);

// Both at once, for the view and the CLI: the source's timeline and its replay on `target`.
PredictedTimeline predict_timeline(KernelStore& store, int64_t source_id, const GpuSpec& source_gpu,
                                   const GpuSpec& target, const KernelPredictor& predictor,
                                   const WhatIfOptions& options = {});

}  // namespace perfloom::storage
