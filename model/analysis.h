#pragma once
// The analytical pipeline model's result for one kernel on one GPU (DESIGN.md, idea 1): the work
// each pipe must do, how CTAs fill the SMs in waves, the ideal cycles per pipe, the roofline
// ceiling, the bottleneck, and the feature vector the learned model reads.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom {

// Work per pipe, in that pipe's unit: FLOPs for tensor and fma (2 per FMA), operations for sfu,
// bytes for dram, l2 and smem, bytes over the interconnect for link.
struct PipeDemand {
  double tensor_flops = 0, fma_flops = 0, sfu_ops = 0;
  double dram_bytes = 0, l2_bytes = 0, smem_bytes = 0;
  // Of dram_bytes, those stored: they move at the GPU's write bandwidth, the rest at its read
  // bandwidth (the two differ by up to 7% on the H200, HardwareRates::Achievable).
  double dram_write_bytes = 0;
  double link_bytes = 0;
  PipeDemand& operator+=(const PipeDemand& o);
  PipeDemand scaled(double f) const;
};

// The norm that combines a tensor-core GEMM's achievable tensor, L2 and DRAM cycles into its
// achievable roofline where they come close (finish_analysis): 4, as measured on the H100 and H200.
inline constexpr double kGemmOverlapNorm = 4;

// How the kernel's CTAs fill the GPU.
struct CtaPlan {
  double ctas = 0;      // CTAs launched
  int ctas_per_sm = 1;  // concurrent CTAs per SM (occupancy)
  int threads_per_cta = 128;
  double waves = 0;               // ceil(ctas / (SMs x ctas_per_sm))
  double last_wave_fill = 1;      // fraction of the slots the last wave uses, (0, 1]
  double busiest_sm_share = 0;    // fraction of all per-SM work that the busiest SM does (1/SMs when balanced)
  double active_sm_fraction = 1;  // SMs with any work / SMs
};

