// Kernel classification and tile parsing over kernel names seen in real LLM-serving traces.
// Names marked "verbatim" were copied from public profiler dumps (torch.profiler / nsys tables in
// public repositories: vLLM, SGLang, FlashInfer, TraceLens and per-model profiling notes); names
// marked "truncated" are cut where the dump cut them; "reconstructed" ones follow the template
// signature of the library source with typical arguments.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "model/classify/kernel_classifier.h"
#include "model/classify/tile_from_name.h"

using namespace perfloom;

namespace {

Classification classify(const std::string& name, const std::string& op = "",
                        std::vector<std::vector<int64_t>> dims = {}, std::vector<std::string> types = {},
                        std::optional<LaunchArgs> launch = std::nullopt) {
  ClassifyInput in;
  in.kernel_name = name;
  in.framework_op = op;
  in.input_dims = std::move(dims);
  in.input_types = std::move(types);
  in.launch = launch;
  return classify_kernel(in);
}

LaunchArgs grid(int64_t x, int64_t y, int64_t z, int64_t block = 128) {
  LaunchArgs a;
  a.grid = {x, y, z};
  a.block = {block, 1, 1};
  return a;
}

struct NameCase {
  const char* name;
  Family family;
  Op op;
  const char* library;
  std::optional<Dtype> dtype;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Family / op / library over real names.

TEST(KernelClassifier, RealKernelNames) {
  const NameCase cases[] = {
      // cuBLAS / cuBLASLt GEMMs
      {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"nvjet_sm90_tst_128x72_64x8_1x2_h_bz_splitK_TNT", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"nvjet_sm90_tst_192x208_64x4_2x1_v_bz_coopB_bias_TNT", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", Family::gemm, Op::gemm, "cublas", Dtype::fp16},
      {"nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT", Family::gemm, Op::gemm, "cublas", Dtype::fp8e4m3},
      {"nvjet_sm100_tst_256x128_64x5_2x2_2cta_h_bz_TNT", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"nvjet_sss_tf32_128x256_TNT", Family::gemm, Op::gemm, "cublas", Dtype::tf32},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
       "5x_cublas",
       Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"sm90_xmma_gemm_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas",
       Family::gemm, Op::gemm, "cublas", Dtype::fp32},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
       Family::gemm, Op::gemm, "cublas", Dtype::fp16},
      {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_tn", Family::gemm, Op::gemm, "cublas", Dtype::fp16},
      {"ampere_sgemm_128x64_tn", Family::gemm, Op::gemm, "cublas", Dtype::fp32},
      {"volta_sgemm_128x64_nn", Family::gemm, Op::gemm, "cublas", Dtype::fp32},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
       "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
       Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"void "
       "cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)",
       Family::gemm, Op::gemm, "cublas", Dtype::fp32},
      {"cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8_warpspecialized_"
       "pingpong_epi_tma",
       Family::gemm, Op::gemm, "cutlass", Dtype::fp16},
      {"void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, "
       "false>",
       Family::gemm, Op::gemm, "cublas", Dtype::bf16},
      {"internal::gemvx_kernel", Family::gemm, Op::gemm, "cublas", std::nullopt},
      {"void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*, float const*, "
       "float*, "
       "float const*, float const*)",
       Family::gemm, Op::unknown, "cublas", Dtype::fp32},
      {"cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>", Family::gemm, Op::unknown, "cublas",
       Dtype::bf16},
      {"deep_gemm::sm90_fp8_gemm_1d2d_impl<MajorK, 0,0,0, 1, 16, 16, 128, 128, 32, 16, 128, 128, 1, false, 132, "
       "GemmType::Normal, bf16, EpilogueIdentity>",
       Family::gemm, Op::gemm, "deepgemm", Dtype::fp8e4m3},
      {"void marlin::Marlin<(vllm::ScalarType)0, 256, 1, 8, 8, 4, false>", Family::gemm, Op::gemm, "marlin",
       std::nullopt},
      // Attention
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (i...", Family::attention,
       Op::attn_prefill, "flash-attn", std::nullopt},
      {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
       "cutlass::bfloat16_t>",
       Family::attention, Op::attn_decode, "flash-attn", Dtype::bf16},
      {"void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, (int)4, "
       "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)64, (int)128, ",
       Family::attention, Op::unknown, "flash-attn", Dtype::bf16},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_tra", Family::attention, Op::attn_prefill,
       "pytorch", std::nullopt},
      {"void "
       "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
       "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, 128, "
       "cutlass::bfloat16_t, float, cutlass::arch::Sm90, fal",
       Family::attention, Op::attn_prefill, "flash-attn", Dtype::bf16},
      {"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, "
       "(unsigned "
       "int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, (unsigned int)1, "
       "(flashinfer::PosEncodingMode",
       Family::attention, Op::attn_prefill, "flashinfer", std::nullopt},
      {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned int)2, (unsigned "
       "int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, "
       "flashinfer::DefaultAttention<(bool)0, "
       "(bool)0, (bool)0, (bool)0>,",
       Family::attention, Op::attn_decode, "flashinfer", std::nullopt},
      {"_ZN10flashinfer33BatchDecodeWithPagedKVCacheKernelILNS_15PosEncodingModeE0ELj2ELj1ELj8ELj16ELj1ELj4E",
       Family::attention, Op::attn_decode, "flashinfer", std::nullopt},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x", Family::attention,
       Op::attn_prefill, "cudnn", Dtype::fp16},
      {"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", Family::attention,
       Op::attn_prefill, "cudnn", Dtype::fp16},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", Family::attention, Op::attn_prefill, "pytorch", Dtype::bf16},
      {"fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAbForGen",
       Family::attention, Op::attn_decode, "trtllm", Dtype::bf16},
      {"fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvSlidingOrChunkedCausalP64VarSeqQ128Kv128PersistentContext",
       Family::attention, Op::attn_prefill, "trtllm", Dtype::bf16},
      {"void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, "
       "false, 512>",
       Family::attention, Op::attn_decode, "vllm", Dtype::bf16},
      {"void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>", Family::attention, Op::unknown,
       "vllm", Dtype::bf16},
      {"kernel_unified_attention_2d", Family::attention, Op::attn_prefill, "triton", std::nullopt},
      {"kernel_unified_attention_3d", Family::attention, Op::attn_decode, "triton", std::nullopt},
      {"reduce_segments", Family::attention, Op::unknown, "triton", std::nullopt},
      {"void flashinfer::MergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16>", Family::attention,
       Op::unknown, "flashinfer", Dtype::bf16},
      {"_fwd_grouped_kernel_stage1", Family::attention, Op::attn_decode, "triton", std::nullopt},
      {"flash_fwd_splitkv_mla_kernel", Family::attention, Op::attn_decode, "flashmla", std::nullopt},
      // Norms
      {"void vllm::rms_norm_kernel<c10::BFloat16, (int)8, (int)2, (bool)1>(T1 *, const T1 *, long, long, long, long, "
       "long, const T1 *, long, float, int, int)",
       Family::norm, Op::rmsnorm, "vllm", Dtype::bf16},
      {"std::enable_if<(bool)1 && vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
       "vllm::fused_add_rms_norm_kernel<c10::BFloat16, (int)8>(c10::BFloat16 *, long, c10::BFloat16 *, const "
       "c10::BFloat16 *, float, int, int)",
       Family::norm, Op::fused_add_rmsnorm, "vllm", Dtype::bf16},
      {"void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, "
       "__nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
       Family::norm, Op::fused_add_rmsnorm, "flashinfer", Dtype::bf16},
      {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", Family::norm, Op::rmsnorm, "triton", std::nullopt},
      {"triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_11", Family::norm, Op::rmsnorm, "triton", std::nullopt},
      {"triton_red_fused_native_layer_norm_0", Family::norm, Op::layernorm, "triton", std::nullopt},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
       "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
       Family::norm, Op::layernorm, "pytorch", Dtype::bf16},
      // Elementwise
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, (bool)1>(T1 *, cons...",
       Family::elementwise, Op::silu_mul, "vllm", Dtype::bf16},
      {"void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(silu(float const&))>(__nv_bfloat16*, "
       "__nv_bfloat16 const*, int)",
       Family::elementwise, Op::silu_mul, "flashinfer", Dtype::bf16},
      {"triton_poi_fused_mul_silu_slice_0", Family::elementwise, Op::silu_mul, "triton", std::nullopt},
      {"void vllm::rotary_embedding_kernel<c10::BFloat16, (bool)1>(const long *, T1 *, T1 *, const T1 *, in...",
       Family::elementwise, Op::rotary, "vllm", Dtype::bf16},
      {"void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheHeadParallelismKernel<(bool)0,", Family::elementwise,
       Op::rotary, "flashinfer", std::nullopt},
      {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::F...", Family::elementwise,
       Op::kv_cache_write, "vllm", Dtype::bf16},
      {"void vllm::reshape_and_cache_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>",
       Family::elementwise, Op::kv_cache_write, "vllm", Dtype::bf16},
      {"void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous "
       "namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
       Family::elementwise, Op::softmax, "pytorch", Dtype::fp32},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
       Family::elementwise, Op::add, "pytorch", Dtype::bf16},
      {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
       "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >",
       Family::elementwise, Op::add, "pytorch", Dtype::bf16},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
       "float>, unsigned int, float, 4> >",
       Family::elementwise, Op::unknown, "pytorch", Dtype::fp32},
      {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, "
       "unsigned int, 2, 128, 1>",
       Family::elementwise, Op::copy, "pytorch", std::nullopt},
      {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
       "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}",
       Family::elementwise, Op::copy, "pytorch", Dtype::fp32},
      {"void sglang::per_token_group_quant_flat_kernel<QuantTrait<bf16, fp8_e4m3, 128, false, false, true, false>, "
       "true>",
       Family::elementwise, Op::copy, "sglang", Dtype::bf16},
      // MoE
      {"fused_moe_kernel", Family::moe, Op::moe, "triton", std::nullopt},
      {"void moe_align_block_size_kernel<int>(const T1 *, int *, ...", Family::moe, Op::unknown, "vllm", std::nullopt},
      {"void count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long)", Family::moe, Op::unknown,
       "vllm", std::nullopt},
      {"void topkGatingSoftmax<__nv_bfloat16, 8, 128, 4, 16>(cons...", Family::moe, Op::unknown, "vllm", Dtype::bf16},
      {"void vllm::moe::topkGatingSoftmax<4, 8, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, "
       "int, int)",
       Family::moe, Op::unknown, "vllm", Dtype::fp32},
      {"moe_sum_reduce_warp_per_token_vec_kernel", Family::moe, Op::unknown, "vllm", std::nullopt},
      {"void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 128u, 128u, 8u, 8u, 1u, 1u, (deep_gemm::GemmType)1>"
       "(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
       Family::moe, Op::moe, "deepgemm", Dtype::fp8e4m3},
      // Communication
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Family::communication,
       Op::allreduce, "nccl", Dtype::bf16},
      {"ncclKernel_AllGather_RING_LL_Sum_int8_t", Family::communication, Op::allgather, "nccl", Dtype::int8},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
       Family::communication, Op::reducescatter, "nccl", Dtype::bf16},
      {"ncclDevKernel_SendRecv", Family::communication, Op::sendrecv, "nccl", std::nullopt},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
       "__nv_bfloat16*, int, int)",
       Family::communication, Op::allreduce, "vllm", Dtype::bf16},
      {"void sglang::cross_device_reduce_1stage<__half, 8>(sglang::RankData*, sglang::RankSignals, sglang::Signal*, "
       "__half*, int, int)",
       Family::communication, Op::allreduce, "sglang", Dtype::fp16},
      {"void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_twoshot_sync<(flashinfer::t...",
       Family::communication, Op::allreduce, "flashinfer", std::nullopt},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Classification r = classify(c.name);
    EXPECT_EQ(family_name(r.family), family_name(c.family)) << r.reason;
    EXPECT_EQ(op_name(r.op), op_name(c.op)) << r.reason;
    EXPECT_EQ(r.library, c.library) << r.reason;
    if (c.dtype) {
      ASSERT_TRUE(r.dtype.has_value()) << r.reason;
      EXPECT_EQ(dtype_name(*r.dtype), dtype_name(*c.dtype));
    }
    EXPECT_FALSE(r.reason.empty());
    ++n;
  }
  EXPECT_GE(n, 40);
}

