#include "model/kernel.h"

#include <algorithm>
#include <map>

#include "model/classify/kernel_classifier.h"
#include "model/classify/tile_from_name.h"

namespace perfloom {

namespace {
struct OpInfo {
  Op op;
  std::string_view name;
  Family family;
  std::vector<std::string_view> columns;
};

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> t = {
      {Op::gemm, "gemm", Family::gemm, {"M", "N", "K"}},
      {Op::bmm, "bmm", Family::gemm, {"Bt", "M", "N", "K"}},
      {Op::attn_prefill, "attn_prefill", Family::attention, {"B", "S", "Hq", "Hkv", "D"}},
      {Op::attn_decode, "attn_decode", Family::attention, {"B", "L", "Hq", "Hkv", "D"}},
      {Op::rmsnorm, "rmsnorm", Family::norm, {"T", "H"}},
      {Op::fused_add_rmsnorm, "fused_add_rmsnorm", Family::norm, {"T", "H"}},
      {Op::layernorm, "layernorm", Family::norm, {"T", "H"}},
      {Op::fused_add_layernorm, "fused_add_layernorm", Family::norm, {"T", "H"}},
      {Op::silu_mul, "silu_mul", Family::elementwise, {"T", "I"}},
      {Op::gelu_mul, "gelu_mul", Family::elementwise, {"T", "I"}},
      {Op::add, "add", Family::elementwise, {"T", "H"}},
      {Op::softmax, "softmax", Family::elementwise, {"T", "V"}},
      {Op::rotary, "rotary", Family::elementwise, {"T", "Hq", "Hkv", "D"}},
      {Op::embedding, "embedding", Family::elementwise, {"T", "H", "V"}},
      {Op::kv_cache_write, "kv_cache_write", Family::elementwise, {"T", "Hkv", "D"}},
      {Op::copy, "copy", Family::elementwise, {"bytes"}},
      {Op::moe, "moe", Family::moe, {"T", "E", "topk", "H", "I"}},
      {Op::allreduce, "allreduce", Family::communication, {"bytes", "ranks"}},
      {Op::allgather, "allgather", Family::communication, {"bytes", "ranks"}},
      {Op::reducescatter, "reducescatter", Family::communication, {"bytes", "ranks"}},
      {Op::sendrecv, "sendrecv", Family::communication, {"bytes", "ranks"}},
      {Op::alltoall, "alltoall", Family::communication, {"bytes", "ranks"}},
      {Op::unknown, "unknown", Family::unknown, {}},
  };
  return t;
}

const OpInfo& info(Op op) {
  for (const auto& i : op_table())
    if (i.op == op) return i;
  return op_table().back();
}
}  // namespace

