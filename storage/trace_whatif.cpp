#include "storage/trace_whatif.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "model/families/family_models.h"

namespace perfloom::storage {

std::string predictor_version(const KernelPredictor& predictor) { return predictor.version(); }

std::string readable_shape(const KernelDesc& k, bool shape_known) {
  if (!shape_known || k.op == Op::unknown) return "";
  std::string out;
  for (auto c : shape_columns(k.op)) {
    if (!out.empty()) out += ',';
    out += std::string(c) + '=' + std::to_string(shape_value(k.shape, c));
  }
  if (k.op == Op::attn_prefill && !k.shape.causal) out += ",causal=0";
  return out;
}

namespace {

// The model's answer for one kernel on one GPU, as cached.
using Raw = WhatIfPrediction;

constexpr std::string_view kErrorPrefix = "error: ";

std::vector<Raw> predict_raw(const std::vector<KernelDesc>& descs, const GpuSpec& gpu,
                             const KernelPredictor& predictor) {
  std::vector<Raw> out(descs.size());
  std::vector<std::string> errors;
  const std::vector<Prediction> preds = predictor.predict_batch(descs, gpu, &errors);
  for (std::size_t i = 0; i < descs.size(); ++i) {
    if (!errors[i].empty()) {
      out[i].error = errors[i];
      continue;
    }
    out[i] = {preds[i].pred_us,
              preds[i].lo_us,
              preds[i].hi_us,
              preds[i].ceiling_us,
              std::string(pipe_name(preds[i].bound)),
              ""};
  }
  return out;
}

// Everything a prediction reads from a kernel (and its name): kernels with equal keys share one
// prediction, one cache row. Traces repeat the same kernels thousands of times.
std::string distinct_key(const KernelDesc& k) {
  // The name in full as well: the spec-ratio fallback and the output rows read it.
  return k.name + '\x1f' + kernel_key(k, KernelKeyDetail::prediction);
}

// The distinct kernels of a source: each is cached under the id of its first kernel.
struct Distinct {
  std::vector<KernelDesc> descs;
  std::vector<int64_t> kernel_ids;                 // the first kernel of each
  std::vector<std::size_t> of_kernel;              // kernel index -> distinct index
  std::unordered_map<int64_t, std::size_t> by_id;  // first kernel's id -> distinct index
};

// Reads the cached predictions of (source, GPU, version); empty unless every distinct kernel has one.
std::vector<Raw> read_cache(const KernelStore& store, int64_t source_id, const GpuSpec& gpu, const std::string& version,
                            const Distinct& d) {
  if (!store.has_predictions(source_id, gpu.id, version)) return {};
  const auto cached = store.predictions(source_id, gpu.id, version);
  if (cached.size() < d.descs.size()) return {};
  std::vector<Raw> out(d.descs.size());
  std::vector<bool> seen(d.descs.size(), false);
  std::size_t n_seen = 0;
  for (const auto& c : cached) {
    auto it = d.by_id.find(c.kernel_id);
    if (it == d.by_id.end()) continue;  // another kernel of the same distinct one, cached by another writer
    Raw& r = out[it->second];
    if (!seen[it->second]) ++n_seen;
    seen[it->second] = true;
    if (c.bound.compare(0, kErrorPrefix.size(), kErrorPrefix) == 0) {
      r.error = c.bound.substr(kErrorPrefix.size());
      continue;
    }
    r.pred_us = c.pred_us;
    r.lo_us = c.lo_us.value_or(c.pred_us);
    r.hi_us = c.hi_us.value_or(c.pred_us);
    r.ceiling_us = c.ceiling_us.value_or(0);
    r.bound = c.bound;
  }
  if (n_seen != d.descs.size()) return {};
  return out;
}

// How long a prediction-cache write waits for another writer before it is skipped.
constexpr int kCacheWriteWaitMs = 250;

void write_cache(KernelStore& store, int64_t source_id, const GpuSpec& gpu, const std::string& version,
                 const Distinct& d, const std::vector<Raw>& raw) {
  std::vector<CachedPrediction> rows(d.descs.size());
  for (std::size_t i = 0; i < d.descs.size(); ++i) {
    CachedPrediction& c = rows[i];
    c.kernel_id = d.kernel_ids[i];
    if (!raw[i].error.empty()) {
      c.bound = std::string(kErrorPrefix) + raw[i].error;
      continue;
    }
    c.pred_us = raw[i].pred_us;
    c.lo_us = raw[i].lo_us;
    c.hi_us = raw[i].hi_us;
    c.ceiling_us = raw[i].ceiling_us;
    c.bound = raw[i].bound;
  }
  store.put_predictions(source_id, gpu.id, version, rows);
}

void add_to(WhatIfTotal& t, const WhatIfKernel& k, const WhatIfCell& c) {
  if (c.method == WhatIfMethod::error) {
    ++t.errors;
    ++t.methods["error"];
    return;
  }
  ++t.kernels;
  t.measured_us += k.measured_us.value_or(0);
  t.pred_us += c.pred_us;
  t.lo_us += c.lo_us.value_or(c.pred_us);
  t.hi_us += c.hi_us.value_or(c.pred_us);
  ++t.methods[std::string(whatif_method_name(c.method))];
}

}  // namespace

TraceWhatIf run_trace_whatif(KernelStore& store, int64_t source_id, const GpuSpec& source_gpu,
                             const std::vector<const GpuSpec*>& targets, const KernelPredictor& predictor,
                             const WhatIfOptions& options) {
  auto check_cancel = [&] {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw std::runtime_error("cancelled");
  };
  auto stage = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  TraceWhatIf r;
  auto src = store.source(source_id);
  if (!src) throw std::invalid_argument("source " + std::to_string(source_id) + " is not in the database");
  r.source = *src;
  r.source_gpu = &source_gpu;
  r.model_version = predictor_version(predictor);

  stage("reading kernels");
  store.visit_kernels(source_id, [&](StoredKernel&& k) {
    WhatIfKernel w;
    w.id = k.id;
    w.seq = k.seq;
    w.desc = std::move(k.desc);
    w.family = k.family;
    w.dtype_known = k.dtype_known;
    w.shape_known = k.shape_known;
    for (const auto& m : k.measurements)
      if (m.gpu_id.empty() || m.gpu_id == source_gpu.id) {
        w.measured_us = m.latency_us;
        break;
      }
    r.kernels.push_back(std::move(w));
  });
  Distinct d;
  {
    std::unordered_map<std::string, std::size_t> first;
    d.of_kernel.resize(r.kernels.size());
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      auto [it, inserted] = first.emplace(distinct_key(r.kernels[i].desc), d.descs.size());
      if (inserted) {
        d.descs.push_back(r.kernels[i].desc);
        d.kernel_ids.push_back(r.kernels[i].id);
        d.by_id.emplace(r.kernels[i].id, it->second);
      }
      d.of_kernel[i] = it->second;
    }
  }
  r.distinct_kernels = d.descs.size();

