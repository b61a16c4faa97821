#include "model/gpu_database.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/file_reader.h"
#include "model/json_fields.h"

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

constexpr FieldErrorFn kRaise = &throw_field_error<GpuSpecError>;
constexpr std::size_t kMaxIdChars = 64, kMaxNameChars = 256;

// "[a-z0-9][a-z0-9.-]*", by hand: std::regex recurses per character and a hostile id can be megabytes.
bool is_gpu_id(std::string_view id) {
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (id.empty() || !lower_or_digit(id[0])) return false;
  return std::all_of(id.begin(), id.end(), [&](char c) { return lower_or_digit(c) || c == '.' || c == '-'; });
}

// "[0-9]+[.][0-9]+" ("9.0"), by hand for the same reason.
bool is_compute_capability(std::string_view cc) {
  const std::size_t dot = cc.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return dot != std::string_view::npos && digits(cc.substr(0, dot)) && digits(cc.substr(dot + 1));
}

const std::set<std::string> kArchitectures = {"pascal",    "volta", "turing", "ampere", "ada",    "hopper",
                                              "blackwell", "cdna2", "cdna3",  "cdna4",  "xe-hpc", "xe2"};
const std::set<std::string> kTensorKeys = {"fp16", "bf16", "tf32", "fp8", "int8", "fp4"};
// Fields that are identity, not measured figures: they need no source.
const std::set<std::string> kIdentityFields = {
    "schema", "id", "name", "vendor", "aliases", "architecture", "compute_capability", "sources"};

}  // namespace

