#include "storage/importers/nsys_sqlite_importer.h"

#include <sqlite3.h>
#include <algorithm>
#include <limits>
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
// A kernel name, as torch traces' strings (JSON reader): longer is no compiler's name.
constexpr std::size_t kMaxKernelName = std::size_t(16) << 20;
// Each kernel row stores its name: a long StringIds name shared by many kernels would write far
// more than the file holds. The names may add up to kNameBytesPerFileByte times the file, or
// kMinNameBudget (real exports stay below a few times their size).
constexpr uint64_t kNameBytesPerFileByte = 64;
constexpr uint64_t kMinNameBudget = uint64_t(256) << 20;
// Shared memory per launch (static + dynamic): no GPU has more than 256 KiB; 1 GiB leaves room.
constexpr int64_t kMaxSharedMemory = int64_t(1) << 30;
constexpr double kNsPerUs = 1000.0;

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
  uint32_t text;  // index into texts
};

// NVTX ranges of one thread, for "innermost range open at t": of the ranges started at or before
// t and not ended before it, the one started last. Ranges sorted by start (the longer first on a
// tie), over a segment tree of their ends: a query is O(log n) however deep ranges nest, and
// ranges that overlap without nesting (start/end ranges) get the same rule.
struct ThreadRanges {
  std::vector<Range> ranges;
  std::vector<int64_t> max_end;  // segment tree: max_end[leaves + i] = ranges[i].end
  std::size_t leaves = 0;

  void finish() {
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
    leaves = 1;
    while (leaves < ranges.size()) leaves <<= 1;
    max_end.assign(2 * leaves, std::numeric_limits<int64_t>::min());
    for (std::size_t i = 0; i < ranges.size(); ++i) max_end[leaves + i] = ranges[i].end;
    for (std::size_t p = leaves - 1; p >= 1; --p) max_end[p] = std::max(max_end[2 * p], max_end[2 * p + 1]);
  }
  const Range* innermost(int64_t t) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), t, [](int64_t v, const Range& r) { return v < r.start; });
    if (it == ranges.begin()) return nullptr;
    const auto last = static_cast<std::size_t>(it - ranges.begin()) - 1;
    const std::size_t i = last_open(1, 0, leaves - 1, last, t);
    return i == kNone ? nullptr : &ranges[i];
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // The highest index <= last in [lo, hi] whose range ends at or after t. The recursion is as deep
  // as the tree (at most 23 levels for kMaxRanges), not as the ranges nest.
  std::size_t last_open(std::size_t node, std::size_t lo, std::size_t hi, std::size_t last, int64_t t) const {
    if (lo > last || max_end[node] < t) return kNone;
    if (lo == hi) return lo;
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::size_t right = last_open(2 * node + 1, mid + 1, hi, last, t);
    return right != kNone ? right : last_open(2 * node, lo, mid, last, t);
  }
};

class NsysReader {
 public:
  NsysReader(const std::filesystem::path& path, uint64_t file_bytes, ImportSink& sink, const ImportControl& control)
      : path_(path), label_(path.string()), file_bytes_(file_bytes), sink_(sink), control_(control) {}
  ~NsysReader() {
    if (db_) sqlite3_close(db_);
  }

