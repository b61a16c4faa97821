#pragma once
// PyTorch profiler (Kineto) Chrome traces, .json or .json.gz: every GPU kernel event (cat
// "kernel") with its launch arguments (grid, block, registers, shared memory), joined to the
// runtime call that launched it (cat "cuda_runtime"/"cuda_driver", by args.correlation) and to the
// framework op behind that call (cat "cpu_op", by "External id", else by time containment on the
// launching thread), so that aten::mm's "Input Dims" / "Input type" give a GEMM its M, N, K and
// dtype through classify_kernel(). Without record_shapes the op name still classifies the kernel.
// The device name comes from "deviceProperties". Streaming: memory stays bounded on any size.
#include <cstdint>
#include <functional>

#include "storage/importers/importer.h"
#include "storage/importers/json_reader.h"

namespace perfloom::storage {

class TorchTraceImporter final : public Importer {
 public:
  std::string_view format() const override { return "torch-trace"; }
  std::string_view description() const override {
    return "PyTorch profiler Chrome trace (torch.profiler export_chrome_trace, .json or .json.gz)";
  }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;

  // The parse itself, from any reader (tests and the fuzz target read from memory).
  // `raw_offset` reports how far into the stored file the reader is, for progress.
  static void import_json(JsonReader& reader, ImportSink& sink, const ImportControl& control,
                          const std::function<uint64_t()>& raw_offset = {}, uint64_t raw_total = 0);
};

}  // namespace perfloom::storage
