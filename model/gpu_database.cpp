#include "model/gpu_database.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace perfloom {

namespace embedded {
std::vector<std::pair<std::string_view, std::string_view>> gpu_files();  // generated
}

using nlohmann::json;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string type_name(const json& v) { return v.type_name(); }

// Reads fields of one object, remembering which were seen so that unknown keys (typos) are refused.
class FieldReader {
 public:
  FieldReader(const json& obj, std::string file, std::string prefix)
      : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

  void mark_seen(const std::string& key) { seen_.insert(key); }

  std::string string(const std::string& key, bool required) {
    seen_.insert(key);
    if (!obj_.contains(key)) {
      if (required) fail(key, "is required");
      return {};
    }
    const json& v = obj_.at(key);
    if (!v.is_string()) fail(key, "expected a string, got " + type_name(v));
    std::string s = v.get<std::string>();
    if (required && s.empty()) fail(key, "must not be empty");
    return s;
  }

  // A number within [lo, hi]; absent and optional gives `fallback`.
  double number(const std::string& key, bool required, double lo, double hi, double fallback) {
    seen_.insert(key);
    if (!obj_.contains(key)) {
      if (required) fail(key, "is required");
      return fallback;
    }
    const json& v = obj_.at(key);
    if (!v.is_number()) fail(key, "expected a number, got " + type_name(v));
    double x = v.get<double>();
    if (!(x >= lo && x <= hi)) {
      std::ostringstream os;
      os << "must be between " << lo << " and " << hi << " (got " << v.dump() << ")";
      fail(key, os.str());
    }
    return x;
  }

  int integer(const std::string& key, bool required, int lo, int hi, int fallback) {
    double x = number(key, required, lo, hi, fallback);
    if (x != static_cast<int>(x)) fail(key, "must be a whole number (got " + obj_.at(key).dump() + ")");
    return static_cast<int>(x);
  }

  const json& object(const std::string& key) {
    seen_.insert(key);
    const json& v = obj_.at(key);
    if (!v.is_object()) fail(key, "expected an object, got " + type_name(v));
    return v;
  }

  void refuse_unknown() const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it)
      if (!seen_.count(it.key())) fail(it.key(), "is not a known field (misspelt?)");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw GpuSpecError(file_, prefix_ + key, reason);
  }

 private:
  const json& obj_;
  std::string file_, prefix_;
  std::set<std::string> seen_;
};

const std::set<std::string> kArchitectures = {"pascal", "volta",     "turing", "ampere", "ada",
                                              "hopper", "blackwell", "cdna2",  "cdna3",  "cdna4",
                                              "xe-hpc", "xe2"};
const std::set<std::string> kTensorKeys = {"fp16", "bf16", "tf32", "fp8", "int8", "fp4"};
// Fields that are identity, not measured figures: they need no source.
const std::set<std::string> kIdentityFields = {"schema", "id",           "name",   "vendor",
                                               "aliases", "architecture", "compute_capability",
                                               "sources"};

}  // namespace

