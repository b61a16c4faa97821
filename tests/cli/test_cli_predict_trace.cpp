// `perfloom predict --trace FILE --gpu ID[,ID...]` end to end: the real binary on the real H100
// torch.profiler trace of data, as users and scripts run it.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "csv_file.h"
#include "run_process.h"
#include "temp_path.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;
const std::string kTrace = (kSrc / "data/h100-sxm/trace.json.gz").string();
constexpr std::size_t kTraceKernels = 155;

fs::path fresh(const std::string& name) { return fresh_temp_path("perfloom-cli-trace", name); }

std::string query(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* v = sqlite3_column_text(st, 0);
      out += v ? reinterpret_cast<const char*>(v) : "NULL";
    }
  } else {
    out = std::string("error: ") + sqlite3_errmsg(h);
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CliPredictTrace, EveryKernelOnEveryTargetThenTheTotals) {
  const fs::path db = fresh("rows.db"), out = fresh("rows.csv");
  auto r = runPerfloom("predict --trace " + kTrace + " --gpu h200,a100-sxm-80gb,h100 --db " + db.string() + " --out " +
                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_csv(out);
  ASSERT_FALSE(rows.empty());
  const std::vector<std::string> header = {"row_type", "seq",        "name",        "family", "op",      "dtype",
                                           "shape",    "source_gpu", "measured_us", "gpu",    "pred_us", "lo_us",
                                           "hi_us",    "ceiling_us", "bound",       "method", "error"};
  ASSERT_EQ(rows[0], header);
  std::map<std::string, int> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = static_cast<int>(i);

  std::map<std::string, std::set<std::string>> seqs_by_gpu;
  std::map<std::string, double> kernel_sum, total;
  std::map<std::string, std::map<std::string, double>> fam_sum, fam_total;
  std::set<std::string> methods;
  bool totals_started = false;
  int total_rows = 0, family_rows = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), header.size()) << "line " << i + 1;
    const std::string& type = row[col["row_type"]];
    const std::string& gpu = row[col["gpu"]];
    EXPECT_EQ(row[col["source_gpu"]], "h100-sxm");
    if (type == "kernel") {
      EXPECT_FALSE(totals_started) << "a kernel row after the totals, line " << i + 1;
      seqs_by_gpu[gpu].insert(row[col["seq"]]);
      const std::string method = row[col["method"]];
      methods.insert(method);
      ASSERT_FALSE(row[col["pred_us"]].empty()) << "line " << i + 1 << ": " << row[col["error"]];
      const double pred = std::stod(row[col["pred_us"]]);
      kernel_sum[gpu] += pred;
      fam_sum[gpu][row[col["family"]]] += pred;
      if (gpu == "h100-sxm") {
        EXPECT_EQ(method, "measured");
        EXPECT_DOUBLE_EQ(pred, std::stod(row[col["measured_us"]]));
      } else {
        EXPECT_TRUE(method == "scaled" || method == "model" || method == "scaled-spec") << method;
      }
      EXPECT_FALSE(row[col["name"]].empty());
    } else if (type == "family_total") {
      totals_started = true;
      ++family_rows;
      EXPECT_EQ(row[col["name"]], "TOTAL " + row[col["family"]]);
      fam_total[gpu][row[col["family"]]] = std::stod(row[col["pred_us"]]);
    } else {
      ASSERT_EQ(type, "total") << "line " << i + 1;
      totals_started = true;
      ++total_rows;
      EXPECT_EQ(row[col["name"]], "TOTAL");
      total[gpu] = std::stod(row[col["pred_us"]]);
    }
  }
  EXPECT_EQ(rows.back()[col["row_type"]], "total");
  EXPECT_EQ(total_rows, 3);
  EXPECT_EQ(family_rows, 3 * 4);  // gemm, attention, norm, elementwise on each GPU
  ASSERT_EQ(seqs_by_gpu.size(), 3u);
  for (const auto& [gpu, seqs] : seqs_by_gpu) {
    EXPECT_EQ(seqs.size(), kTraceKernels) << gpu;
    EXPECT_NEAR(total[gpu], kernel_sum[gpu], 1e-4 * kernel_sum[gpu]) << gpu;
    for (const auto& [fam, s] : fam_sum[gpu]) EXPECT_NEAR(fam_total[gpu][fam], s, 1e-4 * s + 1e-6) << gpu << " " << fam;
  }
  EXPECT_TRUE(methods.count("measured"));
  // Every kernel of the sample trace has a shape (its cuDNN attention from the launching op's inputs).
  EXPECT_FALSE(methods.count("scaled-spec"));
  EXPECT_TRUE(methods.count("scaled"));
  EXPECT_LT(total["h200"], total["h100-sxm"]);
  EXPECT_GT(total["a100-sxm-80gb"], total["h100-sxm"]);
}

