#pragma once
// Writes a synthetic torch.profiler (Kineto) Chrome trace of a given size, laid out like a real
// one (data/*/trace.json.gz): deviceProperties, then every cpu_op (with record_shapes'
// "Input Dims" / "Input type"), then the GPU kernels interleaved with their cudaLaunchKernel
// runtime events and flow events. For the import benchmark (bench/bench_import.cpp), the
// kill-in-the-middle test and fuzz seeds. Streams to disk: memory stays small at any size.
#include <cstdint>
#include <filesystem>

namespace perfloom::storage {

struct SyntheticTraceStats {
  uint64_t bytes = 0;  // as written (compressed size for gzip)
  uint64_t kernels = 0;
  uint64_t gemm_kernels = 0;  // launched by aten::mm with M, N, K in Input Dims
  uint64_t cpu_ops = 0;
  uint64_t events = 0;
};

// About `target_bytes` of uncompressed JSON. gzip: compressed with zlib level 1.
// Throws std::runtime_error when the file cannot be written.
SyntheticTraceStats write_synthetic_trace(const std::filesystem::path& path, uint64_t target_bytes, bool gzip = false,
                                          const char* device_name = "NVIDIA H100 80GB HBM3");

}  // namespace perfloom::storage
