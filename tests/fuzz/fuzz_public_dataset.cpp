// libFuzzer target: the public dataset importer on single CSV files (aiconfigurator, NeuSight,
// Vidur tables, chosen by their header).
#include "fuzz_common.h"
#include "storage/importers/public_dataset_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  auto path = fuzz::input_file(data, size, ".csv");
  fuzz::CheckingSink sink;
  storage::PublicDatasetImporter importer;
  try {
    importer.import(path, sink, fuzz::control());
  } catch (const storage::ImportError&) {}
  return 0;
}