TEST(KernelClassifier, RealNamesCarryTheirTile) {
  // The classified tile is in Shape's orientation: cuBLAS (column-major) names get swapped.
  Classification r = classify("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
  ASSERT_TRUE(r.tile);
  EXPECT_TRUE(r.tile_transposed);
  EXPECT_EQ(r.tile->tile_m, 8);
  EXPECT_EQ(r.tile->tile_n, 64);
  EXPECT_EQ(r.tile->tile_k, 64);
  EXPECT_EQ(r.tile->stages, 16);
  EXPECT_EQ(r.tile->cluster_m, 1);
  EXPECT_EQ(r.tile->cluster_n, 4);

  Classification c =
      classify("cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8");
  ASSERT_TRUE(c.tile);
  EXPECT_FALSE(c.tile_transposed);
  EXPECT_EQ(c.tile->tile_m, 128);
  EXPECT_EQ(c.tile->cluster_m, 2);
}

// ---------------------------------------------------------------------------------------------
// Tiles as the names spell them.

struct TileCase {
  const char* name;
  int m, n, k, stages, cluster_m, cluster_n;
  bool split_k;
};

TEST(KernelClassifierTile, RealNames) {
  const TileCase cases[] = {
      {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", 64, 8, 64, 16, 4, 1, false},
      {"nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", 128, 256, 64, 4, 2, 1, false},
      {"nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT", 128, 8, 64, 12, 4, 1, true},
      {"nvjet_sm90_tst_64x8_64x16_4x2_h_bz_splitK_TNT", 64, 8, 64, 16, 4, 2, true},
      {"nvjet_sm100_tst_64x24_64x16_1x2_h_bz_splitK_TNT", 64, 24, 64, 16, 1, 2, true},
      {"nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT", 128, 128, 128, 6, 1, 2, false},
      {"nvjet_tst_64x32_64x16_2x2_2cta_h_bz_splitK_TNT", 64, 32, 64, 16, 2, 2, true},
      {"nvjet_sss_tf32_128x256_TNT", 128, 256, 0, 0, 1, 1, false},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
       "5x_cublas",
       128, 128, 64, 0, 1, 1, false},
      {"sm90_xmma_gemm_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas",
       128, 128, 32, 0, 1, 1, true},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", 160, 128,
       32, 4, 1, 1, false},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x64x32_stage3_warpsize2x2x1_tensor16x8x16_kernel", 64, 64, 32,
       3, 1, 1, false},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_cgasize1x2x1", 128, 128, 32, 0, 1, 2, false},
      {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", 128, 256, 64, 3, 1, 1, false},
      {"ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x6_nn", 64, 64, 64, 6, 1, 1, false},
      {"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nt", 128, 64, 0, 0, 1, 1, false},
      {"turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_tn", 256, 128, 32, 1, 1, 1, false},
      {"ampere_sgemm_32x32_sliced1x4_nn", 32, 32, 0, 0, 1, 1, false},
      {"volta_sgemm_128x64_nn", 128, 64, 0, 0, 1, 1, false},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
       "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
       64, 64, 64, 4, 1, 1, false},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
       "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
       32, 32, 128, 2, 1, 1, false},
      {"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x64_32x4_nn_align8", 256, 64, 32, 4, 1, 1, false},
      {"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>"
       "(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)",
       256, 64, 32, 4, 1, 1, false},
      {"cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8_warpspecialized_"
       "pingpong_epi_tma",
       128, 128, 64, 0, 2, 1, false},
      {"cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_128x64x16_1x1x1_3_tnn_align1_bias_f32_relu", 128, 64, 16, 3, 1,
       1, false},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int,int,int>, "
       "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<9, "
       "cute::tuple<cute::C<1>,cute::C<1>,cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedPingpong>, "
       "cute::tuple<cute::C<128>,cute::C<64>,cute::C<64> >, cutlass::bfloat16_t, "
       "cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS> >, cute::SM90_TMA_LOAD, "
       "cute::ComposedLayout<cute::Swizzle<3,4,3> > > > >",
       128, 64, 64, 9, 1, 1, false},
      {"bmm_Bfloat16_MxInt4Bfloat16_castBfloat16_Fp32_Ab32_t128x16x256u2_s3_et128x16_m256x16x16_c2x1x1_rM_BN_transOut_"
       "schPd2x1x2x3_biasBfloat16Mn_bN_tma_tmaSf_rgTma_clmp_swiGlu_dynB_sm100f",
       128, 16, 256, 3, 2, 1, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TileNameInfo info = parse_tile_name(c.name);
    ASSERT_TRUE(info.tile.has_value());
    EXPECT_EQ(info.tile->tile_m, c.m);
    EXPECT_EQ(info.tile->tile_n, c.n);
    EXPECT_EQ(info.tile->tile_k, c.k);
    EXPECT_EQ(info.tile->stages, c.stages);
    EXPECT_EQ(info.tile->cluster_m, c.cluster_m);
    EXPECT_EQ(info.tile->cluster_n, c.cluster_n);
    EXPECT_EQ(info.split_k, c.split_k);
    EXPECT_EQ(info.tile->split_k, 1);  // the factor is never in these names
    EXPECT_EQ(tile_from_kernel_name(c.name), info.tile);
  }
}