TEST(CliPredictTrace, SecondRunReadsTheCache) {
  const fs::path db = fresh("cache.db");
  const std::string args = "predict --trace " + kTrace + " --gpu h200,b200 --json --db " + db.string();
  auto first = runPerfloom(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const json a = json::parse(first.out);
  EXPECT_TRUE(a["source"]["imported_now"].get<bool>());
  EXPECT_EQ(a["source"]["kernels"], kTraceKernels);
  const std::size_t distinct = a["source"]["distinct_kernels"].get<std::size_t>();
  EXPECT_GT(distinct, 0u);
  EXPECT_LT(distinct, kTraceKernels);
  for (const char* g : {"h200", "b200"}) {
    EXPECT_FALSE(a["cache"][g]["from_cache"].get<bool>());
    EXPECT_EQ(a["cache"][g]["predicted_kernels"], distinct);
  }
  EXPECT_EQ(a["rows"].size(), 2 * kTraceKernels);
  const std::string cached_rows = query(db, "SELECT count(*) FROM predictions");
  EXPECT_EQ(cached_rows, std::to_string(3 * distinct));  // h100-sxm (for scaling), h200, b200

  auto second = runPerfloom(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json b = json::parse(second.out);
  EXPECT_FALSE(b["source"]["imported_now"].get<bool>());
  EXPECT_EQ(b["source"]["id"], a["source"]["id"]);
  for (const char* g : {"h200", "b200"}) {
    EXPECT_TRUE(b["cache"][g]["from_cache"].get<bool>());
    EXPECT_EQ(b["cache"][g]["predicted_kernels"], 0);
  }
  EXPECT_EQ(b["rows"], a["rows"]);
  EXPECT_EQ(b["totals"], a["totals"]);
  EXPECT_EQ(query(db, "SELECT count(*) FROM predictions"), cached_rows);
  EXPECT_EQ(query(db, "SELECT count(*) FROM sources"), "1");
  // Totals in the JSON: the whole trace last per GPU, with the speedup over the source.
  ASSERT_FALSE(b["totals"].empty());
  EXPECT_EQ(b["totals"].back()["row_type"], "total");
  EXPECT_GT(b["totals"].back()["speedup"].get<double>(), 1.0);  // b200 beats h100
}

TEST(CliPredictTrace, HumanOutputIsATotalsTable) {
  const fs::path db = fresh("human.db");
  auto r = runPerfloom("predict --trace " + kTrace + " --gpu h200 --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "155 kernels measured on h100-sxm"));
  EXPECT_TRUE(has(r.out, "TOTAL"));
  EXPECT_TRUE(has(r.out, "speedup"));
  EXPECT_FALSE(has(r.out, "nvjet")) << "kernel rows only with --out";
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 12);
}

TEST(CliPredictTrace, Errors) {
  const fs::path db = fresh("errors.db");
  // Unknown GPU.
  auto r = runPerfloom("predict --trace " + kTrace + " --gpu h999 --db " + db.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "h999")) << r.err;
  // Missing --gpu.
  r = runPerfloom("predict --trace " + kTrace + " --db " + db.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "--gpu")) << r.err;
  // Import the good trace once, then a bad file: the importer's "FILE: WHERE: REASON", nothing written.
  ASSERT_EQ(runPerfloom("predict --trace " + kTrace + " --gpu h200 --db " + db.string()).exit_code, 0);
  const std::string before = query(db,
                                   "SELECT count(*) || '/' || (SELECT count(*) FROM kernels) || '/' || "
                                   "(SELECT count(*) FROM predictions) FROM sources");
  const fs::path bad = fresh("bad.json");
  std::ofstream(bad) << "{\"schemaVersion\": 1, \"traceEvents\": [ {\"ph\": \"X\", \"cat\": \"kernel\", ";
  r = runPerfloom("predict --trace " + bad.string() + " --gpu h200 --db " + db.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, bad.string() + ":")) << r.err;
  EXPECT_EQ(query(db,
                  "SELECT count(*) || '/' || (SELECT count(*) FROM kernels) || '/' || "
                  "(SELECT count(*) FROM predictions) FROM sources"),
            before);
  // A missing file.
  r = runPerfloom("predict --trace /nonexistent/trace.json --gpu h200 --db " + db.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "/nonexistent/trace.json")) << r.err;
  // --kernels and --trace together.
  r = runPerfloom("predict --trace " + kTrace + " --kernels x.csv --gpu h200 --db " + db.string());
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CliPredictTrace, UnknownSourceGpuAsksForSourceGpu) {
  const fs::path db = fresh("source.db"), out = fresh("source.csv");
  // A trace without deviceProperties does not say which GPU it ran on.
  const std::string seed = (kSrc / "tests/fuzz/seeds/torch_trace/array_format.json").string();
  auto r = runPerfloom("predict --trace " + seed + " --gpu h200 --db " + db.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "--source-gpu")) << r.err;
  EXPECT_TRUE(has(r.err, seed)) << r.err;
  r = runPerfloom("predict --trace " + seed + " --gpu h200 --source-gpu h100 --db " + db.string() + " --out " +
                  out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_csv(out);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1][7], "h100-sxm");  // source_gpu
  EXPECT_EQ(rows.back()[0], "total");
}

