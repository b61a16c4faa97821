#pragma once
// Sustained power (issue 7): how much slower kernels run once a GPU sits at its power limit.
//
// perfloom's kernel models learn from short measurements, which run at the boost clock ("burst").
// A serving step that keeps the tensor cores busy for hundreds of milliseconds drives the GPU to
// its power limit and the SM clock falls: on an H100 SXM or H200 at 700 W from 1980 MHz to about
// 1350-1500 MHz, and a Llama-3-8B gate-up GEMM takes 1.16-1.21x its burst time
// (data/power/sustained_power_*.json). How much depends on how hard the step drives the GPU.
//
// The sustained-power probe (tools/power/power_probe.py) runs load levels, from compute-bound GEMMs
// through weight-streaming GEMMs to a plain copy, some with the GPU idle part of the time, and
// measures each level's average tensor throughput and how much slower its GEMM ("compute") and its
// copy ("memory") run sustained than in a burst. Its levels travel in the GPU's calibration file
// (the optional "sustained_power" block of perfloom-calibration/1, tools/collector/FORMAT.md).
//
// The curve: each level's tensor utilisation (its tensor throughput at burst speed, i.e. measured
// x its slowdown, over the GPU's dense bf16 datasheet peak) against its two slowdowns, each made
// at least 1 and non-decreasing in the utilisation (isotonic regression: a sustained kernel is not
// faster than a burst, and more load does not throttle less; the few levels measured below 1 are
// clock ramp-up inside their burst window), linear between levels, flat beyond the ends. A level
// whose SM clock stayed at the GPU's highest clock was not held back by the power limit: its slowdowns are
// taken as 1. (The probe's duty-cycled levels measured 1.04 there: each of their GEMMs follows an
// idle gap, and the first kernel after a gap of 2 ms or more runs 15-50% slower, a wake-up cost per
// gap that a per-kernel factor for the whole step would charge to every kernel.)
// A step's utilisation is its tensor work at the datasheet peak over its burst duration, host time
// included (model/sim/step_cost.h applies it).
//
// Across the steps of a simulation the GPU's load is lagged: the power limit takes hold within tens of
// milliseconds of busy time and lets go within tens of milliseconds of idle time
// (tools/power/power_response.py: rise 110 ms on our H100 SXM, 48 ms on our H200, fall 31 and 28 ms,
// first-order lags fitted to a GEMM ramp after 3 s idle and to GEMMs after idle gaps of 2-1000 ms).
// A step then runs at the slowdown of its mean lagged load: a lone prefill after idle runs near its
// burst time, a long stream of prefills at the sustained one. Without the response times (a curve
// from the load levels alone) every step runs at its own steady state. Against measured prefill
// sequences (tools/power/step_sequence.py, compare_sequence.py) it is better than burst clocks, but on
// those steps not better than the steady state per step (the limit bites within 25-75 ms, inside one
// long step).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace perfloom {

// One load level of the probe, as measured.
struct SustainedPowerLevel {
  std::string label;
  double tensor_tflops = 0;  // average tensor throughput over the sustained window's wall time
  double gemm_factor = 0;    // sustained / burst time of the level's GEMM; 0: the level ran no GEMM
  double memory_factor = 1;  // the same for its memory-bound copy
  double sm_clock_mhz = 0;   // mean SM clock over the sustained window (0: not given)
  double power_w = 0;        // mean board power over it (0: not given)
};

struct SustainedPower {
  double power_limit_w = 0;  // 0: not given
  std::string probe;         // how it was measured
  std::vector<SustainedPowerLevel> levels;
  double rise_ms = 0, fall_ms = 0;  // the limit's response times; 0: not measured
};

// A GPU's lagged tensor load across the steps of a simulation.
struct PowerHistory {
  double utilization = 0;  // the lagged load when the last step ended
  double end_us = 0;       // when that was
  bool started = false;    // false: the GPU has been idle since forever
};

