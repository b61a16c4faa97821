#pragma once
// The public measured-kernel datasets (data/public: aiconfigurator GEMM and attention
// tables, NeuSight operator CSVs, Vidur per-layer profiles), read by storage/public_datasets.h,
// as training data: the whole folder or one of its files. Each measurement keeps its dataset
// ("aiconfigurator/h100_sxm/gemm/vllm-0.14.0") as its method, its GPU and its note; the source
// keeps the manifest rows (repository, commit, licence) as its provenance.
#include "storage/importers/importer.h"

namespace perfloom::storage {

class PublicDatasetImporter final : public Importer {
 public:
  std::string_view format() const override { return "public-dataset"; }
  std::string_view description() const override {
    return "public measured-kernel datasets (aiconfigurator, NeuSight, Vidur; a folder or one CSV)";
  }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;
};

}  // namespace perfloom::storage