TEST(KernelClassifierTile, AttentionKernelsNameTheirTile) {
  // As PyTorch 2.11's SDPA launches them on our H100 (data/h100-sxm/attention*.csv).
  const auto fa2 = attention_tile_from_name(
      "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
      "cutlass::bfloat16_t, "
      "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false, "
      "false>(pytorch_flash::Flash_fwd_params)");
  ASSERT_TRUE(fa2.has_value());
  EXPECT_EQ(fa2->format, "flash-attn2");
  EXPECT_EQ(fa2->head_dim, 128);
  EXPECT_EQ(fa2->q_rows, 128);
  EXPECT_EQ(fa2->kv_cols, 64);
  EXPECT_EQ(fa2->warps, 4);
  EXPECT_FALSE(fa2->split_kv);
  // A split-KV kernel joined with its combine kernel by the profiler.
  const auto split = attention_tile_from_name(
      "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, false, "
      "cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::bfloat16_t> >, false, false, false, false, "
      "true, false, true, false>(pytorch_flash::Flash_fwd_params) ; void "
      "pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, false, "
      "cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::bfloat16_t> >, 4, 2, true>"
      "(pytorch_flash::Flash_fwd_params)");
  ASSERT_TRUE(split.has_value());
  EXPECT_TRUE(split->split_kv);
  EXPECT_EQ(split->head_dim, 64);
  EXPECT_EQ(split->q_rows, 64);
  EXPECT_EQ(split->kv_cols, 256);
  const auto cudnn = attention_tile_from_name(
      "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0");
  ASSERT_TRUE(cudnn.has_value());
  EXPECT_EQ(cudnn->format, "cudnn");
  EXPECT_EQ(cudnn->q_rows, 16);
  EXPECT_EQ(cudnn->kv_cols, 128);
  EXPECT_EQ(cudnn->head_dim, 128);
  EXPECT_EQ(cudnn->warps, 4);
  EXPECT_TRUE(cudnn->split_kv);
  const auto cudnn_prefill = attention_tile_from_name(
      "Memset (Device) ; cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_"
      "kernel0_0");
  ASSERT_TRUE(cudnn_prefill.has_value());
  EXPECT_EQ(cudnn_prefill->q_rows, 64);
  EXPECT_EQ(cudnn_prefill->head_dim, 64);
  // Names without a tile, a truncated traits list, a GEMM.
  EXPECT_FALSE(attention_tile_from_name("flash_fwd_splitkv_kernel").has_value());
  EXPECT_FALSE(attention_tile_from_name("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128").has_value());
  EXPECT_FALSE(attention_tile_from_name("cudnn_generated_fort_native_sdpa_sm90_knob_7").has_value());
  EXPECT_FALSE(attention_tile_from_name("nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT").has_value());
  EXPECT_FALSE(attention_tile_from_name("").has_value());
}

