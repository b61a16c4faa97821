#include "storage/importers/nsys_sqlite_importer.h"

#include <sqlite3.h>
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "model/json_fields.h"
#include "storage/importers/scratch_db.h"
#include "storage/public_datasets.h"

namespace perfloom::storage {

namespace {

constexpr std::string_view kSqliteMagic("SQLite format 3\0", 16);
constexpr std::size_t kMaxRanges = std::size_t(4) << 20;  // NVTX ranges held for launched_by
constexpr std::size_t kMaxRangeText = 1024;

std::string uri_path(const std::filesystem::path& p) {
  std::string abs = std::filesystem::absolute(p).string();
  std::string out = "file:";
  for (unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out + "?mode=ro&immutable=1";
}

struct Range {
  int64_t start, end;
  int32_t parent;
  uint32_t text;  // index into texts
};

// NVTX ranges of one thread, with each range's enclosing range, for "innermost range open at t".
struct ThreadRanges {
  std::vector<Range> ranges;
  void finish() {
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
    std::vector<int32_t> stack;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      while (!stack.empty() && ranges[static_cast<std::size_t>(stack.back())].end < ranges[i].start) stack.pop_back();
      ranges[i].parent = stack.empty() ? -1 : stack.back();
      stack.push_back(static_cast<int32_t>(i));
    }
  }
  const Range* innermost(int64_t t) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), t, [](int64_t v, const Range& r) { return v < r.start; });
    if (it == ranges.begin()) return nullptr;
    int32_t i = static_cast<int32_t>(it - ranges.begin()) - 1;
    int guard = 0;
    while (i >= 0 && ranges[static_cast<std::size_t>(i)].end < t && ++guard < 100000)
      i = ranges[static_cast<std::size_t>(i)].parent;
    return i >= 0 && ranges[static_cast<std::size_t>(i)].end >= t ? &ranges[static_cast<std::size_t>(i)] : nullptr;
  }
};

class NsysReader {
 public:
  NsysReader(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control)
      : path_(path), label_(path.string()), sink_(sink), control_(control) {}
  ~NsysReader() {
    if (db_) sqlite3_close(db_);
  }

  void run() {
    open();
    tables();
    load_gpus();
    load_ranges();
    read_kernels();
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& reason) {
    throw ImportError(label_, where, reason);
  }
  [[noreturn]] void fail_sqlite(const std::string& where) {
    int code = sqlite3_errcode(db_);
    std::string msg = sqlite3_errmsg(db_);
    if (control_.cancel && control_.cancel->load()) throw ImportCancelled(label_);
    if (code == SQLITE_NOTADB) fail(where, "not an SQLite database (" + msg + ")");
    if (code == SQLITE_CORRUPT) fail(where, "the SQLite file is corrupt (" + msg + ")");
    fail(where, "SQLite error: " + msg);
  }

