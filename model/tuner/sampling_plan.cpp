#include "model/tuner/sampling_plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/tuner/tuner_table.h"

namespace perfloom::tuner {

namespace {
// units = a x b with b the divisor nearest to the square-output split (a unit_m = b unit_n).
std::pair<int64_t, int64_t> factor_grid(int64_t units, double unit_m, double unit_n) {
  const double ideal_n = std::sqrt(static_cast<double>(units) * unit_m / unit_n);
  int64_t best_n = 1;
  double best_d = INFINITY;
  for (int64_t n = 1; n * n <= units * 64 && n <= units; ++n) {
    if (units % n) continue;
    const double d = std::abs(std::log(n / ideal_n));
    if (d < best_d) {
      best_d = d;
      best_n = n;
    }
  }
  return {units / best_n, best_n};
}
}  // namespace

std::vector<PlanPoint> plan_wave_samples(const GpuSpec& gpu, Dtype dtype, const std::vector<TileConfig>& configs,
                                         const PlanOptions& opt, const SlotsByCluster& measured) {
  if (configs.empty()) throw std::invalid_argument("sampling plan: no configurations");
  if (opt.max_waves < 1 || opt.k_iters.empty())
    throw std::invalid_argument("sampling plan: needs max_waves >= 1 and K lengths");
  for (auto k : opt.k_iters)
    if (k < 1) throw std::invalid_argument("sampling plan: K-loop lengths must be positive");
  const HardwareRates hw = hardware_rates(gpu, dtype);
  std::vector<PlanPoint> out;
  std::set<std::tuple<int64_t, int64_t, int64_t, std::string>> seen;
  for (const TileConfig& t : configs) {
    if (t.tile_m <= 0 || t.tile_n <= 0 || t.tile_k <= 0)
      throw std::invalid_argument("sampling plan: tile sizes must be positive");
    const int s = concurrent_ctas(t, dtype, hw, measured);
    const int cs = std::max(1, t.cluster_m) * std::max(1, t.cluster_n);
    const int64_t split = std::max(1, t.split_k);
    // A CTA count as a tile grid of whole clusters (wave_model.h WaveGrid), nearest to square: tiles M, N.
    const int64_t cm = std::max(1, t.cluster_m), cn = std::max(1, t.cluster_n);
    auto grid_of = [&](int64_t ctas) {
      const int64_t clusters = std::max<int64_t>(1, ((ctas + split - 1) / split + cs - 1) / cs);
      const auto [blocks_m, blocks_n] =
          factor_grid(clusters, static_cast<double>(cm * t.tile_m), static_cast<double>(cn * t.tile_n));
      return std::pair<int64_t, int64_t>{blocks_m * cm, blocks_n * cn};
    };
    std::vector<std::pair<int64_t, std::string>> targets;  // CTAs, why
    if (opt.half_wave) {
      // Any count near half a wave will do: take the one whose grid is the most square.
      const int64_t half = std::max<int64_t>(cs, s / 2 / cs * cs);
      int64_t pick = half;
      double best = INFINITY;
      for (int64_t c = half; c >= std::max<int64_t>(cs, half * 8 / 10); c -= cs) {
        const auto [a, b] = grid_of(c);
        const double skew = std::abs(std::log(static_cast<double>(a) * t.tile_m / (static_cast<double>(b) * t.tile_n)));
        if (skew < best - 1e-9) {
          best = skew;
          pick = c;
        }
      }
      targets.emplace_back(pick, "half wave");
    }
    for (int w = 1; w <= opt.max_waves; ++w) {
      targets.emplace_back(static_cast<int64_t>(w) * s, "boundary " + std::to_string(w) + ": full");
      targets.emplace_back(static_cast<int64_t>(w) * s + cs, "boundary " + std::to_string(w) + ": +1 cluster");
    }
    for (const auto& [ctas, why] : targets) {
      const auto [tiles_m, tiles_n] = grid_of(ctas);
      for (int64_t k : opt.k_iters) {
        PlanPoint p;
        p.shape = GemmShape{tiles_m * t.tile_m, tiles_n * t.tile_n, k * t.tile_k * split, dtype};
        p.config = t;
        p.grid = wave_grid(p.shape, t, s);
        p.why = why + ", " + std::to_string(k) + " K-iterations";
        if (seen.emplace(p.shape.M, p.shape.N, p.shape.K, config_to_string(t)).second) out.push_back(std::move(p));
      }
    }
  }
  return out;
}

std::string plan_to_csv(const std::vector<PlanPoint>& plan) {
  std::ostringstream os;
  const bool custom = std::any_of(plan.begin(), plan.end(), [](const PlanPoint& p) { return p.custom_option >= 0; });
  os << "op,dtype,M,N,K,config,cublaslt_tile,cublaslt_cluster,splitk,waves,last_wave_fill,k_iters,why,cublaslt_stages,"
        "heuristic_rank"
     << (custom ? ",cublaslt_custom\n" : "\n");
  for (const auto& p : plan) {
    const TileConfig& t = p.config;
    os << "gemm," << dtype_name(p.shape.dtype) << "," << p.shape.M << "," << p.shape.N << "," << p.shape.K << ","
       << config_to_string(t) << "," << t.tile_n << "x" << t.tile_m << "," << std::max(1, t.cluster_n) << "x"
       << std::max(1, t.cluster_m) << "x1," << std::max(1, t.split_k) << "," << p.grid.waves << ","
       << std::round(p.grid.last_wave_fill * 1000.0) / 1000.0 << "," << p.grid.k_iters << ",\"" << p.why << "\","
       << t.tile_k << "x" << (t.stages > 0 ? std::to_string(t.stages) : std::string("AUTO")) << "," << p.heuristic_rank;
    if (custom) os << "," << (p.custom_option >= 0 ? std::to_string(p.custom_option) : std::string());
    os << "\n";
  }
  return os.str();
}

std::vector<PlanPoint> timing_plan(const GemmShape& shape, const std::vector<RankedConfig>& ranked, std::size_t top,
                                   const std::string& label) {
  std::vector<PlanPoint> out;
  for (std::size_t i = 0; i < ranked.size() && i < top; ++i) {
    PlanPoint p;
    p.shape = shape;
    p.config = ranked[i].config;
    p.grid = ranked[i].grid;
    p.why = label + " " + std::to_string(i + 1);
    p.custom_option = ranked[i].custom_option;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace perfloom::tuner
