// Bounds on imported values (a duration up to 1e12 us, shapes within validate_shape's limits),
// time units that are time units, and one rule for a UTF-8 byte-order mark in every CSV reader:
// skipped.
#include "storage/csv_reader.h"
#include "storage/importers/collector_csv_importer.h"
#include "storage/importers/ncu_csv_importer.h"
#include "storage/importers/registry.h"
#include "storage/importers/torch_trace_importer.h"
#include "storage/kernel_list_csv.h"
#include "storage/public_datasets.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

const std::string kBom = "\xEF\xBB\xBF";

// An ncu raw page with one kernel whose duration is `value` in `unit`.
std::string ncu_csv(const std::string& unit, const std::string& value) {
  return "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"gpu__time_duration.sum\"\n"
         "\"\",\"\",\"\",\"\",\"" +
         unit + "\"\n\"0\",\"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN\",\"(384, 1, 1)\",\"(2, 64, 1)\",\"" + value +
         "\"\n";
}

std::string ncu_error(const std::string& csv) {
  RecordingSink s;
  ImportControl c = control();
  return import_error([&] { NcuCsvImporter::import_text(csv, "prof.csv", s, c); });
}

const std::string kCollectorHead =
    "# format=perfloom-collector/1\n# sweep=gemm\n# gpu_name=NVIDIA H100 80GB HBM3\n"
    "op,dtype,M,N,K,latency_us,kernel_name\n";

}  // namespace

TEST(ImportBounds, NcuDurationUnitMustBeATimeUnit) {
  for (const char* unit : {"cycle", "%", "Kbyte", "furlong"}) {
    const std::string e = ncu_error(ncu_csv(unit, "12.5"));
    EXPECT_TRUE(contains(e, "prof.csv: line 3: column \"gpu__time_duration.sum\": unit \"" + std::string(unit) +
                                "\" is not a time unit (nsecond, usecond, msecond or second)"))
        << e;
  }
  // ncu's own names and the spelled-out ones.
  for (auto [unit, us] : std::initializer_list<std::pair<const char*, double>>{
           {"usecond", 12.5}, {"nsecond", 0.0125}, {"msecond", 12500}, {"millisecond", 12500}, {"second", 12.5e6}}) {
    RecordingSink s;
    ImportControl c = control();
    NcuCsvImporter::import_text(ncu_csv(unit, "12.5"), "prof.csv", s, c);
    ASSERT_EQ(s.kernels.size(), 1u) << unit;
    EXPECT_DOUBLE_EQ(s.kernels[0].measurement->latency_us, us) << unit;
  }
  const std::string e = ncu_error(ncu_csv("second", "2000000"));
  EXPECT_TRUE(contains(e, "line 3: column \"gpu__time_duration.sum\": a duration over 1e12 us")) << e;
  // No unit at all: ncu's base unit, nanoseconds, and a warning that says so.
  RecordingSink s;
  ImportControl c = control();
  NcuCsvImporter::import_text(ncu_csv("", "12500"), "prof.csv", s, c);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(s.kernels[0].measurement->latency_us, 12.5);
  bool warned = false;
  for (const auto& w : s.warnings) warned = warned || (contains(w, "1 duration without a unit") && contains(w, "nanoseconds"));
  EXPECT_TRUE(warned);
  RecordingSink with_unit;
  NcuCsvImporter::import_text(ncu_csv("nsecond", "12500"), "prof.csv", with_unit, c);
  for (const auto& w : with_unit.warnings) EXPECT_FALSE(contains(w, "without a unit")) << w;
}

TEST(ImportBounds, TorchKernelOver1e12UsIsRefused) {
  TempDir dir;
  write_file(
      dir / "t.json",
      R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN", "ts": 10, "dur": 1e308, "args": {"correlation": 1}}]})");
  const std::string e = import_error([&] { run_importer(TorchTraceImporter(), dir / "t.json"); });
  EXPECT_TRUE(contains(e, "t.json")) << e;
  EXPECT_TRUE(contains(e, "a kernel event longer than 1e12 us")) << e;
}

// A row of the collector CSV out of bounds is skipped with the reason, as other bad rows are.
TEST(ImportBounds, CollectorRowsOutOfBoundsAreSkippedWithTheReason) {
  TempDir dir;
  write_file(dir / "c.csv", kCollectorHead +
                                "gemm,bf16,1000000000000000000,256,512,3.5,k\n"
                                "gemm,bf16,128,256,512,1e308,k\n"
                                "gemm,bf16,128,256,512,3.5,k\n");
  RecordingSink s = run_importer(CollectorCsvImporter(), dir / "c.csv");
  ASSERT_EQ(s.kernels.size(), 1u);
  std::string all;
  for (const auto& w : s.warnings) all += w + "\n";
  EXPECT_TRUE(contains(all, "gemm's M must be at most 2147483647 (got 1000000000000000000)")) << all;
  EXPECT_TRUE(contains(all, "latency_us over 1e12 us")) << all;
}

