#include "model/sim/engine.h"

#include <charconv>

namespace perfloom::sim {

namespace {

struct Cc {
  int major = 0, minor = 0;
};

Cc parse_cc(const std::string& cc) {
  Cc out;
  const char* end = cc.data() + cc.size();
  auto r = std::from_chars(cc.data(), end, out.major);
  if (r.ec == std::errc() && r.ptr < end && *r.ptr == '.') std::from_chars(r.ptr + 1, end, out.minor);
  return out;
}

std::string sm(const Cc& c) { return "sm" + std::to_string(c.major * 10 + c.minor); }

}  // namespace

std::optional<ServingEngine> parse_serving_engine(std::string_view s) {
  if (s == "vllm") return ServingEngine::vllm;
  if (s == "sglang") return ServingEngine::sglang;
  return std::nullopt;
}

std::string_view serving_engine_name(ServingEngine e) { return e == ServingEngine::vllm ? "vllm" : "sglang"; }

AttentionChoice engine_attention(ServingEngine engine, const GpuSpec& gpu, int64_t head_dim, bool mla) {
  const std::string who = engine == ServingEngine::vllm ? "vLLM" : "SGLang";
  if (mla) return {AttentionImpl::flash, who + " runs its MLA kernels (not told apart by GPU)"};
  if (gpu.vendor != "nvidia")
    return {AttentionImpl::flash, who + " on " + gpu.vendor + ": the engine's own attention (not told apart)"};
  const Cc c = parse_cc(gpu.compute_capability);
  const std::string arch = sm(c);
  if (engine == ServingEngine::vllm) {
    if (c.major == 10)
      return {AttentionImpl::trtllm, "vLLM on " + arch + ": FlashInfer, which runs TensorRT-LLM's FMHA kernels there"};
    if (c.major >= 8)
      return {AttentionImpl::flash,
              "vLLM on " + arch + ": FlashAttention (" + (c.major == 9 ? "FA3" : "FA2") + ")"};
    return {AttentionImpl::flash, "vLLM on " + arch + ": FlashInfer (FlashAttention needs sm80)"};
  }
  if (c.major == 10) {
    if (head_dim == 64 || head_dim == 128 || head_dim == 256)
      return {AttentionImpl::trtllm, "SGLang on " + arch + ": TensorRT-LLM MHA (trtllm_mha)"};
    return {AttentionImpl::triton, "SGLang on " + arch + ": Triton (TensorRT-LLM MHA has no head dim " +
                                       std::to_string(head_dim) + ")"};
  }
  if (c.major >= 11 || c.major < 8) return {AttentionImpl::triton, "SGLang on " + arch + ": Triton attention"};
  return {AttentionImpl::flash, "SGLang on " + arch + ": FlashAttention"};
}

AttentionChoice resolve_attention(AttentionImpl requested, ServingEngine engine, const GpuSpec& gpu,
                                  int64_t head_dim, bool mla) {
  if (requested == AttentionImpl::serving) return engine_attention(engine, gpu, head_dim, mla);
  return {requested, "--attention-impl " + std::string(attention_impl_name(requested))};
}

}  // namespace perfloom::sim