std::string_view family_name(Family f) {
  switch (f) {
    case Family::gemm:
      return "gemm";
    case Family::attention:
      return "attention";
    case Family::norm:
      return "norm";
    case Family::elementwise:
      return "elementwise";
    case Family::moe:
      return "moe";
    case Family::communication:
      return "communication";
    case Family::unknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<Family> parse_family(std::string_view s) {
  for (Family f : {Family::gemm, Family::attention, Family::norm, Family::elementwise, Family::moe,
                   Family::communication, Family::unknown})
    if (family_name(f) == s) return f;
  return std::nullopt;
}

std::string_view op_name(Op op) { return info(op).name; }

std::optional<Op> parse_op(std::string_view s) {
  for (const auto& i : op_table())
    if (i.name == s) return i.op;
  return std::nullopt;
}

Family family_of(Op op) { return info(op).family; }

std::string_view pipe_name(Pipe p) {
  switch (p) {
    case Pipe::tensor:
      return "tensor";
    case Pipe::fma:
      return "fma";
    case Pipe::sfu:
      return "sfu";
    case Pipe::dram:
      return "dram";
    case Pipe::l2:
      return "l2";
    case Pipe::smem:
      return "smem";
    case Pipe::launch:
      return "launch";
    case Pipe::link:
      return "link";
  }
  return "?";
}

const std::vector<std::string_view>& shape_columns(Op op) { return info(op).columns; }

int64_t* shape_field(Shape& s, std::string_view n) {
  static const std::map<std::string_view, int64_t Shape::*> fields = {
      {"M", &Shape::M},       {"N", &Shape::N},         {"K", &Shape::K},        {"Bt", &Shape::Bt},   {"B", &Shape::B},
      {"S", &Shape::S},       {"L", &Shape::L},         {"Hq", &Shape::Hq},      {"Hkv", &Shape::Hkv}, {"D", &Shape::D},
      {"T", &Shape::T},       {"H", &Shape::H},         {"I", &Shape::I},        {"V", &Shape::V},     {"E", &Shape::E},
      {"topk", &Shape::topk}, {"bytes", &Shape::bytes}, {"ranks", &Shape::ranks}};
  auto it = fields.find(n);
  return it == fields.end() ? nullptr : &(s.*(it->second));
}

int64_t shape_value(const Shape& s, std::string_view n) { return *shape_field(const_cast<Shape&>(s), n); }

int64_t max_dimension(std::string_view column) {
  if (column == "S" || column == "L") return kMaxSequence;
  if (column == "bytes") return kMaxMessageBytes;
  if (column == "ranks") return kMaxRanks;
  return kMaxDimension;
}

std::optional<std::string> validate_shape(Op op, const Shape& s) {
  if (op == Op::unknown) return std::string("unknown op");
  for (auto c : shape_columns(op)) {
    if (op == Op::attn_prefill && !s.seqlens.empty() && (c == "B" || c == "S")) continue;
    if (shape_value(s, c) <= 0)
      return std::string(op_name(op)) + " needs a positive " + std::string(c) + " (got " +
             std::to_string(shape_value(s, c)) + ")";
  }
  for (auto c : shape_columns(op)) {
    if (op == Op::attn_prefill && !s.seqlens.empty() && (c == "B" || c == "S")) continue;
    const int64_t v = shape_value(s, c), most = max_dimension(c);
    if (v > most)
      return std::string(op_name(op)) + "'s " + std::string(c) + " must be at most " + std::to_string(most) + " (got " +
             std::to_string(v) + ")";
  }
  if (s.seqlens.size() > static_cast<std::size_t>(kMaxDimension)) return "too many sequence lengths";
  if ((op == Op::attn_prefill || op == Op::attn_decode || op == Op::rotary) && s.Hq % s.Hkv != 0)
    return "Hq (" + std::to_string(s.Hq) + ") must be a multiple of Hkv (" + std::to_string(s.Hkv) + ")";
  if (op == Op::moe && s.topk > s.E) return "topk must not exceed E";
  if (op == Op::allreduce && s.ranks < 1) return "ranks must be at least 1";
  for (auto len : s.seqlens) {
    if (len <= 0) return "every sequence length must be positive";
    if (len > kMaxSequence)
      return "every sequence length must be at most " + std::to_string(kMaxSequence) + " (got " + std::to_string(len) +
             ")";
  }
  return std::nullopt;
}

std::string kernel_key(const KernelDesc& k, KernelKeyDetail detail) {
  std::string key;
  key.reserve(96);
  key += op_name(k.op);
  key += '|';
  key += dtype_name(k.dtype);
  for (auto c : shape_columns(k.op)) {
    key += '|';
    key += std::to_string(shape_value(k.shape, c));
  }
  if (k.act_quant) key += "|q";
  if (detail == KernelKeyDetail::shape) return key;
  key += k.shape.causal ? "|c" : "|n";
  for (auto l : k.shape.seqlens) key += ',' + std::to_string(l);
  if (k.tile) {
    const TileConfig& t = *k.tile;
    for (int v : {t.tile_m, t.tile_n, t.tile_k, t.cluster_m, t.cluster_n, t.stages, t.split_k, int(t.stream_k)})
      key += ':' + std::to_string(v);
  }
  if (k.launch) {
    for (auto v : k.launch->grid) key += '/' + std::to_string(v);
    for (auto v : k.launch->block) key += '/' + std::to_string(v);
    key += '/' + std::to_string(k.launch->registers_per_thread) + '/' + std::to_string(k.launch->shared_memory_bytes);
  }
  const bool named_attention_tile =
      (k.op == Op::attn_prefill || k.op == Op::attn_decode) && attention_tile_from_name(k.name).has_value();
  if (k.op == Op::unknown || (k.tile && !k.name.empty()) || named_attention_tile)
    key += '#' + k.name;
  else if (const int impl = implementation_class(k.name))
    key += "#impl" + std::to_string(impl);  // a feature
  return key;
}

}  // namespace perfloom
