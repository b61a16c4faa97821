#include "model/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/sim/kv_cache.h"
#include "model/text_fields.h"

namespace perfloom::sim {

LatencyStats latency_stats(std::vector<double> v) {
  LatencyStats s;
  s.count = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto pct = [&](double p) {  // linear interpolation between closest ranks (numpy's default)
    const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  s.p50 = pct(50);
  s.p90 = pct(90);
  s.p99 = pct(99);
  return s;
}

const char* router_policy_name(RouterPolicy p) {
  return p == RouterPolicy::round_robin ? "round-robin" : "least-loaded";
}

std::optional<RouterPolicy> parse_router_policy(const std::string& s) {
  if (s == "round-robin") return RouterPolicy::round_robin;
  if (s == "least-loaded") return RouterPolicy::least_loaded;
  return std::nullopt;
}

double Speculative::expected_tokens_per_step(int drafted) const {
  if (acceptance >= 1.0) return drafted + 1.0;
  return (1.0 - std::pow(acceptance, drafted + 1)) / (1.0 - acceptance);
}

Sla parse_sla(const std::string& spec) {
  Sla sla;
  auto bad = [&](const std::string& why) { throw std::invalid_argument("--sla \"" + spec + "\": " + why); };
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = spec.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos) bad("\"" + part + "\" is not KEY=MS (keys: ttft, tpot, e2e)");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    double* slot = key == "ttft" ? &sla.ttft_ms : key == "tpot" ? &sla.tpot_ms : key == "e2e" ? &sla.e2e_ms : nullptr;
    if (!slot) bad("unknown key \"" + key + "\" (expected ttft, tpot or e2e)");
    if (*slot > 0) bad("\"" + key + "\" given twice");
    double v = 0;
    if (!parse_double(value, v) || v <= 0 || v > 1e9)
      bad(key + " must be a positive number of milliseconds (got \"" + value + "\")");
    *slot = v;
  }
  return sla;
}

namespace {

struct Req {
  RequestSpec spec;
  BlockOwner owner;
  int64_t computed = 0;   // tokens whose KV is in the cache (or being written by a step in flight)
  int64_t generated = 0;  // output tokens sampled
  int64_t preloaded = 0;  // disaggregated decode: prompt tokens whose KV came from the prefill pool
  std::vector<int32_t> blocks;
  double first_token_s = -1, finish_s = -1;
  double kv_transfer_ms = 0;
  int preemptions = 0;
  int64_t cached_tokens = 0;
  int32_t instance = -1;   // the engine instance that finished it
  double spec_credit = 0;  // speculative decoding: expected tokens not yet emitted
  bool in_flight = false, done = false;
  int64_t num_tokens() const { return spec.input_tokens + generated; }
};

struct Scheduled {
  int32_t req;
  int64_t new_tokens;
  int64_t context;
  int32_t drafts = 0;  // speculative decoding: drafted tokens verified (new_tokens = drafts + 1)
};

struct Flight {
  double end_s;
  std::vector<Scheduled> batch;
};

// One engine instance (a vLLM process over its TP x PP GPUs): its KV cache, its scheduler, its steps
// in flight. The cluster (run_cluster) routes requests to instances and moves time forward.
class Engine {
 public:
  Engine(const LlmConfig& cfg, StepCostModel& cost, const Parallelism& par, const SimulationConfig& sc,
         const SchedulerConfig& sched, const MemoryPlan& mem, std::vector<Req>& reqs, SimulationResult& out,
         int32_t instance, bool prefill_only)
      : cfg_(cfg),
        par_(par),
        sc_(sc),
        sched_(sched),
        pool_(mem.num_blocks, mem.block_size, sched.prefix_caching),
        cost_(cost),
        reqs_(reqs),
        out_(out),
        instance_(instance),
        prefill_only_(prefill_only),
        draft_cfg_(sc.speculative.tokens > 0 ? (sc.speculative.draft ? &*sc.speculative.draft : &cfg) : nullptr) {
    step_opt_.context_quantum = mem.block_size;
    step_opt_.fp8_tensor_cores = cost.gpu().supports(Dtype::fp8e4m3);
    step_opt_.fp4_tensor_cores = nvfp4_on_tensor_cores(cost.gpu());
    step_opt_.kv_dtype = sc.memory.kv_dtype;
    step_opt_.kv_dtype_set = sc.memory.kv_dtype_set;
    // What simulate() chose for this pool's GPU and reports (SimulationResult::attention).
    step_opt_.attention_impl = (prefill_only ? out.prefill_attention : out.attention).impl;
    step_opt_.fuse_qk_norm_rope = engine_fuses_qk_norm_rope(sc.engine);
    step_opt_.expert_imbalance = sc.expert_imbalance;
  }

  void enqueue(int32_t id) { waiting_.push_back(id); }
  // Requests waiting or running here: what a least-loaded router compares.
  int64_t load() const { return static_cast<int64_t>(waiting_.size() + running_.size()); }
  bool has_flights() const { return !flights_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }
  int64_t num_blocks() const { return pool_.num_blocks(); }

  // Completes the steps that end at or before `now`, earliest first; appends the requests they
  // finished (a prefill-only instance: whose first token they sampled) and when.
  void complete_until(double now, std::vector<std::pair<int32_t, double>>& finished) {
    std::sort(flights_.begin(), flights_.end(), [](const Flight& a, const Flight& b) { return a.end_s < b.end_s; });
    while (!flights_.empty() && flights_.front().end_s <= now) {
      complete(flights_.front(), finished);
      flights_.erase(flights_.begin());
    }
  }

  // Issues a step at `now` if a pipeline slot is free and something can be scheduled.
  bool try_issue(double now) {
    if (static_cast<int>(flights_.size()) >= par_.pp || now < slot_free_at_) return false;
    std::vector<Scheduled> batch = schedule();
    if (batch.empty()) return false;
    slot_free_at_ = now + issue(now, batch);
    return true;
  }

