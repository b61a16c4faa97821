#include "model/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/sim/kv_cache.h"

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
    std::size_t used = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(v) || v <= 0 || v > 1e9)
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
  std::vector<int32_t> blocks;
  double first_token_s = -1, finish_s = -1;
  int preemptions = 0;
  int64_t cached_tokens = 0;
  bool in_flight = false, done = false;
  int64_t num_tokens() const { return spec.input_tokens + generated; }
};

struct Scheduled {
  int32_t req;
  int64_t new_tokens;
  int64_t context;
};

struct Flight {
  double end_s;
  std::vector<Scheduled> batch;
};

class Engine {
 public:
  Engine(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor, const SimulationConfig& sc,
         const SchedulerConfig& sched, const MemoryPlan& mem, const Workload& w, SimulationResult& out)
      : cfg_(cfg),
        sc_(sc),
        sched_(sched),
        pool_(mem.num_blocks, mem.block_size, sched.prefix_caching),
        cost_(predictor, gpu, sc.overheads, sc.clocks),
        out_(out) {
    const std::vector<RequestSpec>& specs = w.requests;
    reqs_.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Req r;
      r.spec = specs[i];
      r.owner = {static_cast<int64_t>(i), specs[i].prefix_id, specs[i].prefix_tokens};
      reqs_.push_back(std::move(r));
      if (!specs[i].released_by_run)
        arrivals_.push({specs[i].arrival_s, static_cast<int32_t>(i)});
      else if (w.concurrency > 0 && (i == 0 || specs[i - 1].next_turn != static_cast<int64_t>(i)))
        gated_heads_.push_back(static_cast<int32_t>(i));  // a closed-loop session waiting for a free client
    }
    arrival_order_.reserve(specs.size());
    step_opt_.context_quantum = mem.block_size;
    step_opt_.fp8_tensor_cores = gpu.supports(Dtype::fp8e4m3);
    step_opt_.kv_dtype = sc.memory.kv_dtype;
    step_opt_.kv_dtype_set = sc.memory.kv_dtype_set;
    step_opt_.attention_impl = sc.attention_impl;
  }

  void run() {
    const std::size_t n = reqs_.size();
    const double inf = std::numeric_limits<double>::infinity();
    std::size_t done = 0;
    double now = 0, slot_free_at = 0;
    std::vector<Flight> flights;
    int stuck = 0;
    while (done < n) {
      while (!arrivals_.empty() && arrivals_.top().time_s <= now) {
        const int32_t id = arrivals_.top().id;
        arrivals_.pop();
        arrival_order_.push_back(id);
        waiting_.push_back(id);
      }
      bool issued = false;
      if (static_cast<int>(flights.size()) < sc_.par.pp && now >= slot_free_at) {
        std::vector<Scheduled> batch = schedule();
        if (!batch.empty()) {
          issued = true;
          const double interval_s = issue(now, batch, flights);
          slot_free_at = now + interval_s;
        }
      }
      double t = inf;
      for (const Flight& f : flights) t = std::min(t, f.end_s);
      const bool slot_open = static_cast<int>(flights.size()) < sc_.par.pp;
      if (slot_open && !arrivals_.empty()) t = std::min(t, arrivals_.top().time_s);
      if (slot_open && slot_free_at > now) t = std::min(t, slot_free_at);
      if (t == inf) {
        throw std::runtime_error("the scheduler cannot make progress: " + std::to_string(waiting_.size()) +
                                 " requests wait but none can be scheduled (KV cache of " +
                                 std::to_string(pool_.num_blocks()) + " blocks, max_num_seqs " +
                                 std::to_string(sched_.max_num_seqs) + ")");
      }
      if (!issued && flights.empty() && t <= now && ++stuck > 4)
        throw std::runtime_error("the scheduler cannot make progress at t=" + std::to_string(now) + " s");
      now = std::max(now, t);
      // Finish the steps that end now, earliest first.
      std::sort(flights.begin(), flights.end(), [](const Flight& a, const Flight& b) { return a.end_s < b.end_s; });
      while (!flights.empty() && flights.front().end_s <= now) {
        done += complete(flights.front());
        flights.erase(flights.begin());
        stuck = 0;
      }
    }
  }

 private:
  void preempt(int32_t victim) {
    Req& v = reqs_[static_cast<std::size_t>(victim)];
    pool_.free(v.blocks);
    v.computed = 0;
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
      const int64_t new_tokens = std::min(r.num_tokens() - r.computed, budget);
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
      batch.push_back({id, new_tokens, r.computed});
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
        const int64_t computed = hit * pool_.block_size();
        int64_t new_tokens = r.num_tokens() - computed;
        if (!sched_.chunked_prefill && new_tokens > budget) break;
        new_tokens = std::min(new_tokens, budget);
        if (!pool_.allocate(r.blocks, r.owner, hit, computed + new_tokens)) break;
        waiting_.pop_front();
        running_.push_back(id);
        r.cached_tokens += computed;
        out_.cached_tokens += computed;
        batch.push_back({id, new_tokens, computed});
        r.computed = computed + new_tokens;
        r.in_flight = true;
        budget -= new_tokens;
      }
    }
    return batch;
  }

  // Predicts the step, records it, puts it in flight; returns when the next step may start (s).
  double issue(double now, std::vector<Scheduled>& batch, std::vector<Flight>& flights) {
    work_.clear();
    for (const Scheduled& s : batch) work_.push_back({s.new_tokens, s.context});
    const StepPlan plan = build_step(cfg_, sc_.par, work_, step_opt_);
    const StepCost c = cost_.cost(plan, sched_.cuda_graphs, false, &power_, now * 1e6);
    for (int i = 0; i < kBreakdownCount; ++i)
      out_.breakdown_us[static_cast<std::size_t>(i)] += c.breakdown_us[static_cast<std::size_t>(i)];
    out_.step_count += 1;
    if (plan.prefill_tokens > 0)
      last_prefill_end_s_ = std::max(last_prefill_end_s_, now + c.latency_us * 1e-6);
    else
      decode_step_ms_.push_back(c.latency_us * 1e-3);
    if (sc_.record_steps) {
      StepRecord s;
      s.start_s = now;
      s.duration_ms = c.latency_us * 1e-3;
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
    flights.push_back({now + c.latency_us * 1e-6, std::move(batch)});
    return c.interval_us * 1e-6;
  }

  // A finished request releases its session's next turn after the think time; a session's last turn
  // frees its closed-loop client for the next waiting session.
  void release_after(int32_t id, double finish_s) {
    const RequestSpec& spec = reqs_[static_cast<std::size_t>(id)].spec;
    if (spec.next_turn >= 0) {
      Req& next = reqs_[static_cast<std::size_t>(spec.next_turn)];
      next.spec.arrival_s = finish_s + spec.think_s;
      arrivals_.push({next.spec.arrival_s, static_cast<int32_t>(spec.next_turn)});
    } else if (next_gated_ < gated_heads_.size()) {
      const int32_t head = gated_heads_[next_gated_++];
      reqs_[static_cast<std::size_t>(head)].spec.arrival_s = finish_s;
      arrivals_.push({finish_s, head});
    }
  }

  // Applies a finished step; returns how many requests it completed.
  std::size_t complete(const Flight& f) {
    std::size_t finished = 0;
    int64_t sampled = 0;
    for (const Scheduled& s : f.batch) {
      Req& r = reqs_[static_cast<std::size_t>(s.req)];
      r.in_flight = false;
      pool_.cache_full_blocks(r.blocks, r.owner, r.computed);
      if (r.computed < r.num_tokens()) continue;  // a prompt chunk: nothing sampled yet
      r.generated += 1;
      if (r.first_token_s < 0) r.first_token_s = f.end_s;
      ++sampled;
      if (r.generated >= r.spec.output_tokens) {
        r.finish_s = f.end_s;
        r.done = true;
        pool_.free(r.blocks);
        ++finished;
        release_after(s.req, f.end_s);
      }
    }
    sampled_.push_back({f.end_s, sampled});
    if (finished)
      running_.erase(std::remove_if(running_.begin(), running_.end(),
                                    [&](int32_t id) { return reqs_[static_cast<std::size_t>(id)].done; }),
                     running_.end());
    return finished;
  }

 public:
  const std::vector<Req>& requests() const { return reqs_; }
  double last_prefill_end_s() const { return last_prefill_end_s_; }
  std::vector<double>& decode_step_ms() { return decode_step_ms_; }
  const StepCostModel& cost_model() const { return cost_; }
  const std::vector<int32_t>& arrival_order() const { return arrival_order_; }
  struct Sampled {
    double end_s;
    int64_t tokens;
  };
  const std::vector<Sampled>& sampled() const { return sampled_; }

 private:
  const LlmConfig& cfg_;
  const SimulationConfig& sc_;
  SchedulerConfig sched_;
  BlockPool pool_;
  StepCostModel cost_;
  PowerHistory power_;  // sustained clocks: the GPU's lagged load across steps
  SimulationResult& out_;
  StepOptions step_opt_;
  std::vector<Req> reqs_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;
  std::vector<SeqWork> work_;
  int32_t preempted_now_ = 0;
  double last_prefill_end_s_ = 0;
  std::vector<double> decode_step_ms_;
  struct Arrival {
    double time_s;
    int32_t id;
    bool operator>(const Arrival& o) const { return time_s != o.time_s ? time_s > o.time_s : id > o.id; }
  };
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;  // known, not yet arrived
  std::vector<int32_t> gated_heads_;  // closed loop: sessions waiting for a client, in order
  std::size_t next_gated_ = 0;
  std::vector<int32_t> arrival_order_;
  std::vector<Sampled> sampled_;  // tokens sampled per finished step
};

}  // namespace

