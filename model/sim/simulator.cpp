#include "model/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
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
         const SchedulerConfig& sched, const MemoryPlan& mem, const std::vector<RequestSpec>& specs,
         SimulationResult& out)
      : cfg_(cfg),
        sc_(sc),
        sched_(sched),
        pool_(mem.num_blocks, mem.block_size, sched.prefix_caching),
        cost_(predictor, gpu, sc.overheads, sc.clocks),
        out_(out) {
    reqs_.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Req r;
      r.spec = specs[i];
      r.owner = {static_cast<int64_t>(i), specs[i].prefix_id, specs[i].prefix_tokens};
      reqs_.push_back(std::move(r));
    }
    step_opt_.context_quantum = mem.block_size;
    step_opt_.fp8_tensor_cores = gpu.supports(Dtype::fp8e4m3);
    step_opt_.kv_dtype = sc.memory.kv_dtype;
    step_opt_.kv_dtype_set = sc.memory.kv_dtype_set;
    step_opt_.attention_impl = sc.attention_impl;
  }

  void run() {
    const std::size_t n = reqs_.size();
    const double inf = std::numeric_limits<double>::infinity();
    std::size_t next_arrival = 0, done = 0;
    double now = 0, slot_free_at = 0;
    std::vector<Flight> flights;
    int stuck = 0;
    while (done < n) {
      while (next_arrival < n && reqs_[next_arrival].spec.arrival_s <= now)
        waiting_.push_back(static_cast<int32_t>(next_arrival++));
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
      if (slot_open && next_arrival < n) t = std::min(t, reqs_[next_arrival].spec.arrival_s);
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

  // Applies a finished step; returns how many requests it completed.
  std::size_t complete(const Flight& f) {
    std::size_t finished = 0;
    for (const Scheduled& s : f.batch) {
      Req& r = reqs_[static_cast<std::size_t>(s.req)];
      r.in_flight = false;
      pool_.cache_full_blocks(r.blocks, r.owner, r.computed);
      if (r.computed < r.num_tokens()) continue;  // a prompt chunk: nothing sampled yet
      r.generated += 1;
      if (r.first_token_s < 0) r.first_token_s = f.end_s;
      if (r.generated >= r.spec.output_tokens) {
        r.finish_s = f.end_s;
        r.done = true;
        pool_.free(r.blocks);
        ++finished;
      }
    }
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

  Engine engine(cfg, gpu, predictor, config, sched, out.memory, w.requests, out);
  engine.run();

  std::vector<double> ttft, tpot, e2e;
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  int64_t in_tokens = 0, out_tokens = 0;
  for (std::size_t i = 0; i < engine.requests().size(); ++i) {
    const Req& q = engine.requests()[i];
    RequestRecord rec;
    rec.id = static_cast<int64_t>(i);
    rec.arrival_s = q.spec.arrival_s;
    rec.first_token_s = q.first_token_s;
    rec.finish_s = q.finish_s;
    rec.input_tokens = q.spec.input_tokens;
    rec.output_tokens = q.spec.output_tokens;
    rec.cached_tokens = q.cached_tokens;
    rec.preemptions = q.preemptions;
    ttft.push_back(rec.ttft_ms());
    e2e.push_back(rec.e2e_ms());
    if (rec.output_tokens > 1) tpot.push_back(rec.tpot_ms());
    first_arrival = std::min(first_arrival, rec.arrival_s);
    last_finish = std::max(last_finish, rec.finish_s);
    in_tokens += rec.input_tokens;
    out_tokens += rec.output_tokens;
    out.requests.push_back(rec);
  }
  out.ttft_ms = latency_stats(std::move(ttft));
  out.tpot_ms = latency_stats(std::move(tpot));
  out.e2e_ms = latency_stats(std::move(e2e));
  out.duration_s = last_finish - first_arrival;
  if (out.duration_s > 0) {
    out.output_tokens_per_s = static_cast<double>(out_tokens) / out.duration_s;
    out.total_tokens_per_s = static_cast<double>(in_tokens + out_tokens) / out.duration_s;
    out.requests_per_s = static_cast<double>(out.requests.size()) / out.duration_s;
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
