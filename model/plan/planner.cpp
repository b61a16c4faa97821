#include "model/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/file_reader.h"
#include "model/resources.h"
#include "model/sim/memory.h"
#include "model/sim/step.h"
#include "model/sim/workload.h"
#include "model/text_fields.h"

namespace perfloom::plan {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const sim::LatencyStats& stats_of(const sim::SimulationResult& r, PercentileBound::Metric m) {
  switch (m) {
    case PercentileBound::Metric::ttft:
      return r.ttft_ms;
    case PercentileBound::Metric::tpot:
      return r.tpot_ms;
    case PercentileBound::Metric::e2e:
      break;
  }
  return r.e2e_ms;
}

}  // namespace

std::string PercentileBound::name() const {
  const char* m = metric == Metric::ttft ? "ttft" : metric == Metric::tpot ? "tpot" : "e2e";
  return std::string(m) + (percentile == 0 ? "_mean" : "_p" + std::to_string(percentile));
}

double PercentileBound::value(const sim::SimulationResult& r) const {
  const sim::LatencyStats& s = stats_of(r, metric);
  switch (percentile) {
    case 0:
      return s.mean;
    case 50:
      return s.p50;
    case 90:
      return s.p90;
    default:
      return s.p99;
  }
}

PlanSla parse_plan_sla(const std::string& spec) {
  PlanSla sla;
  auto bad = [&](const std::string& why) { throw std::invalid_argument("--sla \"" + spec + "\": " + why); };
  for (const std::string& part : split_fields(spec, ',')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad("\"" + part + "\" is not METRIC_pNN=MS (for example ttft_p90=500)");
    const std::string key = trim(part.substr(0, eq));
    std::string value = trim(part.substr(eq + 1));
    if (value.size() > 2 && value.ends_with("ms")) value.resize(value.size() - 2);
    const auto us = key.find('_');
    if (us == std::string::npos) bad("\"" + key + "\": expected ttft, tpot or e2e with _p50, _p90, _p99 or _mean");
    PercentileBound b;
    const std::string metric = key.substr(0, us), pct = key.substr(us + 1);
    if (metric == "ttft")
      b.metric = PercentileBound::Metric::ttft;
    else if (metric == "tpot")
      b.metric = PercentileBound::Metric::tpot;
    else if (metric == "e2e")
      b.metric = PercentileBound::Metric::e2e;
    else
      bad("unknown metric \"" + metric + "\" (expected ttft, tpot or e2e)");
    if (pct == "p50")
      b.percentile = 50;
    else if (pct == "p90")
      b.percentile = 90;
    else if (pct == "p99")
      b.percentile = 99;
    else if (pct == "mean")
      b.percentile = 0;
    else
      bad("unknown statistic \"" + pct + "\" (expected p50, p90, p99 or mean)");
    if (!parse_double(value, b.ms) || b.ms <= 0 || b.ms > 1e9)
      bad(key + " must be a positive number of milliseconds (got \"" + value + "\")");
    for (const auto& o : sla.bounds)
      if (o.name() == b.name()) bad("\"" + key + "\" given twice");
    sla.bounds.push_back(b);
  }
  if (sla.bounds.empty()) bad("no bound given");
  return sla;
}

Load parse_load(const std::string& spec) {
  Load l;
  std::string v = trim(spec);
  if (v.ends_with("req/s")) {
    l.kind = Load::Kind::requests;
    v.resize(v.size() - 5);
  } else if (v.ends_with("tok/s")) {
    l.kind = Load::Kind::output_tokens;
    v.resize(v.size() - 5);
  } else {
    throw std::invalid_argument("--load \"" + spec +
                                "\": give requests or output tokens per second, as 20req/s or "
                                "5000tok/s");
  }
  if (!parse_double(trim(v), l.value) || l.value <= 0 || l.value > 1e9)
    throw std::invalid_argument("--load \"" + spec + "\": the rate must be a positive number up to 1e9");
  return l;
}

const Prices::Entry* Prices::find(const std::string& gpu_id) const {
  auto it = by_gpu.find(gpu_id);
  return it == by_gpu.end() ? nullptr : &it->second;
}

Prices parse_prices_csv(const std::string& text, const std::string& label) {
  Prices p;
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    // The source may hold commas: everything after the second one.
    const auto c1 = t.find(',');
    const auto c2 = c1 == std::string::npos ? std::string::npos : t.find(',', c1 + 1);
    const std::string gpu = trim(t.substr(0, c1));
    const std::string price = c1 == std::string::npos ? "" : trim(t.substr(c1 + 1, c2 - c1 - 1));
    const std::string where = label + ", line " + std::to_string(n) + ": ";
    if (gpu == "gpu") continue;  // the header
    double v = 0;
    if (!parse_double(price, v) || v <= 0 || v > 1e6)
      throw std::invalid_argument(where + "usd_per_gpu_hour must be a positive number (got \"" + price.substr(0, 80) +
                                  "\")");
    if (gpu.empty()) throw std::invalid_argument(where + "no GPU id");
    if (p.by_gpu.count(gpu)) throw std::invalid_argument(where + "\"" + gpu.substr(0, 80) + "\" priced twice");
    std::string source = c2 == std::string::npos ? label : trim(t.substr(c2 + 1));
    if (source.size() >= 2 && source.front() == '"' && source.back() == '"')
      source = source.substr(1, source.size() - 2);
    p.by_gpu[gpu] = {v, source};
  }
  return p;
}

