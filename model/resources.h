#pragma once
// Where the bundled resources (trained models, ...) are found at run time.
#include <filesystem>

namespace perfloom {
// $PERFLOOM_RESOURCES if set; else resources/ of the source tree next to a build tree
// (build/bin/perfloom -> resources/); else <prefix>/share/perfloom next to an installed binary.
// No path of the build machine is compiled in: an installed or copied binary looks beside itself.
std::filesystem::path resources_dir();
}  // namespace perfloom
