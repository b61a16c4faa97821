#pragma once
// Nsight Systems SQLite exports (`nsys export --type sqlite`): CUPTI_ACTIVITY_KIND_KERNEL with its
// names from StringIds (demangledName, else shortName), grid, block, registers and shared memory;
// the GPU name from TARGET_INFO_GPU (through TARGET_INFO_CUDA_DEVICE when present); and, through
// the launching runtime call (CUPTI_ACTIVITY_KIND_RUNTIME, by correlationId), the innermost
// NVTX_EVENTS range open on that thread, kept as launched_by. A range written by
// torch.autograd.profiler.emit_nvtx ("aten::mm, seq = 3, sizes = [[512, 2048], [2048, 3072]]")
// also gives the classifier the op and its input sizes.
//
// The file is opened read-only and immutable, with SQLite's defensive settings: an export is
// someone else's file and may be corrupt or hostile.
#include "storage/importers/importer.h"

namespace perfloom::storage {

class NsysSqliteImporter final : public Importer {
 public:
  std::string_view format() const override { return "nsys-sqlite"; }
  std::string_view description() const override { return "Nsight Systems SQLite export (nsys export --type sqlite)"; }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;
};

// "aten::mm, seq = 3, op_id = 7, sizes = [[512, 2048], [2048, 3072]]" -> op "aten::mm" and the
// sizes; false when the text is not such a range name.
bool parse_emit_nvtx_range(std::string_view text, std::string& op, std::vector<std::vector<int64_t>>& sizes);

}  // namespace perfloom::storage
