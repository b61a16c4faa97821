#include "model/families/communication/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace perfloom {
namespace embedded {
std::vector<std::pair<std::string_view, std::string_view>> comm_files();
}

namespace {

// The op whose measured curve stands in for `op` (same traffic pattern).
Op curve_op(Op op) { return op == Op::reducescatter ? Op::allgather : op; }

}  // namespace

CollectiveTraffic collective_traffic(Op op, int ranks, double bytes) {
  const double n = std::max(1, ranks);
  switch (op) {
    // Ring: 2(n-1) steps; tree: 2 log2(n) + 1. NCCL takes whichever is faster for the size.
    case Op::allreduce:
      return {std::min(2.0 * (n - 1), 2.0 * std::ceil(std::log2(n)) + 1.0), 2.0 * (n - 1) / n * bytes};
    case Op::allgather:
    case Op::reducescatter:
      return {n - 1, (n - 1) / n * bytes};
    case Op::alltoall:
      return {1, (n - 1) / n * bytes};
    case Op::sendrecv:
      return {1, bytes};
    default:
      throw std::invalid_argument("not a communication op");
  }
}

NcclModelConstants nccl_constants(Op op, bool nvlink) {
  // tools/comm_check/fit_nccl.py on data/nccl-h200 (NCCL 2.28.9, H200 NVLink, NVLS off).
  NcclModelConstants c;
  c.base_us = 8.728;
  c.hop_us = nvlink ? 1.160 : 4.0;  // PCIe hop: not measured; NCCL's LL protocol over PCIe
  if (op == Op::allreduce) {
    c.eff_max = 0.6509;
    c.m_half_bytes = 87372;
  } else {
    c.eff_max = 0.5354;
    c.m_half_bytes = 184558;
  }
  return c;
}

double nccl_model_us(Op op, int ranks, double bytes, double link_bytes_per_s, bool nvlink) {
  if (ranks <= 1) return 0;
  const auto [steps, link_bytes] = collective_traffic(op, ranks, bytes);
  const NcclModelConstants c = nccl_constants(op, nvlink);
  const double m = std::max(1.0, bytes / ranks);
  const double eff = c.eff_max * m / (m + c.m_half_bytes);
  return c.base_us + steps * c.hop_us + link_bytes / (link_bytes_per_s * eff) * 1e6;
}

double CollectiveCurve::at(double b) const {
  if (bytes.empty()) return 0;
  if (b <= bytes.front()) return time_us.front();
  if (b >= bytes.back()) return time_us.back();
  const auto hi = static_cast<std::size_t>(std::upper_bound(bytes.begin(), bytes.end(), b) - bytes.begin());
  const std::size_t lo = hi - 1;
  const double f = std::log(b / bytes[lo]) / std::log(bytes[hi] / bytes[lo]);
  return std::exp(std::log(time_us[lo]) + f * (std::log(time_us[hi]) - std::log(time_us[lo])));
}

