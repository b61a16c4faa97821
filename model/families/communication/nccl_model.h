#pragma once
// What an NCCL collective costs on the GPU: a measured curve where one exists, carried to other
// GPUs, rank counts and sizes by a small analytical NCCL model.
//
// The analytical part, per op:  t = base + steps * hop + link_bytes / (link_bandwidth * eff(m)),
// eff(m) = eff_max * m / (m + m_half), m = bytes per rank. Its constants were fitted to NCCL 2.28
// on four H200s (tools/comm_check/fit_nccl.py over data/nccl-h200); it alone is ~10% off
// there, worst near the protocol switches at 1-8 MiB.
//
// The estimate: the measured curve of the same op (resources/comm/<gpu>.csv, log-log interpolation
// in bytes) at the nearest measured rank count, times model(target) / model(measured system).
// On the measured system and rank count this is the measurement; elsewhere the model's ratio
// moves it (more ranks: more steps and link bytes; another link: its bandwidth). `perfloom-comm-check`
// checks this against held-out rank counts (docs/accuracy.md, "Collectives").
#include <optional>
#include <string>
#include <vector>

#include "model/gpu_spec.h"
#include "model/kernel.h"

namespace perfloom {

// What one collective costs on the wire: protocol steps between neighbours and the bytes each GPU
// sends over its link (`bytes`: the full buffer, as in communication_model.cpp).
struct CollectiveTraffic {
  double steps = 0;
  double link_bytes = 0;
};
// Throws std::invalid_argument for an op that is not a collective.
CollectiveTraffic collective_traffic(Op op, int ranks, double bytes);

struct NcclModelConstants {
  double base_us = 0;       // a collective kernel's fixed cost (launch, channel set-up)
  double hop_us = 0;        // one protocol step between neighbours
  double eff_max = 0;       // fraction of the link's one-way bandwidth large messages reach
  double m_half_bytes = 0;  // bytes per rank at which half of eff_max is reached
};
NcclModelConstants nccl_constants(Op op, bool nvlink);

// The analytical model alone, for a link of `link_bytes_per_s` one way per GPU.
double nccl_model_us(Op op, int ranks, double bytes, double link_bytes_per_s, bool nvlink);

// A measured curve: one op at one rank count on one system.
struct CollectiveCurve {
  std::string gpu_id;
  Op op = Op::unknown;
  int ranks = 0;
  double link_bytes_per_s = 0;         // one way, per GPU, of the measured system
  std::vector<double> bytes, time_us;  // sorted by bytes
  // Log-log interpolation, clamped to the measured range.
  double at(double b) const;
};

// Parses a `perfloom-collectives/1` CSV (see resources/comm/); throws std::runtime_error naming
// `origin`, the line and the reason.
std::vector<CollectiveCurve> parse_collective_curves(const std::string& text, const std::string& origin);
// The curves shipped in resources/comm/ (embedded in the binary).
const std::vector<CollectiveCurve>& shipped_collective_curves();

struct CollectiveEstimate {
  double time_us = 0;
  std::string origin;  // "NCCL measured on h200 x4", "... x4 (scaled by the NCCL model)", "NCCL model"
};
// The estimate for `ranks` GPUs of `gpu` (see the top of this file). `curves` defaults to the
// shipped ones. Ops without a measured curve use their closest relative (reduce-scatter: the
// all-gather curve) or the model alone.
CollectiveEstimate estimate_collective(Op op, int ranks, double bytes, const GpuSpec& gpu,
                                       const std::vector<CollectiveCurve>* curves = nullptr);

}  // namespace perfloom