TEST(CliPredictTrace, Fp8OnAmpereIsAnErrorRow) {
  const fs::path db = fresh("fp8.db"), out = fresh("fp8.csv");
  // Our H100 GEMM sweep (a collector CSV) has fp8 GEMMs; the A100 has no fp8 tensor cores.
  auto r = runPerfloom("predict --trace " + (kSrc / "data/h100-sxm/gemm.csv.gz").string() +
                       " --gpu a100-sxm-80gb --db " + db.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "fp8")) << r.err;
  const auto rows = read_csv(out);
  std::size_t errors = 0, predicted = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][0] != "kernel") continue;
    if (rows[i][15] == "error") {
      ++errors;
      EXPECT_TRUE(rows[i][10].empty()) << "no number for an error row";
      EXPECT_TRUE(has(rows[i][16], "fp8")) << rows[i][16];
      EXPECT_TRUE(has(rows[i][5], "fp8")) << rows[i][5];
    } else {
      ++predicted;
    }
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(predicted, 0u);
  EXPECT_TRUE(has(rows.back()[16], std::to_string(errors) + " kernels without a prediction"));
}

}  // namespace

TEST(CliPredictTrace, AReadOnlyDatabaseIsReadAndNotWritten) {
  const fs::path db = fresh("read-only.db");
  auto first = runPerfloom("predict --trace " + kTrace + " --gpu h200 --json --db " + db.string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string cached_rows = query(db, "SELECT count(*) FROM predictions");
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  std::ifstream in(db, std::ios::binary);
  const std::string before{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // b200 is not in the cache: it is predicted, and the cache is not written.
  auto r = runPerfloom("predict --trace " + kTrace + " --gpu h200,b200 --json --db " + db.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, db.string() + " is read-only: predictions are not cached in it")) << r.err;
  const json b = json::parse(r.out);
  EXPECT_TRUE(b["cache"]["h200"]["from_cache"].get<bool>());
  EXPECT_FALSE(b["cache"]["b200"]["from_cache"].get<bool>());
  EXPECT_EQ(b["rows"].size(), 2 * kTraceKernels);
  std::ifstream again(db, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), std::istreambuf_iterator<char>()), before);
  EXPECT_EQ(query(db, "SELECT count(*) FROM predictions"), cached_rows);
  // A trace it does not hold cannot be imported into it: said so, naming the database.
  const std::string seed = (kSrc / "tests/fuzz/seeds/torch_trace/array_format.json").string();
  r = runPerfloom("predict --trace " + seed + " --gpu h200 --source-gpu h100 --db " + db.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, db.string() + ": is read-only and does not hold")) << r.err;
  EXPECT_FALSE(has(r.err, "not a perfloom database")) << r.err;
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
}
