// The public measured-kernel datasets (data/public) and the CSV reader under them: known rows
// with their exact values, the row counts of each file type, the GPU mapping, and how malformed
// input is counted or refused.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/classify/kernel_classifier.h"
#include "model/gpu_database.h"
#include "storage/csv_reader.h"
#include "storage/public_datasets.h"

using namespace perfloom;
using namespace perfloom::storage;
namespace fs = std::filesystem;

namespace {

const GpuDatabase& db() {
  static const GpuDatabase d = GpuDatabase::builtin();
  return d;
}

fs::path data_root() { return fs::path(PERFLOOM_SOURCE_DIR) / "data/public"; }
fs::path aic(const std::string& rel) {
  return data_root() / "aiconfigurator/aic-core/src/aiconfigurator_core/systems/data" / rel;
}
fs::path neusight(const std::string& rel) { return data_root() / "NeuSight/scripts/asplos/data/dataset" / rel; }
fs::path vidur(const std::string& rel) { return data_root() / "vidur/data/profiling/compute" / rel; }

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = fs::temp_directory_path() / ("perfloom-public-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path write(const std::string& rel, const std::string& text) const {
    const fs::path p = path_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const MeasuredKernel* find_note(const std::vector<MeasuredKernel>& ks, const std::string& needle) {
  for (const auto& k : ks)
    if (k.note.find(needle) != std::string::npos) return &k;
  return nullptr;
}

}  // namespace

// --- CsvReader -----------------------------------------------------------------------------------

TEST(PublicCsvReader, QuotedFieldsLineEndsAndLineNumbers) {
  auto r = CsvReader::from_string(
      "a,b,c\r\n"
      "1,\"x, y\",3\n"
      "2,\"he said \"\"hi\"\"\",\"multi\nline\"\n"
      "\n"
      "4,,\n",
      "mem.csv");
  ASSERT_TRUE(r.read_header());
  EXPECT_EQ(r.header(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(r.column("b"), 1u);
  EXPECT_FALSE(r.column("z"));
  try {
    r.require_column("z");
    FAIL() << "a missing column was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mem.csv"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'z'"), std::string::npos);
  }
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"1", "x, y", "3"}));
  EXPECT_EQ(r.line(), 2u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"2", "he said \"hi\"", "multi\nline"}));
  EXPECT_EQ(r.line(), 3u);
  ASSERT_TRUE(r.next(f));  // the blank line 5 is skipped
  EXPECT_EQ(f, (std::vector<std::string>{"4", "", ""}));
  EXPECT_EQ(r.line(), 6u);
  EXPECT_FALSE(r.next(f));
  EXPECT_EQ(r.records(), 3u);
}

TEST(PublicCsvReader, UnclosedQuoteNamesTheLine) {
  auto r = CsvReader::from_string("a,b\n1,2\n3,\"open\n", "bad.csv");
  ASSERT_TRUE(r.read_header());
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  try {
    r.next(f);
    FAIL() << "an unclosed quote was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv: line 3"), std::string::npos) << e.what();
  }
}

TEST(PublicCsvReader, ReadsGzipAndPlainFilesAlike) {
  TempDir dir;
  const std::string text = "x,y\n1,\"a,b\"\n2,c\n";
  const fs::path plain = dir.write("t.csv", text);
  const fs::path gz = dir.path() / "t.csv.gz";
  gzFile out = gzopen(gz.string().c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(out);

  for (const auto& p : {plain, gz}) {
    auto r = CsvReader::open_file(p);
    ASSERT_TRUE(r.read_header());
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> f;
    while (r.next(f)) rows.push_back(f);
    EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"1", "a,b"}, {"2", "c"}})) << p;
  }
}

TEST(PublicCsvReader, StrictNumbers) {
  EXPECT_EQ(parse_double("1.5"), 1.5);
  EXPECT_EQ(parse_double(" 2 "), 2.0);
  EXPECT_EQ(parse_double("1e-3"), 1e-3);
  EXPECT_FALSE(parse_double(""));
  EXPECT_FALSE(parse_double("12abc"));
  EXPECT_FALSE(parse_double("nan"));
  EXPECT_FALSE(parse_double("inf"));
  EXPECT_EQ(parse_int("4096"), 4096);
  EXPECT_EQ(parse_int("4096.0"), 4096);  // pandas' integer columns after a NaN
  EXPECT_FALSE(parse_int("1.5"));
  EXPECT_FALSE(parse_int("12x8"));
  EXPECT_EQ(parse_bool("True"), true);
  EXPECT_EQ(parse_bool("false"), false);
  EXPECT_FALSE(parse_bool("maybe"));
}

// --- aiconfigurator --------------------------------------------------------------------------------

