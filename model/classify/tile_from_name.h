#pragma once
// Reads the GEMM tile configuration that a kernel's name spells out (issue 3, "The tile a GEMM
// really uses"). Hand-written scanning, no allocation: it runs once per kernel of 100k-kernel traces.
//
// Formats, and how sure we are of each field (sources in the test file and the classifier report):
//  cuBLAS nvjet (Hopper/Blackwell cuBLAS(Lt)), e.g. nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT:
//    <type>   t=bf16 h=fp16 s=fp32 q=fp8 in front (tst: bf16 in, fp32 compute, bf16 out)   [inferred]
//    128x8    CTA tile MxN in cuBLAS's column-major problem                               [verified]
//    64x12    K per stage x pipeline stages                                                [verified]
//    4x1      thread-block cluster MxN                                                     [verified]
//    2cta     Blackwell two-CTA MMA                                                         [inferred]
//    splitK   split-K; the factor is not in the name (the classifier derives it from the grid)
//    v/h, bz, coopA/coopB, bias, TNT                          raster, epilogue, layouts: not used
//  cuBLAS xmma: sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_
//    execute_segment_k_off_kernel__5x_cublas, sm80_xmma_gemm_..._tilesize160x128x32_stage4_...:
//    tilesize MxNxK, stageN, cgasize MxNx1 (cluster); segment_k_on is read as split-K  [inferred]
//  cuBLAS pre-Hopper: ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn, volta_sgemm_128x64_nn:
//    first MxN after the gemm token is the CTA tile, stages_KxS gives K per stage and stages.
//  CUTLASS 2 (also what cuBLAS launches as cutlass::Kernel2<...>):
//    cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8: MxN tile, then KxStages.
//  CUTLASS 3 procedural names: cutlass3x_sm90_tensorop_s64x128x16gemm_..._128x128x64_2x1x1_0_ntn_align8:
//    tile MxNxK, cluster MxNxL, stages (0 = chosen by the builder).
//  CUTLASS 3 templates (cutlass::device_kernel<...GemmUniversal<...>>): MainloopSm90...<Stages,
//    ClusterShape, ...>, then TileShape, as cute::tuple<cute::C<..>...>; StreamK / SplitK schedulers.
//  TensorRT-LLM generated GEMMs (bmm_/gemm_ ... _t128x16x256u2_s3_..._c2x1x1_...): tNxNxN tile,
//    sN stages, cNxNxN cluster                                                           [inferred]
// The tile is reported as the library names it. cuBLAS is column-major, so for a GEMM that PyTorch
// launches row-major its tile_m runs along PyTorch's N (the weight's output features):
// `column_major` says so, and classify_kernel() swaps the tile into Shape's orientation.
#include <optional>
#include <string_view>

#include "model/kernel.h"

namespace perfloom {

struct TileNameInfo {
  std::optional<TileConfig> tile;  // split_k stays 1 unless the name gives the factor
  bool split_k = false;            // the name marks split-K (or segmented K)
  bool stream_k = false;           // the name marks a stream-K scheduler
  bool two_cta = false;            // Blackwell 2-CTA MMA ("2cta")
  bool column_major = false;       // cuBLAS naming: tile M is the column-major M (PyTorch's N)
  std::string_view format;         // "nvjet", "xmma", "cublas", "cutlass2", "cutlass3", "cute",
                                   // "trtllm-gen"; empty when nothing was recognised
};

TileNameInfo parse_tile_name(std::string_view name);

// The operand alignment a CUTLASS-style name gives ("..._tn_align2": operands loaded 2 elements
// at a time), or nullopt when the name gives none (nvjet, xmma and cuBLAS's own kernels load full
// 16-byte vectors).
std::optional<int> operand_alignment_elements(std::string_view name);

// The tile as named, with split-K / stream-K / cluster when the name says them.
std::optional<TileConfig> tile_from_kernel_name(std::string_view name);

// An attention kernel's tiling as its name spells it out. The tile sets the work a kernel really
// executes: a decode's single query row is padded to the tile's query rows, which decides whether
// the kernel is bound by the KV cache's bytes or by its padded tensor work (measured on our H100
// and H200, data/<gpu>/attention.csv: PyTorch's FlashAttention-2 decode at 128 padded rows
// takes the same time on both, 1.01-1.04x over 256 us, where the bytes alone would say 1.43x).
//  FlashAttention-2 (flash_fwd_kernel, flash_fwd_splitkv_kernel; PyTorch's pytorch_flash:: copy):
//    Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, ...>; for a decode (one query
//    row, Hq > Hkv) FlashAttention-2 swaps the query group into the rows ("seqlenq_ngroups_swapped"),
//    so one CTA serves the group of a KV head.                                        [verified]
//  cuDNN's fused SDPA: cudnn_generated_fort_native_sdpa_..._<rows>x<keys>x<D>_<a>x<b>x<c>_...,
//    the warps per CTA a x b x c. A decode's grid is (splits, Hkv, B): the query group shares a
//    CTA, and long caches are split (a second kernel reduces)       [from the grids we measured]
struct AttentionTileInfo {
  int q_rows = 0;   // query rows per CTA (Br)
  int kv_cols = 0;  // keys per inner iteration (Bc)
  int head_dim = 0;
  int warps = 0;
  int warps_m = 0;          // warps side by side along the query rows: each reads the whole K/V tile from shared memory
  bool split_kv = false;    // may split the keys (FlashAttention-2's flash_fwd_splitkv_kernel, cuDNN)
  std::string_view format;  // "flash-attn2" or "cudnn"
};
std::optional<AttentionTileInfo> attention_tile_from_name(std::string_view name);

}  // namespace perfloom
