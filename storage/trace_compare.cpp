#include "storage/trace_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace perfloom::storage {

std::string_view matched_by_name(MatchedBy by) { return by == MatchedBy::position ? "position" : "name"; }

KernelMatching match_kernels(std::span<const MatchKernel> a, std::span<const MatchKernel> b) {
  using Key = std::tuple<std::string_view, int, int>;  // launched_by, family, op
  auto key_of = [](const MatchKernel& k) {
    return Key{k.launched_by, static_cast<int>(k.family), static_cast<int>(k.op)};
  };
  std::map<Key, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> sequences;
  // Kernels of the sequences that differ in length, by name: name -> (A's, B's), in trace order.
  std::map<std::string_view, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> by_name;
  // Neither a framework op nor an op: the key says nothing, only the name does.
  auto anonymous = [](const MatchKernel& k) { return k.launched_by.empty() && k.op == Op::unknown; };
  for (std::size_t i = 0; i < a.size(); ++i)
    (anonymous(a[i]) ? by_name[a[i].name].first : sequences[key_of(a[i])].first).push_back(i);
  for (std::size_t i = 0; i < b.size(); ++i)
    (anonymous(b[i]) ? by_name[b[i].name].second : sequences[key_of(b[i])].second).push_back(i);

  KernelMatching m;
  for (const auto& [key, seq] : sequences) {
    const auto& [ia, ib] = seq;
    if (ia.size() == ib.size()) {
      for (std::size_t j = 0; j < ia.size(); ++j) m.pairs.push_back({ia[j], ib[j], MatchedBy::position});
      continue;
    }
    for (std::size_t i : ia) by_name[a[i].name].first.push_back(i);
    for (std::size_t i : ib) by_name[b[i].name].second.push_back(i);
  }
  for (auto& [name, lists] : by_name) {
    auto& [ia, ib] = lists;
    // A name's kernels may come from several sequences: back into trace order.
    std::sort(ia.begin(), ia.end());
    std::sort(ib.begin(), ib.end());
    const std::size_t n = std::min(ia.size(), ib.size());
    for (std::size_t j = 0; j < n; ++j) m.pairs.push_back({ia[j], ib[j], MatchedBy::name});
    m.only_a.insert(m.only_a.end(), ia.begin() + static_cast<std::ptrdiff_t>(n), ia.end());
    m.only_b.insert(m.only_b.end(), ib.begin() + static_cast<std::ptrdiff_t>(n), ib.end());
  }
  std::sort(m.pairs.begin(), m.pairs.end(), [](const KernelPair& x, const KernelPair& y) { return x.a < y.a; });
  std::sort(m.only_a.begin(), m.only_a.end());
  std::sort(m.only_b.begin(), m.only_b.end());
  return m;
}

std::optional<double> ComparedKernel::ratio() const {
  if (!timed() || *a_us <= 0) return std::nullopt;
  return *b_us / *a_us;
}

std::optional<double> CompareGroup::ratio() const {
  if (a_us <= 0) return std::nullopt;
  return b_us / a_us;
}

namespace {

void check_times(std::span<const CompareInput> side, const char* which) {
  for (const CompareInput& k : side)
    if (k.us && (!std::isfinite(*k.us) || *k.us < 0))
      throw std::invalid_argument(std::string("side ") + which + ", kernel " + std::to_string(k.seq) +
                                  ": time is not a finite non-negative number");
}

void add_pair(CompareGroup& g, const ComparedKernel& k) {
  ++g.kernels;
  if (!k.timed()) {
    ++g.untimed;
    return;
  }
  g.a_us += *k.a_us;
  g.b_us += *k.b_us;
}

void add_unmatched(CompareGroup& g, const UnmatchedKernel& k, bool side_a) {
  (side_a ? g.only_a : g.only_b) += 1;
  (side_a ? g.only_a_us : g.only_b_us) += k.us.value_or(0);
}

UnmatchedKernel unmatched(const CompareInput& k) { return {k.seq, k.name, k.family, k.op, k.shape, k.us}; }

}  // namespace

