#include "storage/timeline.h"

#include <sqlite3.h>
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "storage/importers/scratch_db.h"
#include "storage/statement.h"

namespace perfloom::storage {

namespace {

void check_done(const Database& db, int rc) {
  if (rc != SQLITE_DONE) throw DatabaseError(db.path().string() + ": " + sqlite3_errmsg(db.handle()));
}

std::optional<double> col_double(sqlite3_stmt* st, int c) {
  if (sqlite3_column_type(st, c) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(st, c);
}

class Interner {
 public:
  explicit Interner(std::vector<std::string>& texts) : texts_(texts) {
    if (texts_.empty()) texts_.emplace_back();
    for (uint32_t i = 0; i < texts_.size(); ++i) ids_.emplace(texts_[i], i);
  }
  uint32_t id(sqlite3_stmt* st, int c) {
    const unsigned char* t = sqlite3_column_text(st, c);
    if (!t) return 0;
    std::string_view s(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st, c)));
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const auto i = static_cast<uint32_t>(texts_.size());
    texts_.emplace_back(s);
    ids_.emplace(texts_.back(), i);
    return i;
  }

 private:
  std::vector<std::string>& texts_;
  std::unordered_map<std::string, uint32_t> ids_;
};

bool stream_order(const TimelineKernel& a, const TimelineKernel& b) {
  const int64_t sa = a.stream.value_or(std::numeric_limits<int64_t>::min());
  const int64_t sb = b.stream.value_or(std::numeric_limits<int64_t>::min());
  if (sa != sb) return sa < sb;
  if (a.start_us != b.start_us) return a.start_us < b.start_us;
  return a.seq < b.seq;
}

void update_extent(Timeline& t, bool& any, double start, double end) {
  if (!any) {
    t.begin_us = start;
    t.end_us = end;
    any = true;
    return;
  }
  t.begin_us = std::min(t.begin_us, start);
  t.end_us = std::max(t.end_us, end);
}

// First kernel start to last kernel end.
double kernel_span(const std::vector<TimelineKernel>& ks) {
  if (ks.empty()) return 0;
  double lo = ks.front().start_us, hi = ks.front().start_us + ks.front().dur_us;
  for (const auto& k : ks) {
    lo = std::min(lo, k.start_us);
    hi = std::max(hi, k.start_us + k.dur_us);
  }
  return hi - lo;
}

}  // namespace

Timeline load_timeline(const Database& db, int64_t source_id, double t0_us, double t1_us) {
  {
    Stmt st = prepare(db, "SELECT 1 FROM sources WHERE id = ?1");
    sqlite3_bind_int64(st, 1, source_id);
    if (sqlite3_step(st) != SQLITE_ROW)
      throw std::invalid_argument("source " + std::to_string(source_id) + " is not in " + db.path().string());
  }
  Timeline t;
  t.source_id = source_id;
  Interner names(t.texts);
  bool any = false;
  auto overlaps = [&](double start, double dur) { return start <= t1_us && start + dur >= t0_us; };

  // A kernel's first measurement is its duration; kernels without a start (kernel lists, sweeps)
  // or a measurement have no place on a timeline.
  Stmt ks = prepare(db,
                    "SELECT k.id, k.seq, k.stream, k.start_us, k.launch_us, k.name, k.family, k.launched_by, "
                    "m.latency_us FROM kernels k JOIN measurements m ON m.kernel_id = k.id "
                    "WHERE k.source_id = ?1 AND k.start_us IS NOT NULL ORDER BY k.seq, m.id");
  sqlite3_bind_int64(ks, 1, source_id);
  int64_t last_id = -1;
  int rc;
  while ((rc = sqlite3_step(ks)) == SQLITE_ROW) {
    const int64_t id = sqlite3_column_int64(ks, 0);
    if (id == last_id) continue;  // a second measurement of the same kernel
    last_id = id;
    TimelineKernel k;
    k.kernel_id = id;
    k.seq = sqlite3_column_int64(ks, 1);
    if (sqlite3_column_type(ks, 2) != SQLITE_NULL) k.stream = sqlite3_column_int64(ks, 2);
    k.start_us = sqlite3_column_double(ks, 3);
    k.launch_us = col_double(ks, 4);
    k.dur_us = std::max(0.0, sqlite3_column_double(ks, 8));
    update_extent(t, any, k.start_us, k.start_us + k.dur_us);
    if (!overlaps(k.start_us, k.dur_us)) continue;
    k.name = names.id(ks, 5);
    const unsigned char* fam = sqlite3_column_text(ks, 6);
    k.family = fam ? parse_family(reinterpret_cast<const char*>(fam)).value_or(Family::unknown) : Family::unknown;
    k.launched_by = names.id(ks, 7);
    t.kernels.push_back(k);
  }
  check_done(db, rc);

  Stmt os = prepare(db,
                    "SELECT pid, tid, start_us, dur_us, name, depth FROM cpu_ops WHERE source_id = ?1 ORDER BY seq");
  sqlite3_bind_int64(os, 1, source_id);
  while ((rc = sqlite3_step(os)) == SQLITE_ROW) {
    TimelineOp o;
    o.pid = sqlite3_column_int64(os, 0);
    o.tid = sqlite3_column_int64(os, 1);
    o.start_us = sqlite3_column_double(os, 2);
    o.dur_us = sqlite3_column_double(os, 3);
    update_extent(t, any, o.start_us, o.start_us + o.dur_us);
    if (!overlaps(o.start_us, o.dur_us)) continue;
    o.name = names.id(os, 4);
    o.depth = sqlite3_column_int(os, 5);
    t.ops.push_back(o);
  }
  check_done(db, rc);

  std::sort(t.kernels.begin(), t.kernels.end(), stream_order);
  std::stable_sort(t.ops.begin(), t.ops.end(), [](const TimelineOp& a, const TimelineOp& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return a.depth < b.depth;
  });
  return t;
}