TEST(PublicDatasets, AiconfiguratorGemmKnownRowAndCounts) {
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_gemm(aic("h100_sxm/gemm/sglang/0.5.10/gemm_perf.csv.gz"), db(), &rep);
  ASSERT_FALSE(ks.empty());
  // First row: SGLang,0.5.10,NVIDIA H100 80GB HBM3,gemm,sglang,fp8,224,1536,2048,0.007497777541478475
  const MeasuredKernel& k = ks.front();
  EXPECT_EQ(k.kernel.op, Op::gemm);
  EXPECT_EQ(k.kernel.dtype, Dtype::fp8e4m3);
  EXPECT_EQ(k.kernel.shape.M, 224);
  EXPECT_EQ(k.kernel.shape.N, 1536);
  EXPECT_EQ(k.kernel.shape.K, 2048);
  EXPECT_NEAR(k.latency_us, 7.497777541478475, 1e-9);
  EXPECT_EQ(k.gpu_id, "h100-sxm");
  EXPECT_EQ(k.dataset, "aiconfigurator/h100_sxm/gemm/sglang-0.5.10");
  EXPECT_NE(k.note.find("act_quant=included"), std::string::npos) << k.note;
  EXPECT_NE(k.note.find("kernel_source=sglang"), std::string::npos) << k.note;
  // The framework's fp8 linear: its time includes quantising the activations, which the learned
  // model reads as a feature; its bf16 rows are the GEMM alone.
  EXPECT_TRUE(k.kernel.act_quant);
  for (const auto& m : ks) EXPECT_EQ(m.kernel.act_quant, m.kernel.dtype == Dtype::fp8e4m3);
  KernelDesc alone = k.kernel;
  alone.act_quant = false;
  EXPECT_NE(kernel_key(k.kernel), kernel_key(alone));
  EXPECT_NE(kernel_key(k.kernel, KernelKeyDetail::prediction), kernel_key(alone, KernelKeyDetail::prediction));

  EXPECT_EQ(rep.rows, 101007u);
  EXPECT_EQ(rep.kept, 71483u);
  EXPECT_EQ(rep.skipped, 29524u);  // every fp8_block row
  ASSERT_EQ(rep.skip_counts.size(), 1u);
  EXPECT_NE(rep.skip_counts.begin()->first.find("fp8_block"), std::string::npos);
  std::set<Dtype> dtypes;
  for (const auto& m : ks) dtypes.insert(m.kernel.dtype);
  EXPECT_EQ(dtypes, (std::set<Dtype>{Dtype::bf16, Dtype::fp8e4m3}));
}

