#include "storage/kernel_groups.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace perfloom::storage {

std::string_view group_by_name(GroupBy by) {
  switch (by) {
    case GroupBy::KernelName:
      return "kernel-name";
    case GroupBy::FrameworkOp:
      return "framework-op";
  }
  return "kernel-name";
}

std::optional<GroupBy> parse_group_by(std::string_view name) {
  for (GroupBy by : {GroupBy::KernelName, GroupBy::FrameworkOp})
    if (name == group_by_name(by)) return by;
  return std::nullopt;
}

std::vector<KernelGroup> group_kernels(std::span<const GroupInput> rows, GroupBy by, double source_total_us) {
  if (!std::isfinite(source_total_us) || source_total_us < 0)
    throw std::invalid_argument("group_kernels: the source's total time is " + std::to_string(source_total_us) +
                                " us; it must be a finite number of at least 0");
  std::vector<KernelGroup> groups;
  std::unordered_map<std::string_view, std::size_t> index;  // keys point into `rows` (or kNoFrameworkOp)
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GroupInput& r = rows[i];
    if (!std::isfinite(r.measured_us) || r.measured_us < 0)
      throw std::invalid_argument("group_kernels: kernel " + std::to_string(i) + " (" + std::string(r.name) +
                                  "): measured time " + std::to_string(r.measured_us) +
                                  " us; it must be a finite number of at least 0");
    std::string_view key = by == GroupBy::KernelName ? r.name : r.launched_by;
    if (by == GroupBy::FrameworkOp && key.empty()) key = kNoFrameworkOp;
    auto [it, added] = index.try_emplace(key, groups.size());
    if (added) groups.push_back(KernelGroup{std::string(key), 0, 0, 0, 0});
    KernelGroup& g = groups[it->second];
    ++g.count;
    g.total_us += r.measured_us;
  }
  for (KernelGroup& g : groups) {
    g.mean_us = g.total_us / static_cast<double>(g.count);
    g.share = source_total_us > 0 ? g.total_us / source_total_us : 0.0;
  }
  std::sort(groups.begin(), groups.end(), [](const KernelGroup& a, const KernelGroup& b) {
    return a.total_us != b.total_us ? a.total_us > b.total_us : a.key < b.key;
  });
  return groups;
}

}  // namespace perfloom::storage