SimulationResult simulate(const LlmConfig& cfg, const GpuSpec& gpu, const KernelPredictor& predictor, const Workload& w,
                          const SimulationConfig& config) {
  if (w.requests.empty()) throw std::invalid_argument("the workload has no requests");
  SimulationResult out;
  out.model = cfg.id;
  out.gpu = gpu.id;
  out.workload = w.spec;
  out.kind = w.kind;
  out.par = config.par;
  SchedulerConfig sched = config.sched;
  if (sched.max_num_seqs <= 0 || sched.max_num_batched_tokens <= 0)
    throw std::invalid_argument("max_num_seqs and max_num_batched_tokens must be positive");
  if (w.kind == WorkloadKind::batch) {
    // bench_one_batch style: the whole batch is one prefill step, then decodes together.
    const int64_t n = static_cast<int64_t>(w.requests.size());
    sched.max_num_seqs = std::max(sched.max_num_seqs, n);
    sched.max_num_batched_tokens = std::max(sched.max_num_batched_tokens, n * w.requests.front().input_tokens);
  }
  out.sched = sched;
  out.clocks = config.clocks;
  MemoryOptions mo = config.memory;
  mo.max_num_batched_tokens = sched.max_num_batched_tokens;
  mo.max_num_seqs = sched.max_num_seqs;
  validate_parallelism(cfg, config.par);
  out.memory = plan_memory(cfg, config.par, gpu, mo);

  const int64_t capacity = out.memory.kv_tokens();
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const RequestSpec& r = w.requests[i];
    const int64_t need = r.input_tokens + r.output_tokens - 1;
    if (need > capacity)
      throw std::runtime_error("request " + std::to_string(i) + " needs " + std::to_string(need) +
                               " tokens of KV cache, more than the whole cache holds (" + std::to_string(capacity) +
                               " tokens in " + std::to_string(out.memory.num_blocks) + " blocks)");
    if (!sched.chunked_prefill && need > sched.max_num_batched_tokens)
      throw std::runtime_error("request " + std::to_string(i) + " has " + std::to_string(need) +
                               " tokens, more than max_num_batched_tokens (" +
                               std::to_string(sched.max_num_batched_tokens) +
                               "), which chunked prefill off cannot schedule");
  }

  if (w.warmup < 0 || w.cooldown < 0 || w.warmup + w.cooldown >= static_cast<int64_t>(w.requests.size()))
    throw std::invalid_argument("warm-up and cool-down leave no request to measure");
  Engine engine(cfg, gpu, predictor, config, sched, out.memory, w, out);
  engine.run();

  const std::vector<Req>& reqs = engine.requests();
  const std::vector<int32_t>& order = engine.arrival_order();
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
    for (const auto& s : engine.sampled())
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
  out.prefill_ms = engine.last_prefill_end_s() * 1e3;
  out.median_decode_ms = latency_stats(engine.decode_step_ms()).p50;
  out.total_ms = last_finish * 1e3;
  out.predictions = engine.cost_model().cache_misses();
  out.prediction_cache_hits = engine.cost_model().cache_hits();
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
                      {"ttft_ms", q.ttft_ms()},
                      {"tpot_ms", q.tpot_ms()},
                      {"e2e_ms", q.e2e_ms()}});
    j["records"] = std::move(recs);
    json steps = json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"start_s", s.start_s},
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
