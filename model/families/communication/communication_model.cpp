// Collectives over NVLink or PCIe (NCCL ring and tree algorithms): bytes on the link per GPU,
// plus a per-step latency. `bytes` is the full buffer: the all-reduced tensor, the all-gather
// output, the reduce-scatter input, one rank's all-to-all send total, one send/recv message.
#include <algorithm>
#include <cmath>

#include "model/families/communication/nccl_model.h"
#include "model/families/family_models.h"

namespace perfloom {

Analysis analyze_communication(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  const double n = static_cast<double>(std::max<int64_t>(1, k.shape.ranks));
  const double bytes = static_cast<double>(k.shape.bytes);
  const bool nvlink = gpu.interconnect.nvlink_bandwidth_gb_s > 0;
  const double step_us = nvlink ? 1.5 : 4.0;  // one hop of NCCL's low-latency protocol
  if (family_of(k.op) != Family::communication) throw UnsupportedKernel("not a communication op");
  const CollectiveTraffic traffic = collective_traffic(k.op, static_cast<int>(n), bytes);
  // All-reduce and reduce-scatter add up (n-1)/n of the elements on every GPU.
  const bool reduces = k.op == Op::allreduce || k.op == Op::reducescatter;
  const double reduce_ops = reduces ? bytes / dtype_bytes(k.dtype) * (n - 1) / n : 0.0;
  Analysis a;
  a.family = Family::communication;
  a.op = k.op;
  if (n > 1) {
    a.demand.link_bytes = traffic.link_bytes;
    a.demand.dram_bytes = bytes + 2.0 * traffic.link_bytes;  // read the input, write and read staged chunks
    a.demand.fma_flops = reduce_ops;
    a.extra_us = traffic.steps * step_us;
  } else {
    a.demand.dram_bytes = 2.0 * bytes;  // one rank: a local copy
  }
  a.demand.l2_bytes = a.demand.dram_bytes;
  // NCCL runs one CTA per channel; up to 32 channels on NVLink systems, fewer over PCIe.
  a.plan = plan_uniform_ctas(nvlink ? std::min(32.0, std::max(2.0, std::ceil(bytes / 262144.0))) : 2, 1, 512, hw);
  a.plan.busiest_sm_share = 1.0 / a.plan.ctas;
  finish_analysis(a, hw);
  if (n > 1) {
    const CollectiveEstimate e = estimate_collective(k.op, static_cast<int>(n), bytes, gpu);
    // Never under the ceiling: the estimate is a time, the ceiling a bound.
    a.estimate_us = std::max(a.ceiling_us, e.time_us);
    a.estimate_origin = e.origin;
  }
  return a;
}

}  // namespace perfloom
