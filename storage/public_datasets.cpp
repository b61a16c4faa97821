#include "storage/public_datasets.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "model/classify/kernel_classifier.h"
#include "storage/csv_reader.h"
#include "storage/folder_files.h"

namespace perfloom::storage {

namespace {

constexpr double kUsPerMs = 1000.0;
constexpr std::size_t kMaxSkipReasons = 5;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Per-file bookkeeping: row counts, skips with their reasons, and the GPU-name cache.
class FileContext {
 public:
  FileContext(const std::filesystem::path& file, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
              DatasetLoadReport* report)
      : gpus_(gpus), sink_(sink), report_(report ? report : &own_) {
    *report_ = DatasetLoadReport{};
    report_->file = file.string();
  }

  void row() { ++report_->rows; }
  // `reason` is the category counted and listed; `detail` (a value, a column) only goes in the list.
  void skip(std::size_t line, const std::string& reason, const std::string& detail = {}) {
    ++report_->skipped;
    if (++report_->skip_counts[reason] == 1 && report_->skip_reasons.size() < kMaxSkipReasons)
      report_->skip_reasons.push_back("line " + std::to_string(line) + ": " + reason +
                                      (detail.empty() ? "" : " (" + detail + ")"));
  }
  void keep(MeasuredKernel&& k) {
    ++report_->kept;
    sink_(std::move(k));
  }
  // The perfloom id for a GPU name, cached per file; empty when unknown.
  const std::string& gpu_id(const std::string& name) {
    auto it = gpu_cache_.find(name);
    if (it == gpu_cache_.end()) it = gpu_cache_.emplace(name, public_dataset_gpu_id(name, gpus_)).first;
    return it->second;
  }

 private:
  const GpuDatabase& gpus_;
  const MeasuredKernelSink& sink_;
  DatasetLoadReport own_;
  DatasetLoadReport* report_;
  std::unordered_map<std::string, std::string> gpu_cache_;
};

// A row's fields by column index, with the parse failures turned into skip reasons.
struct Row {
  const std::vector<std::string>& f;
  std::string error;  // first problem met, "" when none

