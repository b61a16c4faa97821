#include "model/features.h"

#include <algorithm>
#include <cmath>

#include "model/classify/kernel_classifier.h"
#include "model/classify/tile_from_name.h"

namespace perfloom {

namespace {
float lg(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }
constexpr Pipe kWorkPipes[] = {Pipe::tensor, Pipe::fma, Pipe::sfu, Pipe::dram, Pipe::l2, Pipe::smem};
}  // namespace

double act_quant_us(const KernelDesc& k, const GpuSpec& gpu) {
  if (!k.act_quant) return 0;
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  const double mk = static_cast<double>(k.shape.M) * static_cast<double>(k.shape.K);
  const double scales = k.dtype == Dtype::fp4 ? mk / 16.0 : 4.0 * static_cast<double>(k.shape.M);
  const double bytes = mk * (2.0 + dtype_bytes(k.dtype)) + scales;
  const double bytes_per_clk =
      bytes <= gpu.l2_cache_mib * 1024.0 * 1024.0 ? hw.achievable.l2_bytes_per_clk : hw.achievable.dram_bytes_per_clk;
  return bytes / bytes_per_clk / hw.clock_hz * 1e6 + hw.achievable.launch_floor_us;
}

double operand_load_bytes(const KernelDesc& k) {
  const auto elements = operand_alignment_elements(k.name);
  return elements ? std::min(16.0, *elements * dtype_bytes(k.dtype)) : 16.0;
}

const std::vector<std::string_view>& feature_names() {
  static const std::vector<std::string_view> names = {"log2_cyc_bal_tensor",
                                                      "log2_cyc_bal_fma",
                                                      "log2_cyc_bal_sfu",
                                                      "log2_cyc_bal_dram",
                                                      "log2_cyc_bal_l2",
                                                      "log2_cyc_bal_smem",
                                                      "log2_cyc_max_tensor",
                                                      "log2_cyc_max_fma",
                                                      "log2_cyc_max_sfu",
                                                      "log2_cyc_max_dram",
                                                      "log2_cyc_max_l2",
                                                      "log2_cyc_max_smem",
                                                      "log2_cyc_work",
                                                      "log2_waves",
                                                      "last_wave_fill",
                                                      "log2_ctas",
                                                      "ctas_per_sm",
                                                      "imbalance",
                                                      "active_sm_fraction",
                                                      "dtype_bytes",
                                                      "log2_arith_intensity",
                                                      "tile_m",
                                                      "tile_n",
                                                      "tile_k",
                                                      "split_k",
                                                      "bound",
                                                      "log2_dim0",
                                                      "log2_dim1",
                                                      "log2_dim2",
                                                      "log2_dim3",
                                                      "log2_dim4",
                                                      "op",
                                                      "log2_dram_bytes_per_clk",
                                                      "log2_tensor_flops_per_clk_sm",
                                                      "log2_l2_mib",
                                                      "log2_launch_floor_cycles",
                                                      "impl_class",
                                                      "act_quant_share",
                                                      "tile_known",
                                                      "log2_share_tensor",
                                                      "log2_share_fma",
                                                      "log2_share_sfu",
                                                      "log2_share_dram",
                                                      "log2_share_l2",
                                                      "log2_share_smem",
                                                      "operand_load_bytes"};
  return names;
}

std::size_t impl_class_feature_index() {
  static const std::size_t i = [] {
    const auto& n = feature_names();
    return static_cast<std::size_t>(std::find(n.begin(), n.end(), "impl_class") - n.begin());
  }();
  return i;
}

std::vector<float> make_features(const KernelDesc& k, const GpuSpec& gpu, const Analysis& a) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  std::vector<float> f;
  f.reserve(feature_names().size());
  // Cycles and rates at what the pipes reach in practice (measured on a calibrated GPU, else the
  // datasheet x the calibrated GPUs' mean fraction): the same meaning on every GPU.
  auto balanced = a.achievable_cycles_balanced;
  auto busiest = a.achievable_cycles_busiest;
  // A GEMM's L2 and DRAM cycles as read at the geometric mean of its L2 rate and a reference rate,
  // their ratio kept. On one GPU a GEMM's L2 share is fixed by its tile and cluster, so trees that
  // saw it at the GPU's own rate explain a kernel's efficiency by its tile as much as by its L2
  // time, and a held-out GPU whose L2 alone is faster (the H200's) gets the training GPU's time; at
  // a reference rate the L2 reaches the prediction only through the smooth bound of the roofline
  // (kGemmOverlapNorm), which costs the H100 held out its DRAM-bound GEMMs. Half of each: held out,
  // GEMM MAPE H200 6.3 -> 5.8%, H100 5.9 -> 5.8%, A40 9.7 -> 8.6%, Blackwell 14.6 -> 14.2%, T4 28.9 ->
  // 33.0% (seed 7).
  if (a.family == Family::gemm && a.achievable_l2_bytes_per_s > 0) {
    const double scale = std::sqrt(a.achievable_l2_bytes_per_s / kReferenceL2BytesPerS);
    for (auto* c : {&balanced, &busiest})
      for (Pipe p : {Pipe::l2, Pipe::dram}) (*c)[static_cast<std::size_t>(p)] *= scale;
  }
  for (Pipe p : kWorkPipes) f.push_back(lg(balanced[static_cast<std::size_t>(p)]));
  double work = 0;
  for (Pipe p : kWorkPipes) {
    f.push_back(lg(busiest[static_cast<std::size_t>(p)]));
    work = std::max(work, busiest[static_cast<std::size_t>(p)]);
  }
  f.push_back(lg(work));
  f.push_back(lg(a.plan.waves));
  f.push_back(static_cast<float>(a.plan.last_wave_fill));
  f.push_back(lg(a.plan.ctas));
  f.push_back(static_cast<float>(a.plan.ctas_per_sm));
  f.push_back(static_cast<float>(a.plan.busiest_sm_share * gpu.sm_count));
  f.push_back(static_cast<float>(a.plan.active_sm_fraction));
  // No SM count or clock as such: a GPU enters through its rates and the cycles they give, so
  // that a GPU between two trained ones (A100 between A40 and H100) is not mistaken for either.
  f.push_back(static_cast<float>(dtype_bytes(k.dtype)));
  f.push_back(static_cast<float>(std::log2((a.useful_flops + 1.0) / (a.demand.dram_bytes + 1.0))));
  // A tile that is the architecture's default (attention: FlashAttention's per-architecture tile)
  // is not a feature: its effect is already in the cycle and wave features, and as a feature of
  // its own it only names the architecture. Ampere's FlashAttention-2 tile (128x64 at head dim
  // 128) sent a held-out A100's prefill rows to the leaves of Blackwell's head-dim-256 kernels
  // (128x80): 2-8x over-predicted. A GEMM's tile, given or chosen per shape, stays.
  const TileConfig t = a.tile_origin == "architecture default" ? TileConfig{} : a.tile.value_or(TileConfig{});
  f.push_back(static_cast<float>(t.tile_m));
  f.push_back(static_cast<float>(t.tile_n));
  f.push_back(static_cast<float>(t.tile_k));
  f.push_back(static_cast<float>(t.split_k));
  f.push_back(static_cast<float>(static_cast<int>(a.bound)));
  const auto& cols = shape_columns(k.op);
  for (std::size_t i = 0; i < 5; ++i)
    f.push_back(i < cols.size() ? lg(static_cast<double>(shape_value(k.shape, cols[i]))) : 0.0f);
  f.push_back(static_cast<float>(static_cast<int>(k.op)));
  f.push_back(lg(hw.achievable.dram_bytes_per_clk));
  f.push_back(lg(hw.achievable.tensor_flops_per_clk));
  f.push_back(lg(gpu.l2_cache_mib));
  f.push_back(lg(hw.achievable.launch_floor_us * 1e-6 * hw.clock_hz));
  f.push_back(static_cast<float>(implementation_class(k.name)));
  // The activation quantisation's estimated time over the GEMM's roofline time (achievable rates),
  // 0 where the measured time includes none. A flag would say only that some overhead is in the
  // time, and how large would have to come from the other GPUs' rows at the same shape; it scales
  // with M x K, not with the GEMM's work (about 1 for a launch-bound GEMM, a few % for a
  // compute-bound one). Held out, this share instead of a flag takes H100 GEMMs from 18.4% to 15.5%
  // MAPE (aiconfigurator's SGLang fp8 table 30.0% -> 19.2%), other GPUs within seed noise. Added to
  // the roofline instead (moving the label), the same estimate costs A40 6-12 points.
  const double quant_us = act_quant_us(k, gpu);
  f.push_back(
      static_cast<float>(quant_us > 0 && a.achievable_roofline_us > 0 ? quant_us / a.achievable_roofline_us : 0.0));
  // Whether the tile came with the kernel (its name, the caller) or the model chose it (heuristic,
  // tuner). The same tile means different things: a measured configuration (the collector's
  // `tiles` and `plan` sweeps force slow ones too) or the library's own choice for the shape,
  // which an untiled row's time is. Without this flag both land on one leaf; with it, held out, A100
  // GEMMs go from 21.6% to 13.9% MAPE, B200 from 24.1% to 19.9%.
  // An attention kernel's tile that its implementation fixes for the shape ("implementation":
  // PyTorch SDPA's FlashAttention-2 and cuDNN kernels named without their tile) counts as known.
  f.push_back(a.tile_origin == "given" || a.tile_origin == "kernel name" || a.tile_origin == "implementation" ? 1.0f
                                                                                                              : 0.0f);
  // Each pipe's busiest-SM cycles over the binding pipe's (log2, <= 0): how close to the bound the
  // other pipes are. A GPU changes the absolute cycles of each pipe by its own rates but a kernel's
  // efficiency follows its balance, which the trees could otherwise only piece together from
  // differences of two absolute features. Learned by GEMMs, and by attention for the tensor and
  // DRAM pipes (training.cpp features_not_learned): held out, GEMM MAPE (library-chosen rows) H100
  // 14.9 -> 14.4%, H200 10.3 -> 9.4%, A100 12.9 -> 11.7%; attention H100 21.0 -> 17.5%, A100 19.9
  // -> 18.1%; all six cost attention and the norm and elementwise families 3-13 points (H100
  // attention 22.0 -> 34.5%, H200 norm 10.0 -> 18.7%).
  for (Pipe p : kWorkPipes) {
    const double c = busiest[static_cast<std::size_t>(p)];
    f.push_back(work > 0 ? static_cast<float>(std::log2((c + 1.0) / (work + 1.0))) : 0.0f);
  }
  f.push_back(static_cast<float>(operand_load_bytes(k)));
  return f;
}

}  // namespace perfloom
