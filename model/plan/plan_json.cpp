#include "model/plan/plan_json.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "model/sim/engine.h"
#include "model/text_fields.h"

namespace perfloom::plan {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& label, const std::string& why) {
  throw std::invalid_argument(label + ": " + why);
}

const json& field(const json& j, const char* key, const std::string& label, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(label, where + " has no \"" + key + "\"");
  return j.at(key);
}

double number(const json& j, const char* key, const std::string& label, const std::string& where) {
  const json& v = field(j, key, label, where);
  if (!v.is_number()) bad(label, where + "." + key + " is not a number");
  return v.get<double>();
}

int integer(const json& j, const char* key, const std::string& label, const std::string& where, int lo, int hi) {
  const json& v = field(j, key, label, where);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    bad(label, where + "." + key + " is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v.get<int>();
}

std::string text(const json& j, const char* key, const std::string& label, const std::string& where) {
  const json& v = field(j, key, label, where);
  if (!v.is_string()) bad(label, where + "." + key + " is not a string");
  return v.get<std::string>();
}

const GpuSpec* gpu_of(const json& j, const GpuDatabase& gpus, const std::string& label, const std::string& where) {
  const std::string id = text(j, "gpu", label, where);
  const GpuSpec* g = gpus.find(id);
  if (!g) bad(label, where + ".gpu \"" + id.substr(0, 80) + "\" is no known GPU (perfloom gpus)");
  return g;
}

std::string sla_spec(const PlanSla& sla) {
  std::string s;
  for (const auto& b : sla.bounds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", b.ms);
    s += (s.empty() ? "" : ",") + b.name() + "=" + buf;
  }
  return s;
}

json settings_json(const EngineSettings& e) {
  return {{"quantization", e.quantization.empty() ? json(nullptr) : json(e.quantization)},
          {"kv_cache_dtype", e.kv_cache_dtype.empty() ? json(nullptr) : json(e.kv_cache_dtype)},
          {"chunked_prefill", e.chunked_prefill},
          {"max_num_seqs", e.max_num_seqs},
          {"max_num_batched_tokens", e.max_num_batched_tokens}};
}

EngineSettings settings_of(const json& s, const std::string& label, const std::string& at) {
  EngineSettings e;
  for (const char* key : {"quantization", "kv_cache_dtype"}) {
    const json& v = field(s, key, label, at);
    if (!v.is_null() && !v.is_string()) bad(label, at + "." + key + " is neither null nor a string");
    if (v.is_string()) (std::string(key) == "quantization" ? e.quantization : e.kv_cache_dtype) = v.get<std::string>();
  }
  const json& ch = field(s, "chunked_prefill", label, at);
  if (!ch.is_boolean()) bad(label, at + ".chunked_prefill must be true or false");
  e.chunked_prefill = ch.get<bool>();
  e.max_num_seqs = integer(s, "max_num_seqs", label, at, 1, 1 << 24);
  // Absent in plans written before the planner searched it: the default.
  if (s.contains("max_num_batched_tokens"))
    e.max_num_batched_tokens = integer(s, "max_num_batched_tokens", label, at, 1, 1 << 24);
  return e;
}

// A row's "settings" (absent in plans written before the planner searched them: the defaults).
EngineSettings settings_from(const json& j, const std::string& label, const std::string& where) {
  if (!j.is_object() || !j.contains("settings")) return EngineSettings{};
  return settings_of(j.at("settings"), label, where + ".settings");
}

json candidate_json(const Candidate& c, const PlanSla& sla) {
  json bounds = json::object();
  for (std::size_t i = 0; i < c.bound_values.size() && i < sla.bounds.size(); ++i)
    bounds[sla.bounds[i].name()] = c.bound_values[i];
  json j = {{"gpu", c.d.gpu->id}, {"gpus", c.d.gpus()}, {"tp", c.d.tp}, {"pp", c.d.pp}, {"replicas", c.d.replicas},
            {"settings", settings_json(c.d.settings)}, {"deployment", c.d.describe()}};
  if (c.d.wide_ep) {
    j["wide_ep"] = true;
    j["ep_groups"] = c.d.ep_groups;
    j["ep"] = c.d.ep();
  }
  if (c.d.disaggregated())
    j["decode"] = {{"gpu", c.d.decode_gpu->id},
                   {"tp", c.d.decode_tp},
                   {"pp", c.d.decode_pp},
                   {"replicas", c.d.decode_replicas}};
  if (!c.feasible) {
    j["why_not"] = c.why_not;
    return j;
  }
  j["simulated_whole"] = c.simulated_whole;
  j["sla_values_ms"] = bounds;
  j["ttft_p90_ms"] = c.ttft_p90_ms;
  j["tpot_p90_ms"] = c.tpot_p90_ms;
  j["e2e_p90_ms"] = c.e2e_p90_ms;
  j["output_tokens_per_s"] = c.output_tokens_per_s;
  j["requests_per_s"] = c.requests_per_s;
  j["headroom"] = c.headroom;
  j["at_risk"] = c.at_risk;
  j["usd_per_hour"] = c.priced ? json(c.usd_per_hour) : json(nullptr);
  j["usd_per_million_output_tokens"] = c.priced ? json(c.usd_per_million_output_tokens) : json(nullptr);
  return j;
}

Candidate candidate_from(const json& j, bool feasible, const PlanSla& sla, const GpuDatabase& gpus,
                         const std::string& label, const std::string& where) {
  Candidate c;
  c.feasible = feasible;
  c.d.gpu = gpu_of(j, gpus, label, where);
  c.d.tp = integer(j, "tp", label, where, 1, 4096);
  if (j.contains("pp")) c.d.pp = integer(j, "pp", label, where, 1, 4096);
  c.d.replicas = integer(j, "replicas", label, where, 1, 1 << 20);
  c.d.settings = settings_from(j, label, where);
  if (j.contains("wide_ep")) {
    if (!j.at("wide_ep").is_boolean()) bad(label, where + ".wide_ep must be true or false");
    c.d.wide_ep = j.at("wide_ep").get<bool>();
  }
  if (c.d.wide_ep && j.contains("ep_groups")) {
    c.d.ep_groups = integer(j, "ep_groups", label, where, 1, c.d.replicas);
    if (c.d.replicas % c.d.ep_groups != 0)
      bad(label, where + ".ep_groups: " + std::to_string(c.d.ep_groups) + " expert groups do not divide the " +
                     std::to_string(c.d.replicas) + " replicas");
  }
  if (j.contains("decode")) {
    const json& dec = j.at("decode");
    c.d.decode_gpu = gpu_of(dec, gpus, label, where + ".decode");
    c.d.decode_tp = integer(dec, "tp", label, where + ".decode", 1, 4096);
    if (dec.contains("pp")) c.d.decode_pp = integer(dec, "pp", label, where + ".decode", 1, 4096);
    c.d.decode_replicas = integer(dec, "replicas", label, where + ".decode", 1, 1 << 20);
  }
  if (!feasible) {
    c.why_not = text(j, "why_not", label, where);
    return c;
  }
  const json& sim = field(j, "simulated_whole", label, where);
  const json& risk = field(j, "at_risk", label, where);
  if (!sim.is_boolean() || !risk.is_boolean()) bad(label, where + ": simulated_whole and at_risk must be true or false");
  c.simulated_whole = sim.get<bool>();
  c.at_risk = risk.get<bool>();
  const json& values = field(j, "sla_values_ms", label, where);
  for (const auto& b : sla.bounds) c.bound_values.push_back(number(values, b.name().c_str(), label, where + ".sla_values_ms"));
  c.ttft_p90_ms = number(j, "ttft_p90_ms", label, where);
  c.tpot_p90_ms = number(j, "tpot_p90_ms", label, where);
  c.e2e_p90_ms = number(j, "e2e_p90_ms", label, where);
  c.output_tokens_per_s = number(j, "output_tokens_per_s", label, where);
  c.requests_per_s = number(j, "requests_per_s", label, where);
  c.headroom = number(j, "headroom", label, where);
  c.priced = !field(j, "usd_per_hour", label, where).is_null();
  if (c.priced) {
    c.usd_per_hour = number(j, "usd_per_hour", label, where);
    c.usd_per_million_output_tokens = number(j, "usd_per_million_output_tokens", label, where);
  }
  return c;
}

}  // namespace