  // Lockstep (the data-parallel attention ranks of one wide-EP group, whose MoE all-to-alls join
  // every rank's step): the group starts a step when every rank is free, each rank with what it
  // can schedule (an idle rank joins with none), and the step lasts as long as the slowest rank's.
  bool free_at(double now) const { return flights_.empty() && now >= slot_free_at_; }
  std::vector<Scheduled> schedule_batch() { return schedule(); }
  double batch_latency_us(double now, const std::vector<Scheduled>& batch) {
    return cost_batch(now, batch, false).c.latency_us;
  }
  void issue_for(double now, std::vector<Scheduled>& batch, double group_latency_us) {
    slot_free_at_ = now + issue(now, batch, group_latency_us);
  }
  void hold_until(double t) { slot_free_at_ = std::max(slot_free_at_, t); }

  // When something next happens here: a step ends, or a pipeline slot frees. inf: nothing.
  double next_time(double now) const {
    double t = std::numeric_limits<double>::infinity();
    for (const Flight& f : flights_) t = std::min(t, f.end_s);
    if (static_cast<int>(flights_.size()) < par_.pp && slot_free_at_ > now) t = std::min(t, slot_free_at_);
    return t;
  }

  // Disaggregated prefill: the blocks a finished prompt held until its KV left for the decode pool.
  void release_blocks(int32_t id) { pool_.free(reqs_[static_cast<std::size_t>(id)].blocks); }

  double last_prefill_end_s() const { return last_prefill_end_s_; }
  const std::vector<double>& decode_step_ms() const { return decode_step_ms_; }

 private:
  void preempt(int32_t victim) {
    Req& v = reqs_[static_cast<std::size_t>(victim)];
    pool_.free(v.blocks);
    v.computed = 0;
    v.preloaded = 0;  // a preempted request recomputes what it had received too
    v.preemptions += 1;
    out_.preemptions += 1;
    preempted_now_ += 1;
    waiting_.push_front(victim);
  }

  std::vector<Scheduled> schedule() {
    std::vector<Scheduled> batch;
    int64_t budget = sched_.max_num_batched_tokens;
    bool preempted = false;
    preempted_now_ = 0;
    // 1. Running requests, oldest first.
    for (std::size_t i = 0; i < running_.size() && budget > 0;) {
      const int32_t id = running_[i];
      Req& r = reqs_[static_cast<std::size_t>(id)];
      if (r.in_flight) {
        ++i;
        continue;
      }
      int64_t new_tokens = std::min(r.num_tokens() - r.computed, budget);
      int32_t drafts = 0;
      if (draft_cfg_ && !prefill_only_ && r.num_tokens() - r.computed == 1 && r.generated > 0) {
        // Decoding: draft up to k tokens, never past the answer's end, within the token budget.
        const int64_t left = r.spec.output_tokens - r.generated - 1;
        drafts = static_cast<int32_t>(std::min<int64_t>({sc_.speculative.tokens, left, budget - 1}));
        new_tokens += drafts;
      }
      bool ok = true;
      while (!pool_.allocate(r.blocks, r.owner, 0, r.computed + new_tokens)) {
        // Preempt the newest running request that is not in a step in flight.
        int victim_pos = -1;
        for (int j = static_cast<int>(running_.size()) - 1; j >= 0; --j)
          if (!reqs_[static_cast<std::size_t>(running_[static_cast<std::size_t>(j)])].in_flight) {
            victim_pos = j;
            break;
          }
        if (victim_pos < 0) {
          ok = false;
          break;
        }
        const int32_t victim = running_[static_cast<std::size_t>(victim_pos)];
        running_.erase(running_.begin() + victim_pos);
        preempt(victim);
        preempted = true;
        if (victim == id) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
      batch.push_back({id, new_tokens, r.computed, drafts});
      r.computed += new_tokens;
      r.in_flight = true;
      budget -= new_tokens;
      ++i;
    }
    // 2. Waiting requests, in order, unless this step preempted.
    if (!preempted) {
      while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < sched_.max_num_seqs) {
        const int32_t id = waiting_.front();
        Req& r = reqs_[static_cast<std::size_t>(id)];
        const int64_t hit = pool_.cached_prefix_blocks(r.owner, r.num_tokens());
        const int64_t computed = std::max(hit * pool_.block_size(), r.preloaded);
        int64_t new_tokens = r.num_tokens() - computed;
        if (!sched_.chunked_prefill && new_tokens > budget) break;
        new_tokens = std::min(new_tokens, budget);
        if (!pool_.allocate(r.blocks, r.owner, hit, computed + new_tokens)) break;
        waiting_.pop_front();
        running_.push_back(id);
        r.cached_tokens += hit * pool_.block_size();
        out_.cached_tokens += hit * pool_.block_size();
        batch.push_back({id, new_tokens, computed});
        r.computed = computed + new_tokens;
        r.in_flight = true;
        budget -= new_tokens;
      }
    }
    return batch;
  }

  // Predicts the step, records it, puts it in flight; returns when the next step may start (s).
  struct Costed {
    StepPlan plan;
    StepCost c;
    int32_t passes = 0;  // the draft's forward passes
    StepCost draft;
  };
  // A batch's step: its plan and cost, the speculative draft's passes included. `advance_power`:
  // move the sustained-power history past it (issue does; a lockstep group's estimate does not).
  Costed cost_batch(double now, const std::vector<Scheduled>& batch, bool advance_power) {
    Costed k;
    work_.clear();
    for (const Scheduled& s : batch) work_.push_back({s.new_tokens, s.context});
    k.plan = build_step(cfg_, par_, work_, step_opt_);
    k.c = cost_.cost(k.plan, sched_.cuda_graphs, false, advance_power ? &power_ : nullptr, now * 1e6);
    if (draft_cfg_) {
      // The draft proposes token by token for the requests it drafts for: as many forward passes as
      // the most drafted, in the same engine step (no scheduling time of their own).
      draft_work_.clear();
      for (const Scheduled& s : batch)
        if (s.drafts > 0) {
          draft_work_.push_back({1, s.context});
          k.passes = std::max(k.passes, s.drafts);
        }
      if (k.passes > 0) {
        const StepPlan dplan = build_step(*draft_cfg_, par_, draft_work_, step_opt_);
        k.draft = cost_.cost(dplan, sched_.cuda_graphs);
        const double pass_us = k.draft.latency_us - k.draft.host_us;
        k.c.latency_us += k.passes * pass_us;
        k.c.interval_us += k.passes * pass_us;
      }
    }
    return k;
  }

