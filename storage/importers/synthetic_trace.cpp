#include "storage/importers/synthetic_trace.h"

#include <zlib.h>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfloom::storage {

namespace {

class Out {
 public:
  Out(const std::filesystem::path& path, bool gzip) : gzip_(gzip) {
    if (gzip) {
      gz_ = gzopen(path.c_str(), "wb1");
      if (!gz_) throw std::runtime_error(path.string() + ": cannot be written");
    } else {
      f_ = std::fopen(path.c_str(), "wb");
      if (!f_) throw std::runtime_error(path.string() + ": cannot be written");
    }
    buf_.reserve(kFlush + 65536);
  }
  ~Out() { close(); }
  void close() {
    flush();
    if (gz_) gzclose(gz_), gz_ = nullptr;
    if (f_) std::fclose(f_), f_ = nullptr;
  }
  Out& operator<<(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kFlush) flush();
    return *this;
  }
  Out& operator<<(int64_t v) { return *this << std::string_view(std::to_string(v)); }
  Out& num(double v, int decimals = 3) {
    char b[64];
    int n = std::snprintf(b, sizeof b, "%.*f", decimals, v);
    return *this << std::string_view(b, static_cast<std::size_t>(n));
  }
  uint64_t written() const { return written_ + buf_.size(); }

 private:
  void flush() {
    if (buf_.empty()) return;
    if (gz_) {
      if (gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) <= 0)
        throw std::runtime_error("gzip write failed");
    } else if (f_ && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) {
      throw std::runtime_error("write failed");
    }
    written_ += buf_.size();
    buf_.clear();
  }
  static constexpr std::size_t kFlush = 4 << 20;
  bool gzip_;
  gzFile gz_ = nullptr;
  FILE* f_ = nullptr;
  std::string buf_;
  uint64_t written_ = 0;
};

constexpr const char* kNorm =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, true>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
constexpr const char* kAdd =
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
constexpr const char* kSilu =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::silu_kernel("
    "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
    "BFloat16)#1}>(at::TensorIteratorBase&, at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()"
    "() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl_nocast<at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::"
    "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda("
    "c10::BFloat16)#1} const&)::{lambda(int)#1})";
constexpr const char* kMul =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::"
    "BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::"
    "TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::"
    "binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::"
    "native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> "
    "> >(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::"
    "binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})";
constexpr const char* kAttn =
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0";

struct Op {
  const char* name;
  std::vector<std::vector<int64_t>> dims;
  int n_types;      // tensors typed c10::BFloat16
  int kernel = -1;  // index into the layer's kernels, -1: launches none
  int depth = 0;    // nesting under the previous op at depth - 1
};

struct Kernel {
  const char* name;
  int64_t grid[3], block[3];
  int regs;
  int64_t smem;
  double dur;
};

void write_dims(Out& o, const std::vector<std::vector<int64_t>>& dims) {
  o << "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) o << ", ";
    o << "[";
    for (std::size_t j = 0; j < dims[i].size(); ++j) {
      if (j) o << ", ";
      o << dims[i][j];
    }
    o << "]";
  }
  o << "]";
}

