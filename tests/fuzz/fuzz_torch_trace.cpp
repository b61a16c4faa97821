// libFuzzer target: the streaming JSON reader and the torch.profiler trace parser.
#include "fuzz_common.h"
#include "storage/importers/json_reader.h"
#include "storage/importers/torch_trace_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  storage::JsonLimits limits;
  limits.max_string_bytes = 1 << 20;
  auto reader = storage::JsonReader::from_memory(std::string_view(reinterpret_cast<const char*>(data), size),
                                                 "fuzz.json", limits);
  fuzz::CheckingSink sink;
  auto c = fuzz::control();
  c.op_memory_bytes = size % 3 == 0 ? 256 : (std::size_t(64) << 20);  // sometimes spill the op table
  try {
    storage::TorchTraceImporter::import_json(reader, sink, c);
  } catch (const storage::ImportError&) {}
  return 0;
}
