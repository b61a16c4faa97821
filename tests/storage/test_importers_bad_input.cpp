// Bad input (issue 4): truncated, malformed, empty, binary, foreign and hostile files. Each gets an
// error that names the file, where it broke and why; nothing of it is written; the database, which
// already holds an earlier import, is unchanged.
#include <cstdio>
#include <random>

#include "storage/kernel_store.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

class ImportBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<Database>(dir_ / "p.db");
    store_ = std::make_unique<KernelStore>(*db_);
    store_->import_file(sample_trace("h100-sxm"), control());
    before_ = snapshot(*db_);
  }

  // Imports `name` with `content`; returns the error message and checks that nothing changed.
  std::string refused(const std::string& name, const std::string& content, bool gz = false) {
    fs::path p = dir_ / name;
    if (gz)
      write_gz(p, content);
    else
      write_file(p, content);
    return refused_file(p);
  }
  std::string refused_file(const fs::path& p) { return expect_refused(*store_, *db_, before_, p); }

  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<KernelStore> store_;
  std::string before_;
};

std::string sample_json() { return gunzip(sample_trace("h100-sxm")); }

const std::string kHead = R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)";
const std::string kKernel =
    R"({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN", "ts": 10, "dur": 2, "args": {"correlation": 1}})";

}  // namespace

TEST_F(ImportBadInput, TruncatedGzipAndJson) {
  std::string gz = read_file(sample_trace("h100-sxm"));
  std::string m = refused("cut.json.gz", gz.substr(0, gz.size() / 2));
  EXPECT_TRUE(contains(m, "truncated")) << m;
  EXPECT_TRUE(contains(m, "compressed byte")) << m;

  std::string json = sample_json();
  m = refused("cut.json", json.substr(0, json.size() * 2 / 3));
  EXPECT_TRUE(contains(m, "unexpected end of input")) << m;
  EXPECT_TRUE(contains(m, "truncated")) << m;
  EXPECT_TRUE(contains(m, "line ")) << m;
}

TEST_F(ImportBadInput, CorruptGzipData) {
  std::string gz = read_file(sample_trace("h100-sxm"));
  for (std::size_t i = gz.size() / 3; i < gz.size() / 3 + 64; ++i) gz[i] = static_cast<char>(gz[i] ^ 0xA5);
  std::string m = refused("corrupt.json.gz", gz);
  EXPECT_TRUE(contains(m, "corrupt gzip data") || contains(m, "JSON") || contains(m, "expected")) << m;
}

TEST_F(ImportBadInput, MalformedJsonNamesLineAndByte) {
  std::string json = sample_json();
  std::size_t at = json.find("\"dur\": 3098.761,");
  ASSERT_NE(at, std::string::npos);
  json.erase(at + 15, 1);  // drop the comma after the number
  std::string m = refused("malformed.json", json);
  EXPECT_TRUE(contains(m, "line 32")) << m;
  EXPECT_TRUE(contains(m, "expected ',' or '}'")) << m;

  m = refused("trailing.json", kHead + kKernel + "]} and more");
  EXPECT_TRUE(contains(m, "after the end of the JSON document")) << m;
  m = refused("badstring.json",
              kHead + R"({"ph": "X", "cat": "kernel", "name": "a)" + std::string(1, '\x01') + "\"}]}");
  EXPECT_TRUE(contains(m, "control character")) << m;
}

TEST_F(ImportBadInput, EmptyBinaryAndForeignFiles) {
  EXPECT_TRUE(contains(refused("empty.json", ""), "empty file"));
  std::mt19937 rng(7);
  std::string bin(100000, '\0');
  for (auto& c : bin) c = static_cast<char>(rng());
  EXPECT_TRUE(contains(refused("random.json", bin), "binary data"));
  EXPECT_TRUE(contains(refused("random.json.gz", bin, true), "binary data"));
  EXPECT_TRUE(contains(refused("config.json", R"({"architectures": ["LlamaForCausalLM"]})"),
                       "not a format perfloom can import"));
  EXPECT_TRUE(contains(refused("events.json", R"({"traceEvents": {"a": 1}})"), "traceEvents: expected an array"));
  EXPECT_TRUE(contains(
      refused("nokernels.json", kHead + R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1}]})"),
      "no GPU kernel events"));
  // A trace-looking file whose events are not objects.
  std::string m = refused("numbers.json", R"({"traceEvents": [1, 2, 3]})");
  EXPECT_TRUE(contains(m, "event 0")) << m;
  EXPECT_TRUE(contains(m, "expected an event object")) << m;
}

