#pragma once
// The importers perfloom knows, and the choice among them by content (DESIGN.md): gzip magic,
// the first JSON keys, the SQLite header and table names, the CSV header. The file name's
// extension is never consulted.
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "storage/importers/importer.h"

namespace perfloom::storage {

class ImporterRegistry {
 public:
  // torch.profiler trace, Nsight Systems SQLite export, Nsight Compute CSV, collector CSV,
  // public datasets.
  static const ImporterRegistry& builtin();

  void add(std::unique_ptr<Importer> importer);
  const std::vector<std::unique_ptr<Importer>>& importers() const { return importers_; }
  const Importer* find(std::string_view format) const;

  // The importer whose sniff() is most confident about `path`. Throws ImportError naming the
  // file and what its content looks like when none recognises it.
  const Importer& detect(const std::filesystem::path& path) const;
  const Importer* detect(const SniffInput& in) const;  // nullptr when none

  // What sniff() sees of a path. Throws ImportError when it does not exist.
  static SniffInput sniff_input(const std::filesystem::path& path);
  // A few words on what unrecognised content looks like ("binary data", "JSON without
  // traceEvents", "text starting with ...").
  static std::string describe_content(const SniffInput& in);

 private:
  std::vector<std::unique_ptr<Importer>> importers_;
};

}  // namespace perfloom::storage
