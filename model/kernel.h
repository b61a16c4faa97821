#pragma once
// A kernel as perfloom reasons about it: what it computes (op, dtype, shape), and, when a trace
// says so, how it was launched and which tile configuration it used.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"

namespace perfloom {

// Kernel families: each has one calculator in model/families/ (DESIGN.md).
enum class Family { gemm, attention, norm, elementwise, moe, communication, unknown };

// What a kernel computes. Names match the kernel-list CSV of CONTRACT.md where it has them.
enum class Op {
  gemm,
  bmm,
  attn_prefill,
  attn_decode,
  rmsnorm,
  fused_add_rmsnorm,
  layernorm,
  fused_add_layernorm,
  silu_mul,
  gelu_mul,
  add,
  softmax,
  rotary,
  embedding,
  kv_cache_write,
  copy,
  moe,
  allreduce,
  allgather,
  reducescatter,
  sendrecv,
  alltoall,
  unknown,
};

// The pipes whose demand the analytical model counts; `launch` is the fixed cost of any kernel
// and `link` the GPU-to-GPU interconnect of communication kernels.
enum class Pipe { tensor, fma, sfu, dram, l2, smem, launch, link };
inline constexpr int kPipeCount = 8;

std::string_view family_name(Family f);
std::optional<Family> parse_family(std::string_view s);
std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view s);
Family family_of(Op op);
std::string_view pipe_name(Pipe p);

// Shape dimensions; only those an op needs are set (CONTRACT.md kernel-list table):
//   gemm M,N,K; bmm Bt,M,N,K; attn_prefill B,S,Hq,Hkv,D; attn_decode B,L,Hq,Hkv,D;
//   rmsnorm/layernorm/add/fused_add_* T,H; silu_mul/gelu_mul T,I; softmax T,V;
//   rotary T,Hq,Hkv,D; kv_cache_write T,Hkv,D; embedding T,H,V; copy bytes;
//   moe T,E,topk,H,I; allreduce/allgather/reducescatter/sendrecv/alltoall bytes,ranks.
struct Shape {
  int64_t M = 0, N = 0, K = 0, Bt = 0;
  int64_t B = 0, S = 0, L = 0, Hq = 0, Hkv = 0, D = 0;
  int64_t T = 0, H = 0, I = 0, V = 0;
  int64_t E = 0, topk = 0;
  int64_t bytes = 0, ranks = 0;
  bool causal = true;  // attention prefill
  // Ragged (varlen) prefill: per-sequence query lengths; when set, B and S are derived from it.
  std::vector<int64_t> seqlens;
};

// The names of the shape columns an op needs, in contract order.
const std::vector<std::string_view>& shape_columns(Op op);
// Reads/writes a named dimension ("M", "Hkv", ...); nullptr for an unknown name.
int64_t* shape_field(Shape& s, std::string_view name);
int64_t shape_value(const Shape& s, std::string_view name);

// A GEMM tile configuration as libraries name it: CTA tile MxNxK, cluster, stages, split-K.
struct TileConfig {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int cluster_m = 1, cluster_n = 1;
  int stages = 0;  // 0: unknown
  int split_k = 1;
  bool stream_k = false;  // persistent stream-K / tile scheduler
  bool operator==(const TileConfig&) const = default;
};

// Output tiles along one side rounded up to whole clusters of `cluster` CTAs along it: a thread-block
// cluster takes a block of tiles, and its padding CTAs run the main loop and hold their SMs (the
// tuner's WaveGrid::cluster_ctas, the GEMM plan, the classifier's persistence test).
constexpr int64_t whole_clusters(int64_t tiles, int cluster) {
  const int64_t c = cluster > 1 ? cluster : 1;
  return (tiles + c - 1) / c * c;
}