// One decoder layer of a 2B-parameter model at `tokens` tokens: its ops and kernels.
void layer(int64_t tokens, std::vector<Op>& ops, std::vector<Kernel>& kernels) {
  const int64_t H = 2048, I = 5632, B = 2, S = tokens / 2;
  ops = {
      {"aten::rms_norm", {{B, S, H}, {}, {H}, {}}, 2, -1, 0},
      {"aten::_fused_rms_norm", {{B, S, H}, {}, {H}, {}}, 2, 0, 1},
      {"aten::empty", {{}, {}, {}, {}, {}, {}}, 0, -1, 2},
      {"aten::linear", {{B, S, H}, {3 * H, H}, {}}, 2, -1, 0},
      {"aten::t", {{3 * H, H}}, 1, -1, 1},
      {"aten::as_strided", {{3 * H, H}, {}, {}, {}}, 1, -1, 2},
      {"aten::matmul", {{B, S, H}, {H, 3 * H}}, 2, -1, 1},
      {"aten::view", {{B, S, H}, {}}, 1, -1, 2},
      {"aten::mm", {{tokens, H}, {H, 3 * H}}, 2, 1, 2},
      {"aten::_cudnn_attention_forward", {{B, 16, S, 128}, {B, 16, S, 128}, {B, 16, S, 128}, {}, {}}, 3, 2, 0},
      {"aten::linear", {{B, S, H}, {H, H}, {}}, 2, -1, 0},
      {"aten::mm", {{tokens, H}, {H, H}}, 2, 3, 1},
      {"aten::add", {{B, S, H}, {B, S, H}, {}}, 2, 4, 0},
      {"aten::linear", {{B, S, H}, {2 * I, H}, {}}, 2, -1, 0},
      {"aten::mm", {{tokens, H}, {H, 2 * I}}, 2, 5, 1},
      {"aten::silu", {{B, S, I}}, 1, 6, 0},
      {"aten::mul", {{B, S, I}, {B, S, I}}, 2, 7, 0},
      {"aten::linear", {{B, S, I}, {H, I}, {}}, 2, -1, 0},
      {"aten::mm", {{tokens, I}, {I, H}}, 2, 8, 1},
      {"aten::add", {{B, S, H}, {B, S, H}, {}}, 2, 9, 0},
  };
  const int64_t ctas = (tokens + 127) / 128;
  kernels = {
      {kNorm, {tokens, 1, 1}, {32, 4, 1}, 27, 24, 4.8},
      {"nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN", {2, ctas, 1}, {384, 1, 1}, 168, 217356, 11.5},
      {kAttn, {S / 64 + 1, 16, B}, {384, 1, 1}, 168, 166144, 22.1},
      {"nvjet_sm90_tst_128x64_64x8_1x2_h_bz_TNT", {ctas, 2, 1}, {384, 1, 1}, 168, 213248, 6.2},
      {kAdd, {tokens * H / 1024, 1, 1}, {128, 1, 1}, 24, 0, 3.1},
      {"nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN", {2, ctas * 2, 1}, {384, 1, 1}, 168, 224256, 30.9},
      {kSilu, {tokens * I / 512, 1, 1}, {128, 1, 1}, 20, 0, 5.4},
      {kMul, {tokens * I / 512, 1, 1}, {128, 1, 1}, 22, 0, 5.9},
      {"nvjet_sm90_tst_128x64_64x8_1x2_h_bz_TNT", {ctas, 2, 1}, {384, 1, 1}, 168, 213248, 15.7},
      {kAdd, {tokens * H / 1024, 1, 1}, {128, 1, 1}, 24, 0, 3.1},
  };
}

}  // namespace

