#include "model/bottleneck.h"

#include <cstdio>

namespace perfloom {

namespace {
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

std::string format_duration_us(double us) {
  if (us >= 1e6) return fixed(us / 1e6, 3) + " s";
  if (us >= 1e3) return fixed(us / 1e3, 3) + " ms";
  return fixed(us, us < 10 ? 2 : 1) + " µs";
}

Bottleneck bottleneck_of(const KernelDesc& k, const GpuSpec& gpu, const Prediction& p) {
  const Analysis& a = p.analysis;
  Bottleneck b;
  b.pred_us = p.pred_us;
  b.lo_us = p.lo_us;
  b.hi_us = p.hi_us;
  b.ceiling_us = p.ceiling_us;
  b.bound = p.bound;
  const double clock_hz = gpu.clock_hz();
  for (int i = 0; i < kPipeCount; ++i) {
    PipeBusy pb;
    pb.pipe = static_cast<Pipe>(i);
    pb.name = std::string(pipe_name(pb.pipe));
    pb.busy_us = clock_hz > 0 ? a.cycles_busiest[static_cast<std::size_t>(i)] / clock_hz * 1e6 : 0.0;
    pb.share = p.pred_us > 0 ? pb.busy_us / p.pred_us : 0.0;
    b.pipes.push_back(std::move(pb));
  }
  int ceiling_pipe = 0;
  for (int i = 1; i < kPipeCount; ++i)
    if (a.ceiling_cycles_by_pipe[i] > a.ceiling_cycles_by_pipe[ceiling_pipe]) ceiling_pipe = i;
  b.ceiling_pipe = static_cast<Pipe>(ceiling_pipe);
  b.ceiling_share = p.pred_us > 0 ? p.ceiling_us / p.pred_us : 0.0;

  std::string s = "On " + gpu.name + " this " + std::string(op_name(k.op)) + " reaches " +
                  fixed(100.0 * b.ceiling_share, 0) + "% of its " + std::string(pipe_name(b.ceiling_pipe)) +
                  " ceiling (ceiling " + format_duration_us(p.ceiling_us) + ", predicted " +
                  format_duration_us(p.pred_us) + ", 80% interval " + format_duration_us(p.lo_us) + "–" +
                  format_duration_us(p.hi_us) + ")";
  if (a.plan.waves > 0) {
    s += "; " + fixed(a.plan.ctas, 0) + " CTAs run in " + fixed(a.plan.waves, 0) + " wave" +
         (a.plan.waves == 1 ? "" : "s");
    if (a.plan.last_wave_fill < 0.999) {
      // The last wave's empty slots, as a share of all the waves' SM time.
      const double idle = 100.0 * (1.0 - a.plan.last_wave_fill) / a.plan.waves;
      s += ", the last wave is " + fixed(100.0 * a.plan.last_wave_fill, 0) + "% full, so tile quantisation idles " +
           fixed(idle, 0) + "% of the SM time";
    } else {
      s += ", all full";
    }
  }
  if (a.tile)
    s += " (tile " + std::to_string(a.tile->tile_m) + "×" + std::to_string(a.tile->tile_n) + "×" +
         std::to_string(a.tile->tile_k) + ", " + a.tile_origin + ")";
  b.headroom = s + '.';
  return b;
}

}  // namespace perfloom
