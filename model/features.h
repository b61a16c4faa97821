#pragma once
// The feature vector the learned model reads: the analytical model's ideal cycles per pipe, the
// wave plan, the tile, the shape and the GPU's rates. Hardware enters only through these, which is
// why a model trained on some GPUs transfers to others (DESIGN.md, idea 1).
#include <string_view>
#include <vector>

#include "model/analysis.h"

namespace perfloom {

// Bumped whenever the layout or meaning of a feature changes; model files record it.
// 2: impl_class; 3: no sm_count, clock_ghz; 4: achievable rates (model/calibration.h) instead of
// the datasheet peaks in every cycle and rate feature; 5: act_quant; 6: no tile features for an
// architecture's default tile (attention prefill); 7: tile_known (a GEMM's tile came with the
// kernel, not from the model's choice); 8: act_quant_share (the activation quantisation's
// estimated time over the GEMM's roofline) instead of the act_quant flag, and impl_class 3
// (Sarathi-Serve's non-GEMM kernels in Vidur's profiles); 9: an attention kernel whose name gives
// its tile (FlashAttention-2, cuDNN) is analysed with that tile, its query rows padded to it, and
// each pipe's share of the bound (log2_share_<pipe>, learned by GEMMs and, tensor and DRAM, attention); 10: the DRAM
// cycles of norm and elementwise kernels include the latency their bytes in flight leave exposed (Little's law,
// Analysis::bytes_in_flight_per_thread), which also moves their label; an embedding is PyTorch's
// index_select whatever the engine; 11: on Hopper the achievable tensor cycles of a kernel on warp-level
// MMA (FlashAttention-2, sm80 kernels: warp_level_mma_kernel) at the calibrated mma.sync rate plus the
// SM's other pipes in series, and a named attention kernel's shared-memory reads counted per warp
// along its query rows (AttentionTileInfo::warps_m); 12: a clustered GEMM's CTAs, waves and tensor work on its
// tile grid rounded up to whole clusters (whole_clusters); 13: a GEMM's achievable roofline, the
// learned model's label base, includes its fixed cycles outside the main loop (kGemmFixedCycles);
// 14: a vectorised norm's DRAM latency time includes its CTAs' chain per wave after the first
// (chain_round_trips_per_wave); 15: stored DRAM bytes at the GPU's write bandwidth, the rest at its
// read bandwidth (PipeDemand::dram_write_bytes; calibrations measure both); 16: an attention kernel's
// achievable roofline includes its fixed cycles outside the pipes (kAttentionFixedCycles); 17: the
// label is the measured time less the GPU's launch offset (its own empty kernel less the shared
// launch floor: Analysis::launch_offset_us, training.h learned_label), which the prediction adds back;
// 18: a tensor-core GEMM's achievable L2 cycles at the calibrated bulk-copy L2 rate
// (PipeRates::l2_bulk_bytes_per_s; finish_analysis); 19: a GEMM kernel written for sm80 or older
// (warp_level_mma_kernel: cuBLAS's cutlass_75 / cutlass_80 fallbacks) runs its tensor work at the
// calibrated mma.sync rate and streams its tiles with loads, not bulk copies, and every kernel's
// operand load width (operand_load_bytes, from a CUTLASS name's "alignN") is a feature; 20: a tensor-core
// GEMM's achievable roofline is the kGemmOverlapNorm-norm of its tensor, L2 and DRAM cycles where that
// exceeds their maximum, and a GEMM's L2 and DRAM cycle features are read at the geometric mean of its
// L2 rate and kReferenceL2BytesPerS; 21: Triton and TensorRT-LLM attention kernels are implementation
// classes of their own (implementation_class 4 and 5).
inline constexpr int kFeatureVersion = 21;

// The L2 rate a GEMM's memory cycle features are read against (with its own: make_features): the
// H100 SXM's bulk-copy L2 rate as perfloom-calibrate measured it (resources/calibration/h100-sxm.json).
// A constant on purpose, not read from that file: the shipped models learned features at this rate,
// and a re-measured calibration must not move every GPU's features under them.
inline constexpr double kReferenceL2BytesPerS = 8449.32e9;

const std::vector<std::string_view>& feature_names();
std::size_t impl_class_feature_index();  // where make_features puts implementation_class
std::vector<float> make_features(const KernelDesc& k, const GpuSpec& gpu, const Analysis& a);

// The activation quantisation in front of an `act_quant` GEMM (KernelDesc::act_quant), in us: read
// M x K bf16, write M x K in the GEMM's dtype with its scales (fp32 per token; fp4: one byte per 16
// values), at the achievable L2 rate when that fits in L2 (the activations were just written),
// else DRAM, plus one launch floor. 0 for a kernel without it.
double act_quant_us(const KernelDesc& k, const GpuSpec& gpu);

// The bytes each thread moves per load of a GEMM operand: a CUTLASS kernel named "..._alignN" loads
// N elements at a time (cuBLAS launches align1 and align2 kernels for operands whose rows are not
// 16-byte aligned); 16 (a full vector) when the name gives no alignment. On our H100 and H200 the
// cutlass_75 align1 kernels of the tile sweeps run 4.2-5.4x their achievable roofline where the
// align8 ones run 1.2-1.3x: the feature "operand_load_bytes".
double operand_load_bytes(const KernelDesc& k);

}  // namespace perfloom