SyntheticTraceStats write_synthetic_trace(const std::filesystem::path& path, uint64_t target_bytes, bool gzip,
                                          const char* device_name) {
  Out o(path, gzip);
  SyntheticTraceStats stats;
  o << "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": \"" << device_name
    << "\", \"totalGlobalMem\": 85017493504,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n"
       "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
       "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n"
       "    }\n  ],\n  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": [\n";

  // Bytes per layer, as measured: 20 ops and 10 kernels with their runtime and flow events.
  const uint64_t per_layer = 18150;
  const uint64_t layers = std::max<uint64_t>(1, target_bytes / per_layer);
  std::vector<Op> ops;
  std::vector<Kernel> kernels;
  const double t0 = 4424152389260.0;
  bool first = true;
  auto sep = [&] {
    if (!first) o << ",\n";
    first = false;
  };
  // CPU ops first, as Kineto writes them. External ids count from 1; a layer uses 20.
  int64_t ev = 0;
  for (uint64_t l = 0; l < layers; ++l) {
    layer(256 * (1 + static_cast<int64_t>(l % 8)), ops, kernels);
    double ts = t0 + static_cast<double>(l) * 1000.0;
    double parent_ts[4] = {ts, ts, ts, ts};
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      int64_t ext = static_cast<int64_t>(l * 20 + i + 1);
      double start = op.depth == 0 ? ts + static_cast<double>(i) * 45.0 : parent_ts[op.depth - 1] + 2.0 * op.depth;
      parent_ts[op.depth] = start;
      double dur = 40.0 - 8.0 * op.depth;
      sep();
      o << "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" << op.name
        << "\", \"pid\": 776, \"tid\": 776,\n    \"ts\": ";
      o.num(start) << ", \"dur\": ";
      o.num(dur) << ",\n    \"args\": {\n      \"External id\": " << ext
                 << ",\"Record function id\": 0, \"Input type\": [";
      for (std::size_t t = 0; t < op.dims.size(); ++t) {
        if (t) o << ", ";
        o << (static_cast<int>(t) < op.n_types ? "\"c10::BFloat16\"" : "\"\"");
      }
      o << "], \"Input Dims\": ";
      write_dims(o, op.dims);
      o << ", \"Ev Idx\": " << ev++ << "\n    }\n  }";
      ++stats.cpu_ops;
      ++stats.events;
    }
  }
  // GPU kernels, each with its launch and flow events.
  int64_t corr = 1439677;
  for (uint64_t l = 0; l < layers; ++l) {
    layer(256 * (1 + static_cast<int64_t>(l % 8)), ops, kernels);
    double ts = t0 + static_cast<double>(l) * 1000.0 + 5.0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kernel < 0) continue;
      const Kernel& k = kernels[static_cast<std::size_t>(ops[i].kernel)];
      int64_t ext = static_cast<int64_t>(l * 20 + i + 1);
      double launch_ts = ts + static_cast<double>(i) * 45.0 + 10.0;
      double kernel_ts = launch_ts + 300.0;
      sep();
      o << "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" << k.name
        << "\", \"pid\": 0, \"tid\": 7,\n    \"ts\": ";
      o.num(kernel_ts) << ", \"dur\": ";
      o.num(k.dur) << ",\n    \"args\": {\n      \"External id\": " << ext
                   << ",\n      \"queued\": 0, \"device\": 0, \"context\": 1,\n      \"stream\": 7, \"correlation\": "
                   << corr << ",\n      \"registers per thread\": " << int64_t(k.regs)
                   << ",\n      \"shared memory\": " << k.smem
                   << ",\n      \"blocks per SM\": 0.969697,\n      \"warps per SM\": 11.636364,\n      \"grid\": ["
                   << k.grid[0] << ", " << k.grid[1] << ", " << k.grid[2] << "],\n      \"block\": [" << k.block[0]
                   << ", " << k.block[1] << ", " << k.block[2]
                   << "],\n      \"est. achieved occupancy %\": 0\n    }\n  }";
      sep();
      o << "  {\n    \"ph\": \"f\", \"id\": " << corr << ", \"pid\": 0, \"tid\": 7, \"ts\": ";
      o.num(kernel_ts) << ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }";
      sep();
      o << "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 776, \"tid\": "
           "776,"
           "\n    \"ts\": ";
      o.num(launch_ts) << ", \"dur\": 5.120,\n    \"args\": {\n      \"External id\": " << ext
                       << ", \"cbid\": 211, \"correlation\": " << corr << "\n    }\n  }";
      sep();
      o << "  {\n    \"ph\": \"s\", \"id\": " << corr << ", \"pid\": 776, \"tid\": 776, \"ts\": ";
      o.num(launch_ts) << ", \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }";
      ++corr;
      ++stats.kernels;
      if (std::string_view(ops[i].name) == "aten::mm") ++stats.gemm_kernels;
      stats.events += 4;
    }
  }
  o << "\n  ],\n  \"traceName\": \"synthetic\"\n}\n";
  o.close();
  std::error_code ec;
  stats.bytes = std::filesystem::file_size(path, ec);
  return stats;
}

}  // namespace perfloom::storage
