#include "model/sim/workload.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace perfloom::sim {

namespace {

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

bool to_int(const std::string& s, int64_t& v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool to_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  try {
    std::size_t used = 0;
    v = std::stod(s, &used);
    return used == s.size() && std::isfinite(v);
  } catch (const std::exception&) {
    return false;
  }
}

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
};

// A length: a positive integer, or LO:HI drawn uniformly.
struct Length {
  int64_t lo = 0, hi = 0;
  int64_t draw(Rng& r) const { return lo == hi ? lo : r.uniform_int(lo, hi); }
};

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("workload \"" + spec + "\": " + why);
}

Length parse_length(const std::string& spec, const std::string& key, const std::string& value) {
  Length l;
  const auto colon = value.find(':');
  if (colon == std::string::npos) {
    if (!to_int(value, l.lo) || l.lo <= 0)
      bad(spec, key + " must be a positive integer or LO:HI (got \"" + value + "\")");
    l.hi = l.lo;
  } else if (!to_int(value.substr(0, colon), l.lo) || !to_int(value.substr(colon + 1), l.hi) || l.lo <= 0 ||
             l.hi < l.lo) {
    bad(spec, key + " must be LO:HI with 0 < LO <= HI (got \"" + value + "\")");
  }
  return l;
}

std::map<std::string, std::string> parse_keys(const std::string& spec, const std::string& body,
                                              const std::vector<std::string>& allowed,
                                              const std::vector<std::string>& required) {
  std::map<std::string, std::string> kv;
  for (const std::string& part : split(body, ',')) {
    if (part.empty()) bad(spec, "empty item (a doubled or trailing comma?)");
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad(spec, "\"" + part + "\" is not KEY=VALUE");
    const std::string key = trim(part.substr(0, eq)), value = trim(part.substr(eq + 1));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
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
  if (!to_int(v, n) || n <= 0) bad(spec, key + " must be a positive integer (got \"" + v + "\")");
  return n;
}

}  // namespace

Workload parse_workload(const std::string& spec) {
  Workload w;
  w.spec = spec;
  const auto colon = spec.find(':');
  if (colon == std::string::npos) bad(spec, "expected batch:..., poisson:... or trace:FILE.csv");
  const std::string kind = trim(spec.substr(0, colon)), body = spec.substr(colon + 1);
  if (kind == "batch") {
    w.kind = WorkloadKind::batch;
    auto kv = parse_keys(spec, body, {"n", "input", "output"}, {"n", "input", "output"});
    const int64_t n = positive_int(spec, "n", kv["n"]);
    const int64_t in = positive_int(spec, "input", kv["input"]);
    const int64_t out = positive_int(spec, "output", kv["output"]);
    if (n > 10'000'000) bad(spec, "n is too large");
    w.requests.assign(static_cast<std::size_t>(n), RequestSpec{0.0, in, out, -1, 0});
  } else if (kind == "poisson") {
    w.kind = WorkloadKind::poisson;
    auto kv = parse_keys(spec, body, {"rate", "n", "input", "output", "seed"}, {"rate", "n", "input", "output"});
    double rate = 0;
    if (!to_double(kv["rate"], rate) || rate <= 0)
      bad(spec, "rate must be a positive number of requests per second (got \"" + kv["rate"] + "\")");
    const int64_t n = positive_int(spec, "n", kv["n"]);
    if (n > 10'000'000) bad(spec, "n is too large");
    const Length in = parse_length(spec, "input", kv["input"]);
    const Length out = parse_length(spec, "output", kv["output"]);
    int64_t seed = 0;
    if (kv.count("seed") && (!to_int(kv["seed"], seed) || seed < 0))
      bad(spec, "seed must be a non-negative integer (got \"" + kv["seed"] + "\")");
    Rng rng{static_cast<uint64_t>(seed)};
    double t = 0;
    w.requests.reserve(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      t += rng.exponential(rate);
      RequestSpec r;
      r.arrival_s = t;
      r.input_tokens = in.draw(rng);
      r.output_tokens = out.draw(rng);
      w.requests.push_back(r);
    }
  } else if (kind == "trace") {
    w.kind = WorkloadKind::trace;
    const std::string path = trim(body);
    if (path.empty()) bad(spec, "trace: needs a CSV file path");
    w.requests = read_trace_csv(path);
  } else {
    bad(spec, "unknown workload kind \"" + kind + "\" (expected batch, poisson or trace)");
  }
  return w;
}

std::vector<RequestSpec> read_trace_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("trace " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_trace_csv(ss.str(), path);
}

std::vector<RequestSpec> parse_trace_csv(const std::string& text, const std::string& label) {
  static const std::vector<std::string> names = {"arrival_s", "input_tokens", "output_tokens", "prefix_id",
                                                 "prefix_tokens"};
  std::vector<int> col = {0, 1, 2, 3, 4};  // column of each name
  std::vector<RequestSpec> out;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  bool first = true;
  std::size_t width = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const auto f = split(line, ',');
    const std::string where = "trace " + label + ", line " + std::to_string(line_no) + ": ";
    double probe = 0;
    if (first && !to_double(f[0], probe)) {  // a header row: map columns by name
      col.assign(5, -1);
      for (std::size_t i = 0; i < f.size(); ++i) {
        auto it = std::find(names.begin(), names.end(), f[i]);
        if (it == names.end())
          throw std::invalid_argument(where + "unknown column \"" + f[i] +
                                      "\" (expected arrival_s,input_tokens,output_tokens[,prefix_id,prefix_tokens])");
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
    if (!to_double(field(0), r.arrival_s) || r.arrival_s < 0)
      throw std::invalid_argument(where + "arrival_s must be a non-negative number (got \"" + field(0) + "\")");
    if (!to_int(field(1), r.input_tokens) || r.input_tokens <= 0)
      throw std::invalid_argument(where + "input_tokens must be a positive integer (got \"" + field(1) + "\")");
    if (!to_int(field(2), r.output_tokens) || r.output_tokens <= 0)
      throw std::invalid_argument(where + "output_tokens must be a positive integer (got \"" + field(2) + "\")");
    if (f.size() == 5 && col[3] >= 0) {
      if (!field(3).empty() || !field(4).empty()) {
        if (!to_int(field(3), r.prefix_id) || r.prefix_id < 0)
          throw std::invalid_argument(where + "prefix_id must be a non-negative integer (got \"" + field(3) + "\")");
        if (!to_int(field(4), r.prefix_tokens) || r.prefix_tokens < 0 || r.prefix_tokens > r.input_tokens)
          throw std::invalid_argument(where + "prefix_tokens must be between 0 and input_tokens (got \"" + field(4) +
                                      "\")");
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
