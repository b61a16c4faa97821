#pragma once
// Where a kernel's time goes on one GPU: the time each pipe (tensor, FMA, SFU, DRAM, L2, shared
// memory, launch, link) needs on the busiest SM, against the roofline ceiling and the predicted time,
// and a headroom sentence. One function for the bottleneck view, `perfloom export-chart bottleneck`
// and `perfloom predict --kernels ... --json`, so that the three show the same numbers.
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"
#include "model/predictor.h"

namespace perfloom {

// One pipe of a kernel on a GPU.
struct PipeBusy {
  Pipe pipe = Pipe::launch;
  std::string name;    // pipe_name(pipe)
  double busy_us = 0;  // ideal time on the busiest SM at the boost clock (Analysis::cycles_busiest / clock)
  double share = 0;    // busy_us / the predicted time (0 when nothing is predicted)
};

struct Bottleneck {
  std::vector<PipeBusy> pipes;  // every pipe, in Pipe order
  double pred_us = 0, lo_us = 0, hi_us = 0;
  double ceiling_us = 0;             // the roofline ceiling: a lower bound whatever the caches hold
  Pipe ceiling_pipe = Pipe::launch;  // the pipe that contributes most to the ceiling
  double ceiling_share = 0;          // ceiling_us / pred_us: how near the prediction is to the ceiling
  Pipe bound = Pipe::launch;         // the pipe that limits the kernel with cold caches (Analysis::bound)
  std::string headroom;              // one sentence, UTF-8
};

// The bottleneck of `k` on `gpu` from its prediction there (KernelPredictor::predict).
Bottleneck bottleneck_of(const KernelDesc& k, const GpuSpec& gpu, const Prediction& p);

// "2.35 µs", "143.3 µs", "1.234 ms", "2.000 s": a duration as the headroom sentence writes it.
std::string format_duration_us(double us);

}  // namespace perfloom
