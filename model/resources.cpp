#include "model/resources.h"

#include <cstdlib>
#include <system_error>

namespace perfloom {

std::filesystem::path resources_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("PERFLOOM_RESOURCES"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path bin = exe.parent_path();
    for (const fs::path& candidate : {bin / ".." / ".." / "resources", bin / ".." / "share" / "perfloom"})
      if (fs::is_directory(candidate / "models", ec)) return fs::weakly_canonical(candidate, ec);
  }
  // Nothing found: the installed location, so that a message about a missing file names where it belongs.
  return ec ? fs::path("resources") : exe.parent_path() / ".." / "share" / "perfloom";
}

std::filesystem::path sample_trace_path() { return resources_dir() / "samples" / "h100-sxm-llama-trace.json.gz"; }

}  // namespace perfloom
