#include "storage/kernel_store.h"

#include <sqlite3.h>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/input_error.h"
#include "storage/importers/content_hash.h"
#include "storage/importers/scratch_db.h"
#include "storage/statement.h"

namespace perfloom::storage {

namespace {

struct ShapeField {
  const char* name;
  int64_t Shape::*member;
};
constexpr ShapeField kShapeFields[] = {
    {"M", &Shape::M},       {"N", &Shape::N},         {"K", &Shape::K},        {"Bt", &Shape::Bt},   {"B", &Shape::B},
    {"S", &Shape::S},       {"L", &Shape::L},         {"Hq", &Shape::Hq},      {"Hkv", &Shape::Hkv}, {"D", &Shape::D},
    {"T", &Shape::T},       {"H", &Shape::H},         {"I", &Shape::I},        {"V", &Shape::V},     {"E", &Shape::E},
    {"topk", &Shape::topk}, {"bytes", &Shape::bytes}, {"ranks", &Shape::ranks}};

std::string col_text(sqlite3_stmt* st, int c) {
  const unsigned char* t = sqlite3_column_text(st, c);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st, c)))
           : std::string();
}
std::optional<double> col_double(sqlite3_stmt* st, int c) {
  if (sqlite3_column_type(st, c) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(st, c);
}

void step_done(const Database& db, sqlite3_stmt* st) {
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) throw DatabaseError(db.path().string() + ": " + sqlite3_errmsg(db.handle()));
  sqlite3_reset(st);
}

// Binds text that must outlive the step (SQLITE_STATIC). Text that is not UTF-8 (CSV files can
// hold anything) is stored with U+FFFD for the bad bytes.
void bind_text(sqlite3_stmt* st, int i, const std::string& s, bool null_if_empty = true) {
  if (s.empty() && null_if_empty) {
    sqlite3_bind_null(st, i);
  } else if (is_valid_utf8(s)) {
    sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
  } else {
    std::string fixed = to_valid_utf8(s);
    sqlite3_bind_text(st, i, fixed.data(), static_cast<int>(fixed.size()), SQLITE_TRANSIENT);
  }
}
void bind_opt(sqlite3_stmt* st, int i, const std::optional<double>& v) {
  if (v)
    sqlite3_bind_double(st, i, *v);
  else
    sqlite3_bind_null(st, i);
}

std::string dim3(const std::array<int64_t, 3>& d) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + "]";
}
std::array<int64_t, 3> parse_dim3(const std::string& text) {
  std::array<int64_t, 3> d{0, 0, 0};
  std::size_t i = 0, k = 0;
  while (i < text.size() && k < 3) {
    while (i < text.size() && !(text[i] >= '0' && text[i] <= '9')) ++i;
    if (i >= text.size()) break;
    int64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') v = v * 10 + (text[i++] - '0');
    d[k++] = v;
  }
  return d;
}

// Holds a connection's mutex (serialized mode; nothing where SQLite runs without one).
class DbMutex {
 public:
  explicit DbMutex(const Database& db) : m_(sqlite3_db_mutex(db.handle())) { sqlite3_mutex_enter(m_); }
  ~DbMutex() { sqlite3_mutex_leave(m_); }
  DbMutex(const DbMutex&) = delete;
  DbMutex& operator=(const DbMutex&) = delete;

 private:
  sqlite3_mutex* m_;
};

// The columns an import writes, in the staging tables and in the database's own.
constexpr const char* kKernelCols =
    "seq, name, family, op, dtype, shape_json, grid, block, registers_per_thread, shared_memory_bytes, launched_by, "
    "start_us, library, tile_json, stream, launch_us";
constexpr const char* kMeasurementCols = "latency_us, method, repetitions, p10_us, p90_us, gpu_id, counters_json, note";
constexpr const char* kOpCols = "seq, pid, tid, start_us, dur_us, name, depth";