GpuSpec parse_gpu_spec(std::string_view json_text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw GpuSpecError(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw GpuSpecError(file, "", "expected a JSON object at the top level");

  FieldReader r(doc, file, "");
  GpuSpec g;
  g.source_file = file;
  if (r.string("schema", true) != "perfloom-gpu/1")
    r.fail("schema", "must be \"perfloom-gpu/1\" (got " + doc.at("schema").dump() + ")");
  g.id = r.string("id", true);
  if (!std::regex_match(g.id, std::regex("[a-z0-9][a-z0-9.-]*")))
    r.fail("id", "must be lowercase letters, digits, '-' and '.' (got \"" + g.id + "\")");
  g.name = r.string("name", true);
  g.vendor = r.string("vendor", true);
  if (g.vendor != "nvidia" && g.vendor != "amd" && g.vendor != "intel")
    r.fail("vendor", "must be nvidia, amd or intel (got \"" + g.vendor + "\")");
  g.architecture = r.string("architecture", true);
  if (!kArchitectures.count(g.architecture)) r.fail("architecture", "unknown architecture \"" + g.architecture + "\"");
  g.compute_capability = r.string("compute_capability", true);
  if (!std::regex_match(g.compute_capability, std::regex("[0-9]+\\.[0-9]+")))
    r.fail("compute_capability", "must look like \"9.0\" (got \"" + g.compute_capability + "\")");

  if (doc.contains("aliases")) {
    const json& a = doc.at("aliases");
    if (!a.is_array()) r.fail("aliases", "expected an array of strings, got " + type_name(a));
    for (const auto& s : a) {
      if (!s.is_string() || s.get<std::string>().empty())
        r.fail("aliases", "every alias must be a non-empty string (got " + s.dump() + ")");
      g.aliases.push_back(s.get<std::string>());
    }
  }
  r.mark_seen("aliases");

  g.sm_count = r.integer("sm_count", true, 1, 1024, 0);
  g.boost_clock_mhz = r.number("boost_clock_mhz", true, 100, 5000, 0);
  g.max_clock_mhz = r.number("max_clock_mhz", false, 100, 5000, 0);
  if (g.max_clock_mhz > 0 && g.max_clock_mhz < g.boost_clock_mhz)
    r.fail("max_clock_mhz", "is below boost_clock_mhz");
  g.fp32_lanes_per_sm = r.integer("fp32_lanes_per_sm", true, 1, 1024, 0);
  g.fp64_lanes_per_sm = r.integer("fp64_lanes_per_sm", false, 0, 1024, 0);
  g.sfu_ops_per_sm_per_clock = r.number("sfu_ops_per_sm_per_clock", false, 1, 1024, 16);
  g.memory_gib = r.number("memory_gib", true, 0.5, 4096, 0);
  g.memory_type = r.string("memory_type", false);
  g.memory_bandwidth_gb_s = r.number("memory_bandwidth_gb_s", true, 10, 100000, 0);
  g.l2_cache_mib = r.number("l2_cache_mib", true, 0.1, 2048, 0);
  g.shared_memory_per_sm_kib = r.number("shared_memory_per_sm_kib", false, 8, 1024, 64);
  g.max_shared_memory_per_block_kib =
      r.number("max_shared_memory_per_block_kib", false, 8, 1024, g.shared_memory_per_sm_kib);
  if (g.max_shared_memory_per_block_kib > g.shared_memory_per_sm_kib)
    r.fail("max_shared_memory_per_block_kib", "exceeds shared_memory_per_sm_kib");
  g.registers_per_sm = r.integer("registers_per_sm", false, 8192, 1 << 20, 65536);
  g.max_threads_per_sm = r.integer("max_threads_per_sm", false, 128, 4096, 2048);
  g.max_blocks_per_sm = r.integer("max_blocks_per_sm", false, 1, 128, 32);
  g.tdp_w = r.number("tdp_w", false, 1, 5000, 0);

  if (doc.contains("tensor_flops_per_sm_per_clock")) {
    const json& t = r.object("tensor_flops_per_sm_per_clock");
    FieldReader tr(t, file, "tensor_flops_per_sm_per_clock.");
    for (auto it = t.begin(); it != t.end(); ++it) {
      if (!kTensorKeys.count(it.key()))
        tr.fail(it.key(), "unknown dtype (expected one of fp16 bf16 tf32 fp8 int8 fp4)");
      g.tensor_flops_per_sm_per_clock[it.key()] = tr.number(it.key(), true, 1, 65536, 0);
    }
  } else {
    r.fail("tensor_flops_per_sm_per_clock", "is required (use {} for a GPU without tensor cores)");
  }

  if (doc.contains("interconnect")) {
    const json& ic = r.object("interconnect");
    FieldReader ir(ic, file, "interconnect.");
    g.interconnect.nvlink_bandwidth_gb_s = ir.number("nvlink_bandwidth_gb_s", false, 1, 100000, 0);
    g.interconnect.pcie_gen = ir.integer("pcie_gen", false, 1, 7, 0);
    g.interconnect.pcie_bandwidth_gb_s = ir.number("pcie_bandwidth_gb_s", false, 1, 10000, 0);
    ir.refuse_unknown();
  }

  if (!doc.contains("sources")) r.fail("sources", "is required: every figure needs its source");
  const json& src = r.object("sources");
  for (auto it = src.begin(); it != src.end(); ++it) {
    if (!it.value().is_string() || it.value().get<std::string>().empty())
      throw GpuSpecError(file, "sources." + it.key(), "must be a non-empty string");
    if (!doc.contains(it.key()) || kIdentityFields.count(it.key()))
      throw GpuSpecError(file, "sources." + it.key(), "names no figure of this file");
    g.sources[it.key()] = it.value().get<std::string>();
  }
  r.refuse_unknown();
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!kIdentityFields.count(it.key()) && !g.sources.count(it.key()))
      throw GpuSpecError(file, it.key(), "has no entry in \"sources\"");
  return g;
}

