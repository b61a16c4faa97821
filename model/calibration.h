#pragma once
// The target-measured tier (DESIGN.md: two accuracy tiers). A short calibration sweep on the
// target GPU (tools/collector/calibrate.cu; schema "perfloom-calibration/1", tools/collector/FORMAT.md)
// measures what each pipe reaches in practice. For a GPU with a calibration these measured rates are
// what the learned model reads; for any other GPU (cross-generation tier) its datasheet peaks times
// the mean fraction of their peaks that the calibrated GPUs reach, so that the features mean
// "expected achievable rate" on every GPU. The roofline ceiling keeps the datasheet peaks: it must
// stay a lower bound, and a calibration's large GEMM runs at the power limit, slower than kernels
// at other shapes can.
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/gpu_spec.h"
#include "model/input_error.h"
#include "model/power.h"

namespace perfloom {

// One calibration file: the measured figures perfloom uses.
struct Calibration {
  std::string file;      // where it came from, for messages and reports
  std::string gpu_name;  // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  double dram_read_gb_s = 0, l2_gb_s = 0;
  // Optional "measured.l2_bulk_gb_s": the L2 through bulk copies into shared memory (PipeRates::
  // l2_bulk_bytes_per_s); 0: not measured.
  double l2_bulk_gb_s = 0;
  // Optional "measured.dram_write_gb_s" (perfloom-calibrate's store sweep); 0: not measured: this
  // GPU's stores take the default fraction of its datasheet figure, and the defaults average its
  // read fraction for it.
  double dram_write_gb_s = 0;
  double fp32_tflops = 0, sfu_gops = 0, smem_gb_s_per_sm = 0;
  double empty_kernel_us = 0;
  double launch_overhead_us = 0;    // 0: not given
  double clock_mhz_under_load = 0;  // 0: not given
  // Optional "measured.dram_latency_littles_law_ns": bytes in flight / bandwidth far below the peak
  // (perfloom-calibrate's read sweep over bytes in flight per SM); 0: not measured.
  double dram_latency_ns = 0;
  // By the tensor keys of GpuSpec (fp16 bf16 tf32 fp8 int8); the file's fp8e4m3 is fp8.
  std::map<std::string, double> tensor_tflops;
  // Optional "measured.mma_sync_tflops", by the same keys: what warp-level MMA (mma.sync, the tensor
  // path of Ampere and Ada, which kernels written for sm80 still issue on later GPUs) reaches; empty:
  // not measured.
  std::map<std::string, double> mma_sync_tflops;
  // The optional "sustained_power" block: the sustained-power probe's load levels (model/power.h).
  std::optional<SustainedPower> sustained_power;
};

// A calibration file perfloom refuses; what() reads "FILE: field 'FIELD': REASON".
class CalibrationError : public InputError {
 public:
  using InputError::InputError;
};

// Parses and validates one calibration file. `file_label` names the file in error messages.
Calibration parse_calibration(std::string_view json_text, const std::string& file_label);
Calibration read_calibration_file(const std::filesystem::path& path);

// Measured / datasheet (datasheet_rates) per pipe and tensor dtype.
struct AchievableFractions {
  std::map<std::string, double> tensor;  // by tensor key
  double tensor_any = 1;                 // mean over every key: for a key no calibration measured (fp4)
  double fma = 1, sfu = 1, dram = 1, l2 = 1, smem = 1, launch = 1;
  double dram_write = 1;  // stores' DRAM bandwidth (the datasheet's one DRAM figure is the peak)
  // Not a fraction: the DRAM latency itself (no datasheet states one), the mean over the GPUs that
  // measured it; 0: none did.
  double dram_latency_ns = 0;
  // Warp-level MMA's rate over the datasheet's tensor peak, by architecture and tensor key: it is a
  // property of the SM's design, so a GPU without a calibration takes its own architecture's mean
  // (none measured: warp-level MMA is assumed to reach the tensor rate, as it does up to Ada).
  std::map<std::string, std::map<std::string, double>> mma_sync_by_architecture;
  // Bulk-copy L2 (PipeRates::l2_bulk_bytes_per_s) over the datasheet's L2 figure, by architecture: a
  // GPU without a calibration takes its architecture's mean; an architecture none measured it on keeps
  // its one L2 rate (on Blackwell, which has bulk copies too, the Hopper fraction costs the held-out
  // A40 and T4 GEMMs 0.5-0.7 points).
  std::map<std::string, double> l2_bulk_by_architecture;
  std::vector<std::string> from;  // the GPUs averaged
};

// Throws CalibrationError unless `c` was measured on `gpu`: its driver name is the spec's id, name
// or an alias (case-insensitively), the SM counts agree, and the rates are within a plausible
// range of the datasheet's (0.05x to 2x: another GPU, or a unit mistake, otherwise).
AchievableFractions achievable_fractions(const Calibration& c, const GpuSpec& gpu);
// The per-pipe, per-dtype mean of several GPUs' fractions; all 1 (the datasheet) when empty.
AchievableFractions mean_fractions(const std::vector<AchievableFractions>& per_gpu);

// Target-measured: the calibration's pipe rates (a dtype it did not measure: datasheet x `defaults`;
// the launch floor: datasheet x `defaults`, see calibration.cpp).
AchievableRates measured_rates(const Calibration& c, const GpuSpec& gpu, const AchievableFractions& defaults);
// The sustained-power curve of the calibration's "sustained_power" block on `gpu`, or nothing when it
// has none. Throws CalibrationError (field "sustained_power") when the block cannot make a curve.
std::optional<SustainedPowerCurve> sustained_power_curve(const Calibration& c, const GpuSpec& gpu);
// Cross-generation: the datasheet peaks times `defaults`.
AchievableRates estimated_rates(const GpuSpec& gpu, const AchievableFractions& defaults);

// The calibrations bundled with perfloom (resources/calibration/*.json, embedded at build time).
std::vector<Calibration> bundled_calibrations();
// The default fractions over every bundled calibration (what the shipped models were trained
// with), and the cross-generation rates from them: for a GpuSpec that no database has set up.
// Derived at start-up, never typed in: for each pipe the mean over the calibrated GPUs of
// measured / datasheet_rates(). With the H100 SXM and H200 sweeps of 2026-11-21 (measured / peak,
// H100 | H200 -> mean): DRAM read 0.929 | 0.969 -> 0.949; L2 (against the per-architecture guess)
// 0.529 | 0.567 -> 0.548; FP32 0.988 | 0.988 -> 0.988; SFU 1.080 | 1.077 -> 1.079 and shared memory
// 1.059 | 1.059 -> 1.059 (both run above the 1830 MHz boost clock the peaks assume); tensor bf16
// 0.808 | 0.814 -> 0.811, fp16 0.791 | 0.768 -> 0.780, tf32 0.828 | 0.826 -> 0.827, fp8 0.707 |
// 0.706 -> 0.707, int8 0.683 | 0.758 -> 0.720 (fp4: the mean of those, 0.769); launch floor
// (empty kernel against 1 us) 0.927 | 0.672 -> 0.800.
const AchievableFractions& bundled_default_fractions();
AchievableRates default_achievable_rates(const GpuSpec& gpu);

}  // namespace perfloom
