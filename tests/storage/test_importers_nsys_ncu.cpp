// The Nsight Systems SQLite and Nsight Compute CSV importers, on small synthetic files with the
// real table, column and header names of `nsys export --type sqlite` and `ncu --csv --page raw`.
#include <nlohmann/json.hpp>

#include "storage/importers/ncu_csv_importer.h"
#include "storage/importers/nsys_sqlite_importer.h"
#include "storage/importers/registry.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

// The tables and columns of an nsys 2024.x export that the importer reads (a subset of each
// table's columns, in their real names and types).
void make_nsys_export(const fs::path& path, bool with_nvtx = true) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, smCount INTEGER,
  computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34, 'NvtxMark', 'NvtxMark'), (59, 'NvtxPushPopRange', 'NvtxPushPopRange'),
  (60, 'NvtxStartEndRange', 'NvtxStartEndRange');
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.16.1');

INSERT INTO StringIds VALUES (1, 'nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN'), (2, 'nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN'),
  (3, 'void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)'),
  (4, 'vectorized_elementwise_kernel'), (5, 'cudaLaunchKernel'), (6, 'forward'), (7, 'flash_fwd_kernel');
INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 132, 9, 0);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'GPU-abc', 132);
)sql");
  // globalTid = (pid << 24) | tid with the 0x1000000000000 marker nsys uses; globalPid clears tid.
  const int64_t pid = int64_t(4242) << 24, gpid = (int64_t(1) << 48) | pid, gtid = gpid | 4243;
  auto ins = [&](const std::string& sql) { exec(db, sql); };
  // Kernel 1: a GEMM under emit_nvtx's "aten::mm" range; kernel 2: an add under a user range
  // nested in "forward"; kernel 3: no runtime record (no launched_by).
  ins("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000000, 2011520, 0, 1, NULL, 7, 101, " + std::to_string(gpid) +
      ", 1, 2, NULL, 1, 0, 168, 2, 64, 1, 384, 1, 1, 0, 217356, 0, 0, 1, 232448, NULL, 1)");
  ins("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2100000, 2103100, 0, 1, NULL, 7, 102, " + std::to_string(gpid) +
      ", 3, 4, NULL, 1, 0, 24, 1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 2, 0, NULL, 1)");
  ins("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2200000, 2222100, 0, 1, NULL, 13, 103, " + std::to_string(gpid) +
      ", 7, 7, NULL, 1, 0, 255, 8, 16, 2, 128, 1, 1, 1024, 32768, 0, 0, 3, 0, NULL, 1)");
  ins("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000100, 1000900, 1, " + std::to_string(gtid) +
      ", 101, 5, 0, NULL)");
  ins("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1500100, 1500900, 1, " + std::to_string(gtid) +
      ", 102, 5, 0, NULL)");
  if (with_nvtx) {
    ins(R"sql(CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
      category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER,
      uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
      jsonTextId INTEGER, jsonText TEXT, binaryData TEXT))sql");
    auto nvtx = [&](int64_t s, int64_t e, int type, const std::string& text, const std::string& text_id) {
      ins("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES (" + std::to_string(s) +
          ", " + std::to_string(e) + ", " + std::to_string(type) + ", " + text + ", " + std::to_string(gtid) + ", " +
          text_id + ")");
    };
    nvtx(900000, 1900000, 59, "NULL", "6");  // "forward", by textId
    nvtx(1000000, 1001000, 59,
         "'aten::mm, seq = 3, op_id = 7, sizes = [[512, 2048], [2048, 3072]], input_op_ids = [(5, 0)]'", "NULL");
    nvtx(1400000, 1600000, 59, "'layers.0.mlp'", "NULL");
    nvtx(1450000, 1450000, 34, "'a mark'", "NULL");
  }
  sqlite3_close(db);
}

}  // namespace

