#pragma once
// Helpers shared by the importer and kernel-store tests.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/importers/importer.h"
#include "storage/kernel_store.h"

namespace perfloom::storage::testing {

namespace fs = std::filesystem;

inline const GpuDatabase& gpus() {
  static const GpuDatabase db = GpuDatabase::builtin();
  return db;
}

inline fs::path source_dir() { return fs::path(PERFLOOM_SOURCE_DIR); }
inline fs::path sample_trace(const std::string& gpu) { return source_dir() / "data" / gpu / "trace.json.gz"; }

// A fresh folder for one test, removed with the object.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("perfloom-import-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}
inline std::string gunzip(const fs::path& p) {
  gzFile gz = gzopen(p.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(gz);
  return out;
}
inline void write_gz(const fs::path& p, const std::string& data) {
  gzFile gz = gzopen(p.c_str(), "wb");
  gzwrite(gz, data.data(), static_cast<unsigned>(data.size()));
  gzclose(gz);
}

// Keeps everything an importer hands over.
class RecordingSink : public ImportSink {
 public:
  void kernel(ImportedKernel&& k) override { kernels.push_back(std::move(k)); }
  void op(ImportedOp&& o) override { ops.push_back(std::move(o)); }
  void gpu(const std::string& id, const std::string& name) override {
    gpu_id = id;
    gpu_name = name;
  }
  void provenance(const std::string& text) override { provenance_text = text; }
  void warning(const std::string& text) override { warnings.push_back(text); }

  std::vector<ImportedKernel> kernels;
  std::vector<ImportedOp> ops;
  std::string gpu_id, gpu_name, provenance_text;
  std::vector<std::string> warnings;
};

inline ImportControl control() {
  ImportControl c;
  c.gpus = &gpus();
  return c;
}

inline RecordingSink run_importer(const Importer& importer, const fs::path& path, ImportControl c = control()) {
  RecordingSink sink;
  importer.import(path, sink, c);
  return sink;
}

// Every row of every table, as text: equal snapshots mean an unchanged database.
inline std::string snapshot(Database& db) {
  std::string out;
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &st,
                     nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  for (const auto& t : tables) {
    out += "## " + t + "\n";
    sqlite3_prepare_v2(db.handle(), ("SELECT * FROM \"" + t + "\" ORDER BY rowid").c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* v = sqlite3_column_text(st, c);
        out += v ? reinterpret_cast<const char*>(v) : "NULL";
        out += '|';
      }
      out += '\n';
    }
    sqlite3_finalize(st);
  }
  return out;
}

inline int64_t scalar(Database& db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return -1;
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the ImportError `f` throws ("" when it throws none).
template <class F>
std::string import_error(F&& f) {
  try {
    f();
  } catch (const ImportError& e) {
    return e.what();
  }
  return "";
}

// Imports `p` into `store`, expects an ImportError that names `named` (default: `p`) and a database
// whose snapshot is still `before`; returns the message.
inline std::string expect_refused(KernelStore& store, Database& db, const std::string& before, const fs::path& p,
                                  const fs::path& named = {}) {
  std::string msg;
  try {
    store.import_file(p, control());
    ADD_FAILURE() << p << " was imported";
  } catch (const ImportError& e) {
    msg = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an ImportError: " << e.what();
  }
  EXPECT_TRUE(contains(msg, (named.empty() ? p : named).string() + ": ")) << "the message names the file: " << msg;
  EXPECT_TRUE(snapshot(db) == before) << "the database changed after: " << msg;
  return msg;
}

}  // namespace perfloom::storage::testing
