// The fused-MoE configuration tuner (moe_tuner.h).
#include "model/tuner/moe_tuner.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "model/analysis.h"
#include "model/families/gemm/gemm_model.h"

namespace perfloom::tuner {

namespace {

Dtype compute_dtype(MoeDtype d) { return d == MoeDtype::bf16 ? Dtype::bf16 : Dtype::fp8e4m3; }

// Relative throughput a tile reaches on the tensor pipe, as the moe family takes it (moe_model.cpp):
// a small tile re-reads operands from shared memory for few FLOPs. 1 for 128x128 and larger.
double tile_efficiency(const MoeConfig& c) {
  return std::min(1.0, std::pow(static_cast<double>(c.block_m) * c.block_n / (128.0 * 128.0), 0.35));
}

// The rank among tied GROUP_SIZE_M variants (moe_tuner.h).
int group_preference(int g) {
  switch (g) {
    case 16:
      return 0;
    case 1:
      return 1;
    case 32:
      return 2;
    default:
      return 3;
  }
}

// The share of the tensor rate a tile below BLOCK_SIZE_M 64 reaches: Triton cannot use the warpgroup
// MMA (its M is 64) and runs warp-level MMA, which on Hopper has no 8-bit form, so 8-bit operands run
// at the 16-bit warp-level rate too; that rate over the dtype's achievable tensor rate, where a
// calibration measured it (1 elsewhere: on Ampere and Ada warp-level MMA is the tensor path). On the
// H200: 0.64 in bf16, 0.32-0.42 in fp8.
double warp_mma_factor(const GpuSpec& gpu, const HardwareRates& hw) {
  const double warp16 = hardware_rates(gpu, Dtype::bf16).achievable.mma_sync_flops_per_clk;
  if (warp16 <= 0 || hw.achievable.tensor_flops_per_clk <= 0) return 1.0;
  return std::min(1.0, warp16 / hw.achievable.tensor_flops_per_clk);
}

struct GemmDims {
  double N = 0, K = 0, a_rows = 0;
};

// One GEMM's time on the busiest SM: the moe family's pipe demand at the configuration's tile, the
// DRAM time under Little's law for the bytes its resident CTAs keep in flight, and the K loop's
// chain of load latencies; the terms' kMoeOverlapNorm-norm, plus the fill and the launch.
MoeGemmEstimate estimate_gemm(const MoeShape& s, MoeDtype dtype, const HardwareRates& hw, double T, const GemmDims& g,
                              const MoeConfig& c, const MoeEfficiencies& eff, double padded, double warp_factor) {
  const Dtype dt = compute_dtype(dtype);
  const double b = dtype_bytes(dt);
  const double E = static_cast<double>(s.E), topk = static_cast<double>(s.topk);
  const double rows = T * topk;
  const double active = moe_expected_active_experts(T, E, topk);
  const double k_pad = std::ceil(g.K / c.block_k) * c.block_k;
  const double ctas = std::max(1.0, padded / c.block_m * std::ceil(g.N / c.block_n));
  const int threads = 32 * c.num_warps;
  const double stage_bytes = (c.block_m + c.block_n) * c.block_k * b;
  // Registers: the fp32 accumulator spread over the threads plus addressing, at most 255.
  const int regs = static_cast<int>(std::min(255.0, c.block_m * c.block_n / static_cast<double>(threads) + 40));
  const int per_sm = occupancy(threads, regs, c.num_stages * stage_bytes, hw);
  const CtaPlan plan = plan_uniform_ctas(ctas, per_sm, threads, hw);
  const double busiest_ctas = std::ceil(plan.ctas / hw.sms);

  MoeGemmEstimate e;
  e.padded_rows = padded;
  e.ctas = plan.ctas;
  e.ctas_per_sm = plan.ctas_per_sm;
  e.cta_slots = static_cast<double>(hw.sms) * plan.ctas_per_sm;
  e.waves = plan.waves;
  e.last_wave_fill = plan.last_wave_fill;
  e.k_iters = static_cast<int>(k_pad / c.block_k);

  // Tensor: every CTA's padded tile on the busiest SM; below BLOCK_SIZE_M 64 at the warp-level rate.
  double tensor_rate = hw.tensor_flops_per_clk * (dtype_bytes(dt) <= 1 ? eff.tensor_8bit : eff.tensor_16bit);
  tensor_rate *= tile_efficiency(c) * std::pow(std::min(1.0, c.block_k * b / 128.0), kMoeNarrowKStepExponent);
  if (c.block_m < 64) tensor_rate *= warp_factor;
  const double tensor = busiest_ctas * 2.0 * c.block_m * c.block_n * k_pad / tensor_rate;
  // DRAM: each active expert's weight once, the activation rows once, the output once (moe_model.cpp),
  // at the fitted fraction of the bandwidth; and Little's law for the weight tiles the resident CTAs
  // have in flight over their prefetched stages.
  const double bytes = active * g.N * g.K * b + g.a_rows * g.K * b + rows * g.N * gemm_output_bytes(dt);
  const double dram_bw = bytes / (hw.dram_bytes_per_clk * eff.dram);
  const double resident = std::min(plan.ctas, e.cta_slots);
  const double in_flight = resident * std::max(1, c.num_stages - 1) * c.block_n * c.block_k * b;
  const double latency = hw.achievable.dram_latency_cycles > 0 ? hw.achievable.dram_latency_cycles
                                                               : kMoeDefaultDramLatencyNs * 1e-9 * hw.clock_hz;
  const double dram_lat = bytes / in_flight * latency;
  const double dram = std::cbrt(dram_bw * dram_bw * dram_bw + dram_lat * dram_lat * dram_lat);
  // L2 and shared memory: each CTA streams its row block and weight block.
  const double l2 = (plan.ctas * (c.block_m + c.block_n) * k_pad * b + rows * g.N * 2) / hw.l2_bytes_per_clk;
  const double smem = busiest_ctas * (c.block_m + c.block_n) * k_pad * b / hw.smem_bytes_per_clk;
  // The K loop: each step waits for loads issued num_stages - 1 steps before; the CTAs resident on an
  // SM wait side by side.
  const double chain =
      std::ceil(busiest_ctas / plan.ctas_per_sm) * e.k_iters * kMoeLoadLatencyCycles / std::max(1, c.num_stages - 1);

  const std::pair<double, const char*> terms[] = {{tensor, "tensor"},
                                                  {dram, dram_lat > dram_bw ? "dram latency" : "dram"},
                                                  {l2, "l2"},
                                                  {smem, "smem"},
                                                  {chain, "load latency"}};
  double sum = 0, worst = -1;
  for (const auto& [t, name] : terms) {
    sum += std::pow(t, kMoeOverlapNorm);
    if (t > worst) worst = t, e.bound = name;
  }
  const double cycles = std::pow(sum, 1.0 / kMoeOverlapNorm) + kGemmFixedCycles;
  e.pred_us = cycles / hw.clock_hz * 1e6 + hw.launch_floor_us;
  return e;
}

std::string percent(double f) { return std::to_string(static_cast<int>(std::lround(f * 100))) + "%"; }

std::string gemm_reason(const MoeGemmEstimate& g) {
  std::ostringstream os;
  os << static_cast<int64_t>(g.waves) << (g.waves == 1 ? " wave " : " waves ") << percent(g.last_wave_fill) << " full, "
     << g.bound;
  return os.str();
}

void check(const MoeShape& s, MoeDtype dtype, const GpuSpec& gpu) {
  if (s.E <= 0 || s.N <= 0 || s.H <= 0 || s.topk <= 0) throw std::invalid_argument("E, N, H and topk must be positive");
  if (s.topk > s.E)
    throw std::invalid_argument("topk " + std::to_string(s.topk) + " is above the " + std::to_string(s.E) + " experts");
  const Dtype dt = compute_dtype(dtype);
  if (!gpu.peak_flops_per_s(dt))
    throw std::invalid_argument(gpu.id + " (" + gpu.name + ") has no " + std::string(dtype_name(dt)) +
                                " tensor-core path, which --dtype " + moe_dtype_name(dtype) + " needs");
}

}  // namespace

const char* moe_dtype_name(MoeDtype d) {
  switch (d) {
    case MoeDtype::bf16:
      return "bf16";
    case MoeDtype::fp8:
      return "fp8";
    case MoeDtype::fp8_block:
      return "fp8-block";
  }
  return "?";
}

std::string moe_config_to_string(const MoeConfig& c) {
  return std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + "x" + std::to_string(c.block_k) + "/g" +
         std::to_string(c.group_m) + "/w" + std::to_string(c.num_warps) + "/s" + std::to_string(c.num_stages);
}

std::vector<MoeConfig> moe_config_space(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu) {
  const double b = dtype_bytes(compute_dtype(dtype));
  const double smem_limit = gpu.max_shared_memory_per_block_kib * 1024;
  const bool unaligned = shape.N % 16 != 0 || shape.H % 16 != 0;
  std::vector<MoeConfig> out;
  for (int bm : {16, 32, 64, 128, 256})
    for (int bn : {32, 64, 128, 256})
      for (int bk : {64, 128, 256})
        for (int g : {1, 16, 32, 64})
          for (int w : {4, 8})
            for (int st : {2, 3, 4, 5}) {
              if (st * (bm + bn) * bk * b > smem_limit) continue;
              if (dtype == MoeDtype::fp8_block && (bn % 128 != 0 || bk != 128)) continue;
              if (unaligned && (bk > 64 || bn * bk / (32 * w) > kMoeUnalignedWeightElementsPerThread)) continue;
              out.push_back({bm, bn, bk, g, w, st});
            }
  return out;
}

MoeConfig moe_engine_default(MoeDtype dtype, int64_t tokens, int64_t E) {
  if (dtype == MoeDtype::fp8_block) return {64, 128, 128, 32, 4, 3};
  if (tokens <= E) return {16, 32, 64, 1, 4, 3};
  return {64, 64, 32, 8, 4, 3};
}

MoeCandidate estimate_moe_config(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu, int64_t tokens,
                                 const MoeConfig& config, const MoeEfficiencies& eff) {
  check(shape, dtype, gpu);
  if (tokens < 1) throw std::invalid_argument("a token count must be at least 1");
  const HardwareRates hw = hardware_rates(gpu, compute_dtype(dtype));
  const double T = static_cast<double>(tokens);
  const double padded =
      moe_expected_padded_rows(T, static_cast<double>(shape.E), static_cast<double>(shape.topk), config.block_m);
  const double N = static_cast<double>(shape.N), H = static_cast<double>(shape.H);
  MoeCandidate c;
  c.config = config;
  const double warp = warp_mma_factor(gpu, hw);
  c.gate_up = estimate_gemm(shape, dtype, hw, T, {2 * N, H, T}, config, eff, padded, warp);
  c.down = estimate_gemm(shape, dtype, hw, T, {H, N, T * static_cast<double>(shape.topk)}, config, eff, padded, warp);
  c.pred_us = c.gate_up.pred_us + c.down.pred_us;
  c.reason = "gate-up " + gemm_reason(c.gate_up) + "; down " + gemm_reason(c.down);
  return c;
}

std::vector<MoeTokenResult> tune_moe(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu,
                                     const std::vector<int64_t>& tokens, const MoeEfficiencies& eff) {
  check(shape, dtype, gpu);
  for (int64_t t : tokens)
    if (t < 1) throw std::invalid_argument("a token count must be at least 1, got " + std::to_string(t));
  const std::vector<MoeConfig> space = moe_config_space(shape, dtype, gpu);
  if (space.empty()) throw std::invalid_argument("no configuration of the engines' space fits " + gpu.id);
  const HardwareRates hw = hardware_rates(gpu, compute_dtype(dtype));
  const double N = static_cast<double>(shape.N), H = static_cast<double>(shape.H);
  const double warp = warp_mma_factor(gpu, hw);
  std::vector<MoeTokenResult> out;
  for (int64_t tokens_now : tokens) {
    const double T = static_cast<double>(tokens_now);
    std::map<int, double> padded;  // by BLOCK_SIZE_M: the binomial sum is the costly part
    MoeTokenResult r;
    r.tokens = tokens_now;
    r.ranked.reserve(space.size());
    for (const MoeConfig& c : space) {
      auto [it, fresh] = padded.try_emplace(c.block_m, 0.0);
      if (fresh)
        it->second =
            moe_expected_padded_rows(T, static_cast<double>(shape.E), static_cast<double>(shape.topk), c.block_m);
      MoeCandidate m;
      m.config = c;
      m.gate_up = estimate_gemm(shape, dtype, hw, T, {2 * N, H, T}, c, eff, it->second, warp);
      m.down =
          estimate_gemm(shape, dtype, hw, T, {H, N, T * static_cast<double>(shape.topk)}, c, eff, it->second, warp);
      m.pred_us = m.gate_up.pred_us + m.down.pred_us;
      r.ranked.push_back(std::move(m));
    }
    std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const MoeCandidate& a, const MoeCandidate& b) {
      if (a.pred_us != b.pred_us) return a.pred_us < b.pred_us;
      if (a.config.num_warps != b.config.num_warps) return a.config.num_warps < b.config.num_warps;
      return group_preference(a.config.group_m) < group_preference(b.config.group_m);
    });
    for (MoeCandidate& m : r.ranked) m.reason = "gate-up " + gemm_reason(m.gate_up) + "; down " + gemm_reason(m.down);
    r.engine_default =
        estimate_moe_config(shape, dtype, gpu, tokens_now, moe_engine_default(dtype, tokens_now, shape.E), eff);
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<int64_t>& vllm_moe_token_counts() {
  static const std::vector<int64_t> counts{1,  2,   4,   8,   16,   24,   32,   48,   64,
                                           96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096};
  return counts;
}

std::string vllm_device_name(const GpuSpec& gpu) {
  std::string name = gpu.aliases.empty() ? gpu.name : gpu.aliases.front();
  std::replace(name.begin(), name.end(), ' ', '_');
  // vLLM files every H200 variant (H200 NVL, H200 141GB HBM3e, ...) under NVIDIA_H200.
  std::istringstream parts(name);
  for (std::string p; std::getline(parts, p, '_');)
    if (p == "H200") return "NVIDIA_H200";
  return name;
}

std::string vllm_moe_config_file_name(const MoeShape& shape, MoeDtype dtype, const GpuSpec& gpu) {
  std::string name =
      "E=" + std::to_string(shape.E) + ",N=" + std::to_string(shape.N) + ",device_name=" + vllm_device_name(gpu);
  if (dtype != MoeDtype::bf16) name += ",dtype=fp8_w8a8";
  if (dtype == MoeDtype::fp8_block) name += ",block_shape=[128,128]";
  return name + ".json";
}

std::vector<std::pair<std::string, int>> moe_config_keys(const MoeConfig& c) {
  return {{"BLOCK_SIZE_M", c.block_m}, {"BLOCK_SIZE_N", c.block_n}, {"BLOCK_SIZE_K", c.block_k},
          {"GROUP_SIZE_M", c.group_m}, {"num_warps", c.num_warps},  {"num_stages", c.num_stages}};
}

std::string vllm_moe_config_json(const std::vector<MoeTokenResult>& results) {
  nlohmann::ordered_json cfg = nlohmann::ordered_json::object();
  for (const auto& r : results) {
    if (r.ranked.empty())
      throw std::invalid_argument("no configuration ranked at " + std::to_string(r.tokens) + " tokens");
    nlohmann::ordered_json keys;
    for (const auto& [key, value] : moe_config_keys(r.ranked.front().config)) keys[key] = value;
    cfg[std::to_string(r.tokens)] = std::move(keys);
  }
  return cfg.dump(4) + "\n";
}

void write_vllm_moe_config(const std::filesystem::path& file, const std::vector<MoeTokenResult>& results) {
  const std::string text = vllm_moe_config_json(results);
  std::ofstream os(file, std::ios::binary | std::ios::trunc);
  if (!(os << text) || !os.flush()) throw std::runtime_error(file.string() + ": cannot be written");
}

}  // namespace perfloom::tuner
