#pragma once
// One analytical calculator per kernel family; registry.cpp dispatches on the op's family.
#include <stdexcept>

#include "model/analysis.h"

namespace perfloom {

// Thrown when a kernel cannot run on a GPU as described (fp8 on Ampere) or its shape is invalid.
class UnsupportedKernel : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Analysis analyze_gemm(const KernelDesc& k, const GpuSpec& gpu);

// Cycles of an attention kernel that its pipes do not overlap: the CTAs' setup, the first Q and K/V
// tiles' loads before any MMA, the epilogue (O normalised and stored), a split-KV decode's combine.
// Measured on our collector's DRAM-bound decodes (DRAM time over twice the tensor time; 92 / 75 / 90
// kernels under 20 / 60 / 200 us on the H200): time minus the achievable DRAM time is 6.1 / 6.5 /
// 5.8 us on the H100 SXM and 6.5 / 7.2 / 8.6 us on the H200 (median), the same on both although
// their DRAM differs 1.49x: with the launch floor (0.8 us) taken off, ~9,500-10,500 cycles. Without
// it a held-out Hopper GPU gets the other's efficiency for a length it does not have (H100 held out:
// our FlashAttention-2 and cuDNN kernels 1.08-1.17x over-predicted at the median). Held-out attention
// MAPE with 5,000 / 9,000 / 14,000 cycles: H100 16.9 / 15.4 / 15.5% (none: 17.5%; our kernels 15.1 /
// 7.0 / 7.9%, none 16.2%), H200 6.2 / 5.8 / 5.4% (none: 8.0%).
inline constexpr double kAttentionFixedCycles = 9000;
Analysis analyze_attention(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_norm(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_elementwise(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_moe(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_communication(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_unknown(const KernelDesc& k, const GpuSpec& gpu);

// The entry point: validates the shape and the GPU's support for the dtype, then dispatches.
Analysis analyze_kernel(const KernelDesc& k, const GpuSpec& gpu);

}  // namespace perfloom
