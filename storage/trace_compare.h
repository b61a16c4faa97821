#pragma once
// Two traces side by side (issue 59): the same program measured on two GPUs, or a trace measured
// against its what-if on another GPU. The kernels of the two sides are matched, then compared per
// kernel, per kernel family, per kernel name and in total. The CLI (`perfloom compare`), the GUI's
// Compare view and tools/whatif_eval.cpp call these functions (DESIGN.md: nothing is computed only
// in a widget).
//
// Matching (match_kernels):
//   1. position: the kernels of each side are split into sequences by (launching framework op,
//      family, op), in trace order. Where a sequence has as many kernels on both sides, its i-th
//      kernel on side A is paired with its i-th kernel on side B, whatever their names (cuBLAS picks
//      other GEMM kernels on other GPUs). A kernel with neither a framework op nor a known op has
//      no sequence of its own: it goes straight to step 2.
//   2. name: the kernels of the sequences that differ in length (or exist on one side only) are
//      paired by kernel name instead, again in trace order within each name.
//   3. what is left is unmatched on its side (`only_a`, `only_b`), never forced into a pair.
//
// A side's time of a kernel is its measurement on the source's GPU, or, for a predicted side, the
// what-if's time on the chosen GPU (storage/trace_whatif.h; nothing where its method is `error`).
// Group sums take the matched pairs with a time on both sides; the rest are counted apart.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"
#include "model/predictor.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"

namespace perfloom::storage {

// ---- matching ----

// What matching reads of one kernel; the views point into the caller's strings.
struct MatchKernel {
  std::string_view launched_by;  // the framework op that launched it (empty: none known)
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::string_view name;
};

enum class MatchedBy { position, name };
// "position", "name".
std::string_view matched_by_name(MatchedBy by);

struct KernelPair {
  std::size_t a = 0, b = 0;  // indices into the two inputs
  MatchedBy by = MatchedBy::position;
};

struct KernelMatching {
  std::vector<KernelPair> pairs;            // by ascending `a`
  std::vector<std::size_t> only_a, only_b;  // unmatched indices, ascending
};

KernelMatching match_kernels(std::span<const MatchKernel> a, std::span<const MatchKernel> b);

// ---- comparison ----

// One kernel of one side as the comparison sees it.
struct CompareInput {
  int64_t seq = 0;
  std::string name, launched_by;
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::string shape;         // readable_shape(): "M=512,N=3072,K=2048", empty when unknown
  std::optional<double> us;  // the side's time; nothing: none (no measurement, or not predictable)
};

// A matched pair.
struct ComparedKernel {
  int64_t seq_a = 0, seq_b = 0;
  MatchedBy by = MatchedBy::position;
  std::string name, name_b;  // A's and B's kernel names (equal when the same kernel ran)
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::string shape;  // A's
  std::optional<double> a_us, b_us;
  double share = 0;  // delta over the total's delta (0 without both times or when the total's is 0)
  bool timed() const { return a_us && b_us; }
  std::optional<double> ratio() const;  // B / A; nothing without both times or A 0
  double delta_us() const { return timed() ? *b_us - *a_us : 0; }
};

// A kernel of one side that has no partner on the other.
struct UnmatchedKernel {
  int64_t seq = 0;
  std::string name;
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::string shape;
  std::optional<double> us;
};

// The matched pairs of one family, one kernel name, or all of them.
struct CompareGroup {
  std::string key;                  // the family's name, the kernel name (A's), or "TOTAL"
  std::string name_b;               // by name: B's name where every pair's differs from `key`; "(several)" where they
                                    // differ among themselves; empty where B's is `key`, and for families and the total
  Family family = Family::unknown;  // the family of the group (the total: unknown)
  std::size_t kernels = 0;          // matched pairs
  std::size_t untimed = 0;          // of those, pairs without a time on both sides: not in the sums
  double a_us = 0, b_us = 0;        // sums over the timed pairs
  std::size_t only_a = 0, only_b = 0;  // unmatched kernels of this family / name on each side
  double only_a_us = 0, only_b_us = 0;
  double share = 0;                     // delta_us over the total's delta_us; 0 when the total's is 0
  std::optional<double> ratio() const;  // b_us / a_us; nothing when a_us is 0
  double delta_us() const { return b_us - a_us; }
};

struct CompareResult {
  std::vector<ComparedKernel> kernels;  // in A's order
  std::vector<UnmatchedKernel> only_a, only_b;
  std::size_t by_position = 0, by_name = 0;
  std::vector<CompareGroup> by_family;       // in Family order, every family present on either side
  std::vector<CompareGroup> by_kernel_name;  // by |delta_us| descending, ties by key
  CompareGroup total;
};

// Matches `a` and `b` and compares them. Throws std::invalid_argument for a negative or non-finite time.
CompareResult compare_kernels(std::span<const CompareInput> a, std::span<const CompareInput> b);

// One side of compare_traces: an imported source's measured times, or its what-if on a GPU.
struct CompareSide {
  int64_t source_id = 0;
  // The GPU the source was measured on: its measurements on that GPU are the measured times, and the
  // what-if starts from it. Null: the GPU the source names (required, then, with predicted_on).
  const GpuSpec* source_gpu = nullptr;
  const GpuSpec* predicted_on = nullptr;  // null: measured times; else the what-if's times on this GPU
};

struct CompareOptions {
  const KernelPredictor* predictor = nullptr;  // required when a side is predicted
  WhatIfOptions whatif;                        // cache, cancel and progress of a predicted side's what-if
};

// What a side of compare_traces was.
struct CompareSideInfo {
  SourceRecord source;
  std::string gpu_id;  // the GPU whose times these are: the source's, or predicted_on
  bool predicted = false;
  std::string model_version;             // predicted: the predictor's (storage::predictor_version)
  bool from_cache = false;               // predicted: the what-if read its predictions from the database
  std::size_t kernels = 0, untimed = 0;  // the source's kernels, and of those, without a time
  double total_us = 0;                   // the side's time over all its timed kernels
};

struct TraceComparison : CompareResult {
  CompareSideInfo a, b;
};

// Reads both sides from the store (running the what-if of a predicted side) and compares them.
// The same source may be both sides. Throws std::invalid_argument for a source that is not in the
// database, a predicted side without a predictor or without a known source GPU; the what-if's
// std::runtime_error("cancelled") when cancelled.
TraceComparison compare_traces(KernelStore& store, const CompareSide& a, const CompareSide& b,
                               const CompareOptions& options = {});

}  // namespace perfloom::storage
