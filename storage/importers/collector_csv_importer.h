#pragma once
// The project's own collector CSV (bench/collector/FORMAT.md), read by the collector reader
// storage/collector_csv.h: one sweep on one GPU, every row a measured kernel with its shape,
// tile and spread. The `# key=value` environment becomes the source's provenance.
#include "storage/importers/importer.h"

namespace perfloom::storage {

class CollectorCsvImporter final : public Importer {
 public:
  std::string_view format() const override { return "collector-csv"; }
  std::string_view description() const override { return "perfloom collector CSV (format=perfloom-collector/1)"; }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;
};

}  // namespace perfloom::storage