TEST(ImportNsys, KernelsNamesLaunchesNvtxRangesAndGpu) {
  TempDir dir;
  make_nsys_export(dir / "report.sqlite");
  EXPECT_EQ(ImporterRegistry::builtin().detect(dir / "report.sqlite").format(), "nsys-sqlite");
  NsysSqliteImporter imp;
  RecordingSink s = run_importer(imp, dir / "report.sqlite");
  ASSERT_EQ(s.kernels.size(), 3u);
  EXPECT_EQ(s.gpu_id, "h100-sxm");
  EXPECT_EQ(s.gpu_name, "NVIDIA H100 80GB HBM3");

  const ImportedKernel& g = s.kernels[0];
  EXPECT_EQ(g.desc.name, "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN");
  EXPECT_EQ(g.family, Family::gemm);
  EXPECT_TRUE(contains(g.launched_by, "aten::mm, seq = 3"));
  EXPECT_EQ(g.desc.shape.M, 512);
  EXPECT_EQ(g.desc.shape.N, 3072);
  EXPECT_EQ(g.desc.shape.K, 2048);
  ASSERT_TRUE(g.desc.launch.has_value());
  EXPECT_EQ(g.desc.launch->grid, (std::array<int64_t, 3>{2, 64, 1}));
  EXPECT_EQ(g.desc.launch->block, (std::array<int64_t, 3>{384, 1, 1}));
  EXPECT_EQ(g.desc.launch->registers_per_thread, 168);
  EXPECT_EQ(g.desc.launch->shared_memory_bytes, 217356);
  EXPECT_DOUBLE_EQ(g.measurement->latency_us, 11.52);
  EXPECT_EQ(g.measurement->method, "nsys");
  EXPECT_DOUBLE_EQ(*g.start_us, 2000.0);

  // The innermost range around the launch, not the enclosing "forward" (a mark is no range).
  EXPECT_EQ(s.kernels[1].launched_by, "layers.0.mlp");
  EXPECT_EQ(s.kernels[1].family, Family::elementwise);
  EXPECT_EQ(s.kernels[2].launched_by, "");
  EXPECT_EQ(s.kernels[2].desc.launch->shared_memory_bytes, 1024 + 32768);
}

// The timeline's side: each kernel's streamId and launch call, and the NVTX ranges (not marks) as
// the ops of their thread, nested by depth.
TEST(ImportNsys, StreamsLaunchesAndNvtxRangesAsOps) {
  TempDir dir;
  make_nsys_export(dir / "report.sqlite");
  NsysSqliteImporter imp;
  RecordingSink s = run_importer(imp, dir / "report.sqlite");
  ASSERT_EQ(s.kernels.size(), 3u);
  EXPECT_EQ(s.kernels[0].stream, 7);
  EXPECT_EQ(s.kernels[1].stream, 7);
  EXPECT_EQ(s.kernels[2].stream, 13);
  ASSERT_TRUE(s.kernels[0].launch_us.has_value());
  EXPECT_DOUBLE_EQ(*s.kernels[0].launch_us, 1000.1);
  EXPECT_FALSE(s.kernels[2].launch_us.has_value());  // no runtime record
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].name, "forward");  // by textId
  EXPECT_EQ(s.ops[0].depth, 0);
  EXPECT_DOUBLE_EQ(s.ops[0].start_us, 900);
  EXPECT_DOUBLE_EQ(s.ops[0].dur_us, 1000);
  EXPECT_TRUE(contains(s.ops[1].name, "aten::mm"));
  EXPECT_EQ(s.ops[1].depth, 1);
  EXPECT_EQ(s.ops[2].name, "layers.0.mlp");
  EXPECT_EQ(s.ops[2].depth, 1);
  for (const auto& o : s.ops) {
    EXPECT_EQ(o.pid, 4242);
    EXPECT_EQ(o.tid, 4243);
  }
  // Without NVTX there are no ops; the streams are still there.
  make_nsys_export(dir / "plain.sqlite", false);
  RecordingSink p = run_importer(imp, dir / "plain.sqlite");
  EXPECT_TRUE(p.ops.empty());
  EXPECT_EQ(p.kernels[2].stream, 13);
}

TEST(ImportNsys, WorksWithoutNvtxAndParsesEmitNvtxNames) {
  TempDir dir;
  make_nsys_export(dir / "plain.sqlite", false);
  NsysSqliteImporter imp;
  RecordingSink s = run_importer(imp, dir / "plain.sqlite");
  ASSERT_EQ(s.kernels.size(), 3u);
  for (const auto& k : s.kernels) EXPECT_EQ(k.launched_by, "");

  std::string op;
  std::vector<std::vector<int64_t>> sizes;
  ASSERT_TRUE(parse_emit_nvtx_range("aten::addmm, seq = 1, sizes = [[3072], [512, 2048], [2048, 3072]]", op, sizes));
  EXPECT_EQ(op, "aten::addmm");
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[1], (std::vector<int64_t>{512, 2048}));
  EXPECT_FALSE(parse_emit_nvtx_range("my decode step", op, sizes));
}

TEST(ImportNsys, AnotherSqliteFileIsNotAnExport) {
  TempDir dir;
  { Database db(dir / "perfloom.db"); }
  NsysSqliteImporter imp;
  std::string e = import_error([&] { run_importer(imp, dir / "perfloom.db"); });
  EXPECT_TRUE(contains(e, "perfloom.db")) << e;
  EXPECT_TRUE(contains(e, "not an Nsight Systems export")) << e;
}