CompareResult compare_kernels(std::span<const CompareInput> a, std::span<const CompareInput> b) {
  check_times(a, "A");
  check_times(b, "B");
  std::vector<MatchKernel> ma, mb;
  ma.reserve(a.size());
  mb.reserve(b.size());
  for (const CompareInput& k : a) ma.push_back({k.launched_by, k.family, k.op, k.name});
  for (const CompareInput& k : b) mb.push_back({k.launched_by, k.family, k.op, k.name});
  const KernelMatching m = match_kernels(ma, mb);

  CompareResult r;
  r.kernels.reserve(m.pairs.size());
  for (const KernelPair& p : m.pairs) {
    const CompareInput& ka = a[p.a];
    const CompareInput& kb = b[p.b];
    (p.by == MatchedBy::position ? r.by_position : r.by_name) += 1;
    r.kernels.push_back({ka.seq, kb.seq, p.by, ka.name, kb.name, ka.family, ka.op, ka.shape, ka.us, kb.us, 0});
  }
  for (std::size_t i : m.only_a) r.only_a.push_back(unmatched(a[i]));
  for (std::size_t i : m.only_b) r.only_b.push_back(unmatched(b[i]));

  // Per family (in Family order), per kernel name, and in total.
  std::map<Family, CompareGroup> families;
  std::map<std::string, CompareGroup> names;
  std::map<std::string, std::vector<std::string_view>> b_names;  // A's name -> the B names of its pairs
  auto family_group = [&](Family f) -> CompareGroup& {
    CompareGroup& g = families[f];
    g.key = std::string(family_name(f));
    g.family = f;
    return g;
  };
  auto name_group = [&](const std::string& name, Family f) -> CompareGroup& {
    auto [it, inserted] = names.try_emplace(name);
    if (inserted) {
      it->second.key = name;
      it->second.family = f;
    }
    return it->second;
  };
  r.total.key = "TOTAL";
  for (const ComparedKernel& k : r.kernels) {
    add_pair(family_group(k.family), k);
    add_pair(name_group(k.name, k.family), k);
    add_pair(r.total, k);
    b_names[k.name].push_back(k.name_b);
  }
  for (const UnmatchedKernel& k : r.only_a) {
    add_unmatched(family_group(k.family), k, true);
    add_unmatched(name_group(k.name, k.family), k, true);
    add_unmatched(r.total, k, true);
  }
  for (const UnmatchedKernel& k : r.only_b) {
    add_unmatched(family_group(k.family), k, false);
    add_unmatched(name_group(k.name, k.family), k, false);
    add_unmatched(r.total, k, false);
  }
  for (auto& [name, list] : b_names) {
    const bool same = std::all_of(list.begin(), list.end(), [&](std::string_view n) { return n == list.front(); });
    CompareGroup& g = names[name];
    if (!same)
      g.name_b = "(several)";
    else if (list.front() != name)
      g.name_b = std::string(list.front());
  }

  const double total_delta = r.total.delta_us();
  auto share = [&](double delta) { return total_delta != 0 ? delta / total_delta : 0.0; };
  for (ComparedKernel& k : r.kernels) k.share = share(k.delta_us());
  for (auto& [f, g] : families) {
    g.share = share(g.delta_us());
    r.by_family.push_back(std::move(g));
  }
  for (auto& [n, g] : names) {
    g.share = share(g.delta_us());
    r.by_kernel_name.push_back(std::move(g));
  }
  std::stable_sort(r.by_kernel_name.begin(), r.by_kernel_name.end(), [](const CompareGroup& x, const CompareGroup& y) {
    return std::abs(x.delta_us()) > std::abs(y.delta_us());
  });
  r.total.share = total_delta != 0 ? 1.0 : 0.0;
  return r;
}

namespace {

struct SideRead {
  std::vector<CompareInput> kernels;
  CompareSideInfo info;
};

SideRead read_side(KernelStore& store, const CompareSide& side, const CompareOptions& options) {
  SideRead s;
  auto src = store.source(side.source_id);
  if (!src) throw std::invalid_argument("source " + std::to_string(side.source_id) + " is not in the database");
  s.info.source = *src;
  const std::string source_gpu_id = side.source_gpu ? side.source_gpu->id : src->gpu_id;
  std::vector<StoredKernel> stored = store.kernels(side.source_id);
  s.kernels.reserve(stored.size());
  for (StoredKernel& k : stored) {
    CompareInput in;
    in.seq = k.seq;
    in.family = k.family;
    in.op = k.desc.op;
    in.shape = readable_shape(k.desc, k.shape_known);
    in.launched_by = std::move(k.launched_by);
    for (const StoredMeasurement& m : k.measurements)
      if (m.gpu_id.empty() || m.gpu_id == source_gpu_id) {
        in.us = m.latency_us;
        break;
      }
    in.name = std::move(k.desc.name);
    s.kernels.push_back(std::move(in));
  }
  s.info.gpu_id = source_gpu_id;
  if (side.predicted_on) {
    if (!options.predictor)
      throw std::invalid_argument("source " + std::to_string(side.source_id) + ": predicting it on " +
                                  side.predicted_on->id + " needs a predictor");
    if (!side.source_gpu)
      throw std::invalid_argument(src->path +
                                  ": the GPU it was measured on is not known, so it cannot be predicted on " +
                                  side.predicted_on->id);
    const TraceWhatIf w = run_trace_whatif(store, side.source_id, *side.source_gpu, {side.predicted_on},
                                           *options.predictor, options.whatif);
    if (w.kernels.size() != s.kernels.size() || w.targets.size() != 1)
      throw std::runtime_error(src->path + ": the source changed while it was being compared");
    const WhatIfTarget& t = w.targets.front();
    for (std::size_t i = 0; i < s.kernels.size(); ++i) {
      if (w.kernels[i].seq != s.kernels[i].seq)
        throw std::runtime_error(src->path + ": the source changed while it was being compared");
      const WhatIfCell& c = t.cells[i];
      s.kernels[i].us = c.method == WhatIfMethod::error ? std::nullopt : std::optional<double>(c.pred_us);
    }
    s.info.gpu_id = side.predicted_on->id;
    s.info.predicted = true;
    s.info.model_version = w.model_version;
    s.info.from_cache = t.from_cache;
  }
  s.info.kernels = s.kernels.size();
  for (const CompareInput& k : s.kernels) {
    if (k.us)
      s.info.total_us += *k.us;
    else
      ++s.info.untimed;
  }
  return s;
}

}  // namespace

TraceComparison compare_traces(KernelStore& store, const CompareSide& a, const CompareSide& b,
                               const CompareOptions& options) {
  SideRead sa = read_side(store, a, options);
  SideRead sb = read_side(store, b, options);
  TraceComparison t;
  static_cast<CompareResult&>(t) = compare_kernels(sa.kernels, sb.kernels);
  t.a = std::move(sa.info);
  t.b = std::move(sb.info);
  return t;
}

}  // namespace perfloom::storage
