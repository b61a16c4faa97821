#pragma once
// The importer interface (DESIGN.md: one importer class per file format, chosen by sniffing the
// content, never by the extension). An importer streams what it reads to an ImportSink; the
// kernel store (storage/kernel_store.h) is the sink that writes one file in one transaction, so
// an importer never touches the database and a failed import leaves nothing behind.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/classify/kernel_classifier.h"
#include "model/gpu_database.h"
#include "model/input_error.h"
#include "model/kernel.h"

namespace perfloom::storage {

// A file that cannot be imported. what() reads "FILE: WHERE: REASON" (WHERE may be empty), so a
// person sees which file broke, where (line, byte offset, event index, table row) and why.
// The place is InputError's field, named where() here because it is a position, not a key.
class ImportError : public InputError {
 public:
  ImportError(std::string file, std::string where, std::string reason)
      : InputError(std::move(file), std::move(where), std::move(reason), Place::as_given) {}
  const std::string& where() const { return field(); }
};

// The import was stopped through ImportControl::cancel.
class ImportCancelled : public ImportError {
 public:
  explicit ImportCancelled(std::string file) : ImportError(std::move(file), "", "import cancelled") {}
};

// One measurement of a kernel: how long it took and how that was measured.
struct ImportedMeasurement {
  double latency_us = 0;
  std::string method;  // "torch.profiler", "nsys", "ncu", "cupti", "aiconfigurator/...", ...
  int repetitions = 1;
  std::optional<double> p10_us, p90_us;
  std::string gpu_id;         // empty: the source's GPU
  std::string counters_json;  // hardware counters (ncu), a JSON object; empty if none
  std::string note;           // `key=value;...` the shape does not say (datasets, collector)
};

// One kernel as an importer hands it over: what it computes (classified), how it was launched,
// what launched it, and its measurement.
struct ImportedKernel {
  int64_t seq = 0;  // order in the file (0-based), unique within a source
  KernelDesc desc;  // op, dtype, shape, tile, launch, name
  Family family = Family::unknown;
  bool dtype_known = false;        // desc.dtype is a default otherwise
  bool shape_known = false;        // desc.shape holds what the trace said (maybe incomplete)
  std::string library;             // classifier's library ("cublas", "flash-attn", ...), may be empty
  std::string launched_by;         // framework op ("aten::mm") or enclosing NVTX range
  std::optional<double> start_us;  // start on the trace's clock
  std::optional<int64_t> stream;   // the CUDA stream it ran on, where the format says
  std::optional<double> launch_us;  // when its launch call (cudaLaunchKernel...) started, same clock
  std::optional<ImportedMeasurement> measurement;
};

// A framework op of a trace, for the timeline: a torch.profiler cpu_op event, or an NVTX range of
// an nsys export. `depth` is its nesting on its thread (0: outermost), as the importer saw it.
struct ImportedOp {
  int64_t pid = 0, tid = 0;  // process and thread as the file names them
  double start_us = 0;       // on the trace's clock, as the kernels' start_us
  double dur_us = 0;         // >= 0
  std::string name;
  int depth = 0;
};

// Where an importer's results go. Called from the importing thread only.
class ImportSink {
 public:
  virtual ~ImportSink() = default;
  virtual void kernel(ImportedKernel&& k) = 0;
  // A framework op, handed over as it is read (in any order; the store keeps them in the order
  // given). Formats without ops never call it.
  virtual void op(ImportedOp&& o) = 0;
  // The GPU the file was recorded on, as soon as the importer knows it (it may be called again
  // with a better answer; the last call wins). `gpu_id` is empty when the name is unknown.
  virtual void gpu(const std::string& gpu_id, const std::string& gpu_name) = 0;
  // Where the data comes from (dataset, licence, collector environment), free text or JSON.
  virtual void provenance(const std::string& text) = 0;
  // Something the user should know that did not stop the import (skipped rows, unknown GPU).
  virtual void warning(const std::string& text) = 0;
};

struct ImportProgress {
  uint64_t bytes_done = 0;  // of the file as stored (compressed bytes for .gz)
  uint64_t bytes_total = 0;
  uint64_t kernels = 0;
  std::string stage;  // "reading events", "resolving launches", ...
};

struct ImportControl {
  const GpuDatabase* gpus = nullptr;                    // required
  std::function<void(const ImportProgress&)> progress;  // optional, called every few MB
  const std::atomic<bool>* cancel = nullptr;            // optional; set -> ImportCancelled
  // Memory the torch trace importer may hold for framework ops before it spills them to a
  // temporary on-disk SQLite file (bounded memory on multi-GB traces).
  std::size_t op_memory_bytes = std::size_t(192) << 20;

  void check_cancel(const std::string& file) const {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw ImportCancelled(file);
  }
};

// What the registry shows an importer to decide: the first bytes of the content (decompressed
// when the file is gzip), or, for a folder, its name and the files in it.
struct SniffInput {
  std::filesystem::path path;
  bool is_directory = false;
  bool gzip = false;
  uint64_t file_bytes = 0;
  std::string head;  // up to kSniffBytes of content
  static constexpr std::size_t kSniffBytes = 64 * 1024;
};

class Importer {
 public:
  virtual ~Importer() = default;
  // Short, stable format name stored with the source: "torch-trace", "nsys-sqlite", "ncu-csv",
  // "collector-csv", "public-dataset".
  virtual std::string_view format() const = 0;
  virtual std::string_view description() const = 0;
  // 0 = not this format; 100 = certainly this format.
  virtual int sniff(const SniffInput& in) const = 0;
  // Streams the file's kernels to `sink`. Throws ImportError (with file, place and reason) on
  // input it cannot read; ImportCancelled when control.cancel is set.
  virtual void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const = 0;
  // The files whose content makes the source, for the content hash that recognises a re-import.
  // Empty (the default): the file itself, or every file under a folder. An importer that reads
  // only some files of a folder names them, so that unrelated files there do not change the hash.
  virtual std::vector<std::filesystem::path> content_files(const std::filesystem::path& path) const {
    (void)path;
    return {};
  }
};

// Text stored in the database must be UTF-8 (views and --json output rely on it); CSV files can
// hold anything. is_valid_utf8 is cheap on ASCII; to_valid_utf8 replaces bad bytes with U+FFFD.
bool is_valid_utf8(std::string_view s);
std::string to_valid_utf8(std::string_view s);

// Fills an ImportedKernel's classification from the classifier's answer for `in`.
ImportedKernel classified_kernel(const ClassifyInput& in);
// From a measured dataset kernel (its KernelDesc is already complete).
ImportedKernel dataset_kernel(const KernelDesc& desc);

}  // namespace perfloom::storage
