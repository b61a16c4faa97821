// libFuzzer target: the Nsight Systems SQLite importer on mutated database files.
#include "fuzz_common.h"
#include "storage/importers/nsys_sqlite_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  auto path = fuzz::input_file(data, size, ".sqlite");
  fuzz::CheckingSink sink;
  storage::NsysSqliteImporter importer;
  try {
    importer.import(path, sink, fuzz::control());
  } catch (const storage::ImportError&) {}
  return 0;
}