// An import parses into a private temporary database attached as `staging` (no lock on the
// database's own file), and only the copy into the database's tables holds its write lock: other
// imports, and predict --trace's cache writes, wait for the copy, not for the parse. Detached (its
// rows dropped) when this goes out of scope.
class Staging {
 public:
  explicit Staging(Database& db) : db_(db) {
    db_.exec("ATTACH DATABASE '' AS staging");
    try {
      // The constraints of the database's tables (schema.cpp), so that a bad row fails while parsing.
      db_.exec(
          "CREATE TABLE staging.kernels (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, name TEXT NOT NULL, "
          "family TEXT NOT NULL, op TEXT, dtype TEXT, shape_json TEXT, grid TEXT, block TEXT, registers_per_thread "
          "INTEGER, shared_memory_bytes INTEGER, launched_by TEXT, start_us REAL, library TEXT, tile_json TEXT, "
          "stream INTEGER, launch_us REAL);"
          "CREATE TABLE staging.measurements (id INTEGER PRIMARY KEY, kernel_id INTEGER NOT NULL, latency_us REAL NOT "
          "NULL CHECK (latency_us >= 0), method TEXT NOT NULL, repetitions INTEGER NOT NULL, p10_us REAL, p90_us "
          "REAL, gpu_id TEXT, counters_json TEXT, note TEXT);"
          "CREATE TABLE staging.cpu_ops (seq INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL, start_us "
          "REAL NOT NULL, dur_us REAL NOT NULL CHECK (dur_us >= 0), name TEXT NOT NULL, depth INTEGER NOT NULL CHECK "
          "(depth >= 0))");
    } catch (...) {
      detach();
      throw;
    }
  }
  ~Staging() { detach(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Copies the staged rows into the database's tables for `source_id`, in the open transaction:
  // kernel ids move past the database's highest (the staged measurements' kernel ids with them).
  void copy_into(int64_t source_id) {
    Stmt top = prepare(db_, "SELECT COALESCE(MAX(id), 0) FROM main.kernels");
    if (sqlite3_step(top) != SQLITE_ROW) throw DatabaseError(db_.path().string() + ": " + sqlite3_errmsg(db_.handle()));
    const std::string offset = std::to_string(sqlite3_column_int64(top, 0)), source = std::to_string(source_id);
    top = Stmt();
    db_.exec(std::string("INSERT INTO main.kernels (id, source_id, ") + kKernelCols + ") SELECT id + " + offset + ", " +
             source + ", " + kKernelCols + " FROM staging.kernels ORDER BY id");
    db_.exec(std::string("INSERT INTO main.measurements (kernel_id, ") + kMeasurementCols + ") SELECT kernel_id + " +
             offset + ", " + kMeasurementCols + " FROM staging.measurements ORDER BY id");
    db_.exec(std::string("INSERT INTO main.cpu_ops (source_id, ") + kOpCols + ") SELECT " + source + ", " + kOpCols +
             " FROM staging.cpu_ops ORDER BY rowid");
  }

 private:
  void detach() { sqlite3_exec(db_.handle(), "DETACH DATABASE staging", nullptr, nullptr, nullptr); }
  Database& db_;
};

// Writes what an importer hands over into the staging tables (Staging), in the open transaction.
// The inserts run on a second thread, fed batches through a short queue, so that parsing and
// SQLite share the two cores of a small machine; memory is the few batches in flight.
class StoreSink final : public ImportSink {
 public:
  explicit StoreSink(Database& db)
      : db_(db),
        kernel_(prepare(db, std::string("INSERT INTO staging.kernels (") + kKernelCols +
                                ") VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)")),
        measurement_(prepare(db, std::string("INSERT INTO staging.measurements (kernel_id, ") + kMeasurementCols +
                                     ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")),
        op_(prepare(db, ops_insert(1))),
        op_rows_(prepare(db, ops_insert(kOpsPerInsert))) {
    batch_.kernels.reserve(kBatch);
    writer_ = std::thread([this] { writer_loop(); });
  }
  ~StoreSink() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
  }

  void kernel(ImportedKernel&& k) override {
    batch_.kernels.push_back(std::move(k));
    ++kernels_;
    if (batch_.size() >= kBatch) hand_off();
  }
  void op(ImportedOp&& o) override {
    batch_.ops.push_back(std::move(o));
    ++ops_;
    if (batch_.size() >= kBatch) hand_off();
  }
  void gpu(const std::string& gpu_id, const std::string& gpu_name) override {
    gpu_id_ = gpu_id;
    gpu_name_ = gpu_name;
  }
  void provenance(const std::string& text) override { provenance_ = text; }
  void warning(const std::string& text) override {
    if (warnings_.size() < 50) warnings_.push_back(text);
  }

  // Writes what is still queued and waits for the writer; rethrows its error.
  void finish() {
    if (batch_.size() > 0) hand_off();
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    lock.unlock();
    writer_.join();
    if (error_) std::rethrow_exception(error_);
  }

  uint64_t kernels_ = 0;
  uint64_t ops_ = 0;
  std::string gpu_id_, gpu_name_, provenance_;
  std::vector<std::string> warnings_;

 private:
  static constexpr std::size_t kBatch = 512;  // rows: kernels and ops
  static constexpr std::size_t kQueued = 4;

  // Kernels and ops in the order the importer gave them, up to kBatch rows in all.
  struct Batch {
    std::vector<ImportedKernel> kernels;
    std::vector<ImportedOp> ops;
    std::size_t size() const { return kernels.size() + ops.size(); }
  };

  void hand_off() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queue_.size() < kQueued || error_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(batch_));
    cv_.notify_all();
    lock.unlock();
    batch_ = Batch();
    batch_.kernels.reserve(kBatch);
  }

  void writer_loop() {
    for (;;) {
      Batch work;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
      }
      try {
        // The connection's mutex once per batch: each bind and step then re-enters it (a
        // recursive mutex this thread holds) instead of taking it, a third of the writer's time.
        DbMutex hold(db_);
        for (auto& k : work.kernels) write(k);
        write_ops(work.ops);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
        queue_.clear();
        cv_.notify_all();
        return;
      }
    }
  }