struct Analysis {
  Family family = Family::unknown;
  Op op = Op::unknown;
  PipeDemand demand;
  double useful_flops = 0;  // the op's arithmetic without tile padding (for TFLOP/s reports)
  CtaPlan plan;
  // The least work any implementation must do, for the ceiling when the CTA schedule is not known
  // exactly (a library may pick another tile, split-K or stream-K): FLOPs padded only to the MMA
  // granularity, operands read once per the largest tile. Unset: the same as `demand`.
  std::optional<PipeDemand> least_demand;
  // True when the CTA decomposition is known (a tile read from the kernel name, a one-CTA-per-row
  // kernel): the ceiling then charges the busiest SM; otherwise work spread evenly over all SMs.
  bool schedule_exact = false;
  // Kernels whose threads load with plain loads and wait for them (norm, elementwise): the DRAM
  // bytes each thread has in flight at once (their reads: the demand's DRAM bytes less those
  // stored, PipeDemand::dram_write_bytes). Such a kernel cannot
  // stream faster than its bytes in flight over the DRAM latency (Little's law), which binds on a
  // GPU with much bandwidth per SM long before the bandwidth does (Sarathi-Serve's scalar-load
  // RMSNorm: 37% of the H100's DRAM bandwidth, 63% of the A40's). 0: latency hidden by
  // asynchronous copies (GEMM, attention), the bandwidth alone bounds the DRAM pipe.
  double bytes_in_flight_per_thread = 0;
  // DRAM round trips each wave of such CTAs waits, in series, beyond its own loads' (which Little's
  // law counts from the bytes in flight): a norm's block reduction, its second pass over the row
  // (the row again from L2, the weight), its stores and the next CTA's start. Added to the latency
  // time of the DRAM pipe, per wave after the first (dram_time_with_latency's chain_time): the first
  // wave's chain overlaps the launch (a one-wave norm of our collector takes 1.9-3.6 us, measured).
  double chain_round_trips_per_wave = 0;
  // The kernel issues warp-level MMA (mma.sync: written for sm80, warp_level_mma_kernel), which on a
  // GPU whose own tensor path is faster (Hopper's warpgroup MMA) reaches only its measured rate
  // (HardwareRates::Achievable::mma_sync_flops_per_clk): there its achievable tensor cycles use that
  // rate and add the SM's other pipes in series (finish_analysis). Set for attention kernels, where
  // our FlashAttention-2 and cuDNN measurements on the H100 and H200 check it, and for GEMMs written
  // for sm80 or older (cuBLAS's cutlass_80 / cutlass_75 kernels on Hopper), whose tiles also come
  // through L2 at the load rate, not the bulk-copy rate: together with the operand load width as a
  // feature (features.h operand_load_bytes) this lowers their held-out error (gemm_model.cpp analyze_gemm).
  bool warp_level_mma = false;
  std::optional<TileConfig> tile;  // GEMM-like kernels: the tile the model assumes
  // "kernel name", "given", "tuner", "heuristic" (chosen per shape, GEMM: gemm_model.h), or
  // "architecture default" (one tile per architecture and head dim:
  // attention prefill).
  std::string tile_origin;
  // Ideal cycles per pipe at the boost clock, indexed by Pipe: balanced over all SMs, and for the
  // busiest SM after the CTA schedule. Launch and link are in cycles too.
  std::array<double, kPipeCount> cycles_balanced{};
  std::array<double, kPipeCount> cycles_busiest{};
  // A lower bound on the kernel's duration, whatever the caches hold: compulsory bytes that fit
  // in L2 may be served from it (benchmarks repeat kernels; a serving step's activations were
  // just written by the previous kernel).
  double ceiling_us = 0;
  double ceiling_cycles_by_pipe[kPipeCount] = {};  // what each pipe contributes to the ceiling
  // The pipe that limits the kernel when its operands stream from DRAM (cold caches), judged on
  // the busiest SM: what a kernel inside a serving step usually faces for its weights.
  Pipe bound = Pipe::launch;
  // The roofline time with cold caches on the busiest SM (the bound's time plus fixed costs):
  // the estimate a roofline-only model makes, and what the baseline predictor scales.
  double roofline_us = 0;
  // The same with the achievable rates (HardwareRates::achievable): what the learned model reads
  // and scales. Equal to the above where a pipe reaches its peak.
  std::array<double, kPipeCount> achievable_cycles_balanced{};
  std::array<double, kPipeCount> achievable_cycles_busiest{};
  // The L2 rate, in bytes per second, behind achievable_cycles_*[l2]: the GPU's bulk-copy rate for a
  // tensor-core GEMM not written for sm80, its load rate otherwise (finish_analysis). The learned
  // model reads a GEMM's memory cycles against it (features.cpp, kReferenceL2BytesPerS).
  double achievable_l2_bytes_per_s = 0;
  double achievable_roofline_us = 0;
  // The share of the GPU's launch offset (its own launch floor less the one in
  // achievable_roofline_us: AchievableRates::launch_offset_us) this kernel pays: all of it at the
  // floor, floor / achievable_roofline_us of it above. The learned model's time is
  // achievable_roofline_us x its factor + this.
  double launch_offset_us = 0;
  double extra_us = 0;  // fixed latencies outside the pipes (communication steps)
  // SM cycles (at the boost clock) the kernel spends in series with its pipes, which overlap each
  // other: a GEMM's pipeline fill and epilogue (kGemmFixedCycles, families/gemm/gemm_model.h), an
  // attention kernel's first loads and epilogue (kAttentionFixedCycles, families/family_models.h). Part of
  // the achievable roofline, which the learned model scales, and not of the datasheet roofline or the
  // ceiling: a typical cost, not a bound (the smallest GEMMs take less than it).
  double fixed_cycles = 0;
  // A family's own calibrated estimate of the duration, where measurements fitted one and no
  // learned model exists (collectives: measured NCCL curves carried by the NCCL model,
  // families/communication/nccl_model.h). The predictors use it instead of roofline / efficiency.
  std::optional<double> estimate_us;
  std::string estimate_origin;
};

