#pragma once
// A source's kernels grouped the way a profiler's summary groups them (issue 59): by kernel name or
// by the framework op that launched them (`launched_by`), with the count, total and mean measured
// time and the share of the source's total. A plain function over plain rows: the Traces view shows
// its result and a command-line report can call it the same way.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfloom::storage {

enum class GroupBy { KernelName, FrameworkOp };

// "kernel-name", "framework-op": the names settings and command lines use.
std::string_view group_by_name(GroupBy by);
// The inverse of group_by_name(); nothing for any other text.
std::optional<GroupBy> parse_group_by(std::string_view name);

// The key of kernels that no framework op launched (an empty `launched_by`).
inline constexpr std::string_view kNoFrameworkOp = "(no framework op)";

// What grouping needs of one kernel; the views point into the caller's strings.
struct GroupInput {
  std::string_view name;
  std::string_view launched_by;  // empty: not known
  double measured_us = 0;
};

struct KernelGroup {
  std::string key;  // the kernel name, or the framework op (kNoFrameworkOp when there is none)
  int64_t count = 0;
  double total_us = 0;
  double mean_us = 0;  // total_us / count
  double share = 0;    // total_us / the source's total, 0..1; 0 when that total is not positive
};

// One group per distinct key among `rows`, sorted by total time descending (ties by key, so the
// order does not depend on the input's). `source_total_us` is the total the shares are of: the
// whole source's, also when `rows` is a filtered subset of its kernels. Throws
// std::invalid_argument for a negative or non-finite measured time or source total.
std::vector<KernelGroup> group_kernels(std::span<const GroupInput> rows, GroupBy by, double source_total_us);

}  // namespace perfloom::storage