  void run() {
    open();
    tables();
    load_gpus();
    name_groups();
    load_strings();
    check_name_budget();
    load_ranges();
    read_ops();
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

  static std::optional<int64_t> int_or_null(sqlite3_stmt* st, int col) {
    if (sqlite3_column_type(st, col) != SQLITE_INTEGER) return std::nullopt;
    return sqlite3_column_int64(st, col);
  }

  bool nvtx_usable() const {
    return nvtx_cols_.count("start") && nvtx_cols_.count("end") && nvtx_cols_.count("globalTid") &&
           runtime_cols_.count("correlationId") && runtime_cols_.count("start") && runtime_cols_.count("globalTid") &&
           kernel_cols_.count("correlationId");
  }

  // The (demangledName, shortName) pairs the kernels use and how many kernels use each: the
  // StringIds ids to load, and what the names will weigh, before anything is read or written.
  void name_groups() {
    if (tables_.count("NVTX_EVENTS")) nvtx_cols_ = columns("NVTX_EVENTS");
    if (tables_.count("CUPTI_ACTIVITY_KIND_RUNTIME")) runtime_cols_ = columns("CUPTI_ACTIVITY_KIND_RUNTIME");
    auto col = [&](const char* c) { return kernel_cols_.count(c) ? std::string(c) : std::string("NULL"); };
    Stmt st = prepare("SELECT " + col("demangledName") + ", " + col("shortName") +
                          ", count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2",
                      "table CUPTI_ACTIVITY_KIND_KERNEL");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      NameGroup g{int_or_null(st, 0), int_or_null(st, 1), static_cast<uint64_t>(sqlite3_column_int64(st, 2))};
      for (const auto& id : {g.demangled, g.shortname})
        if (id) wanted_.emplace(*id, Wanted{true, 0});
      groups_.push_back(g);
    }
    if (rc != SQLITE_DONE) fail_sqlite("table CUPTI_ACTIVITY_KIND_KERNEL");
    // NVTX texts: for launched_by, and for the timeline's ops of each thread.
    if (nvtx_cols_.count("textId") && ops_usable()) {
      Stmt t = prepare("SELECT DISTINCT textId FROM NVTX_EVENTS WHERE textId IS NOT NULL", "table NVTX_EVENTS");
      while ((rc = sqlite3_step(t)) == SQLITE_ROW)
        if (auto id = int_or_null(t, 0)) wanted_.emplace(*id, Wanted{false, 0});
      if (rc != SQLITE_DONE) fail_sqlite("table NVTX_EVENTS");
    }
  }