// Per-SM, per-clock rates of a GPU's pipes. The flat fields are the datasheet peaks, which the
// roofline ceiling uses so that it stays a lower bound (a calibration's GEMM runs at the power limit;
// kernels at other shapes beat it). `achievable` are the rates the pipes reach in practice: the
// learned model's view (features, and the roofline time it scales).
struct HardwareRates {
  double clock_hz = 0;
  int sms = 0;
  double tensor_flops_per_clk = 0;      // per SM, for the kernel's dtype; 0 if none
  double fma_flops_per_clk = 0;         // per SM
  double sfu_ops_per_clk = 0;           // per SM
  double dram_bytes_per_clk = 0;        // whole GPU
  double dram_write_bytes_per_clk = 0;  // whole GPU, stores
  double l2_bytes_per_clk = 0;          // whole GPU
  double smem_bytes_per_clk = 0;        // per SM
  double link_bytes_per_s = 0;          // one direction, per GPU
  double launch_floor_us = 0;           // shortest duration any kernel has
  double max_smem_per_sm_bytes = 0, max_smem_per_block_bytes = 0;
  int max_threads_per_sm = 2048, max_blocks_per_sm = 32, registers_per_sm = 65536;
  double l2_bytes = 0;
  // Same units as the peaks above, at the boost clock: a calibration measured on this GPU
  // (target-measured tier, `calibrated`), else the peaks times the default achievable fractions
  // (cross-generation tier; model/calibration.h).
  struct Achievable {
    double tensor_flops_per_clk = 0, fma_flops_per_clk = 0, sfu_ops_per_clk = 0;
    double dram_bytes_per_clk = 0, dram_write_bytes_per_clk = 0, l2_bytes_per_clk = 0, smem_bytes_per_clk = 0;
    double launch_floor_us = 0;
    double launch_offset_us = 0;     // AchievableRates::launch_offset_us
    double dram_latency_cycles = 0;  // 0: unknown
    // Warp-level MMA (PipeRates::mma_sync_flops_per_s) per SM and clock; 0: the tensor rate.
    double mma_sync_flops_per_clk = 0;
    // L2 through bulk copies (PipeRates::l2_bulk_bytes_per_s) per clock: a tensor-core GEMM's L2 rate
    // (finish_analysis). The datasheet set (above) has one L2 figure for both.
    double l2_bulk_bytes_per_clk = 0;
  } achievable;
  bool calibrated = false;
};

HardwareRates hardware_rates(const GpuSpec& gpu, Dtype dtype);

// Fills ctas_per_sm, waves, last_wave_fill, busiest share and active fraction for `ctas` equal CTAs.
CtaPlan plan_uniform_ctas(double ctas, int ctas_per_sm, int threads_per_cta, const HardwareRates& hw);
// Concurrent CTAs per SM from the CTA's threads, registers and shared memory.
int occupancy(int threads_per_cta, int registers_per_thread, double smem_bytes_per_cta, const HardwareRates& hw);

// The DRAM time of `read_bytes` read with `in_flight_bytes` in flight at once (Little's law), next to
// the time the bandwidth alone takes: bandwidth B over in-flight bytes N follows
// B = (Bmax^-3 + (N / latency)^-3)^(-1/3), so the two times combine as a cube norm. `chain_time`:
// waits in series with the loads (Analysis::chain_round_trips_per_wave), added to the latency's
// time. Any one time unit (cycles, seconds) for the times and `latency`.
double dram_time_with_latency(double bandwidth_time, double read_bytes, double in_flight_bytes, double latency,
                              double chain_time = 0);

// Turns demand and plan into cycles per pipe, ceiling and bound. `busiest_share` of the on-SM pipes'
// demand lands on the busiest SM.
void finish_analysis(Analysis& a, const HardwareRates& hw);

}  // namespace perfloom
