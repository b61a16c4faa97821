#include "storage/importers/ncu_csv_importer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "model/json_fields.h"
#include "storage/csv_reader.h"
#include "storage/database.h"
#include "storage/importers/input_file.h"
#include "storage/public_datasets.h"

namespace perfloom::storage {

namespace {

constexpr std::size_t kMaxLine = std::size_t(16) << 20;

// Drops the "==PROF==" / "==WARNING==" lines ncu mixes into its output (leaving the line break,
// so that line numbers in messages stay those of the file), and refuses absurdly long lines, so
// that a hostile file cannot make the CSV reader hold gigabytes.
class ProfLineFilter {
 public:
  ProfLineFilter(ByteSource in, std::string label) : in_(std::move(in)), label_(std::move(label)), buf_(1 << 16) {}
  std::size_t operator()(char* out, std::size_t cap) {
    std::size_t n = 0;
    while (n + 2 <= cap) {
      if (pos_ == end_) {
        end_ = in_(buf_.data(), buf_.size());
        pos_ = 0;
        if (end_ == 0) {
          if (state_ == OneEq) out[n++] = '=', state_ = Passing;
          break;
        }
        // A UTF-8 byte-order mark before the first line (a "==PROF==" line may follow) is no content.
        if (at_start_ && end_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
        at_start_ = false;
        if (pos_ == end_) continue;
      }
      char c = buf_[pos_++];
      switch (state_) {
        case LineStart:
          line_len_ = 0;
          if (c == '=') {
            state_ = OneEq;
            continue;
          }
          state_ = Passing;
          [[fallthrough]];
        case Passing:
          out[n++] = c;
          if (c == '\n') {
            state_ = LineStart;
            ++line_;
          } else if (++line_len_ > kMaxLine) {
            throw ImportError(label_, "line " + std::to_string(line_), "line longer than 16 MiB: not an ncu CSV");
          }
          continue;
        case OneEq:
          if (c == '=') {
            state_ = Dropping;
            continue;
          }
          out[n++] = '=';
          out[n++] = c;
          state_ = c == '\n' ? LineStart : Passing;
          if (c == '\n') ++line_;
          continue;
        case Dropping:
          if (c == '\n') {
            out[n++] = '\n';
            state_ = LineStart;
            ++line_;
          }
          continue;
      }
    }
    return n;
  }

 private:
  enum State { LineStart, OneEq, Passing, Dropping };
  ByteSource in_;
  std::string label_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  State state_ = LineStart;
  std::size_t line_len_ = 0, line_ = 1;
  bool at_start_ = true;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The time units ncu writes, and their spelled-out names; 1 is nanoseconds.
double time_unit_scale(const std::string& u) {
  if (u == "nsecond" || u == "ns" || u == "nanosecond") return 1;
  if (u == "usecond" || u == "us" || u == "microsecond") return 1e3;
  if (u == "msecond" || u == "ms" || u == "millisecond") return 1e6;
  if (u == "second" || u == "s") return 1e9;
  return 0;
}

bool is_time_unit(std::string_view unit) { return time_unit_scale(lower(unit)) > 0; }

// "(256, 1, 1)" -> {256, 1, 1}. The tuple's commas are followed by a space; a comma inside a
// number ("(1,024, 1, 1)") is a thousands separator.
bool parse_dim3(std::string_view text, std::array<int64_t, 3>& out) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.size() < 3 || text.front() != '(' || text.back() != ')') return false;
  text = text.substr(1, text.size() - 2);
  const bool spaced = text.find(", ") != std::string_view::npos;
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ',' && (!spaced || (i + 1 < text.size() && text[i + 1] == ' '))) {
      parts.emplace_back();
    } else if (c != ',' && c != ' ') {
      parts.back().push_back(c);
    }
  }
  if (parts.empty() || parts.size() > 3) return false;
  out = {1, 1, 1};
  for (std::size_t d = 0; d < parts.size(); ++d) {
    int64_t v = 0;
    const std::string& p = parts[d];
    auto [q, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc() || q != p.data() + p.size() || v < 0 || v > (int64_t(1) << 31)) return false;
    out[d] = v;
  }
  return true;
}

struct KernelRow {
  std::size_t line = 0;
  std::string name;
  std::optional<std::array<int64_t, 3>> grid, block;
  std::optional<int64_t> grid_size, block_size, regs, smem_static, smem_dynamic, smem_total;
  std::string device_name;
  std::optional<double> duration_ns;
  nlohmann::json counters = nlohmann::json::object();
};

class NcuReader {
 public:
  NcuReader(CsvReader reader, std::string label, ImportSink& sink, const ImportControl& control)
      : r_(std::move(reader)), label_(std::move(label)), sink_(sink), control_(control) {}

