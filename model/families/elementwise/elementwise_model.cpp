// Memory-bound elementwise kernels: SiLU/GELU-and-mul, add, softmax, rotary, embedding lookup,
// KV-cache write and copies. DRAM bytes dominate; SFU work matters for exp-heavy ones.
#include <algorithm>
#include <cmath>

#include "model/classify/kernel_classifier.h"
#include "model/families/family_models.h"

namespace perfloom {

Analysis analyze_elementwise(const KernelDesc& k, const GpuSpec& gpu) {
  const HardwareRates hw = hardware_rates(gpu, k.dtype);
  const Shape& s = k.shape;
  const double b = dtype_bytes(k.dtype);
  const double T = static_cast<double>(s.T);
  PipeDemand d;
  double rows = T, row_elems = 1;
  bool row_per_cta = true;
  double streams = 1;  // inputs each thread loads per element (their loads are in flight together)
  switch (k.op) {
    case Op::silu_mul:
    case Op::gelu_mul: {
      const double out = T * s.I;
      d.dram_bytes = 3.0 * out * b;  // reads gate and up, writes the product
      d.dram_write_bytes = out * b;
      d.sfu_ops = 2.0 * out;  // exp and reciprocal (or tanh/erf pieces)
      d.fma_flops = 8.0 * out;
      row_elems = static_cast<double>(s.I);
      streams = 2;
      break;
    }
    case Op::add: {
      const double n = T * s.H;
      d.dram_bytes = 3.0 * n * b;
      d.dram_write_bytes = n * b;
      d.fma_flops = n;
      row_elems = static_cast<double>(s.H);
      row_per_cta = false;
      streams = 2;
      break;
    }
    case Op::softmax: {
      const double n = T * s.V;
      d.dram_bytes = 2.0 * n * b;
      d.dram_write_bytes = n * b;
      d.l2_bytes = 2.0 * n * b;  // max and sum passes re-read the row, mostly from L2
      d.sfu_ops = n;
      d.fma_flops = 6.0 * n;
      row_elems = static_cast<double>(s.V);
      break;
    }
    case Op::rotary: {
      const double n = T * (s.Hq + s.Hkv) * s.D;
      d.dram_bytes = 2.0 * n * b + T * s.D * 4.0;  // q and k in place; the cos/sin cache in fp32
      d.dram_write_bytes = n * b;
      d.fma_flops = 6.0 * n;
      row_elems = static_cast<double>((s.Hq + s.Hkv) * s.D);
      streams = 2;  // the two halves of each rotated pair
      break;
    }
    case Op::embedding: {
      const double n = T * s.H;
      d.dram_bytes = 2.0 * n * b + T * 8.0;
      d.dram_write_bytes = n * b;
      row_elems = static_cast<double>(s.H);
      break;
    }
    case Op::kv_cache_write: {
      const double n = 2.0 * T * s.Hkv * s.D;  // keys and values
      d.dram_bytes = 2.0 * n * b + T * 8.0;    // read new k/v, write into the paged cache, slot ids
      d.dram_write_bytes = n * b;
      row_elems = static_cast<double>(s.Hkv * s.D);
      streams = 2;
      break;
    }
    case Op::copy: {
      d.dram_bytes = 2.0 * static_cast<double>(s.bytes);
      d.dram_write_bytes = static_cast<double>(s.bytes);
      rows = std::ceil(static_cast<double>(s.bytes) / (b * 4096.0));
      row_elems = 4096;
      row_per_cta = false;
      break;
    }
    default:
      throw UnsupportedKernel("not an elementwise op: " + std::string(op_name(k.op)));
  }
  if (d.l2_bytes == 0)
    d.l2_bytes = d.dram_bytes;
  else
    d.l2_bytes += d.dram_bytes;
  Analysis a;
  a.family = Family::elementwise;
  a.op = k.op;
  a.demand = d;
  a.useful_flops = d.fma_flops;
  // Each thread waits for its loads (Analysis::bytes_in_flight_per_thread): 16-byte vectors, one per
  // input, or four per input unrolled in PyTorch's flat vectorized_elementwise_kernel. Sarathi-
  // Serve's activation, rotary and norm kernels (2023 vLLM) load one element per thread and input,
  // one CTA per token of min(elements, 1024) threads (rotary: min(heads x D / 2, 512)). Every
  // engine's embedding is PyTorch's F.embedding, an index_select: one element per thread, 128
  // threads, 8 CTAs per SM at most.
  const int impl = implementation_class(k.name);
  const bool scalar = (impl == kSarathiImplementation && k.op != Op::add) || k.op == Op::embedding;
  const double vec = scalar ? 1.0 : 16.0 / b;  // elements per access
  int threads;
  double ctas, unroll = 1;
  if (k.op == Op::embedding) {
    threads = 128;
    ctas = std::min(std::ceil(rows * row_elems / threads), 8.0 * hw.sms);
  } else if (row_per_cta) {
    const double cap = scalar && k.op == Op::rotary ? 512.0 : 1024.0;
    const double per_row = scalar && k.op == Op::rotary ? row_elems / 2.0 : row_elems / vec;
    threads = static_cast<int>(std::clamp(std::ceil(per_row / 32.0) * 32.0, 32.0, cap));
    ctas = rows;
  } else {
    threads = 128;  // PyTorch's vectorized_elementwise_kernel: 128 threads, 4 vectors per thread
    unroll = 4;
    ctas = std::ceil(rows * row_elems / (threads * vec * unroll));
  }
  a.bytes_in_flight_per_thread = vec * b * streams * unroll;
  a.plan = plan_uniform_ctas(ctas, occupancy(threads, 32, 0, hw), threads, hw);
  a.schedule_exact = row_per_cta;
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
