// Nsight Systems exports built to amplify: a StringIds id given twice, one long name shared by
// many kernels, NVTX ranges nested deep, 64-bit extremes. The work stays bounded by the file, and
// a refusal names the table and row and leaves the database as it was.
#include <chrono>

#include "storage/importers/nsys_sqlite_importer.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n"
                                                                              << sql.substr(0, 300);
}

// The columns the importer reads, in their nsys names. `sql` then fills the tables; kernels
// default to demangledName = shortName = 1 and correlationId = their number.
void make_export(const fs::path& path, const std::string& sql, bool string_ids_pk = true) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, std::string("CREATE TABLE StringIds (id INTEGER NOT NULL") + (string_ids_pk ? " PRIMARY KEY" : "") +
               ", value TEXT NOT NULL);"
               "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId "
               "INTEGER NOT NULL DEFAULT 0, correlationId INTEGER, globalPid INTEGER DEFAULT 281546145660928, "
               "demangledName INTEGER NOT NULL DEFAULT 1, shortName INTEGER NOT NULL DEFAULT 1, gridX INTEGER DEFAULT "
               "1, gridY INTEGER DEFAULT 1, gridZ INTEGER DEFAULT 1, blockX INTEGER DEFAULT 128, blockY INTEGER "
               "DEFAULT 1, blockZ INTEGER DEFAULT 1, registersPerThread INTEGER DEFAULT 32, staticSharedMemory "
               "INTEGER DEFAULT 0, dynamicSharedMemory INTEGER DEFAULT 0);"
               "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid "
               "INTEGER, correlationId INTEGER);"
               "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, "
               "globalTid INTEGER, textId INTEGER);" +
               sql);
  sqlite3_close(db);
}

// n kernels of 1 us each, 10 us apart, numbered 1..n as correlation ids.
std::string kernels(int n) {
  return "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < " + std::to_string(n) +
         ") INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, correlationId) SELECT x * 10000, x * 10000 + 1000, x "
         "FROM i;";
}

// A database with one imported trace, and the refusal of a hostile export checked against it.
class NsysHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<Database>(dir_ / "perfloom.db");
    store_ = std::make_unique<KernelStore>(*db_);
    make_export(dir_ / "ok.sqlite", "INSERT INTO StringIds VALUES (1, 'ampere_sgemm_128x64_tn');" + kernels(3));
    store_->import_file(dir_ / "ok.sqlite", control());
  }
  // Imports `p`, expects an ImportError naming it, and checks that the database is unchanged.
  std::string refused(const fs::path& p) {
    const std::string before = snapshot(*db_);
    std::string e = import_error([&] { store_->import_file(p, control()); });
    EXPECT_TRUE(contains(e, p.filename().string())) << e;
    EXPECT_EQ(snapshot(*db_), before);
    return e;
  }
  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<KernelStore> store_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// 500 rows of id 1 times 500 kernels was 250,000 kernels through the join: now one refusal
// naming the second row with that id.
TEST_F(NsysHostile, RepeatedStringIdIsRefused) {
  make_export(dir_ / "dup.sqlite",
              "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 500) INSERT INTO StringIds "
              "SELECT 1, 'gemm_' || x FROM i;" +
                  kernels(500),
              false);
  std::string e = refused(dir_ / "dup.sqlite");
  EXPECT_TRUE(contains(e, "table StringIds, row 2: id 1 appears again (first in row 1)")) << e;
  // An id nothing uses may repeat: it changes no kernel.
  make_export(dir_ / "unused.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm'), (9, 'a'), (9, 'b');" + kernels(4),
              false);
  EXPECT_EQ(run_importer(NsysSqliteImporter(), dir_ / "unused.sqlite").kernels.size(), 4u);
}

