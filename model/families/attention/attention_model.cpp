// FlashAttention-style prefill (FA2 on Ampere/Ada, FA3 on Hopper and later) and decode over a
// paged KV cache with split-KV (flash-decoding). A kernel whose name gives its tile (PyTorch's
// FlashAttention-2 and cuDNN kernels, attention_tile_from_name) is analysed with that tile.
#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "model/classify/kernel_classifier.h"
#include "model/classify/tile_from_name.h"
#include "model/families/family_models.h"

namespace perfloom {

namespace {

struct AttnTiles {
  int q_rows;   // Br: query rows per CTA
  int kv_cols;  // Bc: keys per inner iteration
};

bool warpgroup_architecture(const GpuSpec& gpu) {
  return gpu.architecture == "hopper" || gpu.architecture == "blackwell";
}

AttnTiles prefill_tiles(const GpuSpec& gpu, int64_t head_dim) {
  if (warpgroup_architecture(gpu)) return {128, head_dim <= 128 ? 128 : 80};
  return {128, head_dim <= 64 ? 128 : 64};
}

void check_support(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw) {
  if (k.dtype == Dtype::fp32) return;  // runs on FMA lanes (math backend)
  if (hw.tensor_flops_per_clk <= 0)
    throw UnsupportedKernel(gpu.id + " has no " + std::string(dtype_name(k.dtype)) + " tensor-core path");
}

// How many times a CTA reads each K/V tile from shared memory: once per warp side by side along the
// query rows (FlashAttention-2 splits its rows over its warps; cuDNN's decode, the keys). Unnamed
// (warpgroup) kernels: once.
double kv_tile_readers(const std::optional<AttentionTileInfo>& named) {
  return named ? std::max(1, named->warps_m) : 1;
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

Analysis prefill(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw,
                 const std::optional<AttentionTileInfo>& named) {
  const Shape& s = k.shape;
  // Each distinct sequence length once, with how many sequences have it: B sequences of S tokens
  // cost one pass over S's query tiles, not B.
  std::vector<std::pair<int64_t, double>> lens;  // (tokens, sequences)
  if (s.seqlens.empty()) {
    lens.emplace_back(s.S, static_cast<double>(s.B));
  } else {
    std::vector<int64_t> sorted = s.seqlens;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t len : sorted)
      if (!lens.empty() && lens.back().first == len)
        lens.back().second += 1;
      else
        lens.emplace_back(len, 1.0);
  }
  const AttnTiles t = named ? AttnTiles{named->q_rows, named->kv_cols} : prefill_tiles(gpu, s.D);
  const double kv_readers = kv_tile_readers(named);
  const double b = dtype_bytes(k.dtype), D = static_cast<double>(s.D);
  const double hq = static_cast<double>(s.Hq), hkv = static_cast<double>(s.Hkv);

  PipeDemand d, least;
  double useful = 0, tokens = 0;
  double ctas = 0, max_cta_flops = 0;
  for (const auto& [len, count] : lens) {
    const int64_t q_tiles = (len + t.q_rows - 1) / t.q_rows;  // ceil: a partial tile is a whole CTA
    ctas += static_cast<double>(q_tiles) * hq * count;
  }
  const bool exact_schedule = ctas <= 20000;
  std::vector<double> cta_work;  // executed tensor FLOPs per CTA, when few enough to schedule exactly
  for (const auto& [len, count] : lens) {
    const double L = static_cast<double>(len);
    tokens += L * count;
    const int64_t q_tiles = (len + t.q_rows - 1) / t.q_rows;
    // Without a causal mask every full tile is alike: one of them stands for all but the last.
    const int64_t alike = s.causal ? 1 : std::max<int64_t>(q_tiles - 1, 1);
    for (int64_t i = 0; i < q_tiles; i += i + alike < q_tiles ? alike : 1) {
      const double n = (i + alike < q_tiles ? static_cast<double>(alike) : 1.0) * count;  // CTAs like tile i
      const double q_end = std::min(L, static_cast<double>((i + 1) * t.q_rows));
      const double kv = s.causal ? q_end : L;
      const double kv_exec = std::ceil(kv / t.kv_cols) * t.kv_cols;
      const double flops = 4.0 * t.q_rows * kv_exec * D;  // QK^T and PV
      d.tensor_flops += flops * hq * n;
      d.sfu_ops += t.q_rows * kv_exec * hq * n;  // one exp2 per score
      d.fma_flops += (4.0 * t.q_rows * kv_exec + 2.0 * t.q_rows * D * (kv_exec / t.kv_cols)) * hq * n;
      d.l2_bytes += (t.q_rows * D + 2.0 * kv * D) * b * hq * n;
      d.smem_bytes += (t.q_rows * D + 2.0 * kv_exec * D * kv_readers) * b * hq * n;
      max_cta_flops = std::max(max_cta_flops, flops);
      // Least: rows and keys padded only to the MMA's 16.
      const double rows16 = std::ceil((q_end - static_cast<double>(i * t.q_rows)) / 16.0) * 16.0;
      const double kv16 = std::ceil(kv / 16.0) * 16.0;
      least.tensor_flops += 4.0 * rows16 * kv16 * D * hq * n;
      least.sfu_ops += rows16 * kv16 * hq * n;
      if (exact_schedule) cta_work.insert(cta_work.end(), static_cast<std::size_t>(s.Hq * n), flops);
    }
    useful += 4.0 * D * hq * (s.causal ? L * (L + 1) / 2.0 : L * L) * count;
  }
  d.dram_bytes = tokens * D * b * (2.0 * hq + 2.0 * hkv);  // Q and O, K and V, each once
  d.dram_write_bytes = tokens * hq * D * b;
  d.l2_bytes += tokens * hq * D * b;  // O written
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
  const int threads = named ? 32 * named->warps : warpgroup_architecture(gpu) ? 384 : 128;
  const double smem_cta = (t.q_rows * D + 2.0 * 2.0 * t.kv_cols * D) * b;
  a.plan = plan_uniform_ctas(ctas, std::min(occupancy(threads, 0, smem_cta, hw), 2), threads, hw);
  a.plan.busiest_sm_share = exact_schedule ? busiest_share_lpt(std::move(cta_work), hw.sms)
                                           : std::max(d.tensor_flops / hw.sms, max_cta_flops) / d.tensor_flops;
  a.tile = TileConfig{t.q_rows, t.kv_cols, static_cast<int>(s.D)};
  a.tile_origin = named ? "kernel name" : "architecture default";
  return a;
}

// FlashAttention's split-KV heuristic (num_splits_heuristic): more splits while they raise the
// filled fraction of waves of `slots` CTAs; a count that leaves the keys per split as they were
// with one split fewer is not eligible (it runs as that one). PyTorch's FlashAttention-2 passes
// twice the SM count as `slots` and counts `blocks` in 64-row query blocks: with these, the
// split count of 241 of the 245 split-KV decodes our collector timed on the H100 matches the
// grid it launched (data/h100-sxm/attention.csv; the other 4 rows' grid is the combine
// kernel's).
int decode_splits(double blocks, double kv_blocks, int slots) {
  if (blocks >= 0.8 * slots) return 1;
  const int max_splits = static_cast<int>(std::min({128.0, kv_blocks, static_cast<double>(slots)}));
  const auto keys_per_split = [&](int n) { return std::ceil(kv_blocks / n); };
  const auto eligible = [&](int n) { return n == 1 || keys_per_split(n) != keys_per_split(n - 1); };
  double best_eff = 0;
  std::vector<double> eff(static_cast<std::size_t>(max_splits + 1), 0);
  for (int n = 1; n <= max_splits; ++n) {
    if (!eligible(n)) continue;
    const double waves = blocks * n / slots;
    eff[static_cast<std::size_t>(n)] = waves / std::ceil(waves);
    best_eff = std::max(best_eff, eff[static_cast<std::size_t>(n)]);
  }
  for (int n = 1; n <= max_splits; ++n)
    if (eligible(n) && eff[static_cast<std::size_t>(n)] >= 0.85 * best_eff) return n;
  return 1;
}

// The split count PyTorch's SDPA kernels get from that heuristic for a decode whose keys come in
// blocks of `kv_cols`: twice the SM count as slots, the query group in 64-row blocks.
int sdpa_decode_splits(const Shape& s, int kv_cols, const HardwareRates& hw) {
  const double group = static_cast<double>(s.Hq) / static_cast<double>(s.Hkv);
  const double blocks = static_cast<double>(s.B * s.Hkv) * std::ceil(group / 64.0);
  return decode_splits(blocks, std::ceil(static_cast<double>(s.L) / kv_cols), 2 * hw.sms);
}

// The split-KV count a named decode kernel's launch grid shows: FlashAttention-2 launches (query
// blocks, splits, B x Hkv), cuDNN (splits, Hkv, B). Nothing without a grid or with another layout
// (a profiler's row may carry the combine kernel's grid).
std::optional<int> launched_splits(const AttentionTileInfo& t, const KernelDesc& k, double m_blocks) {
  if (!k.launch) return std::nullopt;
  const auto& g = k.launch->grid;
  const int64_t B = k.shape.B, hkv = k.shape.Hkv;
  if (t.format == "flash-attn2" && static_cast<double>(g[0]) == m_blocks && g[2] == B * hkv && g[1] >= 1)
    return static_cast<int>(g[1]);
  if (t.format == "cudnn" && g[1] == hkv && g[2] == B && g[0] >= 1) return static_cast<int>(g[0]);
  return std::nullopt;
}

// A FlashAttention-2 or cuDNN kernel named without its tile (the step simulator's `--attention-impl`
// kernels, a profiler's truncated name): the tile PyTorch's SDPA launches for the shape, as our
// collector recorded it on the H100 and H200 (data/<gpu>/attention*.csv). FlashAttention-2:
// 128 query rows x 128 keys at head dim 64, 128 x 64 at 128 (64 x 64 above: not measured); a
// decode that FlashAttention's heuristic splits runs the split-KV kernel, 64 rows x 256 / 128 / 64
// keys. cuDNN decode: 64 x 64 up to 128 cached tokens, else 16 x 128. cuDNN's prefill: none (the
// architecture's default, see analyze_attention).
std::optional<AttentionTileInfo> sdpa_tile(const KernelDesc& k, const HardwareRates& hw) {
  const int impl = implementation_class(k.name);
  const Shape& s = k.shape;
  const int D = static_cast<int>(s.D);
  AttentionTileInfo t;
  t.head_dim = D;
  t.warps = 4;
  if (impl == kFlashAttention2Implementation) {
    t.format = "flash-attn2";
    t.warps_m = 4;
    t.q_rows = 128;
    t.kv_cols = D <= 64 ? 128 : 64;
    if (D > 128) t.q_rows = 64;
    if (k.op == Op::attn_decode) {
      const int split_cols = D <= 64 ? 256 : D <= 128 ? 128 : 64;
      if (sdpa_decode_splits(s, split_cols, hw) > 1) {
        t.q_rows = 64;
        t.kv_cols = split_cols;
        t.split_kv = true;
      }
    }
    return t;
  }
  if (impl == kCudnnAttentionImplementation && k.op == Op::attn_decode) {
    t.format = "cudnn";
    t.warps_m = 1;
    t.q_rows = s.L <= 128 ? 64 : 16;
    t.kv_cols = s.L <= 128 ? 64 : 128;
    t.split_kv = true;
    return t;
  }
  return std::nullopt;
}

// Without a kernel name: the serving engine's decode (FA3, FlashInfer, ...), the query group in one
// CTA's rows padded to the MMA's 16. With a name (attention_tile_from_name): that kernel's tile,
// the rows padded to its query rows.
Analysis decode(const KernelDesc& k, const GpuSpec& gpu, const HardwareRates& hw,
                const std::optional<AttentionTileInfo>& named) {
  const Shape& s = k.shape;
  const double b = dtype_bytes(k.dtype), D = static_cast<double>(s.D), L = static_cast<double>(s.L);
  const double B = static_cast<double>(s.B), hq = static_cast<double>(s.Hq), hkv = static_cast<double>(s.Hkv);
  const double group = hq / hkv;  // query heads sharing one KV head
  const int kv_block = named ? named->kv_cols : 128;
  const double kv_blocks = std::ceil(L / kv_block);
  const double kv_exec = kv_blocks * kv_block;
  // CTAs per split and the query rows each executes; a CTA reads its KV head's cache once.
  double ctas = 0, rows_exec = 0;
  int splits = 1;
  if (!named) {
    ctas = B * hkv * std::ceil(group / 64.0);
    rows_exec = std::max(16.0, std::ceil(group / 16.0) * 16.0) / std::ceil(group / 64.0);
    splits = decode_splits(ctas, kv_blocks, hw.sms);
  } else {  // both formats put a KV head's query group in one CTA's rows
    const double m_blocks = std::ceil(group / named->q_rows);
    ctas = B * hkv * m_blocks;
    rows_exec = named->q_rows;
    if (named->split_kv) splits = launched_splits(*named, k, m_blocks).value_or(sdpa_decode_splits(s, kv_block, hw));
  }

  PipeDemand d;
  d.tensor_flops = ctas * 4.0 * rows_exec * kv_exec * D;
  d.sfu_ops = named ? ctas * rows_exec * kv_exec : B * hq * kv_exec;  // unnamed: padding skips the exp
  d.fma_flops = d.sfu_ops * 4.0;
  d.dram_bytes = B * L * hkv * D * 2.0 * b + 2.0 * B * hq * D * b;  // the KV cache once, q and o
  d.dram_write_bytes = B * hq * D * b;
  d.l2_bytes = d.dram_bytes + (ctas - B * hkv) * L * D * 2.0 * b;  // CTAs sharing a KV head hit L2
  d.smem_bytes = ctas * kv_exec * D * 2.0 * b * kv_tile_readers(named);
  if (splits > 1) {
    const double partials = B * hq * splits * (D + 2.0) * 4.0;  // fp32 partial O, max and sum
    d.dram_bytes += 2.0 * partials;
    d.dram_write_bytes += partials;
    d.l2_bytes += 2.0 * partials;
  }
  Analysis a;
  a.family = Family::attention;
  a.op = k.op;
  a.demand = d;
  a.useful_flops = 4.0 * B * hq * L * D;
  const int threads = named ? 32 * named->warps : 128;
  const double smem_cta = (rows_exec * D + 2.0 * 2.0 * kv_block * D) * b;
  a.plan = plan_uniform_ctas(ctas * splits, occupancy(threads, 0, smem_cta, hw), threads, hw);
  a.tile = TileConfig{static_cast<int>(rows_exec), kv_block, static_cast<int>(s.D)};
  a.tile->split_k = splits;
  a.tile_origin = named ? "kernel name" : "heuristic";  // unnamed: per shape, the query group and split-KV count
  return a;
}

}  // namespace

Analysis analyze_attention(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  check_support(k, gpu, hw);
  // Only a name that agrees with the shape's head dim is read: a kernel list may pair a name with
  // another shape.
  std::optional<AttentionTileInfo> named = attention_tile_from_name(k.name);
  if (named && named->head_dim != k.shape.D) named.reset();
  const bool tile_in_name = named.has_value();
  if (!named) named = sdpa_tile(k, hw);
  // cuDNN's Hopper prefill kernels are warp-specialised (384 threads, one persistent CTA per SM, as
  // our collector recorded them): the name's tile is a consumer warpgroup's, and the architecture's
  // default tile describes the kernel better.
  if (named && k.op == Op::attn_prefill && named->format != "flash-attn2") named.reset();
  Analysis a = k.op == Op::attn_decode ? decode(k, gpu, hw, named) : prefill(k, gpu, hw, named);
  if (named && !tile_in_name) a.tile_origin = "implementation";
  if (k.dtype == Dtype::fp32) {  // no tensor cores: the matrix work moves to the FMA lanes
    a.demand.fma_flops += a.demand.tensor_flops;
    a.demand.tensor_flops = 0;
  }
  a.warp_level_mma = warp_level_mma_kernel(k.name);
  a.fixed_cycles = kAttentionFixedCycles;
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
