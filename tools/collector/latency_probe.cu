// perfloom-latency-probe: kernels that keep one element per thread in flight, written after the
// design of the 2023 vLLM kernels that Sarathi-Serve (and so Vidur's profiles) ran: RMSNorm and
// SiLU-and-mul with one CTA per token of min(elements, 1024) threads and one scalar load per
// thread and input per iteration, NeoX rotary embedding with one CTA per token of
// min(heads x D / 2, 512) threads, each rotating one pair of one query or key head per iteration,
// and PyTorch's index_select (Vidur's embedding) with 128-thread CTAs, at most 8 per SM, one
// element per thread and iteration. Version 2 measures them at Vidur's shapes: tokens from 1 to
// 16384, the hidden sizes, MLP widths and head layouts of the models (and tensor-parallel shards)
// Vidur profiled (version 1, 37 rows per GPU at 5 token counts, is what data/<gpu-id>/latency_probe.csv
// holds and trains on). They test the Little's-law term of
// perfloom's DRAM pipe (model/analysis.cpp) on kernels whose bytes in flight are known, on the GPU
// at hand, next to the registers and occupancy the compiler gave them.
// Writes a perfloom-collector/1 CSV (sweep=latency_probe; tools/collector/FORMAT.md) that joins the
// training data like the collector's: the RMSNorm and SiLU-and-mul kernels are named vllm2023_*,
// which perfloom classifies as that implementation (model/classify/kernel_classifier.h,
// implementation_class 3); the index_select kernel is what serving engines' embeddings still run.
// Usage: perfloom-latency-probe [--out latency_probe.csv]
#include "common.h"

#include <fstream>

using namespace perfloom;

namespace {

__device__ float block_sum(float v) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < (int)((blockDim.x + 31) >> 5) ? part[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Pointers __restrict__ and the activation's loads through __ldg, as in those kernels (vLLM's
// csrc/layernorm_kernels.cu, activation_kernels.cu and pos_encoding_kernels.cu of 2023): the compiler
// may hoist an iteration's loads above the previous iteration's store. (Version 1 of this probe left
// __restrict__ out; with it nothing changed on our H100: both run SiLU-and-mul at 1.17-1.24x Vidur's
// H100 times above 64 tokens.)
__global__ void vllm2023_rms_norm_kernel(__half* __restrict__ out, const __half* __restrict__ in,
                                         const __half* __restrict__ w, float eps, int H) {
  __shared__ float s_inv;
  const __half* x = in + (size_t)blockIdx.x * H;
  float ss = 0.f;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    const float v = __half2float(x[i]);
    ss += v * v;
  }
  ss = block_sum(ss);
  if (threadIdx.x == 0) s_inv = rsqrtf(ss / H + eps);
  __syncthreads();
  for (int i = threadIdx.x; i < H; i += blockDim.x)
    out[(size_t)blockIdx.x * H + i] =
        __float2half(__half2float(__float2half(__half2float(x[i]) * s_inv)) * __half2float(w[i]));
}

__global__ void vllm2023_silu_and_mul_kernel(__half* __restrict__ out, const __half* __restrict__ in, int d) {
  const size_t t = blockIdx.x;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    const float g = __half2float(__ldg(in + t * 2 * d + i)), u = __half2float(__ldg(in + t * 2 * d + d + i));
    out[t * d + i] = __float2half(g / (1.f + expf(-g)) * u);
  }
}

// One CTA per token; the cos/sin cache row of the token's position is [cos(D/2), sin(D/2)].
__global__ void vllm2023_rotary_embedding_kernel(const int64_t* __restrict__ positions, __half* __restrict__ query,
                                                 __half* __restrict__ key, const __half* __restrict__ cos_sin_cache,
                                                 int D, int Hq, int Hkv) {
  const int t = blockIdx.x, half_d = D / 2;
  const __half* cs = cos_sin_cache + positions[t] * D;
  auto rotate = [&](__half* x, int r) {
    const float c = __half2float(__ldg(cs + r)), sn = __half2float(__ldg(cs + half_d + r));
    const float a = __half2float(x[r]), b = __half2float(x[r + half_d]);
    x[r] = __float2half(a * c - b * sn);
    x[r + half_d] = __float2half(b * c + a * sn);
  };
  for (int i = threadIdx.x; i < Hq * half_d; i += blockDim.x)
    rotate(query + ((size_t)t * Hq + i / half_d) * D, i % half_d);
  for (int i = threadIdx.x; i < Hkv * half_d; i += blockDim.x)
    rotate(key + ((size_t)t * Hkv + i / half_d) * D, i % half_d);
}

