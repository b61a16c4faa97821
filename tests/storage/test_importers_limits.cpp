// Issue 4 leftovers: the CSV reader's limits (a hostile CSV cannot exhaust memory, and its error
// names the file, the line and the reason), collector folders imported as one source, and merged
// multi-process torch.profiler traces whose External / correlation ids repeat across processes.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "storage/csv_reader.h"
#include "storage/importers/collector_csv_importer.h"
#include "storage/importers/json_reader.h"
#include "storage/importers/registry.h"
#include "storage/importers/torch_trace_importer.h"
#include "storage/kernel_list_csv.h"
#include "storage/kernel_store.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

const std::string kCollectorHead =
    "# format=perfloom-collector/1\n# sweep=gemm\n# gpu_name=NVIDIA H100 80GB HBM3\n"
    "op,dtype,M,N,K,latency_us,kernel_name\n";

std::string runtime_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Writes `head`, then `mib` MiB of `fill`, then `tail`, without building it in memory.
void write_big(const fs::path& p, const std::string& head, char fill, int mib, const std::string& tail) {
  FILE* f = std::fopen(p.c_str(), "wb");
  std::fwrite(head.data(), 1, head.size(), f);
  std::string chunk(1 << 20, fill);
  for (int i = 0; i < mib; ++i) std::fwrite(chunk.data(), 1, chunk.size(), f);
  std::fwrite(tail.data(), 1, tail.size(), f);
  std::fclose(f);
}

class ImportLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<Database>(dir_ / "p.db");
    store_ = std::make_unique<KernelStore>(*db_);
    write_file(dir_ / "ok.csv", kCollectorHead + "gemm,bf16,128,256,512,3.5,k\n");
    store_->import_file(dir_ / "ok.csv", control());
    before_ = snapshot(*db_);
  }
  // Imports `p`, expects an ImportError naming it, and checks that the database is unchanged.
  std::string refused(const fs::path& p, const fs::path& named = {}) {
    return expect_refused(*store_, *db_, before_, p, named);
  }

  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<KernelStore> store_;
  std::string before_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// CsvReader limits.

TEST(CsvLimits, FieldRecordAndFieldCountAreCapped) {
  CsvLimits small;
  small.max_field_bytes = 8;
  small.max_record_bytes = 20;
  small.max_fields = 4;
  std::vector<std::string> f;

  CsvReader r = CsvReader::from_string("a,b\n123456789,x\n", "t.csv");
  r.set_limits(small);
  ASSERT_TRUE(r.read_header());
  std::string m = runtime_error_of([&] { r.next(f); });
  EXPECT_EQ(m, "t.csv: line 2: field longer than 8 bytes (column 1)");

  CsvReader q = CsvReader::from_string("a\n\"12\n3456789\"\n", "q.csv");
  q.set_limits(small);
  q.read_header();
  m = runtime_error_of([&] { q.next(f); });
  EXPECT_EQ(m, "q.csv: line 2: field longer than 8 bytes (column 1); a quote opened there may never be closed");

  CsvReader l = CsvReader::from_string("1234567,1234567,1234567\n", "l.csv");
  l.set_limits(small);
  EXPECT_EQ(runtime_error_of([&] { l.next(f); }), "l.csv: line 1: line longer than 20 bytes");

  CsvReader n = CsvReader::from_string(",,,,,\n", "n.csv");
  n.set_limits(small);
  EXPECT_EQ(runtime_error_of([&] { n.next(f); }), "n.csv: line 1: more than 4 fields");

  // At the limits exactly: read.
  CsvReader ok = CsvReader::from_string("12345678,1,2,3\n", "ok.csv");
  ok.set_limits(small);
  ASSERT_TRUE(ok.next(f));
  EXPECT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], "12345678");
}

