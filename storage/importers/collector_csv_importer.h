#pragma once
// The project's own collector CSV (tools/collector/FORMAT.md), read by the collector reader
// storage/collector_csv.h: one sweep on one GPU, every row a measured kernel with its shape,
// tile and spread. The `# key=value` environment becomes the source's provenance.
//
// A folder (what tools/collector/run_on_gpu.sh writes, e.g. data/h100-sxm/) is imported as
// ONE source: every collector CSV directly in it (recognised by content, not by name; sub-folders
// are not entered), in file-name order. Other files there (the torch.profiler trace, the
// calibration JSON, logs) are listed in a warning and can be imported on their own. The content
// hash covers only the collector CSVs, so re-importing the folder is recognised even when a log
// next to them changed.
#include "storage/importers/importer.h"

namespace perfloom::storage {

class CollectorCsvImporter final : public Importer {
 public:
  std::string_view format() const override { return "collector-csv"; }
  std::string_view description() const override { return "perfloom collector CSV (format=perfloom-collector/1)"; }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;
  std::vector<std::filesystem::path> content_files(const std::filesystem::path& path) const override;

  // The collector CSVs directly in `dir`, sorted by name; `others` gets the names of the other
  // regular files, `links_out` the symbolic links that lead out of the folder, which are not read
  // (storage/folder_files.h). Throws ImportError naming the folder when it cannot be listed.
  static std::vector<std::filesystem::path> folder_files(const std::filesystem::path& dir,
                                                         std::vector<std::string>* others = nullptr,
                                                         std::vector<std::string>* links_out = nullptr);
};

}  // namespace perfloom::storage
