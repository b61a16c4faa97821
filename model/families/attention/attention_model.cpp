// FlashAttention-style prefill (FA2 on Ampere/Ada, FA3 on Hopper and later) and decode over a
// paged KV cache with split-KV (flash-decoding).
#include <algorithm>
#include <cmath>
#include <queue>
#include <string>
#include <vector>

#include "model/families/family_models.h"

namespace perfloom {

namespace {

struct AttnTiles {
  int q_rows;   // Br: query rows per CTA
  int kv_cols;  // Bc: keys per inner iteration
};

AttnTiles prefill_tiles(const GpuSpec& gpu, int64_t head_dim) {
  const bool sm90 = gpu.architecture == "hopper" || gpu.architecture == "blackwell";
  if (sm90) return {128, head_dim <= 128 ? 128 : 80};
  return {128, head_dim <= 64 ? 128 : 64};
}

void check_support(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw) {
  if (k.dtype == Dtype::fp32) return;  // runs on FMA lanes (math backend)
  if (hw.tensor_flops_per_clk <= 0)
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(k.dtype)) + " tensor-core path");
}

// Longest-processing-time-first on the SMs: the busiest SM's share of the total work.
double busiest_share_lpt(std::vector<double> work, int sms) {
  double total = 0;
  for (double w : work) total += w;
  if (total <= 0) return 1.0 / sms;
  std::sort(work.rbegin(), work.rend());
  std::priority_queue<double, std::vector<double>, std::greater<double>> load;
  for (int i = 0; i < sms; ++i) load.push(0.0);
  double busiest = 0;
  for (double w : work) {
    double l = load.top() + w;
    load.pop();
    load.push(l);
    busiest = std::max(busiest, l);
  }
  return busiest / total;
}

Analysis prefill(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw) {
  const Shape& s = k.shape;
  std::vector<int64_t> lens = s.seqlens;
  if (lens.empty()) lens.assign(static_cast<std::size_t>(s.B), s.S);
  const AttnTiles t = prefill_tiles(gpu, s.D);
  const double b = dtype_bytes(k.dtype), D = static_cast<double>(s.D);
  const double hq = static_cast<double>(s.Hq), hkv = static_cast<double>(s.Hkv);

  PipeDemand d, least;
  double useful = 0, tokens = 0;
  double ctas = 0, max_cta_flops = 0;
  for (int64_t len : lens) ctas += static_cast<double>((len + t.q_rows - 1) / t.q_rows) * hq;
  const bool exact_schedule = ctas <= 20000;
  std::vector<double> cta_work;  // executed tensor FLOPs per CTA, when few enough to schedule exactly
  for (int64_t len : lens) {
    const double L = static_cast<double>(len);
    tokens += L;
    const int64_t q_tiles = (len + t.q_rows - 1) / t.q_rows;
    for (int64_t i = 0; i < q_tiles; ++i) {
      const double q_end = std::min(L, static_cast<double>((i + 1) * t.q_rows));
      const double kv = s.causal ? q_end : L;
      const double kv_exec = std::ceil(kv / t.kv_cols) * t.kv_cols;
      const double flops = 4.0 * t.q_rows * kv_exec * D;  // QK^T and PV
      d.tensor_flops += flops * hq;
      d.sfu_ops += t.q_rows * kv_exec * hq;               // one exp2 per score
      d.fma_flops += (4.0 * t.q_rows * kv_exec + 2.0 * t.q_rows * D * (kv_exec / t.kv_cols)) * hq;
      d.l2_bytes += (t.q_rows * D + 2.0 * kv * D) * b * hq;
      d.smem_bytes += (t.q_rows * D + 2.0 * kv_exec * D) * b * hq;
      max_cta_flops = std::max(max_cta_flops, flops);
      // Least: rows and keys padded only to the MMA's 16.
      const double rows16 = std::ceil((q_end - static_cast<double>(i * t.q_rows)) / 16.0) * 16.0;
      const double kv16 = std::ceil(kv / 16.0) * 16.0;
      least.tensor_flops += 4.0 * rows16 * kv16 * D * hq;
      least.sfu_ops += rows16 * kv16 * hq;
      if (exact_schedule) cta_work.insert(cta_work.end(), static_cast<std::size_t>(s.Hq), flops);
    }
    useful += 4.0 * D * hq * (s.causal ? L * (L + 1) / 2.0 : L * L);
  }
  d.dram_bytes = tokens * D * b * (2.0 * hq + 2.0 * hkv);  // Q and O, K and V, each once
  d.l2_bytes += tokens * hq * D * b;                        // O written
  Analysis a;
  a.family = Family::attention;
  a.op = k.op;
  a.demand = d;
  least.fma_flops = least.sfu_ops * 4.0;
  least.dram_bytes = d.dram_bytes;
  least.l2_bytes = d.dram_bytes;
  least.smem_bytes = tokens * D * b * (hq + 2.0 * hkv);
  a.least_demand = least;
  a.useful_flops = useful;
  const int threads = (gpu.architecture == "hopper" || gpu.architecture == "blackwell") ? 384 : 128;
  const double smem_cta = (t.q_rows * D + 2.0 * 2.0 * t.kv_cols * D) * b;
  a.plan = plan_uniform_ctas(ctas, std::min(occupancy(threads, 0, smem_cta, hw), 2), threads, hw);
  a.plan.busiest_sm_share = exact_schedule
                               ? busiest_share_lpt(std::move(cta_work), hw.sms)
                               : std::max(d.tensor_flops / hw.sms, max_cta_flops) / d.tensor_flops;
  a.tile = TileConfig{t.q_rows, t.kv_cols, static_cast<int>(s.D)};
  a.tile_origin = "architecture default";
  return a;
}