TEST(CsvLimits, DefaultsRefuseAMultiMegabyteFieldAndAnUnterminatedQuote) {
  CsvReader r = CsvReader::from_string("a,b\n1,\"" + std::string(2 << 20, 'x') + "\"\n", "big.csv");
  r.read_header();
  std::vector<std::string> f;
  std::string m = runtime_error_of([&] { r.next(f); });
  EXPECT_TRUE(contains(m, "big.csv: line 2: field longer than 1048576 bytes (column 2)")) << m;

  CsvReader u = CsvReader::from_string("a,b\n1,2\n3,\"never closed\n4,5\n", "open.csv");
  u.read_header();
  ASSERT_TRUE(u.next(f));
  m = runtime_error_of([&] { u.next(f); });
  EXPECT_EQ(m, "open.csv: line 3: a quoted field is not closed before the end of the file");

  // 100k fields on one line: over the field-count cap, refused before 100k strings are made.
  CsvReader w = CsvReader::from_string(std::string(100000, ',') + "\n", "wide.csv");
  m = runtime_error_of([&] { w.next(f); });
  EXPECT_EQ(m, "wide.csv: line 1: more than 65536 fields");
}

TEST(CsvLimits, KernelListCsvGoesThroughTheLimits) {
  TempDir dir;
  write_big(dir / "k.csv", "op,dtype,M,N,K,note\ngemm,bf16,1,2,3,ok\ngemm,bf16,1,2,3,", 'n', 2, "\n");
  std::string m = runtime_error_of([&] { read_kernel_list(dir / "k.csv"); });
  EXPECT_TRUE(contains(m, (dir / "k.csv").string() + ": line 3: field longer than 1048576 bytes (column 6)")) << m;
}

// ---------------------------------------------------------------------------------------------
// Every CSV importer refuses a hostile field with file, line and reason; nothing is stored.

TEST_F(ImportLimits, CollectorCsvHugeFieldAndUnterminatedQuote) {
  // 64 MiB in one unquoted field: refused at the cap, never held.
  fs::path p = dir_ / "huge.csv";
  write_big(p, kCollectorHead + "gemm,bf16,1,2,3,4.5,k\ngemm,bf16,1,2,3,4.5,", 'A', 64, "\n");
  std::string m = refused(p);
  EXPECT_TRUE(contains(m, "line 6: field longer than 1048576 bytes (column 7)")) << m;

  // A quote opened and never closed: the rest of a big file would become one field.
  p = dir_ / "open_big.csv";
  std::string lines;
  for (int i = 0; i < 2000; ++i) lines += "gemm,bf16,1,2,3,4.5,k" + std::to_string(i) + "\n";
  write_big(p, kCollectorHead + "gemm,bf16,1,2,3,4.5,\"opened", 'B', 2, "\n" + lines);
  m = refused(p);
  EXPECT_TRUE(
      contains(m, "line 5: field longer than 1048576 bytes (column 7); a quote opened there may never be closed"))
      << m;

  // Unterminated quote at the end of the file.
  p = dir_ / "open_eof.csv";
  write_file(p, kCollectorHead + "gemm,bf16,1,2,3,4.5,k\ngemm,bf16,1,2,3,4.5,\"never closed\n");
  m = refused(p);
  EXPECT_TRUE(contains(m, "line 6: a quoted field is not closed before the end of the file")) << m;

  // A 2 MiB "# comment" line in the environment block.
  p = dir_ / "env.csv";
  write_big(p, "# format=perfloom-collector/1\n# note=", 'c', 2, "\n" + kCollectorHead.substr(30));
  m = refused(p);
  EXPECT_TRUE(contains(m, "line 2: line longer than 65536 bytes in the # environment block")) << m;
}

TEST_F(ImportLimits, NcuCsvQuotedFieldWithLineBreaksIsCappedToo) {
  // The ncu line filter caps a physical line; a quoted field with a line break every few bytes
  // passes it, so the CSV reader's field cap is what stops it.
  fs::path p = dir_ / "prof.csv";
  std::string body;
  body.reserve(3 << 20);
  for (int i = 0; i < (3 << 20) / 8; ++i) body += "abcdefg\n";
  write_file(
      p, "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n\"0\",\"" + body + "\",\"5\"\n");
  std::string m = refused(p);
  EXPECT_TRUE(contains(m, "line 3: field longer than 1048576 bytes (column 2)")) << m;
}

TEST_F(ImportLimits, PublicDatasetHugeFieldIsRefused) {
  fs::path p = dir_ / "gemm_perf.csv";
  write_big(p, "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\nTRTLLM,1,", 'D', 3,
            ",gemm,default,bfloat16,1,2,3,0.1\n");
  std::string m = refused(p);
  EXPECT_TRUE(contains(m, "line 2: field longer than 1048576 bytes (column 3)")) << m;
}

