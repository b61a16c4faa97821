#pragma once
// Where the bundled resources (trained models, ...) are found at run time.
#include <filesystem>

namespace perfloom {
// $PERFLOOM_RESOURCES if set; else resources/ of the source tree next to a build tree
// (build/bin/perfloom -> resources/); else <prefix>/share/perfloom next to an installed binary.
// No path of the build machine is compiled in: an installed or copied binary looks beside itself.
std::filesystem::path resources_dir();
// The bundled sample trace, resources_dir()/samples/h100-sxm-llama-trace.json.gz (a torch.profiler trace of a
// small Llama-like block on an H100, for trying the explorer without a trace of one's own). The path is returned
// whether or not the file is there, so that a broken install can be reported by where the file belongs.
std::filesystem::path sample_trace_path();
}  // namespace perfloom
