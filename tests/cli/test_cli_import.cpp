// `perfloom import` end to end: the real binary, as users and scripts run it, including a process
// killed in the middle of a large import.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "run_process.h"
#include "storage/importers/synthetic_trace.h"
#include "temp_path.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;
const std::string kH100 = (kSrc / "data/h100-sxm/trace.json.gz").string();
const std::string kH200 = (kSrc / "data/h200/trace.json.gz").string();
const std::string kSweep = (kSrc / "data/h200/elementwise.csv.gz").string();

// A database path of this test process, removed (with its WAL) when the tests end.
fs::path fresh_db(const std::string& name) { return fresh_temp_path("perfloom-cli-import", name); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

// Runs a query on the database file with SQLite directly.
std::string query(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* v = sqlite3_column_text(st, c);
        out += (c ? "|" : "") + std::string(v ? reinterpret_cast<const char*>(v) : "NULL");
      }
      out += "\n";
    }
  } else {
    out = std::string("error: ") + sqlite3_errmsg(h);
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(CliImport, OneSummaryLinePerFile) {
  fs::path db = fresh_db("lines.db");
  auto r = runPerfloom("import " + kH100 + " " + kH200 + " " + kSweep + " --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u) << r.out;
  EXPECT_EQ(out[0].rfind(kH100 + ": torch-trace, 155 kernels, GPU h100-sxm (NVIDIA H100 80GB HBM3), ", 0), 0u)
      << out[0];
  EXPECT_EQ(out[1].rfind(kH200 + ": torch-trace, 155 kernels, GPU h200 (NVIDIA H200), ", 0), 0u) << out[1];
  EXPECT_EQ(out[2].rfind(kSweep + ": collector-csv, ", 0), 0u) << out[2];
  EXPECT_TRUE(has(out[2], " kernels, GPU h200 ")) << out[2];
  for (const auto& l : out) EXPECT_TRUE(has(l, " s (source ")) << l;
  EXPECT_EQ(query(db, "SELECT count(*) FROM sources"), "3\n");
  EXPECT_EQ(query(db, "SELECT count(*) FROM kernels WHERE source_id = 1"), "155\n");
}

TEST(CliImport, JsonOutputIsOneDocument) {
  fs::path db = fresh_db("json.db");
  auto r = runPerfloom("import --json " + kH100 + " --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc.at("files").size(), 1u);
  const json& f = doc["files"][0];
  EXPECT_EQ(f.at("status"), "imported");
  EXPECT_EQ(f.at("format"), "torch-trace");
  EXPECT_EQ(f.at("kernels"), 155);
  EXPECT_EQ(f.at("gpu_id"), "h100-sxm");
  EXPECT_EQ(f.at("content_hash").get<std::string>().size(), 64u);
  EXPECT_EQ(doc.at("failed"), 0);
}

TEST(CliImport, AFailedFileFailsTheRunButTheOthersAreImported) {
  fs::path db = fresh_db("partial.db");
  fs::path bad = fs::temp_directory_path() / ("perfloom-cli-import-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "x"}]})";
  auto r = runPerfloom("import " + kH100 + " " + bad.string() + " " + kH200 + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  EXPECT_TRUE(has(r.err, bad.string() + ": event 0 (line 1, byte ")) << r.err;
  EXPECT_TRUE(has(r.err, "ts: expected a number, found a string")) << r.err;
  EXPECT_TRUE(has(r.err, "1 of 3 files not imported")) << r.err;
  EXPECT_EQ(query(db, "SELECT format, gpu_id, kernel_count FROM sources ORDER BY id"),
            "torch-trace|h100-sxm|155\ntorch-trace|h200|155\n");

  // Again: both traces are known by their content now.
  auto again = runPerfloom("import " + kH200 + " --db " + db.string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(has(again.err, kH200 + ": already imported as source 2 on ")) << again.err;
  fs::remove(bad);
}

TEST(CliImport, UsageErrors) {
  auto r = runPerfloom("import --db " + fresh_db("usage.db").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "needs at least one FILE")) << r.err;
  auto missing = runPerfloom("import /nonexistent/trace.json --db " + fresh_db("missing.db").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(has(missing.err, "/nonexistent/trace.json: no such file or folder")) << missing.err;
}

TEST(CliImport, KilledMidImportLeavesAConsistentDatabaseWithEarlierImportsIntact) {
  fs::path db = fresh_db("killed.db");
  auto first = runPerfloom("import " + kH100 + " --db " + db.string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string before = query(db, "SELECT id, content_hash, kernel_count FROM sources") +
                             query(db, "SELECT count(*), sum(seq) FROM kernels") +
                             query(db, "SELECT count(*), sum(latency_us) FROM measurements");

  fs::path big = fs::temp_directory_path() / ("perfloom-cli-import-big-" + std::to_string(::getpid()) + ".json");
  perfloom::storage::write_synthetic_trace(big, 150'000'000);
  fs::path wal = db.string() + "-wal";
  const auto wal_start = fs::exists(wal) ? fs::file_size(wal) : 0;

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("QT_QPA_PLATFORM", "offscreen", 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(PERFLOOM_BIN, PERFLOOM_BIN, "import", big.c_str(), "--db", db.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Kill it once it is writing: the WAL grows with the open transaction's pages.
  bool writing = false;
  for (int i = 0; i < 3000 && !writing; ++i) {
    std::error_code ec;
    auto n = fs::file_size(wal, ec);
    writing = !ec && n > wal_start + (4u << 20);
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) FAIL() << "the import ended before it could be killed";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(writing) << "the import never started writing";
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  fs::remove(big);

  EXPECT_EQ(query(db, "PRAGMA integrity_check"), "ok\n");
  EXPECT_EQ(query(db, "PRAGMA foreign_key_check"), "");
  const std::string after = query(db, "SELECT id, content_hash, kernel_count FROM sources") +
                            query(db, "SELECT count(*), sum(seq) FROM kernels") +
                            query(db, "SELECT count(*), sum(latency_us) FROM measurements");
  EXPECT_EQ(after, before);
  // And the database takes the next import.
  auto next = runPerfloom("import " + kH200 + " --db " + db.string());
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(query(db, "SELECT count(*) FROM sources"), "2\n");
}

TEST(CliImport, AFolderOfCollectorCsvsIsOneSourceAndItsReimportIsRefused) {
  fs::path db = fresh_db("folder.db");
  const std::string dir = (kSrc / "data/h200").string();
  auto r = runPerfloom("import " + dir + " --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), 1u) << r.out;
  EXPECT_EQ(out[0].rfind(dir + ": collector-csv, ", 0), 0u) << out[0];
  EXPECT_TRUE(has(out[0], " kernels, GPU h200 (NVIDIA H200), ")) << out[0];
  // The trace next to the CSVs is not part of the source, and the user is told so.
  EXPECT_TRUE(has(r.err, "not collector CSVs and were not read (")) << r.err;
  EXPECT_TRUE(has(r.err, "trace.json.gz")) << r.err;
  EXPECT_EQ(query(db, "SELECT count(*), format FROM sources"), "1|collector-csv\n");
  EXPECT_EQ(query(db, "SELECT json_extract(provenance, '$.files.\"gemm.csv.gz\".sweep') FROM sources"), "gemm\n");
  const std::string kernels = query(db, "SELECT kernel_count FROM sources");
  EXPECT_EQ(query(db, "SELECT count(*) FROM kernels"), kernels);

  auto again = runPerfloom("import " + dir + " --db " + db.string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(has(again.err, dir + ": already imported as source 1 on ")) << again.err;
  EXPECT_EQ(query(db, "SELECT count(*) FROM kernels"), kernels);
}

TEST(CliImport, AFolderWithNothingImportableIsRefusedByName) {
  fs::path db = fresh_db("emptyfolder.db");
  fs::path dir = fs::temp_directory_path() / ("perfloom-cli-import-empty-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "nothing to see\n";
  auto r = runPerfloom("import " + dir.string() + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, dir.string() + ": not a format perfloom can import: a folder with no collector CSV")) << r.err;
  EXPECT_EQ(query(db, "SELECT count(*) FROM sources"), "0\n");
  fs::remove_all(dir);
}

// A newline in a file name is written as \n: each file still gets one line, an error one line.
TEST(CliImport, ANewlineInAFileNameDoesNotSplitItsLine) {
  fs::path db = fresh_db("newline.db");
  const fs::path dir = fresh_temp_path("perfloom-cli-import", "newline-dir");
  fs::create_directories(dir);
  const fs::path good = dir / "h100\ntrace.json.gz", bad = dir / "bad\nfile.json";
  fs::copy_file(kH100, good);
  std::ofstream(bad) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "x"}]})";
  auto r = runPerfloom("import '" + good.string() + "' '" + bad.string() + "' --db " + db.string());
  EXPECT_EQ(r.exit_code, 1);
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), 1u) << r.out;
  EXPECT_EQ(out[0].rfind((dir / "h100\\ntrace.json.gz").string() + ": torch-trace, 155 kernels", 0), 0u) << out[0];
  auto err = lines(r.err);
  ASSERT_EQ(err.size(), 2u) << r.err;
  EXPECT_EQ(err[0].rfind("perfloom import: " + (dir / "bad\\nfile.json").string() + ": event 0", 0), 0u) << err[0];
  fs::remove_all(dir);
}