// ---------------------------------------------------------------------------------------------
// A folder of collector CSVs is one source.

TEST_F(ImportLimits, CollectorFolderIsOneSourceAndItsReimportIsRecognised) {
  fs::path d = dir_ / "sweep";
  fs::create_directories(d / "sub");
  write_file(d / "b_gemm.csv", kCollectorHead + "gemm,bf16,128,256,512,3.5,k1\ngemm,bf16,256,256,512,4.5,k2\n");
  write_gz(d / "a_attention.csv.gz",
           "# format=perfloom-collector/1\n# sweep=attention\n# gpu_name=NVIDIA H100 80GB HBM3\n"
           "op,dtype,B,S,Hq,Hkv,D,latency_us\nattn_prefill,bf16,1,512,32,8,128,20.5\n");
  write_file(d / "log.txt", "collector ran\n");
  write_file(d / "sub" / "c.csv", kCollectorHead + "gemm,bf16,1,1,1,1,x\n");  // not entered

  ImportSummary s = store_->import_file(d, control());
  EXPECT_EQ(s.format, "collector-csv");
  EXPECT_EQ(s.kernels, 3u);
  EXPECT_EQ(s.gpu_id, "h100-sxm");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_TRUE(contains(s.warnings[0], "1 file is not a collector CSV and was not read (log.txt)")) << s.warnings[0];
  auto ks = store_->kernels(s.source_id);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].desc.op, Op::attn_prefill);  // files in name order, seq across them
  EXPECT_EQ(ks[1].desc.shape.M, 128);
  EXPECT_EQ(ks[2].seq, 2);
  auto src = store_->source(s.source_id);
  ASSERT_TRUE(src);
  auto prov = nlohmann::json::parse(src->provenance);
  EXPECT_EQ(prov["files"]["b_gemm.csv"]["sweep"], "gemm");
  EXPECT_EQ(prov["files"]["a_attention.csv.gz"]["sweep"], "attention");

  // Re-import: recognised, even after a file that is not read changed.
  write_file(d / "log.txt", "collector ran twice\n");
  try {
    store_->import_file(d, control());
    ADD_FAILURE() << "re-import not recognised";
  } catch (const AlreadyImported& e) {
    EXPECT_EQ(e.source_id(), s.source_id);
  }
  // A changed CSV is new content.
  write_file(d / "b_gemm.csv", kCollectorHead + "gemm,bf16,128,256,512,3.6,k1\n");
  EXPECT_EQ(store_->import_file(d, control()).kernels, 2u);
}

TEST_F(ImportLimits, FolderWithNothingImportableOrABadFileIsRefused) {
  fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  std::string m = refused(empty);
  EXPECT_TRUE(contains(m, "not a format perfloom can import: a folder with no collector CSV")) << m;

  fs::path other = dir_ / "other";
  fs::create_directories(other);
  write_file(other / "notes.csv", "a,b\n1,2\n");
  m = refused(other);
  EXPECT_TRUE(contains(m, "a folder with no collector CSV")) << m;

  // One bad file fails the whole folder, named with its line; nothing of the good file stays.
  fs::path mixed = dir_ / "mixed";
  fs::create_directories(mixed);
  write_file(mixed / "a.csv", kCollectorHead + "gemm,bf16,128,256,512,3.5,k1\n");
  write_file(mixed / "b.csv", kCollectorHead + "gemm,bf16,1,2,3,4.5,\"open\n");
  m = refused(mixed, mixed / "b.csv");
  EXPECT_TRUE(contains(m, (mixed / "b.csv").string() + ": line 5: a quoted field is not closed")) << m;
}

TEST_F(ImportLimits, RealCollectorFolderImports) {
  fs::path d = source_dir() / "data/h100-sxm";
  ImportSummary s = store_->import_file(d, control());
  EXPECT_EQ(s.format, "collector-csv");
  EXPECT_GT(s.kernels, 8000u);
  EXPECT_EQ(s.gpu_id, "h100-sxm");
  bool told = false;
  // Named first and with its format, however many other files (logs, plans) the folder holds.
  for (const auto& w : s.warnings) told = told || contains(w, "were not read (trace.json.gz [torch-trace], ");
  EXPECT_TRUE(told) << "the trace next to the CSVs is named in a warning";
}