std::vector<double> replay_streams(const std::vector<TimelineKernel>& kernels, const std::vector<double>& pred_us) {
  if (pred_us.size() != kernels.size())
    throw std::invalid_argument("replay_streams: " + std::to_string(pred_us.size()) + " predictions for " +
                                std::to_string(kernels.size()) + " kernels");
  std::vector<std::size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return stream_order(kernels[a], kernels[b]); });
  std::vector<double> start(kernels.size(), 0.0);
  const TimelineKernel* prev = nullptr;
  std::size_t prev_i = 0;
  for (std::size_t i : order) {
    const TimelineKernel& k = kernels[i];
    if (!prev || prev->stream != k.stream) {
      start[i] = k.start_us;  // a stream's first kernel stays where it was measured
    } else {
      const double gap = std::max(0.0, k.start_us - (prev->start_us + prev->dur_us));
      const double launched = k.launch_us ? std::min(*k.launch_us, k.start_us) : k.start_us;
      start[i] = std::max(launched, start[prev_i] + std::max(0.0, pred_us[prev_i]) + gap);
    }
    prev = &k;
    prev_i = i;
  }
  return start;
}

PredictedTimeline predict_timeline(const Timeline& measured, const TraceWhatIf& whatif, std::size_t target) {
  if (target >= whatif.targets.size())
    throw std::invalid_argument("predict_timeline: target " + std::to_string(target) + " of " +
                                std::to_string(whatif.targets.size()));
  const WhatIfTarget& tg = whatif.targets[target];
  std::unordered_map<int64_t, std::size_t> cell_of;
  cell_of.reserve(whatif.kernels.size());
  for (std::size_t i = 0; i < whatif.kernels.size() && i < tg.cells.size(); ++i) cell_of.emplace(whatif.kernels[i].id, i);

  PredictedTimeline out;
  out.gpu_id = tg.gpu ? tg.gpu->id : std::string();
  out.timeline = measured;
  std::vector<double> pred(measured.kernels.size());
  for (std::size_t i = 0; i < measured.kernels.size(); ++i) {
    TimelineKernel& k = out.timeline.kernels[i];
    auto it = cell_of.find(k.kernel_id);
    if (it != cell_of.end() && tg.cells[it->second].method != WhatIfMethod::error) {
      pred[i] = tg.cells[it->second].pred_us;
    } else {
      pred[i] = k.dur_us;
      k.predicted = false;
      ++out.without_prediction;
    }
  }
  const std::vector<double> start = replay_streams(measured.kernels, pred);
  Timeline& t = out.timeline;
  bool any = false;
  for (const auto& o : t.ops) update_extent(t, any, o.start_us, o.start_us + o.dur_us);
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    t.kernels[i].start_us = start[i];
    t.kernels[i].dur_us = pred[i];
    update_extent(t, any, start[i], start[i] + pred[i]);
  }
  if (!any) t.begin_us = t.end_us = 0;
  std::sort(t.kernels.begin(), t.kernels.end(), stream_order);
  out.measured_span_us = kernel_span(measured.kernels);
  out.predicted_span_us = kernel_span(t.kernels);
  return out;
}

PredictedTimeline predict_timeline(KernelStore& store, int64_t source_id, const GpuSpec& source_gpu,
                                   const GpuSpec& target, const KernelPredictor& predictor,
                                   const WhatIfOptions& options) {
  Timeline measured = load_timeline(store.database(), source_id);
  TraceWhatIf w = run_trace_whatif(store, source_id, source_gpu, {&target}, predictor, options);
  return predict_timeline(measured, w, 0);
}

}  // namespace perfloom::storage