TEST(ImportNsys, CorruptFileSaysSo) {
  TempDir dir;
  make_nsys_export(dir / "report.sqlite");
  std::string bytes = read_file(dir / "report.sqlite");
  for (std::size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  write_file(dir / "broken.sqlite", bytes);
  NsysSqliteImporter imp;
  std::string e = import_error([&] { run_importer(imp, dir / "broken.sqlite"); });
  EXPECT_TRUE(contains(e, "broken.sqlite")) << e;
  EXPECT_FALSE(e.empty());
  write_file(dir / "half.sqlite", read_file(dir / "report.sqlite").substr(0, 3000));
  e = import_error([&] { run_importer(imp, dir / "half.sqlite"); });
  EXPECT_TRUE(contains(e, "half.sqlite")) << e;
}

// ---------------------------------------------------------------------------------------------

namespace {
const char* kNcuRaw =
    "==PROF== Connected to process 12345 (/usr/bin/python3.11)\n"
    "==PROF== Profiling \"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\" - 0: 0%....50%....100% - 9 passes\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid "
    "Size\","
    "\"Device\",\"CC\",\"device__attribute_display_name\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\","
    "\"gpu__time_duration.sum\",\"launch__block_size\",\"launch__grid_size\",\"launch__registers_per_thread\","
    "\"launch__shared_mem_per_block_dynamic\",\"launch__shared_mem_per_block_static\","
    "\"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\",\"launch__func_cache_config\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Mbyte\",\"Kbyte\",\"usecond\",\"\",\"\",\"register/"
    "thread\","
    "\"Kbyte/block\",\"byte/block\",\"%\",\"\"\n"
    "\"0\",\"12345\",\"python3.11\",\"127.0.0.1\",\"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\",\"1\",\"7\",\"(384, 1, "
    "1)\","
    "\"(2, 64, 1)\",\"0\",\"9.0\",\"NVIDIA H100 80GB HBM3\",\"6.29\",\"3,145.73\",\"12.35\",\"384\",\"128\",\"168\","
    "\"217.36\",\"0\",\"61.2\",\"CachePreferNone\"\n"
    "==PROF== Profiling \"vectorized_elementwise_kernel\" - 1: 0%....50%....100% - 9 passes\n"
    "\"1\",\"12345\",\"python3.11\",\"127.0.0.1\",\"void at::native::vectorized_elementwise_kernel<8, "
    "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, "
    "at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul>)\",\"1\",\"7\",\"(128, 1, 1)\",\"(1,024, 1, 1)\",\"0\",\"9.0\",\"NVIDIA H100 80GB HBM3\","
    "\"4.19\",\"2,097.15\",\"3.10\",\"128\",\"1,024\",\"24\",\"0\",\"0\",\"0\",\"CachePreferNone\"\n"
    "\"2\",\"12345\",\"python3.11\",\"127.0.0.1\",\"some_kernel\",\"1\",\"7\",\"(64, 1, 1)\",\"(1, 1, "
    "1)\",\"0\",\"9.0\","
    "\"NVIDIA H100 80GB HBM3\",\"n/a\",\"n/a\",\"n/a\",\"64\",\"1\",\"16\",\"0\",\"0\",\"n/a\",\"CachePreferNone\"\n"
    "==PROF== Disconnected from process 12345\n";
}  // namespace

TEST(ImportNcu, RawPageWithUnitsRowCountersAndLaunch) {
  TempDir dir;
  write_file(dir / "profile.csv", kNcuRaw);
  EXPECT_EQ(ImporterRegistry::builtin().detect(dir / "profile.csv").format(), "ncu-csv");
  NcuCsvImporter imp;
  RecordingSink s = run_importer(imp, dir / "profile.csv");
  ASSERT_EQ(s.kernels.size(), 2u);  // the third has no duration (n/a)
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_TRUE(contains(s.warnings[0], "1 kernels without a duration"));
  EXPECT_EQ(s.gpu_id, "h100-sxm");

  const ImportedKernel& g = s.kernels[0];
  EXPECT_EQ(g.family, Family::gemm);
  EXPECT_DOUBLE_EQ(g.measurement->latency_us, 12.35);
  EXPECT_EQ(g.measurement->method, "ncu");
  EXPECT_EQ(g.measurement->gpu_id, "h100-sxm");
  EXPECT_EQ(g.desc.launch->grid, (std::array<int64_t, 3>{2, 64, 1}));
  EXPECT_EQ(g.desc.launch->block, (std::array<int64_t, 3>{384, 1, 1}));
  EXPECT_EQ(g.desc.launch->registers_per_thread, 168);
  EXPECT_EQ(g.desc.launch->shared_memory_bytes, 217360);  // 217.36 Kbyte
  auto counters = nlohmann::json::parse(g.measurement->counters_json);
  EXPECT_DOUBLE_EQ(counters.at("dram__bytes_read.sum").get<double>(), 6.29e6);
  EXPECT_DOUBLE_EQ(counters.at("dram__bytes_write.sum").get<double>(), 3145730.0);
  EXPECT_DOUBLE_EQ(counters.at("gpu__time_duration.sum").get<double>(), 12350.0);  // ns
  EXPECT_DOUBLE_EQ(counters.at("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active").get<double>(),
                   61.2);
  EXPECT_FALSE(counters.contains("launch__func_cache_config"));

  const ImportedKernel& add = s.kernels[1];
  EXPECT_EQ(add.family, Family::elementwise);
  EXPECT_EQ(add.desc.launch->grid, (std::array<int64_t, 3>{1024, 1, 1}));  // "(1,024, 1, 1)"
  EXPECT_DOUBLE_EQ(add.measurement->latency_us, 3.10);
}

TEST(ImportNcu, LongFormOneRowPerMetric) {
  const std::string csv =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"1\",\"app\",\"h\",\"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\",\"1\",\"7\",\"(384, 1, 1)\",\"(2, 64, "
      "1)\",\"0\",\"9.0\","
      "\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"11.52\"\n"
      "\"0\",\"1\",\"app\",\"h\",\"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\",\"1\",\"7\",\"(384, 1, 1)\",\"(2, 64, "
      "1)\",\"0\",\"9.0\","
      "\"Launch Statistics\",\"Registers Per Thread\",\"register/thread\",\"168\"\n"
      "\"0\",\"1\",\"app\",\"h\",\"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\",\"1\",\"7\",\"(384, 1, 1)\",\"(2, 64, "
      "1)\",\"0\",\"9.0\","
      "\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"Mbyte\",\"6.29\"\n"
      "\"1\",\"1\",\"app\",\"h\",\"other_kernel\",\"1\",\"7\",\"(64, 1, 1)\",\"(8, 1, 1)\",\"0\",\"9.0\","
      "\"GPU Speed Of Light Throughput\",\"Duration\",\"nsecond\",\"2,848\"\n";
  RecordingSink s;
  ImportControl c = control();
  NcuCsvImporter::import_text(csv, "details.csv", s, c);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(s.kernels[0].measurement->latency_us, 11.52);
  EXPECT_EQ(s.kernels[0].desc.launch->registers_per_thread, 168);
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(s.kernels[0].measurement->counters_json).at("dram__bytes_read.sum").get<double>(), 6.29e6);
  EXPECT_DOUBLE_EQ(s.kernels[1].measurement->latency_us, 2.848);
  EXPECT_EQ(s.gpu_id, "");
}