// The collector appends an `sm_mhz` column (NVML's SM clock after each measurement; empty where
// NVML is missing): a reader that finds columns by name reads such a file like one without it, a
// real settled plan run (tests/data/tuner_check) with every row.
TEST_F(ImportLimits, CollectorCsvWithTheSmClockColumnImports) {
  write_file(
      dir_ / "clock.csv",
      "# format=perfloom-collector/1\n# sweep=plan\n# gpu_name=NVIDIA H200\n# settle_ms=20.0\n"
      "op,dtype,M,N,K,latency_us,kernel_name,source,sm_mhz\n"
      "gemm,bf16,1720,7488,30464,968.614,nvjet_sm90_tst_192x176_64x4_1x2_h_bz_coopB_TNT,plan:heuristic rep=1,1545\n"
      "gemm,bf16,1720,7488,30464,975.5,nvjet_sm90_tst_192x176_64x4_1x2_h_bz_coopB_TNT,plan:heuristic rep=2,\n");
  ImportSummary s = store_->import_file(dir_ / "clock.csv", control());
  EXPECT_EQ(s.format, "collector-csv");
  EXPECT_EQ(s.gpu_id, "h200");
  EXPECT_EQ(s.kernels, 2u);

  // A real settled plan run (the shipped H200 tuner table's check): every row imports.
  s = store_->import_file(source_dir() / "tests/data/tuner_check/h200_refit9_s10606.csv.gz", control());
  EXPECT_EQ(s.gpu_id, "h200");
  EXPECT_EQ(s.kernels, 21972u);
}

// ---------------------------------------------------------------------------------------------
// Merged multi-process torch.profiler traces: External and correlation ids repeat per process.

namespace {

std::string cpu_op(int64_t pid, const std::string& name, int64_t ext, double ts, const std::string& dims) {
  return R"({"ph": "X", "cat": "cpu_op", "name": ")" + name + R"(", "pid": )" + std::to_string(pid) + R"(, "tid": )" +
         std::to_string(pid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": 50, "args": {"External id": )" +
         std::to_string(ext) + R"(, "Input Dims": )" + dims +
         R"(, "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}})";
}
std::string runtime(int64_t pid, int64_t ext, int64_t corr, double ts) {
  return R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )" + std::to_string(pid) +
         R"(, "tid": )" + std::to_string(pid) + R"(, "ts": )" + std::to_string(ts) +
         R"(, "dur": 5, "args": {"External id": )" + std::to_string(ext) + R"(, "correlation": )" +
         std::to_string(corr) + "}}";
}
// Kineto writes a GPU row's pid as the device; some mergers give it the process's pid.
std::string kernel(int64_t pid, int64_t device, int64_t ext, int64_t corr, double ts) {
  return R"({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN", "pid": )" +
         std::to_string(pid) + R"(, "tid": 7, "ts": )" + std::to_string(ts) + R"(, "dur": 10, "args": {"device": )" +
         std::to_string(device) + R"(, "External id": )" + std::to_string(ext) + R"(, "correlation": )" +
         std::to_string(corr) + R"(, "grid": [2, 64, 1], "block": [384, 1, 1]}})";
}
std::string trace(const std::vector<std::string>& events) {
  std::string out =
      R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}, {"id": 1, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}
RecordingSink import_trace(const std::string& json) {
  JsonReader r = JsonReader::from_memory(json, "merged.json");
  RecordingSink sink;
  TorchTraceImporter::import_json(r, sink, control());
  return sink;
}

// Process 100 on device 0 runs aten::mm 512x2048x3072; process 200 on device 1 runs aten::addmm
// 64x1024x256; both with External id 5.
const std::string kOpA = cpu_op(100, "aten::mm", 5, 1000, "[[512, 2048], [2048, 3072]]");
const std::string kOpB = cpu_op(200, "aten::addmm", 5, 1000, "[[256], [64, 1024], [1024, 256]]");

void expect_a(const ImportedKernel& k) {
  EXPECT_EQ(k.launched_by, "aten::mm");
  EXPECT_EQ(k.desc.shape.M, 512);
  EXPECT_EQ(k.desc.shape.N, 3072);
  EXPECT_EQ(k.desc.shape.K, 2048);
}
void expect_b(const ImportedKernel& k) {
  EXPECT_EQ(k.launched_by, "aten::addmm");
  EXPECT_EQ(k.desc.shape.M, 64);
  EXPECT_EQ(k.desc.shape.N, 256);
  EXPECT_EQ(k.desc.shape.K, 1024);
}

}  // namespace

