#include "model/sim/workload.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "model/file_reader.h"
#include "model/resources.h"
#include "model/text_fields.h"

namespace perfloom::sim {

namespace {

// SplitMix64: tiny, fast, and the same everywhere.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  double exponential(double rate) { return -std::log1p(-uniform01()) / rate; }
  int64_t uniform_int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Box-Muller, one value per call (the pair's second half is dropped so every draw costs the same).
  double normal() {
    const double u1 = 1.0 - uniform01(), u2 = uniform01();  // u1 in (0, 1]
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Marsaglia and Tsang's method; shape < 1 through Gamma(shape + 1) * U^(1/shape).
  double gamma(double shape) {
    if (shape < 1.0) return gamma(shape + 1.0) * std::pow(1.0 - uniform01(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = 0, v = 0;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = 1.0 - uniform01();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }
};

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("workload \"" + spec + "\": " + why);
}

// A length distribution: fixed, uniform on [lo, hi], or normal (rounded, at least 1).
struct Length {
  enum Kind { fixed, uniform, normal } kind = fixed;
  int64_t lo = 0, hi = 0;
  double mean = 0, sd = 0;
  int64_t draw(Rng& r) const {
    switch (kind) {
      case fixed:
        return lo;
      case uniform:
        return r.uniform_int(lo, hi);
      case normal:
        break;
    }
    const double v = std::round(mean + sd * r.normal());
    return v < 1 ? 1 : static_cast<int64_t>(std::min(v, 1e9));
  }
};

constexpr int64_t kMaxLength = 100'000'000;  // tokens: far past any context window, well inside int64

Length parse_length(const std::string& spec, const std::string& key, const std::string& value) {
  const std::vector<std::string> parts = split_fields(value, ':');
  Length l;
  auto length_at = [&](std::size_t i) {
    int64_t v = 0;
    if (!parse_int(parts[i], v) || v <= 0 || v > kMaxLength)
      bad(spec, key + ": \"" + parts[i] + "\" is not a length in tokens (1 to " + std::to_string(kMaxLength) + ")");
    return v;
  };
  if (parts.size() == 1) {
    l.lo = l.hi = length_at(0);
  } else if (parts.size() == 2 || (parts.size() == 3 && parts[0] == "uniform")) {
    const std::size_t at = parts.size() - 2;
    l.kind = Length::uniform;
    l.lo = length_at(at);
    l.hi = length_at(at + 1);
    if (l.hi < l.lo) bad(spec, key + " must be LO:HI with LO <= HI (got \"" + value + "\")");
    if (l.lo == l.hi) l.kind = Length::fixed;
  } else if (parts.size() == 3 && parts[0] == "normal") {
    l.kind = Length::normal;
    if (!parse_double(parts[1], l.mean) || l.mean < 1 || l.mean > static_cast<double>(kMaxLength))
      bad(spec, key + ": the normal's mean must be a length of at least 1 token (got \"" + parts[1] + "\")");
    if (!parse_double(parts[2], l.sd) || l.sd < 0 || l.sd > static_cast<double>(kMaxLength))
      bad(spec, key + ": the normal's standard deviation must be a non-negative number (got \"" + parts[2] + "\")");
  } else {
    bad(spec, key + " must be N, LO:HI, uniform:LO:HI or normal:MEAN:SD (got \"" + value + "\")");
  }
  return l;
}

std::map<std::string, std::string> parse_keys(const std::string& spec, const std::string& body,
                                              const std::vector<std::string>& allowed,
                                              const std::vector<std::string>& required) {
  std::map<std::string, std::string> kv;
  for (const std::string& part : split_fields(body, ',')) {
    if (part.empty()) bad(spec, "empty item (a doubled or trailing comma?)");
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad(spec, "\"" + part + "\" is not KEY=VALUE");
    const std::string key = trim(part.substr(0, eq)), value = trim(part.substr(eq + 1));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) {
        if (!list.empty()) list += ", ";
        list += a;
      }
      bad(spec, "unknown key \"" + key + "\" (expected " + list + ")");
    }
    if (kv.count(key)) bad(spec, "\"" + key + "\" given twice");
    kv[key] = value;
  }
  for (const auto& r : required)
    if (!kv.count(r)) bad(spec, "missing \"" + r + "=\"");
  return kv;
}

int64_t positive_int(const std::string& spec, const std::string& key, const std::string& v) {
  int64_t n = 0;
  if (!parse_int(v, n) || n <= 0) bad(spec, key + " must be a positive integer (got \"" + v + "\")");
  return n;
}

int64_t non_negative_int(const std::string& spec, const std::string& key, const std::string& v) {
  int64_t n = 0;
  if (!parse_int(v, n) || n < 0) bad(spec, key + " must be a non-negative integer (got \"" + v + "\")");
  return n;
}

struct LengthPair {
  int64_t input = 0, output = 0;
};

// Where a request's lengths come from: two distributions, or pairs drawn from a table.
struct LengthSource {
  Length input, output;
  std::vector<LengthPair> pairs;
  LengthPair draw(Rng& r) const {
    if (!pairs.empty())
      return pairs[static_cast<std::size_t>(r.uniform_int(0, static_cast<int64_t>(pairs.size()) - 1))];
    LengthPair p;
    p.input = input.draw(r);
    p.output = output.draw(r);
    return p;
  }
};

LengthSource parse_length_source(const std::string& spec, std::map<std::string, std::string>& kv) {
  LengthSource src;
  if (kv.count("lengths")) {
    if (kv.count("input") || kv.count("output"))
      bad(spec, "lengths= draws input and output together: give it without input= and output=");
    const std::string path = length_source_path(kv["lengths"]);
    for (const RequestSpec& r : read_trace_csv(path)) src.pairs.push_back({r.input_tokens, r.output_tokens});
    return src;
  }
  for (const char* key : {"input", "output"})
    if (!kv.count(key)) bad(spec, std::string("missing \"") + key + "=\" (or lengths=)");
  src.input = parse_length(spec, "input", kv["input"]);
  src.output = parse_length(spec, "output", kv["output"]);
  return src;
}

double positive_number(const std::string& spec, const std::string& key, const std::string& v, const char* what) {
  double x = 0;
  if (!parse_double(v, x) || x <= 0) bad(spec, key + " must be " + what + " (got \"" + v + "\")");
  return x;
}

// Sessions of `turns` requests each (the last one shorter when n does not divide), their heads at
// `head_arrival(session)` or released by the run. Turn k > 1 carries the conversation so far.
void generate_sessions(Workload& w, const std::string& spec, std::map<std::string, std::string>& kv, int64_t n,
                       Rng& rng, const std::function<double(int64_t)>& head_arrival, bool heads_by_run,
                       int64_t heads_at_start) {
  const LengthSource lengths = parse_length_source(spec, kv);
  const int64_t turns = kv.count("turns") ? positive_int(spec, "turns", kv["turns"]) : 1;
  if (turns == 1 && (kv.count("think") || kv.count("turn_input")))
    bad(spec, "think= and turn_input= describe multi-turn sessions: give turns= too");
  double think = 0;
  if (kv.count("think") && (!parse_double(kv["think"], think) || think < 0 || think > 1e6))
    bad(spec, "think must be a number of seconds from 0 to 1e6 (got \"" + kv["think"] + "\")");
  std::optional<Length> turn_input;
  if (kv.count("turn_input")) turn_input = parse_length(spec, "turn_input", kv["turn_input"]);
  w.requests.reserve(static_cast<std::size_t>(n));
  for (int64_t session = 0; static_cast<int64_t>(w.requests.size()) < n; ++session) {
    int64_t context = 0;  // the conversation so far: earlier prompts and answers
    const double head = heads_by_run && session >= heads_at_start ? 0.0 : head_arrival(session);
    for (int64_t turn = 0; turn < turns && static_cast<int64_t>(w.requests.size()) < n; ++turn) {
      LengthPair p = lengths.draw(rng);
      if (turn > 0 && turn_input) p.input = turn_input->draw(rng);
      RequestSpec r;
      r.session = session;
      r.input_tokens = context + p.input;
      r.output_tokens = p.output;
      if (r.input_tokens > kMaxLength)
        bad(spec, "a session's conversation grows past " + std::to_string(kMaxLength) + " tokens");
      if (turns > 1) {
        // The whole turn is the session's text up to its end: the next turn's prompt starts with it.
        r.prefix_id = session;
        r.prefix_tokens = r.input_tokens + r.output_tokens;
        r.think_s = think;
      }
      if (turn == 0) {
        r.arrival_s = head;
        r.released_by_run = heads_by_run && session >= heads_at_start;
      } else {
        r.released_by_run = true;
        w.requests.back().next_turn = static_cast<int64_t>(w.requests.size());
      }
      w.requests.push_back(r);
      context = r.input_tokens + r.output_tokens;
    }
  }
}

void parse_warmup(Workload& w, const std::string& spec, std::map<std::string, std::string>& kv, int64_t dflt) {
  w.warmup = kv.count("warmup") ? non_negative_int(spec, "warmup", kv["warmup"]) : dflt;
  w.cooldown = kv.count("cooldown") ? non_negative_int(spec, "cooldown", kv["cooldown"]) : dflt;
  const int64_t n = static_cast<int64_t>(w.requests.size());
  if (w.warmup + w.cooldown >= n)
    bad(spec, "warmup (" + std::to_string(w.warmup) + ") and cooldown (" + std::to_string(w.cooldown) +
                  ") leave none of the " + std::to_string(n) + " requests to measure");
}

}  // namespace

std::string length_source_path(const std::string& name) {
  if (name == "chat") return (resources_dir() / "workloads" / "azure-llm-2023-conv.csv.gz").string();
  if (name == "code") return (resources_dir() / "workloads" / "azure-llm-2023-code.csv.gz").string();
  if (name == "summarization") return (resources_dir() / "workloads" / "arxiv-summarization.csv.gz").string();
  return name;
}

Workload parse_workload(const std::string& spec) {
  Workload w;
  w.spec = spec;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) bad(spec, "expected batch:..., poisson:..., closed:... or trace:FILE.csv");
  const std::string kind = trim(spec.substr(0, colon)), body = spec.substr(colon + 1);
  constexpr int64_t kMaxRequests = 10'000'000;
  auto seeded = [&](std::map<std::string, std::string>& kv) {
    int64_t seed = 0;
    if (kv.count("seed") && (!parse_int(kv["seed"], seed) || seed < 0))
      bad(spec, "seed must be a non-negative integer (got \"" + kv["seed"] + "\")");
    return Rng{static_cast<uint64_t>(seed)};
  };
  const std::vector<std::string> generated_keys = {"n",     "input", "output",     "lengths", "seed",
                                                   "turns", "think", "turn_input", "warmup",  "cooldown"};
  if (kind == "batch") {
    w.kind = WorkloadKind::batch;
    auto kv = parse_keys(spec, body, {"n", "input", "output"}, {"n", "input", "output"});
    const int64_t n = positive_int(spec, "n", kv["n"]);
    const int64_t in = positive_int(spec, "input", kv["input"]);
    const int64_t out = positive_int(spec, "output", kv["output"]);
    if (n > kMaxRequests) bad(spec, "n is too large");
    RequestSpec r;
    r.input_tokens = in;
    r.output_tokens = out;
    w.requests.assign(static_cast<std::size_t>(n), r);
  } else if (kind == "poisson") {
    w.kind = WorkloadKind::poisson;
    std::vector<std::string> allowed = generated_keys;
    allowed.insert(allowed.begin(), {"rate", "burstiness"});
    auto kv = parse_keys(spec, body, allowed, {"rate", "n"});
    const double rate = positive_number(spec, "rate", kv["rate"], "a positive number of requests per second");
    if (rate < 1e-6 || rate > 1e9)
      bad(spec, "rate must be from 1e-6 to 1e9 requests per second (got \"" + kv["rate"] + "\")");
    const double burstiness = kv.count("burstiness") ? positive_number(spec, "burstiness", kv["burstiness"],
                                                                       "a positive number (1: Poisson; below 1: "
                                                                       "burstier; above 1: more regular)")
                                                     : 1.0;
    if (burstiness < 1e-3 || burstiness > 1e6)
      bad(spec, "burstiness must be from 0.001 to 1e6 (got \"" + kv["burstiness"] + "\")");
    const int64_t n = positive_int(spec, "n", kv["n"]);
    if (n > kMaxRequests) bad(spec, "n is too large");
    Rng rng = seeded(kv);
    // Gaps of mean 1/rate: exponential (Poisson) or Gamma(burstiness, 1/(rate*burstiness)), as vLLM draws them.
    double t = 0;
    auto next_arrival = [&](int64_t) {
      t += burstiness == 1.0 ? rng.exponential(rate) : rng.gamma(burstiness) / (rate * burstiness);
      return t;
    };
    generate_sessions(w, spec, kv, n, rng, next_arrival, false, 0);
    parse_warmup(w, spec, kv, 0);
  } else if (kind == "closed") {
    w.kind = WorkloadKind::closed;
    std::vector<std::string> allowed = generated_keys;
    allowed.insert(allowed.begin(), "concurrency");
    auto kv = parse_keys(spec, body, allowed, {"concurrency", "n"});
    w.concurrency = positive_int(spec, "concurrency", kv["concurrency"]);
    if (w.concurrency > 1'000'000) bad(spec, "concurrency is too large (at most 1000000)");
    const int64_t n = positive_int(spec, "n", kv["n"]);
    if (n > kMaxRequests) bad(spec, "n is too large");
    Rng rng = seeded(kv);
    generate_sessions(
        w, spec, kv, n, rng, [](int64_t) { return 0.0; }, true, w.concurrency);
    // The first C requests start together, a burst no steady state sees; the last C run while the load
    // drains. Both are left out unless the spec says otherwise (when n leaves enough to measure).
    const int64_t n_req = static_cast<int64_t>(w.requests.size());
    const int64_t dflt = 2 * w.concurrency < n_req ? w.concurrency : 0;
    parse_warmup(w, spec, kv, dflt);
  } else if (kind == "trace") {
    w.kind = WorkloadKind::trace;
    const std::string path = trim(body);
    if (path.empty()) bad(spec, "trace: needs a CSV file path");
    w.requests = read_trace_csv(path);
  } else {
    bad(spec, "unknown workload kind \"" + kind + "\" (expected batch, poisson, closed or trace)");
  }
  return w;
}

