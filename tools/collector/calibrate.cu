// perfloom-calibrate: measures what a GPU achieves (not what its datasheet promises) in well
// under two minutes and writes a calibration JSON (schema perfloom-calibration/1) that the
// predictor uses in place of datasheet rates. All kernel times come from CUPTI.
// Usage: perfloom-calibrate [--out calibration.json] [--quick]
#include "common.h"
#include "gemm.h"

#include <cuda/barrier>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace perfloom;

namespace {

// --- DRAM / L2 ----------------------------------------------------------------------------------
__global__ void read_kernel(const float4* __restrict__ p, size_t n, float* __restrict__ sink) {
  float acc = 0.f;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
           d = __ldcs(p + i + 3 * stride);
    acc += a.x + b.y + c.z + d.w;
  }
  for (; i < n; i += stride) acc += __ldcs(p + i).x;
  if (acc == 1234.5678f) *sink = acc;
}

__global__ void write_kernel(float4* __restrict__ p, size_t n, float v) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  float4 w = make_float4(v, v, v, v);
  for (; i < n; i += stride) __stcs(p + i, w);
}

__global__ void copy_kernel(float4* __restrict__ dst, const float4* __restrict__ src, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i + stride < n; i += 2 * stride) {
    float4 a = __ldcs(src + i), b = __ldcs(src + i + stride);
    __stcs(dst + i, a);
    __stcs(dst + i + stride, b);
  }
  for (; i < n; i += stride) __stcs(dst + i, __ldcs(src + i));
}

// L2: every thread reads the whole (L2-resident) buffer `passes` times with L1-bypassing loads.
__global__ void l2_read_kernel(const float4* __restrict__ p, size_t n, int passes, float* sink) {
  float acc = 0.f;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t start = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (int r = 0; r < passes; ++r) {
    size_t i = (start + (size_t)r * 7919 * blockDim.x) % stride;  // vary the block->line map
    for (; i + stride < n; i += 2 * stride) {
      float4 a = __ldcg(p + i), b = __ldcg(p + i + stride);
      acc += a.x + b.w;
    }
    for (; i < n; i += stride) acc += __ldcg(p + i).y;
  }
  if (acc == 1234.5678f) *sink = acc;
}

// L2 through the copy engine a Hopper GEMM feeds its tiles with: each CTA streams 16 KiB chunks of
// the (L2-resident) buffer into shared memory, kL2BulkStages in flight, with cuda::memcpy_async on a
// block-scope barrier (one bulk copy, cp.async.bulk, on sm_90 and later; cp.async before).
// One warp per CTA issues; the data is touched once so that the copies cannot be elided.
constexpr int kL2BulkChunk = 16384, kL2BulkStages = 3;
__global__ void l2_bulk_kernel(const char* __restrict__ p, size_t chunks, int passes, float* sink) {
  extern __shared__ __align__(128) char stage[];
#pragma nv_diag_suppress static_var_with_dynamic_init  // the barriers are initialised below, by one thread
  __shared__ cuda::barrier<cuda::thread_scope_block> bar[kL2BulkStages];
  if (threadIdx.x == 0)
    for (int s = 0; s < kL2BulkStages; ++s) init(&bar[s], blockDim.x);
  __syncthreads();
  cuda::barrier<cuda::thread_scope_block>::arrival_token tok[kL2BulkStages];
  float acc = 0.f;
  size_t it = 0;
  for (int r = 0; r < passes; ++r) {
    for (size_t c = (blockIdx.x + (size_t)r * 7919) % gridDim.x; c < chunks; c += gridDim.x, ++it) {
      const int s = (int)(it % kL2BulkStages);
      if (it >= (size_t)kL2BulkStages) {
        bar[s].wait(std::move(tok[s]));
        acc += reinterpret_cast<const float*>(stage + (size_t)s * kL2BulkChunk)[threadIdx.x];
        __syncwarp();
      }
      if (threadIdx.x == 0)
        cuda::memcpy_async(stage + (size_t)s * kL2BulkChunk, p + c * kL2BulkChunk,
                           cuda::aligned_size_t<128>(kL2BulkChunk), bar[s]);
      tok[s] = bar[s].arrive();
    }
  }
  for (size_t k = 0; k < std::min<size_t>(it, kL2BulkStages); ++k) {
    const int s = (int)((it - 1 - k) % kL2BulkStages);
    bar[s].wait(std::move(tok[s]));
    acc += reinterpret_cast<const float*>(stage + (size_t)s * kL2BulkChunk)[threadIdx.x];
  }
  if (acc == 1234.5678f) *sink = acc;
}

