// libFuzzer target: the Nsight Compute CSV importer (raw and details pages).
#include "fuzz_common.h"
#include "storage/importers/ncu_csv_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  fuzz::CheckingSink sink;
  auto c = fuzz::control();
  try {
    storage::NcuCsvImporter::import_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv", sink, c);
  } catch (const storage::ImportError&) {}
  return 0;
}