Shard parse_shard(const std::string& spec) {
  const auto parts = split_fields(spec, '/');
  int64_t k = 0, n = 0;
  if (parts.size() != 2 || !parse_int(parts[0], k) || !parse_int(parts[1], n) || n < 1 || n > 4096 || k < 1 || k > n)
    throw std::invalid_argument("--shard \"" + spec.substr(0, 40) + "\": expected K/N with 1 <= K <= N <= 4096 (2/4: the "
                                "second of four shares of the GPU types)");
  return {static_cast<int>(k), static_cast<int>(n)};
}

std::vector<const GpuSpec*> shard_of(const std::vector<const GpuSpec*>& gpus, Shard shard) {
  std::vector<const GpuSpec*> out;
  for (std::size_t i = static_cast<std::size_t>(shard.index - 1); i < gpus.size(); i += static_cast<std::size_t>(shard.count))
    out.push_back(gpus[i]);
  return out;
}

json plan_to_json(const PlanResult& r, const Shard& shard, const std::vector<std::string>& all_gpu_types) {
  json j;
  j["model"] = r.model;
  j["workload"] = r.workload;
  j["sla"] = json::object();
  for (const auto& b : r.sla.bounds) j["sla"][b.name()] = b.ms;
  j["sla_spec"] = sla_spec(r.sla);  // the bounds in the order given
  if (r.load) {
    j["load"] = {{"value", r.load->value},
                 {"unit", r.load->kind == Load::Kind::requests ? "req/s" : "tok/s"},
                 {"requests_per_s", r.rate}};
    json ranked = json::array();
    for (const auto& c : r.ranked) ranked.push_back(candidate_json(c, r.sla));
    j["ranked"] = ranked;
  } else {
    json pts = json::array();
    for (const auto& p : r.pareto) {
      json q = {{"gpu", p.gpu->id},
                {"tp", p.tp},
                {"pp", p.pp},
                {"settings", settings_json(p.settings)},
                {"concurrency", p.concurrency},
                {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                {"tokens_per_s_per_user", p.tokens_per_s_per_user},
                {"ttft_p90_ms", p.ttft_p90_ms},
                {"tpot_p90_ms", p.tpot_p90_ms},
                {"meets_sla", p.meets_sla},
                {"on_front", p.on_front}};
      q["usd_per_million_output_tokens"] = p.priced ? json(p.usd_per_million_output_tokens) : json(nullptr);
      if (p.disaggregated()) {
        q["prefill_replicas"] = p.prefill_replicas;
        q["decode_replicas"] = p.decode_replicas;
      }
      pts.push_back(q);
    }
    j["pareto"] = pts;
  }
  json rej = json::array();
  for (const auto& c : r.rejected) rej.push_back(candidate_json(c, r.sla));
  j["rejected"] = rej;
  j["notes"] = r.notes;
  j["simulations"] = r.simulations;
  j["uncertainty"] = r.uncertainty;
  j["max_gpus"] = r.max_gpus;
  j["gpu_types"] = r.gpu_types;
  json searched = json::array();
  for (const auto& e : r.settings) searched.push_back(settings_json(e));
  j["engine_settings"] = searched;
  j["disaggregated"] = r.disaggregated;
  j["wide_ep"] = r.wide_ep;
  j["engine"] = r.engine;
  j["kv_transfer_gb_s"] = r.kv_transfer_gb_s;
  if (shard.count > 1)
    j["shard"] = {{"index", shard.index}, {"count", shard.count}, {"all_gpu_types", all_gpu_types}};
  return j;
}

PlanShard plan_from_json(const json& j, const GpuDatabase& gpus, const std::string& label) {
  if (!j.is_object()) bad(label, "not a plan (perfloom plan --json writes an object)");
  PlanShard s;
  PlanResult& r = s.result;
  r.model = text(j, "model", label, "the plan");
  r.workload = text(j, "workload", label, "the plan");
  try {
    r.sla = parse_plan_sla(text(j, "sla_spec", label, "the plan"));
  } catch (const std::invalid_argument& e) {
    bad(label, std::string("sla_spec: ") + e.what());
  }
  r.uncertainty = number(j, "uncertainty", label, "the plan");
  r.max_gpus = integer(j, "max_gpus", label, "the plan", 1, 4096);
  const json& sims = field(j, "simulations", label, "the plan");
  if (!sims.is_number_unsigned()) bad(label, "simulations is not a count");
  r.simulations = sims.get<std::size_t>();
  for (const json& g : field(j, "gpu_types", label, "the plan")) {
    if (!g.is_string()) bad(label, "gpu_types holds a non-string");
    r.gpu_types.push_back(g.get<std::string>());
  }
  if (j.contains("engine_settings")) {
    const json& es = j.at("engine_settings");
    if (!es.is_array()) bad(label, "engine_settings is not a list");
    for (std::size_t i = 0; i < es.size(); ++i)
      r.settings.push_back(settings_of(es[i], label, "engine_settings[" + std::to_string(i) + "]"));
  }
  if (r.settings.empty()) r.settings.push_back(EngineSettings{});
  if (j.contains("disaggregated")) {
    const json& d = j.at("disaggregated");
    if (!d.is_boolean()) bad(label, "disaggregated must be true or false");
    r.disaggregated = d.get<bool>();
    r.kv_transfer_gb_s = number(j, "kv_transfer_gb_s", label, "the plan");
  }
  if (j.contains("wide_ep")) {
    if (!j.at("wide_ep").is_boolean()) bad(label, "wide_ep must be true or false");
    r.wide_ep = j.at("wide_ep").get<bool>();
  }
  if (j.contains("engine")) {  // plans written before --engine: vLLM
    const json& e = j.at("engine");
    if (!e.is_string() || !sim::parse_serving_engine(e.get<std::string>()))
      bad(label, "engine must be \"vllm\" or \"sglang\"");
    r.engine = e.get<std::string>();
  }
  if (j.contains("load")) {
    const json& l = j.at("load");
    Load load;
    load.value = number(l, "value", label, "load");
    const std::string unit = text(l, "unit", label, "load");
    if (unit != "req/s" && unit != "tok/s") bad(label, "load.unit is neither req/s nor tok/s");
    load.kind = unit == "req/s" ? Load::Kind::requests : Load::Kind::output_tokens;
    r.load = load;
    r.rate = number(l, "requests_per_s", label, "load");
    const json& ranked = field(j, "ranked", label, "the plan");
    for (std::size_t i = 0; i < ranked.size(); ++i)
      r.ranked.push_back(candidate_from(ranked[i], true, r.sla, gpus, label, "ranked[" + std::to_string(i) + "]"));
  } else {
    const json& pts = field(j, "pareto", label, "the plan");
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const std::string where = "pareto[" + std::to_string(i) + "]";
      const json& q = pts[i];
      ParetoPoint p;
      p.gpu = gpu_of(q, gpus, label, where);
      p.tp = integer(q, "tp", label, where, 1, 4096);
      if (q.contains("pp")) p.pp = integer(q, "pp", label, where, 1, 4096);
      if (q.contains("decode_replicas")) p.decode_replicas = integer(q, "decode_replicas", label, where, 1, 4096);
      if (q.contains("prefill_replicas")) p.prefill_replicas = integer(q, "prefill_replicas", label, where, 1, 4096);
      p.settings = settings_from(q, label, where);
      p.concurrency = integer(q, "concurrency", label, where, 1, 1 << 24);
      p.tokens_per_s_per_gpu = number(q, "tokens_per_s_per_gpu", label, where);
      p.tokens_per_s_per_user = number(q, "tokens_per_s_per_user", label, where);
      p.ttft_p90_ms = number(q, "ttft_p90_ms", label, where);
      p.tpot_p90_ms = number(q, "tpot_p90_ms", label, where);
      const json& meets = field(q, "meets_sla", label, where);
      const json& front = field(q, "on_front", label, where);
      if (!meets.is_boolean() || !front.is_boolean()) bad(label, where + ": meets_sla and on_front must be true or false");
      p.meets_sla = meets.get<bool>();
      p.on_front = front.get<bool>();
      p.priced = !field(q, "usd_per_million_output_tokens", label, where).is_null();
      if (p.priced) p.usd_per_million_output_tokens = number(q, "usd_per_million_output_tokens", label, where);
      r.pareto.push_back(p);
    }
  }
  const json& rej = field(j, "rejected", label, "the plan");
  for (std::size_t i = 0; i < rej.size(); ++i)
    r.rejected.push_back(candidate_from(rej[i], false, r.sla, gpus, label, "rejected[" + std::to_string(i) + "]"));
  for (const json& n : field(j, "notes", label, "the plan")) {
    if (!n.is_string()) bad(label, "notes holds a non-string");
    r.notes.push_back(n.get<std::string>());
  }
  if (j.contains("shard")) {
    const json& sh = j.at("shard");
    s.shard.count = integer(sh, "count", label, "shard", 1, 4096);
    s.shard.index = integer(sh, "index", label, "shard", 1, s.shard.count);
    for (const json& g : field(sh, "all_gpu_types", label, "shard")) {
      if (!g.is_string()) bad(label, "shard.all_gpu_types holds a non-string");
      s.all_gpu_types.push_back(g.get<std::string>());
    }
  }
  return s;
}

