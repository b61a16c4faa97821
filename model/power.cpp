#include "model/power.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/analysis.h"
#include "model/calibration.h"
#include "model/json_fields.h"

namespace perfloom {

using nlohmann::json;

namespace {

// Pool-adjacent-violators: the non-decreasing sequence closest to `y` in least squares.
std::vector<double> isotonic(const std::vector<double>& y) {
  std::vector<double> value;
  std::vector<int> size;
  for (double v : y) {
    value.push_back(v);
    size.push_back(1);
    while (value.size() > 1 && value[value.size() - 2] > value.back()) {
      const std::size_t n = value.size();
      const double merged = (value[n - 2] * size[n - 2] + value[n - 1] * size[n - 1]) / (size[n - 2] + size[n - 1]);
      size[n - 2] += size[n - 1];
      value[n - 2] = merged;
      value.pop_back();
      size.pop_back();
    }
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i) out.insert(out.end(), static_cast<std::size_t>(size[i]), value[i]);
  return out;
}

}  // namespace

SustainedPower parse_sustained_power(const json& block, const std::string& file) {
  using R = NumberRange;
  const JsonFields r = JsonValue(block, file, &throw_field_error<CalibrationError>, "sustained_power").object();
  SustainedPower s;
  s.power_limit_w = r.number_or("power_limit_w", 0, R::between(1, 10000));
  s.probe = r.string_or("probe", "");
  const JsonValue levels = r.required("levels");
  const std::vector<JsonValue> entries = levels.array();
  if (entries.size() < 2)
    levels.fail("expected an array of at least two load levels, got " + json_excerpt(levels.value()));
  for (const JsonValue& entry : entries) {
    const JsonFields l = entry.object();
    SustainedPowerLevel lv;
    lv.label = l.string_or("label", "");
    lv.tensor_tflops = l.number("tensor_tflops", R::between(0, 100000));
    // A slowdown outside 0.5-3x is a broken measurement, not a power limit.
    lv.gemm_factor = l.number_or("gemm_factor", 0, R::between(0.5, 3));
    lv.memory_factor = l.number("memory_factor", R::between(0.5, 3));
    lv.sm_clock_mhz = l.number_or("sm_clock_mhz", 0, R::between(0, 10000));
    lv.power_w = l.number_or("power_w", 0, R::between(0, 10000));
    if (lv.tensor_tflops > 0 && lv.gemm_factor == 0)
      l.fail("gemm_factor", "is required where tensor_tflops is above 0");
    s.levels.push_back(lv);
  }
  s.rise_ms = r.number_or("rise_ms", 0, R::between(0.1, 100000));
  s.fall_ms = r.number_or("fall_ms", 0, R::between(0.1, 100000));
  if ((s.rise_ms > 0) != (s.fall_ms > 0))
    r.fail(s.rise_ms > 0 ? "fall_ms" : "rise_ms", "is required with the other response time");
  return s;
}

SustainedPowerCurve SustainedPowerCurve::fit(const SustainedPower& measured, double bf16_peak, std::string origin,
                                             double max_clock_mhz) {
  if (!(bf16_peak > 0)) throw std::invalid_argument("sustained power: the GPU has no bf16 tensor peak to scale by");
  struct Raw {
    double u, compute, memory;
  };
  std::vector<Raw> raw;
  for (const SustainedPowerLevel& l : measured.levels) {
    // Throughput at burst speed: the level did the same work in 1/slowdown of the time.
    const double slowdown = l.gemm_factor > 0 ? l.gemm_factor : l.memory_factor;
    const double u = l.tensor_tflops * 1e12 * slowdown / bf16_peak;
    const bool at_max_clock = max_clock_mhz > 0 && l.sm_clock_mhz >= 0.99 * max_clock_mhz;
    if (at_max_clock)
      raw.push_back({u, l.gemm_factor > 0 ? 1.0 : 0.0, 1.0});
    else
      raw.push_back({u, l.gemm_factor > 0 ? l.gemm_factor : 0.0, l.memory_factor});
  }
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.u < b.u; });
  if (std::count_if(raw.begin(), raw.end(), [](const Raw& r) { return r.compute > 0; }) < 2)
    throw std::invalid_argument("sustained power: fewer than two load levels ran a GEMM");
  // Each factor at least 1 and non-decreasing in the utilisation; a level without a GEMM (a copy)
  // informs the memory slowdown only, and its compute slowdown is the curve's at its utilisation.
  std::vector<double> c, m;
  for (const Raw& r : raw) m.push_back(std::max(1.0, r.memory));
  for (const Raw& r : raw)
    if (r.compute > 0) c.push_back(std::max(1.0, r.compute));
  m = isotonic(m);
  c = isotonic(c);
  SustainedPowerCurve curve;
  curve.origin_ = std::move(origin);
  curve.rise_ms_ = measured.rise_ms;
  curve.fall_ms_ = measured.fall_ms;
  std::size_t ci = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    Point pt;
    pt.utilization = raw[i].u;
    pt.factors.memory = m[i];
    pt.factors.compute = raw[i].compute > 0 ? c[ci++] : (ci > 0 ? c[ci - 1] : 1.0);
    curve.points_.push_back(pt);
  }
  // A copy-only level sorted before the first GEMM level took 1 above; with the isotonic GEMM
  // curve that is at most its value, so the compute curve stays non-decreasing.
  return curve;
}

