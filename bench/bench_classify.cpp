// Speed of the kernel classifier, which runs once per kernel of a trace (100k-kernel traces are common):
// microseconds per classify_kernel call over typical names and a 3,000-character template name.
// perfloom-bench-classify [ROUNDS]  (target: < 5 us per call in an optimised build)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/classify/kernel_classifier.h"

using namespace perfloom;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (rounds <= 0) {
    std::fprintf(stderr, "perfloom-bench-classify: ROUNDS must be a positive number\n");
    return 2;
  }
  const char* names[] = {
      "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT",
      "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, (unsigned "
      "int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, (unsigned int)1, "
      "(flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, "
      "flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillPagedParams<__nv_bfloat16, "
      "__nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, "
      "__nv_bfloat16, int>)",
      "void vllm::rms_norm_kernel<c10::BFloat16, (int)8, (int)2, (bool)1>(T1 *, const T1 *, long, long, long, long, "
      "long, const T1 *, long, float, int, int)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
      "3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
      "fused_moe_kernel",
      "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
      "my_custom_kernel_xyz",
  };
  std::vector<ClassifyInput> inputs;
  for (const char* n : names) {
    ClassifyInput in;
    in.kernel_name = n;
    in.framework_op = "aten::linear";
    in.input_dims = {{1, 4096}, {3336, 4096}, {}};
    in.input_types = {"c10::BFloat16", "c10::BFloat16", ""};
    LaunchArgs launch;
    launch.grid = {4, 21, 1};
    launch.block = {384, 1, 1};
    in.launch = launch;
    inputs.push_back(in);
  }
  ClassifyInput longest;
  longest.kernel_name = "void cutlass::device_kernel<" + std::string(3000, 'a') + ">";
  inputs.push_back(longest);

  std::size_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    for (const auto& in : inputs) sink += classify_kernel(in).reason.size();
  const auto t1 = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / double(rounds * inputs.size());
  std::printf("classify_kernel: %.3f us per call over %zu calls (sink %zu)\n", us, std::size_t(rounds) * inputs.size(),
              sink);
  return 0;
}