json gpu_spec_to_json(const GpuSpec& g) {
  json j;
  j["id"] = g.id;
  j["name"] = g.name;
  j["vendor"] = g.vendor;
  j["aliases"] = g.aliases;
  j["architecture"] = g.architecture;
  j["compute_capability"] = g.compute_capability;
  j["sm_count"] = g.sm_count;
  j["boost_clock_mhz"] = g.boost_clock_mhz;
  if (g.max_clock_mhz > 0) j["max_clock_mhz"] = g.max_clock_mhz;
  j["tensor_flops_per_sm_per_clock"] = g.tensor_flops_per_sm_per_clock;
  json peaks = json::object();
  for (Dtype d : kAllDtypes)
    if (auto p = g.peak_flops_per_s(d)) peaks[std::string(dtype_name(d))] = *p / 1e12;
  j["dense_peak_tflops"] = peaks;
  j["fp32_lanes_per_sm"] = g.fp32_lanes_per_sm;
  if (g.fp64_lanes_per_sm > 0) j["fp64_lanes_per_sm"] = g.fp64_lanes_per_sm;
  j["sfu_ops_per_sm_per_clock"] = g.sfu_ops_per_sm_per_clock;
  j["memory_gib"] = g.memory_gib;
  if (!g.memory_type.empty()) j["memory_type"] = g.memory_type;
  j["memory_bandwidth_gb_s"] = g.memory_bandwidth_gb_s;
  j["l2_cache_mib"] = g.l2_cache_mib;
  j["shared_memory_per_sm_kib"] = g.shared_memory_per_sm_kib;
  j["max_shared_memory_per_block_kib"] = g.max_shared_memory_per_block_kib;
  j["registers_per_sm"] = g.registers_per_sm;
  j["max_threads_per_sm"] = g.max_threads_per_sm;
  j["max_blocks_per_sm"] = g.max_blocks_per_sm;
  json ic = json::object();
  if (g.interconnect.nvlink_bandwidth_gb_s > 0) ic["nvlink_bandwidth_gb_s"] = g.interconnect.nvlink_bandwidth_gb_s;
  if (g.interconnect.pcie_gen > 0) ic["pcie_gen"] = g.interconnect.pcie_gen;
  if (g.interconnect.pcie_bandwidth_gb_s > 0) ic["pcie_bandwidth_gb_s"] = g.interconnect.pcie_bandwidth_gb_s;
  j["interconnect"] = ic;
  if (g.tdp_w > 0) j["tdp_w"] = g.tdp_w;
  // What the learned model takes the pipes to reach: measured (target-measured tier) or estimated.
  const AchievableRates ach = g.achievable ? *g.achievable : default_achievable_rates(g);
  // FLOP/s by tensor key, as TFLOP/s by dtype name.
  auto tflops_by_dtype = [](const std::map<std::string, double>& by_key) {
    json out = json::object();
    for (Dtype d : kAllDtypes)
      if (auto key = tensor_rate_key(d))
        if (auto it = by_key.find(std::string(*key)); it != by_key.end()) out[std::string(dtype_name(d))] = it->second / 1e12;
    return out;
  };
  const json tensor = tflops_by_dtype(ach.rates.tensor_flops_per_s);
  j["achievable"] = {{"tier", ach.measured ? "target-measured" : "cross-generation"},
                     {"origin", ach.origin},
                     {"tensor_tflops", tensor},
                     {"fp32_tflops", ach.rates.fma_flops_per_s / 1e12},
                     {"sfu_gops", ach.rates.sfu_ops_per_s / 1e9},
                     {"memory_bandwidth_gb_s", ach.rates.dram_bytes_per_s / 1e9},
                     {"memory_write_bandwidth_gb_s", ach.rates.dram_write_bytes_per_s / 1e9},
                     {"l2_gb_s", ach.rates.l2_bytes_per_s / 1e9},
                     {"smem_gb_s_per_sm", ach.rates.smem_bytes_per_s_per_sm / 1e9},
                     {"launch_floor_us", ach.rates.launch_floor_us}};
  if (ach.rates.dram_latency_ns > 0) j["achievable"]["dram_latency_ns"] = ach.rates.dram_latency_ns;
  if (ach.rates.l2_bulk_bytes_per_s > 0) j["achievable"]["l2_bulk_gb_s"] = ach.rates.l2_bulk_bytes_per_s / 1e9;
  if (ach.measured) j["achievable"]["launch_offset_us"] = ach.launch_offset_us;
  if (!ach.rates.mma_sync_flops_per_s.empty())
    j["achievable"]["mma_sync_tflops"] = tflops_by_dtype(ach.rates.mma_sync_flops_per_s);
  if (g.sustained) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& pt : g.sustained->points())
      pts.push_back({{"tensor_utilization", pt.utilization}, {"compute", pt.factors.compute}, {"memory", pt.factors.memory}});
    j["sustained_power"] = {{"origin", g.sustained->origin()}, {"slowdown_by_tensor_utilization", pts}};
  }
  j["sources"] = g.sources;
  j["source_file"] = g.source_file;
  return j;
}