  void open() {
    if (sqlite3_open_v2(uri_path(path_).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
      fail("", std::string("cannot open as SQLite: ") + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
    sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
#endif
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, 64 << 20);
    sqlite3_limit(db_, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
    sqlite3_exec(db_, "PRAGMA cell_size_check = ON; PRAGMA mmap_size = 0", nullptr, nullptr, nullptr);
    sqlite3_progress_handler(
        db_, 10000,
        [](void* self) -> int {
          auto* r = static_cast<NsysReader*>(self);
          return r->control_.cancel && r->control_.cancel->load(std::memory_order_relaxed) ? 1 : 0;
        },
        this);
  }

  void tables() {
    Stmt st;
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &raw, nullptr) != SQLITE_OK)
      fail_sqlite("");
    st = Stmt(raw);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      if (t) tables_.insert(reinterpret_cast<const char*>(t));
    }
    if (rc != SQLITE_DONE) fail_sqlite("");
    if (!tables_.count("CUPTI_ACTIVITY_KIND_KERNEL")) {
      if (tables_.count("StringIds") || tables_.count("TARGET_INFO_GPU") || tables_.count("NVTX_EVENTS"))
        fail("",
             "an Nsight Systems export without CUDA kernels (no CUPTI_ACTIVITY_KIND_KERNEL table): profile with nsys "
             "profile --trace=cuda");
      fail("", "an SQLite database, but not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_KERNEL table)");
    }
    if (!tables_.count("StringIds"))
      fail("", "an Nsight Systems export without its StringIds table: kernel names unknown");
    kernel_cols_ = columns("CUPTI_ACTIVITY_KIND_KERNEL");
    for (const char* c : {"start", "end"})
      if (!kernel_cols_.count(c)) fail("table CUPTI_ACTIVITY_KIND_KERNEL", std::string("no column ") + c);
    if (!kernel_cols_.count("demangledName") && !kernel_cols_.count("shortName"))
      fail("table CUPTI_ACTIVITY_KIND_KERNEL", "no demangledName or shortName column");
  }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> out;
    sqlite3_stmt* raw = nullptr;
    std::string sql = "SELECT name FROM pragma_table_info('" + table + "')";
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) fail_sqlite("table " + table);
    Stmt st(raw);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
      if (auto t = sqlite3_column_text(st, 0)) out.insert(reinterpret_cast<const char*>(t));
    if (rc != SQLITE_DONE) fail_sqlite("table " + table);
    return out;
  }

  Stmt prepare(const std::string& sql, const std::string& where) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) fail_sqlite(where);
    return Stmt(raw);
  }

  static std::string text(sqlite3_stmt* st, int col) {
    const unsigned char* t = sqlite3_column_text(st, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st, col)))
             : std::string();
  }

  void load_gpus() {
    if (!tables_.count("TARGET_INFO_GPU")) return;
    auto cols = columns("TARGET_INFO_GPU");
    if (!cols.count("id") || !cols.count("name")) return;
    Stmt st = prepare("SELECT id, name FROM TARGET_INFO_GPU", "table TARGET_INFO_GPU");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
      if (gpu_names_.size() < 1024) gpu_names_[sqlite3_column_int64(st, 0)] = text(st, 1);
    if (rc != SQLITE_DONE) fail_sqlite("table TARGET_INFO_GPU");
    if (tables_.count("TARGET_INFO_CUDA_DEVICE")) {
      auto c2 = columns("TARGET_INFO_CUDA_DEVICE");
      if (c2.count("gpuId") && c2.count("cudaId")) {
        Stmt m = prepare("SELECT cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE", "table TARGET_INFO_CUDA_DEVICE");
        while ((rc = sqlite3_step(m)) == SQLITE_ROW)
          if (cuda_to_gpu_.size() < 1024) cuda_to_gpu_.emplace(sqlite3_column_int64(m, 0), sqlite3_column_int64(m, 1));
        if (rc != SQLITE_DONE) fail_sqlite("table TARGET_INFO_CUDA_DEVICE");
      }
    }
  }

  std::string gpu_name(int64_t device) const {
    if (auto it = cuda_to_gpu_.find(device); it != cuda_to_gpu_.end())
      if (auto g = gpu_names_.find(it->second); g != gpu_names_.end()) return g->second;
    if (auto g = gpu_names_.find(device); g != gpu_names_.end()) return g->second;
    if (gpu_names_.size() == 1) return gpu_names_.begin()->second;
    return {};
  }

  void load_ranges() {
    if (!tables_.count("NVTX_EVENTS") || !tables_.count("CUPTI_ACTIVITY_KIND_RUNTIME")) return;
    auto cols = columns("NVTX_EVENTS");
    auto rcols = columns("CUPTI_ACTIVITY_KIND_RUNTIME");
    if (!cols.count("start") || !cols.count("end") || !cols.count("globalTid")) return;
    if (!rcols.count("correlationId") || !rcols.count("start") || !rcols.count("globalTid") ||
        !kernel_cols_.count("correlationId"))
      return;
    std::string text_expr = cols.count("text") ? "n.text" : "NULL";
    std::string join;
    if (cols.count("textId")) {
      text_expr = "COALESCE(" + text_expr + ", s.value)";
      join = " LEFT JOIN StringIds s ON s.id = n.textId";
    }
    // 59 NvtxPushPopRange, 60 NvtxStartEndRange; older exports lack eventType.
    std::string filter = cols.count("eventType") ? " AND n.eventType IN (59, 60)" : "";
    Stmt st = prepare("SELECT n.globalTid, n.start, n.end, " + text_expr + " FROM NVTX_EVENTS n" + join +
                          " WHERE n.end IS NOT NULL AND n.end >= n.start" + filter,
                      "table NVTX_EVENTS");
    std::unordered_map<std::string, uint32_t> text_ids;
    int rc;
    std::size_t n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (n++ >= kMaxRanges) {
        sink_.warning("more than " + std::to_string(kMaxRanges) +
                      " NVTX ranges: the rest are not used for launched_by");
        break;
      }
      std::string t = text(st, 3);
      if (t.size() > kMaxRangeText) t.resize(kMaxRangeText);
      auto [it, added] = text_ids.emplace(t, static_cast<uint32_t>(texts_.size()));
      if (added) texts_.push_back(t);
      ranges_[sqlite3_column_int64(st, 0)].ranges.push_back(
          Range{sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), -1, it->second});
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail_sqlite("table NVTX_EVENTS");
    for (auto& [tid, r] : ranges_) r.finish();
    use_runtime_ = true;
  }

  void read_kernels() {
    auto col = [&](const char* c, const char* fallback = "NULL") {
      return kernel_cols_.count(c) ? std::string("k.") + c : std::string(fallback);
    };
    std::string name_expr = kernel_cols_.count("demangledName")
                                ? (kernel_cols_.count("shortName") ? "COALESCE(d.value, sn.value)" : "d.value")
                                : "sn.value";
    std::string joins;
    if (kernel_cols_.count("demangledName")) joins += " LEFT JOIN StringIds d ON d.id = k.demangledName";
    if (kernel_cols_.count("shortName")) joins += " LEFT JOIN StringIds sn ON sn.id = k.shortName";
    std::string rt_cols = "NULL, NULL";
    if (use_runtime_) {
      // Correlation ids are per process: match the launching process too when both sides say it.
      std::string same_process =
          kernel_cols_.count("globalPid") ? " AND (r.globalTid >> 24) = (k.globalPid >> 24)" : "";
      joins += " LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId" + same_process;
      rt_cols = "r.globalTid, r.start";
    }
    std::string sql = "SELECT k.start, k.end, " + name_expr + ", " + col("gridX") + ", " + col("gridY") + ", " +
                      col("gridZ") + ", " + col("blockX") + ", " + col("blockY") + ", " + col("blockZ") + ", " +
                      col("registersPerThread") + ", " + col("staticSharedMemory") + ", " + col("dynamicSharedMemory") +
                      ", " + col("deviceId") + ", " + rt_cols + " FROM CUPTI_ACTIVITY_KIND_KERNEL k" + joins +
                      " ORDER BY k.start";
    Stmt st = prepare(sql, "table CUPTI_ACTIVITY_KIND_KERNEL");
    std::map<int64_t, uint64_t> per_device;
    int64_t row = 0;
    int rc;
    std::vector<std::vector<int64_t>> sizes;
    std::string op;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const std::string where = "table CUPTI_ACTIVITY_KIND_KERNEL, row " + std::to_string(row + 1);
      for (int c : {0, 1}) {
        int t = sqlite3_column_type(st, c);
        if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
          fail(where, std::string(c ? "end" : "start") + " is not a number");
      }
      int64_t start = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
      if (end < start) fail(where, "the kernel ends before it starts");
      ClassifyInput in;
      in.kernel_name = text(st, 2);
      if (in.kernel_name.empty()) fail(where, "kernel name missing from StringIds");
      auto num = [&](int c) -> int64_t {
        return sqlite3_column_type(st, c) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, c);
      };
      LaunchArgs a;
      a.grid = {num(3), num(4), num(5)};
      a.block = {num(6), num(7), num(8)};
      a.registers_per_thread = static_cast<int>(std::clamp<int64_t>(num(9), 0, 65536));
      a.shared_memory_bytes = std::max<int64_t>(num(10), 0) + std::max<int64_t>(num(11), 0);
      for (int64_t v : a.grid)
        if (v < 0 || v > (int64_t(1) << 31)) fail(where, "grid dimension out of range");
      for (int64_t v : a.block)
        if (v < 0 || v > (int64_t(1) << 31)) fail(where, "block dimension out of range");
      if (a.grid[0] > 0 || a.block[0] > 0) in.launch = a;
      int64_t device = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
      ++per_device[device];
      std::string launched_by;
      if (use_runtime_ && sqlite3_column_type(st, 13) != SQLITE_NULL) {
        auto it = ranges_.find(sqlite3_column_int64(st, 13));
        if (it != ranges_.end()) {
          if (const Range* r = it->second.innermost(sqlite3_column_int64(st, 14))) {
            launched_by = texts_[r->text];
            sizes.clear();
            if (parse_emit_nvtx_range(launched_by, op, sizes)) {
              in.framework_op = op;
              in.input_dims = sizes;
            }
          }
        }
      }
      ImportedKernel k = classified_kernel(in);
      k.launched_by = launched_by;
      k.seq = row++;
      k.start_us = static_cast<double>(start) / 1000.0;
      ImportedMeasurement m;
      m.latency_us = static_cast<double>(end - start) / 1000.0;
      m.method = "nsys";
      k.measurement = std::move(m);
      sink_.kernel(std::move(k));
      if ((row & 1023) == 0) {
        control_.check_cancel(label_);
        if (control_.progress) control_.progress(ImportProgress{0, 0, static_cast<uint64_t>(row), "reading kernels"});
      }
    }
    if (rc != SQLITE_DONE) fail_sqlite("table CUPTI_ACTIVITY_KIND_KERNEL, row " + std::to_string(row + 1));
    if (row == 0) fail("table CUPTI_ACTIVITY_KIND_KERNEL", "no kernels in the export");
    int64_t device = -1;
    uint64_t best = 0;
    for (const auto& [d, n] : per_device)
      if (n > best) best = n, device = d;
    std::string name = gpu_name(device);
    if (name.empty()) {
      sink_.warning("the export names no GPU for device " + std::to_string(device) + " (TARGET_INFO_GPU): GPU unknown");
    } else {
      std::string id = control_.gpus ? public_dataset_gpu_id(name, *control_.gpus) : std::string();
      sink_.gpu(id, name);
      if (id.empty())
        sink_.warning("GPU " + quote_excerpt(name) + " is not in the GPU database; add it with --gpus-dir");
    }
  }

  std::filesystem::path path_;
  std::string label_;
  ImportSink& sink_;
  const ImportControl& control_;
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_, kernel_cols_;
  std::map<int64_t, std::string> gpu_names_;
  std::map<int64_t, int64_t> cuda_to_gpu_;
  std::unordered_map<int64_t, ThreadRanges> ranges_;
  std::vector<std::string> texts_;
  bool use_runtime_ = false;
};

}  // namespace