TEST(ImportBounds, ByteOrderMarkIsSkippedByEveryCsvReader) {
  // The CSV reader (kernel lists, public datasets): also before a quoted first field.
  KernelList list = parse_kernel_list(kBom + "\"op\",dtype,M,N,K\ngemm,bf16,128,256,512\n", "k.csv");
  ASSERT_EQ(list.rows.size(), 1u);
  EXPECT_EQ(list.header[0], "op");
  EXPECT_TRUE(list.rows[0].error.empty()) << list.rows[0].error;
  CsvReader only = CsvReader::from_string(kBom, "bom.csv");
  EXPECT_FALSE(only.read_header());

  // ncu, before its ==PROF== lines and before the header.
  for (const std::string& prefix : {std::string(), std::string("==PROF== Connected to process 1\n")}) {
    RecordingSink s;
    ImportControl c = control();
    NcuCsvImporter::import_text(kBom + prefix + ncu_csv("usecond", "12.5"), "prof.csv", s, c);
    ASSERT_EQ(s.kernels.size(), 1u) << prefix;
  }

  // The collector CSV, by content and by import.
  TempDir dir;
  write_file(dir / "c.csv", kBom + kCollectorHead + "gemm,bf16,128,256,512,3.5,k\n");
  EXPECT_EQ(ImporterRegistry::builtin().detect(dir / "c.csv").format(), "collector-csv");
  EXPECT_EQ(run_importer(CollectorCsvImporter(), dir / "c.csv").kernels.size(), 1u);
}

// 2^64 - 1 as a device id is refused, not read as device -1.
TEST(ImportBounds, TorchDeviceIdBeyond64BitsIsRefused) {
  TempDir dir;
  write_file(
      dir / "t.json",
      R"({"deviceProperties": [{"id": 18446744073709551615, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN", "ts": 10, "dur": 2, "args": {"device": -1}}]})");
  const std::string e = import_error([&] { run_importer(TorchTraceImporter(), dir / "t.json"); });
  EXPECT_TRUE(contains(e, "t.json")) << e;
  EXPECT_TRUE(contains(e, "deviceProperties: id must be an integer that fits in 64 bits")) << e;
}

// A newline in a file name is written as \n in messages: one message stays one line.
TEST(ImportBounds, ControlCharactersInFileNamesAreEscaped) {
  TempDir dir;
  const fs::path p = dir / "two\nlines\t.csv";
  write_file(p, "# format=perfloom-collector/1\n# gpu_name=NVIDIA Imaginary X9\nop,dtype,latency_us\n");
  const std::string e = import_error([&] { run_importer(CollectorCsvImporter(), p); });
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_TRUE(contains(e, "two\\nlines\\t.csv")) << e;
  EXPECT_EQ(CsvReader::open_file(p).label(), (dir / "two\\nlines\\t.csv").string());
  EXPECT_EQ(printable_name("a\x01\x7f"
                           "b"),
            "a\\x01\\x7fb");
}

// A public dataset's rows out of bounds are skipped with their reason.
TEST(ImportBounds, PublicDatasetRowsOutOfBoundsAreSkippedWithTheReason) {
  TempDir dir;
  write_file(dir / "gemm_perf.csv",
             "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n"
             "VLLM,0.14.0,NVIDIA H100 80GB HBM3,gemm,vllm_default,bfloat16,8192,4096,4096,1.5\n"
             "VLLM,0.14.0,NVIDIA H100 80GB HBM3,gemm,vllm_default,bfloat16,8192,4096,4096,1e300\n"
             "VLLM,0.14.0,NVIDIA H100 80GB HBM3,gemm,vllm_default,bfloat16,1000000000000000000,4096,4096,1.5\n");
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_gemm(dir / "gemm_perf.csv", gpus(), &rep);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(ks[0].latency_us, 1500.0);
  EXPECT_EQ(rep.skipped, 2u);
  EXPECT_EQ(rep.skip_counts.count("latency over 1e12 us"), 1u);
  EXPECT_EQ(rep.skip_counts.count("invalid shape"), 1u);
}