  // Starts a step; `at_least_us`: a lockstep group's step, as long as its slowest rank's. Returns
  // when the next step may start.
  double issue(double now, std::vector<Scheduled>& batch, double at_least_us = 0) {
    Costed k = cost_batch(now, batch, true);
    StepCost& c = k.c;
    const StepPlan& plan = k.plan;
    for (int i = 0; i < kBreakdownCount; ++i)
      out_.breakdown_us[static_cast<std::size_t>(i)] += c.breakdown_us[static_cast<std::size_t>(i)];
    if (k.passes > 0) {
      for (int i = 0; i < kBreakdownCount; ++i)
        if (i != kBreakdownHost)
          out_.breakdown_us[static_cast<std::size_t>(i)] += k.passes * k.draft.breakdown_us[static_cast<std::size_t>(i)];
      for (const Scheduled& s : batch)
        if (s.drafts > 0) out_.verify_seqs += 1;
      out_.draft_us += k.passes * (k.draft.latency_us - k.draft.host_us);
      out_.verify_steps += 1;
    }
    c.latency_us = std::max(c.latency_us, at_least_us);
    c.interval_us = std::max(c.interval_us, at_least_us);
    out_.step_count += 1;
    if (plan.prefill_tokens > 0)
      last_prefill_end_s_ = std::max(last_prefill_end_s_, now + c.latency_us * 1e-6);
    else
      decode_step_ms_.push_back(c.latency_us * 1e-3);
    if (sc_.record_steps) {
      StepRecord s;
      s.start_s = now;
      s.duration_ms = c.latency_us * 1e-3;
      s.instance = instance_;
      s.seqs = static_cast<int32_t>(plan.seqs);
      s.prefill_seqs = static_cast<int32_t>(plan.prefill_seqs);
      s.decode_seqs = static_cast<int32_t>(plan.decode_seqs);
      s.tokens = plan.tokens;
      s.prefill_tokens = plan.prefill_tokens;
      s.waiting = static_cast<int64_t>(waiting_.size());
      s.kv_blocks_used = pool_.used_blocks();
      s.preempted = preempted_now_;
      s.graphs = c.graphs;
      out_.steps.push_back(s);
    }
    flights_.push_back({now + c.latency_us * 1e-6, std::move(batch)});
    return c.interval_us * 1e-6;
  }

  // Applies a finished step.
  void complete(const Flight& f, std::vector<std::pair<int32_t, double>>& finished) {
    std::size_t before = finished.size();
    int64_t sampled = 0;
    for (const Scheduled& s : f.batch) {
      Req& r = reqs_[static_cast<std::size_t>(s.req)];
      r.in_flight = false;
      int64_t emitted = 1;
      if (s.drafts > 0) {
        // The accepted drafts and the token sampled after them; the rejected drafts' KV is dropped.
        r.spec_credit += sc_.speculative.expected_tokens_per_step(s.drafts);
        emitted = std::clamp<int64_t>(static_cast<int64_t>(std::floor(r.spec_credit + 1e-9)), 1, s.drafts + 1);
        r.spec_credit -= static_cast<double>(emitted);
        r.computed -= s.drafts + 1 - emitted;
        out_.verify_tokens += emitted;
      }
      pool_.cache_full_blocks(r.blocks, r.owner, r.computed);
      if (r.computed < r.num_tokens()) continue;  // a prompt chunk: nothing sampled yet
      r.generated += emitted;
      sampled += emitted;
      if (r.first_token_s < 0) r.first_token_s = f.end_s;
      if (prefill_only_ || r.generated >= r.spec.output_tokens) {
        r.done = true;
        r.instance = instance_;
        if (!prefill_only_) {  // a prompt's blocks stay until its KV has left for the decode pool
          r.finish_s = f.end_s;
          pool_.free(r.blocks);
        }
        finished.push_back({s.req, f.end_s});
      }
    }
    out_.sampled.push_back({f.end_s, sampled});
    if (finished.size() > before)
      running_.erase(std::remove_if(running_.begin(), running_.end(),
                                    [&](int32_t id) { return reqs_[static_cast<std::size_t>(id)].done; }),
                     running_.end());
  }

  const LlmConfig& cfg_;
  Parallelism par_;
  const SimulationConfig& sc_;
  SchedulerConfig sched_;
  BlockPool pool_;
  StepCostModel& cost_;
  PowerHistory power_;  // sustained clocks: the GPU's lagged load across steps
  std::vector<Req>& reqs_;
  SimulationResult& out_;
  int32_t instance_;
  bool prefill_only_;
  const LlmConfig* draft_cfg_;  // speculative decoding's draft; null: off
  std::vector<SeqWork> draft_work_;
  StepOptions step_opt_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;
  std::vector<Flight> flights_;
  std::vector<SeqWork> work_;
  double slot_free_at_ = 0;
  int32_t preempted_now_ = 0;
  double last_prefill_end_s_ = 0;
  std::vector<double> decode_step_ms_;
};

// A pool of identical engine instances behind a router.
struct Pool {
  std::vector<Engine> engines;
  RouterPolicy router = RouterPolicy::round_robin;
  std::size_t next = 0;  // round robin
  Engine& route() {
    if (router == RouterPolicy::round_robin) return engines[next++ % engines.size()];
    std::size_t best = 0;
    for (std::size_t i = 1; i < engines.size(); ++i)
      if (engines[i].load() < engines[best].load()) best = i;
    return engines[best];
  }
};

// Moves time forward over every instance: arrivals (known ones, later turns, closed-loop clients),
// steps, and for a disaggregated deployment the KV transfers from the prefill to the decode pool.
class Cluster {
 public:
  // `prefill_group`, `serve_group`: the ranks of a pool that step in lockstep (a wide-EP group's
  // data-parallel attention ranks: EP / TP consecutive instances); 1: each instance on its own.
  Cluster(std::vector<Req>& reqs, const Workload& w, Pool* prefill, Pool& serve, double transfer_s_per_token,
          int prefill_group = 1, int serve_group = 1)
      : reqs_(reqs), prefill_(prefill), serve_(serve), transfer_s_per_token_(transfer_s_per_token) {
    auto group = [&](Pool& pool, int size) {
      for (std::size_t i = 0; i < pool.engines.size(); i += static_cast<std::size_t>(std::max(1, size))) {
        std::vector<Engine*> g;
        for (std::size_t j = i; j < std::min(pool.engines.size(), i + static_cast<std::size_t>(std::max(1, size))); ++j)
          g.push_back(&pool.engines[j]);
        groups_.push_back(std::move(g));
      }
    };
    if (prefill_) group(*prefill_, prefill_group);
    group(serve_, serve_group);
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
      const RequestSpec& spec = w.requests[i];
      if (!spec.released_by_run)
        events_.push({spec.arrival_s, static_cast<int32_t>(i), Event::arrival});
      else if (w.concurrency > 0 && (i == 0 || w.requests[i - 1].next_turn != static_cast<int64_t>(i)))
        gated_heads_.push_back(static_cast<int32_t>(i));  // a closed-loop session waiting for a free client
    }
    arrival_order_.reserve(w.requests.size());
    if (prefill_) link_free_s_.assign(prefill_->engines.size(), 0.0);
  }

