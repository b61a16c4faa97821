#pragma once
// Maps a profiled kernel (its name, launch arguments, and the framework op that launched it with
// that op's input shapes) to a kernel family, an op, a dtype, a shape and the GEMM tile it used
// (issue 3, "Kernel classification"). Rules are hand-written substring tests over the first part
// of the name, in a fixed order (most specific first); the first rule that matches wins and says
// so in `reason`. When the name is not recognised but the framework op is, the op decides.
// Unknown kernels stay Family::unknown / library "unknown"; their launch arguments are the caller's.
//
// Cost: a few microseconds per call at most (it runs over every kernel of a trace); see the test
// ClassifierSpeed for the measured figure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel.h"

namespace perfloom {

struct ClassifyInput {
  std::string kernel_name;                       // demangled or mangled, as a trace gives it
  std::optional<LaunchArgs> launch;              // grid, block, regs, smem
  std::string framework_op;                      // launching op: "aten::mm", "_C::rms_norm", ...
  std::vector<std::vector<int64_t>> input_dims;  // torch.profiler record_shapes "Input Dims"
  std::vector<std::string> input_types;          // "c10::BFloat16", "float", "c10::Half", ...
  std::vector<std::string> concrete_inputs;      // "Concrete Inputs": scalar arguments as text ("True", "0"), "" else
};

struct Classification {
  Family family = Family::unknown;
  Op op = Op::unknown;
  std::optional<Dtype> dtype;      // from the name, else from the input types
  std::optional<Shape> shape;      // what the op's input dims give (see shape_complete)
  bool shape_complete = false;     // shape passes validate_shape(op, shape)
  std::optional<TileConfig> tile;  // from the name, in Shape's orientation (M = tokens)
  bool tile_transposed = false;    // the name's tile was column-major (cuBLAS) and got swapped
  std::string library;             // "cublas", "cutlass", "flash-attn", "flashinfer", "cudnn",
                                   // "pytorch", "vllm", "sglang", "triton", "nccl", "deepgemm",
                                   // "trtllm", "flashmla", "marlin", "unknown"
  std::string reason;              // one line: which rule matched
};

Classification classify_kernel(const ClassifyInput& in);

// Implementations whose speed differs from what a serving engine runs for the same op, so that the
// learned model tells them apart (feature `impl_class`):
//   0: unnamed kernels and every library not listed below: a kernel list or a simulated step
//      describes the serving engine's default kernel (FlashAttention: FA3 on Hopper, FA2 elsewhere;
//      FlashInfer, cuBLAS, ...);
//   1: FlashAttention-2 forward kernels (flash_fwd_kernel, flash_fwd_splitkv_kernel; PyTorch's SDPA
//      flash backend ships them), which serving engines replaced by FA3/FlashInfer on Hopper;
//   2: cuDNN's fused attention (PyTorch's SDPA cuDNN backend);
//   3: the norm, rotary, activation, residual-add and embedding kernels of Sarathi-Serve's
//      transformer layer (a 2023 vLLM fork), as Vidur's profiles time them; the importer names
//      them kSarathiKernelPrefix + Vidur's op ("sarathi::mlp_act"), since those rows carry no
//      kernel name of their own. Its SiLU-and-mul is vLLM's kernel of the time, one CTA per token
//      (what perfloom's collector version 1 copied and version 2 replaced); perfloom's latency
//      probe (tools/collector/latency_probe.cu) runs kernels of that design, named vllm2023_*,
//      on the H100 and H200 (which Vidur did not profile: the H200). With H100 held out and
//      without this class, Vidur's H100 SiLU-and-mul rows are predicted at 0.77x and its rotary
//      rows at 0.73x their measured time (median). As a class of their own, held-out norm /
//      elementwise MAPE goes 13.8 / 11.5% -> 10.4 / 9.1% (H200), 15.8 / 17.6% -> 15.3 / 16.5% (H100).
//   4: Triton attention kernels (SGLang's triton backend: _fwd_kernel, _fwd_grouped_kernel_stage1;
//      vLLM's TRITON_ATTN: kernel_unified_attention_*), what SGLang runs on consumer and
//      workstation Blackwell (sm120) and for head dims TensorRT-LLM's kernels lack on sm100;
//   5: TensorRT-LLM's FMHA kernels (fmhaSm100*, fmha_v2_*, XQA; FlashInfer's trtllm-gen backend,
//      SGLang's trtllm_mha), what vLLM (FlashInfer) and SGLang run on datacenter Blackwell (sm100).
// Measured on our H200: the same decode shape takes 770 us through FA2 and 484 us through cuDNN
// (tools/step_check/decode_attn_probe.py, data/step/decode_attn_probe_h200.csv).
inline constexpr std::string_view kSarathiKernelPrefix = "sarathi::";
inline constexpr int kFlashAttention2Implementation = 1;
inline constexpr int kCudnnAttentionImplementation = 2;
inline constexpr int kTritonAttentionImplementation = 4;
inline constexpr int kTrtllmAttentionImplementation = 5;
// Kernel names that implementation_class maps to each attention implementation, for kernels known
// only by their implementation: the step simulator's (model/sim/engine.h) and the rows of public
// tables that name only a kernel_source (storage/public_datasets.cpp).
inline constexpr std::string_view kFlashAttention2KernelName = "flash_fwd_kernel (FlashAttention-2)";
inline constexpr std::string_view kCudnnAttentionKernelName = "cudnn_sdpa (cuDNN fused attention)";
inline constexpr std::string_view kTritonAttentionKernelName = "_fwd_kernel (Triton attention)";
inline constexpr std::string_view kTrtllmAttentionKernelName = "fmhaKernel (TensorRT-LLM FMHA)";
inline constexpr int kSarathiImplementation = 3;  // implementation_class of kSarathiKernelPrefix names
int implementation_class(std::string_view kernel_name);
// "engine default", "FlashAttention-2", "cuDNN", "Sarathi-Serve", "Triton", "TensorRT-LLM"; "class N" beyond.
std::string implementation_class_name(int implementation);

// True for a tensor-core kernel written for sm75-sm89, which issues warp-level MMA (mma.sync) on
// any GPU it runs on: FlashAttention-2 (flash_fwd_kernel, flash_fwd_splitkv_kernel; not
// FlashAttention-3's Sm90 kernels), and kernels named for those architectures (cuDNN's
// ..._sdpa_sm80_flash_..., cutlass_80_*, sm80_xmma_*, ampere_*, turing_*, s16816gemm). On Hopper
// such a kernel reaches the measured mma.sync rate, not the warpgroup MMA's (Analysis::warp_level_mma).
bool warp_level_mma_kernel(std::string_view kernel_name);

}  // namespace perfloom
