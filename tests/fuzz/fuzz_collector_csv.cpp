// libFuzzer target: the collector CSV importer (and the collector reader behind it).
#include "fuzz_common.h"
#include "storage/importers/collector_csv_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  auto path = fuzz::input_file(data, size, ".csv");
  fuzz::CheckingSink sink;
  storage::CollectorCsvImporter importer;
  try {
    importer.import(path, sink, fuzz::control());
  } catch (const storage::ImportError&) {}
  return 0;
}