  // One step of a lockstep group: when every rank is free and one has work; each rank's batch, the
  // step as long as the slowest rank's, an idle rank held for it.
  bool issue_lockstep(std::vector<Engine*>& g, double now) {
    for (const Engine* e : g)
      if (!e->free_at(now)) return false;
    std::vector<std::vector<Scheduled>> batches(g.size());
    bool any = false;
    for (std::size_t i = 0; i < g.size(); ++i) {
      batches[i] = g[i]->schedule_batch();
      any = any || !batches[i].empty();
    }
    if (!any) return false;
    double slowest_us = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (!batches[i].empty()) slowest_us = std::max(slowest_us, g[i]->batch_latency_us(now, batches[i]));
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (batches[i].empty())
        g[i]->hold_until(now + slowest_us * 1e-6);
      else
        g[i]->issue_for(now, batches[i], slowest_us);
    }
    return true;
  }

  void run() {
    const std::size_t n = reqs_.size();
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<Engine*> all;
    if (prefill_)
      for (Engine& e : prefill_->engines) all.push_back(&e);
    for (Engine& e : serve_.engines) all.push_back(&e);
    std::vector<std::pair<int32_t, double>> finished;
    double now = 0;
    int stuck = 0;
    while (done_ < n) {
      // 1. Steps that end now: what they finished releases later turns, clients, transfers.
      for (std::size_t k = 0; k < all.size(); ++k) {
        all[k]->complete_until(now, finished);
        for (const auto& [id, t] : finished) on_finished(id, t, prefill_ && k < prefill_->engines.size(), k);
        if (!finished.empty()) stuck = 0;
        finished.clear();
      }
      if (done_ == n) break;
      // 2. Arrivals and transfers that are due.
      while (!events_.empty() && events_.top().time_s <= now) {
        const Event e = events_.top();
        events_.pop();
        if (e.kind == Event::arrival) {
          arrival_order_.push_back(e.id);
          (prefill_ ? prefill_->route() : serve_.route()).enqueue(e.id);
        } else {
          Req& r = reqs_[static_cast<std::size_t>(e.id)];
          prefill_->engines[static_cast<std::size_t>(e.from)].release_blocks(e.id);
          r.done = false;
          r.computed = 0;
          r.preloaded = r.spec.input_tokens;
          serve_.route().enqueue(e.id);
        }
      }
      // 3. Every instance (every lockstep group) schedules a step if it can.
      bool issued = false;
      for (std::vector<Engine*>& g : groups_) issued |= g.size() == 1 ? g.front()->try_issue(now) : issue_lockstep(g, now);
      double t = events_.empty() ? inf : events_.top().time_s;
      bool flights = false;
      for (const Engine* e : all) {
        t = std::min(t, e->next_time(now));
        flights |= e->has_flights();
      }
      if (t == inf) {
        std::size_t waiting = 0;
        int64_t blocks = 0;
        for (const Engine* e : all) {
          waiting += e->waiting();
          blocks = std::max(blocks, e->num_blocks());
        }
        throw std::runtime_error("the scheduler cannot make progress: " + std::to_string(waiting) +
                                 " requests wait but none can be scheduled (KV cache of " + std::to_string(blocks) +
                                 " blocks)");
      }
      if (!issued && !flights && t <= now && ++stuck > 4)
        throw std::runtime_error("the scheduler cannot make progress at t=" + std::to_string(now) + " s");
      now = std::max(now, t);
    }
  }

  const std::vector<int32_t>& arrival_order() const { return arrival_order_; }
  double kv_transfer_us() const { return kv_transfer_us_; }

 private:
  struct Event {
    double time_s;
    int32_t id;
    enum Kind { arrival, transfer_done } kind;
    int32_t from = -1;  // transfer: the prefill instance
    bool operator>(const Event& o) const {
      if (time_s != o.time_s) return time_s > o.time_s;
      if (kind != o.kind) return kind > o.kind;
      return id > o.id;
    }
  };

  void on_finished(int32_t id, double t, bool prefilled, std::size_t engine_index) {
    Req& r = reqs_[static_cast<std::size_t>(id)];
    if (prefilled && r.spec.output_tokens > 1) {
      // The prompt's KV goes over its prefill instance's link, one transfer after another.
      double& link = link_free_s_[engine_index];
      const double start = std::max(t, link);
      const double dur = transfer_s_per_token_ * static_cast<double>(r.spec.input_tokens);
      link = start + dur;
      r.kv_transfer_ms = (link - t) * 1e3;
      kv_transfer_us_ += dur * 1e6;
      events_.push({link, id, Event::transfer_done, static_cast<int32_t>(engine_index)});
      return;
    }
    if (prefilled) {  // a single-token answer is finished by its prefill
      prefill_->engines[engine_index].release_blocks(id);
      r.finish_s = t;
    }
    ++done_;
    // The session's next turn comes after the think time; a session's end frees its client.
    const RequestSpec& spec = r.spec;
    if (spec.next_turn >= 0) {
      Req& next = reqs_[static_cast<std::size_t>(spec.next_turn)];
      next.spec.arrival_s = t + spec.think_s;
      events_.push({next.spec.arrival_s, static_cast<int32_t>(spec.next_turn), Event::arrival});
    } else if (next_gated_ < gated_heads_.size()) {
      const int32_t head = gated_heads_[next_gated_++];
      reqs_[static_cast<std::size_t>(head)].spec.arrival_s = t;
      events_.push({t, head, Event::arrival});
    }
  }

  std::vector<Req>& reqs_;
  Pool* prefill_;
  Pool& serve_;
  double transfer_s_per_token_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<int32_t> gated_heads_;  // closed loop: sessions waiting for a client, in order
  std::size_t next_gated_ = 0;
  std::vector<int32_t> arrival_order_;
  std::vector<std::vector<Engine*>> groups_;  // every instance in one group (lockstep) or alone
  std::vector<double> link_free_s_;
  double kv_transfer_us_ = 0;
  std::size_t done_ = 0;
};