// Several runtime calls with one correlation id give their kernel one row, not one per call.
TEST_F(NsysHostile, RepeatedCorrelationIdDoesNotRepeatKernels) {
  const int64_t gtid = (int64_t(1) << 48) | (int64_t(4242) << 24) | 4243;
  make_export(dir_ / "corr.sqlite",
              "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(50) +
                  "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 200) INSERT INTO "
                  "CUPTI_ACTIVITY_KIND_RUNTIME SELECT 5000 + x, 6000, " +
                  std::to_string(gtid) + ", 1 + (x % 50) FROM i;" +
                  "INSERT INTO NVTX_EVENTS VALUES (0, 100000000, 59, 'step', " + std::to_string(gtid) + ", NULL);");
  RecordingSink s = run_importer(NsysSqliteImporter(), dir_ / "corr.sqlite");
  ASSERT_EQ(s.kernels.size(), 50u);
  EXPECT_EQ(s.kernels[0].launched_by, "step");
  ASSERT_EQ(s.warnings.size(), 2u);  // the unknown GPU, and this
  EXPECT_TRUE(contains(s.warnings[0], "50 kernels' correlation ids match more than one runtime call")) << s.warnings[0];
}

// A 64 KiB name shared by 8,000 kernels would write 512 MiB of names from a file of about 0.3 MB.
TEST_F(NsysHostile, SharedLongNameOverTheBudgetIsRefusedBeforeReading) {
  make_export(dir_ / "wide.sqlite",
              "INSERT INTO StringIds VALUES (1, 'gemm_' || hex(zeroblob(32768)));" + kernels(8000));
  EXPECT_LT(fs::file_size(dir_ / "wide.sqlite"), 1u << 20);
  auto t0 = std::chrono::steady_clock::now();
  std::string e = refused(dir_ / "wide.sqlite");
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_TRUE(contains(e, "table CUPTI_ACTIVITY_KIND_KERNEL: the 8000 kernels' names would take 524328000 bytes")) << e;
  EXPECT_TRUE(contains(e, "a name of 65541 bytes used by 8000 kernels")) << e;
  // The same name on 100 kernels is within the budget and imported whole.
  make_export(dir_ / "few.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm_' || hex(zeroblob(32768)));" + kernels(100));
  RecordingSink s = run_importer(NsysSqliteImporter(), dir_ / "few.sqlite");
  ASSERT_EQ(s.kernels.size(), 100u);
  EXPECT_EQ(s.kernels[99].desc.name.size(), 65541u);
}

TEST_F(NsysHostile, KernelNameOver16MiBIsRefused) {
  make_export(dir_ / "long.sqlite",
              "INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'k' || hex(zeroblob(8388608)));" + kernels(2) +
                  "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 2 WHERE correlationId = 2;");
  std::string e = refused(dir_ / "long.sqlite");
  EXPECT_TRUE(contains(e,
                       "table StringIds, row 2: the kernel name with id 2 has 16777217 bytes, over the limit of "
                       "16777216 (16 MiB)"))
      << e;
  EXPECT_LT(e.size(), 400u);
}

TEST_F(NsysHostile, DurationOverflowAndSharedMemoryNameTheRow) {
  make_export(dir_ / "minmax.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(3) +
                                          "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808, end = "
                                          "9223372036854775807 WHERE rowid = 2;");
  std::string e = refused(dir_ / "minmax.sqlite");
  EXPECT_TRUE(contains(e,
                       "table CUPTI_ACTIVITY_KIND_KERNEL, rowid 2: start -9223372036854775808 and end "
                       "9223372036854775807 ns: a kernel longer than 1e12 us"))
      << e;
  EXPECT_FALSE(contains(e, "CHECK")) << e;
  EXPECT_FALSE(contains(e, "perfloom.db")) << e;
  // No overflow, but 1e13 us: refused as well.
  make_export(dir_ / "long_kernel.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(3) +
                                               "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 10000000000000000 WHERE "
                                               "rowid = 3;");
  e = refused(dir_ / "long_kernel.sqlite");
  EXPECT_TRUE(contains(e, "rowid 3: start 30000 and end 10000000000000000 ns: a kernel longer than 1e12 us")) << e;

  make_export(dir_ / "smem.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(3) +
                                        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET staticSharedMemory = "
                                        "9223372036854775807, dynamicSharedMemory = 9223372036854775807 WHERE "
                                        "rowid = 1;");
  e = refused(dir_ / "smem.sqlite");
  EXPECT_TRUE(contains(e,
                       "rowid 1: staticSharedMemory 9223372036854775807 and dynamicSharedMemory "
                       "9223372036854775807: shared memory out of range"))
      << e;
}