TEST(PublicDatasets, AiconfiguratorVllmFp8GemmTableIsSkippedWithItsReason) {
  // vLLM 0.14.0's fp8 rows contradict the fp8 GEMM they name (1.35-2.0x SGLang's fp8 linear on the
  // same H100 shapes, 2.2x vLLM's own bf16): skipped with the reason; the bf16 rows stay.
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_gemm(aic("h100_sxm/gemm/vllm/0.14.0/gemm_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 26040u);
  EXPECT_EQ(rep.kept, 9240u);
  EXPECT_EQ(rep.skipped, 7560u + 9240u);  // every fp8_block row and every fp8 row
  ASSERT_EQ(rep.skip_counts.size(), 2u);
  std::size_t inconsistent = 0;
  for (const auto& [reason, n] : rep.skip_counts)
    if (reason.find("vLLM 0.14.0 fp8 linear is not an fp8 tensor-core GEMM") != std::string::npos) inconsistent = n;
  EXPECT_EQ(inconsistent, 9240u);
  for (const auto& m : ks) EXPECT_EQ(m.kernel.dtype, Dtype::bf16);
  // First row kept: VLLM,0.14.0,NVIDIA H100 80GB HBM3,gemm,vllm_default,bfloat16,8192,65536,10240,12.903173658582899
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks.front().kernel.shape.M, 8192);
  EXPECT_EQ(ks.front().kernel.shape.K, 10240);
  EXPECT_NEAR(ks.front().latency_us, 12903.173658582899, 1e-9);
  EXPECT_FALSE(ks.front().kernel.act_quant);
}

TEST(PublicDatasets, AiconfiguratorGemmNvfp4OnBlackwell) {
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_gemm(aic("b200_sxm/gemm/sglang/0.5.10/gemm_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 130536u);
  EXPECT_EQ(rep.kept, 101010u);
  std::map<Dtype, std::size_t> by;
  for (const auto& m : ks) ++by[m.kernel.dtype];
  EXPECT_GT(by[Dtype::fp4], 0u);
  EXPECT_GT(by[Dtype::fp8e4m3], 0u);
  EXPECT_GT(by[Dtype::bf16], 0u);
  // Second row: SGLang,0.5.10,NVIDIA B200,gemm,sglang,nvfp4,193,1024,6144,0.010051555931568146
  EXPECT_EQ(ks[1].kernel.dtype, Dtype::fp4);
  EXPECT_EQ(ks[1].kernel.shape.M, 193);
  EXPECT_NEAR(ks[1].latency_us, 10.051555931568146, 1e-9);
  EXPECT_EQ(ks[1].gpu_id, "b200");
}

// The SGLang 0.5.10 tables of an Ada part (FlashAttention) and of an RTX Blackwell part (Triton
// attention, nvfp4 GEMMs): every row is kept and reaches its GPU.
TEST(PublicDatasets, AiconfiguratorL40sAndRtxPro6000ServerTables) {
  DatasetLoadReport rep;
  auto l40s = read_aiconfigurator_gemm(aic("l40s/gemm/sglang/0.5.10/gemm_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 71484u);
  EXPECT_EQ(rep.kept, 71484u);
  // First row: SGLang,0.5.10,NVIDIA L40S,gemm,sglang,fp8,3840,5120,1536,0.18570933077070448
  ASSERT_FALSE(l40s.empty());
  EXPECT_EQ(l40s.front().gpu_id, "l40s");
  EXPECT_EQ(l40s.front().kernel.dtype, Dtype::fp8e4m3);
  EXPECT_EQ(l40s.front().kernel.shape.M, 3840);
  EXPECT_EQ(l40s.front().kernel.shape.N, 5120);
  EXPECT_EQ(l40s.front().kernel.shape.K, 1536);
  EXPECT_NEAR(l40s.front().latency_us, 185.70933077070448, 1e-9);
  EXPECT_EQ(l40s.front().dataset, "aiconfigurator/l40s/gemm/sglang-0.5.10");
  std::map<Dtype, std::size_t> by;
  for (const auto& m : l40s) ++by[m.kernel.dtype];
  EXPECT_EQ(by, (std::map<Dtype, std::size_t>{{Dtype::bf16, 35742u}, {Dtype::fp8e4m3, 35742u}}));

  auto gen =
      read_aiconfigurator_attention(aic("l40s/attention/sglang/0.5.10/generation_attention_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 5173u);
  EXPECT_EQ(rep.kept, 5173u);
  // SGLang,0.5.10,NVIDIA L40S,generation_attention,flash_attention,64,1,64,64,128,1,bfloat16,bfloat16,1,0,0.1736736...
  ASSERT_FALSE(gen.empty());
  EXPECT_EQ(gen.front().kernel.op, Op::attn_decode);
  EXPECT_EQ(gen.front().kernel.shape.B, 64);
  EXPECT_EQ(gen.front().kernel.shape.L, 2);
  EXPECT_EQ(gen.front().kernel.shape.Hkv, 64);
  EXPECT_NEAR(gen.front().latency_us, 173.67360591888428, 1e-9);
  EXPECT_NE(gen.front().note.find("kernel_source=flash_attention"), std::string::npos) << gen.front().note;

  auto rtx = read_aiconfigurator_gemm(aic("rtx_pro_6000_server/gemm/sglang/0.5.10/gemm_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 101010u);
  EXPECT_EQ(rep.kept, 101010u);
  by.clear();
  for (const auto& m : rtx) ++by[m.kernel.dtype];
  EXPECT_EQ(by, (std::map<Dtype, std::size_t>{{Dtype::bf16, 35742u}, {Dtype::fp8e4m3, 35742u}, {Dtype::fp4, 29526u}}));
  // First row: SGLang,0.5.10,NVIDIA RTX PRO 6000 Blackwell Server Edition,gemm,sglang,nvfp4,224,1536,2048,0.01241955...
  ASSERT_FALSE(rtx.empty());
  EXPECT_EQ(rtx.front().gpu_id, "rtx-pro-6000-server");
  EXPECT_EQ(rtx.front().kernel.dtype, Dtype::fp4);
  EXPECT_NEAR(rtx.front().latency_us, 12.4195557501581, 1e-9);

  // No window_size column in this table: no row is a sliding-window row.
  auto ctx = read_aiconfigurator_attention(
      aic("rtx_pro_6000_server/attention/sglang/0.5.10/context_attention_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 33522u);
  EXPECT_EQ(rep.kept, 33522u);
  // SGLang,0.5.10,NVIDIA RTX PRO 6000 Blackwell Server
  // Edition,context_attention,triton,8,16384,96,2,128,1,fp8,fp8,0,239.00244140625
  ASSERT_FALSE(ctx.empty());
  const MeasuredKernel& p = ctx.front();
  EXPECT_EQ(p.kernel.op, Op::attn_prefill);
  EXPECT_EQ(p.kernel.dtype, Dtype::fp8e4m3);
  EXPECT_EQ(p.kernel.shape.B, 8);
  EXPECT_EQ(p.kernel.shape.S, 16384);
  EXPECT_EQ(p.kernel.shape.Hq, 96);
  EXPECT_EQ(p.kernel.shape.Hkv, 2);
  EXPECT_NEAR(p.latency_us, 239002.44140625, 1e-6);
  EXPECT_EQ(p.dataset, "aiconfigurator/rtx_pro_6000_server/context_attention/sglang-0.5.10");
  EXPECT_NE(p.note.find("kernel_source=triton"), std::string::npos) << p.note;
  // The row is named after its implementation, which the learned model tells apart.
  EXPECT_EQ(implementation_class(p.kernel.name), kTritonAttentionImplementation) << p.kernel.name;
}

TEST(PublicDatasets, AiconfiguratorAttentionKnownRows) {
  DatasetLoadReport rep;
  auto ctx =
      read_aiconfigurator_attention(aic("h100_sxm/attention/vllm/0.14.0/context_attention_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 10914u);
  EXPECT_EQ(rep.kept, 10914u);
  // VLLM,0.14.0,NVIDIA H100 80GB
  // HBM3,context_attention,vllm_flash_attn,8,16384,64,1,128,1,bfloat16,bfloat16,0,60.649454752604164
  ASSERT_GE(ctx.size(), 2u);
  const MeasuredKernel& p = ctx[0];
  EXPECT_EQ(p.kernel.op, Op::attn_prefill);
  EXPECT_EQ(p.kernel.dtype, Dtype::bf16);
  EXPECT_EQ(p.kernel.shape.B, 8);
  EXPECT_EQ(p.kernel.shape.S, 16384);
  EXPECT_EQ(p.kernel.shape.Hq, 64);
  EXPECT_EQ(p.kernel.shape.Hkv, 1);
  EXPECT_EQ(p.kernel.shape.D, 128);
  EXPECT_TRUE(p.kernel.shape.causal);
  EXPECT_NEAR(p.latency_us, 60649.454752604164, 1e-7);
  EXPECT_EQ(p.gpu_id, "h100-sxm");
  EXPECT_EQ(p.dataset, "aiconfigurator/h100_sxm/context_attention/vllm-0.14.0");
  EXPECT_NE(p.note.find("kv_cache_dtype=bfloat16"), std::string::npos) << p.note;
  // The next row is the same shape with an fp8 KV cache: kept, compute dtype bf16, noted.
  EXPECT_EQ(ctx[1].kernel.dtype, Dtype::bf16);
  EXPECT_NE(ctx[1].note.find("kv_cache_dtype=fp8"), std::string::npos) << ctx[1].note;
  EXPECT_NEAR(ctx[1].latency_us, 54277.069091796875, 1e-7);

  auto gen =
      read_aiconfigurator_attention(aic("h100_sxm/attention/vllm/0.14.0/generation_attention_perf.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 10870u);
  EXPECT_EQ(rep.kept, 10870u);
  // VLLM,0.14.0,NVIDIA H100 80GB
  // HBM3,generation_attention,vllm_flash_attn,32,1,64,1,128,1,bfloat16,bfloat16,1,0.0121759...
  const MeasuredKernel& d = gen[0];
  EXPECT_EQ(d.kernel.op, Op::attn_decode);
  EXPECT_EQ(d.kernel.shape.B, 32);
  EXPECT_EQ(d.kernel.shape.L, 2);  // isl 1 + step 1
  EXPECT_EQ(d.kernel.shape.Hq, 64);
  EXPECT_EQ(d.kernel.shape.Hkv, 1);
  EXPECT_NEAR(d.latency_us, 12.175999581813812, 1e-9);
  EXPECT_EQ(gen[1].kernel.shape.L, 32);  // step 31
  EXPECT_EQ(d.dataset, "aiconfigurator/h100_sxm/generation_attention/vllm-0.14.0");
}

TEST(PublicDatasets, AttentionSlidingWindowAndPrefixRows) {
  TempDir dir;
  const std::string head =
      "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,"
      "beam_width,attn_dtype,kv_cache_dtype,step,window_size,latency\n";
  const fs::path ctx_file = dir.write(
      "context_attention_perf.csv",
      head +
          "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,2,1024,8,8,128,1,fp8,fp8,0,0,0.5\n"
          "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,2,1024,8,8,128,1,bfloat16,bfloat16,0,128,0.5\n"
          "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,2,1024,8,8,128,1,bfloat16,bfloat16,0,4096,0.5\n"
          "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,2,1024,8,8,128,1,bfloat16,bfloat16,64,0,0.5\n"
          "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,2,1024,12,8,128,1,bfloat16,bfloat16,0,0,0.5\n");
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_attention(ctx_file, db(), &rep);
  EXPECT_EQ(rep.rows, 5u);
  ASSERT_EQ(rep.kept, 2u);
  EXPECT_EQ(ks[0].kernel.dtype, Dtype::fp8e4m3);  // fp8 context FMHA
  EXPECT_NE(ks[1].note.find("window=4096"), std::string::npos) << ks[1].note;
  EXPECT_EQ(rep.skip_counts["sliding window shorter than the context"], 1u);
  EXPECT_EQ(rep.skip_counts["context attention with a cached prefix (step > 0)"], 1u);
  EXPECT_EQ(rep.skip_counts["invalid shape"], 1u);  // 12 query heads over 8 KV heads
  // Not under .../data/<system>/attention/<fw>/<ver>/: named from the GPU and the columns.
  EXPECT_EQ(ks[0].dataset, "aiconfigurator/b200/context_attention/sglang-0.5.10");
}

// --- NeuSight --------------------------------------------------------------------------------------

TEST(PublicDatasets, NeuSightKnownRows) {
  DatasetLoadReport rep;
  auto lin = read_neusight(neusight("test/linear.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 5134u);
  EXPECT_EQ(rep.kept, 5134u);
  // linear,1.1143167972564698,Tesla
  // V100-PCIE-32GB,...,volta_sgemm_128x64_tn,16.0,4.0,20,16,1,128,1,1,cu121,,1,1024,2560,2560
  const MeasuredKernel& g = lin.front();
  EXPECT_EQ(g.kernel.op, Op::gemm);
  EXPECT_EQ(g.kernel.dtype, Dtype::fp32);
  EXPECT_EQ(g.kernel.shape.M, 1024);
  EXPECT_EQ(g.kernel.shape.N, 2560);
  EXPECT_EQ(g.kernel.shape.K, 2560);
  EXPECT_NEAR(g.latency_us, 1114.3167972564698, 1e-9);
  EXPECT_EQ(g.gpu_id, "v100-pcie");
  EXPECT_EQ(g.dataset, "neusight/test/linear");
  EXPECT_EQ(g.kernel.name, "volta_sgemm_128x64_tn");
  ASSERT_TRUE(g.kernel.launch);
  EXPECT_EQ(g.kernel.launch->grid, (std::array<int64_t, 3>{20, 16, 1}));
  EXPECT_EQ(g.kernel.launch->block, (std::array<int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(g.note, "bias=1");
  // A leading batch dim is folded into M: train row B=1,M=58,N=13,K=141 is x[58,13]·W[141,13]ᵀ.
  auto lin_train = read_neusight(neusight("train/collect/linear/p2.1.0/NVIDIA A100-PCIE-40GB.csv.gz"), db(), &rep);
  EXPECT_EQ(lin_train.front().kernel.shape.M, 58);
  EXPECT_EQ(lin_train.front().kernel.shape.N, 141);
  EXPECT_EQ(lin_train.front().kernel.shape.K, 13);
  EXPECT_EQ(lin_train.front().gpu_id, "a100-pcie-40gb");
  EXPECT_EQ(lin_train.front().dataset, "neusight/train/linear");

  // bmm,0.0357866...,NVIDIA A100-PCIE-40GB,...,B=6,M=27,N=21,K=390: bmm(6x27x21, 6x21x390).
  auto bmm = read_neusight(neusight("train/collect/bmm/p2.1.0/NVIDIA A100-PCIE-40GB.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 16661u);
  const MeasuredKernel& b = bmm.front();
  EXPECT_EQ(b.kernel.op, Op::bmm);
  EXPECT_EQ(b.kernel.shape.Bt, 6);
  EXPECT_EQ(b.kernel.shape.M, 27);
  EXPECT_EQ(b.kernel.shape.N, 390);
  EXPECT_EQ(b.kernel.shape.K, 21);
  EXPECT_NEAR(b.latency_us, 35.78666721781095, 1e-9);
  EXPECT_EQ(b.dataset, "neusight/train/bmm");
}

TEST(PublicDatasets, NeuSightVectorOps) {
  DatasetLoadReport rep;
  auto elem = read_neusight(neusight("test/elem.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 3219u);
  EXPECT_EQ(rep.kept, 820u);  // add, mul, div
  EXPECT_EQ(rep.skipped, 2399u);
  EXPECT_EQ(rep.skip_counts.size(), 3u);  // pow; tensor-scalar ops; unary activations
  EXPECT_EQ(elem.front().kernel.op, Op::add);
  EXPECT_EQ(elem.front().kernel.shape.T, 32768);
  EXPECT_EQ(elem.front().kernel.shape.H, 1600);
  EXPECT_NEAR(elem.front().latency_us, 767.1167969703674, 1e-9);
  EXPECT_EQ(elem.front().note, "");
  const MeasuredKernel* mul = find_note(elem, "op=mul");
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->kernel.op, Op::add);
  EXPECT_NEAR(mul->latency_us, 771.8400001525879, 1e-9);  // line 267

  auto ln = read_neusight(neusight("train/ln.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 1505u);
  EXPECT_EQ(ln.front().kernel.op, Op::layernorm);
  EXPECT_EQ(ln.front().kernel.shape.T, 4100);
  EXPECT_EQ(ln.front().kernel.shape.H, 556);
  EXPECT_EQ(ln.front().gpu_id, "p100-pcie");
  auto sm = read_neusight(neusight("test/softmax.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.kept, 375u);
  EXPECT_EQ(sm.front().kernel.op, Op::softmax);
  EXPECT_EQ(sm.front().kernel.shape.T, 32768);
  EXPECT_EQ(sm.front().kernel.shape.V, 1600);
  EXPECT_EQ(sm.front().dataset, "neusight/test/softmax");
}

// --- Vidur -----------------------------------------------------------------------------------------

TEST(PublicDatasets, VidurKnownRow) {
  DatasetLoadReport rep;
  auto ks = read_vidur(vidur("a100/meta-llama/Llama-2-7b-hf/mlp.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 1044u);
  EXPECT_EQ(rep.kept, 10440u);
  EXPECT_EQ(rep.skipped, 0u);
  ASSERT_GE(ks.size(), 10u);
  // First row: num_tokens 4096, TP 1, Llama-2-7b; medians in ms.
  std::map<std::string, const MeasuredKernel*> first;
  for (std::size_t i = 0; i < 10; ++i) {
    const auto& n = ks[i].note;
    first[n.substr(n.find("vidur_op=") + 9)] = &ks[i];
  }
  ASSERT_EQ(first.size(), 10u);
  const MeasuredKernel& qkv = *first["attn_pre_proj"];
  EXPECT_EQ(qkv.kernel.op, Op::gemm);
  EXPECT_EQ(qkv.kernel.dtype, Dtype::fp16);
  EXPECT_EQ(qkv.kernel.shape.M, 4096);
  EXPECT_EQ(qkv.kernel.shape.N, 3 * 4096);
  EXPECT_EQ(qkv.kernel.shape.K, 4096);
  EXPECT_NEAR(qkv.latency_us, 1911.0, 1e-9);
  EXPECT_EQ(qkv.gpu_id, "a100-pcie-80gb");
  EXPECT_EQ(qkv.dataset, "vidur/a100/meta-llama/Llama-2-7b-hf/mlp");
  EXPECT_EQ(qkv.note, "tp=1;vidur_op=attn_pre_proj");
  EXPECT_EQ(first["mlp_up_proj"]->kernel.shape.N, 2 * 11008);
  EXPECT_NEAR(first["mlp_up_proj"]->latency_us, 3365.5, 1e-9);
  EXPECT_EQ(first["mlp_down_proj"]->kernel.shape.K, 11008);
  EXPECT_EQ(first["mlp_act"]->kernel.op, Op::silu_mul);
  EXPECT_EQ(first["mlp_act"]->kernel.shape.I, 11008);
  EXPECT_EQ(first["input_layernorm"]->kernel.op, Op::rmsnorm);
  EXPECT_NEAR(first["post_attention_layernorm"]->latency_us, 104.0, 1e-9);
  EXPECT_EQ(first["add"]->kernel.op, Op::add);
  EXPECT_NEAR(first["add"]->latency_us, 55.0, 1e-9);
  EXPECT_EQ(first["emb"]->kernel.op, Op::embedding);
  EXPECT_EQ(first["emb"]->kernel.shape.V, 32768);
  EXPECT_EQ(first["attn_rope"]->kernel.op, Op::rotary);
  // GEMMs are cuBLAS, the serving engines' own (no name, implementation class 0); the other ops
  // are Sarathi-Serve's kernels, named so that the learned model tells them apart (class 3).
  for (const auto& [op, k] : first) {
    if (k->kernel.op == Op::gemm) {
      EXPECT_EQ(k->kernel.name, "") << op;
      EXPECT_EQ(implementation_class(k->kernel.name), 0) << op;
    } else {
      EXPECT_EQ(k->kernel.name, "sarathi::" + op);
      EXPECT_EQ(implementation_class(k->kernel.name), 3) << op;
    }
  }
}

TEST(PublicDatasets, VidurTensorParallelSlicing) {
  auto ks = read_vidur(vidur("h100/meta-llama/Llama-2-70b-hf/mlp.csv.gz"), db(), nullptr);
  // Line 785: num_tokens 4096 at TP 8 (64 query heads, 8 KV heads, head_dim 128, I 28672).
  std::vector<const MeasuredKernel*> row;
  for (const auto& k : ks)
    if (k.note.rfind("tp=8;", 0) == 0 && k.kernel.shape.M == 4096 && k.kernel.op == Op::gemm) row.push_back(&k);
  ASSERT_GE(row.size(), 4u);
  const MeasuredKernel& qkv = *row[0];  // attn_pre_proj comes first in a row
  EXPECT_NE(qkv.note.find("attn_pre_proj"), std::string::npos);
  EXPECT_EQ(qkv.kernel.shape.N, (64 + 2 * 8) * 128 / 8);  // column-parallel
  EXPECT_EQ(qkv.kernel.shape.K, 8192);
  EXPECT_NEAR(qkv.latency_us, 150.5, 1e-9);
  EXPECT_EQ(qkv.gpu_id, "h100-sxm");
  const MeasuredKernel& o = *row[1];
  EXPECT_EQ(o.kernel.shape.N, 8192);  // row-parallel
  EXPECT_EQ(o.kernel.shape.K, 64 * 128 / 8);
  const MeasuredKernel& down = *row[3];
  EXPECT_EQ(down.kernel.shape.K, 28672 / 8);
  EXPECT_NEAR(down.latency_us, 296.0, 1e-9);
  for (const auto& k : ks)
    if (k.note == "tp=8;vidur_op=attn_rope") {
      EXPECT_EQ(k.kernel.shape.Hq, 8);
      EXPECT_EQ(k.kernel.shape.Hkv, 1);
      EXPECT_EQ(k.kernel.shape.D, 128);
      break;
    }
}

TEST(PublicDatasets, VidurPhi2SkipsGeluAndParallelAdd) {
  DatasetLoadReport rep;
  auto ks = read_vidur(vidur("a40/microsoft/phi-2/mlp.csv.gz"), db(), &rep);
  EXPECT_EQ(rep.rows, 261u);
  EXPECT_EQ(rep.kept, 261u * 7);
  EXPECT_EQ(rep.skipped, 261u * 2);
  EXPECT_EQ(ks.front().gpu_id, "a40");
  std::set<Op> ops;
  for (const auto& k : ks) ops.insert(k.kernel.op);
  EXPECT_EQ(ops, (std::set<Op>{Op::embedding, Op::layernorm, Op::gemm, Op::rotary}));
  EXPECT_TRUE(find_note(ks, "bias=1"));  // phi-2 linears have biases
}

// --- the whole folder, the GPU mapping, malformed input -----------------------------------------------

// The whole folder: every file is read and keeps rows, and each source keeps at least what the files
// vendored today give (exact per-file counts are checked above, file by file), so that adding a
// dataset changes no expectation here.
TEST(PublicDatasets, EveryFileOfTheFolderIsReadAndEachSourceKeepsItsRows) {
  std::map<std::string, std::size_t> kept_by_source;
  std::set<std::string> gpus;
  std::size_t kernels = 0;
  std::vector<DatasetLoadReport> reports;
  visit_public_datasets(
      data_root(), db(),
      [&](MeasuredKernel&& k) {
        ++kernels;
        gpus.insert(k.gpu_id);
        const std::string src = k.dataset.substr(0, k.dataset.find('/'));
        const bool attention = k.kernel.op == Op::attn_prefill || k.kernel.op == Op::attn_decode;
        ++kept_by_source[src + (src == "aiconfigurator" ? (attention ? "/attention" : "/gemm") : "")];
      },
      &reports);
  EXPECT_GE(reports.size(), 53u);
  std::size_t kept = 0;
  for (const auto& r : reports) {
    EXPECT_GT(r.kept, 0u) << r.file;
    kept += r.kept;
  }
  EXPECT_EQ(kept, kernels);  // every kept row reaches the sink, once
  EXPECT_GE(kept_by_source["aiconfigurator/gemm"],
            226715u);  // vLLM 0.14.0's fp8 table is left out (inconsistent_gemm_table)
  EXPECT_GE(kept_by_source["aiconfigurator/attention"], 211475u);
  EXPECT_GE(kept_by_source["neusight"], 138211u);
  EXPECT_GE(kept_by_source["vidur"], 198561u);
  for (const char* gpu : {"a100-sxm-80gb", "b200", "h100-sxm", "a100-pcie-40gb", "p100-pcie", "p4", "t4", "v100-pcie",
                          "a100-pcie-80gb", "a40", "l40s", "rtx-pro-6000-server"})
    EXPECT_EQ(gpus.count(gpu), 1u) << gpu;
}

TEST(PublicDatasets, LoadPublicDatasetsSniffsFormats) {
  TempDir dir;
  fs::copy_file(neusight("test/ln.csv.gz"), dir.path() / "renamed.csv.gz");
  dir.write("notes/other.csv", "who,what\nme,this\n");
  dir.write("README.md", "not a csv\n");
  std::vector<DatasetLoadReport> reports;
  auto ks = load_public_datasets(dir.path(), db(), &reports);
  EXPECT_EQ(ks.size(), 375u);
  ASSERT_EQ(reports.size(), 2u);   // the two .csv files; README.md is not looked at
  EXPECT_EQ(reports[0].kept, 0u);  // notes/other.csv: recognised as nothing
  ASSERT_EQ(reports[0].skip_reasons.size(), 1u);
  EXPECT_EQ(reports[1].kept, 375u);
  EXPECT_EQ(ks.front().dataset, "neusight/ln");  // no train/test folder in the path
}

TEST(PublicDatasets, GpuMapping) {
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA H100 80GB HBM3", db()), "h100-sxm");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA A100-SXM4-80GB", db()), "a100-sxm-80gb");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA B200", db()), "b200");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA L40S", db()), "l40s");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA RTX PRO 6000 Blackwell Server Edition", db()), "rtx-pro-6000-server");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA_A100-SXM4-40GB", db()), "a100-sxm-40gb");  // NeuSight file names
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA_H100_80GB_HBM3", db()), "h100-sxm");
  EXPECT_EQ(public_dataset_gpu_id("Tesla V100-PCIE-32GB", db()), "v100-pcie");
  EXPECT_EQ(public_dataset_gpu_id("Tesla T4", db()), "t4");
  EXPECT_EQ(public_dataset_gpu_id("Tesla P4", db()), "p4");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA A100-PCIE-40GB", db()), "a100-pcie-40gb");
  EXPECT_EQ(public_dataset_gpu_id("h100", db()), "h100-sxm");
  EXPECT_EQ(public_dataset_gpu_id("a40", db()), "a40");
  EXPECT_EQ(public_dataset_gpu_id("NVIDIA Imaginary 9000", db()), "");
  // Vidur's "a100" folder is the 80 GB PCIe card (see vidur_gpu_id), not the "A100" alias.
  auto ks = read_vidur(vidur("a100/microsoft/phi-2/mlp.csv.gz"), db(), nullptr);
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks.front().gpu_id, "a100-pcie-80gb");
}

TEST(PublicDatasets, MalformedRowsAreSkippedAndCounted) {
  TempDir dir;
  const std::string h100 = "VLLM,0.14.0,NVIDIA H100 80GB HBM3,gemm,vllm_default,";
  const fs::path file =
      dir.write("gemm_perf.csv",
                "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n" + h100 +
                    "bfloat16,128,256,512,0.01\n" +          // 2 kept
                    h100 + "bfloat16,12x8,256,512,0.01\n" +  // 3 bad integer
                    h100 + "bfloat16,128,256,512\n" +        // 4 short row
                    h100 + "bfloat16,128,256,512,abc\n" +    // 5 bad number
                    "VLLM,0.14.0,\"NVIDIA H100 80GB HBM3\",gemm,\"vllm, default\",bfloat16,64,64,64,0.002\n"  // 6 kept
                    "VLLM,0.14.0,NVIDIA Imaginary 9000,gemm,vllm_default,bfloat16,128,256,512,0.01\n" +       // 7 GPU
                    h100 +
                    "int4_wo,128,256,512,0.01\n" +        // 8 weight-only
                    h100 + "bfloat16,0,256,512,0.01\n" +  // 9 invalid shape
                    h100 + "bfloat16,128,256,512,-1\n");  // 10 latency
  DatasetLoadReport rep;
  auto ks = read_aiconfigurator_gemm(file, db(), &rep);
  EXPECT_EQ(rep.file, file.string());
  EXPECT_EQ(rep.rows, 9u);
  EXPECT_EQ(rep.kept, 2u);
  EXPECT_EQ(rep.skipped, 7u);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_NEAR(ks[0].latency_us, 10.0, 1e-12);
  EXPECT_EQ(ks[1].kernel.shape.M, 64);
  EXPECT_NE(ks[1].note.find("kernel_source=vllm, default"), std::string::npos) << ks[1].note;
  EXPECT_EQ(ks[0].dataset, "aiconfigurator/h100-sxm/gemm/vllm-0.14.0");

  ASSERT_EQ(rep.skip_reasons.size(), 5u);  // the first five distinct reasons
  EXPECT_EQ(rep.skip_reasons[0], "line 3: bad integer in 'm' ('12x8')");
  EXPECT_EQ(rep.skip_reasons[1], "line 4: missing column 'latency'");
  EXPECT_EQ(rep.skip_reasons[2], "line 5: bad number in 'latency' ('abc')");
  EXPECT_EQ(rep.skip_reasons[3], "line 7: GPU not in the GPU database (NVIDIA Imaginary 9000)");
  EXPECT_NE(rep.skip_reasons[4].find("line 8: weight-only"), std::string::npos) << rep.skip_reasons[4];
  EXPECT_EQ(rep.skip_counts["invalid shape"], 1u);
  EXPECT_EQ(rep.skip_counts["latency not positive"], 1u);
  std::size_t counted = 0;
  for (const auto& [why, n] : rep.skip_counts) counted += n;
  EXPECT_EQ(counted, rep.skipped);
}

// A NeuSight linear row folds its batch into M (B x M): a product past 64 bits (the fuzzer's find:
// signed overflow) is a malformed row, skipped with its reason; the file's other rows are kept.
TEST(PublicDatasets, NeuSightLinearWhoseBatchTimesRowsOverflowsIsSkipped) {
  TempDir dir;
  const std::string head =
      "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,"
      "Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,Kernels,B,M,N,K\n";
  const std::string row =
      "linear,1.1143167972564698,Tesla V100-PCIE-32GB,p2.1.0,8902,volta_sgemm_128x64_tn,16.0,4.0,"
      "20,16,1,128,1,1,cu121,,";
  const fs::path file =
      dir.write("linear.csv", head + row + "1,1024,2560,2560\n" + row + "2849875556098091,65536,2560,2560\n");
  DatasetLoadReport rep;
  auto ks = read_neusight(file, db(), &rep);
  EXPECT_EQ(rep.rows, 2u);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks.front().kernel.shape.M, 1024);
  ASSERT_EQ(rep.skip_reasons.size(), 1u);
  EXPECT_EQ(rep.skip_reasons[0], "line 3: shape out of range (B x M = 2849875556098091 x 65536)");
}

// A Vidur row whose derived widths, (n_head + 2 n_kv_head) x head dim or the gated 2 x mlp width,
// do not fit in 64 bits is skipped with its reason; the file's other rows are kept.
TEST(PublicDatasets, VidurRowWhoseDerivedWidthsOverflowIsSkipped) {
  std::string head, stats;
  for (const char* op : {"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
                         "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"})
    for (const char* st : {"min", "max", "mean", "median", "std"}) {
      head += std::string("time_stats.") + op + "." + st + ",";
      stats += "0.5,";
    }
  head += "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n";
  TempDir dir;
  const fs::path file =
      dir.write("compute/h100/org/model/mlp.csv",
                head + stats + "32,32,4096,11008,32768,True,4096,1\n" +                // line 2: kept
                    stats + "32,4611686018427387904,4096,11008,32768,True,4096,1\n" +  // 2 x n_kv_head
                    stats + "32,32,4096,4611686018427387904,32768,True,4096,1\n");     // 2 x mlp width
  DatasetLoadReport rep;
  auto ks = read_vidur(file, db(), &rep);
  EXPECT_EQ(rep.rows, 3u);
  EXPECT_EQ(rep.skip_counts["shape out of range"], 2u);
  // What is kept is the first row's kernels, as from a file with that row alone.
  const fs::path one = dir.write("compute/h100/org/one/mlp.csv", head + stats + "32,32,4096,11008,32768,True,4096,1\n");
  const auto alone = read_vidur(one, db(), nullptr);
  ASSERT_FALSE(alone.empty());
  EXPECT_EQ(ks.size(), alone.size());
}

TEST(PublicDatasets, MissingOrForeignFilesThrowNamingTheFile) {
  const fs::path missing = fs::path(PERFLOOM_SOURCE_DIR) / "data/public/no/such/file.csv.gz";
  auto expect_names = [](auto&& fn, const std::string& needle) {
    try {
      fn();
      FAIL() << "no error for " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_names([&] { read_aiconfigurator_gemm(missing, db(), nullptr); }, missing.string());
  expect_names([&] { read_aiconfigurator_attention(missing, db(), nullptr); }, missing.string());
  expect_names([&] { read_neusight(missing, db(), nullptr); }, missing.string());
  expect_names([&] { read_vidur(vidur("h100/nobody/none/mlp.csv.gz"), db(), nullptr); }, "mlp.csv.gz");
  expect_names([&] { load_public_datasets(missing.parent_path(), db(), nullptr); }, missing.parent_path().string());

  TempDir dir;
  const fs::path no_latency = dir.write("gemm_perf.csv", "device,gemm_dtype,m,n,k\nx,bfloat16,1,2,3\n");
  expect_names([&] { read_aiconfigurator_gemm(no_latency, db(), nullptr); },
               no_latency.string() + ": no column 'latency'");
  const fs::path empty = dir.write("empty.csv", "");
  expect_names([&] { read_neusight(empty, db(), nullptr); }, empty.string());
  const fs::path not_vidur = dir.write("compute/a100/org/model/mlp.csv", "a,b\n1,2\n");
  expect_names([&] { read_vidur(not_vidur, db(), nullptr); }, not_vidur.string());
  const fs::path no_layout = dir.write("mlp.csv", "a,b\n1,2\n");
  expect_names([&] { read_vidur(no_layout, db(), nullptr); }, no_layout.string());
}