// --- shared memory -------------------------------------------------------------------------------
constexpr int kSmemFloat4 = 2048;  // 32 KiB
__global__ void smem_kernel(int iters, float* sink) {
  __shared__ float4 s[kSmemFloat4];
  for (int i = threadIdx.x; i < kSmemFloat4; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
  __syncthreads();
  float4 acc = make_float4(0, 0, 0, 0);
  int idx = threadIdx.x;
#pragma unroll 8
  for (int it = 0; it < iters; ++it) {
    float4 v = s[(idx + it * 32) & (kSmemFloat4 - 1)];
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  float a = acc.x + acc.y + acc.z + acc.w;
  if (a == 1234.5678f) *sink = a;
}

// --- FP32 FMA and SFU ----------------------------------------------------------------------------
__global__ void fma_kernel(int iters, float* sink, float b, float c) {
  float x[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) x[k] = threadIdx.x * 0.001f + k;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], b, c);
  }
  float a = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) a += x[k];
  if (a == 1234.5678f) *sink = a;
}

template <int OP>  // 0: ex2.approx, 1: sin.approx
__global__ void sfu_kernel(int iters, float* sink) {
  float x[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) x[k] = threadIdx.x * 1e-4f + k * 0.01f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (OP == 0)
        asm("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
      else
        asm("sin.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
    }
  }
  float a = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) a += x[k];
  if (a == 1234.5678f) *sink = a;
}

// --- memory latency and Little's law ------------------------------------------------------------
// One thread follows a chain of dependent loads (L1 bypassed): each load's address comes from the
// previous one, so the time per step is the unloaded latency of where the chain lives.
__global__ void chase_kernel(const unsigned* __restrict__ next, int steps, unsigned start, unsigned* sink) {
  unsigned i = start;
  for (int s = 0; s < steps; ++s) i = __ldcg(next + i);
  if (i == 0xFFFFFFFFu) *sink = i;
}

// A streaming read whose loads per thread in flight are fixed: one VEC-byte load per iteration,
// no unrolling, so each thread waits for its load before issuing the next (the next address does
// not depend on it, but the loop is kept rolled and the sum consumes the value).
template <int VEC>
__global__ void read_inflight_kernel(const char* __restrict__ p, size_t n_vec, float* __restrict__ sink) {
  float acc = 0.f;
  size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll 1
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_vec; i += stride) {
    if constexpr (VEC == 16) {
      float4 v = __ldcs(reinterpret_cast<const float4*>(p) + i);
      acc += v.x + v.w;
    } else if constexpr (VEC == 8) {
      float2 v = __ldcs(reinterpret_cast<const float2*>(p) + i);
      acc += v.x + v.y;
    } else if constexpr (VEC == 4) {
      acc += __ldcs(reinterpret_cast<const float*>(p) + i);
    } else {
      acc += __half2float(__ldcs(reinterpret_cast<const __half*>(p) + i));
    }
  }
  if (acc == 1234.5678f) *sink = acc;
}

