#include "storage/collector_csv.h"

#include <zlib.h>
#include <algorithm>
#include <iterator>
#include <map>
#include <stdexcept>

#include "model/json_fields.h"
#include "storage/csv_reader.h"
#include "storage/folder_files.h"
#include "storage/importers/input_file.h"

namespace perfloom::storage {

namespace {

constexpr std::string_view kMagic = "# format=perfloom-collector/1";
constexpr std::string_view kMoeSweepMagic = "# format=perfloom-moe-sweep/1";

// "128x256x64" -> {128, 256, 64}; "UNDEFINED" or text -> {}.
std::vector<int> dims(const std::string& s) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i || j - i > 9) return {};  // not a number, or too large for an int
    out.push_back(std::stoi(s.substr(i, j - i)));
    if (j < s.size() && s[j] != 'x') return out;
    i = j + 1;
  }
  return out;
}

// Whether a file's first bytes are `magic`, after a UTF-8 byte-order mark if there is one.
bool starts_with_magic(std::string_view first, std::string_view magic) {
  if (first.substr(0, 3) == "\xEF\xBB\xBF") first.remove_prefix(3);
  return first.substr(0, magic.size()) == magic;
}

// A row a reader leaves out: counted per reason, the first few kept with their line.
void skip_row(DatasetLoadReport& rep, std::size_t line, const std::string& why) {
  ++rep.skipped;
  ++rep.skip_counts[why];
  if (rep.skip_reasons.size() < 5) rep.skip_reasons.push_back("line " + std::to_string(line) + ": " + why);
}

}  // namespace

bool sniff_collector_csv(std::string_view first) { return starts_with_magic(first, kMagic); }