GpuSpec parse_gpu_spec(std::string_view json_text, const std::string& file) {
  using R = NumberRange;
  const json doc = parse_json_object(json_text, file, kRaise);
  const JsonFields r(doc, file, kRaise);
  GpuSpec g;
  g.source_file = file;
  if (const std::string schema = r.string("schema"); schema != "perfloom-gpu/1")
    r.fail("schema", "must be \"perfloom-gpu/1\" (got " + quote_excerpt(schema) + ")");
  g.id = r.string("id");
  if (!is_gpu_id(g.id))
    r.fail("id", "must be lowercase letters, digits, '-' and '.' (got " + quote_excerpt(g.id) + ")");
  // Names are echoed in tables and messages: a GPU's longest real name is some 60 characters.
  auto bounded = [&](const std::string& field, const std::string& v, std::size_t max) {
    if (v.size() > max)
      r.fail(field, "is " + std::to_string(v.size()) + " characters long; at most " + std::to_string(max) + " (got " +
                        quote_excerpt(v) + ")");
  };
  bounded("id", g.id, kMaxIdChars);
  g.name = r.string("name");
  bounded("name", g.name, kMaxNameChars);
  g.vendor = r.string("vendor");
  if (g.vendor != "nvidia" && g.vendor != "amd" && g.vendor != "intel")
    r.fail("vendor", "must be nvidia, amd or intel (got " + quote_excerpt(g.vendor) + ")");
  g.architecture = r.string("architecture");
  if (!kArchitectures.count(g.architecture))
    r.fail("architecture", "unknown architecture " + quote_excerpt(g.architecture));
  g.compute_capability = r.string("compute_capability");
  if (!is_compute_capability(g.compute_capability))
    r.fail("compute_capability", "must look like \"9.0\" (got " + quote_excerpt(g.compute_capability) + ")");
  if (const auto aliases = r.optional("aliases"))
    for (const JsonValue& a : aliases->array()) {
      g.aliases.push_back(a.string(false));
      if (g.aliases.back().size() > kMaxNameChars)
        a.fail("is " + std::to_string(g.aliases.back().size()) + " characters long; at most " +
               std::to_string(kMaxNameChars) + " (got " + quote_excerpt(g.aliases.back()) + ")");
    }

  g.sm_count = static_cast<int>(r.integer("sm_count", R::between(1, 1024)));
  g.boost_clock_mhz = r.number("boost_clock_mhz", R::between(100, 5000));
  g.max_clock_mhz = r.number_or("max_clock_mhz", 0, R::between(100, 5000));
  if (g.max_clock_mhz > 0 && g.max_clock_mhz < g.boost_clock_mhz) r.fail("max_clock_mhz", "is below boost_clock_mhz");
  g.fp32_lanes_per_sm = static_cast<int>(r.integer("fp32_lanes_per_sm", R::between(1, 1024)));
  g.fp64_lanes_per_sm = static_cast<int>(r.integer_or("fp64_lanes_per_sm", 0, R::between(0, 1024)));
  g.sfu_ops_per_sm_per_clock = r.number_or("sfu_ops_per_sm_per_clock", 16, R::between(1, 1024));
  g.memory_gib = r.number("memory_gib", R::between(0.5, 4096));
  g.memory_type = r.string_or("memory_type", "");
  g.memory_bandwidth_gb_s = r.number("memory_bandwidth_gb_s", R::between(10, 100000));
  g.l2_cache_mib = r.number("l2_cache_mib", R::between(0.1, 2048));
  g.shared_memory_per_sm_kib = r.number_or("shared_memory_per_sm_kib", 64, R::between(8, 1024));
  g.max_shared_memory_per_block_kib =
      r.number_or("max_shared_memory_per_block_kib", g.shared_memory_per_sm_kib, R::between(8, 1024));
  if (g.max_shared_memory_per_block_kib > g.shared_memory_per_sm_kib)
    r.fail("max_shared_memory_per_block_kib", "exceeds shared_memory_per_sm_kib");
  g.registers_per_sm = static_cast<int>(r.integer_or("registers_per_sm", 65536, R::between(8192, 1 << 20)));
  g.max_threads_per_sm = static_cast<int>(r.integer_or("max_threads_per_sm", 2048, R::between(128, 4096)));
  g.max_blocks_per_sm = static_cast<int>(r.integer_or("max_blocks_per_sm", 32, R::between(1, 128)));
  g.tdp_w = r.number_or("tdp_w", 0, R::between(1, 5000));

  if (!r.has("tensor_flops_per_sm_per_clock"))
    r.fail("tensor_flops_per_sm_per_clock", "is required (use {} for a GPU without tensor cores)");
  const JsonFields tensor = r.object("tensor_flops_per_sm_per_clock");
  for (const std::string& key : tensor.keys()) {
    if (!kTensorKeys.count(key)) tensor.fail(key, "unknown dtype (expected one of fp16 bf16 tf32 fp8 int8 fp4)");
    g.tensor_flops_per_sm_per_clock[key] = tensor.number(key, R::between(1, 65536));
  }

  if (const auto ic = r.optional_object("interconnect")) {
    g.interconnect.nvlink_bandwidth_gb_s = ic->number_or("nvlink_bandwidth_gb_s", 0, R::between(1, 100000));
    g.interconnect.pcie_gen = static_cast<int>(ic->integer_or("pcie_gen", 0, R::between(1, 7)));
    g.interconnect.pcie_bandwidth_gb_s = ic->number_or("pcie_bandwidth_gb_s", 0, R::between(1, 10000));
    ic->refuse_unknown();
  }

  if (!r.has("sources")) r.fail("sources", "is required: every figure needs its source");
  const JsonFields src = r.object("sources");
  for (const std::string& key : src.keys()) {
    const std::string source = src.string(key);
    if (!r.has(key) || kIdentityFields.count(key)) src.fail(key, "names no figure of this file");
    g.sources[key] = source;
  }
  r.refuse_unknown();
  for (const std::string& key : r.keys())
    if (!kIdentityFields.count(key) && !g.sources.count(key)) r.fail(key, "has no entry in \"sources\"");
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
        if (auto it = by_key.find(std::string(*key)); it != by_key.end())
          out[std::string(dtype_name(d))] = it->second / 1e12;
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
      pts.push_back(
          {{"tensor_utilization", pt.utilization}, {"compute", pt.factors.compute}, {"memory", pt.factors.memory}});
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
    throw CalibrationError(
        c.file, "gpu_name",
        quote_excerpt(c.gpu_name) + " names no known GPU (`perfloom gpus` lists them with their aliases)");
  achievable_fractions(c, *gpu);   // validates it against the spec
  sustained_power_curve(c, *gpu);  // and its sustained-power block, if any
  std::string id = gpu->id;
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
      } catch (const CalibrationError&) {}
    }
    if (!measured) g.achievable = estimated_rates(g, defaults_);
  }
  // Every other GPU with a TDP and a 16-bit tensor peak: the measured curve of the GPU nearest in
  // tensor throughput per watt, scaled to its own (SustainedPowerCurve::scaled); ties go to the
  // first GPU id.
  auto per_watt = [](const GpuSpec& g) -> double {
    const auto peak = g.peak_flops_per_s(Dtype::bf16) ? g.peak_flops_per_s(Dtype::bf16) : g.peak_flops_per_s(Dtype::fp16);
    return peak && *peak > 0 && g.tdp_w > 0 ? *peak / g.tdp_w : 0.0;
  };
  std::vector<const GpuSpec*> measured;
  for (const GpuSpec& g : gpus_)
    if (g.sustained && per_watt(g) > 0) measured.push_back(&g);
  std::sort(measured.begin(), measured.end(), [](const GpuSpec* a, const GpuSpec* b) { return a->id < b->id; });
  for (GpuSpec& g : gpus_) {
    if (g.sustained || measured.empty() || per_watt(g) <= 0) continue;
    const GpuSpec* ref = measured.front();
    for (const GpuSpec* m : measured)
      if (std::abs(std::log(per_watt(g) / per_watt(*m))) < std::abs(std::log(per_watt(g) / per_watt(*ref)))) ref = m;
    const double ratio = per_watt(g) / per_watt(*ref);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "datasheet: %s's measured curve (%s) scaled by tensor peak per watt of TDP, %.0f vs %.0f GFLOPS/W "
                  "(x%.2f)",
                  ref->id.c_str(), ref->sustained->origin().c_str(), per_watt(g) / 1e9, per_watt(*ref) / 1e9, ratio);
    g.sustained = SustainedPowerCurve::scaled(*ref->sustained, ratio, buf);
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
                         quote_excerpt(n) + " already names GPU '" + other->id + "' (" + other->source_file + ")");
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
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw GpuSpecError(dir.string(), "", "is not a folder");
  std::vector<std::filesystem::path> files;
  // Every *.json entry, whatever its type: a named pipe or a folder of that name is refused by the
  // reader, by name, rather than skipped without a word.
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path());
  if (ec) throw GpuSpecError(dir.string(), "", "cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  GpuDatabase staged = *this;  // all or nothing
  for (const auto& f : files) staged.add_json(read_file_guarded(f, file_limits::gpu_spec, kRaise), f.string());
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
  throw std::invalid_argument(
      "unknown GPU " + quote_excerpt(key) +
      (hint.empty() ? std::string("; `perfloom gpus` lists the known ones") : "; did you mean: " + hint + "?"));
}

}  // namespace perfloom
