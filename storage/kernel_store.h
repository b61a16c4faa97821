#pragma once
// The repository of imported kernels: sources (one per imported file or folder), their kernels
// and measurements, and the predictions cached for them (DESIGN.md: "predictions cached in
// SQLite", so re-opening a trace costs nothing).
//
// An import is one transaction: the source row, every kernel and measurement and the trace's
// framework ops (cpu_ops, for the timeline), or nothing. The parse fills a private staging
// database first, so the transaction, and the write lock it holds, lasts only the copy. A file
// whose content (SHA-256 of what the importer reads: inflated where it is gzip, so a trace and
// its .gz are one source) is already in the database is refused before it is parsed.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/kernel.h"
#include "storage/database.h"
#include "storage/importers/importer.h"
#include "storage/importers/registry.h"

namespace perfloom::storage {

struct SourceRecord {
  int64_t id = 0;
  std::string path, format, content_hash, gpu_id, gpu_name, imported_at, provenance;
  int64_t bytes = 0;
  int64_t kernel_count = 0;
};

struct StoredMeasurement {
  int64_t id = 0;
  double latency_us = 0;
  std::string method;
  int repetitions = 1;
  std::optional<double> p10_us, p90_us;
  std::string gpu_id;         // empty: the source's GPU
  std::string counters_json;  // empty when none
  std::string note;
};

struct StoredKernel {
  int64_t id = 0;
  int64_t source_id = 0;
  int64_t seq = 0;
  KernelDesc desc;  // op, dtype, shape, tile, launch, name as imported
  Family family = Family::unknown;
  bool dtype_known = false;
  bool shape_known = false;
  std::string library, launched_by;
  std::optional<double> start_us;
  std::optional<int64_t> stream;     // NULL where the format has none
  std::optional<double> launch_us;  // the launch call's start, where the trace records it
  std::vector<StoredMeasurement> measurements;
};

struct CachedPrediction {
  int64_t kernel_id = 0;
  double pred_us = 0;
  std::optional<double> lo_us, hi_us, ceiling_us;
  std::string bound;
};

struct ImportSummary {
  int64_t source_id = 0;
  std::string path, format, gpu_id, gpu_name, content_hash;
  uint64_t kernels = 0;
  uint64_t ops = 0;  // framework ops recorded for the timeline (cpu_ops)
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<std::string> warnings;
};

// The file's content is in the database already.
class AlreadyImported : public ImportError {
 public:
  AlreadyImported(const std::string& file, int64_t source_id, const std::string& imported_at,
                  const std::string& as_path);
  int64_t source_id() const { return source_id_; }

 private:
  int64_t source_id_;
};

class KernelStore {
 public:
  explicit KernelStore(Database& db) : db_(db) {}

  // Detects the format by content, refuses content already imported (AlreadyImported), and
  // writes the source with all its kernels in one transaction. Throws ImportError (bad input,
  // with file, place and reason) or ImportCancelled; the database is then unchanged.
  ImportSummary import_file(const std::filesystem::path& path, const ImportControl& control,
                            const ImporterRegistry& registry = ImporterRegistry::builtin());
  // The source that holds `path`'s content: imported now, or the one that holds it already (as
  // `predict --trace`, `compare` and `export-chart whatif --trace` take a file). On a read-only
  // database that does not hold it: std::runtime_error naming the database and the file.
  struct FoundSource {
    int64_t source_id = 0;
    bool imported = false;  // imported by this call
  };
  FoundSource import_or_find(const std::filesystem::path& path, const ImportControl& control);
  // The same with a chosen importer.
  ImportSummary import_with(const Importer& importer, const std::filesystem::path& path, const ImportControl& control);

  std::vector<SourceRecord> sources() const;
  std::optional<SourceRecord> source(int64_t id) const;
  std::optional<SourceRecord> source_by_hash(const std::string& content_hash) const;
  // Deletes a source with its kernels, measurements and predictions.
  void remove_source(int64_t id);

  // The kernels of a source in file order, each with its measurements.
  std::vector<StoredKernel> kernels(int64_t source_id) const;
  void visit_kernels(int64_t source_id, const std::function<void(StoredKernel&&)>& visit) const;

  // Predictions of a source's kernels on one GPU by one model version: replaces what was cached
  // for those kernels, in one transaction.
  void put_predictions(int64_t source_id, const std::string& gpu_id, const std::string& model_version,
                       const std::vector<CachedPrediction>& predictions);
  // Empty when nothing is cached for (source, GPU, model version).
  std::vector<CachedPrediction> predictions(int64_t source_id, const std::string& gpu_id,
                                            const std::string& model_version) const;
  bool has_predictions(int64_t source_id, const std::string& gpu_id, const std::string& model_version) const;

  Database& database() const { return db_; }

 private:
  Database& db_;
};

// The text forms stored in the kernels table (and read back by the views).
std::string shape_to_json(const Shape& s);
Shape shape_from_json(const std::string& json);
std::string tile_to_json(const TileConfig& t);
std::optional<TileConfig> tile_from_json(const std::string& json);

}  // namespace perfloom::storage