  // The model's raw predictions of the distinct kernels on one GPU, from the cache when it holds them all.
  auto raw_on = [&](const GpuSpec& gpu, bool& from_cache, std::size_t& predicted) {
    check_cancel();
    if (options.use_cache) {
      auto cached = read_cache(store, source_id, gpu, r.model_version, d);
      if (!cached.empty() || d.descs.empty()) {
        from_cache = true;
        predicted = 0;
        return cached;
      }
    }
    stage("predicting on " + gpu.id);
    auto raw = predict_raw(d.descs, gpu, predictor);
    from_cache = false;
    predicted = raw.size();
    if (options.use_cache && options.write_cache) {
      // A cache is worth no wait: an import holding the write lock (for its whole parse) makes this
      // run skip it, briefly waited for, rather than fail.
      Database& db = store.database();
      db.set_busy_timeout_ms(kCacheWriteWaitMs);
      Database::DefaultBusyTimeoutOnExit restore{db};
      try {
        write_cache(store, source_id, gpu, r.model_version, d, raw);
      } catch (const DatabaseError& e) {
        if (e.sqlite_code() != SQLITE_BUSY && e.sqlite_code() != SQLITE_LOCKED) throw;
        r.cache_skipped.push_back(gpu.id);
      }
    }
    return raw;
  };

  bool need_source = false;
  for (const GpuSpec* t : targets)
    if (t->id != source_gpu.id) need_source = true;
  std::vector<Raw> source_raw;
  if (need_source) source_raw = raw_on(source_gpu, r.source_from_cache, r.source_predicted_kernels);

  for (const GpuSpec* gpu : targets) {
    WhatIfTarget t;
    t.gpu = gpu;
    const bool is_source = gpu->id == source_gpu.id;
    std::vector<Raw> raw =
        is_source && !source_raw.empty() ? source_raw : raw_on(*gpu, t.from_cache, t.predicted_kernels);
    if (is_source && !source_raw.empty()) t.from_cache = r.source_from_cache;
    t.cells.resize(r.kernels.size());
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      const Raw* rs = source_raw.empty() ? nullptr : &source_raw[d.of_kernel[i]];
      t.cells[i] = whatif_cell(r.kernels[i], source_gpu, *gpu, raw[d.of_kernel[i]], rs);
    }
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      WhatIfTotal& ft = t.by_family[r.kernels[i].family];
      ft.family = r.kernels[i].family;
      add_to(ft, r.kernels[i], t.cells[i]);
      add_to(t.total, r.kernels[i], t.cells[i]);
    }
    r.targets.push_back(std::move(t));
  }
  stage("done");
  return r;
}

}  // namespace perfloom::storage