// FlashAttention's split-KV heuristic: more splits while they raise the filled fraction of waves.
int decode_splits(double blocks, double kv_blocks, int sms) {
  if (blocks >= 0.8 * sms) return 1;
  const int max_splits = static_cast<int>(std::min({128.0, kv_blocks, static_cast<double>(sms)}));
  double best_eff = 0;
  std::vector<double> eff(static_cast<std::size_t>(max_splits + 1), 0);
  for (int n = 1; n <= max_splits; ++n) {
    const double waves = blocks * n / sms;
    eff[static_cast<std::size_t>(n)] = waves / std::ceil(waves);
    best_eff = std::max(best_eff, eff[static_cast<std::size_t>(n)]);
  }
  for (int n = 1; n <= max_splits; ++n)
    if (eff[static_cast<std::size_t>(n)] >= 0.85 * best_eff) return n;
  return 1;
}

Analysis decode(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw) {
  const Shape& s = k.shape;
  const double b = dtype_bytes(k.dtype), D = static_cast<double>(s.D), L = static_cast<double>(s.L);
  const double B = static_cast<double>(s.B), hq = static_cast<double>(s.Hq), hkv = static_cast<double>(s.Hkv);
  const double group = hq / hkv;           // query heads sharing one KV head, packed in one CTA
  const int kv_block = 128;
  const double kv_blocks = std::ceil(L / kv_block);
  const double blocks = B * hkv * std::ceil(group / 64.0);
  const int splits = decode_splits(blocks, kv_blocks, hw.sms);
  const double rows_exec = std::max(16.0, std::ceil(group / 16.0) * 16.0);  // MMA pads query rows
  const double kv_exec = kv_blocks * kv_block;

  PipeDemand d;
  d.tensor_flops = B * hkv * 4.0 * rows_exec * kv_exec * D;
  d.sfu_ops = B * hq * kv_exec;
  d.fma_flops = B * hq * kv_exec * 4.0;
  d.dram_bytes = B * L * hkv * D * 2.0 * b + 2.0 * B * hq * D * b;  // the KV cache once, q and o
  d.l2_bytes = d.dram_bytes;
  d.smem_bytes = B * hkv * kv_exec * D * 2.0 * b;
  if (splits > 1) {
    const double partials = B * hq * splits * (D + 2.0) * 4.0;  // fp32 partial O, max and sum
    d.dram_bytes += 2.0 * partials;
    d.l2_bytes += 2.0 * partials;
  }
  Analysis a;
  a.family = Family::attention;
  a.op = k.op;
  a.demand = d;
  a.useful_flops = 4.0 * B * hq * L * D;
  const double smem_cta = (rows_exec * D + 2.0 * 2.0 * kv_block * D) * b;
  a.plan = plan_uniform_ctas(blocks * splits, occupancy(128, 0, smem_cta, hw), 128, hw);
  a.tile = TileConfig{static_cast<int>(rows_exec), kv_block, static_cast<int>(s.D)};
  a.tile->split_k = splits;
  a.tile_origin = "heuristic";  // per shape: the query group and the split-KV count
  return a;
}

}  // namespace

Analysis analyze_attention(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  check_support(k, gpu, hw);
  Analysis a = k.op == Op::attn_decode ? decode(k, gpu, hw) : prefill(k, gpu, hw);
  if (k.dtype == Dtype::fp32) {  // no tensor cores: the matrix work moves to the FMA lanes
    a.demand.fma_flops += a.demand.tensor_flops;
    a.demand.tensor_flops = 0;
  }
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
