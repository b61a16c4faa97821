// libFuzzer target: a Hugging Face config.json (model/sim/llm_config.h), as --model PATH reads it,
// then the parameter count every command derives from it.
#include <cmath>
#include <string_view>

#include "model/sim/llm_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perfloom;
  try {
    const sim::LlmConfig cfg =
        sim::parse_llm_config(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
    const sim::ParamCount p = sim::count_parameters(cfg);
    if (!(std::isfinite(p.embedding) && p.embedding >= 0 && std::isfinite(p.attention) && p.attention >= 0))
      __builtin_trap();  // validation let through a config whose size is no number
  } catch (const sim::LlmConfigError&) {}
  return 0;
}