std::vector<CollectiveCurve> parse_collective_curves(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line, gpu_id;
  double link_gb_s = 0;
  int line_no = 0;
  bool header_seen = false;
  std::vector<CollectiveCurve> curves;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(origin + ": line " + std::to_string(line_no) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("# gpu=", 0) == 0) gpu_id = line.substr(6);
      if (line.rfind("# link_gb_s=", 0) == 0) {
        try {
          link_gb_s = std::stod(line.substr(12));
        } catch (const std::exception&) {
          fail("link_gb_s is not a number");
        }
      }
      continue;
    }
    if (!header_seen) {
      if (line != "op,ranks,bytes,median_us") fail("expected the header op,ranks,bytes,median_us");
      header_seen = true;
      continue;
    }
    std::istringstream row(line);
    std::string op_s, ranks_s, bytes_s, t_s;
    if (!std::getline(row, op_s, ',') || !std::getline(row, ranks_s, ',') || !std::getline(row, bytes_s, ',') ||
        !std::getline(row, t_s))
      fail("expected 4 fields");
    const auto op = parse_op(op_s);
    if (!op || family_of(*op) != Family::communication) fail("'" + op_s + "' is not a collective");
    int ranks = 0;
    double b = 0, t = 0;
    try {
      ranks = std::stoi(ranks_s);
      b = std::stod(bytes_s);
      t = std::stod(t_s);
    } catch (const std::exception&) {
      fail("ranks, bytes and median_us must be numbers");
    }
    if (ranks < 2 || !(b > 0) || !(t > 0) || !std::isfinite(b) || !std::isfinite(t))
      fail("needs ranks >= 2 and positive bytes and time");
    auto it = std::find_if(curves.begin(), curves.end(),
                           [&](const CollectiveCurve& c) { return c.op == *op && c.ranks == ranks; });
    if (it == curves.end()) {
      curves.push_back({});
      it = curves.end() - 1;
      it->op = *op;
      it->ranks = ranks;
    }
    if (!it->bytes.empty() && b <= it->bytes.back()) fail("bytes must increase within one op and rank count");
    it->bytes.push_back(b);
    it->time_us.push_back(t);
  }
  if (gpu_id.empty()) throw std::runtime_error(origin + ": no '# gpu=' line");
  if (!(link_gb_s > 0)) throw std::runtime_error(origin + ": no positive '# link_gb_s=' line");
  if (curves.empty()) throw std::runtime_error(origin + ": no measurements");
  for (auto& c : curves) {
    c.gpu_id = gpu_id;
    c.link_bytes_per_s = link_gb_s * 1e9 / 2.0;  // the file gives both directions, like the datasheets
  }
  return curves;
}

const std::vector<CollectiveCurve>& shipped_collective_curves() {
  static const std::vector<CollectiveCurve> curves = [] {
    std::vector<CollectiveCurve> all;
    for (const auto& [path, text] : embedded::comm_files()) {
      auto c = parse_collective_curves(std::string(text), std::string(path));
      all.insert(all.end(), c.begin(), c.end());
    }
    return all;
  }();
  return curves;
}

CollectiveEstimate estimate_collective(Op op, int ranks, double bytes, const GpuSpec& gpu,
                                       const std::vector<CollectiveCurve>* curves) {
  if (!curves) curves = &shipped_collective_curves();
  const bool nvlink = gpu.interconnect.nvlink_bandwidth_gb_s > 0;
  const double link = nvlink ? gpu.interconnect.nvlink_bandwidth_gb_s * 1e9 / 2.0
                             : std::max(1.0, gpu.interconnect.pcie_bandwidth_gb_s) * 1e9 / 2.0;
  const double target_model = nccl_model_us(op, ranks, bytes, link, nvlink);
  // Measured curves only stand for NVLink systems: over PCIe the protocols and hops differ.
  const CollectiveCurve* best = nullptr;
  if (nvlink) {
    for (const auto& c : *curves) {
      if (c.op != curve_op(op)) continue;
      // Prefer the measured GPU, then the closest rank count (fewer ranks on a tie: those were
      // measured on more rank counts' worth of hosts).
      auto score = [&](const CollectiveCurve& x) {
        return std::make_pair(x.gpu_id == gpu.id ? 0 : 1, std::abs(std::log2(double(x.ranks) / ranks)));
      };
      if (!best || score(c) < score(*best)) best = &c;
    }
  }
  if (!best) return {target_model, "NCCL model"};
  const double clamped = std::clamp(bytes, best->bytes.front(), best->bytes.back());
  const double measured = best->at(clamped);
  const double ref_model = nccl_model_us(curve_op(op), best->ranks, clamped, best->link_bytes_per_s, true);
  CollectiveEstimate e;
  e.time_us = measured * target_model / ref_model;
  const bool same_system = best->gpu_id == gpu.id && best->ranks == ranks && curve_op(op) == op && clamped == bytes;
  e.origin = "NCCL measured on " + best->gpu_id + " x" + std::to_string(best->ranks) +
             (same_system ? "" : " (scaled by the NCCL model)");
  return e;
}

}  // namespace perfloom