// The scheduler limits as applied, and the checks every request must pass against one pool.
SchedulerConfig applied_scheduler(const SimulationConfig& config, const Workload& w) {
  SchedulerConfig sched = config.sched;
  if (sched.max_num_seqs <= 0 || sched.max_num_batched_tokens <= 0)
    throw std::invalid_argument("max_num_seqs and max_num_batched_tokens must be positive");
  if (w.kind == WorkloadKind::batch) {
    // bench_one_batch style: the whole batch is one prefill step, then decodes together.
    const int64_t n = static_cast<int64_t>(w.requests.size());
    sched.max_num_seqs = std::max(sched.max_num_seqs, n);
    sched.max_num_batched_tokens = std::max(sched.max_num_batched_tokens, n * w.requests.front().input_tokens);
  }
  return sched;
}

void check_requests_fit(const Workload& w, const MemoryPlan& plan, const SchedulerConfig& sched, bool prompt_only,
                        const std::string& pool) {
  const int64_t capacity = plan.kv_tokens();
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const RequestSpec& r = w.requests[i];
    const int64_t need = prompt_only ? r.input_tokens : r.input_tokens + r.output_tokens - 1;
    if (need > capacity)
      throw std::runtime_error("request " + std::to_string(i) + " needs " + std::to_string(need) +
                               " tokens of KV cache, more than the whole cache" + pool + " holds (" +
                               std::to_string(capacity) + " tokens in " + std::to_string(plan.num_blocks) + " blocks)");
    if (!sched.chunked_prefill && need > sched.max_num_batched_tokens)
      throw std::runtime_error("request " + std::to_string(i) + " has " + std::to_string(need) +
                               " tokens, more than max_num_batched_tokens (" +
                               std::to_string(sched.max_num_batched_tokens) +
                               "), which chunked prefill off cannot schedule");
  }
}

}  // namespace