TEST(KernelClassifierTile, MarkersAndOrientation) {
  EXPECT_TRUE(parse_tile_name("nvjet_tst_64x32_64x16_2x2_2cta_h_bz_splitK_TNT").two_cta);
  EXPECT_TRUE(parse_tile_name("nvjet_tst_64x32_64x16_2x2_h_bz_TNT").column_major);
  EXPECT_TRUE(parse_tile_name("ampere_sgemm_128x64_tn").column_major);
  EXPECT_FALSE(
      parse_tile_name("cutlass3x_sm90_tensorop_gemm_f16_f16_f16_f16_f16_128x256x64_1x2x1_0_tnn_align8").column_major);
  EXPECT_TRUE(
      parse_tile_name("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>")
          .column_major);
  auto sk = parse_tile_name(
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int,int,int,int>, "
      "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedFP8<5, "
      "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, "
      "cute::tuple<cute::C<128>, cute::C<256>, cute::C<128> >, cutlass::float_e4m3_t>, "
      "cutlass::gemm::StreamKScheduler>");
  ASSERT_TRUE(sk.tile);
  EXPECT_TRUE(sk.stream_k);
  EXPECT_TRUE(sk.tile->stream_k);
  EXPECT_EQ(sk.tile->tile_n, 256);
  EXPECT_EQ(sk.tile->cluster_m, 2);
  EXPECT_EQ(sk.tile->stages, 5);
  // Names without a tile.
  EXPECT_FALSE(tile_from_kernel_name("fused_moe_kernel"));
  EXPECT_FALSE(tile_from_kernel_name("internal::gemvx_kernel"));
  EXPECT_FALSE(tile_from_kernel_name(""));
  EXPECT_FALSE(tile_from_kernel_name("nvjet_"));
  EXPECT_FALSE(tile_from_kernel_name("nvjet_tst_99999999x8_TNT"));
}

// ---------------------------------------------------------------------------------------------
// Shapes from the framework op's input dims (torch.profiler record_shapes).

TEST(KernelClassifierShape, MmAddmmLinear) {
  // verbatim pairing from a vLLM trace: aten::mm [[16, 4096], [4096, 3584]] -> nvjet_tst_32x64_64x16_4x1_v_bz_TNN
  Classification mm = classify("nvjet_tst_32x64_64x16_4x1_v_bz_TNN", "aten::mm", {{16, 4096}, {4096, 3584}},
                               {"c10::BFloat16", "c10::BFloat16"});
  ASSERT_TRUE(mm.shape);
  EXPECT_TRUE(mm.shape_complete);
  EXPECT_EQ(mm.op, Op::gemm);
  EXPECT_EQ(mm.shape->M, 16);
  EXPECT_EQ(mm.shape->N, 3584);
  EXPECT_EQ(mm.shape->K, 4096);

  Classification addmm = classify("nvjet_sm90_tst_192x208_64x4_2x1_v_bz_coopB_bias_TNT", "aten::addmm",
                                  {{3072}, {4096, 1024}, {1024, 3072}, {}, {}});
  ASSERT_TRUE(addmm.shape_complete);
  EXPECT_EQ(addmm.shape->M, 4096);
  EXPECT_EQ(addmm.shape->N, 3072);
  EXPECT_EQ(addmm.shape->K, 1024);

  // verbatim: aten::linear [[38, 7168], [512, 7168], []] -> nvjet_sm100_tst_64x24_64x16_1x2_h_bz_splitK_TNT
  Classification lin = classify("nvjet_sm100_tst_64x24_64x16_1x2_h_bz_splitK_TNT", "aten::linear",
                                {{38, 7168}, {512, 7168}, {}}, {"c10::BFloat16", "c10::BFloat16", ""});
  ASSERT_TRUE(lin.shape_complete);
  EXPECT_EQ(lin.shape->M, 38);
  EXPECT_EQ(lin.shape->N, 512);
  EXPECT_EQ(lin.shape->K, 7168);
  EXPECT_EQ(dtype_name(*lin.dtype), "bf16");

  // Leading dims fold into M.
  Classification lin3 = classify(
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
      "execute_segment_k_off_kernel__5x_cublas",
      "aten::linear", {{4, 512, 4096}, {11008, 4096}, {}});
  ASSERT_TRUE(lin3.shape_complete);
  EXPECT_EQ(lin3.shape->M, 2048);
  EXPECT_EQ(lin3.shape->N, 11008);
}