PlanResult merge_plans(const std::vector<PlanShard>& shards, const std::vector<std::string>& labels) {
  if (shards.empty()) throw std::invalid_argument("--merge names no plan");
  const PlanShard& first = shards.front();
  const int n = first.shard.count;
  if (static_cast<int>(shards.size()) != n)
    throw std::invalid_argument(labels.front() + ": shard " + std::to_string(first.shard.index) + " of " +
                                std::to_string(n) + ", but " + std::to_string(shards.size()) +
                                " plans are given: merge the N shards of one run, each once");
  std::set<int> seen;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const PlanShard& s = shards[i];
    const PlanResult& a = s.result;
    const PlanResult& b = first.result;
    auto differs = [&](const std::string& what) {
      throw std::invalid_argument(labels[i] + ": " + what + " differs from " + labels.front() +
                                  "'s: these are not shards of one run");
    };
    if (s.shard.count != n) differs("the shard count");
    if (!seen.insert(s.shard.index).second)
      throw std::invalid_argument(labels[i] + ": shard " + std::to_string(s.shard.index) + " is given twice");
    if (a.model != b.model) differs("the model");
    if (a.workload != b.workload) differs("the workload");
    if (sla_spec(a.sla) != sla_spec(b.sla)) differs("the SLA");
    if (a.load.has_value() != b.load.has_value() ||
        (a.load && (a.load->value != b.load->value || a.load->kind != b.load->kind)))
      differs("the load");
    if (a.max_gpus != b.max_gpus) differs("--max-gpus");
    if (a.uncertainty != b.uncertainty) differs("--uncertainty");
    if (a.settings != b.settings) differs("the engine settings searched");
    if (a.disaggregated != b.disaggregated || a.kv_transfer_gb_s != b.kv_transfer_gb_s)
      differs("the disaggregated search (--disaggregated, --kv-transfer-gbps)");
    if (a.wide_ep != b.wide_ep) differs("the wide-EP search (--wide-ep)");
    if (a.engine != b.engine) differs("the serving engine (--engine)");
    if (s.all_gpu_types != first.all_gpu_types) differs("the GPU list");
  }
  PlanResult out;
  const PlanResult& b = first.result;
  out.model = b.model;
  out.workload = b.workload;
  out.sla = b.sla;
  out.load = b.load;
  out.rate = b.rate;
  out.max_gpus = b.max_gpus;
  out.uncertainty = b.uncertainty;
  out.settings = b.settings;
  out.disaggregated = b.disaggregated;
  out.wide_ep = b.wide_ep;
  out.engine = b.engine;
  out.kv_transfer_gb_s = b.kv_transfer_gb_s;
  out.gpu_types = n > 1 ? first.all_gpu_types : b.gpu_types;
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < out.gpu_types.size(); ++i) position.emplace(out.gpu_types[i], i);
  auto pos = [&](const std::string& id) {
    auto it = position.find(id);
    return it == position.end() ? position.size() : it->second;
  };
  // The shards in index order, so that everything below comes out as the whole run would give it.
  std::vector<const PlanResult*> order(static_cast<std::size_t>(n));
  for (const PlanShard& s : shards) order[static_cast<std::size_t>(s.shard.index - 1)] = &s.result;
  for (const PlanResult* r : order) {
    out.ranked.insert(out.ranked.end(), r->ranked.begin(), r->ranked.end());
    out.rejected.insert(out.rejected.end(), r->rejected.begin(), r->rejected.end());
    out.pareto.insert(out.pareto.end(), r->pareto.begin(), r->pareto.end());
    out.notes.insert(out.notes.end(), r->notes.begin(), r->notes.end());
    out.simulations += r->simulations;
  }
  rank_candidates(out.ranked);
  std::stable_sort(out.rejected.begin(), out.rejected.end(),
                   [&](const Candidate& x, const Candidate& y) { return pos(x.d.gpu->id) < pos(y.d.gpu->id); });
  std::stable_sort(out.pareto.begin(), out.pareto.end(),
                   [&](const ParetoPoint& x, const ParetoPoint& y) { return pos(x.gpu->id) < pos(y.gpu->id); });
  // Notes name their GPU first ("l40s has no price: ..."); others keep their place at the end.
  auto note_pos = [&](const std::string& note) { return pos(note.substr(0, note.find(' '))); };
  std::stable_sort(out.notes.begin(), out.notes.end(),
                   [&](const std::string& x, const std::string& y) { return note_pos(x) < note_pos(y); });
  return out;
}

}  // namespace perfloom::plan
