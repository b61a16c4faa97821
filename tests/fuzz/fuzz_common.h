#pragma once
// What the fuzz targets share: a sink that checks what importers hand over, and a file in /tmp for
// the importers that read a path. An ImportError is the expected answer to bad input; any other
// exception escaping an importer, a crash or a sanitizer report is a bug.
#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "model/gpu_database.h"
#include "storage/importers/importer.h"

namespace perfloom::fuzz {

inline const GpuDatabase& gpus() {
  static const GpuDatabase db = GpuDatabase::builtin();
  return db;
}

inline storage::ImportControl control() {
  storage::ImportControl c;
  c.gpus = &gpus();
  return c;
}

class CheckingSink : public storage::ImportSink {
 public:
  void kernel(storage::ImportedKernel&& k) override {
    if (k.measurement && !(k.measurement->latency_us >= 0)) __builtin_trap();  // negative or NaN
    if (k.seq < last_seq_ && k.seq < 0) __builtin_trap();
    last_seq_ = k.seq;
    ++kernels_;
  }
  void op(storage::ImportedOp&& o) override {
    if (!(o.dur_us >= 0) || o.depth < 0 || !std::isfinite(o.start_us)) __builtin_trap();  // negative, NaN, inf
    ++ops_;
  }
  void gpu(const std::string&, const std::string&) override {}
  void provenance(const std::string&) override {}
  void warning(const std::string&) override {}

 private:
  int64_t last_seq_ = -1;
  uint64_t kernels_ = 0;
  uint64_t ops_ = 0;
};

// Writes the input to a per-process file (the nsys, collector and dataset importers read paths).
inline std::filesystem::path input_file(const uint8_t* data, size_t size, const char* suffix) {
  struct Owned {  // removed when the fuzzer exits
    std::filesystem::path path;
    ~Owned() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const Owned file{std::filesystem::temp_directory_path() /
                          ("perfloom-fuzz-" + std::to_string(::getpid()) + suffix)};
  const std::filesystem::path& path = file.path;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace perfloom::fuzz