TEST(ImportTorchTraceMultiProcess, ConcatenatedRanksWithRepeatedExternalIdsJoinTheirOwnOps) {
  // Rank files concatenated (correlation ids made unique by the merger, External ids not).
  RecordingSink s = import_trace(trace({kOpA, kernel(0, 0, 5, 900, 1100), runtime(100, 5, 900, 1010), kOpB,
                                        kernel(1, 1, 5, 1900, 1100), runtime(200, 5, 1900, 1010)}));
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_a(s.kernels[0]);
  expect_b(s.kernels[1]);
}

TEST(ImportTorchTraceMultiProcess, TimeSortedMergeJoinsEachKernelThroughItsOwnLaunch) {
  // Both processes' ops first, then the kernels, then their launches: before the fix, the second
  // kernel was joined by External id 5 to process 100's aten::mm.
  RecordingSink s = import_trace(trace({kOpA, kOpB, kernel(1, 1, 5, 1900, 1100), kernel(0, 0, 5, 900, 1100),
                                        runtime(200, 5, 1900, 1010), runtime(100, 5, 900, 1010)}));
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_b(s.kernels[0]);
  expect_a(s.kernels[1]);
}

TEST(ImportTorchTraceMultiProcess, GpuRowsWithTheProcessPidJoinEvenWithRepeatedCorrelationIds) {
  // Same External AND correlation ids in both processes; the merger gave GPU rows the process pid.
  RecordingSink s = import_trace(trace({kOpA, kOpB, runtime(100, 5, 900, 1010), runtime(200, 5, 900, 1010),
                                        kernel(200, 1, 5, 900, 1100), kernel(100, 0, 5, 900, 1100)}));
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_b(s.kernels[0]);
  expect_a(s.kernels[1]);
}

TEST(ImportTorchTraceMultiProcess, NeverJoinedToAnotherProcesssOp) {
  // Process 200's kernel carries External id 5, but process 200 has no op 5: it stays without an
  // op (and is counted) instead of taking process 100's aten::mm.
  const std::string op_b_other = cpu_op(200, "aten::addmm", 6, 1000, "[[256], [64, 1024], [1024, 256]]");
  RecordingSink s = import_trace(trace({kOpA, op_b_other, kernel(0, 0, 5, 900, 1100), runtime(100, 5, 900, 1010),
                                        kernel(1, 1, 5, 1900, 1100), runtime(200, 0, 1900, 1200)}));
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_a(s.kernels[0]);
  EXPECT_EQ(s.kernels[1].launched_by, "");
  bool counted = false;
  for (const auto& w : s.warnings) counted = counted || contains(w, "1 of 2 kernels have no framework op");
  EXPECT_TRUE(counted);

  // Repeated correlation ids and GPU rows on the device pid: which process launched the second
  // kernel is unknowable from the ids, and the device has no other kernel to tell: no op.
  s = import_trace(
      trace({kOpA, kOpB, runtime(100, 5, 900, 1010), runtime(200, 5, 900, 1010), kernel(1, 1, 5, 900, 1100)}));
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].launched_by, "");
}

TEST(ImportTorchTraceMultiProcess, DeviceLearnedFromUnambiguousLaunchesResolvesTheRest) {
  // Device 1's first kernel has a unique correlation id (launched by process 200); its second
  // kernel's correlation id was used by both processes: the device says process 200.
  RecordingSink s =
      import_trace(trace({kOpA, kOpB, cpu_op(200, "aten::addmm", 7, 2000, "[[256], [64, 1024], [1024, 256]]"),
                          cpu_op(100, "aten::mm", 7, 2000, "[[512, 2048], [2048, 3072]]"), runtime(200, 5, 1900, 1010),
                          kernel(1, 1, 5, 1900, 1100), runtime(100, 7, 950, 2010), runtime(200, 7, 950, 2010),
                          kernel(1, 1, 7, 950, 2100)}));
  ASSERT_EQ(s.kernels.size(), 2u);
  expect_b(s.kernels[0]);
  expect_b(s.kernels[1]);
}
