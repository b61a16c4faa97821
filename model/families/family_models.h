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
Analysis analyze_attention(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_norm(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_elementwise(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_moe(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_communication(const KernelDesc& k, const GpuSpec& gpu);
Analysis analyze_unknown(const KernelDesc& k, const GpuSpec& gpu);

// The entry point: validates the shape and the GPU's support for the dtype, then dispatches.
Analysis analyze_kernel(const KernelDesc& k, const GpuSpec& gpu);

}  // namespace perfloom