std::vector<RequestSpec> read_trace_csv(const std::string& path) {
  // The guarded reader (model/file_reader.h): a named pipe or a device is refused before it is read,
  // the file and its inflated text are bounded.
  std::string text;
  try {
    text = read_file_guarded(path, file_limits::workload_trace);
  } catch (const FileReadError& e) {
    throw std::invalid_argument("trace " + std::string(e.what()));
  }
  return parse_trace_csv(text, path);
}

std::vector<RequestSpec> parse_trace_csv(const std::string& text, const std::string& label) {
  static const std::vector<std::string> names = {"arrival_s", "input_tokens", "output_tokens", "prefix_id",
                                                 "prefix_tokens"};
  std::vector<int> col = {0, 1, 2, 3, 4};  // column of each name
  std::vector<RequestSpec> out;
  // A UTF-8 byte-order mark (spreadsheet exports write one) is skipped, as by every CSV reader.
  std::istringstream lines(text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? text.substr(3) : text);
  std::string line;
  int line_no = 0;
  bool first = true;
  std::size_t width = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const auto f = split_fields(line, ',');
    const std::string where = "trace " + label + ", line " + std::to_string(line_no) + ": ";
    double probe = 0;
    if (first && !parse_double(f[0], probe)) {  // a header row: map columns by name
      col.assign(5, -1);
      for (std::size_t i = 0; i < f.size(); ++i) {
        auto it = std::find(names.begin(), names.end(), f[i]);
        if (it == names.end())
          throw std::invalid_argument(where + "unknown column " + quote_excerpt(f[i]) +
                                      " (expected arrival_s,input_tokens,output_tokens[,prefix_id,prefix_tokens])");
        col[static_cast<std::size_t>(it - names.begin())] = static_cast<int>(i);
      }
      for (int i = 0; i < 3; ++i)
        if (col[static_cast<std::size_t>(i)] < 0)
          throw std::invalid_argument(where + "the header lacks " + names[static_cast<std::size_t>(i)]);
      if ((col[3] < 0) != (col[4] < 0)) throw std::invalid_argument(where + "prefix_id and prefix_tokens go together");
      width = f.size();
      first = false;
      continue;
    }
    first = false;
    if (width == 0) width = f.size();
    if (f.size() != width || (f.size() != 3 && f.size() != 5))
      throw std::invalid_argument(where + "expected " + std::to_string(width == 5 ? 5 : 3) + " fields, got " +
                                  std::to_string(f.size()));
    auto field = [&](int which) { return f[static_cast<std::size_t>(col[static_cast<std::size_t>(which)])]; };
    RequestSpec r;
    // Arrivals up to 1e8 s (3.2 years, beyond any recorded trace): later ones would leave the
    // millisecond statistics below double precision.
    constexpr double kMaxArrivalS = 1e8;
    if (!parse_double(field(0), r.arrival_s) || r.arrival_s < 0 || r.arrival_s > kMaxArrivalS)
      throw std::invalid_argument(where + "arrival_s must be a number from 0 to 1e8 s (got " + quote_excerpt(field(0)) +
                                  ")");
    if (!parse_int(field(1), r.input_tokens) || r.input_tokens <= 0 || r.input_tokens > kMaxLength)
      throw std::invalid_argument(where + "input_tokens must be an integer from 1 to " + std::to_string(kMaxLength) +
                                  " (got " + quote_excerpt(field(1)) + ")");
    if (!parse_int(field(2), r.output_tokens) || r.output_tokens <= 0 || r.output_tokens > kMaxLength)
      throw std::invalid_argument(where + "output_tokens must be an integer from 1 to " + std::to_string(kMaxLength) +
                                  " (got " + quote_excerpt(field(2)) + ")");
    if (f.size() == 5 && col[3] >= 0) {
      if (!field(3).empty() || !field(4).empty()) {
        if (!parse_int(field(3), r.prefix_id) || r.prefix_id < 0)
          throw std::invalid_argument(where + "prefix_id must be a non-negative integer (got " +
                                      quote_excerpt(field(3)) + ")");
        if (!parse_int(field(4), r.prefix_tokens) || r.prefix_tokens < 0 || r.prefix_tokens > r.input_tokens)
          throw std::invalid_argument(where + "prefix_tokens must be between 0 and input_tokens (got " +
                                      quote_excerpt(field(4)) + ")");
      }
    }
    out.push_back(r);
  }
  if (out.empty()) throw std::invalid_argument("trace " + label + ": no requests");
  std::stable_sort(out.begin(), out.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

}  // namespace perfloom::sim