  void run() {
    if (!r_.read_header()) throw ImportError(label_, "", "empty file");
    if (!r_.column("Kernel Name") && !r_.column("Function Name"))
      throw ImportError(label_, "line " + std::to_string(r_.line()),
                        "not an Nsight Compute CSV: the header has no \"Kernel Name\" column");
    c_name_ = r_.column("Kernel Name") ? *r_.column("Kernel Name") : *r_.column("Function Name");
    c_id_ = r_.column("ID");
    c_grid_ = r_.column("Grid Size");
    c_block_ = r_.column("Block Size");
    c_device_name_ = r_.column("device__attribute_display_name");
    if (!c_device_name_) c_device_name_ = r_.column("Device Name");
    if (r_.column("Metric Name") && r_.column("Metric Value"))
      read_long();
    else
      read_raw();
    finish();
  }

 private:
  [[noreturn]] void fail(std::size_t line, const std::string& reason) {
    throw ImportError(label_, "line " + std::to_string(line), reason);
  }

  std::optional<int64_t> integer(std::size_t line, const std::string& column, std::string_view text,
                                 std::string_view unit = {}) {
    if (text.empty() || text == "n/a" || text == "N/A") return std::nullopt;
    double v = 0;
    if (!ncu_value(text, unit, v) || v < 0 || v > 9e15)
      fail(line, "column \"" + column + "\": \"" + std::string(text.substr(0, 40)) + "\" is not a count");
    return static_cast<int64_t>(std::llround(v));
  }

  // A metric value: the launch fields and the duration must be numbers; other metrics may be
  // text (cache configuration names) and are then not counters.
  void metric(KernelRow& k, std::size_t line, const std::string& name, std::string_view unit, std::string_view text) {
    if (text.empty() || text == "n/a" || text == "N/A") return;
    if (name == "device__attribute_display_name" || name == "Device Name") {
      k.device_name = std::string(text);
      return;
    }
    if (name.rfind("device__attribute_", 0) == 0) return;
    if (name == "launch__registers_per_thread" || name == "Registers Per Thread") {
      k.regs = integer(line, name, text, unit);
    } else if (name == "launch__shared_mem_per_block_static" || name == "Static Shared Memory Per Block") {
      k.smem_static = integer(line, name, text, unit);
    } else if (name == "launch__shared_mem_per_block_dynamic" || name == "Dynamic Shared Memory Per Block") {
      k.smem_dynamic = integer(line, name, text, unit);
    } else if (name == "launch__grid_size" || name == "Grid Size") {
      k.grid_size = integer(line, name, text, unit);
    } else if (name == "launch__block_size" || name == "Block Size") {
      k.block_size = integer(line, name, text, unit);
    }
    double v = 0;
    bool is_number = ncu_value(text, unit, v);
    if (name == "gpu__time_duration.sum" || (name == "Duration" && !k.duration_ns)) {
      if (!is_number)
        fail(line, "column \"" + name + "\": \"" + std::string(text.substr(0, 40)) + "\" is not a duration");
      if (!unit.empty() && !is_time_unit(unit))
        fail(line, "column \"" + name + "\": unit " + quote_excerpt(unit) +
                       " is not a time unit (nsecond, usecond, msecond or second)");
      if (v < 0) fail(line, "column \"" + name + "\": negative duration");
      if (v / 1000.0 > kMaxKernelLatencyUs) fail(line, "column \"" + name + "\": a duration over 1e12 us (11.6 days)");
      if (unit.empty()) ++unitless_durations_;
      k.duration_ns = v;
    }
    if (is_number && k.counters.size() < 4096) k.counters[name] = v;
  }

  void identity(KernelRow& k, const std::vector<std::string>& f) {
    k.line = r_.line();
    k.name = f[c_name_];
    if (c_grid_ && !f[*c_grid_].empty()) {
      std::array<int64_t, 3> g;
      if (!parse_dim3(f[*c_grid_], g)) fail(k.line, "Grid Size \"" + f[*c_grid_].substr(0, 40) + "\" is not (x, y, z)");
      k.grid = g;
    }
    if (c_block_ && !f[*c_block_].empty()) {
      std::array<int64_t, 3> b;
      if (!parse_dim3(f[*c_block_], b))
        fail(k.line, "Block Size \"" + f[*c_block_].substr(0, 40) + "\" is not (x, y, z)");
      k.block = b;
    }
  }

  void check_width(const std::vector<std::string>& f) {
    if (f.size() != r_.header().size())
      fail(r_.line(), std::to_string(f.size()) + " fields where the header has " + std::to_string(r_.header().size()));
  }

