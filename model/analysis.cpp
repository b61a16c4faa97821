#include "model/analysis.h"

#include <algorithm>
#include <cmath>

#include "model/calibration.h"

namespace perfloom {

PipeDemand& PipeDemand::operator+=(const PipeDemand& o) {
  tensor_flops += o.tensor_flops;
  fma_flops += o.fma_flops;
  sfu_ops += o.sfu_ops;
  dram_bytes += o.dram_bytes;
  dram_write_bytes += o.dram_write_bytes;
  l2_bytes += o.l2_bytes;
  smem_bytes += o.smem_bytes;
  link_bytes += o.link_bytes;
  return *this;
}

PipeDemand PipeDemand::scaled(double f) const {
  PipeDemand d = *this;
  d.tensor_flops *= f;
  d.fma_flops *= f;
  d.sfu_ops *= f;
  d.dram_bytes *= f;
  d.dram_write_bytes *= f;
  d.l2_bytes *= f;
  d.smem_bytes *= f;
  d.link_bytes *= f;
  return d;
}

HardwareRates hardware_rates(const GpuSpec& gpu, Dtype dtype) {
  HardwareRates hw;
  hw.clock_hz = gpu.clock_hz();
  hw.sms = gpu.sm_count;
  const double per_sm_clk = hw.clock_hz * gpu.sm_count;
  const auto key = tensor_rate_key(dtype);
  // A rate by tensor key (PipeRates::tensor_flops_per_s, mma_sync_flops_per_s) per SM and clock; 0: none.
  auto per_sm_clk_of = [&](const std::map<std::string, double>& by_key) {
    if (!key) return 0.0;
    auto it = by_key.find(std::string(*key));
    return it == by_key.end() ? 0.0 : it->second / per_sm_clk;
  };
  // The datasheet peaks (datasheet_rates), computed here without building its map: a hot path.
  if (key) {
    auto it = gpu.tensor_flops_per_sm_per_clock.find(std::string(*key));
    if (it != gpu.tensor_flops_per_sm_per_clock.end()) hw.tensor_flops_per_clk = it->second;
  }
  hw.fma_flops_per_clk = 2.0 * gpu.fp32_lanes_per_sm;
  hw.sfu_ops_per_clk = gpu.sfu_ops_per_sm_per_clock;
  hw.dram_bytes_per_clk = hw.dram_write_bytes_per_clk = gpu.memory_bandwidth_bytes_per_s() / hw.clock_hz;
  hw.l2_bytes_per_clk = datasheet_l2_bytes_per_clk_per_sm(gpu.architecture) * gpu.sm_count;
  hw.smem_bytes_per_clk = kSmemBytesPerClkPerSm;
  const double link_gb_s = gpu.interconnect.nvlink_bandwidth_gb_s > 0 ? gpu.interconnect.nvlink_bandwidth_gb_s
                                                                      : gpu.interconnect.pcie_bandwidth_gb_s;
  hw.link_bytes_per_s = link_gb_s > 0 ? link_gb_s * 1e9 / 2.0 : 16e9;  // datasheets give both directions
  hw.launch_floor_us = kDatasheetLaunchFloorUs;
  hw.max_smem_per_sm_bytes = gpu.shared_memory_per_sm_kib * 1024.0;
  hw.max_smem_per_block_bytes = gpu.max_shared_memory_per_block_kib * 1024.0;
  hw.max_threads_per_sm = gpu.max_threads_per_sm;
  hw.max_blocks_per_sm = gpu.max_blocks_per_sm;
  hw.registers_per_sm = gpu.registers_per_sm;
  hw.l2_bytes = gpu.l2_cache_mib * 1024.0 * 1024.0;

  std::optional<AchievableRates> fallback;
  const AchievableRates& ach = gpu.achievable ? *gpu.achievable : fallback.emplace(default_achievable_rates(gpu));
  const PipeRates& r = ach.rates;
  hw.calibrated = ach.measured;
  hw.achievable.tensor_flops_per_clk = per_sm_clk_of(r.tensor_flops_per_s);
  hw.achievable.fma_flops_per_clk = r.fma_flops_per_s / per_sm_clk;
  hw.achievable.sfu_ops_per_clk = r.sfu_ops_per_s / per_sm_clk;
  hw.achievable.dram_bytes_per_clk = r.dram_bytes_per_s / hw.clock_hz;
  hw.achievable.dram_write_bytes_per_clk = r.dram_write_bytes_per_s / hw.clock_hz;
  hw.achievable.l2_bytes_per_clk = r.l2_bytes_per_s / hw.clock_hz;
  hw.achievable.l2_bulk_bytes_per_clk =
      (r.l2_bulk_bytes_per_s > 0 ? r.l2_bulk_bytes_per_s : r.l2_bytes_per_s) / hw.clock_hz;
  hw.achievable.smem_bytes_per_clk = r.smem_bytes_per_s_per_sm / hw.clock_hz;
  hw.achievable.launch_floor_us = r.launch_floor_us;
  hw.achievable.launch_offset_us = ach.launch_offset_us;
  hw.achievable.dram_latency_cycles = r.dram_latency_ns * 1e-9 * hw.clock_hz;
  hw.achievable.mma_sync_flops_per_clk = per_sm_clk_of(r.mma_sync_flops_per_s);
  return hw;
}

int occupancy(int threads_per_cta, int registers_per_thread, double smem_bytes_per_cta, const HardwareRates& hw) {
  int by_threads = threads_per_cta > 0 ? hw.max_threads_per_sm / threads_per_cta : hw.max_blocks_per_sm;
  int by_regs = registers_per_thread > 0 && threads_per_cta > 0
                    ? hw.registers_per_sm / (registers_per_thread * threads_per_cta)
                    : hw.max_blocks_per_sm;
  int by_smem =
      smem_bytes_per_cta > 0 ? static_cast<int>(hw.max_smem_per_sm_bytes / smem_bytes_per_cta) : hw.max_blocks_per_sm;
  return std::max(1, std::min({by_threads, by_regs, by_smem, hw.max_blocks_per_sm}));
}

CtaPlan plan_uniform_ctas(double ctas, int ctas_per_sm, int threads_per_cta, const HardwareRates& hw) {
  CtaPlan p;
  p.ctas = std::max(1.0, std::ceil(ctas));
  p.ctas_per_sm = std::max(1, ctas_per_sm);
  p.threads_per_cta = threads_per_cta;
  const double slots = static_cast<double>(hw.sms) * p.ctas_per_sm;
  p.waves = std::ceil(p.ctas / slots);
  p.last_wave_fill = (p.ctas - (p.waves - 1) * slots) / slots;
  // CTAs are handed out round-robin: the busiest SM gets ceil(ctas / SMs) of them.
  p.busiest_sm_share = std::ceil(p.ctas / hw.sms) / p.ctas;
  p.active_sm_fraction = std::min(1.0, p.ctas / hw.sms);
  return p;
}

double dram_time_with_latency(double bandwidth_time, double read_bytes, double in_flight_bytes, double latency,
                              double chain_time) {
  const double latency_time = read_bytes / in_flight_bytes * latency + chain_time;
  return std::cbrt(bandwidth_time * bandwidth_time * bandwidth_time + latency_time * latency_time * latency_time);
}

void finish_analysis(Analysis& a, const HardwareRates& hw) {
  const PipeDemand& d = a.demand;
  auto idx = [](Pipe p) { return static_cast<std::size_t>(p); };
  const double sms = hw.sms;
  // One on-SM pipe's rate per SM and clock in a set of rates: the datasheet peaks (`hw`) or the
  // achievable rates (`hw.achievable`), which name their fields alike.
  auto rate_in = [](const auto& rates, Pipe p) {
    switch (p) {
      case Pipe::tensor:
        return rates.tensor_flops_per_clk > 0 ? rates.tensor_flops_per_clk : 1e-9;
      case Pipe::fma:
        return rates.fma_flops_per_clk;
      case Pipe::sfu:
        return rates.sfu_ops_per_clk;
      case Pipe::smem:
        return rates.smem_bytes_per_clk;
      default:
        return 1.0;
    }
  };
  auto rate_of = [&](Pipe p) { return rate_in(hw, p); };
  auto work_of = [](const PipeDemand& x, Pipe p) {
    switch (p) {
      case Pipe::tensor:
        return x.tensor_flops;
      case Pipe::fma:
        return x.fma_flops;
      case Pipe::sfu:
        return x.sfu_ops;
      case Pipe::smem:
        return x.smem_bytes;
      case Pipe::dram:
        return x.dram_bytes;
      case Pipe::l2:
        return x.l2_bytes;
      case Pipe::link:
        return x.link_bytes;
      default:
        return 0.0;
    }
  };
  constexpr Pipe kOnSm[] = {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::smem};
  const double link_cycles = d.link_bytes / hw.link_bytes_per_s * hw.clock_hz;
  const double launch_cycles = hw.launch_floor_us * 1e-6 * hw.clock_hz;
  // The cycles each pipe needs at `rates`, balanced over all SMs and on the busiest SM. DRAM and L2
  // are shared by all SMs: the balanced figure is the bound.
  const double stored = std::clamp(d.dram_write_bytes, 0.0, d.dram_bytes), loaded = d.dram_bytes - stored;
  auto fill_cycles = [&](const auto& rates, double l2_bytes_per_clk, std::array<double, kPipeCount>& balanced,
                         std::array<double, kPipeCount>& busiest) {
    for (Pipe p : kOnSm) {
      const double work = work_of(d, p);
      balanced[idx(p)] = work / (rate_in(rates, p) * sms);
      busiest[idx(p)] = work * a.plan.busiest_sm_share / rate_in(rates, p);
    }
    balanced[idx(Pipe::dram)] = busiest[idx(Pipe::dram)] =
        loaded / rates.dram_bytes_per_clk + stored / rates.dram_write_bytes_per_clk;
    balanced[idx(Pipe::l2)] = busiest[idx(Pipe::l2)] = d.l2_bytes / l2_bytes_per_clk;
    balanced[idx(Pipe::link)] = busiest[idx(Pipe::link)] = link_cycles;
    balanced[idx(Pipe::launch)] = busiest[idx(Pipe::launch)] = rates.launch_floor_us * 1e-6 * hw.clock_hz;
  };
  fill_cycles(hw, hw.l2_bytes_per_clk, a.cycles_balanced, a.cycles_busiest);
  // The same work at the achievable rates: the learned model's view. A GEMM on the warpgroup MMA
  // streams its tiles from L2 with bulk copies, which reach more than loads (4% more on an H100, 11%
  // on an H200): the same GEMMs whose L2 traffic exceeds their tensor time run 6-10% faster on the
  // H200, as the ratio of the bulk rates says. Where no calibration of the GPU's architecture measured
  // bulk copies, both rates are its L2 rate. Attention kernels keep the load rate: the bulk rate raises
  // the H100's held-out attention error (15.4 -> 16.1%) and leaves the H200's unchanged. So do GEMMs
  // on warp-level MMA (written for sm80: cp.async).
  const auto& ach = hw.achievable;
  const bool bulk_copies = a.family == Family::gemm && d.tensor_flops > 0 && !a.warp_level_mma;
  const double ach_l2_bytes_per_clk = bulk_copies ? ach.l2_bulk_bytes_per_clk : ach.l2_bytes_per_clk;
  fill_cycles(ach, ach_l2_bytes_per_clk, a.achievable_cycles_balanced, a.achievable_cycles_busiest);
  a.achievable_l2_bytes_per_s = ach_l2_bytes_per_clk * hw.clock_hz;
  // A kernel on warp-level MMA where the GPU's tensor path is faster (Hopper): its tensor pipe at
  // that rate (measured by perfloom-calibrate: 631 of the H100's and H200's 989 dense bf16 TFLOP/s,
  // where cuBLASLt's warpgroup GEMMs reach 804-810), and, as such kernels are not warp-specialised
  // (each warp runs its MMAs, softmax and shared-memory reads one after another), the SM's pipes in
  // series: the tensor slot holds tensor + SFU + FMA + shared memory. With it, PyTorch's
  // FlashAttention-2 and cuDNN's sm80 kernels measured on the H100 predict the H200's at 0.95-1.04x
  // per kernel group.
  if (a.warp_level_mma && d.tensor_flops > 0 && ach.mma_sync_flops_per_clk > 0 &&
      ach.mma_sync_flops_per_clk < ach.tensor_flops_per_clk) {
    const double slower = ach.tensor_flops_per_clk / ach.mma_sync_flops_per_clk;
    for (auto* c : {&a.achievable_cycles_balanced, &a.achievable_cycles_busiest}) {
      double& t = (*c)[idx(Pipe::tensor)];
      t = t * slower + (*c)[idx(Pipe::sfu)] + (*c)[idx(Pipe::fma)] + (*c)[idx(Pipe::smem)];
    }
  }
  // The achievable DRAM time of a kernel with few bytes in flight (dram_time_with_latency), which
  // fits perfloom-calibrate's read sweep (20 points from 256 B to 32 KiB per SM) within 2.1% (H100)
  // and 2.4% (H200) on average at each GPU's Little's-law latency (383 / 381 ns).
  if (a.bytes_in_flight_per_thread > 0 && loaded > 0 && ach.dram_latency_cycles > 0) {
    const double resident = std::min(a.plan.ctas, static_cast<double>(a.plan.ctas_per_sm) * sms);
    const double in_flight = resident * a.plan.threads_per_cta * a.bytes_in_flight_per_thread;
    for (auto* c : {&a.achievable_cycles_balanced, &a.achievable_cycles_busiest}) {
      double& dram = (*c)[idx(Pipe::dram)];
      dram = dram_time_with_latency(
          dram, loaded, in_flight, ach.dram_latency_cycles,
          std::max(0.0, a.plan.waves - 1) * a.chain_round_trips_per_wave * ach.dram_latency_cycles);
    }
  }
  double ach_worst = 0;
  for (Pipe p : {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem, Pipe::link})
    ach_worst = std::max(ach_worst, a.achievable_cycles_busiest[idx(p)]);
  // A tensor-core GEMM overlaps its MMAs with the copies that bring its tiles through L2 and from
  // DRAM, but where two of these take similar time neither hides the other completely: a smooth
  // bound, the kGemmOverlapNorm-norm of the three, where it exceeds their maximum. The same nvjet
  // configurations measured on the H100 and the H200 (whose bulk-copy L2 is 12.6% faster, its tensor
  // rate the same) take H200 / H100 = 0.99 where the L2 needs half the tensor time, 0.96-0.97 where
  // as much, 0.90-0.95 at 1.4x; the 4-norm of tensor and L2 gives 0.994 / 0.949 / 0.914. With the
  // DRAM pipe in the norm too, held out, GEMM MAPE H100 5.9 -> 5.8%, H200 5.8 -> 5.8% (with the
  // features of make_features).
  if (bulk_copies) {
    const auto& c = a.achievable_cycles_busiest;
    double sum = 0;
    for (Pipe p : {Pipe::tensor, Pipe::l2, Pipe::dram}) sum += std::pow(c[idx(p)], kGemmOverlapNorm);
    ach_worst = std::max(ach_worst, std::pow(sum, 1.0 / kGemmOverlapNorm));
  }
  a.achievable_roofline_us = (ach_worst + a.fixed_cycles) / hw.clock_hz * 1e6 + a.extra_us + ach.launch_floor_us;
  // The GPU's own launch floor differs from the shared one by launch_offset_us. A kernel no longer
  // than the floor pays the difference whole; a longer one overlaps it with its work, in proportion
  // (matched kernels of the H100 and H200: 0.19 us of the 0.255 us difference at the floor, ~0.07 us
  // for 2 us GEMMs; held out, the whole difference puts small norms and GEMMs 5-10% low and this
  // share does not).
  a.launch_offset_us = a.achievable_roofline_us > 0
                           ? ach.launch_offset_us * std::min(1.0, ach.launch_floor_us / a.achievable_roofline_us)
                           : 0.0;

  // The bound: the slowest pipe with cold caches on the busiest SM.
  Pipe bound = Pipe::launch;
  double worst = 0;
  for (Pipe p : {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem, Pipe::link}) {
    if (a.cycles_busiest[idx(p)] > worst) {
      worst = a.cycles_busiest[idx(p)];
      bound = p;
    }
  }
  a.bound = worst / hw.clock_hz * 1e6 + a.extra_us < hw.launch_floor_us ? Pipe::launch : bound;
  a.roofline_us = worst / hw.clock_hz * 1e6 + a.extra_us + hw.launch_floor_us;

  // The ceiling: a lower bound under any cache state and, unless the schedule is exact, any tiling.
  const PipeDemand& least = a.least_demand ? *a.least_demand : d;
  double ceiling = 0;
  for (Pipe p : kOnSm) {
    double c = a.schedule_exact ? a.cycles_busiest[idx(p)] : work_of(least, p) / (rate_of(p) * sms);
    // Kernels may emulate part of their exponentials with polynomials on the FMA lanes
    // (FlashAttention-4 does on Blackwell): about 8 FLOPs each, so SFU work can drain faster.
    if (p == Pipe::sfu) c *= rate_of(Pipe::sfu) / (rate_of(Pipe::sfu) + hw.fma_flops_per_clk / 8.0);
    a.ceiling_cycles_by_pipe[idx(p)] = c;
    ceiling = std::max(ceiling, c);
  }
  a.ceiling_cycles_by_pipe[idx(Pipe::dram)] = std::max(0.0, least.dram_bytes - hw.l2_bytes) / hw.dram_bytes_per_clk;
  a.ceiling_cycles_by_pipe[idx(Pipe::l2)] = least.l2_bytes / hw.l2_bytes_per_clk;
  a.ceiling_cycles_by_pipe[idx(Pipe::link)] = link_cycles;
  a.ceiling_cycles_by_pipe[idx(Pipe::launch)] = launch_cycles;
  for (Pipe p : {Pipe::dram, Pipe::l2, Pipe::link}) ceiling = std::max(ceiling, a.ceiling_cycles_by_pipe[idx(p)]);
  // The launch floor is paid by every kernel: the shorter of the datasheet floor and the GPU's
  // achievable one (its measured empty kernel, 0.67 us on an H200), so that the ceiling stays a lower
  // bound for the smallest kernels a trace records.
  const double floor_us = hw.achievable.launch_floor_us > 0 ? std::min(hw.launch_floor_us, hw.achievable.launch_floor_us)
                                                            : hw.launch_floor_us;
  a.ceiling_us = ceiling / hw.clock_hz * 1e6 + a.extra_us + floor_us;
}

}  // namespace perfloom