TEST_F(ImportBadInput, HostileNestingNumbersAndTypes) {
  // Nesting 10000 deep inside an event's args: refused at the depth limit, no stack overflow.
  std::string deep = kHead + R"({"ph": "X", "cat": "kernel", "args": {"x": )" + std::string(10000, '[') +
                     std::string(10000, ']') + "}}]}";
  std::string m = refused("deep.json", deep);
  EXPECT_TRUE(contains(m, "nesting deeper than")) << m;

  m = refused("huge.json", kHead + R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e400, "dur": 1}]})");
  EXPECT_TRUE(contains(m, "number out of range: 1e400")) << m;
  EXPECT_TRUE(contains(m, "event 0")) << m;

  m = refused("types.json", kHead + R"({"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]})");
  EXPECT_TRUE(contains(m, "event 0 (line 1, byte")) << m;
  EXPECT_TRUE(contains(m, "ts: expected a number, found a string")) << m;

  m = refused("grid.json",
              kHead + kKernel + "," +
                  R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"grid": "big"}}]})");
  EXPECT_TRUE(contains(m, "event 1")) << m;
  EXPECT_TRUE(contains(m, "args.grid: expected an array of 3 integers, found a string")) << m;

  m = refused("dims.json",
              kHead + R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"Input Dims": [[1.5]]}}]})");
  EXPECT_TRUE(contains(m, "args.Input Dims")) << m;

  m = refused("negative.json", kHead + R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -5}]})");
  EXPECT_TRUE(contains(m, "negative duration")) << m;
}

TEST_F(ImportBadInput, HundredMegabyteStringIsRefusedWithoutHoldingIt) {
  fs::path p = dir_ / "bigstring.json";
  {
    FILE* f = std::fopen(p.c_str(), "wb");
    std::string head = kHead + R"({"ph": "X", "cat": "kernel", "name": ")";
    std::fwrite(head.data(), 1, head.size(), f);
    std::string chunk(1 << 20, 'A');
    for (int i = 0; i < 100; ++i) std::fwrite(chunk.data(), 1, chunk.size(), f);
    std::string tail = R"(", "ts": 1, "dur": 1}]})";
    std::fwrite(tail.data(), 1, tail.size(), f);
    std::fclose(f);
  }
  std::string m = refused_file(p);
  EXPECT_TRUE(contains(m, "string longer than 16 MiB")) << m;
  EXPECT_TRUE(contains(m, "event 0")) << m;
}

TEST_F(ImportBadInput, NcuCollectorAndDatasetErrorsNameTheFile) {
  std::string m = refused("prof.csv", "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"fast\"\n");
  EXPECT_TRUE(contains(m, "line 2")) << m;
  m = refused("sweep.csv", "# format=perfloom-collector/1\n# gpu_name=NVIDIA Imaginary X9\nop,dtype,latency_us\n");
  EXPECT_TRUE(contains(m, "Imaginary X9")) << m;
  m = refused("gemm_perf.csv", "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n");
  EXPECT_TRUE(contains(m, "no usable rows")) << m;
  m = refused("open.csv",
              "# format=perfloom-collector/1\n# gpu_name=NVIDIA H100 80GB HBM3\nop,dtype,latency_us,kernel_name\n"
              "gemm,bf16,3.5,\"never closed\n");
  EXPECT_TRUE(contains(m, "quoted field")) << m;
}

TEST_F(ImportBadInput, CancelledImportWritesNothing) {
  fs::path p = dir_ / "synthetic.json";
  std::string json = sample_json();
  write_file(p, json + "\n");  // not the fixture's trace inflated, which is a duplicate of it (issue #55)
  std::atomic<bool> cancel{true};
  ImportControl c = control();
  c.cancel = &cancel;
  EXPECT_THROW(store_->import_file(p, c), ImportCancelled);
  EXPECT_TRUE(snapshot(*db_) == before_);
}