  void read_raw() {
    if (!r_.column("gpu__time_duration.sum"))
      throw ImportError(
          label_, "line " + std::to_string(r_.line()),
          "no gpu__time_duration.sum column: profile with ncu --metrics gpu__time_duration.sum (or --set basic)");
    const auto& header = r_.header();
    std::vector<std::string> units(header.size());
    std::vector<bool> is_metric(header.size());
    for (std::size_t i = 0; i < header.size(); ++i)
      is_metric[i] = header[i].find("__") != std::string::npos && i != c_name_;
    std::vector<std::string> f;
    bool first = true;
    while (r_.next(f)) {
      check_width(f);
      if (first) {
        first = false;
        // The units row: no ID, units under the metric columns.
        if (c_id_ && f[*c_id_].empty()) {
          units = f;
          continue;
        }
      }
      KernelRow k;
      identity(k, f);
      if (c_device_name_) k.device_name = f[*c_device_name_];
      for (std::size_t i = 0; i < header.size(); ++i)
        if (is_metric[i]) metric(k, k.line, header[i], units[i], f[i]);
      emit(std::move(k));
    }
  }

  void read_long() {
    const std::size_t c_metric = *r_.column("Metric Name"), c_value = *r_.column("Metric Value");
    const auto c_unit = r_.column("Metric Unit");
    std::vector<std::string> f;
    std::optional<KernelRow> cur;
    std::string cur_id;
    while (r_.next(f)) {
      check_width(f);
      std::string id = c_id_ ? f[*c_id_] : std::string();
      if (!cur || id != cur_id || f[c_name_] != cur->name) {
        if (cur) emit(std::move(*cur));
        cur.emplace();
        cur_id = id;
        identity(*cur, f);
        if (c_device_name_) cur->device_name = f[*c_device_name_];
      }
      metric(*cur, r_.line(), f[c_metric], c_unit ? std::string_view(f[*c_unit]) : std::string_view(), f[c_value]);
    }
    if (cur) emit(std::move(*cur));
  }

  void emit(KernelRow&& k) {
    if (k.name.empty()) fail(k.line, "a kernel without a name");
    if (!k.duration_ns) {
      ++no_duration_;
      return;
    }
    ClassifyInput in;
    in.kernel_name = k.name;
    LaunchArgs a;
    if (k.grid)
      a.grid = *k.grid;
    else if (k.grid_size)
      a.grid = {*k.grid_size, 1, 1};
    if (k.block)
      a.block = *k.block;
    else if (k.block_size)
      a.block = {*k.block_size, 1, 1};
    a.registers_per_thread = static_cast<int>(std::min<int64_t>(k.regs.value_or(0), 65536));
    a.shared_memory_bytes = k.smem_total.value_or(k.smem_static.value_or(0) + k.smem_dynamic.value_or(0));
    if (a.grid[0] > 0 || a.block[0] > 0) in.launch = a;
    ImportedKernel ik = classified_kernel(in);
    ik.seq = seq_++;
    ImportedMeasurement m;
    m.latency_us = *k.duration_ns / 1000.0;
    m.method = "ncu";
    m.counters_json = k.counters.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    m.note = "replayed by ncu: caches flushed and clocks locked to base unless --cache-control/--clock-control none";
    if (!k.device_name.empty()) {
      ++device_names_[k.device_name];
      if (control_.gpus) m.gpu_id = public_dataset_gpu_id(k.device_name, *control_.gpus);
    }
    ik.measurement = std::move(m);
    sink_.kernel(std::move(ik));
    if ((seq_ & 255) == 0) control_.check_cancel(label_);
  }

  void finish() {
    if (no_duration_) sink_.warning(std::to_string(no_duration_) + " kernels without a duration (n/a) were skipped");
    if (unitless_durations_)
      sink_.warning(std::to_string(unitless_durations_) + (unitless_durations_ == 1 ? " duration" : " durations") +
                    " without a unit (no units row, no Metric Unit) read as nanoseconds, ncu's base unit; export "
                    "with units (ncu --csv --print-units base) to be sure");
    if (seq_ == 0) throw ImportError(label_, "", "no kernel with a duration in the file");
    std::string best;
    std::size_t n = 0;
    for (const auto& [name, count] : device_names_)
      if (count > n) n = count, best = name;
    if (best.empty()) {
      sink_.warning("no device__attribute_display_name column: GPU unknown");
      return;
    }
    std::string id = control_.gpus ? public_dataset_gpu_id(best, *control_.gpus) : std::string();
    sink_.gpu(id, best);
    if (id.empty()) sink_.warning("GPU " + quote_excerpt(best) + " is not in the GPU database; add it with --gpus-dir");
  }

