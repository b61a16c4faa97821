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
#ifdef PERFLOOM_SOURCE_RESOURCES
  return PERFLOOM_SOURCE_RESOURCES;
#else
  return "resources";
#endif
}

}  // namespace perfloom