// Parses the "sustained_power" block of a calibration file. Throws CalibrationError naming the file,
// the field ("sustained_power.levels[3].gemm_factor") and the reason.
SustainedPower parse_sustained_power(const nlohmann::json& block, const std::string& file);

struct PowerFactors {
  double compute = 1;  // for the clock-bound part of a kernel (tensor, FMA, SFU, shared memory, L2)
  double memory = 1;   // for the DRAM-bound part
};

struct Analysis;
// The part of a kernel's time bound by SM-clocked pipes rather than by DRAM: 1 when a core pipe
// (tensor, FMA, SFU, L2, shared memory) needs at least as many cycles as DRAM, else their ratio.
double clock_bound_share(const Analysis& a);
// How much slower a kernel with that clock-bound share runs at those factors.
inline double sustained_slowdown(const PowerFactors& f, double clock_share) {
  return f.memory + clock_share * (f.compute - f.memory);
}

class SustainedPowerCurve {
 public:
  struct Point {
    double utilization = 0;
    PowerFactors factors;
  };
  SustainedPowerCurve() = default;
  // `bf16_peak_flops_per_s`: the GPU's dense bf16 datasheet peak (the utilisation's unit);
  // `max_clock_mhz`: the highest SM clock (GpuSpec::max_clock_mhz, else its boost clock); levels
  // that ran at it (within 1%) are not power-limited (0: no such rule).
  // Throws std::invalid_argument when fewer than two levels have a GEMM.
  static SustainedPowerCurve fit(const SustainedPower& measured, double bf16_peak_flops_per_s, std::string origin,
                                 double max_clock_mhz = 0);

  // The curve of a GPU nobody here measured, from one that was (issue #58). A GPU's tensor pipes draw
  // in proportion to the tensor throughput they deliver, so a GPU whose dense 16-bit datasheet peak
  // per watt of TDP is `ratio` times the reference's draws at utilisation u what the reference draws
  // at u x ratio, and is slowed as much: each measured point moves to u / ratio. Past the highest
  // load measured, the compute slowdown grows as the square root of the power demand (dynamic power
  // goes as f V^2, about f^2 in the boost range: H100 SXM at 700 W and 1352 MHz under a large GEMM
  // against 655 W at 1980 MHz under a lighter one). A GPU with little tensor throughput per watt
  // (H20, GeForce parts at half-rate FP32 accumulation) never reaches its limit: its slowdown is 1
  // at any load its pipes can give. Assumes the reference's energy per tensor operation and idle
  // share of TDP; the lag times are the reference's.
  static SustainedPowerCurve scaled(const SustainedPowerCurve& reference, double ratio, std::string origin);

  // The slowdowns of a GPU whose tensor pipes are busy `tensor_utilization` of the time at burst speed.
  PowerFactors at(double tensor_utilization) const;
  const std::vector<Point>& points() const { return points_; }
  const std::string& origin() const { return origin_; }

  bool has_response() const { return rise_ms_ > 0 && fall_ms_ > 0; }
  double rise_ms() const { return rise_ms_; }
  double fall_ms() const { return fall_ms_; }
  // A step of `duration_us` at steady load `load` after `idle_us` of idle since `before` (the lagged
  // load then): the mean lagged load over the step, and the lagged load at its end. Needs has_response().
  struct Lagged {
    double mean = 0, at_end = 0;
  };
  Lagged lag(double before, double idle_us, double load, double duration_us) const;

  // A kernel repeated back to back (a benchmark loop, a long stream of its launches) at the power
  // state it holds the GPU in: its tensor work at the datasheet peak takes `tensor_us` of each
  // `burst_us` (the utilisation), `clock_share` of its time is clock-bound (clock_bound_share).
  // The slowdown of its burst time.
  double repeated_kernel_slowdown(double burst_us, double tensor_us, double clock_share) const {
    return sustained_slowdown(at(burst_us > 0 ? tensor_us / burst_us : 0.0), clock_share);
  }

 private:
  std::vector<Point> points_;  // by utilisation
  std::string origin_;
  double rise_ms_ = 0, fall_ms_ = 0;
};

}  // namespace perfloom