bool parse_emit_nvtx_range(std::string_view text, std::string& op, std::vector<std::vector<int64_t>>& sizes) {
  // The op name: up to the first ','; it must look like a namespaced op ("aten::mm").
  std::size_t comma = text.find(',');
  std::string_view name = text.substr(0, comma);
  if (name.find("::") == std::string_view::npos || name.find(' ') != std::string_view::npos) return false;
  op.assign(name);
  sizes.clear();
  std::size_t at = text.find("sizes = [");
  if (at == std::string_view::npos) return true;
  // [[512, 2048], [2048, 3072], []]: two levels of lists of integers.
  std::size_t i = at + 8;
  auto skip_ws = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  if (i >= text.size() || text[i] != '[') return true;
  ++i;
  for (int guard = 0; guard < 64; ++guard) {
    skip_ws();
    if (i >= text.size()) break;
    if (text[i] == ']') break;
    if (text[i] == ',') {
      ++i;
      continue;
    }
    if (text[i] != '[') break;
    ++i;
    std::vector<int64_t> dims;
    while (i < text.size() && text[i] != ']') {
      skip_ws();
      int64_t v = 0;
      bool digits = false, neg = false;
      if (i < text.size() && text[i] == '-') neg = true, ++i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        if (v < (int64_t(1) << 50)) v = v * 10 + (text[i] - '0');
        digits = true;
        ++i;
      }
      if (digits && dims.size() < 16) dims.push_back(neg ? -v : v);
      skip_ws();
      if (i < text.size() && text[i] == ',')
        ++i;
      else if (!digits)
        break;
    }
    if (i < text.size() && text[i] == ']') ++i;
    sizes.push_back(std::move(dims));
  }
  return true;
}

int NsysSqliteImporter::sniff(const SniffInput& in) const {
  if (in.is_directory || in.gzip) return 0;
  if (in.head.size() < kSqliteMagic.size() || std::string_view(in.head).substr(0, 16) != kSqliteMagic) return 0;
  std::string_view h(in.head);
  if (h.find("CUPTI_ACTIVITY_KIND_KERNEL") != std::string_view::npos) return 95;
  if (h.find("TARGET_INFO_") != std::string_view::npos || h.find("StringIds") != std::string_view::npos ||
      h.find("NVTX_EVENTS") != std::string_view::npos)
    return 80;
  return 40;  // some SQLite file: the import says whether it is an export
}

void NsysSqliteImporter::import(const std::filesystem::path& path, ImportSink& sink,
                                const ImportControl& control) const {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ImportError(path.string(), "", "is a folder, not a file");
  if (std::filesystem::file_size(path, ec) == 0 || ec) throw ImportError(path.string(), "", "empty or unreadable file");
  NsysReader reader(path, sink, control);
  reader.run();
}

}  // namespace perfloom::storage