  // The StringIds values the kernels and NVTX ranges name, in one pass. An id given twice would
  // make every kernel naming it ambiguous (a join would repeat the kernel for each): refused.
  void load_strings() {
    Stmt st = prepare("SELECT id, value FROM StringIds", "table StringIds");
    int rc;
    uint64_t row = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      ++row;
      auto id = int_or_null(st, 0);
      if (!id) continue;
      auto w = wanted_.find(*id);
      if (w == wanted_.end()) continue;
      const std::string where = "table StringIds, row " + std::to_string(row);
      if (w->second.row)
        fail(where, "id " + std::to_string(*id) + " appears again (first in row " + std::to_string(w->second.row) +
                        "): each id names one string");
      w->second.row = row;
      const auto bytes = static_cast<std::size_t>(std::max(sqlite3_column_bytes(st, 1), 0));
      if (w->second.kernel_name && bytes > kMaxKernelName)
        fail(where, "the kernel name with id " + std::to_string(*id) + " has " + std::to_string(bytes) +
                        " bytes, over the limit of " + std::to_string(kMaxKernelName) + " (16 MiB)");
      std::string v = text(st, 1);
      if (!w->second.kernel_name && v.size() > kMaxRangeText) v.resize(kMaxRangeText);
      strings_.emplace(*id, std::move(v));
      if ((row & 4095) == 0) control_.check_cancel(label_);
    }
    if (rc != SQLITE_DONE) fail_sqlite("table StringIds, row " + std::to_string(row + 1));
  }

  // A kernel's name: demangledName's string, else shortName's (nullptr: neither is in StringIds).
  const std::string* kernel_name(std::optional<int64_t> demangled, std::optional<int64_t> shortname) const {
    for (const auto& id : {demangled, shortname})
      if (id)
        if (auto it = strings_.find(*id); it != strings_.end()) return &it->second;
    return nullptr;
  }

  void check_name_budget() {
    uint64_t total = 0, kernels = 0, top_bytes = 0, top_count = 0, top_total = 0;
    for (const NameGroup& g : groups_) {
      kernels += g.count;
      const std::string* name = kernel_name(g.demangled, g.shortname);
      if (!name) continue;
      const uint64_t bytes = name->size() * g.count;
      total = bytes / g.count == name->size() && total + bytes >= total ? total + bytes
                                                                        : std::numeric_limits<uint64_t>::max();
      if (bytes >= top_total) top_total = bytes, top_bytes = name->size(), top_count = g.count;
    }
    const uint64_t budget = std::max(kMinNameBudget, file_bytes_ > std::numeric_limits<uint64_t>::max() / 64
                                                         ? std::numeric_limits<uint64_t>::max()
                                                         : file_bytes_ * kNameBytesPerFileByte);
    kernel_rows_ = kernels;
    if (total > budget)
      fail("table CUPTI_ACTIVITY_KIND_KERNEL",
           "the " + std::to_string(kernels) + " kernels' names would take " + std::to_string(total) +
               " bytes in the database, over the limit of " + std::to_string(budget) + " (" +
               std::to_string(kNameBytesPerFileByte) + " times the file's " + std::to_string(file_bytes_) +
               " bytes, at least 256 MiB); the largest share: a name of " + std::to_string(top_bytes) +
               " bytes used by " + std::to_string(top_count) + " kernels");
  }

  void load_ranges() {
    if (!tables_.count("NVTX_EVENTS") || !tables_.count("CUPTI_ACTIVITY_KIND_RUNTIME") || !nvtx_usable()) return;
    const std::string text_col = nvtx_cols_.count("text") ? "text" : "NULL";
    const std::string id_col = nvtx_cols_.count("textId") ? "textId" : "NULL";
    // 59 NvtxPushPopRange, 60 NvtxStartEndRange; older exports lack eventType.
    std::string filter = nvtx_cols_.count("eventType") ? " AND eventType IN (59, 60)" : "";
    Stmt st = prepare("SELECT globalTid, start, end, " + text_col + ", " + id_col +
                          " FROM NVTX_EVENTS WHERE end IS NOT NULL AND end >= start" + filter,
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
      std::string t;
      if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
        t = text(st, 3);
      } else if (auto id = int_or_null(st, 4)) {
        if (auto it = strings_.find(*id); it != strings_.end()) t = it->second;
      }
      if (t.size() > kMaxRangeText) t.resize(kMaxRangeText);
      auto [it, added] = text_ids.emplace(t, static_cast<uint32_t>(texts_.size()));
      if (added) texts_.push_back(t);
      ranges_[sqlite3_column_int64(st, 0)].ranges.push_back(
          Range{sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), it->second});
      if ((n & 4095) == 0) control_.check_cancel(label_);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail_sqlite("table NVTX_EVENTS");
    for (auto& [tid, r] : ranges_) r.finish();
    use_runtime_ = true;
  }

  bool ops_usable() const {
    return nvtx_cols_.count("start") && nvtx_cols_.count("end") && nvtx_cols_.count("globalTid");
  }

  // The NVTX ranges, as the ops of their threads on the timeline, streamed to the sink in thread
  // and start order (the outer range first on a tie), each with its depth: the ranges of its
  // thread still open at its start. Only one thread's stack of open ranges is held.
  void read_ops() {
    if (!tables_.count("NVTX_EVENTS") || !ops_usable()) return;
    const std::string text_col = nvtx_cols_.count("text") ? "text" : "NULL";
    const std::string id_col = nvtx_cols_.count("textId") ? "textId" : "NULL";
    std::string filter = nvtx_cols_.count("eventType") ? " AND eventType IN (59, 60)" : "";
    Stmt st = prepare("SELECT globalTid, start, end, " + text_col + ", " + id_col +
                          " FROM NVTX_EVENTS WHERE end IS NOT NULL AND end >= start AND globalTid IS NOT NULL" +
                          filter + " ORDER BY globalTid, start, end DESC",
                      "table NVTX_EVENTS");
    std::vector<int64_t> open_ends;
    int64_t thread = 0;
    bool first = true;
    uint64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const int64_t gtid = sqlite3_column_int64(st, 0), start = sqlite3_column_int64(st, 1),
                    end = sqlite3_column_int64(st, 2);
      if (first || gtid != thread) open_ends.clear();
      first = false;
      thread = gtid;
      while (!open_ends.empty() && open_ends.back() <= start) open_ends.pop_back();
      ImportedOp o;
      // globalTid packs the process above bit 24 and the thread below it.
      o.pid = (gtid >> 24) & 0xFFFFFF;
      o.tid = gtid & 0xFFFFFF;
      o.start_us = static_cast<double>(start) / kNsPerUs;
      o.dur_us = static_cast<double>(end - start) / kNsPerUs;
      o.depth = static_cast<int>(open_ends.size());
      if (open_ends.size() < 256) open_ends.push_back(end);
      if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
        o.name = text(st, 3);
      } else if (auto id = int_or_null(st, 4)) {
        if (auto it = strings_.find(*id); it != strings_.end()) o.name = it->second;
      }
      if (o.name.size() > kMaxRangeText) o.name.resize(kMaxRangeText);
      sink_.op(std::move(o));
      if ((++n & 4095) == 0) control_.check_cancel(label_);
    }
    if (rc != SQLITE_DONE) fail_sqlite("table NVTX_EVENTS");
  }

  void read_kernels() {
    auto col = [&](const char* c, const char* fallback = "NULL") {
      return kernel_cols_.count(c) ? std::string("k.") + c : std::string(fallback);
    };
    std::string joins;
    std::string rt_cols = "NULL, NULL, NULL";
    if (use_runtime_) {
      // One runtime call per correlation id (the earliest; SQLite takes the bare columns from the
      // min() row), so that the join gives each kernel one row at most. Correlation ids are per
      // process: match the launching process too when both sides say it.
      const bool by_process = kernel_cols_.count("globalPid") > 0;
      joins = " LEFT JOIN (SELECT correlationId AS c, " + std::string(by_process ? "(globalTid >> 24)" : "0") +
              " AS p, globalTid AS t, min(start) AS s, count(*) AS n FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE "
              "correlationId IS NOT NULL GROUP BY c, p) r ON r.c = k.correlationId" +
              (by_process ? " AND r.p = (k.globalPid >> 24)" : "");
      rt_cols = "r.t, r.s, r.n";
    }
    // Names are looked up here, not joined: the sort by start then carries integers only.
    auto sql = [&](const std::string& rowid) {
      return "SELECT k.start, k.end, " + col("demangledName") + ", " + col("shortName") + ", " + col("gridX") + ", " +
             col("gridY") + ", " + col("gridZ") + ", " + col("blockX") + ", " + col("blockY") + ", " + col("blockZ") +
             ", " + col("registersPerThread") + ", " + col("staticSharedMemory") + ", " + col("dynamicSharedMemory") +
             ", " + col("deviceId") + ", " + rt_cols + ", " + rowid + ", " + col("streamId") +
             " FROM CUPTI_ACTIVITY_KIND_KERNEL k" + joins +
             " ORDER BY k.start";
    };
    sqlite3_stmt* raw = nullptr;
    Stmt st;
    if (sqlite3_prepare_v2(db_, sql("k.rowid").c_str(), -1, &raw, nullptr) == SQLITE_OK)
      st = Stmt(raw);
    else
      st = prepare(sql("NULL"), "table CUPTI_ACTIVITY_KIND_KERNEL");  // a WITHOUT ROWID table
    enum {
      kStart,
      kEnd,
      kDemangled,
      kShort,
      kGrid,
      kBlock = kGrid + 3,
      kRegs = kBlock + 3,
      kStatic,
      kDynamic,
      kDevice,
      kRtTid,
      kRtStart,
      kRtCount,
      kRowid,
      kStream
    };
    std::map<int64_t, uint64_t> per_device;
    int64_t row = 0;
    int rc;
    std::vector<std::vector<int64_t>> sizes;
    std::string op;
    uint64_t ambiguous = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      // The joins give a kernel one row at most; more rows than the table has kernels would mean
      // they amplify after all.
      if (static_cast<uint64_t>(row) >= kernel_rows_)
        fail("table CUPTI_ACTIVITY_KIND_KERNEL",
             "the query returned more rows than the table has kernels (" + std::to_string(kernel_rows_) + ")");
      auto where = [&] {
        return "table CUPTI_ACTIVITY_KIND_KERNEL, " + (sqlite3_column_type(st, kRowid) == SQLITE_INTEGER
                                                           ? "rowid " + std::to_string(sqlite3_column_int64(st, kRowid))
                                                           : "kernel " + std::to_string(row + 1) + " by start");
      };
      for (int c : {kStart, kEnd}) {
        int t = sqlite3_column_type(st, c);
        if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
          fail(where(), std::string(c ? "end" : "start") + " is not a number");
      }
      int64_t start = sqlite3_column_int64(st, kStart), end = sqlite3_column_int64(st, kEnd), duration = 0;
      if (end < start) fail(where(), "the kernel ends before it starts");
      if (__builtin_sub_overflow(end, start, &duration) ||
          static_cast<double>(duration) / kNsPerUs > kMaxKernelLatencyUs)
        fail(where(), "start " + std::to_string(start) + " and end " + std::to_string(end) +
                          " ns: a kernel longer than 1e12 us (11.6 days)");
      ClassifyInput in;
      const std::string* name = kernel_name(int_or_null(st, kDemangled), int_or_null(st, kShort));
      if (!name || name->empty()) fail(where(), "kernel name missing from StringIds");
      in.kernel_name = *name;
      auto num = [&](int c) -> int64_t {
        return sqlite3_column_type(st, c) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, c);
      };
      LaunchArgs a;
      a.grid = {num(kGrid), num(kGrid + 1), num(kGrid + 2)};
      a.block = {num(kBlock), num(kBlock + 1), num(kBlock + 2)};
      a.registers_per_thread = static_cast<int>(std::clamp<int64_t>(num(kRegs), 0, 65536));
      const int64_t static_smem = num(kStatic), dynamic_smem = num(kDynamic);
      int64_t smem = 0;
      if (static_smem < 0 || dynamic_smem < 0 || __builtin_add_overflow(static_smem, dynamic_smem, &smem) ||
          smem > kMaxSharedMemory)
        fail(where(), "staticSharedMemory " + std::to_string(static_smem) + " and dynamicSharedMemory " +
                          std::to_string(dynamic_smem) + ": shared memory out of range (0 to 1 GiB in all)");
      a.shared_memory_bytes = smem;
      for (int64_t v : a.grid)
        if (v < 0 || v > (int64_t(1) << 31)) fail(where(), "grid dimension out of range");
      for (int64_t v : a.block)
        if (v < 0 || v > (int64_t(1) << 31)) fail(where(), "block dimension out of range");
      if (a.grid[0] > 0 || a.block[0] > 0) in.launch = a;
      int64_t device = sqlite3_column_type(st, kDevice) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, kDevice);
      ++per_device[device];
      std::string launched_by;
      if (use_runtime_ && sqlite3_column_type(st, kRtTid) != SQLITE_NULL) {
        if (sqlite3_column_int64(st, kRtCount) > 1) ++ambiguous;
        auto it = ranges_.find(sqlite3_column_int64(st, kRtTid));
        if (it != ranges_.end()) {
          if (const Range* r = it->second.innermost(sqlite3_column_int64(st, kRtStart))) {
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
      k.start_us = static_cast<double>(start) / kNsPerUs;
      if (sqlite3_column_type(st, kStream) == SQLITE_INTEGER) k.stream = sqlite3_column_int64(st, kStream);
      if (use_runtime_ && sqlite3_column_type(st, kRtStart) == SQLITE_INTEGER)
        k.launch_us = static_cast<double>(sqlite3_column_int64(st, kRtStart)) / kNsPerUs;
      ImportedMeasurement m;
      m.latency_us = static_cast<double>(duration) / kNsPerUs;
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
    if (ambiguous)
      sink_.warning(std::to_string(ambiguous) +
                    " kernels' correlation ids match more than one runtime call (CUPTI_ACTIVITY_KIND_RUNTIME): the "
                    "earliest call gives launched_by");
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

  struct NameGroup {
    std::optional<int64_t> demangled, shortname;
    uint64_t count;
  };
  struct Wanted {
    bool kernel_name;  // else an NVTX text only (kept to kMaxRangeText)
    uint64_t row;      // where it was found in StringIds; 0: not yet
  };

  std::filesystem::path path_;
  std::string label_;
  uint64_t file_bytes_;
  ImportSink& sink_;
  const ImportControl& control_;
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_, kernel_cols_, nvtx_cols_, runtime_cols_;
  std::vector<NameGroup> groups_;
  std::unordered_map<int64_t, Wanted> wanted_;
  std::unordered_map<int64_t, std::string> strings_;
  std::map<int64_t, std::string> gpu_names_;
  std::map<int64_t, int64_t> cuda_to_gpu_;
  std::unordered_map<int64_t, ThreadRanges> ranges_;
  std::vector<std::string> texts_;
  bool use_runtime_ = false;
  uint64_t kernel_rows_ = 0;  // rows of CUPTI_ACTIVITY_KIND_KERNEL (name_groups' counts)
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
  const uint64_t bytes = std::filesystem::file_size(path, ec);
  if (bytes == 0 || ec) throw ImportError(path.string(), "", "empty or unreadable file");
  NsysReader reader(path, bytes, sink, control);
  reader.run();
}

}  // namespace perfloom::storage