  const std::string* text(std::size_t col, std::string_view name) {
    if (col >= f.size()) {
      if (error.empty()) error = "missing column '" + std::string(name) + "'";
      return nullptr;
    }
    return &f[col];
  }
  std::optional<double> number(std::size_t col, std::string_view name) {
    const std::string* t = text(col, name);
    if (!t) return std::nullopt;
    auto v = parse_double(*t);
    if (!v && error.empty()) error = "bad number in '" + std::string(name) + "': '" + *t + "'";
    return v;
  }
  std::optional<long long> integer(std::size_t col, std::string_view name) {
    const std::string* t = text(col, name);
    if (!t) return std::nullopt;
    auto v = parse_int(*t);
    if (!v && error.empty()) error = "bad integer in '" + std::string(name) + "': '" + *t + "'";
    return v;
  }
};

// Splits "bad number in 'latency': 'abc'" into the counted reason and the detail.
void skip_malformed(FileContext& ctx, std::size_t line, const std::string& error) {
  const auto colon = error.find(": ");
  if (colon == std::string::npos)
    ctx.skip(line, error);
  else
    ctx.skip(line, error.substr(0, colon), error.substr(colon + 2));
}

CsvReader open_with_header(const std::filesystem::path& file) {
  CsvReader r = CsvReader::open_file(file);
  if (!r.read_header()) throw std::runtime_error(file.string() + ": empty file, no header");
  return r;
}

// Checks the latency and the shape; on success hands the kernel to the sink.
void emit(FileContext& ctx, std::size_t line, MeasuredKernel&& k) {
  if (!(k.latency_us > 0) || !std::isfinite(k.latency_us)) {
    ctx.skip(line, "latency not positive", std::to_string(k.latency_us));
    return;
  }
  if (k.latency_us > kMaxKernelLatencyUs) {
    ctx.skip(line, "latency over 1e12 us", std::to_string(k.latency_us));
    return;
  }
  if (auto why = validate_shape(k.kernel.op, k.kernel.shape)) {
    ctx.skip(line, "invalid shape", *why);
    return;
  }
  ctx.keep(std::move(k));
}

std::string join_note(std::initializer_list<std::pair<std::string_view, std::string>> kv) {
  std::string out;
  for (const auto& [k, v] : kv) {
    if (v.empty()) continue;
    if (!out.empty()) out += ';';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// aiconfigurator (ai-dynamo/aiconfigurator, collector/<framework>/collect_gemm.py, collect_attn.py)
//
// Layout: .../systems/data/<system>/<gemm|attention>/<framework>/<version>/<table>.csv.gz, one row
// per measured op; `latency` is in milliseconds (CUDA-event or CUDA-graph timing of the op, divided
// by the repeat count) and is converted to microseconds. It is the framework op, not one kernel:
// a quantized GEMM includes quantizing its activation, an attention call includes writing the new
// K/V into the paged cache.
// ---------------------------------------------------------------------------------------------

// "aiconfigurator/<system>/<table>/<framework>-<version>"; from the path when it has the layout
// above, else from the framework/version columns and the GPU id.
struct AicDatasetName {
  std::optional<std::string> system;  // from the path
  std::string table;
  std::string build(const std::string& gpu_id, const std::string& framework, const std::string& version) const {
    std::string fw = lower(framework);
    std::string tag = fw.empty() ? version : (version.empty() ? fw : fw + "-" + version);
    return "aiconfigurator/" + (system ? *system : gpu_id) + "/" + table + (tag.empty() ? "" : "/" + tag);
  }
};

AicDatasetName aic_dataset_name(const std::filesystem::path& file, std::string table) {
  AicDatasetName n;
  n.table = std::move(table);
  const auto version_dir = file.parent_path();
  const auto framework_dir = version_dir.parent_path();
  const auto kind_dir = framework_dir.parent_path();
  const auto system_dir = kind_dir.parent_path();
  const std::string kind = kind_dir.filename().string();
  if ((kind == "gemm" || kind == "attention") && system_dir.parent_path().filename() == "data")
    n.system = system_dir.filename().string();
  return n;
}

// Caches the dataset string: it changes only when framework, version or GPU change.
class DatasetCache {
 public:
  explicit DatasetCache(AicDatasetName name) : name_(std::move(name)) {}
  const std::string& get(const std::string& gpu, const std::string& fw, const std::string& ver) {
    if (!valid_ || gpu != gpu_ || fw != fw_ || ver != ver_) {
      gpu_ = gpu, fw_ = fw, ver_ = ver, valid_ = true;
      value_ = name_.build(gpu, fw, ver);
    }
    return value_;
  }

 private:
  AicDatasetName name_;
  bool valid_ = false;
  std::string gpu_, fw_, ver_, value_;
};

struct GemmDtype {
  std::optional<Dtype> dtype;
  std::string note;  // what the latency includes beyond the GEMM
  std::string skip;  // why the row is skipped, when dtype is empty
};

// The contract's gemm is a plain GEMM of one dtype. Quantized paths that fuse scaling into a
// plain tensor-core GEMM are kept (their activation-quantisation kernel is inside the measured
// latency, said in the note); block-scaled and weight-only paths are skipped.
GemmDtype map_gemm_dtype(const std::string& text) {
  const std::string t = lower(text);
  if (t == "bfloat16" || t == "bf16") return {Dtype::bf16, "", ""};
  if (t == "float16" || t == "fp16" || t == "half") return {Dtype::fp16, "", ""};
  if (t == "fp8" || t == "fp8_e4m3" || t == "float8_e4m3fn") return {Dtype::fp8e4m3, "act_quant=included", ""};
  if (t == "nvfp4") return {Dtype::fp4, "act_quant=included;block_scale=16", ""};
  if (t == "fp8_block")
    return {std::nullopt, "", "gemm_dtype fp8_block: 128x128 block-scaled fp8 (DeepGEMM) is not a plain GEMM"};
  if (t.size() > 3 && t.compare(t.size() - 3, 3, "_wo") == 0)
    return {std::nullopt, "", "weight-only quantized GEMM: no perfloom dtype"};
  if (t.find("int4") != std::string::npos || t.find("w4a") != std::string::npos || t.find("awq") != std::string::npos ||
      t.find("gptq") != std::string::npos)
    return {std::nullopt, "", "weight-only quantized GEMM: no perfloom dtype"};
  return {std::nullopt, "", "gemm_dtype not mapped to a perfloom dtype"};
}

// Public GEMM tables whose rows contradict the op they name, found by setting them against the other
// tables of the same GPU; their rows are skipped with the reason, never trained or scored on (each
// entry's `reason` says what contradicts).
struct InconsistentGemmTable {
  std::string_view framework, version, gemm_dtype;  // as the table writes them (framework: any case)
  std::string_view reason;
};
constexpr InconsistentGemmTable kInconsistentGemmTables[] = {
    {"vllm", "0.14.0", "fp8",
     "vLLM 0.14.0 fp8 linear is not an fp8 tensor-core GEMM: at the same H100 shapes it takes 1.35-2.0x "
     "SGLang's fp8 linear (median per size) and 2.2x its own bf16 GEMM, where the two tables' bf16 GEMMs "
     "agree (vLLM's 0.95-0.97x SGLang's below 1 ms)"},
};

// The reason a table's rows of this gemm_dtype are skipped, or empty.
std::string_view inconsistent_gemm_table(const std::string& framework, const std::string& version,
                                         const std::string& gemm_dtype) {
  const std::string fw = lower(framework), dt = lower(gemm_dtype);
  for (const auto& t : kInconsistentGemmTables)
    if (fw == t.framework && version == t.version && dt == t.gemm_dtype) return t.reason;
  return {};
}

std::optional<Dtype> map_attn_dtype(const std::string& text) {
  const std::string t = lower(text);
  if (t == "bfloat16" || t == "bf16") return Dtype::bf16;
  if (t == "float16" || t == "fp16") return Dtype::fp16;
  if (t == "fp8" || t == "fp8_e4m3") return Dtype::fp8e4m3;
  return std::nullopt;
}

// Optional columns read as text; "" when the file has no such column.
struct OptionalText {
  std::optional<std::size_t> col;
  const std::string& get(const std::vector<std::string>& f) const {
    static const std::string empty;
    return col && *col < f.size() ? f[*col] : empty;
  }
};

// A row's kernel_source names the implementation the engine ran: SGLang's triton backend and
// TensorRT-LLM's FMHA (SGLang's trtllm_mha, on sm100) are implementations of their own
// (implementation_class); FlashAttention (flash_attention, vllm_flash_attn) is what an unnamed
// attention kernel stands for.
std::string attention_kernel_of_source(const std::string& source) {
  const std::string s = lower(source);
  if (s == "triton") return std::string(kTritonAttentionKernelName);
  if (s.starts_with("trtllm")) return std::string(kTrtllmAttentionKernelName);
  return {};
}

}  // namespace

std::string public_dataset_gpu_id(std::string_view name, const GpuDatabase& gpus) {
  if (const GpuSpec* g = gpus.find(name)) return g->id;
  // NeuSight names its device_configs files after the driver's name with '_' for ' '.
  std::string spaced(name);
  std::replace(spaced.begin(), spaced.end(), '_', ' ');
  if (const GpuSpec* g = gpus.find(spaced)) return g->id;
  return {};
}

// ---------------------------------------------------------------------------------------------
// aiconfigurator GEMM: columns framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency.
// The collectors build x[m,k] and a weight [n,k] and time x·Wᵀ (vLLM RowParallelLinear, SGLang
// F.linear / fp8_scaled_mm / DeepGEMM / flashinfer mm_fp4): exactly the contract's gemm M=m, N=n, K=k.
// ---------------------------------------------------------------------------------------------
void visit_aiconfigurator_gemm(const std::filesystem::path& csv, const GpuDatabase& gpus,
                               const MeasuredKernelSink& sink, DatasetLoadReport* report) {
  FileContext ctx(csv, gpus, sink, report);
  CsvReader r = open_with_header(csv);
  const std::size_t c_device = r.require_column("device"), c_dtype = r.require_column("gemm_dtype"),
                    c_m = r.require_column("m"), c_n = r.require_column("n"), c_k = r.require_column("k"),
                    c_lat = r.require_column("latency");
  const OptionalText fw{r.column("framework")}, ver{r.column("version")}, src{r.column("kernel_source")};
  DatasetCache dataset(aic_dataset_name(csv, "gemm"));

  std::vector<std::string> f;
  while (r.next(f)) {
    ctx.row();
    Row row{f, {}};
    const std::string* device = row.text(c_device, "device");
    const std::string* dtype_text = row.text(c_dtype, "gemm_dtype");
    auto m = row.integer(c_m, "m"), n = row.integer(c_n, "n"), k = row.integer(c_k, "k");
    auto lat = row.number(c_lat, "latency");
    if (!row.error.empty()) {
      skip_malformed(ctx, r.line(), row.error);
      continue;
    }
    const std::string& gpu = ctx.gpu_id(*device);
    if (gpu.empty()) {
      ctx.skip(r.line(), "GPU not in the GPU database", *device);
      continue;
    }
    GemmDtype dt = map_gemm_dtype(*dtype_text);
    if (!dt.dtype) {
      ctx.skip(r.line(), dt.skip, *dtype_text);
      continue;
    }
    if (const auto why = inconsistent_gemm_table(fw.get(f), ver.get(f), *dtype_text); !why.empty()) {
      ctx.skip(r.line(), std::string(why), *dtype_text);
      continue;
    }
    MeasuredKernel mk;
    mk.kernel.op = Op::gemm;
    mk.kernel.dtype = *dt.dtype;
    mk.kernel.act_quant = dt.note.find("act_quant=included") != std::string::npos;
    mk.kernel.shape.M = *m;
    mk.kernel.shape.N = *n;
    mk.kernel.shape.K = *k;
    mk.gpu_id = gpu;
    mk.latency_us = *lat * kUsPerMs;
    mk.dataset = dataset.get(gpu, fw.get(f), ver.get(f));
    mk.note = join_note({{"kernel_source", src.get(f)}});
    if (!dt.note.empty()) mk.note = mk.note.empty() ? dt.note : dt.note + ";" + mk.note;
    emit(ctx, r.line(), std::move(mk));
  }
}

// ---------------------------------------------------------------------------------------------
// aiconfigurator attention: columns framework,version,device,op_name,kernel_source,batch_size,isl,
// num_heads,num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step[,window_size],latency.
//
// context_attention (collector: seq_len = query_len = isl, no cached prefix, causal): attn_prefill
//   with B=batch_size, S=isl, Hq=num_heads, Hkv=num_key_value_heads, D=head_dim.
// generation_attention (collector: isl=1, step = tokens already in the KV cache): attn_decode with
//   L = isl + step, the keys the new token attends to including itself. This is aiconfigurator's
//   own lookup key (its loaders index generation tables by s = isl + step) and what the SGLang
//   collector builds (seq_len = step + 1). The vLLM collector at its current HEAD builds
//   seq_len = step instead, so vLLM rows may carry one key more than measured; it matters only
//   for the smallest steps (1, 3), where decode attention is launch-bound anyway.
// KernelDesc.dtype is attn_dtype (the compute dtype); kv_cache_dtype goes to the note (rows with
// an fp8 KV cache are kept: the bytes read per key halve). For vLLM FLASH_ATTN rows with an fp8 KV
// cache the collector also casts the query to fp8. The kernel is named after its kernel_source
// (attention_kernel_of_source) where that is not FlashAttention.
// Skipped: a context row with a cached prefix (step > 0), beam_width != 1, and a sliding window
// smaller than the context (the contract's shapes have no window); a window at least as long as
// the context changes nothing and is kept.
// ---------------------------------------------------------------------------------------------
void visit_aiconfigurator_attention(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                    const MeasuredKernelSink& sink, DatasetLoadReport* report) {
  FileContext ctx(csv, gpus, sink, report);
  CsvReader r = open_with_header(csv);
  const std::size_t c_device = r.require_column("device"), c_b = r.require_column("batch_size"),
                    c_isl = r.require_column("isl"), c_hq = r.require_column("num_heads"),
                    c_hkv = r.require_column("num_key_value_heads"), c_d = r.require_column("head_dim"),
                    c_dtype = r.require_column("attn_dtype"), c_kv = r.require_column("kv_cache_dtype"),
                    c_step = r.require_column("step"), c_lat = r.require_column("latency");
  const OptionalText fw{r.column("framework")}, ver{r.column("version")}, src{r.column("kernel_source")},
      op_name{r.column("op_name")};
  const auto c_window = r.column("window_size"), c_beam = r.column("beam_width");

  // The table decides the phase; op_name in the row, when present, must agree with it.
  const std::string fname = csv.filename().string();
  std::optional<bool> file_is_context;
  if (fname.rfind("context_attention", 0) == 0) file_is_context = true;
  if (fname.rfind("generation_attention", 0) == 0) file_is_context = false;
  DatasetCache ctx_dataset(aic_dataset_name(csv, "context_attention"));
  DatasetCache gen_dataset(aic_dataset_name(csv, "generation_attention"));

  std::vector<std::string> f;
  while (r.next(f)) {
    ctx.row();
    Row row{f, {}};
    const std::string* device = row.text(c_device, "device");
    auto b = row.integer(c_b, "batch_size"), isl = row.integer(c_isl, "isl"), hq = row.integer(c_hq, "num_heads"),
         hkv = row.integer(c_hkv, "num_key_value_heads"), d = row.integer(c_d, "head_dim"),
         step = row.integer(c_step, "step");
    const std::string* dtype_text = row.text(c_dtype, "attn_dtype");
    const std::string* kv_text = row.text(c_kv, "kv_cache_dtype");
    auto lat = row.number(c_lat, "latency");
    std::optional<long long> window = 0, beam = 1;
    if (c_window) window = row.integer(*c_window, "window_size");
    if (c_beam) beam = row.integer(*c_beam, "beam_width");
    if (!row.error.empty()) {
      skip_malformed(ctx, r.line(), row.error);
      continue;
    }
    const std::string& op_text = op_name.get(f);
    std::optional<bool> is_context = file_is_context;
    if (op_text == "context_attention")
      is_context = true;
    else if (op_text == "generation_attention")
      is_context = false;
    if (!is_context) {
      ctx.skip(r.line(), "op_name is neither context_attention nor generation_attention", op_text);
      continue;
    }
    const std::string& gpu = ctx.gpu_id(*device);
    if (gpu.empty()) {
      ctx.skip(r.line(), "GPU not in the GPU database", *device);
      continue;
    }
    auto dtype = map_attn_dtype(*dtype_text);
    if (!dtype) {
      ctx.skip(r.line(), "attn_dtype not mapped to a perfloom dtype", *dtype_text);
      continue;
    }
    if (*beam != 1) {
      ctx.skip(r.line(), "beam search (beam_width != 1)", std::to_string(*beam));
      continue;
    }
    MeasuredKernel mk;
    Shape& s = mk.kernel.shape;
    s.B = *b;
    s.Hq = *hq;
    s.Hkv = *hkv;
    s.D = *d;
    long long context = 0;
    if (*is_context) {
      if (*step != 0) {
        ctx.skip(r.line(), "context attention with a cached prefix (step > 0)", std::to_string(*step));
        continue;
      }
      mk.kernel.op = Op::attn_prefill;
      s.S = *isl;
      s.causal = true;
      context = *isl;
    } else {
      mk.kernel.op = Op::attn_decode;
      s.L = *isl + *step;
      context = s.L;
    }
    if (*window > 0 && *window < context) {
      ctx.skip(r.line(), "sliding window shorter than the context", std::to_string(*window));
      continue;
    }
    mk.kernel.dtype = *dtype;
    mk.kernel.name = attention_kernel_of_source(src.get(f));
    mk.gpu_id = gpu;
    mk.latency_us = *lat * kUsPerMs;
    mk.dataset = (*is_context ? ctx_dataset : gen_dataset).get(gpu, fw.get(f), ver.get(f));
    mk.note = join_note({{"kv_cache_dtype", lower(*kv_text)},
                         {"window", *window > 0 ? std::to_string(*window) : std::string()},
                         {"kernel_source", src.get(f)}});
    emit(ctx, r.line(), std::move(mk));
  }
}

// ---------------------------------------------------------------------------------------------
// NeuSight (sitar-lab/NeuSight, neusight/Dataset/collect.py): FP32 PyTorch ops on one GPU each,
// timed with CUDA events around the op (mean of the 5 fastest of 25 runs), `Latency` in ms.
// Columns OPName,Latency,Device,...,Kernel Name,Grid x..z,Block x..z,... then B,M,N,K (bmm,
// linear) or B,H (vector ops). The collector's shapes:
//   bmm     torch.bmm(randn(B,M,N), randn(B,N,K)) -> output (B,M,K): reduction over N, so
//           perfloom bmm Bt=B, M=M, N=K, K=N.
//   linear  nn.Linear(N, K, bias=True) on randn(B,M,N): gemm M=B*M (all leading dims), N=K, K=N,
//           note bias=1.
//   ln      nn.LayerNorm(H) on (B,H): layernorm T=B, H=H.
//   softmax nn.Softmax() on (B,H), implicit dim 1: softmax T=B, V=H.
//   add     torch.add of two (B,H) tensors: add T=B, H=H. mul and div are the same binary
//           elementwise kernel template with the same traffic (two reads, one write) and are kept
//           as add with note op=mul / op=div.
//   Skipped (no perfloom op): pow (log/exp on the SFU), the tensor-scalar ops addu/mulu/divu/powu
//   (one read, one write), and the unary activations relu/gelu/tanh (perfloom's gelu_mul and
//   silu_mul are gated).
// matmul TF32 is off in PyTorch >= 1.12 (the kernel names are *sgemm*), so the dtype is fp32.
// The profiled kernel's name and grid/block go to KernelDesc.name and .launch.
// ---------------------------------------------------------------------------------------------
void visit_neusight(const std::filesystem::path& csv, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                    DatasetLoadReport* report) {
  FileContext ctx(csv, gpus, sink, report);
  CsvReader r = open_with_header(csv);
  const std::size_t c_op = r.require_column("OPName"), c_lat = r.require_column("Latency"),
                    c_device = r.require_column("Device");
  const auto c_b = r.column("B"), c_m = r.column("M"), c_n = r.column("N"), c_k = r.column("K"), c_h = r.column("H");
  const OptionalText kname{r.column("Kernel Name")};
  const std::array<std::optional<std::size_t>, 6> c_launch = {r.column("Grid x"),  r.column("Grid y"),
                                                              r.column("Grid z"),  r.column("Block x"),
                                                              r.column("Block y"), r.column("Block z")};

  std::string split;
  for (const auto& part : csv) {
    if (part == "train")
      split = "train";
    else if (part == "test")
      split = "test";
  }
  auto dataset_for = [&](std::string_view table) {
    return "neusight/" + (split.empty() ? std::string() : split + "/") + std::string(table);
  };
  const std::array<std::string, 5> datasets = {dataset_for("bmm"), dataset_for("linear"), dataset_for("elem"),
                                               dataset_for("ln"), dataset_for("softmax")};

  std::vector<std::string> f;
  while (r.next(f)) {
    ctx.row();
    Row row{f, {}};
    const std::string* op = row.text(c_op, "OPName");
    const std::string* device = row.text(c_device, "Device");
    auto lat = row.number(c_lat, "Latency");
    if (!row.error.empty()) {
      skip_malformed(ctx, r.line(), row.error);
      continue;
    }
    const bool is_mm = *op == "bmm" || *op == "linear";
    std::optional<long long> b, m, n, k, h;
    auto need = [&](const std::optional<std::size_t>& col, std::string_view name) -> std::optional<long long> {
      if (!col) {
        if (row.error.empty()) row.error = "missing column '" + std::string(name) + "'";
        return std::nullopt;
      }
      return row.integer(*col, name);
    };
    b = need(c_b, "B");
    if (is_mm) {
      m = need(c_m, "M"), n = need(c_n, "N"), k = need(c_k, "K");
    } else {
      h = need(c_h, "H");
    }
    if (!row.error.empty()) {
      skip_malformed(ctx, r.line(), row.error);
      continue;
    }

    MeasuredKernel mk;
    Shape& s = mk.kernel.shape;
    std::size_t table = 2;
    if (*op == "bmm") {
      mk.kernel.op = Op::bmm;
      s.Bt = *b, s.M = *m, s.N = *k, s.K = *n;
      table = 0;
    } else if (*op == "linear") {
      mk.kernel.op = Op::gemm;
      long long rows = 0;  // the batch's tokens: B x M
      if (__builtin_mul_overflow(*b, *m, &rows)) {
        skip_malformed(ctx, r.line(), "shape out of range: B x M = " + std::to_string(*b) + " x " + std::to_string(*m));
        continue;
      }
      s.M = rows, s.N = *k, s.K = *n;
      mk.note = "bias=1";
      table = 1;
    } else if (*op == "ln") {
      mk.kernel.op = Op::layernorm;
      s.T = *b, s.H = *h;
      table = 3;
    } else if (*op == "softmax") {
      mk.kernel.op = Op::softmax;
      s.T = *b, s.V = *h;
      table = 4;
    } else if (*op == "add" || *op == "mul" || *op == "div") {
      mk.kernel.op = Op::add;
      s.T = *b, s.H = *h;
      if (*op != "add") mk.note = "op=" + *op;
    } else if (*op == "pow") {
      ctx.skip(r.line(), "binary pow (log/exp on the SFU): no perfloom op", *op);
      continue;
    } else if (*op == "addu" || *op == "mulu" || *op == "divu" || *op == "powu") {
      ctx.skip(r.line(), "tensor-scalar elementwise op: no perfloom op", *op);
      continue;
    } else if (*op == "relu" || *op == "gelu" || *op == "tanh") {
      ctx.skip(r.line(), "unary activation: no perfloom op (gelu_mul/silu_mul are gated)", *op);
      continue;
    } else {
      ctx.skip(r.line(), "OPName not known", *op);
      continue;
    }
    const std::string& gpu = ctx.gpu_id(*device);
    if (gpu.empty()) {
      ctx.skip(r.line(), "GPU not in the GPU database", *device);
      continue;
    }
    mk.kernel.dtype = Dtype::fp32;
    mk.kernel.name = kname.get(f);
    LaunchArgs la;
    bool launch_ok = true;
    for (std::size_t i = 0; i < c_launch.size(); ++i) {
      auto v = c_launch[i] && *c_launch[i] < f.size() ? parse_int(f[*c_launch[i]]) : std::nullopt;
      if (!v) {
        launch_ok = false;
        break;
      }
      (i < 3 ? la.grid[i] : la.block[i - 3]) = *v;
    }
    if (launch_ok && la.known()) mk.kernel.launch = la;
    mk.gpu_id = gpu;
    mk.latency_us = *lat * kUsPerMs;
    mk.dataset = datasets[table];
    emit(ctx, r.line(), std::move(mk));
  }
}

// ---------------------------------------------------------------------------------------------
// Vidur (microsoft/vidur, vidur/profiling/mlp): one row per (num_tokens, TP degree) of one
// transformer layer's non-attention ops, run in fp16 (MlpWrapper casts the model to float16) on a
// sarathi GPTBlock. time_stats.<op>.median is the median over 20 steps of the summed CUDA kernel
// time inside the op's record_function, in ms (record_function_tracer: dur us * 1e-3).
// One MeasuredKernel per (row, op), with T=num_tokens and TP-sliced shapes (tp = TP degree):
//   emb                       embedding T, H, V=vocab/tp (vocab-parallel; TP>1 adds mask kernels)
//   input_layernorm           rmsnorm (layernorm for phi-2) T, H
//   attn_pre_proj             gemm M=T, N=(Hq+2Hkv)*D/tp, K=H   (column-parallel QKV)
//   attn_rope                 rotary T, Hq/tp, Hkv/tp, D
//   attn_post_proj            gemm M=T, N=H, K=Hq*D/tp          (row-parallel O)
//   post_attention_layernorm  rmsnorm T, H
//   mlp_up_proj               gemm M=T, N=(gated ? 2I : I)/tp, K=H
//   mlp_act                   silu_mul T, I/tp (gated MLPs); phi-2's plain GELU is skipped
//   mlp_down_proj             gemm M=T, N=H, K=I/tp
//   add                       add T, H (residual); phi-2's is attn+mlp+residual, two adds: skipped
// H, heads, I and vocab come from the row (n_embd, n_head, n_kv_head, n_expanded_embd,
// vocab_size); D = H / n_head. What the row does not say (norm type, biases, post-attention norm)
// comes from Vidur's data/model_configs/*.yml, in kVidurModels below, which also checks the dims.
// The GPU is the folder after compute/: see vidur_gpu_id().
// ---------------------------------------------------------------------------------------------
namespace {

struct VidurModel {
  std::string_view name;  // <org>/<model> as the profiling folders name it
  int64_t hidden, heads, kv_heads, mlp_hidden;
  bool layer_norm, use_bias, qkv_bias, post_attn_norm, gated;
};

// From microsoft/vidur data/model_configs/<org>/<model>.yml (the configs the profiles were made
// with; they match the Hugging Face config.json of each model, except that Qwen-72B's
// mlp_hidden_dim 24576 is half of HF's intermediate_size 49152, which counts gate and up).
constexpr VidurModel kVidurModels[] = {
    {"microsoft/phi-2", 2560, 32, 32, 10240, true, true, true, false, false},
    {"meta-llama/Llama-2-7b-hf", 4096, 32, 32, 11008, false, false, false, true, true},
    {"meta-llama/Llama-2-70b-hf", 8192, 64, 8, 28672, false, false, false, true, true},
    {"meta-llama/Meta-Llama-3-8B", 4096, 32, 8, 14336, false, false, false, true, true},
    {"meta-llama/Meta-Llama-3-70B", 8192, 64, 8, 28672, false, false, false, true, true},
    {"codellama/CodeLlama-34b-Instruct-hf", 8192, 64, 8, 22016, false, false, false, true, true},
    {"internlm/internlm-20b", 5120, 40, 40, 13824, false, false, false, true, true},
    {"Qwen/Qwen-72B", 8192, 64, 64, 24576, false, false, true, true, true},
};

// Vidur's device folders. Its DeviceSKU configs say only "80 GB, 312 fp16 TFLOPS" for a100 and
// "80 GB, 1000 TFLOPS" for h100. h100 is the SXM part (fp16 GEMMs reach ~700 TFLOPS, elementwise
// adds ~3.2 TB/s: above what the PCIe card can do). a100 is read as the 80 GB PCIe card: Vidur's
// default node for it is a100_pairwise_nvlink (bridged PCIe pairs, as in Azure NC A100 v4), and the
// profiles fit a 300 W part: large fp16 GEMMs reach ~240 TFLOPS where aiconfigurator's
// A100-SXM4-80GB reaches ~290, and weight-streaming GEMMs ~1.62 TB/s against its ~1.68.
std::string vidur_gpu_id(std::string_view folder, const GpuDatabase& gpus) {
  static const std::pair<std::string_view, std::string_view> kShort[] = {
      {"a100", "a100-pcie-80gb"}, {"h100", "h100-sxm"}, {"a40", "a40"}};
  for (const auto& [k, id] : kShort)
    if (folder == k) return gpus.find(id) ? std::string(id) : std::string();
  return public_dataset_gpu_id(folder, gpus);
}

}  // namespace

void visit_vidur(const std::filesystem::path& csv, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                 DatasetLoadReport* report) {
  // .../compute/<gpu>/<org>/<model>/mlp.csv(.gz)
  const auto model_dir = csv.parent_path();
  const auto org_dir = model_dir.parent_path();
  const auto gpu_dir = org_dir.parent_path();
  if (gpu_dir.parent_path().filename() != "compute")
    throw std::runtime_error(csv.string() +
                             ": cannot tell the GPU and model: expected .../compute/<gpu>/<org>/<model>/mlp.csv");
  const std::string gpu_folder = gpu_dir.filename().string();
  const std::string model_name = org_dir.filename().string() + "/" + model_dir.filename().string();

  FileContext ctx(csv, gpus, sink, report);
  CsvReader r = open_with_header(csv);
  if (!r.column("time_stats.mlp_up_proj.median"))
    throw std::runtime_error(csv.string() + ": not a Vidur mlp.csv profile (no time_stats.mlp_up_proj.median)");
  const std::size_t c_tokens = r.require_column("num_tokens"), c_tp = r.require_column("num_tensor_parallel_workers"),
                    c_heads = r.require_column("n_head"), c_kv = r.require_column("n_kv_head"),
                    c_embd = r.require_column("n_embd"), c_mlp = r.require_column("n_expanded_embd"),
                    c_vocab = r.require_column("vocab_size"), c_gated = r.require_column("use_gated_mlp");

  const VidurModel* model = nullptr;
  for (const auto& m : kVidurModels)
    if (m.name == model_name) model = &m;
  const std::string gpu = vidur_gpu_id(gpu_folder, gpus);
  const std::string dataset = "vidur/" + gpu_folder + "/" + model_name + "/mlp";

  enum class VOp { emb, input_norm, qkv, rope, o, post_norm, up, act, down, add };
  struct OpColumn {
    VOp op;
    std::string_view name;
    std::optional<std::size_t> col;
  };
  std::vector<OpColumn> ops = {
      {VOp::emb, "emb", {}},
      {VOp::input_norm, "input_layernorm", {}},
      {VOp::qkv, "attn_pre_proj", {}},
      {VOp::rope, "attn_rope", {}},
      {VOp::o, "attn_post_proj", {}},
      {VOp::post_norm, "post_attention_layernorm", {}},
      {VOp::up, "mlp_up_proj", {}},
      {VOp::act, "mlp_act", {}},
      {VOp::down, "mlp_down_proj", {}},
      {VOp::add, "add", {}},
  };
  for (auto& o : ops) o.col = r.column("time_stats." + std::string(o.name) + ".median");
  std::erase_if(ops, [](const OpColumn& o) { return !o.col; });

  std::vector<std::string> f;
  while (r.next(f)) {
    ctx.row();
    Row row{f, {}};
    auto T = row.integer(c_tokens, "num_tokens"), tp = row.integer(c_tp, "num_tensor_parallel_workers"),
         hq = row.integer(c_heads, "n_head"), hkv = row.integer(c_kv, "n_kv_head"), H = row.integer(c_embd, "n_embd"),
         I = row.integer(c_mlp, "n_expanded_embd"), V = row.integer(c_vocab, "vocab_size");
    std::optional<bool> gated;
    if (const std::string* g = row.text(c_gated, "use_gated_mlp")) {
      gated = parse_bool(*g);
      if (!gated && row.error.empty()) row.error = "bad boolean in 'use_gated_mlp': '" + *g + "'";
    }
    if (!row.error.empty()) {
      skip_malformed(ctx, r.line(), row.error);
      continue;
    }
    if (gpu.empty()) {
      ctx.skip(r.line(), "GPU not in the GPU database", gpu_folder);
      continue;
    }
    if (*tp <= 0 || *hq <= 0 || *hkv <= 0 || *H % *hq != 0 || *hq % *tp != 0 || *hkv % *tp != 0 || *I % *tp != 0 ||
        *V % *tp != 0) {
      ctx.skip(r.line(), "heads, widths or vocab not divisible by the TP degree", "tp=" + std::to_string(*tp));
      continue;
    }
    if (model && (model->hidden != *H || model->heads != *hq || model->kv_heads != *hkv || model->mlp_hidden != *I ||
                  model->gated != *gated)) {
      ctx.skip(r.line(), "row dims differ from Vidur's model config", model_name);
      continue;
    }
    const int64_t D = *H / *hq;
    // The widths the ops derive, (n_head + 2 n_kv_head) x head dim (QKV) and 2 x mlp width (gated
    // up-projection), must fit in 64 bits.
    int64_t kv2 = 0, heads = 0, qkv_cols = 0, up_cols = 0;
    if (__builtin_mul_overflow(*hkv, int64_t{2}, &kv2) || __builtin_add_overflow(*hq, kv2, &heads) ||
        __builtin_mul_overflow(heads, D, &qkv_cols) || __builtin_mul_overflow(*I, int64_t{*gated ? 2 : 1}, &up_cols)) {
      ctx.skip(
          r.line(), "shape out of range",
          "n_head=" + std::to_string(*hq) + " n_kv_head=" + std::to_string(*hkv) + " mlp width=" + std::to_string(*I));
      continue;
    }
    const std::string tp_note = "tp=" + std::to_string(*tp);

    for (const auto& o : ops) {
      const std::string_view t = *o.col < f.size() ? std::string_view(f[*o.col]) : std::string_view();
      auto ms = parse_double(t);
      if (!ms) {
        ctx.skip(r.line(), "bad number in 'time_stats." + std::string(o.name) + ".median'", "'" + std::string(t) + "'");
        continue;
      }
      MeasuredKernel mk;
      mk.kernel.dtype = Dtype::fp16;
      Shape& s = mk.kernel.shape;
      std::string note = tp_note;
      auto gemm = [&](int64_t n, int64_t k, bool bias) {
        mk.kernel.op = Op::gemm;
        s.M = *T, s.N = n, s.K = k;
        if (!model)
          note += ";bias=unknown";
        else if (bias)
          note += ";bias=1";
      };
      bool skip_op = false;
      switch (o.op) {
        case VOp::emb:
          mk.kernel.op = Op::embedding;
          s.T = *T, s.H = *H, s.V = *V / *tp;
          break;
        case VOp::input_norm:
        case VOp::post_norm:
          if (!model) {
            ctx.skip(r.line(), "norm type unknown: model not in Vidur's config table", model_name);
            skip_op = true;
            break;
          }
          mk.kernel.op = model->layer_norm ? Op::layernorm : Op::rmsnorm;
          s.T = *T, s.H = *H;
          break;
        case VOp::qkv:
          gemm(qkv_cols / *tp, *H, model && (model->use_bias || model->qkv_bias));
          break;
        case VOp::rope:
          mk.kernel.op = Op::rotary;
          s.T = *T, s.Hq = *hq / *tp, s.Hkv = *hkv / *tp, s.D = D;
          break;
        case VOp::o:
          gemm(*H, *hq * D / *tp, model && model->use_bias);
          break;
        case VOp::up:
          gemm(up_cols / *tp, *H, model && model->use_bias);
          break;
        case VOp::act:
          if (!*gated) {
            ctx.skip(r.line(), "plain GELU activation (not gated): no perfloom op", model_name);
            skip_op = true;
            break;
          }
          mk.kernel.op = Op::silu_mul;
          s.T = *T, s.I = *I / *tp;
          break;
        case VOp::down:
          gemm(*H, *I / *tp, model && model->use_bias);
          break;
        case VOp::add:
          if (!model || !model->post_attn_norm) {
            ctx.skip(r.line(), "parallel-block residual add (attn + mlp + residual, two adds): no single perfloom op",
                     model_name);
            skip_op = true;
            break;
          }
          mk.kernel.op = Op::add;
          s.T = *T, s.H = *H;
          break;
      }
      if (skip_op) continue;
      // GEMMs are cuBLAS through PyTorch, what every engine runs; the other ops are Sarathi-Serve's
      // own kernels, an implementation of their own (classify/kernel_classifier.h, class 3).
      if (mk.kernel.op != Op::gemm) mk.kernel.name = std::string(kSarathiKernelPrefix) + std::string(o.name);
      mk.gpu_id = gpu;
      mk.latency_us = *ms * kUsPerMs;
      mk.dataset = dataset;
      mk.note = std::move(note) + ";vidur_op=" + std::string(o.name);
      emit(ctx, r.line(), std::move(mk));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Vector-returning forms and the whole-folder loader.
// ---------------------------------------------------------------------------------------------
namespace {
template <typename Visit>
std::vector<MeasuredKernel> collect(Visit visit, const std::filesystem::path& csv, const GpuDatabase& gpus,
                                    DatasetLoadReport* report) {
  std::vector<MeasuredKernel> out;
  visit(
      csv, gpus, [&](MeasuredKernel&& k) { out.push_back(std::move(k)); }, report);
  return out;
}

enum class Format { aic_gemm, aic_attention, neusight, vidur, unknown };

// Chooses the reader from the header, not from the file name (DESIGN.md: content sniffing).
Format sniff(const std::filesystem::path& file) {
  CsvReader r = CsvReader::open_file(file);
  if (!r.read_header()) return Format::unknown;
  auto has = [&](std::string_view c) { return r.column(c).has_value(); };
  if (has("gemm_dtype") && has("m") && has("n") && has("k") && has("latency")) return Format::aic_gemm;
  if (has("batch_size") && has("isl") && has("num_heads") && has("step") && has("latency"))
    return Format::aic_attention;
  if (has("OPName") && has("Latency") && has("Device")) return Format::neusight;
  if (has("num_tokens") && has("num_tensor_parallel_workers") && has("time_stats.mlp_up_proj.median"))
    return Format::vidur;
  return Format::unknown;
}

bool is_csv(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".csv") || ends(".csv.gz");
}
}  // namespace

std::vector<MeasuredKernel> read_aiconfigurator_gemm(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                                     DatasetLoadReport* report) {
  return collect(visit_aiconfigurator_gemm, csv, gpus, report);
}
std::vector<MeasuredKernel> read_aiconfigurator_attention(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                                          DatasetLoadReport* report) {
  return collect(visit_aiconfigurator_attention, csv, gpus, report);
}
std::vector<MeasuredKernel> read_neusight(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                          DatasetLoadReport* report) {
  return collect(visit_neusight, csv, gpus, report);
}
std::vector<MeasuredKernel> read_vidur(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                       DatasetLoadReport* report) {
  return collect(visit_vidur, csv, gpus, report);
}

void visit_public_datasets(const std::filesystem::path& root, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                           std::vector<DatasetLoadReport>* reports) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec))
    throw std::runtime_error("cannot read " + root.string() + ": not a directory");
  std::vector<std::filesystem::path> files;
  // A symbolic link out of the folder is not read (storage/folder_files.h).
  for (const auto& f : folder_files(root, true).files)
    if (is_csv(f)) files.push_back(f);

  for (const auto& file : files) {
    DatasetLoadReport rep;
    switch (sniff(file)) {
      case Format::aic_gemm:
        visit_aiconfigurator_gemm(file, gpus, sink, &rep);
        break;
      case Format::aic_attention:
        visit_aiconfigurator_attention(file, gpus, sink, &rep);
        break;
      case Format::neusight:
        visit_neusight(file, gpus, sink, &rep);
        break;
      case Format::vidur:
        visit_vidur(file, gpus, sink, &rep);
        break;
      case Format::unknown:
        rep.file = file.string();
        rep.skip_reasons.emplace_back("not a known public dataset format (header not recognised)");
        break;
    }
    if (reports) reports->push_back(std::move(rep));
  }
}

std::vector<MeasuredKernel> load_public_datasets(const std::filesystem::path& root, const GpuDatabase& gpus,
                                                 std::vector<DatasetLoadReport>* reports) {
  std::vector<MeasuredKernel> out;
  visit_public_datasets(
      root, gpus, [&](MeasuredKernel&& k) { out.push_back(std::move(k)); }, reports);
  return out;
}

}  // namespace perfloom::storage