namespace {

// The `# key=value` lines before a collector file's header (both formats), its first line checked
// against `magic`. Lines are capped (a hostile file cannot make us hold a multi-GB "comment"); the
// header and the rows go through the CSV reader, which has limits of its own.
struct EnvironmentBlock {
  std::map<std::string, std::string> environment;
  std::string pending;          // the start of the first non-comment line, handed to the CSV reader
  std::size_t header_line = 0;  // that line's number
};

EnvironmentBlock read_environment_block(gzFile gz, const std::string& label, std::string_view magic,
                                        std::string_view what) {
  constexpr std::size_t kMaxEnvLine = 64 * 1024, kMaxEnvLines = 4096;
  EnvironmentBlock env;
  std::size_t line_no = 0;
  char buf[8192];
  while (gzgets(gz, buf, sizeof buf)) {
    ++line_no;
    std::string line(buf);
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    if (line_no == 1 && !starts_with_magic(line, magic))
      throw std::runtime_error(label + ": line 1: not a " + std::string(what) + " (expected \"" + std::string(magic) +
                               "\")");
    if (!line.starts_with('#')) {
      env.pending = line;
      break;
    }
    while (!line.empty() && line.back() != '\n' && !gzeof(gz) && gzgets(gz, buf, sizeof buf)) {
      line += buf;
      if (line.size() > kMaxEnvLine)
        throw std::runtime_error(label + ": line " + std::to_string(line_no) + ": line longer than " +
                                 std::to_string(kMaxEnvLine) + " bytes in the # environment block");
    }
    if (line_no > kMaxEnvLines)
      throw std::runtime_error(label + ": line " + std::to_string(line_no) + ": more than " +
                               std::to_string(kMaxEnvLines) + " # environment lines");
    std::string kv = line.substr(1);
    while (!kv.empty() && (kv.back() == '\n' || kv.back() == '\r')) kv.pop_back();
    if (!kv.empty() && kv.front() == ' ') kv.erase(0, 1);
    if (auto eq = kv.find('='); eq != std::string::npos) env.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (line_no == 0) throw std::runtime_error(label + ": empty file");
  env.header_line = line_no;
  return env;
}

// A CSV reader over the rest of the file: the pending first line, then the inflated stream.
CsvReader rest_of_file(gzFile gz, EnvironmentBlock& env, const std::string& label) {
  auto pending = std::make_shared<std::string>(std::move(env.pending));
  CsvReader reader(
      [pending, gz, label](char* out, std::size_t cap) -> std::size_t {
        if (!pending->empty()) {
          const std::size_t n = std::min(cap, pending->size());
          std::copy(pending->begin(), pending->begin() + static_cast<std::ptrdiff_t>(n), out);
          pending->erase(0, n);
          return n;
        }
        int n = gzread(gz, out, static_cast<unsigned>(cap));
        if (n < 0) throw std::runtime_error(label + ": read error");
        return static_cast<std::size_t>(n);
      },
      label);
  reader.set_first_line(env.header_line);
  return reader;
}

}  // namespace

CollectorFile visit_collector_csv(const std::filesystem::path& path, const GpuDatabase& gpus,
                                  const MeasuredKernelSink& sink, DatasetLoadReport* report) {
  const std::string label = printable_name(path.string());
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error(label + ": cannot be opened");
  std::shared_ptr<gzFile_s> guard(gz, [](gzFile f) { gzclose(f); });
  EnvironmentBlock env = read_environment_block(gz, label, kMagic, "perfloom collector CSV");
  CollectorFile file{env.environment};
  const std::string gpu_name = file.environment["gpu_name"];
  const GpuSpec* gpu = gpus.find(gpu_name);
  if (!gpu) throw std::runtime_error(label + ": gpu_name " + quote_excerpt(gpu_name) + " is not in the GPU database");
  CsvReader reader = rest_of_file(gz, env, label);
  if (!reader.read_header()) throw std::runtime_error(label + ": no header row");
  const std::size_t c_op = reader.require_column("op"), c_dtype = reader.require_column("dtype"),
                    c_lat = reader.require_column("latency_us");
  const auto c_name = reader.column("kernel_name"), c_tile = reader.column("tile"), c_stages = reader.column("stages"),
             c_split = reader.column("splitk"), c_cluster = reader.column("cluster"), c_sweep = reader.column("sweep"),
             c_source = reader.column("source"), c_rank = reader.column("heuristic_rank");
  DatasetLoadReport local;
  DatasetLoadReport& rep = report ? *report : local;
  rep.file = label;
  const std::string sweep_env = file.environment["sweep"];
  std::vector<std::string> f;
  while (reader.next(f)) {
    ++rep.rows;
    const std::size_t line = reader.line();
    auto skip = [&](const std::string& why) { skip_row(rep, line, why); };
    if (f.size() < reader.header().size()) {
      skip("short row");
      continue;
    }
    auto op = parse_op(f[c_op]);
    auto dt = parse_dtype(f[c_dtype]);
    auto lat = parse_double(f[c_lat]);
    if (!op || *op == Op::unknown) {
      skip("unknown op " + f[c_op]);
      continue;
    }
    if (!dt) {
      skip("unknown dtype " + f[c_dtype]);
      continue;
    }
    if (!lat || *lat <= 0) {
      skip("latency_us is not a positive number");
      continue;
    }
    if (*lat > kMaxKernelLatencyUs) {
      skip("latency_us over 1e12 us");
      continue;
    }
    MeasuredKernel m;
    m.kernel.op = *op;
    m.kernel.dtype = *dt;
    bool bad = false;
    for (auto col : shape_columns(*op)) {
      auto c = reader.column(col);
      auto v = c ? parse_int(f[*c]) : std::nullopt;
      if (!v) {
        skip(std::string("missing or bad ") + std::string(col));
        bad = true;
        break;
      }
      *shape_field(m.kernel.shape, col) = *v;
    }
    if (bad) continue;
    if (auto why = validate_shape(*op, m.kernel.shape)) {
      skip(*why);
      continue;
    }
    if (c_name) m.kernel.name = f[*c_name];
    if (c_tile && (*op == Op::gemm || *op == Op::bmm)) {
      // cuBLASLt orientation: first number along N, second along M, third along K.
      auto t = dims(f[*c_tile]);
      if (t.size() >= 2) {
        TileConfig tc;
        tc.tile_n = t[0];
        tc.tile_m = t[1];
        auto st = c_stages ? dims(f[*c_stages]) : std::vector<int>{};
        tc.tile_k = t.size() >= 3 ? t[2] : (!st.empty() ? st[0] : 64);
        if (st.size() >= 2) tc.stages = st[1];
        if (c_split)
          if (auto s = parse_int(f[*c_split]); s && *s > 0) tc.split_k = static_cast<int>(*s);
        if (c_cluster) {
          auto cl = dims(f[*c_cluster]);
          if (cl.size() >= 2) {
            tc.cluster_n = cl[0];
            tc.cluster_m = cl[1];
          }
        }
        m.kernel.tile = tc;
      }
    }
    if (auto cg = reader.column("grid"), cb = reader.column("block"); cg && cb) {
      auto g = dims(f[*cg]), b = dims(f[*cb]);
      if (g.size() == 3 && b.size() == 3) {
        LaunchArgs la;
        la.grid = {g[0], g[1], g[2]};
        la.block = {b[0], b[1], b[2]};
        if (auto cr = reader.column("regs")) la.registers_per_thread = static_cast<int>(parse_int(f[*cr]).value_or(0));
        if (auto cs = reader.column("smem_bytes")) la.shared_memory_bytes = parse_int(f[*cs]).value_or(0);
        m.kernel.launch = la;
      }
    }
    m.gpu_id = gpu->id;
    m.latency_us = *lat;
    const std::string sweep = c_sweep ? f[*c_sweep] : sweep_env;
    m.dataset = "collector/" + gpu->id + "/" + (sweep.empty() ? sweep_env : sweep);
    m.note = "method=" + std::string(reader.column("method") ? f[*reader.column("method")] : "") +
             (c_source ? ";source=" + f[*c_source] : "") + (c_rank ? ";heuristic_rank=" + f[*c_rank] : "");
    ++rep.kept;
    sink(std::move(m));
  }
  return file;
}

bool sniff_moe_sweep_csv(std::string_view first) { return starts_with_magic(first, kMoeSweepMagic); }

namespace {

// A layer of a fused-MoE sweep: the model (with its tensor-parallel split), shape, tokens and dtype
// on one GPU. Its time is the fastest gate-up plus the fastest down configuration timed (the tuned
// configuration an engine ships), as tools/moe/model_check.py scores the analytical estimate.
struct MoeLayer {
  KernelDesc kernel;
  std::string gpu_id, model;
  std::size_t file = 0;  // the report its first row was counted in
  double gate_up_us = 0, down_us = 0;
  int gate_up_configs = 0, down_configs = 0;
};

void read_moe_sweep(const std::filesystem::path& path, std::size_t file_index, const GpuDatabase& gpus,
                    std::map<std::string, MoeLayer>& layers, DatasetLoadReport& rep) {
  const std::string label = printable_name(path.string());
  rep.file = label;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error(label + ": cannot be opened");
  std::shared_ptr<gzFile_s> guard(gz, [](gzFile f) { gzclose(f); });
  EnvironmentBlock env = read_environment_block(gz, label, kMoeSweepMagic, "fused-MoE sweep (tools/moe/README.md)");
  const std::string gpu_name = env.environment["gpu"];
  const GpuSpec* gpu = gpus.find(gpu_name);
  if (!gpu) throw std::runtime_error(label + ": gpu " + quote_excerpt(gpu_name) + " is not in the GPU database");
  CsvReader reader = rest_of_file(gz, env, label);
  if (!reader.read_header()) throw std::runtime_error(label + ": no header row");
  const std::size_t c_model = reader.require_column("model"), c_E = reader.require_column("E"),
                    c_topk = reader.require_column("topk"), c_H = reader.require_column("H"),
                    c_I = reader.require_column("I"), c_T = reader.require_column("tokens"),
                    c_dtype = reader.require_column("dtype"), c_kernel = reader.require_column("kernel"),
                    c_time = reader.require_column("time_us"), c_status = reader.require_column("status");
  std::vector<std::string> f;
  while (reader.next(f)) {
    if (!f.empty() && f[0].starts_with('#')) continue;  // the `# smi_after=...` lines after the rows
    ++rep.rows;
    const std::size_t line = reader.line();
    auto skip = [&](const std::string& why) { skip_row(rep, line, why); };
    if (f.size() < reader.header().size()) {
      skip("short row");
      continue;
    }
    const std::string& kernel = f[c_kernel];
    if (kernel != "gate_up" && kernel != "down") {
      skip("kernel " + kernel + " is not one of the fused GEMMs (gate_up, down)");
      continue;
    }
    if (f[c_status] != "ok" && f[c_status] != "capped") {
      skip("status " + f[c_status]);
      continue;
    }
    std::optional<Dtype> dtype;
    if (f[c_dtype] == "bf16") dtype = Dtype::bf16;
    if (f[c_dtype] == "fp8") dtype = Dtype::fp8e4m3;
    if (!dtype) {
      // fp8_block (128x128 block scales) is another kernel than per-tensor fp8, and a kernel
      // description has no field that tells them apart.
      skip("dtype " + f[c_dtype] + " has no kernel description");
      continue;
    }
    const auto time = parse_double(f[c_time]);
    if (!time || *time <= 0 || *time > kMaxKernelLatencyUs) {
      skip("time_us is not a positive number of at most 1e12 us");
      continue;
    }
    KernelDesc k;
    k.op = Op::moe;
    k.dtype = *dtype;
    bool bad = false;
    for (auto [col, c] : {std::pair{"T", c_T}, {"E", c_E}, {"topk", c_topk}, {"H", c_H}, {"I", c_I}}) {
      const auto v = parse_int(f[c]);
      if (!v) {
        skip(std::string("bad ") + (std::string_view(col) == "T" ? "tokens" : col));
        bad = true;
        break;
      }
      *shape_field(k.shape, col) = *v;
    }
    if (bad) continue;
    if (auto why = validate_shape(Op::moe, k.shape)) {
      skip(*why);
      continue;
    }
    const std::string key = gpu->id + "|" + f[c_model] + "|" + kernel_key(k);
    auto [it, added] = layers.try_emplace(key);
    MoeLayer& layer = it->second;
    if (added) {
      layer.kernel = k;
      layer.gpu_id = gpu->id;
      layer.model = f[c_model];
      layer.file = file_index;
    }
    double& best = kernel == "gate_up" ? layer.gate_up_us : layer.down_us;
    int& configs = kernel == "gate_up" ? layer.gate_up_configs : layer.down_configs;
    best = configs == 0 ? *time : std::min(best, *time);
    ++configs;
  }
}

}  // namespace

void visit_moe_sweeps(const std::vector<std::filesystem::path>& files, const GpuDatabase& gpus,
                      const MeasuredKernelSink& sink, std::vector<DatasetLoadReport>* reports) {
  std::vector<DatasetLoadReport> local(files.size());
  std::map<std::string, MoeLayer> layers;
  for (std::size_t i = 0; i < files.size(); ++i) read_moe_sweep(files[i], i, gpus, layers, local[i]);
  for (auto& [key, layer] : layers) {
    DatasetLoadReport& rep = local[layer.file];
    if (layer.gate_up_configs == 0 || layer.down_configs == 0) {
      ++rep.skipped;
      ++rep.skip_counts["layer without both GEMMs timed"];
      continue;
    }
    MeasuredKernel m;
    m.kernel = std::move(layer.kernel);
    m.gpu_id = layer.gpu_id;
    m.latency_us = layer.gate_up_us + layer.down_us;
    m.dataset = "collector/" + layer.gpu_id + "/moe";
    m.note = "method=best_of_sweep;model=" + layer.model + ";configs=" + std::to_string(layer.gate_up_configs) + "+" +
             std::to_string(layer.down_configs);
    ++rep.kept;
    sink(std::move(m));
  }
  if (reports) std::move(local.begin(), local.end(), std::back_inserter(*reports));
}

void visit_collector_folder(const std::filesystem::path& root, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                            std::vector<DatasetLoadReport>* reports) {
  if (!std::filesystem::is_directory(root)) throw std::runtime_error(root.string() + ": not a folder");
  std::vector<std::filesystem::path> collector, moe_sweeps;
  // A symbolic link out of the folder is not read (storage/folder_files.h).
  for (const auto& f : folder_files(root, true).files) {
    // By content, plain or gzip (FILE.csv.gz), as the importer does; never by the extension. A
    // bounded read: the file may be one huge line.
    const std::string head = InputFile::head(f, 4096);
    if (sniff_collector_csv(head)) collector.push_back(f);
    if (sniff_moe_sweep_csv(head)) moe_sweeps.push_back(f);
  }
  for (const auto& f : collector) {
    DatasetLoadReport rep;
    visit_collector_csv(f, gpus, sink, &rep);
    if (reports) reports->push_back(std::move(rep));
  }
  // Together: a layer timed by several sweeps (a re-run) is one kernel, at its fastest.
  visit_moe_sweeps(moe_sweeps, gpus, sink, reports);
}

}  // namespace perfloom::storage