__global__ void index_select_kernel(__half* out, const __half* table, const int64_t* ids, int64_t total, int H) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / H, col = i % H;
    out[i] = table[ids[row] * H + col];
  }
}

__global__ void ids_kernel(int64_t* ids, int64_t n, int64_t V) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    ids[i] = (int64_t)((i * 2654435761ull) % (uint64_t)V);
}

template <class K>
int regs_of(K kernel) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  return a.numRegs;
}
template <class K>
int ctas_per_sm(K kernel, int threads) {
  int n = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0));
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "latency_probe.csv";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else {
      std::fprintf(stderr, "usage: perfloom-latency-probe [--out FILE.csv]\n");
      return 2;
    }
  }
  CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  CuptiTimer::instance().start();
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t pool = (size_t)3 << 30;
  char* buf = nullptr;
  CUDA_CHECK(cudaMalloc(&buf, pool));
  fill_random(buf, pool, 1, 3, s);
  int64_t* ids = nullptr;
  CUDA_CHECK(cudaMalloc(&ids, sizeof(int64_t) << 16));
  std::ofstream csv(out);
  csv << "# format=perfloom-collector/1\n# collector_version=latency-probe-2\n# sweep=latency_probe\n";
  for (const auto& l : gpu_env_lines(prop)) csv << "# " << l << '\n';
  csv << "# timing=CUPTI activity (CONCURRENT_KERNEL); per repetition the kernel's device duration; latency_us = median"
      << "\n# operands=two buffer halves of 1.5 GiB used alternately, so that no repetition finds the last one's bytes "
         "in L2\n";
  csv << "op,dtype,T,H,I,V,Hq,Hkv,D,latency_us,min_us,p10_us,p90_us,reps,method,kernel_name,sweep,grid,block,regs,"
         "ctas_per_sm,kernels,source\n";
  // `shape`: the op's columns T,H,I,V,Hq,Hkv,D as they go into the file (empty where the op has none).
  auto row = [&](const char* op, const std::string& shape, int threads, int64_t ctas, int occ, int regs, double bytes,
                 const Measurement& m) {
    const double us = m.ok ? m.st.median : NAN;
    csv << op << ",fp16," << shape << ',' << fmt(us) << ',' << fmt(m.st.min) << ',' << fmt(m.st.p10) << ','
        << fmt(m.st.p90) << ',' << m.st.n << ",cupti," << csv_quote(m.kernel_names) << ",latency_probe," << ctas
        << "x1x1," << threads << "x1x1," << regs << ',' << occ << ",1,perfloom latency_probe.cu\n";
    if (!m.ok) std::fprintf(stderr, "%s %s: %s\n", op, shape.c_str(), m.error.c_str());
    std::printf("%-10s %-26s threads %4d ctas/SM %2d regs %3d: %9.2f us  %7.1f GB/s\n", op, shape.c_str(), threads, occ,
                regs, us, bytes / (us * 1e-6) / 1e9);
  };
  auto cols = [](int64_t T, int64_t H, int64_t I, int64_t V, int64_t Hq, int64_t Hkv, int64_t D) {
    std::string r;
    for (int64_t v : {T, H, I, V, Hq, Hkv, D})
      r += (r.empty() ? "" : ",") + (v > 0 ? std::to_string(v) : std::string());
    return r;
  };
  // Vidur profiles 1..4096 tokens; longer prefills reach 16384.
  const int64_t tokens[] = {1, 4, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384};
  const int rms_regs = regs_of(vllm2023_rms_norm_kernel), silu_regs = regs_of(vllm2023_silu_and_mul_kernel),
            rot_regs = regs_of(vllm2023_rotary_embedding_kernel), sel_regs = regs_of(index_select_kernel);
  // Hidden sizes: phi-2, Llama-2-7B, InternLM-20B, Llama-2-70B / CodeLlama-34B / Qwen-72B.
  for (int64_t H : {2560, 4096, 5120, 8192}) {
    for (int64_t T : tokens) {
      const int th = (int)std::min<int64_t>(H, 1024);
      const size_t x = T * H * 2;
      if (3 * x > pool / 2) continue;
      auto m = measure(
          s,
          [&](int i) {
            char* b = buf + (size_t)(i % 2) * (pool / 2);
            vllm2023_rms_norm_kernel<<<(unsigned)T, th, 0, s>>>((__half*)(b + x), (const __half*)b,
                                                                (const __half*)(b + 2 * x), 1e-6f, (int)H);
          },
          10, 30, 20000);
      row("rmsnorm", cols(T, H, 0, 0, 0, 0, 0), th, T, ctas_per_sm(vllm2023_rms_norm_kernel, th), rms_regs,
          2.0 * x + H * 2, m);
    }
  }
  // MLP widths per tensor-parallel shard: Llama-2-7B 11008 (/2, /4, /8), Llama-2-70B 28672 (/2, /4),
  // Qwen-72B 24576 / 2, InternLM-20B 13824.
  for (int64_t I : {1376, 2752, 5504, 7168, 11008, 12288, 13824, 28672}) {
    for (int64_t T : tokens) {
      const int th = (int)std::min<int64_t>(I, 1024);
      const size_t in = T * 2 * I * 2, o = T * I * 2;
      if (in + o > pool / 2) continue;
      auto m = measure(
          s,
          [&](int i) {
            char* b = buf + (size_t)(i % 2) * (pool / 2);
            vllm2023_silu_and_mul_kernel<<<(unsigned)T, th, 0, s>>>((__half*)(b + in), (const __half*)b, (int)I);
          },
          10, 30, 20000);
      row("silu_mul", cols(T, 0, I, 0, 0, 0, 0), th, T, ctas_per_sm(vllm2023_silu_and_mul_kernel, th), silu_regs,
          (double)(in + o), m);
    }
  }
  // Query and key heads per shard (head dim 128): Llama-2-7B at TP 1 and 8, Llama-2-70B (GQA 8)
  // at TP 1, 4 and 8, InternLM-20B at TP 1, Qwen-72B at TP 1.
  const int64_t kMaxPosition = 1 << 16;
  for (auto heads : {std::pair<int64_t, int64_t>{32, 32}, {4, 4}, {64, 8}, {16, 2}, {8, 1}, {40, 40}, {64, 64}}) {
    const int64_t Hq = heads.first, Hkv = heads.second, D = 128;
    for (int64_t T : tokens) {
      ids_kernel<<<64, 256, 0, s>>>(ids, T, kMaxPosition);
      const size_t q = T * Hq * D * 2, k = T * Hkv * D * 2, cache = kMaxPosition * D * 2;
      if (q + k + cache > pool / 2) continue;
      const int th = (int)std::min<int64_t>(Hq * D / 2, 512);
      auto m = measure(
          s,
          [&](int i) {
            char* b = buf + (size_t)(i % 2) * (pool / 2);
            vllm2023_rotary_embedding_kernel<<<(unsigned)T, th, 0, s>>>(
                ids, (__half*)(b + cache), (__half*)(b + cache + q), (const __half*)b, (int)D, (int)Hq, (int)Hkv);
          },
          10, 30, 20000);
      row("rotary", cols(T, 0, 0, 0, Hq, Hkv, D), th, T, ctas_per_sm(vllm2023_rotary_embedding_kernel, th), rot_regs,
          2.0 * (q + k) + T * D * 2, m);
    }
  }
  const int64_t V = 32000;
  for (int64_t H : {2560, 4096, 5120, 8192}) {
    for (int64_t T : tokens) {
      ids_kernel<<<64, 256, 0, s>>>(ids, T, V);
      const size_t table = V * H * 2, o = T * H * 2;
      if (table + o > pool / 2) continue;
      const int64_t total = T * H;
      const int64_t ctas = std::min<int64_t>((total + 127) / 128, (int64_t)sms * 8);
      auto m = measure(
          s,
          [&](int i) {
            char* b = buf + (size_t)(i % 2) * (pool / 2);
            index_select_kernel<<<(unsigned)ctas, 128, 0, s>>>((__half*)(b + table), (const __half*)b, ids, total,
                                                               (int)H);
          },
          10, 30, 20000);
      row("embedding", cols(T, H, 0, V, 0, 0, 0), 128, ctas, ctas_per_sm(index_select_kernel, 128), sel_regs,
          2.0 * o + T * 8, m);
    }
  }
  csv.close();
  std::printf("perfloom-latency-probe: %s (%d SMs) -> %s\n", prop.name, sms, out.c_str());
  return 0;
}