// Launch arguments as a trace reports them.
struct LaunchArgs {
  std::array<int64_t, 3> grid{0, 0, 0};
  std::array<int64_t, 3> block{0, 0, 0};
  int registers_per_thread = 0;
  int64_t shared_memory_bytes = 0;  // static + dynamic
  int64_t ctas() const { return product(grid); }
  int64_t threads_per_cta() const { return product(block); }
  // Given, and within what CUDA can launch (grid x below 2^31, y and z below 65536; a block of at
  // most 1024 threads, z at most 64): the models read a launch only then, so that a trace's absurd
  // grid cannot overflow their arithmetic.
  bool known() const {
    return grid[0] > 0 && grid[0] <= kMaxGridX && grid[1] >= 0 && grid[1] <= 65535 && grid[2] >= 0 &&
           grid[2] <= 65535 && block[0] > 0 && block[0] <= 1024 && block[1] >= 0 && block[1] <= 1024 && block[2] >= 0 &&
           block[2] <= 64 && threads_per_cta() <= 1024;
  }
  static constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;

 private:
  // x * max(y, 1) * max(z, 1), saturating at the int64_t maximum (an unchecked launch may hold anything).
  static int64_t product(const std::array<int64_t, 3>& d) {
    int64_t p = d[0];
    for (int i = 1; i < 3; ++i)
      if (__builtin_mul_overflow(p, std::max<int64_t>(d[static_cast<std::size_t>(i)], 1), &p))
        return std::numeric_limits<int64_t>::max();
    return p;
  }
};

struct KernelDesc {
  Op op = Op::unknown;
  Dtype dtype = Dtype::bf16;
  Shape shape;
  std::optional<TileConfig> tile;    // from the kernel name or a tuner; else the model picks
  std::optional<LaunchArgs> launch;  // from a trace
  std::string name;                  // kernel name as profiled, if any
  // The time includes the activation quantisation in front of a low-precision GEMM (a serving
  // framework's fp8/fp4 linear layer, as the public aiconfigurator tables measure it); false: the
  // GEMM kernel alone.
  bool act_quant = false;
};

// The largest value a shape column may hold: bounds that no real kernel reaches and that keep
// every model's arithmetic finite and its work independent of the values. A dimension: 2^31 - 1
// (CUDA's largest grid dimension); a sequence's tokens (S, L, seqlens): 2^24, above the longest
// context windows (10M tokens); a collective's message: 2^48 bytes (256 TiB); its ranks: 1,000,000.
constexpr int64_t kMaxDimension = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxSequence = int64_t(1) << 24;
constexpr int64_t kMaxMessageBytes = int64_t(1) << 48;
constexpr int64_t kMaxRanks = 1000000;
int64_t max_dimension(std::string_view column);
// The longest kernel time a measurement may hold: 1e12 us is 11.6 days, far beyond any kernel,
// and below it sums over millions of kernels stay finite. Importers refuse (or skip) a longer one
// naming its row.
constexpr double kMaxKernelLatencyUs = 1e12;

// Checks that every dimension the op needs is positive and at most max_dimension; returns the
// reason when not.
std::optional<std::string> validate_shape(Op op, const Shape& s);

// A kernel's identity as text, for deduplication and memoisation. Two kernels get the same key
// exactly when they are the same at that level of detail:
//  - shape: op, dtype and the op's shape columns, "gemm|bf16|4096|4096|4096", and "|q" when the
//    time includes the activation quantisation (training: a measured shape, whatever tile or
//    launch ran it; this text also seeds the train/validation split, so changing it reshuffles
//    that split: do it only with a new feature version);
//  - prediction: that plus everything a prediction depends on: causal, ragged sequence lengths,
//    tile, launch arguments, and the kernel name where the model reads it (unknown ops; named
//    tiled kernels), else its implementation class (classify/kernel_classifier.h) (the learned
//    predictor's memo).
enum class KernelKeyDetail { shape, prediction };
std::string kernel_key(const KernelDesc& k, KernelKeyDetail detail = KernelKeyDetail::shape);

}  // namespace perfloom