Prices bundled_prices() {
  const auto path = resources_dir() / "plan" / "prices.csv";
  return parse_prices_csv(read_file_guarded(path, file_limits::price_table), path.string());
}

std::string with_key(const std::string& spec, const std::string& key, const std::string& value) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return spec;
  std::vector<std::string> parts;
  for (std::string& p : split_fields(spec.substr(colon + 1), ','))
    if (!p.empty()) parts.push_back(std::move(p));
  bool found = false;
  for (auto& p : parts)
    if (p.substr(0, p.find('=')) == key) {
      p = key + "=" + value;
      found = true;
    }
  if (!found) parts.push_back(key + "=" + value);
  std::string out = spec.substr(0, colon + 1);
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out;
}

std::string EngineSettings::describe() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (!quantization.empty()) add(quantization + " weights");
  if (!kv_cache_dtype.empty() && kv_cache_dtype != "auto") add(kv_cache_dtype + " KV cache");
  if (max_num_seqs != EngineSettings{}.max_num_seqs) add("max_num_seqs " + std::to_string(max_num_seqs));
  if (max_num_batched_tokens != EngineSettings{}.max_num_batched_tokens)
    add("max_num_batched_tokens " + std::to_string(max_num_batched_tokens));
  if (!chunked_prefill) add("no chunked prefill");
  return s;
}

bool EngineSettings::operator<(const EngineSettings& o) const {
  return std::tie(quantization, kv_cache_dtype, chunked_prefill, max_num_seqs, max_num_batched_tokens) <
         std::tie(o.quantization, o.kv_cache_dtype, o.chunked_prefill, o.max_num_seqs, o.max_num_batched_tokens);
}

std::vector<EngineSettings> engine_settings_grid(const std::vector<std::string>& quantizations,
                                                 const std::vector<std::string>& kv_cache_dtypes,
                                                 const std::vector<bool>& chunked_prefill,
                                                 const std::vector<int64_t>& max_num_seqs,
                                                 const std::vector<int64_t>& max_num_batched_tokens) {
  const EngineSettings def;
  const std::vector<std::string> q = quantizations.empty() ? std::vector<std::string>{def.quantization} : quantizations;
  const std::vector<std::string> kv = kv_cache_dtypes.empty() ? std::vector<std::string>{def.kv_cache_dtype} : kv_cache_dtypes;
  const std::vector<bool> ch = chunked_prefill.empty() ? std::vector<bool>{def.chunked_prefill} : chunked_prefill;
  const std::vector<int64_t> n = max_num_seqs.empty() ? std::vector<int64_t>{def.max_num_seqs} : max_num_seqs;
  const std::vector<int64_t> t =
      max_num_batched_tokens.empty() ? std::vector<int64_t>{def.max_num_batched_tokens} : max_num_batched_tokens;
  std::vector<EngineSettings> out;
  for (const auto& qi : q)
    for (const auto& ki : kv)
      for (bool ci : ch)
        for (int64_t ni : n)
          for (int64_t ti : t) {
            EngineSettings e;
            e.quantization = qi;
            e.kv_cache_dtype = ki == "auto" ? "" : ki;
            e.chunked_prefill = ci;
            e.max_num_seqs = ni;
            e.max_num_batched_tokens = ti;
            if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
          }
  return out;
}

std::string Deployment::describe() const {
  auto pool = [](const GpuSpec* g, int tp, int pp, int replicas) {
    std::string s = std::to_string(tp * pp * replicas) + " x " + g->id + " (TP " + std::to_string(tp);
    if (pp > 1) s += ", PP " + std::to_string(pp);
    if (replicas > 1) s += ", " + std::to_string(replicas) + " replicas";
    return s;
  };
  const std::string e = settings.describe();
  if (wide_ep)
    return std::to_string(gpus()) + " x " + gpu->id + " (TP " + std::to_string(tp) + ", " + std::to_string(replicas) +
           " DP attention ranks" + (ep_groups > 1 ? " in " + std::to_string(ep_groups) + " expert groups" : "") +
           ", EP " + std::to_string(ep()) + (e.empty() ? "" : "; " + e) + ")";
  if (!decode_gpu) return pool(gpu, tp, pp, replicas) + (e.empty() ? "" : "; " + e) + ")";
  return pool(gpu, tp, pp, replicas) + ") prefill + " + pool(decode_gpu, decode_tp, decode_pp, decode_replicas) +
         ") decode" + (e.empty() ? "" : " (" + e + ")");
}

Deployment ParetoPoint::deployment() const {
  Deployment d{gpu, tp, 1, settings};
  d.pp = pp;
  if (disaggregated()) {
    d.replicas = prefill_replicas;
    d.decode_gpu = gpu;
    d.decode_tp = tp;
    d.decode_pp = pp;
    d.decode_replicas = decode_replicas;
  }
  return d;
}