SimulationResult simulate(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor, const Workload& w,
                          const SimulationConfig& config) {
  if (w.requests.empty()) throw std::invalid_argument("the workload has no requests");
  const Deployment& dep = config.deployment;
  if (dep.replicas < 1 || dep.prefill_replicas < 1 || dep.decode_replicas < 1)
    throw std::invalid_argument("a deployment needs at least one instance in each pool");
  SimulationResult out;
  out.model = cfg.id;
  out.gpu = gpu.id;
  out.workload = w.spec;
  out.kind = w.kind;
  out.par = dep.disaggregated ? dep.decode_par : config.par;
  out.deployment = dep;
  const SchedulerConfig sched = applied_scheduler(config, w);
  out.sched = sched;
  out.clocks = config.clocks;
  MemoryOptions mo = config.memory;
  mo.max_num_batched_tokens = sched.max_num_batched_tokens;
  mo.max_num_seqs = sched.max_num_seqs;
  const GpuSpec& decode_gpu = dep.disaggregated && dep.decode_gpu ? *dep.decode_gpu : gpu;
  const GpuSpec& prefill_gpu = dep.disaggregated && dep.prefill_gpu ? *dep.prefill_gpu : gpu;
  out.engine = config.engine;
  out.attention = resolve_attention(config.attention_impl, config.engine, decode_gpu, cfg.head_dim, cfg.mla);
  if (dep.disaggregated)
    out.prefill_attention = resolve_attention(config.attention_impl, config.engine, prefill_gpu, cfg.head_dim, cfg.mla);
  validate_parallelism(cfg, out.par);
  if (!(config.expert_imbalance >= 1.0 && config.expert_imbalance <= 1e3))
    throw std::invalid_argument("the expert imbalance must be from 1 (balanced) to 1000 (got " +
                                std::to_string(config.expert_imbalance) + ")");
  // Wide EP: each group of EP/TP instances shares one set of experts, so the instances come in
  // whole groups.
  auto check_wide_ep = [](const Parallelism& p, int instances, const char* what) {
    if (p.ep > p.tp && instances % (p.ep / p.tp) != 0)
      throw std::invalid_argument(std::string("wide EP ") + std::to_string(p.ep) + " at TP " + std::to_string(p.tp) +
                                  " spreads the experts over " + std::to_string(p.ep / p.tp) +
                                  " data-parallel attention ranks: " + what + " must be a multiple of " +
                                  std::to_string(p.ep / p.tp) + " (got " + std::to_string(instances) + ")");
  };
  if (dep.disaggregated) {
    check_wide_ep(dep.prefill_par, dep.prefill_replicas, "--prefill-instances");
    check_wide_ep(dep.decode_par, dep.decode_replicas, "--decode-instances");
  } else {
    check_wide_ep(out.par, dep.replicas, "--dp");
  }
  out.memory = plan_memory(cfg, out.par, decode_gpu, mo);
  check_requests_fit(w, out.memory, sched, false, dep.disaggregated ? " of a decode instance" : "");
  double transfer_s_per_token = 0;
  if (dep.disaggregated) {
    validate_parallelism(cfg, dep.prefill_par);
    out.prefill_memory = plan_memory(cfg, dep.prefill_par, prefill_gpu, mo);
    check_requests_fit(w, out.prefill_memory, sched, true, " of a prefill instance");
    // Each decode rank receives its shard of the prompt's KV; each prefill rank sends 1/TP_p of all of
    // it; both over a per-GPU link. The slower side sets the time.
    double gb_s = dep.kv_transfer_gb_s;
    if (gb_s <= 0) {
      if (prefill_gpu.id != decode_gpu.id || prefill_gpu.interconnect.nvlink_bandwidth_gb_s <= 0)
        throw std::invalid_argument("a disaggregated deployment over GPUs without one NVLink domain (" +
                                    prefill_gpu.id + " to " + decode_gpu.id +
                                    ") needs the network bandwidth per GPU: --kv-transfer-gbps GB/S");
      gb_s = prefill_gpu.interconnect.nvlink_bandwidth_gb_s / 2;  // one direction
    }
    out.kv_transfer_gb_s = gb_s;
    const double per_decode_rank = out.memory.kv_bytes_per_token;
    const double total = per_decode_rank * dep.decode_par.tp * dep.decode_par.pp;
    const double per_prefill_rank = total / (dep.prefill_par.tp * dep.prefill_par.pp);
    transfer_s_per_token = std::max(per_decode_rank, per_prefill_rank) / (gb_s * 1e9);
  }
  if (w.warmup < 0 || w.cooldown < 0 || w.warmup + w.cooldown >= static_cast<int64_t>(w.requests.size()))
    throw std::invalid_argument("warm-up and cool-down leave no request to measure");
  SimulationConfig cfg_used = config;  // with the speculative draft made concrete
  Speculative& spec = cfg_used.speculative;
  if (spec.tokens < 0 || spec.tokens > 32)
    throw std::invalid_argument("speculative tokens must be from 0 to 32 (got " + std::to_string(spec.tokens) + ")");
  if (!(spec.acceptance >= 0 && spec.acceptance <= 1))
    throw std::invalid_argument("the acceptance rate must be in [0, 1] (got " + std::to_string(spec.acceptance) + ")");
  if (spec.tokens > 0) {
    if (out.par.pp > 1 || (dep.disaggregated && dep.prefill_par.pp > 1))
      throw std::invalid_argument("speculative decoding is simulated without pipeline parallelism");
    if (!spec.draft) {
      // One decoder layer of the target (an MoE layer where the target has them) and its head.
      LlmConfig head = cfg;
      head.id = cfg.id + " (draft layer)";
      const bool moe = cfg.has_moe() && cfg.moe_layer_count() > 0;
      head.layers = 1;
      head.moe_layers.assign(1, moe);
      head.sliding_layers.assign(1, false);
      head.mtp_layers = 0;
      spec.draft = std::move(head);
    } else {
      validate_parallelism(*spec.draft, out.par);
    }
  }

  out.speculative = spec;
  std::vector<Req> reqs(w.requests.size());
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    reqs[i].spec = w.requests[i];
    reqs[i].owner = {static_cast<int64_t>(i), w.requests[i].prefix_id, w.requests[i].prefix_tokens};
  }
  std::optional<StepCostModel> own_cost;
  StepCostModel* shared = config.shared_cost;
  const bool reuse = shared && shared->gpu().id == decode_gpu.id && shared->clocks() == config.clocks &&
                     shared->overheads() == config.overheads;
  if (!reuse) own_cost.emplace(predictor, decode_gpu, config.overheads, config.clocks);
  StepCostModel& serve_cost = reuse ? *shared : *own_cost;
  const std::size_t hits_before = serve_cost.cache_hits(), misses_before = serve_cost.cache_misses();
  std::optional<StepCostModel> own_prefill_cost;
  StepCostModel* prefill_cost = nullptr;
  std::size_t prefill_hits_before = 0, prefill_misses_before = 0;
  Pool prefill, serve;
  prefill.router = serve.router = dep.router;
  const int serve_count = dep.disaggregated ? dep.decode_replicas : dep.replicas;
  int32_t instance = 0;
  if (dep.disaggregated) {
    StepCostModel* sp = config.shared_prefill_cost;
    const bool reuse_prefill = sp && sp->gpu().id == prefill_gpu.id && sp->clocks() == config.clocks &&
                               sp->overheads() == config.overheads;
    if (!reuse_prefill) own_prefill_cost.emplace(predictor, prefill_gpu, config.overheads, config.clocks);
    prefill_cost = reuse_prefill ? sp : &*own_prefill_cost;
    prefill_hits_before = prefill_cost->cache_hits();
    prefill_misses_before = prefill_cost->cache_misses();
    prefill.engines.reserve(static_cast<std::size_t>(dep.prefill_replicas));
    for (int i = 0; i < dep.prefill_replicas; ++i)
      prefill.engines.emplace_back(cfg, *prefill_cost, dep.prefill_par, cfg_used, sched, out.prefill_memory, reqs, out,
                                   instance++, true);
  }
  serve.engines.reserve(static_cast<std::size_t>(serve_count));
  for (int i = 0; i < serve_count; ++i)
    serve.engines.emplace_back(cfg, serve_cost, out.par, cfg_used, sched, out.memory, reqs, out, instance++, false);
  // A wide-EP group's data-parallel attention ranks step in lockstep (their all-to-alls join them).
  auto lockstep_group = [&](const Parallelism& p) {
    return config.dp_lockstep && p.ep > p.tp && p.pp == 1 ? p.ep / p.tp : 1;
  };
  Cluster cluster(reqs, w, dep.disaggregated ? &prefill : nullptr, serve, transfer_s_per_token,
                  dep.disaggregated ? lockstep_group(dep.prefill_par) : 1, lockstep_group(out.par));
  cluster.run();
  out.kv_transfer_us = cluster.kv_transfer_us();

  const std::vector<int32_t>& order = cluster.arrival_order();
  const std::size_t n = reqs.size();
  std::vector<char> measured(n, 1);
  for (std::size_t k = 0; k < n; ++k)
    if (static_cast<int64_t>(k) < w.warmup || static_cast<int64_t>(k) >= static_cast<int64_t>(n) - w.cooldown)
      measured[static_cast<std::size_t>(order[k])] = 0;
  out.warmup = w.warmup;
  out.cooldown = w.cooldown;
  std::vector<double> ttft, tpot, e2e;
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Req& q = reqs[i];
    RequestRecord rec;
    rec.id = static_cast<int64_t>(i);
    rec.arrival_s = q.spec.arrival_s;
    rec.first_token_s = q.first_token_s;
    rec.finish_s = q.finish_s;
    rec.input_tokens = q.spec.input_tokens;
    rec.output_tokens = q.spec.output_tokens;
    rec.cached_tokens = q.cached_tokens;
    rec.preemptions = q.preemptions;
    rec.session = q.spec.session;
    rec.instance = q.instance;
    rec.kv_transfer_ms = q.kv_transfer_ms;
    rec.measured = measured[i] != 0;
    first_arrival = std::min(first_arrival, rec.arrival_s);
    last_finish = std::max(last_finish, rec.finish_s);
    if (rec.measured) {
      ttft.push_back(rec.ttft_ms());
      e2e.push_back(rec.e2e_ms());
      if (rec.output_tokens > 1) tpot.push_back(rec.tpot_ms());
      out.measured += 1;
      if (config.sla.set()) {
        const Sla& sla = config.sla;
        const bool met = (sla.ttft_ms <= 0 || rec.ttft_ms() <= sla.ttft_ms) &&
                         (sla.tpot_ms <= 0 || rec.output_tokens < 2 || rec.tpot_ms() <= sla.tpot_ms) &&
                         (sla.e2e_ms <= 0 || rec.e2e_ms() <= sla.e2e_ms);
        out.sla_met += met ? 1 : 0;
      }
    }
    out.requests.push_back(rec);
  }
  out.ttft_ms = latency_stats(std::move(ttft));
  out.tpot_ms = latency_stats(std::move(tpot));
  out.e2e_ms = latency_stats(std::move(e2e));
  out.duration_s = last_finish - first_arrival;
  // The throughput window (simulator.h); without warm-up and cool-down, the whole run.
  out.window_start_s = w.warmup > 0
                           ? reqs[static_cast<std::size_t>(order[static_cast<std::size_t>(w.warmup)])].spec.arrival_s
                           : first_arrival;
  out.window_end_s =
      w.cooldown > 0 ? reqs[static_cast<std::size_t>(order[n - static_cast<std::size_t>(w.cooldown)])].spec.arrival_s
                     : last_finish;
  const double window = out.window_end_s - out.window_start_s;
  if (window > 0) {
    auto in_window = [&](double t) { return t > out.window_start_s && t <= out.window_end_s; };
    int64_t sampled = 0, prompts = 0, finished = 0;
    for (const auto& s : out.sampled)
      if (in_window(s.end_s)) sampled += s.tokens;
    for (const RequestRecord& rec : out.requests) {
      if (in_window(rec.first_token_s)) prompts += rec.input_tokens;
      if (in_window(rec.finish_s)) finished += 1;
    }
    out.output_tokens_per_s = static_cast<double>(sampled) / window;
    out.total_tokens_per_s = static_cast<double>(prompts + sampled) / window;
    out.requests_per_s = static_cast<double>(finished) / window;
  }
  if (config.sla.set()) {
    out.sla = config.sla;
    out.sla_attainment = out.measured > 0 ? static_cast<double>(out.sla_met) / static_cast<double>(out.measured) : 0;
    out.goodput_requests_per_s = out.requests_per_s * out.sla_attainment;
  }
  std::vector<double> decode_ms;
  for (const Pool* p : {&prefill, &serve})
    for (const Engine& e : p->engines) {
      out.prefill_ms = std::max(out.prefill_ms, e.last_prefill_end_s() * 1e3);
      decode_ms.insert(decode_ms.end(), e.decode_step_ms().begin(), e.decode_step_ms().end());
    }
  out.median_decode_ms = latency_stats(std::move(decode_ms)).p50;
  out.total_ms = last_finish * 1e3;
  // (A prefill pool on the decode pool's own cost model is counted once.)
  const bool own_prefill_count = prefill_cost && prefill_cost != &serve_cost;
  out.predictions =
      serve_cost.cache_misses() - misses_before + (own_prefill_count ? prefill_cost->cache_misses() - prefill_misses_before : 0);
  out.prediction_cache_hits =
      serve_cost.cache_hits() - hits_before + (own_prefill_count ? prefill_cost->cache_hits() - prefill_hits_before : 0);
  return out;
}