TEST(KernelClassifierShape, BmmAndMatmul) {
  Classification b = classify("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_nn", "aten::bmm",
                              {{32, 128, 64}, {32, 64, 512}});
  ASSERT_TRUE(b.shape_complete);
  EXPECT_EQ(b.op, Op::bmm);
  EXPECT_EQ(b.shape->Bt, 32);
  EXPECT_EQ(b.shape->M, 128);
  EXPECT_EQ(b.shape->N, 512);
  EXPECT_EQ(b.shape->K, 64);

  // torch.matmul(hidden [1, 2560], lm_head.weight.T [2560, 248320]): the LM head of a SGLang trace.
  Classification head = classify("nvjet_sm90_tst_512x8_64x3_2x1_v_bz_TNT", "aten::matmul", {{1, 2560}, {2560, 248320}});
  ASSERT_TRUE(head.shape_complete);
  EXPECT_EQ(head.op, Op::gemm);
  EXPECT_EQ(head.shape->M, 1);
  EXPECT_EQ(head.shape->N, 248320);

  Classification mb =
      classify("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "aten::matmul", {{2, 8, 128, 64}, {2, 8, 64, 128}});
  ASSERT_TRUE(mb.shape_complete);
  EXPECT_EQ(mb.op, Op::bmm);
  EXPECT_EQ(mb.shape->Bt, 16);

  Classification nd =
      classify("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "aten::matmul", {{4, 100, 4096}, {4096, 4096}});
  ASSERT_TRUE(nd.shape_complete);
  EXPECT_EQ(nd.op, Op::gemm);
  EXPECT_EQ(nd.shape->M, 400);
}

TEST(KernelClassifierShape, ScaledDotProductAttention) {
  // q [B, Hq, S, D], k [B, Hkv, S, D]
  Classification p = classify(
      "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64>>",
      "aten::_scaled_dot_product_flash_attention", {{2, 32, 1024, 128}, {2, 8, 1024, 128}, {2, 8, 1024, 128}, {}, {}},
      {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"});
  ASSERT_TRUE(p.shape_complete) << p.reason;
  EXPECT_EQ(p.op, Op::attn_prefill);
  EXPECT_EQ(p.shape->B, 2);
  EXPECT_EQ(p.shape->S, 1024);
  EXPECT_EQ(p.shape->Hq, 32);
  EXPECT_EQ(p.shape->Hkv, 8);
  EXPECT_EQ(p.shape->D, 128);

  // One query token: decode over the cached keys, whatever the kernel is called.
  Classification d =
      classify("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 64, 128>>",
               "aten::scaled_dot_product_attention", {{8, 32, 1, 128}, {8, 8, 4096, 128}, {8, 8, 4096, 128}});
  ASSERT_TRUE(d.shape_complete) << d.reason;
  EXPECT_EQ(d.op, Op::attn_decode);
  EXPECT_EQ(d.shape->B, 8);
  EXPECT_EQ(d.shape->L, 4096);

  // FlashAttention's own API is [B, S, H, D].
  Classification f = classify("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
                              "flash_attn::_flash_attn_forward", {{1, 512, 16, 64}, {1, 512, 16, 64}});
  ASSERT_TRUE(f.shape_complete);
  EXPECT_EQ(f.shape->S, 512);
  EXPECT_EQ(f.shape->Hq, 16);

  // vLLM's ragged [T, H, D] gives heads and head size only.
  Classification v = classify("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>",
                              "vllm::unified_attention_with_output", {{300, 32, 128}, {300, 8, 128}, {300, 8, 128}});
  EXPECT_EQ(v.family, Family::attention);
  ASSERT_TRUE(v.shape);
  EXPECT_FALSE(v.shape_complete);
  EXPECT_EQ(v.shape->Hq, 32);
  EXPECT_EQ(v.shape->Hkv, 8);
  EXPECT_EQ(v.shape->D, 128);
}

// Verbatim from a torch.profiler trace of transformers 5.17's Llama-3-8B (SDPA attention, bf16) on
// an H200 (tools/collector/model_traces.py): the cuDNN kernel's launching op, its inputs and the
// "Concrete Inputs" that carry is_causal.
TEST(KernelClassifierShape, CudnnSdpaFromItsLaunchingOp) {
  ClassifyInput in;
  in.kernel_name = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0";
  in.framework_op = "aten::_cudnn_attention_forward";
  in.input_dims = {{4, 32, 1024, 128}, {4, 8, 1024, 128}, {4, 8, 1024, 128}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  in.input_types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "", "Scalar", "Scalar",
                    "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"};
  in.concrete_inputs = {"", "", "", "", "", "", "1024", "1024", "False", "0.", "True", "False", ""};
  Classification c = classify_kernel(in);
  ASSERT_TRUE(c.shape_complete) << c.reason;
  EXPECT_EQ(c.op, Op::attn_prefill);
  EXPECT_EQ(c.library, "cudnn");
  // The name's "f16" is any 16-bit float to cuDNN: the inputs say bf16.
  ASSERT_TRUE(c.dtype);
  EXPECT_EQ(*c.dtype, Dtype::bf16);
  EXPECT_EQ(c.shape->B, 4);
  EXPECT_EQ(c.shape->S, 1024);
  EXPECT_EQ(c.shape->Hq, 32);
  EXPECT_EQ(c.shape->Hkv, 8);
  EXPECT_EQ(c.shape->D, 128);
  EXPECT_TRUE(c.shape->causal);
  // is_causal=False (a padded batch with an explicit mask): a full, non-causal prefill.
  in.concrete_inputs[10] = "False";
  EXPECT_FALSE(classify_kernel(in).shape->causal);
  // The same position in aten::scaled_dot_product_attention's own signature is dropout_p: is_causal is 5th.
  in.framework_op = "aten::scaled_dot_product_attention";
  in.concrete_inputs = {"", "", "", "", "0.", "False", "", "True"};
  EXPECT_FALSE(classify_kernel(in).shape->causal);
  in.concrete_inputs[5] = "True";
  EXPECT_TRUE(classify_kernel(in).shape->causal);
  // fp16 inputs keep fp16; no input types, the name's dtype.
  in.input_types = {"c10::Half", "c10::Half", "c10::Half"};
  EXPECT_EQ(*classify_kernel(in).dtype, Dtype::fp16);
}

// Eager PyTorch's memory-bound kernels take their bytes from the launching op's inputs, whatever
// the op (verbatim names and inputs from the Llama-3-8B trace above).
TEST(KernelClassifierShape, MemoryBoundOpsMoveTheirInputsBytes) {
  const std::string pow_k =
      "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_"
      "impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul> >";
  Classification p = classify(pow_k, "aten::pow", {{4, 1024, 4096}, {}}, {"float", "Scalar"});
  ASSERT_TRUE(p.shape_complete) << p.reason;
  EXPECT_EQ(p.op, Op::copy);
  EXPECT_EQ(p.shape->bytes, 4 * 1024 * 4096 * 4);
  // A reduction reads its input once and writes a sliver: half the bytes of a copy of it.
  Classification m = classify(
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
      "float>, unsigned int, float, 4, 4> >",
      "aten::mean", {{4, 1024, 4096}, {}, {}, {}}, {"float", "ScalarList", "Scalar", ""});
  ASSERT_TRUE(m.shape_complete) << m.reason;
  EXPECT_EQ(m.op, Op::copy);
  EXPECT_EQ(m.shape->bytes, 4 * 1024 * 4096 * 4 / 2);
  // A broadcasting binary op: the larger operand.
  Classification b = classify("void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<...>>",
                              "aten::mul", {{4096}, {4, 1024, 4096}}, {"c10::BFloat16", "c10::BFloat16"});
  ASSERT_TRUE(b.shape_complete) << b.reason;
  EXPECT_EQ(b.op, Op::add);
  EXPECT_EQ(b.shape->T, 4 * 1024);
  EXPECT_EQ(b.shape->H, 4096);
  // aten::cat: a TensorList's tensors arrive as consecutive inputs (the importer flattens them).
  Classification c = classify(
      "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, "
      "unsigned int, 4, 64, 64>",
      "aten::cat", {{4, 32, 1024, 64}, {4, 32, 1024, 64}, {}}, {"TensorList", "Scalar"});
  ASSERT_TRUE(c.shape_complete) << c.reason;
  EXPECT_EQ(c.shape->bytes, 2 * 4 * 32 * 1024 * 64 * 2);
  // The embedding's index_select moves the rows it picks, not the table (128256 x 4096).
  Classification e = classify("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, "
                              "long, long, long, bool)",
                              "aten::index_select", {{128256, 4096}, {}, {4096}}, {"c10::BFloat16", "Scalar", "long int"});
  ASSERT_TRUE(e.shape_complete) << e.reason;
  EXPECT_EQ(e.shape->bytes, int64_t(4096) * 4096 * 2);
  // gather(self, dim, index): the output has the index's size.
  Classification g = classify("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, "
                              "long, long, long, bool)",
                              "aten::gather", {{128256, 4096}, {}, {4096, 4096}}, {"c10::BFloat16", "Scalar", "long int"});
  ASSERT_TRUE(g.shape_complete) << g.reason;
  EXPECT_EQ(g.shape->bytes, int64_t(4096) * 4096 * 2);
  // No input sizes at all: no shape, not a guess.
  EXPECT_FALSE(classify(pow_k, "aten::pow", {{}, {}}, {"float", "Scalar"}).shape);
}

// Inductor names its generated kernels after the ops they fuse: the pointwise work around an SDPA is
// not an attention kernel (verbatim, from a torch.compile'd Llama-3-8B decode on an H200).
TEST(KernelClassifier, InductorKernelsNamedAfterAttentionArePointwise) {
  Classification c = classify(
      "triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy__unsafe_view_add_arange_bmm_cat_cos_5");
  EXPECT_EQ(c.family, Family::elementwise) << c.reason;
  EXPECT_EQ(c.library, "triton");
  EXPECT_EQ(classify("triton_red_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_12").op, Op::rmsnorm);
}

TEST(KernelClassifierShape, NormsAndActivations) {
  Classification r = classify("void vllm::rms_norm_kernel<c10::BFloat16, (int)8, (int)2, (bool)1>", "_C::rms_norm",
                              {{512, 4096}, {512, 4096}, {4096}, {}});
  ASSERT_TRUE(r.shape_complete);
  EXPECT_EQ(r.shape->T, 512);
  EXPECT_EQ(r.shape->H, 4096);

  Classification fr = classify("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>",
                               "sgl_kernel::fused_add_rmsnorm", {{7, 1, 2048}, {7, 1, 2048}, {2048}, {}, {}});
  ASSERT_TRUE(fr.shape_complete);
  EXPECT_EQ(fr.op, Op::fused_add_rmsnorm);
  EXPECT_EQ(fr.shape->T, 7);
  EXPECT_EQ(fr.shape->H, 2048);

  Classification ln = classify("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>",
                               "aten::layer_norm", {{4, 77, 768}, {}, {768}, {768}, {}, {}});
  ASSERT_TRUE(ln.shape_complete);
  EXPECT_EQ(ln.shape->T, 308);

  // vLLM _C::silu_and_mul(out [T, I], input [T, 2I]).
  Classification s = classify("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>",
                              "_C::silu_and_mul", {{256, 14336}, {256, 28672}});
  ASSERT_TRUE(s.shape_complete);
  EXPECT_EQ(s.op, Op::silu_mul);
  EXPECT_EQ(s.shape->T, 256);
  EXPECT_EQ(s.shape->I, 14336);
  // SGLang passes only the input.
  Classification s1 = classify("void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(silu(float const&))>",
                               "sgl_kernel::silu_and_mul", {{3, 18944}});
  ASSERT_TRUE(s1.shape_complete);
  EXPECT_EQ(s1.shape->I, 9472);

  Classification sm = classify("void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>",
                               "aten::_softmax", {{64, 128256}, {}, {}});
  ASSERT_TRUE(sm.shape_complete);
  EXPECT_EQ(sm.shape->V, 128256);

  Classification add =
      classify("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>",
               "aten::add", {{128, 4096}, {128, 4096}, {}});
  ASSERT_TRUE(add.shape_complete);
  EXPECT_EQ(add.shape->T, 128);
}

TEST(KernelClassifierShape, RotaryKvCacheEmbeddingCopy) {
  // _C::rotary_embedding(positions [T], query [T, Hq*D], key [T, Hkv*D], head_size, cos_sin_cache [P, D], is_neox)
  Classification r = classify("void vllm::rotary_embedding_kernel<c10::BFloat16, (bool)1>", "_C::rotary_embedding",
                              {{64}, {64, 4096}, {64, 1024}, {}, {131072, 128}, {}});
  ASSERT_TRUE(r.shape_complete) << r.reason;
  EXPECT_EQ(r.shape->T, 64);
  EXPECT_EQ(r.shape->Hq, 32);
  EXPECT_EQ(r.shape->Hkv, 8);
  EXPECT_EQ(r.shape->D, 128);

  Classification kv =
      classify("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>",
               "_C_cache_ops::reshape_and_cache_flash",
               {{64, 8, 128}, {64, 8, 128}, {2000, 16, 8, 128}, {2000, 16, 8, 128}, {64}, {}, {}, {}});
  ASSERT_TRUE(kv.shape_complete);
  EXPECT_EQ(kv.shape->T, 64);
  EXPECT_EQ(kv.shape->Hkv, 8);

  Classification emb = classify(
      "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, "
      "true>",
      "aten::embedding", {{128256, 4096}, {1, 37}, {}, {}, {}});
  EXPECT_EQ(emb.op, Op::embedding);
  ASSERT_TRUE(emb.shape_complete);
  EXPECT_EQ(emb.shape->T, 37);
  EXPECT_EQ(emb.shape->V, 128256);

  Classification cp = classify("void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda>",
                               "aten::copy_", {{16, 1024}, {16, 1024}, {}}, {"c10::BFloat16", "float", ""});
  ASSERT_TRUE(cp.shape_complete);
  EXPECT_EQ(cp.shape->bytes, 16 * 1024 * 2);
}

TEST(KernelClassifierShape, MoeAndCommunication) {
  // fused_experts(hidden [T, H], w1 [E, 2I, H], w2 [E, H, I], topk_weights [T, k], topk_ids [T, k])
  Classification m = classify("fused_moe_kernel", "vllm::inplace_fused_experts",
                              {{512, 2048}, {64, 1536, 2048}, {64, 2048, 768}, {512, 8}, {512, 8}});
  ASSERT_TRUE(m.shape_complete) << m.reason;
  EXPECT_EQ(m.shape->T, 512);
  EXPECT_EQ(m.shape->E, 64);
  EXPECT_EQ(m.shape->H, 2048);
  EXPECT_EQ(m.shape->I, 768);
  EXPECT_EQ(m.shape->topk, 8);

  Classification ar = classify(
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, "
      "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
      "_C_custom_ar::all_reduce", {{16, 4096}}, {"c10::BFloat16"});
  ASSERT_TRUE(ar.shape_complete);
  EXPECT_EQ(ar.shape->bytes, 16 * 4096 * 2);
  EXPECT_EQ(ar.shape->ranks, 2);

  // NCCL names carry no rank count: bytes only.
  Classification nccl = classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                                 "nccl:all_reduce", {{8, 4096}}, {"c10::BFloat16"});
  ASSERT_TRUE(nccl.shape);
  EXPECT_EQ(nccl.shape->bytes, 8 * 4096 * 2);
  EXPECT_FALSE(nccl.shape_complete);

  // NCCL runs all-to-all as send/recv; the launching op says which.
  EXPECT_EQ(classify("ncclDevKernel_SendRecv", "c10d::alltoall_base_").op, Op::alltoall);
  EXPECT_EQ(classify("ncclDevKernel_Generic_4", "nccl:all_reduce").op, Op::allreduce);

  // A kernel attributed to a mismatching op gets no shape from it (seen in real attributions).
  Classification mis = classify("void sglang::cross_device_reduce_1stage<__half, 8>(sglang::RankData*)", "aten::linear",
                                {{31, 1024}, {4096, 1024}, {}});
  EXPECT_EQ(mis.family, Family::communication);
  ASSERT_TRUE(mis.shape);
  EXPECT_EQ(mis.shape->ranks, 8);
  EXPECT_EQ(mis.shape->bytes, 0);
}

// ---------------------------------------------------------------------------------------------
// Split-K factor and persistence from the grid (launches recorded in an SGLang GLM trace, H100).

TEST(KernelClassifierShape, SplitKAndPersistenceFromGrid) {
  // [1, 4096] x [128, 4096]^T: 2 tiles of 64 along N, grid [2,3,1] -> split-K 3.
  Classification a = classify("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT", "aten::linear",
                              {{1, 4096}, {128, 4096}, {}}, {}, grid(2, 3, 1, 384));
  ASSERT_TRUE(a.tile);
  EXPECT_EQ(a.tile->split_k, 3) << a.reason;
  EXPECT_FALSE(a.tile->stream_k);

  // [1, 4096] x [3336, 4096]^T, tile 128 along N with a 4-wide cluster: 28 tiles, grid 4x21 = 84 -> split-K 3.
  Classification b = classify("nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT", "aten::linear",
                              {{1, 4096}, {3336, 4096}, {}}, {}, grid(4, 21, 1, 384));
  ASSERT_TRUE(b.tile);
  EXPECT_EQ(b.tile->split_k, 3) << b.reason;

  // [1, 1024] x [4096, 1024]^T: 64 tiles, grid [4,16,1] = 64 CTAs: neither split nor persistent.
  Classification c = classify("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", "aten::linear", {{1, 1024}, {4096, 1024}, {}},
                              {}, grid(4, 16, 1, 384));
  ASSERT_TRUE(c.tile);
  EXPECT_EQ(c.tile->split_k, 1);
  EXPECT_FALSE(c.tile->stream_k);

  // LM head [1, 2560] x [2560, 248320] on a 132-SM GPU: 486 tiles on 2 x 66 CTAs -> persistent.
  Classification d = classify("nvjet_sm90_tst_512x8_64x3_2x1_v_bz_TNT", "aten::matmul", {{1, 2560}, {2560, 248320}}, {},
                              grid(2, 66, 1, 384));
  ASSERT_TRUE(d.tile);
  EXPECT_TRUE(d.tile->stream_k) << d.reason;
}

// ---------------------------------------------------------------------------------------------
// Unknown and hostile input.

TEST(KernelClassifier, UnknownStaysUnknown) {
  for (const char* name :
       {"my_custom_kernel_xyz", "_causal_conv1d_update_kernel", "fused_recurrent_gated_delta_rule_packed_decode_kernel",
        "gdn_forward_kernel<128,4,16>", "k"}) {
    SCOPED_TRACE(name);
    Classification r = classify(name);
    EXPECT_EQ(r.family, Family::unknown);
    EXPECT_EQ(r.op, Op::unknown);
    EXPECT_EQ(r.library, "unknown");
    EXPECT_FALSE(r.tile);
    EXPECT_FALSE(r.shape);
    EXPECT_FALSE(r.reason.empty());
  }
  // The launch arguments are the caller's to keep; classifying does not need or change them.
  ClassifyInput in;
  in.kernel_name = "my_custom_kernel_xyz";
  in.launch = grid(132, 1, 1, 256);
  EXPECT_EQ(classify_kernel(in).family, Family::unknown);
  EXPECT_EQ(in.launch->ctas(), 132);
}

TEST(KernelClassifier, FrameworkOpDecidesWhenTheNameCannot) {
  Classification r = classify("some_new_library_kernel_v7", "aten::mm", {{8, 4096}, {4096, 4096}});
  EXPECT_EQ(r.family, Family::gemm);
  EXPECT_EQ(r.library, "unknown");
  EXPECT_TRUE(r.shape_complete);
  EXPECT_NE(r.reason.find("framework op"), std::string::npos);
}

TEST(KernelClassifier, EmptyAndGarbageInputDoNotCrash) {
  EXPECT_EQ(classify("").family, Family::unknown);
  EXPECT_EQ(classify("", "").reason, "empty kernel name");

  std::string huge(1 << 20, 'x');
  EXPECT_EQ(classify(huge).family, Family::unknown);
  std::string huge_gemm = "nvjet_tst_" + std::string(100000, '9') + "x8_TNT";
  Classification g = classify(huge_gemm);
  EXPECT_EQ(g.family, Family::gemm);
  EXPECT_FALSE(g.tile);

  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(size_t(rng() % 300), '\0');
    for (auto& ch : s) ch = char(rng() & 0xff);
    if (i % 3 == 0) s = "nvjet_" + s;
    if (i % 5 == 0) s = "cutlass::device_kernel<cute::tuple<cute::C<" + s;
    std::vector<std::vector<int64_t>> dims = {{int64_t(rng()), -1}, {}, {int64_t(1) << 62, int64_t(1) << 62}};
    Classification r = classify(s, i % 2 ? "aten::mm" : "c10d::allreduce_", dims, {std::string(5, char(0xff))});
    (void)r;
  }
  // Real names cut and corrupted at random places, with hostile launch arguments.
  const char* seeds[] = {
      "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT",
      "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
      "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn",
      "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(x::Params)",
      "cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8",
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int,int,int>, "
      "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<9, "
      "cute::tuple<cute::C<1>,cute::C<1>,cute::C<1> >, K>, cute::tuple<cute::C<128>,cute::C<64>,cute::C<64> > > >",
      "bmm_Bfloat16_E4m3_Fp32_t128x16x256u2_s3_et128x16_m256x16x16_c2x1x1_rM_sm100f",
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*)",
  };
  for (int i = 0; i < 4000; ++i) {
    std::string s = seeds[size_t(i) % std::size(seeds)];
    s.resize(rng() % (s.size() + 1));
    for (int j = 0; j < int(rng() % 4) && !s.empty(); ++j) s[rng() % s.size()] = char(rng() & 0xff);
    LaunchArgs a;
    a.grid = {int64_t(rng()) - 100, int64_t(1) << 40, int64_t(rng() % 3)};
    a.block = {int64_t(rng() % 1025), 1, 1};
    Classification r = classify(s, i % 2 ? "aten::linear" : "aten::bmm",
                                {{int64_t(rng() % 5000), 4096}, {int64_t(rng() % 5000), 4096, 2}, {}}, {}, a);
    (void)r;
  }
  // Hostile dims with a real op.
  Classification bad = classify("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "aten::mm", {{-5, 4096}, {4096, 7}});
  EXPECT_FALSE(bad.shape);
  Classification big = classify("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "aten::bmm",
                                {{int64_t(1) << 39, int64_t(1) << 39, 2}, {int64_t(1) << 39, 2, 4}}, {}, grid(1, 1, 1));
  EXPECT_EQ(big.family, Family::gemm);
}

// Every kind of name the classifier meets, a 3,000-character template among them, gets a family and
// a reason (perfloom-bench-classify times the same inputs: tests check behaviour, not time).
TEST(KernelClassifier, EveryKindOfNameGetsAReasonAVeryLongTemplateToo) {
  std::vector<ClassifyInput> inputs;
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
  for (const char* n : names) {
    ClassifyInput in;
    in.kernel_name = n;
    in.framework_op = "aten::linear";
    in.input_dims = {{1, 4096}, {3336, 4096}, {}};
    in.input_types = {"c10::BFloat16", "c10::BFloat16", ""};
    in.launch = grid(4, 21, 1, 384);
    inputs.push_back(in);
  }
  ClassifyInput longest;
  longest.kernel_name = "void cutlass::device_kernel<" + std::string(3000, 'a') + ">";
  inputs.push_back(longest);
  for (const auto& in : inputs) EXPECT_FALSE(classify_kernel(in).reason.empty()) << in.kernel_name.substr(0, 80);
}

// CUTLASS names say how many elements each operand load moves ("_alignN"); others say nothing.
TEST(KernelClassifierTile, OperandAlignmentFromTheName) {
  EXPECT_EQ(
      operand_alignment_elements("void cutlass::Kernel2<cutlass_75_tensorop_s1688gemm_bf16_128x64_tn_align1>(Params)"),
      1);
  EXPECT_EQ(operand_alignment_elements(
                "void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_bf16_32x32_32x2_tn_align2>(P)"),
            2);
  EXPECT_EQ(operand_alignment_elements(
                "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_ntn_align8"),
            8);
  EXPECT_EQ(
      operand_alignment_elements("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x64_64x4_tn_ALIGN16>"),
      16);
  EXPECT_FALSE(operand_alignment_elements("nvjet_sm90_tst_128x128_64x4_1x1_v_bz_TNT"));
  EXPECT_FALSE(operand_alignment_elements("void at::native::vectorized_elementwise_kernel_aligned<4>"));
  EXPECT_FALSE(operand_alignment_elements("kernel_align"));
  EXPECT_FALSE(operand_alignment_elements("kernel_align0"));
  EXPECT_FALSE(operand_alignment_elements("kernel_align8x"));
  EXPECT_FALSE(operand_alignment_elements(""));
}

TEST(WarpLevelMma, KernelsWrittenForSm80AndFlashAttention2) {
  EXPECT_TRUE(
      warp_level_mma_kernel("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>"));
  EXPECT_TRUE(
      warp_level_mma_kernel("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_"
                            "cga1x1x1_kernel0_0"));
  EXPECT_TRUE(warp_level_mma_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"));
  EXPECT_TRUE(warp_level_mma_kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(...)"));
  // Hopper's own (warpgroup MMA) and kernels without tensor cores are not.
  EXPECT_FALSE(
      warp_level_mma_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
                            "cga1x1x1_kernel0_0"));
  EXPECT_FALSE(
      warp_level_mma_kernel("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>"));
  EXPECT_FALSE(warp_level_mma_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"));
  EXPECT_FALSE(warp_level_mma_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize256x128x32_warpgroupsize2x1x1"));
  EXPECT_FALSE(warp_level_mma_kernel("void vllm::rms_norm_kernel<c10::Half>(...)"));
  EXPECT_FALSE(warp_level_mma_kernel(""));
}

TEST(ImplementationClass, SeparatesFlashAttention2AndCudnnFromServingKernels) {
  // Unnamed kernels (kernel lists, simulated steps) stand for the serving engine's kernel.
  EXPECT_EQ(implementation_class(""), 0);
  // FlashAttention-2 forward kernels, as PyTorch's SDPA flash backend and flash-attn 2 name them.
  EXPECT_EQ(implementation_class("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, "
                                 "false, false, cutlass::bfloat16_t>>(pytorch_flash::Flash_fwd_params)"),
            1);
  EXPECT_EQ(implementation_class("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>"), 1);
  // cuDNN's fused attention (PyTorch's SDPA cuDNN backend, as our H200 ran it).
  EXPECT_EQ(implementation_class("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_"
                                 "cga1x1x1_kernel0_0"),
            2);
  // FA3, FlashMLA, FlashInfer, cuBLAS and cuDNN GEMMs are the serving engines' own kernels.
  EXPECT_EQ(implementation_class("void cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>"), 0);
  EXPECT_EQ(implementation_class("void flash_fwd_splitkv_mla_kernel<...>"), 0);
  EXPECT_EQ(implementation_class("BatchDecodeWithPagedKVCacheKernel flashinfer"), 0);
  EXPECT_EQ(implementation_class("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT"), 0);
  EXPECT_EQ(implementation_class("cudnn_infer_ampere_scudnn_128x64_relu_small_nn_v1"), 0);
  // Sarathi-Serve's layer kernels, as the Vidur importer names them.
  EXPECT_EQ(implementation_class("sarathi::mlp_act"), 3);
  EXPECT_EQ(implementation_class("sarathi::input_layernorm"), 3);
  EXPECT_EQ(implementation_class("void vllm::rms_norm_kernel<c10::Half>(...)"), 0);
  // perfloom's latency probe runs kernels of that design (tools/collector/latency_probe.cu).
  EXPECT_EQ(implementation_class(
                "(anonymous namespace)::vllm2023_rms_norm_kernel(__half*, __half const*, __half const*, float, int)"),
            3);
  EXPECT_EQ(implementation_class(
                "(anonymous namespace)::index_select_kernel(__half*, __half const*, long const*, long, int)"),
            0);
}

TEST(ImplementationClass, TritonAndTensorRtLlmAttentionAreClassesOfTheirOwn) {
  // SGLang's triton backend (extend and decode kernels) and vLLM's TRITON_ATTN.
  EXPECT_EQ(implementation_class("_fwd_kernel"), kTritonAttentionImplementation);
  EXPECT_EQ(implementation_class("_fwd_grouped_kernel_stage1"), kTritonAttentionImplementation);
  EXPECT_EQ(implementation_class("kernel_unified_attention_3d"), kTritonAttentionImplementation);
  // TensorRT-LLM's FMHA, as FlashInfer's trtllm-gen backend and SGLang's trtllm_mha launch it.
  EXPECT_EQ(implementation_class("fmhaSm100fKernel_QkvE4m3OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128Persistent"),
            kTrtllmAttentionImplementation);
  EXPECT_EQ(implementation_class("void xqa_kernel<...>"), kTrtllmAttentionImplementation);
  // Inductor's pointwise kernels and FlashAttention-2 (whose name contains _fwd_kernel) are not.
  EXPECT_EQ(implementation_class("triton_poi_fused_add_mul_0"), 0);
  EXPECT_EQ(implementation_class("flash_fwd_kernel"), kFlashAttention2Implementation);
  // The names perfloom gives kernels known only by their implementation map back to it.
  EXPECT_EQ(implementation_class(kTritonAttentionKernelName), kTritonAttentionImplementation);
  EXPECT_EQ(implementation_class(kTrtllmAttentionKernelName), kTrtllmAttentionImplementation);
  EXPECT_EQ(implementation_class(kFlashAttention2KernelName), kFlashAttention2Implementation);
  EXPECT_EQ(implementation_class(kCudnnAttentionKernelName), kCudnnAttentionImplementation);
}
