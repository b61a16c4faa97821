// Memory-bound elementwise kernels: SiLU/GELU-and-mul, add, softmax, rotary, embedding lookup,
// KV-cache write and copies. DRAM bytes dominate; SFU work matters for exp-heavy ones.
#include <algorithm>
#include <cmath>

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
  switch (k.op) {
    case Op::silu_mul:
    case Op::gelu_mul: {
      const double out = T * s.I;
      d.dram_bytes = 3.0 * out * b;  // reads gate and up, writes the product
      d.sfu_ops = 2.0 * out;         // exp and reciprocal (or tanh/erf pieces)
      d.fma_flops = 8.0 * out;
      row_elems = static_cast<double>(s.I);
      break;
    }
    case Op::add: {
      const double n = T * s.H;
      d.dram_bytes = 3.0 * n * b;
      d.fma_flops = n;
      row_elems = static_cast<double>(s.H);
      row_per_cta = false;
      break;
    }
    case Op::softmax: {
      const double n = T * s.V;
      d.dram_bytes = 2.0 * n * b;
      d.l2_bytes = 2.0 * n * b;  // max and sum passes re-read the row, mostly from L2
      d.sfu_ops = n;
      d.fma_flops = 6.0 * n;
      row_elems = static_cast<double>(s.V);
      break;
    }
    case Op::rotary: {
      const double n = T * (s.Hq + s.Hkv) * s.D;
      d.dram_bytes = 2.0 * n * b + T * s.D * 4.0;  // q and k in place; the cos/sin cache in fp32
      d.fma_flops = 6.0 * n;
      row_elems = static_cast<double>((s.Hq + s.Hkv) * s.D);
      break;
    }
    case Op::embedding: {
      const double n = T * s.H;
      d.dram_bytes = 2.0 * n * b + T * 8.0;
      row_elems = static_cast<double>(s.H);
      break;
    }
    case Op::kv_cache_write: {
      const double n = 2.0 * T * s.Hkv * s.D;  // keys and values
      d.dram_bytes = 2.0 * n * b + T * 8.0;    // read new k/v, write into the paged cache, slot ids
      row_elems = static_cast<double>(s.Hkv * s.D);
      break;
    }
    case Op::copy: {
      d.dram_bytes = 2.0 * static_cast<double>(s.bytes);
      rows = std::ceil(static_cast<double>(s.bytes) / (b * 4096.0));
      row_elems = 4096;
      row_per_cta = false;
      break;
    }
    default: throw UnsupportedKernel("not an elementwise op: " + std::string(op_name(k.op)));
  }
  if (d.l2_bytes == 0) d.l2_bytes = d.dram_bytes;
  else d.l2_bytes += d.dram_bytes;
  Analysis a;
  a.family = Family::elementwise;
  a.op = k.op;
  a.demand = d;
  a.useful_flops = d.fma_flops;
  const double vec = 16.0 / b;  // elements per 16-byte access
  int threads;
  double ctas;
  if (row_per_cta) {
    threads = static_cast<int>(std::clamp(std::ceil(row_elems / vec / 32.0) * 32.0, 32.0, 1024.0));
    ctas = rows;
  } else {
    threads = 128;  // PyTorch's vectorized_elementwise_kernel: 128 threads, 4 vectors per thread
    ctas = std::ceil(rows * row_elems / (threads * vec * 4.0));
  }
  a.plan = plan_uniform_ctas(ctas, occupancy(threads, 32, 0, hw), threads, hw);
  a.schedule_exact = row_per_cta;
  finish_analysis(a, hw);
  return a;
}

}  // namespace perfloom
