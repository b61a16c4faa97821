#pragma once
// One GPU's specification, read from a file in gpus/. Every rate is a dense (non-sparse) figure.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/power.h"

namespace perfloom {

struct Interconnect {
  double nvlink_bandwidth_gb_s = 0.0;  // total, both directions, as datasheets state it; 0: none
  int pcie_gen = 0;
  double pcie_bandwidth_gb_s = 0.0;  // x16, both directions
};

// A GPU's pipe rates per second: whole GPU, except shared memory (per SM). Tensor rates by the keys
// of GpuSpec::tensor_flops_per_sm_per_clock (fp16 bf16 tf32 fp8 int8 fp4).
struct PipeRates {
  std::map<std::string, double> tensor_flops_per_s;
  double fma_flops_per_s = 0, sfu_ops_per_s = 0;
  double dram_bytes_per_s = 0, l2_bytes_per_s = 0, smem_bytes_per_s_per_sm = 0;
  // DRAM bandwidth of stores: `dram_bytes_per_s` is the reads'. A datasheet gives one figure for
  // both; calibrations measure them apart (H100: read 3,113, write 3,199 GB/s; H200: 4,650, 4,352).
  double dram_write_bytes_per_s = 0;
  double launch_floor_us = 0;  // shortest duration of any kernel
  // Not a rate: the DRAM latency that limits a kernel whose threads keep few bytes in flight
  // (Little's law, model/analysis.cpp finish_analysis); 0: unknown (no datasheet states it).
  double dram_latency_ns = 0;
  // What warp-level MMA (mma.sync) reaches, by tensor key, where it differs from the tensor rate: on
  // Hopper, kernels written for sm80 (FlashAttention-2, cuDNN's and CUTLASS's sm80 kernels) cannot
  // use the warpgroup MMA. Empty or a key missing: the tensor rate (Ampere and Ada, whose tensor path
  // it is; later architectures that no calibration measured).
  std::map<std::string, double> mma_sync_flops_per_s;
  // L2 read through bulk copies into shared memory (cp.async.bulk, the tensor memory accelerator of
  // Hopper and later), how warpgroup-MMA GEMMs (cuBLASLt's nvjet kernels) stream their tiles: measured
  // 8,449 GB/s on an H100 and 9,515 on an H200, where loads reach 8,150 and 8,576 (finish_analysis).
  // 0: the L2 rate (architectures that no calibration measured it on, datasheets).
  double l2_bulk_bytes_per_s = 0;
};

// The rates a GPU's pipes reach in practice (DESIGN.md: the two accuracy tiers). Target-measured:
// a calibration sweep on this GPU (model/calibration.h). Cross-generation: the datasheet peaks times
// the mean fraction of them that the calibrated GPUs reach.
struct AchievableRates {
  PipeRates rates;
  bool measured = false;  // true: from a calibration of this GPU
  std::string origin;     // the calibration file, or how the defaults were derived
  // The GPU's own launch floor (its measured empty kernel) less `rates.launch_floor_us`, the floor
  // every GPU's features share: a kernel's share of it (Analysis::launch_offset_us) is added to the
  // learned model's time (model/training.h learned_time_us), not to its features. 0 without a
  // calibration.
  double launch_offset_us = 0;
};

struct GpuSpec {
  std::string id;                    // short id, e.g. "h100-sxm"
  std::string name;                  // marketing name
  std::string vendor;                // "nvidia", "amd", "intel"
  std::vector<std::string> aliases;  // driver-reported names and common short names
  std::string architecture;          // "hopper", "ampere", ...
  std::string compute_capability;    // "9.0"

  int sm_count = 0;
  double boost_clock_mhz = 0.0;                                 // the clock the vendor's peak rates are computed at
  double max_clock_mhz = 0.0;                                   // 0: not given
  std::map<std::string, double> tensor_flops_per_sm_per_clock;  // keys: fp16 bf16 tf32 fp8 int8 fp4
  int fp32_lanes_per_sm = 0;
  int fp64_lanes_per_sm = 0;  // 0: not given
  double sfu_ops_per_sm_per_clock = 16.0;

  double memory_gib = 0.0;
  std::string memory_type;
  double memory_bandwidth_gb_s = 0.0;
  double l2_cache_mib = 0.0;
  double shared_memory_per_sm_kib = 0.0;
  double max_shared_memory_per_block_kib = 0.0;
  int registers_per_sm = 65536;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  Interconnect interconnect;
  double tdp_w = 0.0;  // 0: not given

  // Set by GpuDatabase (a calibration of this GPU, else the default fractions); unset: the bundled
  // calibrations' default fractions (hardware_rates in model/analysis.h).
  std::optional<AchievableRates> achievable;
  // Set by GpuDatabase (model/power.h): how much slower kernels run at the power limit, measured
  // where this GPU's calibration has a sustained-power block, else a measured GPU's curve scaled by
  // tensor peak per watt of TDP (SustainedPowerCurve::scaled). Unset (no TDP or no 16-bit tensor
  // peak in the GPU file, or no measured curve at all): burst clocks only.
  std::optional<SustainedPowerCurve> sustained;

  std::map<std::string, std::string> sources;  // field name -> document and figure used
  std::string source_file;                     // e.g. "gpus/h100-sxm.json"

  // Dense tensor-core throughput in FLOP/s (OP/s for int8) at the boost clock, or nothing
  // when the GPU has no tensor-core path for this dtype. fp32 is answered from the FMA lanes.
  std::optional<double> peak_flops_per_s(Dtype d) const;
  double fp32_flops_per_s() const;  // 2 FLOPs per FMA lane per clock
  double memory_bandwidth_bytes_per_s() const { return memory_bandwidth_gb_s * 1e9; }
  double clock_hz() const { return boost_clock_mhz * 1e6; }
  bool supports(Dtype d) const { return d == Dtype::fp32 || peak_flops_per_s(d).has_value(); }
};

// The datasheet peaks as the analytical model takes them: the spec's figures at the boost clock, L2
// bandwidth from a per-architecture guess (datasheets do not give it), shared memory 128 B/clk/SM,
// a 1 us launch floor. The roofline ceiling is built on these so that it stays a lower bound.
PipeRates datasheet_rates(const GpuSpec& gpu);
double datasheet_l2_bytes_per_clk_per_sm(const std::string& architecture);
// Shared memory: 32 banks x 4 bytes per clock per SM on every NVIDIA architecture since Kepler.
inline constexpr double kSmemBytesPerClkPerSm = 128.0;
// The shortest duration the datasheet tier gives any kernel.
inline constexpr double kDatasheetLaunchFloorUs = 1.0;

}  // namespace perfloom