TEST(ImportNcu, BadValuesNameTheLineAndColumn) {
  std::string bad = kNcuRaw;
  bad.replace(bad.find("\"12.35\""), 7, "\"12.3x\"");
  RecordingSink s;
  ImportControl c = control();
  std::string e = import_error([&] { NcuCsvImporter::import_text(bad, "bad.csv", s, c); });
  EXPECT_TRUE(contains(e, "bad.csv: line 5")) << e;
  EXPECT_TRUE(contains(e, "gpu__time_duration.sum")) << e;

  e = import_error([&] {
    NcuCsvImporter::import_text("\"ID\",\"Kernel Name\",\"Block Size\"\n\"0\",\"k\",\"(1, 1, 1)\"\n", "nodur.csv", s,
                                c);
  });
  EXPECT_TRUE(contains(e, "no gpu__time_duration.sum column")) << e;
  e = import_error([&] {
    NcuCsvImporter::import_text("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\"\n", "short.csv", s, c);
  });
  EXPECT_TRUE(contains(e, "short.csv: line 2: 2 fields where the header has 3")) << e;
  e = import_error([&] {
    NcuCsvImporter::import_text(
        "\"ID\",\"Kernel Name\",\"Grid Size\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"(a, 1)\",\"1\"\n", "grid.csv",
        s, c);
  });
  EXPECT_TRUE(contains(e, "Grid Size")) << e;
}

TEST(ImportNcu, UnitsBecomeBaseUnits) {
  double v = 0;
  ASSERT_TRUE(ncu_value("1,205.00", "usecond", v));
  EXPECT_DOUBLE_EQ(v, 1205000.0);
  ASSERT_TRUE(ncu_value("2.5", "Gbyte/second", v));
  EXPECT_DOUBLE_EQ(v, 2.5e9);
  ASSERT_TRUE(ncu_value("3", "msecond", v));
  EXPECT_DOUBLE_EQ(v, 3e6);
  ASSERT_TRUE(ncu_value("7", "cycle", v));
  EXPECT_DOUBLE_EQ(v, 7);
  EXPECT_FALSE(ncu_value("n/a", "", v));
  EXPECT_FALSE(ncu_value("1e999", "", v));
}