namespace {

// The fewest r in [1, hi] for which `meets(r)` holds, `meets(hi)` being known to hold: a binary
// search, more instances never meeting the SLA less.
template <class Meets>
int fewest_meeting(int hi, Meets&& meets) {
  int lo = 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (meets(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

// One engine setting of the search, with the model as it runs there (its weights quantised).
struct Variant {
  EngineSettings s;
  sim::LlmConfig model;
  std::optional<Dtype> kv_dtype;  // unset: the model's
};

struct Evaluation {
  sim::SimulationResult r;
  bool meets = false;
  std::string binding;  // the bound missed worst: "ttft_p90 612 ms > 500 ms"
};

class Planner {
 public:
  Planner(const sim::LlmConfig& model, const std::vector<Variant>& variants, const KernelPredictor& predictor,
          const Prices& prices, const PlanOptions& o, PlanResult& out)
      : model_(model), variants_(variants), predictor_(predictor), prices_(prices), o_(o), out_(out) {}

  bool stopped() const { return stopped_; }

  // The simulation settings every search starts from: `simulate`'s, the engine setting applied, a
  // least-loaded router, no step records.
  sim::SimulationConfig config_for(const Variant& v) const {
    sim::SimulationConfig sc = o_.base;
    apply(v, sc.sched, sc.memory);
    sc.deployment.router = sim::RouterPolicy::least_loaded;
    sc.record_steps = false;
    return sc;
  }

  // `replicas` instances of TP x PP behind the router; `ep` > 0: wide EP, the instances being the
  // data-parallel attention ranks of one expert group over `ep` GPUs (else EP over each TP group).
  Evaluation evaluate(const GpuSpec& gpu, sim::StepCostModel& cost, const Variant& v, int tp, int pp, int replicas,
                      const std::string& spec, int ep = 0) {
    check_cancel();
    sim::SimulationConfig sc = config_for(v);
    sc.par.tp = tp;
    sc.par.pp = pp;
    sc.par.ep = ep > 0 ? ep : model_.has_moe() ? tp : 1;
    sc.deployment.replicas = replicas;
    sc.shared_cost = &cost;
    return judge(sim::simulate(v.model, gpu, predictor_, sim::parse_workload(spec), sc), false);
  }

  // Wide EP for an MoE model: per GPU type, engine setting and TP degree, the fewest GPUs (within
  // --max-gpus) that meet the SLA at the full load as G expert groups of R data-parallel attention
  // ranks (R = 2, 4, ..., G = 1, 2, 4, ...): the groupings in order of GPUs, one group of more ranks
  // before more groups of fewer, the first that meets the SLA.
  void wide_ep(const std::vector<const GpuSpec*>& gpus, double rate) {
    const std::string spec = with_key(o_.workload, "rate", fmt("%.9g", rate));
    for (const GpuSpec* gpu : gpus) {
      sim::StepCostModel& cost = cost_of(*gpu);
      for (const Variant& v : variants_)
        for (int tp : o_.tp) {
          std::vector<std::pair<int, int>> groupings;  // (ranks per group, groups)
          for (int ranks = 2; tp * ranks <= o_.max_gpus; ranks *= 2)
            for (int groups = 1; tp * ranks * groups <= o_.max_gpus; groups *= 2) groupings.emplace_back(ranks, groups);
          std::stable_sort(groupings.begin(), groupings.end(), [](const auto& a, const auto& b) {
            return a.first * a.second != b.first * b.second ? a.first * a.second < b.first * b.second
                                                            : a.second < b.second;
          });
          Candidate c;
          c.d = {gpu, tp, 2, v.s};
          c.d.wide_ep = true;
          std::string last_miss;
          std::map<int, std::string> does_not_hold;  // ranks per group -> why its experts do not fit
          for (const auto& [ranks, groups] : groupings) {
            c.d.replicas = ranks * groups;
            c.d.ep_groups = groups;
            auto fit = does_not_hold.find(ranks);
            if (fit == does_not_hold.end())
              fit = does_not_hold.emplace(ranks, does_not_fit(*gpu, v, tp, 1, tp * ranks)).first;
            if (!fit->second.empty()) {
              last_miss = fit->second;
              continue;  // more ranks hold fewer experts each
            }
            try {
              Evaluation e = evaluate(*gpu, cost, v, tp, 1, ranks * groups, spec, tp * ranks);
              if (e.meets) {
                c.feasible = true;
                fill(c, e, true);
                break;
              }
              last_miss = e.binding + " with " + (groups > 1 ? std::to_string(groups) + " groups of " : "") +
                          std::to_string(ranks) + " ranks";
            } catch (const PlanCancelled&) {
              throw;
            } catch (const std::exception& ex) {
              last_miss = ex.what();
            }
          }
          if (c.feasible) {
            out_.ranked.push_back(c);
          } else if (!last_miss.empty()) {
            c.why_not = "wide EP: " + last_miss + " (the most --max-gpus " + std::to_string(o_.max_gpus) + " allows)";
            out_.rejected.push_back(c);
          }
        }
    }
  }

  void check_cancel() {
    // The search's own handlers take this for a failed candidate; plan_deployments then throws
    // PlanCancelled, so none of them reaches the caller.
    if (stopped_ || (o_.cancelled && o_.cancelled())) {
      stopped_ = true;
      throw PlanCancelled();
    }
  }

  // A disaggregated deployment simulated whole at `rate`.
  Evaluation evaluate_disaggregated(const Deployment& d, const Variant& v, double rate, bool ttft_only) {
    return evaluate_disaggregated(d, v, with_key(o_.workload, "rate", fmt("%.9g", rate)), ttft_only);
  }
  // The same under the workload `spec`.
  Evaluation evaluate_disaggregated(const Deployment& d, const Variant& v, const std::string& spec, bool ttft_only) {
    check_cancel();
    sim::SimulationConfig sc = config_for(v);
    sim::Deployment& dep = sc.deployment;
    dep.disaggregated = true;
    dep.prefill_gpu = d.gpu;
    dep.decode_gpu = d.decode_gpu;
    dep.prefill_replicas = d.replicas;
    dep.decode_replicas = d.decode_replicas;
    dep.prefill_par.tp = d.tp;
    dep.prefill_par.pp = d.pp;
    dep.prefill_par.ep = model_.has_moe() ? d.tp : 1;
    dep.decode_par.tp = d.decode_tp;
    dep.decode_par.pp = d.decode_pp;
    dep.decode_par.ep = model_.has_moe() ? d.decode_tp : 1;
    sc.par = dep.decode_par;
    // One GPU type with NVLink: one NVLink domain (the simulator's default); else the network.
    const bool nvlink = d.gpu == d.decode_gpu && d.gpu->interconnect.nvlink_bandwidth_gb_s > 0;
    dep.kv_transfer_gb_s = nvlink ? 0 : o_.kv_transfer_gb_s;
    sc.shared_cost = &cost_of(*d.decode_gpu);
    sc.shared_prefill_cost = &cost_of(*d.gpu);
    return judge(sim::simulate(v.model, *d.decode_gpu, predictor_, sim::parse_workload(spec), sc), ttft_only);
  }

  sim::StepCostModel& cost_of(const GpuSpec& gpu) {
    auto& slot = costs_[gpu.id];
    if (!slot) slot = std::make_unique<sim::StepCostModel>(predictor_, gpu, o_.base.overheads, o_.base.clocks);
    return *slot;
  }

  // Disaggregated deployments at the full load, every pool simulated whole. First each GPU type's
  // cheapest prefill pool for each engine setting and TP x PP: the fewest instances whose TTFT
  // bounds hold (a decode pool of the same kind behind it; TTFT is the prefill pool's). Then, for
  // every decode GPU type and TP x PP, the fewest decode instances that meet the whole SLA behind
  // two prefill pools: its own GPU type's cheapest, and the cheapest of any type.
  void disaggregated(const std::vector<const GpuSpec*>& gpus, double rate) {
    struct Prefill {
      Deployment d;
      double cost = 0;  // $/hour, or GPUs where unpriced (ranked after the priced)
      bool priced = false;
    };
    auto cheaper = [](const Prefill& a, const Prefill& b) {
      if (a.priced != b.priced) return a.priced;
      return a.cost != b.cost ? a.cost < b.cost : a.d.gpus() < b.d.gpus();
    };
    const bool ttft_bound = std::any_of(o_.sla.bounds.begin(), o_.sla.bounds.end(), [](const PercentileBound& b) {
      return b.metric == PercentileBound::Metric::ttft;
    });
    for (const Variant& v : variants_) {
      std::map<std::string, Prefill> best_of_type;  // by prefill GPU id
      std::optional<Prefill> best;
      for (const GpuSpec* gpu : gpus)
        for (const auto& [tp, pp] : degrees()) {
          const int r_max = (o_.max_gpus - 1) / (tp * pp);  // a decode GPU at least
          if (r_max < 1 || !does_not_fit(*gpu, v, tp, pp).empty()) continue;  // the aggregated search said why
          Deployment d;
          d.gpu = d.decode_gpu = gpu;
          d.tp = d.decode_tp = tp;
          d.pp = d.decode_pp = pp;
          d.settings = v.s;
          auto meets = [&](int r) {
            d.replicas = d.decode_replicas = r;
            return !ttft_bound || evaluate_disaggregated(d, v, rate, true).meets;
          };
          int fewest = r_max;
          try {
            if (!meets(r_max)) continue;
            fewest = fewest_meeting(r_max, meets);
          } catch (const PlanCancelled&) {
            throw;
          } catch (const std::exception&) {
            continue;  // a pool that cannot serve the workload: no prefill pool of this kind
          }
          Prefill p;
          p.d = d;
          p.d.replicas = fewest;
          p.d.decode_gpu = nullptr;  // the prefill pool alone, for its price
          const auto usd = usd_per_hour(p.d);
          p.priced = usd.has_value();
          p.cost = usd ? *usd : p.d.tp * p.d.replicas;
          auto it = best_of_type.find(gpu->id);
          if (it == best_of_type.end() || cheaper(p, it->second)) best_of_type[gpu->id] = p;
          if (!best || cheaper(p, *best)) best = p;
        }
      if (!best) {
        Candidate c;
        c.d = {gpus.front(), 1, 1, v.s};
        c.d.decode_gpu = gpus.front();
        c.why_not = "disaggregated: no prefill pool meets the TTFT bounds within --max-gpus " +
                    std::to_string(o_.max_gpus) + " (a decode GPU kept)";
        out_.rejected.push_back(c);
        continue;
      }
      for (const GpuSpec* gpu : gpus)
        for (const auto& [tp, pp] : degrees()) {
          if (!does_not_fit(*gpu, v, tp, pp).empty()) continue;
          std::vector<Prefill> fronts;
          if (auto it = best_of_type.find(gpu->id); it != best_of_type.end()) fronts.push_back(it->second);
          if (fronts.empty() || best->d.gpu != gpu) fronts.push_back(*best);
          for (const Prefill& p : fronts) {
            Candidate c;
            c.d = p.d;
            c.d.decode_gpu = gpu;
            c.d.decode_tp = tp;
            c.d.decode_pp = pp;
            const int r_max = (o_.max_gpus - p.d.gpus()) / (tp * pp);
            if (r_max < 1) continue;
            auto at = [&](int r) {
              c.d.decode_replicas = r;
              return evaluate_disaggregated(c.d, v, rate, false);
            };
            try {
              Evaluation top = at(r_max);
              if (!top.meets) {
                c.why_not = "disaggregated: " + top.binding + " with " + std::to_string(r_max) + " decode instance" +
                            (r_max > 1 ? "s" : "") + " (the most --max-gpus " + std::to_string(o_.max_gpus) +
                            " leaves)";
                out_.rejected.push_back(c);
                continue;
              }
              Evaluation found = std::move(top);  // the evaluation of the fewest instances that meet
              const int fewest = fewest_meeting(r_max, [&](int r) {
                Evaluation e = at(r);
                if (!e.meets) return false;
                found = std::move(e);
                return true;
              });
              c.d.decode_replicas = fewest;
              c.feasible = true;
              fill(c, found, true);
              out_.ranked.push_back(c);
            } catch (const PlanCancelled&) {
              throw;
            } catch (const std::exception& e) {
              c.why_not = std::string("disaggregated: ") + e.what();
              out_.rejected.push_back(c);
            }
          }
        }
    }
  }

  // The SLA's verdict on a simulation; `ttft_only`: the TTFT bounds alone (a prefill pool's share).
  Evaluation judge(sim::SimulationResult r, bool ttft_only) {
    Evaluation e;
    e.r = std::move(r);
    ++out_.simulations;
    e.meets = true;
    double worst = 0;
    for (const auto& b : o_.sla.bounds) {
      if (ttft_only && b.metric != PercentileBound::Metric::ttft) continue;
      const double v = b.value(e.r);
      if (v > b.ms) {
        e.meets = false;
        if (v / b.ms > worst) {
          worst = v / b.ms;
          e.binding = b.name() + " " + fmt("%.1f", v) + " ms > " + fmt("%g", b.ms) + " ms";
        }
      }
    }
    return e;
  }

  void fill(Candidate& c, const Evaluation& e, bool whole) {
    c.simulated_whole = whole;
    c.ttft_p90_ms = e.r.ttft_ms.p90;
    c.tpot_p90_ms = e.r.tpot_ms.p90;
    c.e2e_p90_ms = e.r.e2e_ms.p90;
    c.bound_values.clear();
    c.headroom = std::numeric_limits<double>::infinity();
    c.at_risk = false;
    for (const auto& b : o_.sla.bounds) {
      const double v = b.value(e.r);
      c.bound_values.push_back(v);
      c.headroom = std::min(c.headroom, (b.ms - v) / b.ms);
      if (v * (1 + o_.uncertainty) > b.ms) c.at_risk = true;
    }
    // A single instance at load/R stands for each of R replicas: the deployment's throughput is R times.
    const double scale = whole ? 1.0 : c.d.replicas;
    c.output_tokens_per_s = e.r.output_tokens_per_s * scale;
    c.requests_per_s = e.r.requests_per_s * scale;
    if (const auto usd = usd_per_hour(c.d)) {
      c.priced = true;
      c.usd_per_hour = *usd;
      c.usd_per_million_output_tokens =
          c.output_tokens_per_s > 0 ? c.usd_per_hour / (c.output_tokens_per_s * 3600.0) * 1e6 : 0;
    }
  }

  // The deployment's $/hour; none when a GPU type of it has no price.
  std::optional<double> usd_per_hour(const Deployment& d) const {
    const Prices::Entry* p = prices_.find(d.gpu->id);
    if (!p) return std::nullopt;
    double usd = p->usd_per_gpu_hour * d.tp * d.pp * d.replicas;
    if (d.decode_gpu) {
      const Prices::Entry* q = prices_.find(d.decode_gpu->id);
      if (!q) return std::nullopt;
      usd += q->usd_per_gpu_hour * d.decode_tp * d.decode_pp * d.decode_replicas;
    }
    return usd;
  }

  static void apply(const Variant& v, sim::SchedulerConfig& sched, sim::MemoryOptions& memory) {
    sched.chunked_prefill = v.s.chunked_prefill;
    sched.max_num_seqs = v.s.max_num_seqs;
    sched.max_num_batched_tokens = v.s.max_num_batched_tokens;
    if (v.kv_dtype) {
      memory.kv_dtype = *v.kv_dtype;
      memory.kv_dtype_set = true;
    }
  }

  // Why the model cannot run on `tp` GPUs of this type with these settings at all, or "".
  std::string does_not_fit(const GpuSpec& gpu, const Variant& v, int tp, int pp = 1, int ep = 0) const {
    try {
      if (!v.s.quantization.empty() || v.kv_dtype) sim::check_serving_dtypes(v.model, gpu, v.kv_dtype.value_or(v.model.dtype));
      sim::Parallelism par;
      par.tp = tp;
      par.pp = pp;
      par.ep = ep > 0 ? ep : model_.has_moe() ? tp : 1;
      sim::validate_parallelism(v.model, par);
      sim::SchedulerConfig sched = o_.base.sched;
      sim::MemoryOptions mo = o_.base.memory;
      apply(v, sched, mo);
      mo.max_num_batched_tokens = sched.max_num_batched_tokens;
      mo.max_num_seqs = sched.max_num_seqs;
      sim::plan_memory(v.model, par, gpu, mo);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  // Every (TP, PP) degree pair of the search within --max-gpus, TP first.
  std::vector<std::pair<int, int>> degrees() const {
    std::vector<std::pair<int, int>> out;
    for (int tp : o_.tp)
      for (int pp : o_.pp)
        if (tp * pp <= o_.max_gpus) out.emplace_back(tp, pp);
    return out;
  }

  const Variant& variant_of(const EngineSettings& s) const {
    for (const Variant& v : variants_)
      if (v.s == s) return v;
    throw std::logic_error("plan: a candidate's engine settings are not among those searched");
  }

  void with_load(const std::vector<const GpuSpec*>& gpus, double rate) {
    for (const GpuSpec* gpu : gpus) {
      sim::StepCostModel cost(predictor_, *gpu, o_.base.overheads, o_.base.clocks);
      std::vector<Candidate> mine;
      for (const Variant& v : variants_)
      for (const auto& [tp, pp] : degrees()) {
        Candidate c;
        c.d = {gpu, tp, 1, v.s};
        c.d.pp = pp;
        if (const std::string why = does_not_fit(*gpu, v, tp, pp); !why.empty()) {
          c.why_not = why;
          out_.rejected.push_back(c);
          continue;
        }
        const int r_max = o_.max_gpus / (tp * pp);
        auto single = [&](int r) {
          return evaluate(*gpu, cost, v, tp, pp, 1, with_key(o_.workload, "rate", fmt("%.9g", rate / r)));
        };
        try {
          Evaluation top = single(r_max);
          if (!top.meets) {
            c.d.replicas = r_max;
            c.why_not = top.binding + " with " + std::to_string(r_max) + " replica" + (r_max > 1 ? "s" : "") +
                        " (the most --max-gpus " + std::to_string(o_.max_gpus) + " allows)";
            out_.rejected.push_back(c);
            continue;
          }
          Evaluation best = top;  // the evaluation of the fewest replicas that meet
          const int fewest = fewest_meeting(r_max, [&](int r) {
            Evaluation e = single(r);
            if (!e.meets) return false;
            best = std::move(e);
            return true;
          });
          c.d.replicas = fewest;
          c.feasible = true;
          fill(c, best, fewest == 1);
          mine.push_back(c);
        } catch (const std::exception& e) {
          c.why_not = e.what();
          out_.rejected.push_back(c);
        }
      }
      // Finalists: the cheapest few, simulated whole (R replicas behind the router at the full load);
      // R - 1 too, since a least-loaded router can do better than the split the search assumed.
      std::stable_sort(mine.begin(), mine.end(), [](const Candidate& a, const Candidate& b) {
        return a.d.gpus() != b.d.gpus() ? a.d.gpus() < b.d.gpus() : a.d.tp > b.d.tp;
      });
      const std::string spec = with_key(o_.workload, "rate", fmt("%.9g", rate));
      for (std::size_t i = 0; i < mine.size() && static_cast<int>(i) < o_.finalists; ++i) {
        Candidate& c = mine[i];
        if (c.simulated_whole) continue;
        const int r_max = o_.max_gpus / (c.d.tp * c.d.pp);
        std::optional<Evaluation> found;
        int r = std::max(1, c.d.replicas - 1);
        for (; r <= r_max; ++r) {
          Evaluation e = evaluate(*gpu, cost, variant_of(c.d.settings), c.d.tp, c.d.pp, r, spec);
          if (e.meets) {
            found = std::move(e);
            break;
          }
          if (r >= c.d.replicas && r == r_max) c.why_not = e.binding;
        }
        if (!found) {
          c.feasible = false;
          c.why_not = "the whole deployment misses the SLA up to " + std::to_string(r_max) + " replicas: " + c.why_not;
          continue;
        }
        c.d.replicas = r;
        fill(c, *found, true);
      }
      for (Candidate& c : mine) (c.feasible ? out_.ranked : out_.rejected).push_back(c);
    }
    if (o_.disaggregated) disaggregated(gpus, rate);
    if (o_.wide_ep && model_.has_moe()) wide_ep(gpus, rate);
    rank_candidates(out_.ranked);
  }

  void pareto(const std::vector<const GpuSpec*>& gpus, int64_t n) {
    for (const GpuSpec* gpu : gpus) {
      sim::StepCostModel& cost = cost_of(*gpu);
      // One point per concurrency of the closed loop, until one does not fit.
      auto sweep = [&](const Variant& v, const Deployment& d, const std::function<Evaluation(const std::string&)>& run) {
        for (int64_t conc = 1; conc <= v.s.max_num_seqs; conc *= 2) {
          std::string spec = with_key(o_.workload, "concurrency", std::to_string(conc));
          spec = with_key(spec, "n", std::to_string(std::max<int64_t>(n, 4 * conc)));
          try {
            const Evaluation e = run(spec);
            ParetoPoint p;
            p.gpu = gpu;
            p.tp = d.tp;
            p.pp = d.pp;
            p.prefill_replicas = d.disaggregated() ? d.replicas : 1;
            p.decode_replicas = d.disaggregated() ? d.decode_replicas : 0;
            p.settings = v.s;
            p.concurrency = static_cast<int>(conc);
            p.tokens_per_s_per_gpu = e.r.output_tokens_per_s / p.gpus();
            p.tokens_per_s_per_user = e.r.tpot_ms.mean > 0 ? 1000.0 / e.r.tpot_ms.mean : 0;
            p.ttft_p90_ms = e.r.ttft_ms.p90;
            p.tpot_p90_ms = e.r.tpot_ms.p90;
            p.meets_sla = e.meets;
            if (const Prices::Entry* pr = prices_.find(gpu->id); pr && e.r.output_tokens_per_s > 0) {
              p.priced = true;
              p.usd_per_million_output_tokens =
                  pr->usd_per_gpu_hour * p.gpus() / (e.r.output_tokens_per_s * 3600.0) * 1e6;
            }
            out_.pareto.push_back(p);
          } catch (const std::exception& ex) {
            Candidate c;
            c.d = d;
            c.why_not = "concurrency " + std::to_string(conc) + ": " + ex.what();
            out_.rejected.push_back(c);
            break;  // a higher concurrency will not fit either
          }
        }
      };
      auto left_out = [&](Deployment d, const std::string& why) {
        Candidate c;
        c.d = d;
        c.why_not = why;
        out_.rejected.push_back(c);
      };
      std::size_t first = out_.pareto.size();
      for (const Variant& v : variants_)
        for (const auto& [tp, pp] : degrees()) {
          Deployment d{gpu, tp, 1, v.s};
          d.pp = pp;
          if (const std::string why = does_not_fit(*gpu, v, tp, pp); !why.empty()) {
            left_out(d, why);
            continue;
          }
          sweep(v, d, [&, tp = tp, pp = pp](const std::string& spec) { return evaluate(*gpu, cost, v, tp, pp, 1, spec); });
        }
      mark_front(first);
      if (!o_.disaggregated) continue;
      // Disaggregated: prefill:decode instances of one TP x PP, 1:1 to 1:3 for decode-heavy work and
      // 2:1, 3:1 for long prompts (xPyD), within --max-gpus; its own front.
      static constexpr std::pair<int, int> kPrefillDecode[] = {{1, 1}, {1, 2}, {1, 3}, {2, 1}, {3, 1}};
      first = out_.pareto.size();
      for (const Variant& v : variants_)
        for (const auto& [tp, pp] : degrees()) {
          Deployment d{gpu, tp, 1, v.s};
          d.pp = d.decode_pp = pp;
          d.decode_gpu = gpu;
          d.decode_tp = tp;
          if (const std::string why = does_not_fit(*gpu, v, tp, pp); !why.empty()) {
            left_out(d, why);
            continue;
          }
          for (const auto& [prefill, decode] : kPrefillDecode) {
            if ((prefill + decode) * tp * pp > o_.max_gpus) continue;
            d.replicas = prefill;
            d.decode_replicas = decode;
            sweep(v, d, [&](const std::string& spec) { return evaluate_disaggregated(d, v, spec, false); });
          }
        }
      mark_front(first);
    }
  }

  // Marks the points from `first` on that no other of them dominates (as much throughput per GPU and
  // per user, more of one).
  void mark_front(std::size_t first) {
    for (std::size_t i = first; i < out_.pareto.size(); ++i) {
      ParetoPoint& p = out_.pareto[i];
      p.on_front = true;
      for (std::size_t j = first; j < out_.pareto.size() && p.on_front; ++j) {
        const ParetoPoint& q = out_.pareto[j];
        if (j != i && q.tokens_per_s_per_gpu >= p.tokens_per_s_per_gpu &&
            q.tokens_per_s_per_user >= p.tokens_per_s_per_user &&
            (q.tokens_per_s_per_gpu > p.tokens_per_s_per_gpu || q.tokens_per_s_per_user > p.tokens_per_s_per_user))
          p.on_front = false;
      }
    }
  }

 private:
  const sim::LlmConfig& model_;
  const std::vector<Variant>& variants_;
  const KernelPredictor& predictor_;
  const Prices& prices_;
  const PlanOptions& o_;
  PlanResult& out_;
  bool stopped_ = false;
  std::map<std::string, std::unique_ptr<sim::StepCostModel>> costs_;  // the disaggregated search's, per GPU
};

}  // namespace

void rank_candidates(std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.priced != b.priced) return a.priced;
    if (a.priced && a.usd_per_hour != b.usd_per_hour) return a.usd_per_hour < b.usd_per_hour;
    if (a.d.gpus() != b.d.gpus()) return a.d.gpus() < b.d.gpus();
    if (a.headroom != b.headroom) return a.headroom > b.headroom;
    if (a.d.gpu->id != b.d.gpu->id) return a.d.gpu->id < b.d.gpu->id;
    if (a.d.tp != b.d.tp) return a.d.tp < b.d.tp;
    if (a.d.pp != b.d.pp) return a.d.pp < b.d.pp;
    if (a.d.replicas != b.d.replicas) return a.d.replicas < b.d.replicas;
    if (a.d.wide_ep != b.d.wide_ep) return b.d.wide_ep;
    if (a.d.ep_groups != b.d.ep_groups) return a.d.ep_groups < b.d.ep_groups;
    if (a.d.settings != b.d.settings) return a.d.settings < b.d.settings;
    auto decode = [](const Deployment& d) {
      return std::make_tuple(d.decode_gpu ? d.decode_gpu->id : std::string(), d.decode_tp, d.decode_pp,
                             d.decode_replicas);
    };
    return decode(a.d) < decode(b.d);
  });
}

PlanResult plan_deployments(const sim::LlmConfig& model, const std::vector<const GpuSpec*>& gpus,
                            const KernelPredictor& predictor, const Prices& prices, const PlanOptions& options) {
  if (gpus.empty()) throw std::invalid_argument("no GPU to plan for (--gpus names none)");
  if (options.max_gpus < 1) throw std::invalid_argument("--max-gpus must be at least 1");
  if (options.pp.empty() || options.tp.empty()) throw std::invalid_argument("--tp and --pp must name a degree each");
  if (!(options.uncertainty >= 0 && options.uncertainty < 10))
    throw std::invalid_argument("--uncertainty must be a fraction from 0 (for example 0.2 for 20%)");
  PlanResult out;
  out.model = model.id;
  out.workload = options.workload;
  out.sla = options.sla;
  out.load = options.load;
  out.max_gpus = options.max_gpus;
  out.uncertainty = options.uncertainty;
  out.disaggregated = options.disaggregated;
  out.wide_ep = options.wide_ep;
  out.engine = std::string(sim::serving_engine_name(options.base.engine));
  if (options.wide_ep && !model.has_moe())
    out.notes.push_back("--wide-ep: " + model.id + " has no MoE layers; no wide-EP deployment was searched");
  out.kv_transfer_gb_s = options.kv_transfer_gb_s;
  for (const GpuSpec* g : gpus) out.gpu_types.push_back(g->id);
  const sim::Workload w = sim::parse_workload(options.workload);  // validates the spec up front
  for (const GpuSpec* g : gpus)
    if (!prices.find(g->id))
      out.notes.push_back(g->id + " has no price: ranked by its GPU count after the priced ones");
  // The engine settings searched, each with the model as it runs there; a method or dtype perfloom
  // does not know is refused here, one a GPU cannot serve is left out for that GPU.
  out.settings = options.settings;
  if (out.settings.empty()) {
    EngineSettings e;
    e.chunked_prefill = options.base.sched.chunked_prefill;
    e.max_num_seqs = options.base.sched.max_num_seqs;
    e.max_num_batched_tokens = options.base.sched.max_num_batched_tokens;
    out.settings.push_back(e);
  }
  std::vector<Variant> variants;
  for (const EngineSettings& e : out.settings) {
    if (e.max_num_seqs < 1) throw std::invalid_argument("--max-num-seqs must be at least 1");
    if (e.max_num_batched_tokens < 1) throw std::invalid_argument("--max-num-batched-tokens must be at least 1");
    Variant v{e, model, std::nullopt};
    if (!e.quantization.empty()) sim::apply_quantization(v.model, e.quantization);
    if (!e.kv_cache_dtype.empty()) v.kv_dtype = sim::parse_kv_cache_dtype(v.model, e.kv_cache_dtype);
    variants.push_back(std::move(v));
  }
  Planner p(model, variants, predictor, prices, options, out);
  if (options.load) {
    if (w.kind != sim::WorkloadKind::poisson)
      throw std::invalid_argument(
          "with --load the workload must be poisson:... (its rate is set from the load), got \"" + options.workload +
          "\"");
    double rate = options.load->value;
    if (options.load->kind == Load::Kind::output_tokens) {
      double out_tokens = 0;
      for (const auto& r : w.requests) out_tokens += static_cast<double>(r.output_tokens);
      rate = options.load->value / (out_tokens / static_cast<double>(w.requests.size()));
    }
    out.rate = rate;
    p.with_load(gpus, rate);
  } else {
    if (w.kind != sim::WorkloadKind::closed)
      throw std::invalid_argument("without --load the workload must be closed:... (its concurrency is swept), got \"" +
                                  options.workload + "\"");
    if (options.wide_ep) out.notes.push_back("--wide-ep: searched with a target load (--load) only");
    p.pareto(gpus, static_cast<int64_t>(w.requests.size()));
  }
  if (p.stopped()) throw PlanCancelled();
  return out;
}

}  // namespace perfloom::plan