SustainedPowerCurve SustainedPowerCurve::scaled(const SustainedPowerCurve& ref, double ratio, std::string origin) {
  if (!(ratio > 0) || !std::isfinite(ratio) || ref.points_.empty())
    throw std::invalid_argument("sustained power: no reference curve or no tensor throughput per watt to scale by");
  SustainedPowerCurve curve;
  curve.origin_ = std::move(origin);
  curve.rise_ms_ = ref.rise_ms_;
  curve.fall_ms_ = ref.fall_ms_;
  for (const Point& p : ref.points_) curve.points_.push_back({p.utilization / ratio, p.factors});
  // A GPU that draws more per unit of load (ratio > 1) reaches, between the reference's highest
  // load over the ratio and that load itself (about the most a GEMM gets of the pipes), demands the
  // reference was never measured at: the slowdown of the square-root law there.
  const Point last = curve.points_.back();
  const double kTop = ref.points_.back().utilization;
  if (last.utilization > 0 && last.utilization < kTop)
    for (double k : {1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0}) {
      const double u = last.utilization * k;
      Point pt{std::min(u, kTop), last.factors};
      pt.factors.compute = last.factors.compute * std::sqrt(std::min(u, kTop) / last.utilization);
      curve.points_.push_back(pt);
      if (u >= kTop) break;
    }
  return curve;
}

PowerFactors SustainedPowerCurve::at(double u) const {
  if (points_.empty()) return {};
  if (u <= points_.front().utilization) return points_.front().factors;
  if (u >= points_.back().utilization) return points_.back().factors;
  auto hi =
      std::upper_bound(points_.begin(), points_.end(), u, [](double x, const Point& p) { return x < p.utilization; });
  auto lo = hi - 1;
  const double span = hi->utilization - lo->utilization;
  const double t = span > 0 ? (u - lo->utilization) / span : 1.0;
  return {lo->factors.compute + t * (hi->factors.compute - lo->factors.compute),
          lo->factors.memory + t * (hi->factors.memory - lo->factors.memory)};
}

SustainedPowerCurve::Lagged SustainedPowerCurve::lag(double before, double idle_us, double load,
                                                     double duration_us) const {
  const double start = before * std::exp(-std::max(0.0, idle_us) / (fall_ms_ * 1e3));
  const double tau_us = (load >= start ? rise_ms_ : fall_ms_) * 1e3;
  if (!(duration_us > 0)) return {start, start};
  const double decay = std::exp(-duration_us / tau_us);
  // The lag's mean over the step: load + (start - load) x tau / T x (1 - e^(-T / tau)).
  return {load + (start - load) * tau_us / duration_us * (1 - decay), load + (start - load) * decay};
}

double clock_bound_share(const Analysis& a) {
  const auto& c = a.achievable_cycles_busiest;
  auto at = [&](Pipe p) { return c[static_cast<std::size_t>(p)]; };
  const double core = std::max({at(Pipe::tensor), at(Pipe::fma), at(Pipe::sfu), at(Pipe::l2), at(Pipe::smem)});
  const double dram = at(Pipe::dram);
  return dram <= 0 || core >= dram ? 1.0 : core / dram;
}

}  // namespace perfloom
