#include "model/classify/kernel_classifier.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "model/classify/tile_from_name.h"

namespace perfloom {

namespace {

using Dims = std::vector<int64_t>;
constexpr auto npos = std::string_view::npos;

// The identity of a kernel sits in the first part of its name; template arguments further on
// (argument lists, epilogue types) only cost time. Lowercased once, on the stack.
constexpr size_t kKeyLen = 768;

constexpr char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

template <size_t N>
struct LowerBuf {
  std::array<char, N> buf;
  std::string_view sv;
  explicit LowerBuf(std::string_view s) {
    size_t n = std::min(s.size(), N);
    for (size_t i = 0; i < n; ++i) buf[i] = lower(s[i]);
    sv = std::string_view(buf.data(), n);
  }
};

// The lowercase name plus the set of character pairs it contains. Most of the ~200 patterns the
// rules test are absent from any one name; a pattern with a pair the name lacks is rejected in a
// few instructions instead of a scan over the name (which made long template names cost ~15 us).
struct Key {
  std::string_view sv;
  std::array<uint64_t, 16> pairs{};
  static unsigned slot(char a, char b) { return (unsigned(uint8_t(a)) * 31u + unsigned(uint8_t(b))) & 1023u; }
  explicit Key(std::string_view s) : sv(s) {
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      unsigned h = slot(s[i], s[i + 1]);
      pairs[h >> 6] |= uint64_t(1) << (h & 63);
    }
  }
  bool maybe(std::string_view p) const {
    for (size_t i = 0; i + 1 < p.size(); ++i) {
      unsigned h = slot(p[i], p[i + 1]);
      if (!(pairs[h >> 6] & (uint64_t(1) << (h & 63)))) return false;
    }
    return true;
  }
  size_t find(std::string_view p) const { return maybe(p) ? sv.find(p) : npos; }
};

bool has(std::string_view k, std::string_view pat) { return k.find(pat) != npos; }
bool has(const Key& k, std::string_view pat) { return k.find(pat) != npos; }
bool starts(std::string_view k, std::string_view pat) { return k.substr(0, pat.size()) == pat; }
template <class K, size_t... N>
bool any(const K& k, const char (&... pats)[N]) {
  return (has(k, std::string_view(pats, N - 1)) || ...);
}

// The name without a leading "void " (demanglers print the return type).
std::string_view head_of(std::string_view k) {
  if (starts(k, "void ")) k.remove_prefix(5);
  return k;
}

// ---------------------------------------------------------------------------------------------
// What the framework op says.

enum class Fop {
  none,
  other,
  mm,
  addmm,
  linear,
  matmul,
  bmm,
  baddbmm,
  scaled_mm,
  cutlass_scaled_mm,
  mv,
  sdpa,
  flash_bshd,
  attention,
  rmsnorm,
  fused_add_rmsnorm,
  layernorm,
  silu_mul,
  gelu_mul,
  rotary,
  kv_cache,
  softmax,
  embedding,
  binary,
  copy,
  allreduce,
  allgather,
  reducescatter,
  alltoall,
  sendrecv,
  moe,
};

bool fop_is_gemm(Fop f) {
  return f == Fop::mm || f == Fop::addmm || f == Fop::linear || f == Fop::matmul || f == Fop::bmm ||
         f == Fop::baddbmm || f == Fop::scaled_mm || f == Fop::cutlass_scaled_mm || f == Fop::mv;
}
bool fop_is_attention(Fop f) { return f == Fop::sdpa || f == Fop::flash_bshd || f == Fop::attention; }
bool fop_is_comm(Fop f) {
  return f == Fop::allreduce || f == Fop::allgather || f == Fop::reducescatter || f == Fop::alltoall ||
         f == Fop::sendrecv;
}

// "aten::_cudnn_attention_forward" -> "_cudnn_attention_forward" (lowered).
std::string_view op_base_name(std::string_view op_lower) {
  size_t colon = op_lower.rfind(':');
  return colon == npos ? op_lower : op_lower.substr(colon + 1);
}

Fop classify_fop(std::string_view op_lower) {
  if (op_lower.empty()) return Fop::none;
  // Communication first: "c10d::allreduce_", "nccl:all_reduce", "vllm::all_reduce", "_C_custom_ar::all_reduce".
  if (any(op_lower, "all_reduce", "allreduce")) return Fop::allreduce;
  if (any(op_lower, "all_gather", "allgather")) return Fop::allgather;
  if (any(op_lower, "reduce_scatter", "reducescatter")) return Fop::reducescatter;
  if (any(op_lower, "all_to_all", "alltoall")) return Fop::alltoall;
  size_t colon = op_lower.rfind(':');
  std::string_view b = colon == npos ? op_lower : op_lower.substr(colon + 1);
  if (b == "send" || b == "recv" || b == "send_" || b == "recv_" || b == "isend" || b == "irecv" ||
      b == "batch_isend_irecv")
    return Fop::sendrecv;
  if (b == "mm") return Fop::mm;
  if (b == "addmm" || b == "addmm_") return Fop::addmm;
  if (b == "linear") return Fop::linear;
  if (b == "matmul") return Fop::matmul;
  if (b == "bmm") return Fop::bmm;
  if (b == "baddbmm" || b == "baddbmm_") return Fop::baddbmm;
  if (b == "_scaled_mm" || b == "scaled_mm") return Fop::scaled_mm;
  if (has(b, "cutlass_scaled_mm")) return Fop::cutlass_scaled_mm;
  if (b == "mv" || b == "addmv" || b == "addmv_") return Fop::mv;
  if (has(b, "moe") || has(b, "fused_experts") || has(b, "topk_softmax")) return Fop::moe;
  if (has(b, "scaled_dot_product") || has(b, "cudnn_attention")) return Fop::sdpa;  // [B, H, S, D] inputs
  if (has(b, "flash_attention_forward") || has(b, "efficient_attention_forward") || has(op_lower, "flash_attn") ||
      has(op_lower, "_fa2_c::") || has(op_lower, "_fa3_c::"))
    return Fop::flash_bshd;
  if (has(b, "attention") || has(b, "attn")) return Fop::attention;
  if (has(b, "fused_add_rms_norm") || has(b, "fused_add_rmsnorm")) return Fop::fused_add_rmsnorm;
  if (has(b, "rms_norm") || has(b, "rmsnorm")) return Fop::rmsnorm;
  if (has(b, "layer_norm") || has(b, "layernorm")) return Fop::layernorm;
  if (has(b, "silu_and_mul") || has(b, "swiglu")) return Fop::silu_mul;
  if (has(b, "gelu_and_mul") || has(b, "gelu_tanh_and_mul")) return Fop::gelu_mul;
  if (has(b, "rotary") || has(b, "rope")) return Fop::rotary;
  if (any(b, "reshape_and_cache", "concat_and_cache", "store_kvcache", "set_kv_buffer")) return Fop::kv_cache;
  if (has(b, "softmax")) return Fop::softmax;
  if (has(b, "embedding")) return Fop::embedding;
  if (b == "add" || b == "add_" || b == "sub" || b == "sub_" || b == "mul" || b == "mul_" || b == "div" || b == "div_")
    return Fop::binary;
  if (b == "copy_" || b == "_to_copy" || b == "to" || b == "clone" || b == "contiguous" || b == "cat" || b == "fill_" ||
      b == "zero_" || b == "index_select" || b == "index" || b == "zeros" || b == "ones" || b == "full" ||
      b == "empty" || b == "where" || b == "masked_fill_")
    return Fop::copy;
  return Fop::other;
}

// ---------------------------------------------------------------------------------------------
// Dtype.

std::optional<Dtype> dtype_from_type_name(std::string_view t) {
  LowerBuf<64> l(t);
  std::string_view s = l.sv;
  if (has(s, "bfloat16")) return Dtype::bf16;
  if (has(s, "half")) return Dtype::fp16;
  if (has(s, "e4m3")) return Dtype::fp8e4m3;
  if (has(s, "e5m2")) return Dtype::fp8e5m2;
  if (has(s, "e2m1")) return Dtype::fp4;
  if (s == "float" || s == "float32") return Dtype::fp32;
  if (s == "signed char" || s == "int8" || s == "c10::qint8") return Dtype::int8;
  return std::nullopt;
}

std::optional<Dtype> dtype_from_inputs(const std::vector<std::string>& types) {
  for (const auto& t : types)
    if (auto d = dtype_from_type_name(t)) return d;
  return std::nullopt;
}

// Earliest occurrence of a strong dtype token in the lowercase name; fp32-ish tokens are weak
// (accumulators and lambdas say "float" in names whose data is bf16) and reported separately.
struct NameDtype {
  std::optional<Dtype> strong, weak;
};

size_t find_not_after(const Key& k, std::string_view pat, char bad) {
  for (size_t p = k.find(pat); p != npos; p = k.sv.find(pat, p + 1))
    if (p == 0 || k.sv[p - 1] != bad) return p;
  return npos;
}

NameDtype dtype_from_name(const Key& k) {
  NameDtype r;
  struct Cand {
    size_t pos;
    Dtype d;
  };
  std::array<Cand, 16> c{};
  size_t n = 0;
  auto add = [&](size_t pos, Dtype d) {
    if (pos != npos && n < c.size()) c[n++] = {pos, d};
  };
  add(find_not_after(k, "e4m3", 'u'), Dtype::fp8e4m3);  // ue4m3 is a block-scale type
  add(k.find("fp8"), Dtype::fp8e4m3);
  add(k.find("e5m2"), Dtype::fp8e5m2);
  add(k.find("e2m1"), Dtype::fp4);
  add(k.find("nvfp4"), Dtype::fp4);
  add(k.find("mxfp4"), Dtype::fp4);
  add(k.find("bf16"), Dtype::bf16);
  add(k.find("bfloat16"), Dtype::bf16);
  add(find_not_after(k, "f16", 'b'), Dtype::fp16);
  add(k.find("fp16"), Dtype::fp16);
  add(k.find("half"), Dtype::fp16);
  add(k.find("hgemm"), Dtype::fp16);
  add(k.find("tf32"), Dtype::tf32);
  add(k.find("i8i8"), Dtype::int8);
  add(find_not_after(k, "int8", 'u'), Dtype::int8);  // uint8 holds packed fp8/fp4
  add(k.find("imma"), Dtype::int8);
  if (n > 0) {
    auto best = std::min_element(c.begin(), c.begin() + long(n), [](auto& a, auto& b) { return a.pos < b.pos; });
    r.strong = best->d;
  }
  if (has(k, "sgemm") || has(k, "f32") || has(k, "fp32") || has(k, "float")) r.weak = Dtype::fp32;
  return r;
}

// nvjet_[smNN_]<in><...>: the first letter is the A/B type (tst: bf16 in, fp32 compute, bf16 out).
std::optional<Dtype> dtype_from_nvjet(std::string_view k) {
  size_t p = k.find("nvjet_");
  if (p == npos) return std::nullopt;
  std::string_view s = k.substr(p + 6);
  if (starts(s, "sm") && s.size() > 2 && is_digit(s[2])) {
    size_t u = s.find('_');
    if (u == npos) return std::nullopt;
    s.remove_prefix(u + 1);
  }
  if (s.empty()) return std::nullopt;
  size_t u = s.find('_');
  std::string_view types = s.substr(0, u);
  std::string_view after = u == npos ? std::string_view() : s.substr(u + 1);
  switch (types[0]) {
    case 't':
      return Dtype::bf16;
    case 'h':
      return Dtype::fp16;
    case 's':
      return starts(after, "tf32") ? Dtype::tf32 : Dtype::fp32;
    case 'q':
      return Dtype::fp8e4m3;  // inferred: the FP8 (e4m3) kernels cuBLASLt picks for _scaled_mm
    case 'o':
      return Dtype::fp4;  // inferred
    case 'i':
      return Dtype::int8;
    default:
      return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------
// The rules over the kernel name.

struct Match {
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::string_view library = "unknown";
  std::string_view reason;
  bool matched = false;
};

Match M(Family f, Op op, std::string_view lib, std::string_view why) { return {f, op, lib, why, true}; }

// Library from a namespace or a well-known prefix, for rules that do not fix it.
std::string_view library_of(const Key& k) {
  if (has(k, "flashinfer")) return "flashinfer";
  if (has(k, "vllm::") || has(k, "_vllm")) return "vllm";
  if (has(k, "sglang") || has(k, "sgl_")) return "sglang";
  if (has(k, "tensorrt_llm") || has(k, "trtllm")) return "trtllm";
  if (has(k, "deep_gemm")) return "deepgemm";
  if (has(k, "at::native") || has(k, "at::cuda") || has(k, "cunn_") || has(k, "pytorch") || has(k, "c10::"))
    return "pytorch";
  if (starts(head_of(k.sv), "triton_")) return "triton";
  if (has(k, "cutlass")) return "cutlass";
  return "unknown";
}

bool legacy_cublas_prefix(std::string_view h) {
  static constexpr std::string_view kArch[] = {"ampere_", "turing_", "volta_", "maxwell_", "pascal_", "kepler_",
                                               "hopper_", "sm86_",   "sm89_",  "sm75_",    "sm70_"};
  for (auto a : kArch)
    if (starts(h, a)) return true;
  return false;
}

Op comm_op_from(const Key& k, Fop fop) {
  if (has(k, "allreduce") || has(k, "all_reduce")) return Op::allreduce;
  if (has(k, "allgather") || has(k, "all_gather")) return Op::allgather;
  if (has(k, "reducescatter") || has(k, "reduce_scatter")) return Op::reducescatter;
  if (has(k, "alltoall") || has(k, "all_to_all")) return Op::alltoall;
  // NCCL runs all-to-all as grouped send/recv: the launching op tells them apart.
  if (fop == Fop::alltoall) return Op::alltoall;
  if (has(k, "sendrecv") || has(k, "_send") || has(k, "_recv")) return Op::sendrecv;
  switch (fop) {
    case Fop::allreduce:
      return Op::allreduce;
    case Fop::allgather:
      return Op::allgather;
    case Fop::reducescatter:
      return Op::reducescatter;
    case Fop::sendrecv:
      return Op::sendrecv;
    default:
      return Op::unknown;
  }
}

Match match_communication(const Key& k, std::string_view h, Fop fop) {
  if (has(k, "nccldevkernel_") || has(k, "ncclkernel_") || starts(h, "nccl")) {
    Op op = comm_op_from(k, fop);
    return M(Family::communication, op, "nccl", "NCCL collective kernel (ncclDevKernel_*/ncclKernel_*)");
  }
  if (has(k, "cross_device_reduce"))
    return M(Family::communication, Op::allreduce, has(k, "sglang") ? "sglang" : "vllm",
             "custom all-reduce (cross_device_reduce_{1,2}stage)");
  if (any(k, "allreduce", "all_reduce"))
    return M(Family::communication, Op::allreduce, library_of(k), "custom all-reduce kernel");
  if (any(k, "allgather", "all_gather"))
    return M(Family::communication, Op::allgather, library_of(k), "all-gather kernel");
  if (any(k, "reducescatter", "reduce_scatter"))
    return M(Family::communication, Op::reducescatter, library_of(k), "reduce-scatter kernel");
  if (any(k, "alltoall", "all_to_all", "moea2a", "deep_ep::", "deepep"))
    return M(Family::communication, Op::alltoall, library_of(k), "all-to-all / expert dispatch-combine kernel");
  return {};
}

Match match_attention(const Key& k, std::string_view h, Fop fop) {
  // Inductor's generated kernels name the ops they fuse: triton_poi_fused__scaled_dot_product_
  // cudnn_attention_... is the pointwise work around an attention, never the attention itself.
  if (starts(h, "triton_poi_") || starts(h, "triton_red_") || starts(h, "triton_per_")) return {};
  // Split-KV / split-sequence reductions: part of an attention call, not one on their own.
  if (any(k, "splitkv_combine", "flash_fwd_mla_combine", "flashattnfwdcombine", "mergestates", "merge_state",
          "paged_attention_v2_reduce", "fmhareduction") ||
      starts(h, "reduce_segments") || starts(h, "_fwd_kernel_stage2")) {
    std::string_view lib = has(k, "pytorch_flash")                                      ? "pytorch"
                           : any(k, "flash_fwd", "flashattn")                           ? "flash-attn"
                           : has(k, "fmhareduction")                                    ? "trtllm"
                           : (starts(h, "reduce_segments") || starts(h, "_fwd_kernel")) ? "triton"
                                                                                        : library_of(k);
    return M(Family::attention, Op::unknown, lib, "attention split-KV combine (reduction of partial outputs)");
  }
  if (has(k, "mqa_logits"))
    return M(Family::attention, Op::unknown, library_of(k), "MQA logits (sparse-attention indexer scores)");
  if (has(k, "prepare_varlen_num_blocks"))
    return M(Family::attention, Op::unknown, "flash-attn", "FlashAttention-3 scheduler metadata kernel");
  if (any(k, "flash_bwd", "flashattnbwd", "fmha_cutlassb", "_bwd_kernel") ||
      (has(k, "cudnn_generated_fort_native_sdpa") && has(k, "bprop")))
    return M(Family::attention, Op::unknown, library_of(k), "attention backward (training)");
  if (any(k, "flash_fwd_splitkv_mla", "flashmla", "flash_mla"))
    return M(Family::attention, Op::attn_decode, "flashmla", "FlashMLA decode kernel");
  if (has(k, "flash_fwd_splitkv"))
    return M(Family::attention, Op::attn_decode, has(k, "pytorch_flash") ? "pytorch" : "flash-attn",
             "FlashAttention-2 split-KV forward (flash-decoding)");
  if (has(k, "flash_fwd"))
    return M(Family::attention, Op::attn_prefill, has(k, "pytorch_flash") ? "pytorch" : "flash-attn",
             "FlashAttention-2 forward (flash_fwd_kernel)");
  if (any(k, "flashattnfwdsm", "flashattentionforwardsm", "flash::"))
    return M(Family::attention, Op::attn_prefill, "flash-attn", "FlashAttention-3/4 forward (flash::FlashAttnFwdSm90)");
  if (any(k, "batchdecodewith", "singledecodewith", "batchdecodemla"))
    return M(Family::attention, Op::attn_decode, "flashinfer", "FlashInfer decode kernel");
  if (any(k, "batchprefillwith", "singleprefillwith", "batchpodwith"))
    return M(Family::attention, Op::attn_prefill, "flashinfer", "FlashInfer prefill kernel");
  if (has(k, "batchmlapagedattention"))
    return M(Family::attention, Op::attn_decode, "flashinfer", "FlashInfer MLA paged attention");
  if (has(k, "cudnn_generated_fort_native_sdpa"))
    return M(Family::attention, Op::attn_prefill, "cudnn", "cuDNN fused SDPA forward (flash fprop)");
  if (has(k, "fmha_cutlassf"))
    return M(Family::attention, Op::attn_prefill, "pytorch", "PyTorch memory-efficient attention (fmha_cutlassF)");
  if (any(k, "fmhasm", "fmhakernel", "fmha_v2", "xqa")) {
    bool gen = has(k, "forgen") || has(k, "xqa");
    return M(Family::attention, gen ? Op::attn_decode : Op::attn_prefill, "trtllm",
             gen ? "TensorRT-LLM FMHA generation (decode) kernel" : "TensorRT-LLM FMHA context kernel");
  }
  if (has(k, "paged_attention"))
    return M(Family::attention, Op::attn_decode, library_of(k) == "unknown" ? "vllm" : library_of(k),
             "paged attention decode kernel (vLLM paged_attention_v1/v2)");
  if (has(k, "unified_attention_3d"))
    return M(Family::attention, Op::attn_decode, "triton", "Triton unified attention, split (3d) decode kernel");
  if (has(k, "unified_attention"))
    return M(Family::attention, Op::attn_prefill, "triton", "Triton unified attention (2d) kernel");
  if (starts(h, "_fwd_grouped_kernel_stage1") || starts(h, "_fwd_kernel_stage1"))
    return M(Family::attention, Op::attn_decode, "triton", "Triton decode attention stage 1 (SGLang/vLLM)");
  if (any(k, "extend_attention", "context_attention", "prefix_prefill") ||
      ((starts(h, "_fwd_kernel") || starts(h, "_attn_fwd") || starts(h, "attn_fwd")) && fop_is_attention(fop)))
    return M(Family::attention, Op::attn_prefill, "triton", "Triton prefill attention kernel");
  if (any(k, "attention", "attn") && !has(k, "gemm"))
    return M(Family::attention, Op::unknown, library_of(k), "attention kernel (variant not recognised)");
  return {};
}

Match match_moe(const Key& k, std::string_view h) {
  if (any(k, "moe_align_block_size", "count_and_sort_expert_tokens", "topkgatingsoftmax", "topk_softmax", "moe_sum",
          "moe_fused_gate", "grouped_topk", "moe::dev::routing", "expandinputrows", "finalizemoerouting", "moe_permute",
          "moe_unpermute", "_moe_align", "compute_problem_sizes", "compute_expert_offsets", "shuffle_rows", "moe_topk",
          "routingkernel"))
    return M(Family::moe, Op::unknown, library_of(k) == "unknown" ? "vllm" : library_of(k),
             "MoE routing / alignment / sum (auxiliary to the expert GEMMs)");
  if (any(k, "fused_moe", "moe_gemm", "moegemm", "moe_wna16", "marlin_moe", "cutlass_moe", "fused_experts", "moe_mm",
          "grouped_gemm", "groupedgemm", "groupproblemshape")) {
    std::string_view lib = starts(h, "fused_moe_kernel") ? "triton" : has(k, "marlin") ? "marlin" : library_of(k);
    return M(Family::moe, Op::moe, lib, "fused MoE expert GEMM");
  }
  if (has(k, "deep_gemm") && any(k, "grouped", "gemmtype)1", "gemmtype)2"))
    return M(Family::moe, Op::moe, "deepgemm", "DeepGEMM grouped (MoE) GEMM");
  return {};
}

Match match_norm(const Key& k, std::string_view h) {
  if (any(k, "fused_add_rms_norm", "fusedaddrmsnorm", "fused_add_rmsnorm", "add_rmsnorm", "addrmsnorm"))
    return M(Family::norm, Op::fused_add_rmsnorm, library_of(k), "fused residual add + RMSNorm kernel");
  if (any(k, "rms_norm", "rmsnorm")) return M(Family::norm, Op::rmsnorm, library_of(k), "RMSNorm kernel");
  if (starts(h, "triton_") && has(k, "rsqrt") && has(k, "mean") && has(k, "pow"))
    return M(Family::norm, Op::rmsnorm, "triton", "Inductor fused RMSNorm (mean/pow/rsqrt in the name)");
  if (any(k, "layer_norm", "layernorm", "var_mean", "rowwisemoments"))
    return M(Family::norm, Op::layernorm, library_of(k), "LayerNorm kernel");
  return {};
}

bool has_rope(const Key& k) {
  if (!k.maybe("rope")) return false;
  for (size_t p = k.sv.find("rope"); p != npos; p = k.sv.find("rope", p + 1))
    if (k.sv.substr(p, 7) != "roperty") return true;  // "property"
  return false;
}

Match match_pointwise(const Key& k, std::string_view h, Fop fop) {
  bool triton = starts(h, "triton_");
  if (has(k, "act_and_mul")) {
    bool gelu = has(k, "gelu");
    return M(Family::elementwise, gelu ? Op::gelu_mul : Op::silu_mul, library_of(k),
             gelu ? "act_and_mul_kernel with GELU" : "act_and_mul_kernel (SiLU-and-mul)");
  }
  if (any(k, "silu_and_mul", "siluandmul", "silu_mul", "swiglu", "mul_silu"))
    return M(Family::elementwise, Op::silu_mul, library_of(k), "SiLU-and-mul kernel");
  if (any(k, "gelu_and_mul", "gelu_tanh_and_mul", "geglu") || (triton && has(k, "gelu") && has(k, "mul")))
    return M(Family::elementwise, Op::gelu_mul, library_of(k), "GELU-and-mul kernel");
  if (has(k, "rotary") || has_rope(k))
    return M(Family::elementwise, Op::rotary, library_of(k), "rotary position embedding kernel");
  if (any(k, "reshape_and_cache", "concat_and_cache", "store_kvcache", "appendpagedkvcache", "set_mla_kv_buffer",
          "write_to_kv_cache", "kv_cache_write", "scatter_kv", "_store_kv"))
    return M(Family::elementwise, Op::kv_cache_write, library_of(k), "KV-cache write kernel");
  if (has(k, "softmax")) return M(Family::elementwise, Op::softmax, library_of(k), "softmax kernel");
  if (has(k, "embedding") || (any(k, "indexselect", "index_select") && fop == Fop::embedding))
    return M(Family::elementwise, Op::embedding, library_of(k), "embedding lookup kernel");
  return {};
}

Match match_gemm(const Key& k, std::string_view h, Fop fop) {
  if (has(k, "splitkreduce"))
    return M(Family::gemm, Op::unknown, "cublas", "cuBLAS split-K reduction (second half of a split-K GEMM)");
  if (has(k, "nvjet")) return M(Family::gemm, Op::gemm, "cublas", "cuBLAS(Lt) nvjet GEMM");
  bool conv = any(k, "implicit_gemm", "fprop", "dgrad", "wgrad", "conv2d", "conv3d", "convolution");
  if (has(k, "xmma")) {
    bool cudnn = has(k, "cudnn");
    if (conv) return M(Family::gemm, Op::unknown, cudnn ? "cudnn" : "cublas", "xmma implicit-GEMM convolution");
    return M(Family::gemm, Op::gemm, cudnn ? "cudnn" : "cublas", "cuBLAS xmma GEMM");
  }
  if (legacy_cublas_prefix(h) && has(k, "gemm"))
    return M(Family::gemm, conv ? Op::unknown : Op::gemm, "cublas", "cuBLAS arch-prefixed GEMM (ampere_/volta_/...)");
  // cuBLAS splits a long-K matrix-vector product into dot_kernel partials and a reduce_1Block_kernel.
  bool cublas_gemv = has(k, "cublas") || fop_is_gemm(fop);
  if (starts(h, "reduce_1block_kernel") && cublas_gemv)
    return M(Family::gemm, Op::unknown, "cublas", "cuBLAS reduction of dot_kernel partials (matrix-vector product)");
  if (starts(h, "dot_kernel") && cublas_gemv)
    return M(Family::gemm, Op::gemm, "cublas", "cuBLAS dot_kernel (split matrix-vector product)");
  if (any(k, "gemv", "gemmk1_kernel", "gemmsn_"))
    return M(Family::gemm, Op::gemm, library_of(k) == "unknown" ? "cublas" : library_of(k),
             "GEMV / skinny GEMM kernel");
  if (has(k, "kernel2<cutlass_"))
    return M(Family::gemm, conv ? Op::unknown : Op::gemm, "cublas",
             "CUTLASS 2 kernel launched by cuBLAS (Kernel2<cutlass_*>)");
  if (has(k, "deep_gemm") || has(k, "fp8_gemm"))
    return M(Family::gemm, Op::gemm, has(k, "deep_gemm") ? "deepgemm" : library_of(k), "DeepGEMM / FP8 GEMM kernel");
  if (has(k, "marlin")) return M(Family::gemm, Op::gemm, "marlin", "Marlin mixed-precision GEMM");
  if ((starts(h, "bmm_") || starts(h, "gemm_")) && (has(k, "_sm10") || has(k, "_sm9") || has(k, "_sm12")))
    return M(Family::gemm, starts(h, "bmm_") ? Op::bmm : Op::gemm, "trtllm", "TensorRT-LLM generated GEMM");
  if (starts(h, "triton_tem_") && any(k, "mm", "bmm"))
    return M(Family::gemm, has(k, "bmm") ? Op::bmm : Op::gemm, "triton", "Inductor Triton GEMM template");
  if (has(k, "cutlass") && conv)
    return M(Family::gemm, Op::unknown, has(k, "cudnn") ? "cudnn" : "cutlass", "CUTLASS implicit-GEMM convolution");
  if (has(k, "cutlass") && (has(k, "gemm") || has(k, "scaled_mm"))) {
    std::string_view lib = library_of(k);
    return M(Family::gemm, conv ? Op::unknown : Op::gemm, (lib == "unknown" || lib == "pytorch") ? "cutlass" : lib,
             "CUTLASS GEMM kernel");
  }
  if (any(k, "gemm", "matmul", "scaled_mm") || starts(h, "_mm_") || has(k, "_mm_kernel"))
    return M(Family::gemm, Op::gemm, library_of(k), "GEMM kernel (generic name)");
  return {};
}

Match match_pytorch_and_misc(const Key& k, std::string_view h, Fop fop) {
  if (any(k, "catarraybatchedcopy", "cat_array"))
    return M(Family::elementwise, Op::copy, "pytorch", "concatenation copy (CatArrayBatchedCopy)");
  if (any(k, "quant", "float8_copy"))
    return M(Family::elementwise, Op::copy, library_of(k), "quantize / cast kernel (modelled as a copy)");
  if (any(k, "direct_copy_kernel", "copy_kernel", "fillfunctor", "fill_kernel", "memcpy", "memset", "_copy_"))
    return M(Family::elementwise, Op::copy, library_of(k), "copy / cast / fill kernel");
  if (has(k, "unaryfunctor") || has(k, "cudafunctoronself"))  // tensor-scalar: one read, one write
    return M(Family::elementwise, Op::copy, library_of(k), "tensor-scalar elementwise kernel (modelled as a copy)");
  if (has(k, "cudafunctor_add") || any(k, "addfunctor", "mulfunctor", "divfunctor", "subfunctor", "binaryfunctor"))
    return M(Family::elementwise, Op::add, library_of(k), "binary elementwise kernel (add/mul/sub/div)");
  if (has(k, "reduce_kernel"))
    return M(Family::elementwise, Op::unknown, library_of(k), "reduction kernel (sum/mean/argmax/...)");
  if (any(k, "indexselect", "index_select", "index_elementwise", "gather_kernel", "scatter_kernel", "index_put"))
    return M(Family::elementwise, Op::copy, library_of(k), "gather / scatter / index kernel (modelled as a copy)");
  bool pw =
      any(k, "elementwise_kernel", "vectorized_elementwise", "unrolled_elementwise", "elementwise_kernel_with_index");
  if (pw || any(k, "silu_kernel", "gelu_kernel", "sigmoid", "tanh_kernel", "exp_kernel", "neg_kernel", "abs_kernel",
                "pow_tensor")) {
    if (fop == Fop::binary)
      return M(Family::elementwise, Op::add, library_of(k), "elementwise kernel under a binary op");
    return M(Family::elementwise, Op::copy, library_of(k), "unary elementwise kernel (modelled as a copy)");
  }
  if (starts(h, "triton_")) {
    std::string_view body = h.substr(7);
    if (starts(body, "poi")) {
      if (has(body, "_cat") || has(body, "clone") || has(body, "copy") || has(body, "_to_copy"))
        return M(Family::elementwise, Op::copy, "triton", "Inductor pointwise kernel (copy/cat/clone)");
      if (has(body, "fused_add_") && !has(body, "mul"))
        return M(Family::elementwise, Op::add, "triton", "Inductor pointwise add");
      return M(Family::elementwise, Op::unknown, "triton", "Inductor pointwise kernel (triton_poi_)");
    }
    return M(Family::elementwise, Op::unknown, "triton", "Inductor reduction kernel (triton_red_/triton_per_)");
  }
  if (has(k, "at::native") || has(k, "cunn_"))
    return M(Family::elementwise, Op::unknown, "pytorch", "PyTorch native kernel (not recognised)");
  return {};
}

Match match_name(const Key& k, Fop fop) {
  std::string_view h = head_of(k.sv);
  Match m;
  if ((m = match_communication(k, h, fop)).matched) return m;
  if ((m = match_attention(k, h, fop)).matched) return m;
  if ((m = match_moe(k, h)).matched) return m;
  if ((m = match_norm(k, h)).matched) return m;
  if ((m = match_pointwise(k, h, fop)).matched) return m;
  if ((m = match_gemm(k, h, fop)).matched) return m;
  if ((m = match_pytorch_and_misc(k, h, fop)).matched) return m;
  return {};
}

// When the name says nothing, the launching op is the best evidence left.
Match match_fop(Fop fop) {
  const std::string_view why = "kernel name not recognised; family from the framework op";
  switch (fop) {
    case Fop::mm:
    case Fop::addmm:
    case Fop::linear:
    case Fop::matmul:
    case Fop::scaled_mm:
    case Fop::cutlass_scaled_mm:
    case Fop::mv:
      return M(Family::gemm, Op::gemm, "unknown", why);
    case Fop::bmm:
    case Fop::baddbmm:
      return M(Family::gemm, Op::bmm, "unknown", why);
    case Fop::sdpa:
    case Fop::flash_bshd:
    case Fop::attention:
      return M(Family::attention, Op::attn_prefill, "unknown", why);
    case Fop::rmsnorm:
      return M(Family::norm, Op::rmsnorm, "unknown", why);
    case Fop::fused_add_rmsnorm:
      return M(Family::norm, Op::fused_add_rmsnorm, "unknown", why);
    case Fop::layernorm:
      return M(Family::norm, Op::layernorm, "unknown", why);
    case Fop::silu_mul:
      return M(Family::elementwise, Op::silu_mul, "unknown", why);
    case Fop::gelu_mul:
      return M(Family::elementwise, Op::gelu_mul, "unknown", why);
    case Fop::rotary:
      return M(Family::elementwise, Op::rotary, "unknown", why);
    case Fop::kv_cache:
      return M(Family::elementwise, Op::kv_cache_write, "unknown", why);
    case Fop::softmax:
      return M(Family::elementwise, Op::softmax, "unknown", why);
    case Fop::embedding:
      return M(Family::elementwise, Op::embedding, "unknown", why);
    case Fop::binary:
      return M(Family::elementwise, Op::add, "unknown", why);
    case Fop::copy:
      return M(Family::elementwise, Op::copy, "unknown", why);
    case Fop::allreduce:
      return M(Family::communication, Op::allreduce, "unknown", why);
    case Fop::allgather:
      return M(Family::communication, Op::allgather, "unknown", why);
    case Fop::reducescatter:
      return M(Family::communication, Op::reducescatter, "unknown", why);
    case Fop::alltoall:
      return M(Family::communication, Op::alltoall, "unknown", why);
    case Fop::sendrecv:
      return M(Family::communication, Op::sendrecv, "unknown", why);
    case Fop::moe:
      return M(Family::moe, Op::unknown, "unknown", why);
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// Shapes from the launching op's input dims.

constexpr int64_t kMaxDim = int64_t(1) << 40;

bool sane(const Dims& d) {
  for (int64_t x : d)
    if (x < 0 || x > kMaxDim) return false;
  return true;
}

// Product of d[from, to), saturating; 0 for an empty range over an empty dims (a scalar/None).
int64_t prod(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < d.size(); ++i) {
    if (d[i] != 0 && p > kMaxDim / d[i]) return kMaxDim;
    p *= d[i];
  }
  return p;
}
int64_t numel(const Dims& d) { return d.empty() ? 0 : prod(d, 0, d.size()); }

const Dims* dim_at(const ClassifyInput& in, size_t i) {
  if (i >= in.input_dims.size() || !sane(in.input_dims[i])) return nullptr;
  return &in.input_dims[i];
}

// The i-th input with exactly `rank` dims (rank 0: any rank >= 1).
const Dims* nth_with_rank(const ClassifyInput& in, size_t rank, size_t nth = 0) {
  for (const auto& d : in.input_dims) {
    if (d.empty() || !sane(d)) continue;
    if (rank == 0 || d.size() == rank) {
      if (nth == 0) return &d;
      --nth;
    }
  }
  return nullptr;
}

bool gemm_shape(Fop fop, const ClassifyInput& in, Op& op, Shape& s) {
  auto set_mm = [&](const Dims* a, const Dims* b) {
    if (!a || !b || a->size() != 2 || b->size() != 2 || (*a)[1] != (*b)[0]) return false;
    op = Op::gemm;
    s.M = (*a)[0];
    s.K = (*a)[1];
    s.N = (*b)[1];
    return true;
  };
  auto set_bmm = [&](const Dims* a, const Dims* b) {
    if (!a || !b || a->size() < 3 || b->size() < 3) return false;
    size_t ra = a->size(), rb = b->size();
    if ((*a)[ra - 1] != (*b)[rb - 2]) return false;
    op = Op::bmm;
    s.Bt = prod(*a, 0, ra - 2);
    s.M = (*a)[ra - 2];
    s.K = (*a)[ra - 1];
    s.N = (*b)[rb - 1];
    return true;
  };
  switch (fop) {
    case Fop::mm:
    case Fop::scaled_mm:
      return set_mm(dim_at(in, 0), dim_at(in, 1));
    case Fop::addmm:              // (bias, a, b)
    case Fop::cutlass_scaled_mm:  // (out, a, b, scales...)
      return set_mm(dim_at(in, 1), dim_at(in, 2));
    case Fop::bmm:
      return set_bmm(dim_at(in, 0), dim_at(in, 1));
    case Fop::baddbmm:
      return set_bmm(dim_at(in, 1), dim_at(in, 2));
    case Fop::linear: {
      const Dims* x = dim_at(in, 0);
      const Dims* w = dim_at(in, 1);
      if (!x || !w || x->empty() || w->size() != 2 || x->back() != (*w)[1]) return false;
      op = Op::gemm;
      s.M = prod(*x, 0, x->size() - 1);
      s.K = x->back();
      s.N = (*w)[0];
      return true;
    }
    case Fop::mv: {  // mv(W[N,K], x[K]) or addmv(bias, W, x)
      const Dims* w = nth_with_rank(in, 2);
      if (!w) return false;
      op = Op::gemm;
      s.M = 1;
      s.N = (*w)[0];
      s.K = (*w)[1];
      return true;
    }
    case Fop::matmul: {
      const Dims* a = dim_at(in, 0);
      const Dims* b = dim_at(in, 1);
      if (!a || !b || a->empty() || b->empty()) return false;
      if (a->size() >= 3 && b->size() >= 3) return set_bmm(a, b);
      if (b->size() == 2 && a->back() == (*b)[0]) {  // [..., K] x [K, N]: leading dims fold into M
        op = Op::gemm;
        s.M = prod(*a, 0, a->size() - 1);
        s.K = a->back();
        s.N = (*b)[1];
        return true;
      }
      if (a->size() == 2 && b->size() == 1 && (*a)[1] == (*b)[0]) {
        op = Op::gemm;
        s.M = (*a)[0];
        s.K = (*a)[1];
        s.N = 1;
        return true;
      }
      return false;
    }
    default:
      return false;
  }
}

// Where each attention op takes is_causal (PyTorch's native_functions.yaml signatures);
// _efficient_attention_forward takes custom_mask_type instead (0 none, 1 and 2 causal).
std::optional<bool> causal_from_concrete(std::string_view op_base, const ClassifyInput& in) {
  struct Arg {
    std::string_view op;
    size_t index;
    bool mask_type;
  };
  static constexpr Arg kArgs[] = {
      {"scaled_dot_product_attention", 5, false},
      {"_scaled_dot_product_flash_attention", 4, false},
      {"_scaled_dot_product_efficient_attention", 6, false},
      {"_scaled_dot_product_cudnn_attention", 6, false},
      {"_cudnn_attention_forward", 10, false},
      {"_flash_attention_forward", 8, false},
      {"_efficient_attention_forward", 9, true},
  };
  for (const Arg& a : kArgs) {
    if (op_base != a.op) continue;
    if (a.index >= in.concrete_inputs.size()) return std::nullopt;
    const std::string& v = in.concrete_inputs[a.index];
    if (a.mask_type) {
      if (v == "0") return false;
      if (v == "1" || v == "2") return true;
      return std::nullopt;
    }
    if (v == "True" || v == "true") return true;
    if (v == "False" || v == "false") return false;
    return std::nullopt;
  }
  return std::nullopt;
}

bool attention_shape(Fop fop, std::string_view op_base, const ClassifyInput& in, Op& op, Shape& s) {
  const Dims* q = dim_at(in, 0);
  const Dims* k = dim_at(in, 1);
  if (!q || !k) return false;
  int64_t B = 0, Sq = 0, Hq = 0, Skv = 0, Hkv = 0, D = 0;
  if (fop == Fop::sdpa && q->size() == 4 && k->size() == 4) {  // [B, H, S, D]
    B = (*q)[0];
    Hq = (*q)[1];
    Sq = (*q)[2];
    D = (*q)[3];
    Hkv = (*k)[1];
    Skv = (*k)[2];
  } else if (fop == Fop::flash_bshd && q->size() == 4 && k->size() == 4 && (*k)[0] == (*q)[0]) {  // [B, S, H, D]
    B = (*q)[0];
    Sq = (*q)[1];
    Hq = (*q)[2];
    D = (*q)[3];
    Skv = (*k)[1];
    Hkv = (*k)[2];
  } else if (q->size() == 3 && k->size() >= 3) {  // ragged [T, H, D]: heads and head size only
    s.Hq = (*q)[1];
    s.Hkv = (*k)[k->size() - 2];
    s.D = (*q)[2];
    return true;
  } else {
    return false;
  }
  s.Hq = Hq;
  s.Hkv = Hkv;
  s.D = D;
  if (std::optional<bool> causal = causal_from_concrete(op_base, in)) s.causal = *causal;
  if (Sq == 1 && Skv >= 1) {
    op = Op::attn_decode;
    s.B = B;
    s.L = Skv;
  } else {
    op = Op::attn_prefill;
    s.B = B;
    s.S = Sq;
  }
  return true;
}

// Rows x width of the first input with at least two dims (leading dims fold into rows).
bool rows_width(const ClassifyInput& in, int64_t& T, int64_t& W) {
  for (const auto& d : in.input_dims) {
    if (d.size() >= 2 && sane(d)) {
      T = prod(d, 0, d.size() - 1);
      W = d.back();
      return true;
    }
  }
  return false;
}

bool act_mul_shape(const ClassifyInput& in, Shape& s) {
  // (out [T, I], input [T, 2I]) in either order, or just the input [T, 2I].
  const Dims* a = nth_with_rank(in, 0, 0);
  const Dims* b = nth_with_rank(in, 0, 1);
  if (a && b && a->size() >= 2 && b->size() == a->size()) {
    int64_t la = a->back(), lb = b->back();
    if (lb == 2 * la) {
      s.T = prod(*a, 0, a->size() - 1);
      s.I = la;
      return true;
    }
    if (la == 2 * lb) {
      s.T = prod(*b, 0, b->size() - 1);
      s.I = lb;
      return true;
    }
  }
  if (a && a->size() >= 2 && a->back() % 2 == 0) {
    s.T = prod(*a, 0, a->size() - 1);
    s.I = a->back() / 2;
    return true;
  }
  return false;
}

bool rotary_shape(const ClassifyInput& in, Shape& s) {
  const Dims* q3 = nth_with_rank(in, 3, 0);
  const Dims* k3 = nth_with_rank(in, 3, 1);
  if (q3 && k3 && (*q3)[0] == (*k3)[0]) {  // [T, H, D] query and key
    s.T = (*q3)[0];
    s.Hq = (*q3)[1];
    s.Hkv = (*k3)[1];
    s.D = (*q3)[2];
    return true;
  }
  // vLLM _C::rotary_embedding(positions, query [T, Hq*D], key [T, Hkv*D], head_size, cos_sin_cache [P, rot])
  const Dims* pos = dim_at(in, 0);
  const Dims* q = dim_at(in, 1);
  const Dims* k = dim_at(in, 2);
  const Dims* cache = dim_at(in, 4);
  if (!pos || !q || !k || !cache || cache->size() != 2 || q->size() != 2 || k->size() != 2) return false;
  int64_t D = (*cache)[1];  // rot_dim: the head size unless the rotary is partial
  if (D <= 0 || q->back() % D != 0 || k->back() % D != 0) return false;
  s.T = numel(*pos);
  s.D = D;
  s.Hq = q->back() / D;
  s.Hkv = k->back() / D;
  return true;
}

bool kv_cache_shape(const ClassifyInput& in, Shape& s) {
  const Dims* key = dim_at(in, 0);
  if (key && key->size() == 3) {
    s.T = (*key)[0];
    s.Hkv = (*key)[1];
    s.D = (*key)[2];
    return true;
  }
  const Dims* pe = dim_at(in, 1);
  if (key && pe && key->size() == 2 && pe->size() == 2 && (*key)[0] == (*pe)[0]) {  // MLA: latent + rope part
    s.T = (*key)[0];
    s.Hkv = 1;
    s.D = key->back() + pe->back();
    return true;
  }
  return false;
}

bool moe_shape(const ClassifyInput& in, Shape& s) {
  // (hidden [T, H], w1 [E, 2I, H], w2 [E, H, I], topk_weights [T, k], topk_ids [T, k], ...)
  const Dims* x = nth_with_rank(in, 2, 0);
  const Dims* w1 = nth_with_rank(in, 3, 0);
  const Dims* w2 = nth_with_rank(in, 3, 1);
  if (!x || !w1 || !w2) return false;
  int64_t T = (*x)[0], H = (*x)[1], E = (*w1)[0];
  if ((*w1)[2] != H || (*w2)[0] != E || (*w2)[1] != H) return false;
  s.T = T;
  s.H = H;
  s.E = E;
  s.I = (*w2)[2];
  const Dims* tk = nth_with_rank(in, 2, 1);
  if (tk && (*tk)[0] == T && (*tk)[1] <= E) s.topk = (*tk)[1];
  return true;
}

// Ranks of a custom all-reduce: the last template argument of cross_device_reduce_*stage<T, ngpus>.
int64_t ranks_from_name(std::string_view k) {
  size_t p = k.find("cross_device_reduce_");
  if (p == npos) return 0;
  size_t lt = k.find('<', p), gt = k.find('>', p);
  if (lt == npos || gt == npos || gt < lt) return 0;
  size_t comma = k.rfind(',', gt);
  if (comma == npos || comma < lt) return 0;
  size_t i = comma + 1;
  while (i < gt && (k[i] == ' ' || k[i] == '(' || is_alpha(k[i]) || k[i] == ')')) ++i;
  int64_t v = 0;
  while (i < gt && is_digit(k[i]) && v < 1000) v = v * 10 + (k[i++] - '0');
  return (i == gt && v > 0) ? v : 0;
}

double elem_bytes(const ClassifyInput& in, std::optional<Dtype> dt) {
  if (auto d = dtype_from_inputs(in.input_types)) return dtype_bytes(*d);
  return dt ? dtype_bytes(*dt) : 2.0;
}

// Reductions (aten::mean, sum, amax, argmax, any, ...) read their input and write far less.
bool is_reduction(std::string_view b) {
  for (std::string_view r : {"mean", "sum", "amax", "amin", "max", "min", "argmax", "argmin", "any", "all", "prod",
                             "norm", "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "logsumexp"})
    if (b == r) return true;
  return false;
}

// The bytes a memory-bound op moves, as the copy a kernel of `bytes` is (it reads and writes
// `bytes`): the largest tensor among the inputs for a unary or broadcasting op; the index's rows
// for a gather (gather, index, index_select along a non-leading dim); the inputs together for a
// concatenation (a TensorList's tensors are consecutive inputs); half the input for a reduction,
// which reads it once and writes a sliver. 0 when no input has a size.
int64_t moved_bytes(std::string_view b, const ClassifyInput& in, std::optional<Dtype> dt) {
  const double eb = elem_bytes(in, dt);
  double elems = 0;
  if (b == "cat" || b == "stack" || b == "concat" || b == "_cat") {
    for (const auto& d : in.input_dims)
      if (!d.empty() && sane(d)) elems += double(numel(d));
  } else if (b == "gather" || b == "index_select") {  // (self, dim, index): the output has the index's size
    const Dims* self = dim_at(in, 0);
    const Dims* idx = dim_at(in, 2);
    if (!self || !idx || idx->empty()) return 0;
    elems = b == "gather" || self->size() <= 1 ? double(numel(*idx))
                                               : double(numel(*idx)) * double(prod(*self, 1, self->size()));
  } else if (b == "index") {  // (self, indices...): each index picks rows of self
    const Dims* self = dim_at(in, 0);
    const Dims* idx = dim_at(in, 1);
    if (!self || !idx || self->empty() || idx->empty()) return 0;
    elems = double(numel(*idx)) * double(prod(*self, 1, self->size()));
  } else {
    for (const auto& d : in.input_dims)
      if (!d.empty() && sane(d)) elems = std::max(elems, double(numel(d)));
    if (is_reduction(b)) elems /= 2;
  }
  const double bytes = elems * eb;
  return bytes >= 1 && bytes < double(kMaxDim) ? int64_t(bytes) : 0;
}

std::optional<Shape> shape_for(Op& op, Family family, Fop fop, std::string_view op_base, const ClassifyInput& in,
                               std::string_view key, std::optional<Dtype> dt) {
  if (in.input_dims.empty() && family != Family::communication) return std::nullopt;
  Shape s;
  bool ok = false;
  switch (family) {
    case Family::gemm:
      if (fop_is_gemm(fop) && (op == Op::gemm || op == Op::bmm)) ok = gemm_shape(fop, in, op, s);
      break;
    case Family::attention:
      if (fop_is_attention(fop) && op != Op::unknown) ok = attention_shape(fop, op_base, in, op, s);
      break;
    case Family::norm:
      if (fop == Fop::rmsnorm || fop == Fop::fused_add_rmsnorm || fop == Fop::layernorm) ok = rows_width(in, s.T, s.H);
      break;
    case Family::moe:
      if (fop == Fop::moe && op == Op::moe) ok = moe_shape(in, s);
      break;
    case Family::communication:
      // Bytes only from a communication op's inputs (traces do misattribute kernels to ops).
      if (fop_is_comm(fop) || fop == Fop::none || fop == Fop::other)
        if (const Dims* d = nth_with_rank(in, 0)) s.bytes = int64_t(double(numel(*d)) * elem_bytes(in, dt));
      s.ranks = ranks_from_name(key);
      ok = s.bytes > 0 || s.ranks > 0;
      break;
    case Family::elementwise:
      switch (op) {
        case Op::silu_mul:
        case Op::gelu_mul:
          if (fop == Fop::silu_mul || fop == Fop::gelu_mul) ok = act_mul_shape(in, s);
          break;
        case Op::softmax:
          if (fop == Fop::softmax) ok = rows_width(in, s.T, s.V);
          break;
        case Op::rotary:
          if (fop == Fop::rotary) ok = rotary_shape(in, s);
          break;
        case Op::kv_cache_write:
          if (fop == Fop::kv_cache) ok = kv_cache_shape(in, s);
          break;
        case Op::embedding:
          if (fop == Fop::embedding || op_base == "index_select") {
            // embedding(weight [V, H], indices) or index_select(weight, 0, index)
            const Dims* w = dim_at(in, 0);
            const Dims* idx = dim_at(in, fop == Fop::embedding ? 1 : 2);
            if (w && idx && w->size() == 2 && !idx->empty()) {
              s.V = (*w)[0];
              s.H = (*w)[1];
              s.T = numel(*idx);
              ok = true;
            }
          }
          break;
        case Op::add:
          if (fop == Fop::binary || fop == Fop::other) {
            // The larger operand (a broadcast one, x * weight, is the smaller).
            const Dims* d = nullptr;
            for (const auto& x : in.input_dims)
              if (!x.empty() && sane(x) && (!d || numel(x) > numel(*d))) d = &x;
            if (d) {
              s.T = d->size() >= 2 ? prod(*d, 0, d->size() - 1) : 1;
              s.H = d->back();
              ok = true;
            }
          }
          break;
        case Op::copy:
        case Op::unknown:
          // Any other memory-bound op (unary, compare, reduction, gather, cat), as the bytes it moves.
          if (fop == Fop::copy || fop == Fop::binary || fop == Fop::other) {
            s.bytes = moved_bytes(op_base, in, dt);
            ok = s.bytes > 0;
            if (ok) op = Op::copy;
          }
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
  if (!ok) return std::nullopt;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Tile: orientation, split-K factor and persistence from the grid.

int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

void finish_tile(Classification& c, const TileNameInfo& info, const ClassifyInput& in, std::string& notes) {
  TileConfig t = *info.tile;
  if (info.column_major) {
    std::swap(t.tile_m, t.tile_n);
    std::swap(t.cluster_m, t.cluster_n);
    c.tile_transposed = true;
    notes += "; tile swapped from cuBLAS column-major to row-major";
  }
  if (info.split_k) notes += "; name marks split-K";
  if (info.two_cta) notes += "; 2-CTA MMA";
  // The grid says how the output tiles were spread: more CTAs than tiles under a split-K name is
  // the split factor; fewer CTAs than tiles means a persistent kernel looping over tiles.
  if (c.shape_complete && c.shape && in.launch && in.launch->known() && !info.two_cta && t.tile_m > 0 && t.tile_n > 0 &&
      (c.op == Op::gemm || c.op == Op::bmm)) {
    const Shape& s = *c.shape;
    const int64_t tm = whole_clusters(ceil_div(s.M, t.tile_m), t.cluster_m);
    const int64_t tn = whole_clusters(ceil_div(s.N, t.tile_n), t.cluster_n);
    double tiles_d = double(tm) * double(tn) * double(c.op == Op::bmm ? std::max<int64_t>(s.Bt, 1) : 1);
    const auto& g = in.launch->grid;
    bool grid_ok = g[0] > 0 && g[0] < (int64_t(1) << 31) && g[1] >= 0 && g[1] < 65536 && g[2] >= 0 && g[2] < 65536;
    int64_t tiles = tiles_d < double(int64_t(1) << 50) ? int64_t(tiles_d) : 0;
    int64_t ctas = grid_ok ? in.launch->ctas() : 0;
    if (tiles > 0 && ctas > 0) {
      if (info.split_k && ctas > tiles && ctas % tiles == 0 && ctas / tiles <= 64) {
        t.split_k = int(ctas / tiles);
        notes += "; split-K x" + std::to_string(t.split_k) + " from the grid";
      } else if (ctas < tiles) {
        t.stream_k = true;
        notes += "; persistent (grid " + std::to_string(ctas) + " < " + std::to_string(tiles) + " tiles)";
      }
    }
  }
  c.tile = t;
}

}  // namespace

Classification classify_kernel(const ClassifyInput& in) {
  Classification c;
  LowerBuf<kKeyLen> lowered(in.kernel_name);
  const Key k(lowered.sv);
  LowerBuf<160> fop_key(in.framework_op);
  const Fop fop = classify_fop(fop_key.sv);

  Match m;
  if (k.sv.empty()) {
    m.reason = "empty kernel name";
  } else {
    m = match_name(k, fop);
  }
  bool from_fop = false;
  if (!m.matched) {
    Match f = match_fop(fop);
    if (f.matched) {
      m = f;
      from_fop = true;
    }
  }
  c.family = m.family;
  c.op = m.op;
  c.library = std::string(m.library);
  std::string notes;

  // Dtype: a strong token in the name, else the op's input types, else a weak (fp32) name token.
  NameDtype nd = dtype_from_name(k);
  std::optional<Dtype> nv = dtype_from_nvjet(k.sv);
  if (nv)
    c.dtype = nv;
  else if (nd.strong && !(*nd.strong == Dtype::fp16 && dtype_from_inputs(in.input_types) == Dtype::bf16))
    c.dtype = nd.strong;  // a name's "f16" is any 16-bit float to cuDNN and CUTLASS: bf16 inputs win
  else if (auto t = dtype_from_inputs(in.input_types))
    c.dtype = t;
  else
    c.dtype = nd.weak;

  // Shape from the launching op; it can also settle prefill vs decode and gemm vs bmm.
  if (c.family != Family::unknown) {
    Op op = c.op;
    c.shape = shape_for(op, c.family, fop, op_base_name(fop_key.sv), in, k.sv, c.dtype);
    if (c.shape) {
      if (op != c.op) {
        notes += "; op ";
        notes += op_name(c.op);
        notes += " -> ";
        notes += op_name(op);
        notes += " from the input dims";
        c.op = op;
      }
      c.shape_complete = !validate_shape(c.op, *c.shape).has_value();
      if (!c.shape_complete) notes += "; shape partial";
    }
  }

  // The tile comes from the name: only when the name itself was recognised.
  if ((c.family == Family::gemm || c.family == Family::moe) && !from_fop) {
    TileNameInfo info = parse_tile_name(in.kernel_name);
    if (info.tile) finish_tile(c, info, in, notes);
  }

  if (c.family == Family::unknown) {
    c.library = "unknown";
    c.reason = m.reason.empty() ? "no rule matched the kernel name or the framework op" : std::string(m.reason);
  } else {
    c.reason = std::string(m.reason) + notes;
    if (from_fop && !in.framework_op.empty()) {
      c.reason += " (";
      c.reason += in.framework_op.substr(0, 64);
      c.reason += ")";
    }
  }
  return c;
}

bool warp_level_mma_kernel(std::string_view kernel_name) {
  if (kernel_name.empty()) return false;
  std::string k(kernel_name.substr(0, 240));
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](std::string_view s) { return k.find(s) != std::string::npos; };
  // Kernels of Hopper or later: warpgroup MMA (wgmma, FlashAttention-3's Sm90, cuBLAS's nvjet).
  for (std::string_view newer : {"sm90", "sm100", "sm120", "wgmma", "nvjet", "hopper", "blackwell", "tcgen05"})
    if (has(newer)) return false;
  if (implementation_class(kernel_name) == kFlashAttention2Implementation) return true;
  for (std::string_view older : {"sm75", "sm80", "sm86", "sm89", "cutlass_75", "cutlass_80", "ampere_", "turing_",
                                 "s16816", "s1688", "h16816", "h1688", "i16832", "i8816"})
    if (has(older)) return true;
  return false;
}

std::string implementation_class_name(int implementation) {
  switch (implementation) {
    case 0:
      return "engine default";
    case kFlashAttention2Implementation:
      return "FlashAttention-2";
    case kCudnnAttentionImplementation:
      return "cuDNN";
    case kSarathiImplementation:
      return "Sarathi-Serve";
    case kTritonAttentionImplementation:
      return "Triton";
    case kTrtllmAttentionImplementation:
      return "TensorRT-LLM";
  }
  return "class " + std::to_string(implementation);
}

int implementation_class(std::string_view kernel_name) {
  if (kernel_name.empty()) return 0;
  if (kernel_name.starts_with(kSarathiKernelPrefix)) return kSarathiImplementation;
  std::string k(kernel_name.substr(0, 160));
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k.find("vllm2023_") != std::string::npos) return kSarathiImplementation;
  auto has = [&](std::string_view s) { return k.find(s) != std::string::npos; };
  if (has("flash_fwd") && !has("mla")) return kFlashAttention2Implementation;
  if (has("cudnn") && (has("sdpa") || has("fmha") || has("flash"))) return kCudnnAttentionImplementation;
  // The names match_attention gives to Triton's and TensorRT-LLM's attention kernels.
  if (k.starts_with("_fwd_kernel") || k.starts_with("_fwd_grouped_kernel_stage") || has("unified_attention"))
    return kTritonAttentionImplementation;
  if (has("fmhasm") || has("fmhakernel") || has("fmha_v2") || has("xqa")) return kTrtllmAttentionImplementation;
  return 0;
}

}  // namespace perfloom