  void write(const ImportedKernel& k) {
    sqlite3_stmt* st = kernel_;
    sqlite3_bind_int64(st, 2, k.seq);
    bind_text(st, 3, k.desc.name, false);
    std::string_view fam = family_name(k.family);
    sqlite3_bind_text(st, 4, fam.data(), static_cast<int>(fam.size()), SQLITE_STATIC);
    if (k.desc.op != Op::unknown) {
      std::string_view op = op_name(k.desc.op);
      sqlite3_bind_text(st, 5, op.data(), static_cast<int>(op.size()), SQLITE_STATIC);
    } else {
      sqlite3_bind_null(st, 5);
    }
    if (k.dtype_known) {
      std::string_view dt = dtype_name(k.desc.dtype);
      sqlite3_bind_text(st, 6, dt.data(), static_cast<int>(dt.size()), SQLITE_STATIC);
    } else {
      sqlite3_bind_null(st, 6);
    }
    shape_ = k.shape_known ? shape_to_json(k.desc.shape) : std::string();
    bind_text(st, 7, shape_);
    if (k.desc.launch) {
      grid_ = dim3(k.desc.launch->grid);
      block_ = dim3(k.desc.launch->block);
      bind_text(st, 8, grid_);
      bind_text(st, 9, block_);
      sqlite3_bind_int64(st, 10, k.desc.launch->registers_per_thread);
      sqlite3_bind_int64(st, 11, k.desc.launch->shared_memory_bytes);
    } else {
      for (int i = 8; i <= 11; ++i) sqlite3_bind_null(st, i);
    }
    bind_text(st, 12, k.launched_by);
    bind_opt(st, 13, k.start_us);
    bind_text(st, 14, k.library);
    tile_ = k.desc.tile ? tile_to_json(*k.desc.tile) : std::string();
    bind_text(st, 15, tile_);
    if (k.stream)
      sqlite3_bind_int64(st, 16, *k.stream);
    else
      sqlite3_bind_null(st, 16);
    bind_opt(st, 17, k.launch_us);
    step_done(db_, st);
    const int64_t id = sqlite3_last_insert_rowid(db_.handle());
    if (k.measurement) {
      const ImportedMeasurement& m = *k.measurement;
      sqlite3_stmt* ms = measurement_;
      sqlite3_bind_int64(ms, 1, id);
      sqlite3_bind_double(ms, 2, m.latency_us);
      bind_text(ms, 3, m.method, false);
      sqlite3_bind_int(ms, 4, m.repetitions);
      bind_opt(ms, 5, m.p10_us);
      bind_opt(ms, 6, m.p90_us);
      bind_text(ms, 7, m.gpu_id);
      bind_text(ms, 8, m.counters_json);
      bind_text(ms, 9, m.note);
      step_done(db_, ms);
    }
  }