// --- warp-level MMA (mma.sync) ---------------------------------------------------------------------
// The tensor path of Ampere and Ada, kept on Hopper and later beside their own (warpgroup / tcgen05)
// MMA: kernels written for sm80 (FlashAttention-2, cuDNN's and CUTLASS's sm80 kernels) issue it there.
// Each warp keeps ILP independent accumulators so that the MMA latency is hidden; the operands stay
// in registers. KIND 0: m16n8k16 f16 x f16 -> f32, 1: the same with bf16, 2: m16n8k8 tf32 -> f32.
template <int KIND>
__global__ void mma_sync_kernel(int iters, float* sink) {
  constexpr int ILP = 8;
  unsigned a[4], b[2];
#pragma unroll
  for (int k = 0; k < 4; ++k) a[k] = 0x3c003c00u ^ (threadIdx.x * 2654435761u & 0x00ff00ffu);
  b[0] = 0x3c003c00u;
  b[1] = 0x3c003c00u ^ threadIdx.x;
  float c[ILP][4];
#pragma unroll
  for (int j = 0; j < ILP; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) c[j][k] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < ILP; ++j) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      if constexpr (KIND == 0)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else if constexpr (KIND == 1)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
    }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < ILP; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 1234.5678f) *sink = s;
}
constexpr double kMmaSyncFlopsPerInstr[3] = {2.0 * 16 * 8 * 16, 2.0 * 16 * 8 * 16, 2.0 * 16 * 8 * 8};
constexpr int kMmaSyncIlp = 8;

__global__ void empty_kernel() {}

struct Json {
  std::ostringstream s;
  bool first = true;
  void key(const std::string& k) {
    s << (first ? "" : ",") << "\n  \"" << k << "\": ";
    first = false;
  }
  void str(const std::string& k, const std::string& v) {
    key(k);
    s << "\"" << v << "\"";
  }
  void num(const std::string& k, double v) {
    key(k);
    if (std::isfinite(v))
      s << v;
    else
      s << "null";
  }
  void raw(const std::string& k, const std::string& v) {
    key(k);
    s << v;
  }
};