// 20,000 ranges nested inside each other with the launches after the innermost closed (each
// query's range the outermost) cost about what the same ranges flat do: no walk up the nesting.
TEST_F(NsysHostile, DeepNvtxNestingIsNotSlowerThanFlat) {
  const int64_t gtid = (int64_t(1) << 48) | (int64_t(4242) << 24) | 4243;
  const std::string tid = std::to_string(gtid);
  const std::string common = "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(20000) +
                             "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 50000000 + rowid, 50000000 + rowid, " +
                             tid + ", correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL;";
  const std::string seq = "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 20000) ";
  // Nested: range 1 from 1 to 99,999,999 holds every launch; range x > 1 from x to 50,000,000 - x
  // ends before the first launch.
  make_export(dir_ / "deep.sqlite", common + seq +
                                        "INSERT INTO NVTX_EVENTS SELECT x, 100000000 - x - 50000000 * (x > 1), 59, "
                                        "'r' || x, " +
                                        tid + ", NULL FROM i;");
  make_export(dir_ / "flat.sqlite",
              common + seq + "INSERT INTO NVTX_EVENTS SELECT x * 2, x * 2 + 1, 59, 'r' || x, " + tid +
                  ", NULL FROM i; INSERT INTO NVTX_EVENTS VALUES (0, 100000000, 59, 'r1', " + tid + ", NULL);");
  auto t0 = std::chrono::steady_clock::now();
  RecordingSink deep = run_importer(NsysSqliteImporter(), dir_ / "deep.sqlite");
  const double deep_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  RecordingSink flat = run_importer(NsysSqliteImporter(), dir_ / "flat.sqlite");
  const double flat_s = seconds_since(t0);
  ASSERT_EQ(deep.kernels.size(), 20000u);
  ASSERT_EQ(flat.kernels.size(), 20000u);
  for (const auto* s : {&deep, &flat}) {
    EXPECT_EQ(s->kernels.front().launched_by, "r1");
    EXPECT_EQ(s->kernels.back().launched_by, "r1");
  }
  EXPECT_LT(deep_s, 3 * flat_s + 0.2) << deep_s << " s nested, " << flat_s << " s flat";
}

// Ranges that overlap without nesting (start/end ranges): the one started last that is still open.
TEST(NsysRanges, InnermostIsTheLatestStartedOpenRange) {
  TempDir dir;
  const std::string tid = std::to_string((int64_t(1) << 48) | (int64_t(4242) << 24) | 4243);
  auto runtime = [&](int corr, int t) {
    return "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(t) + ", " + std::to_string(t) + ", " +
           tid + ", " + std::to_string(corr) + ");";
  };
  auto range = [&](int s, int e, const std::string& text) {
    return "INSERT INTO NVTX_EVENTS VALUES (" + std::to_string(s) + ", " + std::to_string(e) + ", 60, '" + text +
           "', " + tid + ", NULL);";
  };
  make_export(dir / "overlap.sqlite", "INSERT INTO StringIds VALUES (1, 'gemm');" + kernels(5) + range(100, 500, "a") +
                                          range(200, 300, "b") + range(250, 700, "c") + runtime(1, 150) +
                                          runtime(2, 260) + runtime(3, 400) + runtime(4, 600) + runtime(5, 800));
  RecordingSink s = run_importer(NsysSqliteImporter(), dir / "overlap.sqlite");
  ASSERT_EQ(s.kernels.size(), 5u);
  EXPECT_EQ(s.kernels[0].launched_by, "a");
  EXPECT_EQ(s.kernels[1].launched_by, "c");
  EXPECT_EQ(s.kernels[2].launched_by, "c");
  EXPECT_EQ(s.kernels[3].launched_by, "c");
  EXPECT_EQ(s.kernels[4].launched_by, "");
}