  // Ops are small and many (two or more per kernel): kOpsPerInsert rows per statement, so that a
  // row costs its binds and little of SQLite's per-statement work.
  static constexpr int kOpsPerInsert = 32;
  static std::string ops_insert(int rows) {
    std::string sql = std::string("INSERT INTO staging.cpu_ops (") + kOpCols + ") VALUES ";
    for (int r = 0; r < rows; ++r) {
      sql += r ? ",(" : "(";
      for (int c = 1; c <= 7; ++c) sql += "?" + std::to_string(r * 7 + c) + (c < 7 ? "," : ")");
    }
    return sql;
  }
  void bind_op(sqlite3_stmt* st, int row, const ImportedOp& o) {
    const int b = row * 7;
    sqlite3_bind_int64(st, b + 1, op_seq_++);
    sqlite3_bind_int64(st, b + 2, o.pid);
    sqlite3_bind_int64(st, b + 3, o.tid);
    sqlite3_bind_double(st, b + 4, o.start_us);
    sqlite3_bind_double(st, b + 5, o.dur_us);
    bind_text(st, b + 6, o.name, false);  // the batch outlives the step
    sqlite3_bind_int(st, b + 7, o.depth);
  }
  void write_ops(const std::vector<ImportedOp>& ops) {
    std::size_t i = 0;
    for (; i + kOpsPerInsert <= ops.size(); i += kOpsPerInsert) {
      for (int r = 0; r < kOpsPerInsert; ++r) bind_op(op_rows_, r, ops[i + static_cast<std::size_t>(r)]);
      step_done(db_, op_rows_);
    }
    for (; i < ops.size(); ++i) {
      bind_op(op_, 0, ops[i]);
      step_done(db_, op_);
    }
  }

  Database& db_;
  Stmt kernel_, measurement_, op_, op_rows_;
  int64_t op_seq_ = 0;
  std::string shape_, grid_, block_, tile_;
  Batch batch_;
  std::thread writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  bool stop_ = false;
  std::exception_ptr error_;
};

SourceRecord read_source(sqlite3_stmt* st) {
  SourceRecord s;
  s.id = sqlite3_column_int64(st, 0);
  s.path = col_text(st, 1);
  s.format = col_text(st, 2);
  s.content_hash = col_text(st, 3);
  s.gpu_id = col_text(st, 4);
  s.gpu_name = col_text(st, 5);
  s.bytes = sqlite3_column_int64(st, 6);
  s.imported_at = col_text(st, 7);
  s.provenance = col_text(st, 8);
  s.kernel_count = sqlite3_column_int64(st, 9);
  return s;
}
constexpr const char* kSourceCols =
    "SELECT id, path, format, content_hash, gpu_id, gpu_name, bytes, imported_at, provenance, kernel_count FROM "
    "sources";

}  // namespace

AlreadyImported::AlreadyImported(const std::string& file, int64_t source_id, const std::string& imported_at,
                                 const std::string& as_path)
    : ImportError(file, "",
                  "already imported as source " + std::to_string(source_id) + " on " + imported_at +
                      (as_path.empty() || as_path == file ? std::string() : " (from " + as_path + ")")),
      source_id_(source_id) {}

std::string shape_to_json(const Shape& s) {
  std::string out = "{";
  for (const auto& f : kShapeFields) {
    int64_t v = s.*(f.member);
    if (v == 0) continue;
    if (out.size() > 1) out += ',';
    out += '"';
    out += f.name;
    out += "\":";
    out += std::to_string(v);
  }
  if (!s.seqlens.empty()) {
    if (out.size() > 1) out += ',';
    out += "\"seqlens\":[";
    for (std::size_t i = 0; i < s.seqlens.size(); ++i) out += (i ? "," : "") + std::to_string(s.seqlens[i]);
    out += ']';
  }
  if (!s.causal) out += std::string(out.size() > 1 ? "," : "") + "\"causal\":false";
  return out + "}";
}