nlohmann::json simulation_to_json(const SimulationResult& r, bool details) {
  using nlohmann::json;
  auto stats = [](const LatencyStats& s) {
    return json{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
  };
  json j;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["workload"] = r.workload;
  j["parallelism"] = {{"tp", r.par.tp}, {"pp", r.par.pp}, {"ep", r.par.ep}};
  j["clocks"] = clock_state_name(r.clocks);
  j["engine"] = serving_engine_name(r.engine);
  auto attention = [](const AttentionChoice& a) {
    return json{{"implementation", attention_impl_name(a.impl)}, {"reason", a.reason}};
  };
  j["attention"] = attention(r.attention);
  if (r.deployment.disaggregated) j["prefill_attention"] = attention(r.prefill_attention);
  j["scheduler"] = {{"max_num_seqs", r.sched.max_num_seqs},
                    {"max_num_batched_tokens", r.sched.max_num_batched_tokens},
                    {"chunked_prefill", r.sched.chunked_prefill},
                    {"prefix_caching", r.sched.prefix_caching},
                    {"cuda_graphs", r.sched.cuda_graphs}};
  j["memory"] = {{"memory_gib", r.memory.memory_gib},
                 {"usable_gib", r.memory.usable_gib},
                 {"weights_gib_per_gpu", r.memory.weights_gib},
                 {"activation_gib", r.memory.activation_gib},
                 {"reserve_gib", r.memory.reserve_gib},
                 {"kv_cache_gib", r.memory.kv_gib},
                 {"kv_bytes_per_token_per_gpu", r.memory.kv_bytes_per_token},
                 {"block_size", r.memory.block_size},
                 {"kv_blocks", r.memory.num_blocks},
                 {"kv_tokens", r.memory.kv_tokens()}};
  const Deployment& d = r.deployment;
  if (d.disaggregated) {
    auto pool = [](int instances, const std::string& gpu, const Parallelism& p, const MemoryPlan& m) {
      return json{{"instances", instances},
                  {"gpu", gpu},
                  {"tp", p.tp},
                  {"pp", p.pp},
                  {"ep", p.ep},
                  {"kv_tokens", m.kv_tokens()},
                  {"kv_blocks", m.num_blocks}};
    };
    j["deployment"] = {
        {"disaggregated", true},
        {"router", router_policy_name(d.router)},
        {"prefill",
         pool(d.prefill_replicas, d.prefill_gpu ? d.prefill_gpu->id : r.gpu, d.prefill_par, r.prefill_memory)},
        {"decode", pool(d.decode_replicas, d.decode_gpu ? d.decode_gpu->id : r.gpu, d.decode_par, r.memory)},
        {"kv_transfer_gb_s", r.kv_transfer_gb_s}};
  } else {
    j["deployment"] = {{"disaggregated", false}, {"replicas", d.replicas}, {"router", router_policy_name(d.router)}};
  }
  if (r.speculative.tokens > 0)
    j["speculative"] = {
        {"tokens", r.speculative.tokens},
        {"acceptance", r.speculative.acceptance},
        {"draft", r.speculative.draft ? r.speculative.draft->id : ""},
        {"expected_tokens_per_step", r.speculative.expected_tokens_per_step(r.speculative.tokens)},
        {"verify_steps", r.verify_steps},
        {"tokens_per_verify",
         r.verify_seqs > 0 ? static_cast<double>(r.verify_tokens) / static_cast<double>(r.verify_seqs) : 0.0},
        {"draft_us", r.draft_us}};
  j["requests"] = static_cast<int64_t>(r.requests.size());
  j["steps"] = r.step_count;
  j["preemptions"] = r.preemptions;
  j["prefix_cache_hit_tokens"] = r.cached_tokens;
  j["duration_s"] = r.duration_s;
  j["ttft_ms"] = stats(r.ttft_ms);
  j["tpot_ms"] = stats(r.tpot_ms);
  j["e2e_ms"] = stats(r.e2e_ms);
  j["throughput"] = {{"output_tokens_per_s", r.output_tokens_per_s},
                     {"total_tokens_per_s", r.total_tokens_per_s},
                     {"requests_per_s", r.requests_per_s}};
  j["measured"] = {{"requests", r.measured},
                   {"warmup", r.warmup},
                   {"cooldown", r.cooldown},
                   {"window_start_s", r.window_start_s},
                   {"window_end_s", r.window_end_s}};
  if (r.sla.set()) {
    json sla = json::object();
    if (r.sla.ttft_ms > 0) sla["ttft_ms"] = r.sla.ttft_ms;
    if (r.sla.tpot_ms > 0) sla["tpot_ms"] = r.sla.tpot_ms;
    if (r.sla.e2e_ms > 0) sla["e2e_ms"] = r.sla.e2e_ms;
    j["sla"] = {{"bounds", sla},
                {"met", r.sla_met},
                {"attainment", r.sla_attainment},
                {"goodput_requests_per_s", r.goodput_requests_per_s}};
  }
  if (r.kind == WorkloadKind::batch) {
    j["prefill_ms"] = r.prefill_ms;
    j["median_decode_ms"] = r.median_decode_ms;
    j["total_ms"] = r.total_ms;
  }
  json b = json::object();
  for (int i = 0; i < kBreakdownCount; ++i) b[breakdown_name(i)] = r.breakdown_us[static_cast<std::size_t>(i)];
  if (d.disaggregated) b["kv_transfer"] = r.kv_transfer_us;
  j["breakdown_us"] = b;
  j["predictions"] = {{"computed", r.predictions}, {"cache_hits", r.prediction_cache_hits}};
  if (details) {
    json recs = json::array();
    for (const auto& q : r.requests)
      recs.push_back({{"id", q.id},
                      {"arrival_s", q.arrival_s},
                      {"first_token_s", q.first_token_s},
                      {"finish_s", q.finish_s},
                      {"input_tokens", q.input_tokens},
                      {"output_tokens", q.output_tokens},
                      {"cached_tokens", q.cached_tokens},
                      {"preemptions", q.preemptions},
                      {"session", q.session},
                      {"measured", q.measured},
                      {"instance", q.instance},
                      {"kv_transfer_ms", q.kv_transfer_ms},
                      {"ttft_ms", q.ttft_ms()},
                      {"tpot_ms", q.tpot_ms()},
                      {"e2e_ms", q.e2e_ms()}});
    j["records"] = std::move(recs);
    json steps = json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"start_s", s.start_s},
                       {"instance", s.instance},
                       {"duration_ms", s.duration_ms},
                       {"seqs", s.seqs},
                       {"prefill_seqs", s.prefill_seqs},
                       {"decode_seqs", s.decode_seqs},
                       {"tokens", s.tokens},
                       {"prefill_tokens", s.prefill_tokens},
                       {"waiting", s.waiting},
                       {"kv_blocks_used", s.kv_blocks_used},
                       {"preempted", s.preempted},
                       {"cuda_graphs", s.graphs}});
    j["timeline"] = std::move(steps);
  }
  return j;
}

}  // namespace perfloom::sim