  CsvReader r_;
  std::string label_;
  ImportSink& sink_;
  const ImportControl& control_;
  std::size_t c_name_ = 0;
  std::optional<std::size_t> c_id_, c_grid_, c_block_, c_device_name_;
  std::map<std::string, std::size_t> device_names_;
  int64_t seq_ = 0;
  std::size_t no_duration_ = 0;
  std::size_t unitless_durations_ = 0;  // durations read as nanoseconds for want of a unit
};

// The header line after any "==" lines, if the text looks like ncu's CSV.
std::string_view header_line(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  while (head.substr(0, 2) == "==") {
    auto nl = head.find('\n');
    if (nl == std::string_view::npos) return {};
    head.remove_prefix(nl + 1);
  }
  return head.substr(0, head.find('\n'));
}

}  // namespace

bool ncu_value(std::string_view text, std::string_view unit, double& out) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  if (text.empty() || text.size() > 64) return false;
  char buf[72];
  std::size_t n = 0;
  for (char c : text)
    if (c != ',') buf[n++] = c;  // thousands separators
  double v = 0;
  auto [p, ec] = std::from_chars(buf, buf + n, v);
  if (ec != std::errc() || p != buf + n || !std::isfinite(v)) return false;
  std::string u = lower(unit);
  double scale = time_unit_scale(u);
  if (scale == 0) {
    scale = 1;
    // Decimal prefixes on bytes, rates and counts: "Kbyte", "Mbyte/second", "Gcycle".
    static const std::pair<char, double> prefixes[] = {{'k', 1e3}, {'m', 1e6}, {'g', 1e9}, {'t', 1e12}};
    for (auto [c, s] : prefixes) {
      if (u.size() > 1 && u[0] == c &&
          (u.compare(1, 4, "byte") == 0 || u.compare(1, 5, "cycle") == 0 || u.compare(1, 4, "inst") == 0 ||
           u.compare(1, 6, "sector") == 0 || u.compare(1, 7, "request") == 0 || u.compare(1, 2, "hz") == 0)) {
        scale = s;
        break;
      }
    }
  }
  out = v * scale;
  return std::isfinite(out);
}

int NcuCsvImporter::sniff(const SniffInput& in) const {
  if (in.is_directory) return 0;
  std::string_view line = header_line(in.head);
  if (line.substr(0, 5) != "\"ID\"," && line.substr(0, 3) != "ID,") return 0;
  if (line.find("Kernel Name") == std::string_view::npos) return 0;
  if (line.find("gpu__time_duration") != std::string_view::npos || line.find("Metric Name") != std::string_view::npos)
    return 95;
  return 70;
}

void NcuCsvImporter::import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const {
  auto file = std::make_shared<InputFile>(path);
  if (file->file_size() == 0) throw ImportError(path.string(), "", "empty file");
  ProfLineFilter filter([file](char* b, std::size_t n) { return file->read(b, n); }, path.string());
  CsvReader reader([filter = std::make_shared<ProfLineFilter>(std::move(filter))](
                       char* b, std::size_t n) { return (*filter)(b, n); },
                   path.string());
  try {
    NcuReader(std::move(reader), path.string(), sink, control).run();
  } catch (const ImportError&) {
    throw;
  } catch (const DatabaseError&) {
    throw;  // the database, not the file, failed
  } catch (const std::exception& e) {
    // CsvReader's own messages start with the file name already.
    std::string msg = e.what();
    if (msg.rfind(path.string() + ": ", 0) == 0) msg.erase(0, path.string().size() + 2);
    throw ImportError(path.string(), "", msg);
  }
}

void NcuCsvImporter::import_text(std::string text, const std::string& label, ImportSink& sink,
                                 const ImportControl& control) {
  auto held = std::make_shared<std::string>(std::move(text));
  auto at = std::make_shared<std::size_t>(0);
  auto filter = std::make_shared<ProfLineFilter>(
      [held, at](char* b, std::size_t n) {
        std::size_t k = std::min(n, held->size() - *at);
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a byte buffer, not a string
        std::memcpy(b, held->data() + *at, k);
        *at += k;
        return k;
      },
      label);
  CsvReader reader([filter](char* b, std::size_t n) { return (*filter)(b, n); }, label);
  try {
    NcuReader(std::move(reader), label, sink, control).run();
  } catch (const ImportError&) {
    throw;
  } catch (const DatabaseError&) {
    throw;  // the database, not the file, failed
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.rfind(label + ": ", 0) == 0) msg.erase(0, label.size() + 2);
    throw ImportError(label, "", msg);
  }
}

}  // namespace perfloom::storage