Shape shape_from_json(const std::string& json) {
  Shape s;
  if (json.empty()) return s;
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return s;
  for (const auto& f : kShapeFields)
    if (auto it = j.find(f.name); it != j.end() && it->is_number_integer()) s.*(f.member) = it->get<int64_t>();
  if (auto it = j.find("seqlens"); it != j.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number_integer()) s.seqlens.push_back(v.get<int64_t>());
  if (auto it = j.find("causal"); it != j.end() && it->is_boolean()) s.causal = it->get<bool>();
  return s;
}

std::string tile_to_json(const TileConfig& t) {
  return "{\"m\":" + std::to_string(t.tile_m) + ",\"n\":" + std::to_string(t.tile_n) +
         ",\"k\":" + std::to_string(t.tile_k) + ",\"cluster_m\":" + std::to_string(t.cluster_m) +
         ",\"cluster_n\":" + std::to_string(t.cluster_n) + ",\"stages\":" + std::to_string(t.stages) +
         ",\"split_k\":" + std::to_string(t.split_k) + ",\"stream_k\":" + (t.stream_k ? "true" : "false") + "}";
}

std::optional<TileConfig> tile_from_json(const std::string& json) {
  if (json.empty()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  TileConfig t;
  t.tile_m = j.value("m", 0);
  t.tile_n = j.value("n", 0);
  t.tile_k = j.value("k", 0);
  t.cluster_m = j.value("cluster_m", 1);
  t.cluster_n = j.value("cluster_n", 1);
  t.stages = j.value("stages", 0);
  t.split_k = j.value("split_k", 1);
  t.stream_k = j.value("stream_k", false);
  return t;
}

KernelStore::FoundSource KernelStore::import_or_find(const std::filesystem::path& path, const ImportControl& control) {
  try {
    return {import_file(path, control).source_id, true};
  } catch (const AlreadyImported& e) {
    return {e.source_id(), false};
  } catch (const DatabaseError&) {
    if (!db_.read_only()) throw;
    throw std::runtime_error(db_.path().string() + ": is read-only and does not hold " + printable_name(path.string()) +
                             "; import it into a writable database (--db PATH) first");
  }
}

namespace {
// How long an import waits for another one's write lock (its parse) before it gives up.
constexpr int64_t kImportLockWaitMs = int64_t(3600) * 1000;
}  // namespace

ImportSummary KernelStore::import_file(const std::filesystem::path& path, const ImportControl& control,
                                       const ImporterRegistry& registry) {
  const Importer& importer = registry.detect(path);
  return import_with(importer, path, control);
}

ImportSummary KernelStore::import_with(const Importer& importer, const std::filesystem::path& path,
                                       const ImportControl& control) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string label = path.string();
  ImportSummary sum;
  sum.path = std::filesystem::absolute(path).lexically_normal().string();
  sum.format = std::string(importer.format());
  if (control.progress) control.progress(ImportProgress{0, 0, 0, "hashing"});
  // A source is recognised by the SHA-256 of its content as the importer reads it (inflated where
  // it is gzip), which is what sources.content_hash holds; sources imported before that hold the
  // hash of their bytes as stored, so both are looked for. The bytes as stored are hashed first
  // (cheap, and the whole answer when nothing is gzip).
  const auto files = importer.content_files(path);
  std::string stored_hash;
  if (!files.empty()) {
    stored_hash = sha256_files(path, files);
    std::error_code ec;
    for (const auto& f : files)
      if (const auto n = std::filesystem::file_size(f, ec); !ec) sum.bytes += n;
  } else {
    stored_hash = content_hash(path);
    sum.bytes = content_bytes(path);
  }
  auto prior_source = [&]() -> std::optional<SourceRecord> {
    Stmt st = prepare(db_, std::string(kSourceCols) + " WHERE content_hash IN (?1, ?2) ORDER BY id LIMIT 1");
    bind_text(st, 1, stored_hash, false);
    bind_text(st, 2, sum.content_hash, false);
    if (sqlite3_step(st) == SQLITE_ROW) return read_source(st);
    return std::nullopt;
  };
  sum.content_hash = stored_hash;
  if (auto prior = prior_source()) throw AlreadyImported(label, prior->id, prior->imported_at, prior->path);
  if (auto inflated = inflated_content_hash(path, files, [&] { control.check_cancel(label); })) {
    sum.content_hash = *inflated;
    if (auto prior = prior_source()) throw AlreadyImported(label, prior->id, prior->imported_at, prior->path);
  }

  if (control.progress) control.progress(ImportProgress{0, sum.bytes, 0, "importing"});
  // The parse fills the staging tables in a transaction of their own, which locks nothing of the
  // database's file; a failed or cancelled parse leaves the database untouched.
  Staging staging(db_);
  std::optional<StoreSink> writing(std::in_place, db_);
  StoreSink& sink = *writing;
  db_.exec("BEGIN");
  try {
    importer.import(path, sink, control);
    sink.finish();
    control.check_cancel(label);
    db_.exec("COMMIT");
  } catch (...) {
    writing.reset();  // its writer thread stopped before the rollback
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  sum.kernels = sink.kernels_;
  sum.ops = sink.ops_;
  sum.gpu_id = sink.gpu_id_;
  sum.gpu_name = sink.gpu_name_;
  sum.warnings = sink.warnings_;

  if (control.progress) control.progress(ImportProgress{sum.bytes, sum.bytes, sum.kernels, "committing"});
  // Another import (another process, or the explorer's worker) may hold the write lock for its copy:
  // wait for it, up to an hour or until cancelled, saying so, rather than fail after the usual 5 s.
  db_.wait_for_writers(kImportLockWaitMs, control.cancel, [&] {
    if (control.progress)
      control.progress(ImportProgress{sum.bytes, sum.bytes, sum.kernels, "waiting for another import to finish"});
  });
  Database::DefaultBusyTimeoutOnExit restore{db_};
  try {
    db_.transaction([&] {
      // Under the write lock: another connection may have imported the same content since we looked.
      if (auto prior = prior_source()) throw AlreadyImported(label, prior->id, prior->imported_at, prior->path);
      Stmt ins = prepare(db_, "INSERT INTO sources (path, format, content_hash, bytes) VALUES (?1, ?2, ?3, ?4)");
      bind_text(ins, 1, sum.path, false);
      bind_text(ins, 2, sum.format, false);
      bind_text(ins, 3, sum.content_hash, false);
      sqlite3_bind_int64(ins, 4, static_cast<int64_t>(sum.bytes));
      int rc = sqlite3_step(ins);
      if (rc == SQLITE_CONSTRAINT) {
        ins = Stmt();
        if (auto prior = prior_source()) throw AlreadyImported(label, prior->id, prior->imported_at, prior->path);
        throw DatabaseError(db_.path().string() + ": cannot record the source");
      }
      if (rc != SQLITE_DONE) throw DatabaseError(db_.path().string() + ": " + sqlite3_errmsg(db_.handle()));
      sum.source_id = sqlite3_last_insert_rowid(db_.handle());
      staging.copy_into(sum.source_id);
      control.check_cancel(label);

      Stmt upd =
          prepare(db_, "UPDATE sources SET gpu_id = ?1, gpu_name = ?2, provenance = ?3, kernel_count = ?4 WHERE id = ?5");
      bind_text(upd, 1, sink.gpu_id_);
      bind_text(upd, 2, sink.gpu_name_);
      bind_text(upd, 3, sink.provenance_);
      sqlite3_bind_int64(upd, 4, static_cast<int64_t>(sink.kernels_));
      sqlite3_bind_int64(upd, 5, sum.source_id);
      step_done(db_, upd);
    });
  } catch (const DatabaseError& e) {
    if (e.sqlite_code() == SQLITE_BUSY || e.sqlite_code() == SQLITE_LOCKED) control.check_cancel(label);  // cancelled while waiting
    throw;
  }
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

std::vector<SourceRecord> KernelStore::sources() const {
  Stmt st = prepare(db_, std::string(kSourceCols) + " ORDER BY id");
  std::vector<SourceRecord> out;
  while (sqlite3_step(st) == SQLITE_ROW) out.push_back(read_source(st));
  return out;
}

std::optional<SourceRecord> KernelStore::source(int64_t id) const {
  Stmt st = prepare(db_, std::string(kSourceCols) + " WHERE id = ?1");
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW) return read_source(st);
  return std::nullopt;
}

std::optional<SourceRecord> KernelStore::source_by_hash(const std::string& hash) const {
  Stmt st = prepare(db_, std::string(kSourceCols) + " WHERE content_hash = ?1");
  sqlite3_bind_text(st, 1, hash.data(), static_cast<int>(hash.size()), SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) return read_source(st);
  return std::nullopt;
}

void KernelStore::remove_source(int64_t id) {
  db_.transaction([&] {
    Stmt st = prepare(db_, "DELETE FROM sources WHERE id = ?1");
    sqlite3_bind_int64(st, 1, id);
    step_done(db_, st);
  });
}

void KernelStore::visit_kernels(int64_t source_id, const std::function<void(StoredKernel&&)>& visit) const {
  Stmt st =
      prepare(db_,
              "SELECT k.id, k.seq, k.name, k.family, k.op, k.dtype, k.shape_json, k.grid, k.block, "
              "k.registers_per_thread, k.shared_memory_bytes, k.launched_by, k.start_us, k.library, k.tile_json, "
              "m.id, m.latency_us, m.method, m.repetitions, m.p10_us, m.p90_us, m.gpu_id, m.counters_json, m.note, "
              "k.stream, k.launch_us FROM kernels k LEFT JOIN measurements m ON m.kernel_id = k.id "
              "WHERE k.source_id = ?1 ORDER BY k.seq, m.id");
  sqlite3_bind_int64(st, 1, source_id);
  std::optional<StoredKernel> cur;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    if (!cur || cur->id != id) {
      if (cur) visit(std::move(*cur));
      cur.emplace();
      StoredKernel& k = *cur;
      k.id = id;
      k.source_id = source_id;
      k.seq = sqlite3_column_int64(st, 1);
      k.desc.name = col_text(st, 2);
      k.family = parse_family(col_text(st, 3)).value_or(Family::unknown);
      k.desc.op = parse_op(col_text(st, 4)).value_or(Op::unknown);
      if (auto dt = parse_dtype(col_text(st, 5))) {
        k.desc.dtype = *dt;
        k.dtype_known = true;
      }
      if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
        k.desc.shape = shape_from_json(col_text(st, 6));
        k.shape_known = true;
      }
      if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
        LaunchArgs a;
        a.grid = parse_dim3(col_text(st, 7));
        a.block = parse_dim3(col_text(st, 8));
        a.registers_per_thread = sqlite3_column_int(st, 9);
        a.shared_memory_bytes = sqlite3_column_int64(st, 10);
        k.desc.launch = a;
      }
      k.launched_by = col_text(st, 11);
      k.start_us = col_double(st, 12);
      k.library = col_text(st, 13);
      k.desc.tile = tile_from_json(col_text(st, 14));
      if (sqlite3_column_type(st, 24) != SQLITE_NULL) k.stream = sqlite3_column_int64(st, 24);
      k.launch_us = col_double(st, 25);
    }
    if (sqlite3_column_type(st, 15) != SQLITE_NULL) {
      StoredMeasurement m;
      m.id = sqlite3_column_int64(st, 15);
      m.latency_us = sqlite3_column_double(st, 16);
      m.method = col_text(st, 17);
      m.repetitions = sqlite3_column_int(st, 18);
      m.p10_us = col_double(st, 19);
      m.p90_us = col_double(st, 20);
      m.gpu_id = col_text(st, 21);
      m.counters_json = col_text(st, 22);
      m.note = col_text(st, 23);
      // The store has no column for it; the importer's note says it (storage/public_datasets.cpp).
      if (m.note.find("act_quant=included") != std::string::npos) cur->desc.act_quant = true;
      cur->measurements.push_back(std::move(m));
    }
  }
  if (rc != SQLITE_DONE) throw DatabaseError(db_.path().string() + ": " + sqlite3_errmsg(db_.handle()));
  if (cur) visit(std::move(*cur));
}