std::string json_escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "calibration.json";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--quick")
      quick = true;
    else {
      std::fprintf(stderr, "usage: perfloom-calibrate [--out FILE.json] [--quick]\n");
      return 2;
    }
  }
  double t_start = wall_s();
  CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  auto& nv = Nvml::instance();
  int clock_before = nv.sm_clock_mhz();
  CuptiTimer::instance().start();
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&sink, 64));
  const int sms = prop.multiProcessorCount;
  const size_t l2 = (size_t)prop.l2CacheSize;
  std::map<std::string, double> m;
  std::map<std::string, double> tensor;
  std::map<std::string, double> tensor_burst;
  std::vector<std::string> notes;
  auto med = [](const Measurement& x) { return x.ok ? x.st.median : NAN; };

  // ---- DRAM --------------------------------------------------------------------------------
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t dram_bytes = std::min<size_t>(std::max<size_t>(2ull << 30, 40 * l2), free_b / 4);
  dram_bytes &= ~(size_t)0xFFFF;
  char* buf = nullptr;
  CUDA_CHECK(cudaMalloc(&buf, dram_bytes * 2));
  fill_random(buf, dram_bytes * 2, 0, 7, s);
  const int threads = 512;
  const int blocks = sms * 4;
  {
    size_t n = dram_bytes / 16;
    auto r = measure(
        s, [&](int i) { read_kernel<<<blocks, threads, 0, s>>>((const float4*)(buf + (i % 2) * dram_bytes), n, sink); },
        10, 30, 20000);
    m["dram_read_gb_s"] = dram_bytes / (med(r) * 1e-6) / 1e9;
    auto w = measure(
        s, [&](int i) { write_kernel<<<blocks, threads, 0, s>>>((float4*)(buf + (i % 2) * dram_bytes), n, 1.f); }, 10,
        30, 20000);
    m["dram_write_gb_s"] = dram_bytes / (med(w) * 1e-6) / 1e9;
    size_t half = dram_bytes / 2 / 16;
    auto c = measure(
        s,
        [&](int i) {
          char* a = buf + (i % 2) * dram_bytes;
          copy_kernel<<<blocks, threads, 0, s>>>((float4*)(a + dram_bytes / 2), (const float4*)a, half);
        },
        10, 30, 20000);
    m["dram_copy_gb_s"] = dram_bytes / (med(c) * 1e-6) / 1e9;  // bytes read + written
    auto d2d = measure(
        s,
        [&](int i) {
          char* a = buf + (i % 2) * dram_bytes;
          cudaMemcpyAsync(a + dram_bytes / 2, a, dram_bytes / 2, cudaMemcpyDeviceToDevice, s);
        },
        10, 30, 20000);
    m["dram_memcpy_d2d_gb_s"] = dram_bytes / (med(d2d) * 1e-6) / 1e9;
  }
  // ---- latency: dependent-load chains in DRAM and in L2; DRAM bandwidth against bytes in flight
  std::string inflight_json;
  std::vector<double> littles;
  {
    // A random cycle through `lines` 128-byte lines spread evenly over the span; returns the word
    // offset of each line in cycle order. Each repetition starts where the last one stopped, so a
    // chain longer than the L2 never re-reads a line the cache still holds.
    auto chain = [&](size_t span_bytes, size_t lines, uint64_t seed) {
      const size_t step = span_bytes / lines / 128 * 32;  // in unsigned words, line aligned
      std::vector<unsigned> order(lines);
      for (size_t i = 0; i < lines; ++i) order[i] = (unsigned)(i * step);
      uint64_t x = seed;
      for (size_t i = lines - 1; i > 0; --i) {  // Fisher-Yates with a splitmix step
        x += 0x9E3779B97F4A7C15ULL;
        uint64_t z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        std::swap(order[i], order[(z ^ (z >> 31)) % (i + 1)]);
      }
      std::vector<unsigned> next(span_bytes / 4, 0);
      for (size_t i = 0; i < lines; ++i) next[order[i]] = order[(i + 1) % lines];
      CUDA_CHECK(cudaMemcpy(buf, next.data(), span_bytes, cudaMemcpyHostToDevice));
      return order;
    };
    const int steps = quick ? 2000 : 4000;
    // DRAM: 1 GiB (within the reach of the TLBs' large pages), 4 KiB between chained lines, so
    // the 128-byte lines touched (32 MiB in all) are never revisited within a run.
    const size_t dspan = std::min<size_t>(dram_bytes, (size_t)1 << 30);
    auto dorder = chain(dspan, dspan / 4096, 5);
    int call = 0;
    auto d = measure(
        s,
        [&](int) {
          const unsigned st = dorder[((size_t)call++ * steps) % dorder.size()];
          chase_kernel<<<1, 1, 0, s>>>((const unsigned*)buf, steps, st, (unsigned*)sink);
        },
        5, 10, 1e6);
    m["dram_latency_ns"] = med(d) * 1e3 / steps;
    // L2: an eighth of it, chained line by line, re-read every repetition.
    const size_t lspan = (l2 / 8) & ~(size_t)0xFFFF;
    auto lorder = chain(lspan, lspan / 128, 9);
    auto l = measure(
        s, [&](int) { chase_kernel<<<1, 1, 0, s>>>((const unsigned*)buf, steps, lorder[0], (unsigned*)sink); }, 5, 10,
        1e6);
    m["l2_latency_ns"] = med(l) * 1e3 / steps;
    std::printf("  latency: DRAM %.0f ns, L2 %.0f ns\n", m["dram_latency_ns"], m["l2_latency_ns"]);
    // Bandwidth against the bytes each SM keeps in flight (threads per SM x bytes per load).
    fill_random(buf, dram_bytes * 2, 0, 13, s);
    for (int vec : {2, 4, 8, 16}) {
      for (int per_sm : {128, 256, 512, 1024, 2048}) {
        if (per_sm > prop.maxThreadsPerMultiProcessor) continue;
        const int th = std::min(per_sm, 256), bl = sms * (per_sm / th);
        const size_t n = dram_bytes / vec;
        auto launch = [&](int i) {
          const char* a = buf + (i % 2) * dram_bytes;
          if (vec == 16)
            read_inflight_kernel<16><<<bl, th, 0, s>>>(a, n, sink);
          else if (vec == 8)
            read_inflight_kernel<8><<<bl, th, 0, s>>>(a, n, sink);
          else if (vec == 4)
            read_inflight_kernel<4><<<bl, th, 0, s>>>(a, n, sink);
          else
            read_inflight_kernel<2><<<bl, th, 0, s>>>(a, n, sink);
        };
        auto r = measure(s, launch, 5, 10, 20000);
        const double gbs = dram_bytes / (med(r) * 1e-6) / 1e9;
        char e[160];
        std::snprintf(e, sizeof e, "%s{\"threads_per_sm\": %d, \"bytes_per_load\": %d, \"gb_s\": %.1f}",
                      inflight_json.empty() ? "" : ", ", per_sm, vec, gbs);
        inflight_json += e;
        std::printf("  read, %4d threads/SM x %2d B in flight: %7.1f GB/s\n", per_sm, vec, gbs);
        // Little's law: bytes in flight / bandwidth is the latency the loads saw; the points
        // far below the peak give the latency that limits a kernel with few loads in flight.
        if (gbs < 0.35 * m["dram_read_gb_s"]) littles.push_back((double)sms * per_sm * vec / (gbs * 1e9) * 1e9);
      }
    }
    if (!littles.empty()) {
      m["dram_latency_littles_law_ns"] = stats_of(littles).median;
      std::printf("  Little's law latency: %.0f ns\n", m["dram_latency_littles_law_ns"]);
    }
  }
  // ---- L2 ----------------------------------------------------------------------------------
  {
    size_t l2_ws = (l2 / 4) & ~(size_t)0xFFF;
    size_t n = l2_ws / 16;
    int passes = quick ? 16 : 64;
    auto r = measure(
        s, [&](int) { l2_read_kernel<<<sms * 4, 512, 0, s>>>((const float4*)buf, n, passes, sink); }, 10, 30, 5000);
    m["l2_gb_s"] = (double)l2_ws * passes / (med(r) * 1e-6) / 1e9;
    m["l2_working_set_bytes"] = (double)l2_ws;
    // The same working set through bulk copies into shared memory, as a Hopper GEMM's tiles travel
    // (`l2_bulk_gb_s`: the model's L2 rate for tensor-core GEMMs), four CTAs of one warp per SM,
    // three 16 KiB chunks in flight each.
    const size_t chunks = l2_ws / kL2BulkChunk;
    const size_t smem = (size_t)kL2BulkStages * kL2BulkChunk;
    CUDA_CHECK(cudaFuncSetAttribute(l2_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    auto rb = measure(
        s, [&](int) { l2_bulk_kernel<<<sms * 4, 32, smem, s>>>(buf, chunks, passes, sink); }, 10, 30, 5000);
    if (rb.ok) {
      m["l2_bulk_gb_s"] = (double)(chunks * kL2BulkChunk) * passes / (med(rb) * 1e-6) / 1e9;
      std::printf("  L2: %.0f GB/s with loads, %.0f GB/s with bulk copies into shared memory\n", m["l2_gb_s"],
                  m["l2_bulk_gb_s"]);
    }
  }
  // ---- shared memory -----------------------------------------------------------------------
  {
    int iters = quick ? 4096 : 16384;
    int th = 1024, bl = sms * 2;
    auto r = measure(
        s, [&](int) { smem_kernel<<<bl, th, 0, s>>>(iters, sink); }, 10, 30, 5000);
    double bytes = (double)bl * th * iters * 16;
    m["smem_gb_s_per_sm"] = bytes / (med(r) * 1e-6) / 1e9 / sms;
  }
  // ---- FP32 FMA, SFU -----------------------------------------------------------------------
  {
    int iters = quick ? 4096 : 16384;
    int th = 256, bl = sms * 16;
    auto r = measure(
        s, [&](int) { fma_kernel<<<bl, th, 0, s>>>(iters, sink, 0.9999f, 0.0001f); }, 10, 30, 5000);
    m["fp32_tflops"] = 2.0 * 8 * iters * (double)bl * th / (med(r) * 1e-6) / 1e12;
    int siters = quick ? 1024 : 4096;
    auto e = measure(
        s, [&](int) { sfu_kernel<0><<<bl, th, 0, s>>>(siters, sink); }, 10, 30, 5000);
    m["sfu_gops"] = 8.0 * siters * (double)bl * th / (med(e) * 1e-6) / 1e9;
    auto sn = measure(
        s, [&](int) { sfu_kernel<1><<<bl, th, 0, s>>>(siters, sink); }, 10, 30, 5000);
    m["sfu_sin_gops"] = 8.0 * siters * (double)bl * th / (med(sn) * 1e-6) / 1e9;
  }
  // ---- warp-level MMA (mma.sync) -------------------------------------------------------------
  // Its peak over 4 to 32 warps per SM (CTAs of 128 threads), and the rate at each, for kernels
  // written for sm80 that run on this GPU (FlashAttention-2 keeps 4 to 8 warps per SM).
  std::map<std::string, double> mma_sync;
  std::string mma_sync_json;
  if (prop.major >= 8) {
    const int iters = quick ? 1024 : 4096;
    const char* names[3] = {"fp16", "bf16", "tf32"};
    for (int kind = 0; kind < 3; ++kind) {
      double best = 0;
      for (int ctas_per_sm : {1, 2, 4, 8, 16}) {
        const int bl = sms * ctas_per_sm;
        auto launch = [&](int) {
          if (kind == 0)
            mma_sync_kernel<0><<<bl, 128, 0, s>>>(iters, sink);
          else if (kind == 1)
            mma_sync_kernel<1><<<bl, 128, 0, s>>>(iters, sink);
          else
            mma_sync_kernel<2><<<bl, 128, 0, s>>>(iters, sink);
        };
        auto r = measure(s, launch, 5, 20, 5000);
        const double tf = kMmaSyncFlopsPerInstr[kind] * kMmaSyncIlp * iters * (double)bl * 4 / (med(r) * 1e-6) / 1e12;
        best = std::max(best, tf);
        char e[160];
        std::snprintf(e, sizeof e, "%s{\"dtype\": \"%s\", \"warps_per_sm\": %d, \"tflops\": %.1f}",
                      mma_sync_json.empty() ? "" : ", ", names[kind], 4 * ctas_per_sm, tf);
        mma_sync_json += e;
        std::printf("  mma.sync %-4s %2d warps/SM: %7.1f TFLOP/s\n", names[kind], 4 * ctas_per_sm, tf);
      }
      if (best > 0) mma_sync[names[kind]] = best;
    }
  }
  // ---- tensor throughput through cuBLASLt ---------------------------------------------------
  {
    cublasLtHandle_t lt;
    CUBLAS_CHECK(cublasLtCreate(&lt));
    size_t ws_bytes = 32u << 20;
    void* ws = nullptr;
    CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
    float* d_one = nullptr;
    CUDA_CHECK(cudaMalloc(&d_one, sizeof(float)));
    float one = 1.f;
    CUDA_CHECK(cudaMemcpy(d_one, &one, sizeof(float), cudaMemcpyHostToDevice));
    const int64_t n = quick ? 4096 : 8192;
    const int cc = prop.major * 10 + prop.minor;
    for (const char* dt : {"fp16", "bf16", "fp8e4m3", "int8", "tf32", "fp32"}) {
      const GemmType& t = *find_gemm_type(dt);
      if (t.fp8 && cc < 89) continue;
      GemmProblem p(lt, t, n, n, n, d_one, ws_bytes);
      if (p.bytes_all() > dram_bytes * 2) continue;
      fill_random(buf, dram_bytes * 2, t.fill_kind, 11, s);
      CUDA_CHECK(cudaStreamSynchronize(s));
      char* A = buf;
      char* W = A + Pool::align(p.bytes_a());
      char* C = W + Pool::align(p.bytes_w());
      auto cfgs = p.heuristic(3);
      // Back to back (`tensor_tflops`, what the model reads): ~25 ms per configuration, three in
      // a row, by when the H200 is at its power limit. Also at burst (`tensor_tflops_burst`):
      // each configuration after the GPU idled (the limit lets go within ~30 ms and takes hold
      // 50-110 ms into a load on the H100 and H200), five launches (~7 ms of bf16 work at 8192^3).
      // One configuration's TFLOP/s over `measure`'s repetitions; NAN where it did not run.
      auto timed_tflops = [&](const auto& g, int min_reps, int max_reps, double target_us, int min_warmup,
                              std::string* names) -> double {
        cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
        auto r = measure(
            s,
            [&](int) {
              cublasStatus_t x = p.run(g, A, W, C, ws, s);
              if (x != CUBLAS_STATUS_SUCCESS) st = x;
            },
            min_reps, max_reps, target_us, min_warmup);
        if (!r.ok || st != CUBLAS_STATUS_SUCCESS) return NAN;
        if (names) *names = r.kernel_names;
        return p.flops() / (r.st.median * 1e-6) / 1e12;
      };
      double best = NAN, best_burst = NAN;
      std::string kname, names;
      for (auto& g : cfgs) {
        CUDA_CHECK(cudaStreamSynchronize(s));
        std::this_thread::sleep_for(std::chrono::milliseconds(quick ? 100 : 500));
        const double tf = timed_tflops(g, 3, 3, 0, 1, nullptr);
        if (std::isfinite(tf)) best_burst = std::max(std::isfinite(best_burst) ? best_burst : 0.0, tf);
      }
      for (auto& g : cfgs) {
        const double tf = timed_tflops(g, 10, 20, 20000, 2, &names);
        if (std::isfinite(tf) && !(best >= tf)) {
          best = tf;
          kname = names;
        }
      }
      std::string key = std::string(dt) == "fp32" ? "fp32_sgemm" : dt;
      if (std::isfinite(best))
        tensor[key] = best;
      else
        notes.push_back(std::string("no cuBLASLt algorithm ran for ") + dt);
      if (std::isfinite(best_burst)) tensor_burst[key] = best_burst;
      std::printf("  gemm %-8s %6.1f T(FL)OP/s back to back, %6.1f at burst  %s\n", dt, best, best_burst,
                  kname.substr(0, 100).c_str());
    }
    cudaFree(ws);
    cudaFree(d_one);
    cublasLtDestroy(lt);
  }
  int clock_load = nv.sm_clock_mhz();
  // ---- launch overhead ----------------------------------------------------------------------
  {
    auto r = measure(
        s, [&](int) { empty_kernel<<<1, 32, 0, s>>>(); }, 50, 200, 1000);
    m["empty_kernel_us"] = med(r);
    const int N = quick ? 2000 : 10000;
    CuptiTimer::instance().drain();
    for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32, 0, s>>>();
    CUDA_CHECK(cudaStreamSynchronize(s));
    double t0 = wall_s();
    for (int i = 0; i < N; ++i) empty_kernel<<<1, 32, 0, s>>>();
    double t1 = wall_s();
    CUDA_CHECK(cudaStreamSynchronize(s));
    double t2 = wall_s();
    m["launch_overhead_us"] = (t1 - t0) / N * 1e6;  // host time to enqueue one launch
    auto recs = CuptiTimer::instance().drain();
    if (recs.size() >= (size_t)N) {
      auto& first = recs[recs.size() - N];
      auto& last = recs.back();
      m["back_to_back_kernel_us"] = (last.end_ns - first.start_ns) * 1e-3 / N;
    }
    (void)t2;
    // one launch and a synchronisation, as a host loop without graphs pays it
    std::vector<double> rt;
    for (int i = 0; i < 200; ++i) {
      double a = wall_s();
      empty_kernel<<<1, 32, 0, s>>>();
      cudaStreamSynchronize(s);
      rt.push_back((wall_s() - a) * 1e6);
    }
    m["launch_sync_roundtrip_us"] = stats_of(rt).median;
    CuptiTimer::instance().drain();
  }
  int clock_after = nv.sm_clock_mhz();
  double elapsed = wall_s() - t_start;

  // ---- JSON ------------------------------------------------------------------------------------
  Json j;
  j.str("schema", "perfloom-calibration/1");
  j.str("gpu_name", json_escape(prop.name));
  j.str("compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor));
  j.str("driver", json_escape(nv.driver()));
  j.str("cuda_runtime", cuda_runtime_string());
  j.str("cublaslt_version", cublaslt_version_string());
  j.num("sm_count", sms);
  j.num("l2_bytes", (double)l2);
  j.num("memory_bytes", (double)prop.totalGlobalMem);
  j.num("clock_mhz_before", clock_before);
  j.num("clock_mhz_under_load", clock_load);
  j.num("clock_mhz_after", clock_after);
  j.num("clock_mhz_max", nv.max_sm_clock_mhz());
  j.num("mem_clock_mhz", nv.mem_clock_mhz());
  j.num("power_limit_w", nv.power_limit_w());
  j.str("date", utc_now());
  j.str("timing", "CUPTI activity records, median of >= 10 repetitions");
  j.num("elapsed_s", elapsed);
  std::ostringstream ms;
  ms << "{";
  bool first = true;
  auto put = [&](const std::string& k, double v) {
    ms << (first ? "" : ",") << "\n    \"" << k << "\": ";
    if (std::isfinite(v))
      ms << v;
    else
      ms << "null";
    first = false;
  };
  for (auto& [k, v] : m) put(k, v);
  // A map of figures by dtype as one object ("tensor_tflops" is written even when empty).
  auto put_object = [&](const std::string& name, const std::map<std::string, double>& by_key) {
    ms << (first ? "" : ",") << "\n    \"" << name << "\": {";
    bool f2 = true;
    for (auto& [k, v] : by_key) {
      ms << (f2 ? "" : ", ") << "\"" << k << "\": " << v;
      f2 = false;
    }
    ms << "}";
    first = false;
  };
  put_object("tensor_tflops", tensor);
  if (!tensor_burst.empty()) put_object("tensor_tflops_burst", tensor_burst);
  if (!mma_sync.empty()) put_object("mma_sync_tflops", mma_sync);
  ms << "\n  }";
  j.raw("measured", ms.str());
  j.raw("dram_read_by_bytes_in_flight", "[" + inflight_json + "]");
  j.raw("mma_sync_by_warps", "[" + mma_sync_json + "]");
  std::string nt = "[";
  for (size_t i = 0; i < notes.size(); ++i) nt += (i ? ", \"" : "\"") + json_escape(notes[i]) + "\"";
  nt += "]";
  j.raw("notes", nt);
  std::ofstream o(out);
  o << "{" << j.s.str() << "\n}\n";
  o.close();

  std::printf("perfloom-calibrate: %s (%d SMs), %.1f s -> %s\n", prop.name, sms, elapsed, out.c_str());
  for (auto& [k, v] : m) std::printf("  %-26s %12.2f\n", k.c_str(), v);
  for (auto& [k, v] : tensor) std::printf("  tensor_tflops.%-12s %12.1f\n", k.c_str(), v);
  for (auto& [k, v] : mma_sync) std::printf("  mma_sync_tflops.%-10s %12.1f\n", k.c_str(), v);
  std::printf("  clock MHz before/load/after: %d / %d / %d\n", clock_before, clock_load, clock_after);
  cudaFree(buf);
  return 0;
}