GpuDatabase GpuDatabase::builtin() {
  GpuDatabase db;
  for (const auto& [path, text] : embedded::gpu_files()) db.add_json(text, std::string(path));
  std::sort(db.gpus_.begin(), db.gpus_.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.id < b.id; });
  for (Calibration& c : bundled_calibrations()) {
    const std::string id = db.add_calibration(c);
    db.bundled_fractions_[id] = achievable_fractions(c, *db.find(id));
  }
  db.refresh_achievable();
  return db;
}

std::string GpuDatabase::add_calibration(Calibration c) {
  const GpuSpec* gpu = find(c.gpu_name);
  if (!gpu)
    throw CalibrationError(c.file, "gpu_name",
                           "\"" + c.gpu_name + "\" names no known GPU (`perfloom gpus` lists them with their aliases)");
  achievable_fractions(c, *gpu);  // validates it against the spec
  sustained_power_curve(c, *gpu);  // and its sustained-power block, if any
  const std::string id = gpu->id;
  calibrations_[id] = std::move(c);
  refresh_achievable();
  return id;
}

void GpuDatabase::remove_calibration(std::string_view gpu_id) {
  calibrations_.erase(std::string(gpu_id));
  refresh_achievable();
}

const Calibration* GpuDatabase::calibration(std::string_view gpu_id) const {
  auto it = calibrations_.find(std::string(gpu_id));
  return it == calibrations_.end() ? nullptr : &it->second;
}

void GpuDatabase::exclude_from_defaults(const std::set<std::string>& gpu_ids) {
  excluded_from_defaults_ = gpu_ids;
  refresh_achievable();
}

void GpuDatabase::refresh_achievable() {
  std::vector<AchievableFractions> used;
  for (const auto& [id, f] : bundled_fractions_)
    if (!excluded_from_defaults_.count(id)) used.push_back(f);
  defaults_ = mean_fractions(used);
  for (GpuSpec& g : gpus_) {
    auto it = calibrations_.find(g.id);
    bool measured = false;
    g.sustained.reset();
    if (it != calibrations_.end()) {
      try {
        achievable_fractions(it->second, g);  // a spec replaced since (--gpus-dir) may no longer match
        g.achievable = measured_rates(it->second, g, defaults_);
        measured = true;
        g.sustained = sustained_power_curve(it->second, g);
      } catch (const CalibrationError&) {
      }
    }
    if (!measured) g.achievable = estimated_rates(g, defaults_);
  }
}

void GpuDatabase::add(GpuSpec gpu) {
  // Every name by which this GPU can be found must not already name another GPU.
  std::vector<std::string> names = gpu.aliases;
  names.push_back(gpu.id);
  names.push_back(gpu.name);
  for (const auto& n : names) {
    const GpuSpec* other = find(n);
    if (other && other->id != gpu.id)
      throw GpuSpecError(gpu.source_file, "aliases",
                         "\"" + n + "\" already names GPU '" + other->id + "' (" + other->source_file + ")");
  }
  auto same = std::find_if(gpus_.begin(), gpus_.end(), [&](const GpuSpec& g) { return g.id == gpu.id; });
  if (same != gpus_.end())
    *same = std::move(gpu);
  else
    gpus_.push_back(std::move(gpu));
  refresh_achievable();
}

void GpuDatabase::add_json(std::string_view json_text, const std::string& file_label) {
  add(parse_gpu_spec(json_text, file_label));
}

void GpuDatabase::add_directory(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw GpuSpecError(dir.string(), "", "is not a folder");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  GpuDatabase staged = *this;  // all or nothing
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw GpuSpecError(f.string(), "", "cannot be read");
    std::ostringstream ss;
    ss << in.rdbuf();
    staged.add_json(ss.str(), f.string());
  }
  *this = std::move(staged);
}

const GpuSpec* GpuDatabase::find(std::string_view key) const {
  const std::string k = lower(key);
  if (k.empty()) return nullptr;
  for (const auto& g : gpus_) {
    if (lower(g.id) == k || lower(g.name) == k) return &g;
    for (const auto& a : g.aliases)
      if (lower(a) == k) return &g;
  }
  return nullptr;
}

const GpuSpec& GpuDatabase::get(std::string_view key) const {
  if (const GpuSpec* g = find(key)) return *g;
  const std::string k = lower(key);
  std::string hint;
  for (const auto& g : gpus_) {
    bool close = lower(g.id).find(k) != std::string::npos || k.find(lower(g.id)) != std::string::npos;
    for (const auto& a : g.aliases) close = close || lower(a).find(k) != std::string::npos;
    if (close && !k.empty()) hint += (hint.empty() ? "" : ", ") + g.id;
  }
  throw std::invalid_argument("unknown GPU \"" + std::string(key) + "\"" +
                              (hint.empty() ? std::string("; `perfloom gpus` lists the known ones")
                                            : "; did you mean: " + hint + "?"));
}

}  // namespace perfloom