std::vector<StoredKernel> KernelStore::kernels(int64_t source_id) const {
  std::vector<StoredKernel> out;
  visit_kernels(source_id, [&](StoredKernel&& k) { out.push_back(std::move(k)); });
  return out;
}

void KernelStore::put_predictions(int64_t source_id, const std::string& gpu_id, const std::string& model_version,
                                  const std::vector<CachedPrediction>& predictions) {
  db_.transaction([&] {
    Stmt st = prepare(db_,
                      "INSERT OR REPLACE INTO predictions (kernel_id, gpu_id, model_version, pred_us, lo_us, hi_us, "
                      "ceiling_us, bound, source_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    Stmt check = prepare(db_, "SELECT source_id FROM kernels WHERE id = ?1");
    for (const auto& p : predictions) {
      sqlite3_bind_int64(check, 1, p.kernel_id);
      bool ok = sqlite3_step(check) == SQLITE_ROW && sqlite3_column_int64(check, 0) == source_id;
      sqlite3_reset(check);
      if (!ok)
        throw DatabaseError("prediction for kernel " + std::to_string(p.kernel_id) + ", which is not in source " +
                            std::to_string(source_id));
      sqlite3_bind_int64(st, 1, p.kernel_id);
      bind_text(st, 2, gpu_id, false);
      bind_text(st, 3, model_version, false);
      sqlite3_bind_double(st, 4, p.pred_us);
      bind_opt(st, 5, p.lo_us);
      bind_opt(st, 6, p.hi_us);
      bind_opt(st, 7, p.ceiling_us);
      bind_text(st, 8, p.bound);
      sqlite3_bind_int64(st, 9, source_id);
      step_done(db_, st);
    }
  });
}

std::vector<CachedPrediction> KernelStore::predictions(int64_t source_id, const std::string& gpu_id,
                                                       const std::string& model_version) const {
  Stmt st = prepare(db_,
                    "SELECT p.kernel_id, p.pred_us, p.lo_us, p.hi_us, p.ceiling_us, p.bound FROM predictions p "
                    "JOIN kernels k ON k.id = p.kernel_id "
                    "WHERE p.source_id = ?1 AND p.gpu_id = ?2 AND p.model_version = ?3 ORDER BY k.seq");
  sqlite3_bind_int64(st, 1, source_id);
  sqlite3_bind_text(st, 2, gpu_id.data(), static_cast<int>(gpu_id.size()), SQLITE_STATIC);
  sqlite3_bind_text(st, 3, model_version.data(), static_cast<int>(model_version.size()), SQLITE_STATIC);
  std::vector<CachedPrediction> out;
  while (sqlite3_step(st) == SQLITE_ROW) {
    CachedPrediction p;
    p.kernel_id = sqlite3_column_int64(st, 0);
    p.pred_us = sqlite3_column_double(st, 1);
    p.lo_us = col_double(st, 2);
    p.hi_us = col_double(st, 3);
    p.ceiling_us = col_double(st, 4);
    p.bound = col_text(st, 5);
    out.push_back(std::move(p));
  }
  return out;
}

bool KernelStore::has_predictions(int64_t source_id, const std::string& gpu_id,
                                  const std::string& model_version) const {
  Stmt st =
      prepare(db_, "SELECT 1 FROM predictions WHERE source_id = ?1 AND gpu_id = ?2 AND model_version = ?3 LIMIT 1");
  sqlite3_bind_int64(st, 1, source_id);
  sqlite3_bind_text(st, 2, gpu_id.data(), static_cast<int>(gpu_id.size()), SQLITE_STATIC);
  sqlite3_bind_text(st, 3, model_version.data(), static_cast<int>(model_version.size()), SQLITE_STATIC);
  return sqlite3_step(st) == SQLITE_ROW;
}

}  // namespace perfloom::storage
