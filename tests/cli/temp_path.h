#pragma once
// A path in the temporary folder for one test process (`PREFIX-PID-NAME`), removed with its SQLite
// WAL and shared-memory files when the tests end.
#include <unistd.h>
#include <filesystem>
#include <string>
#include <vector>

inline std::filesystem::path fresh_temp_path(const std::string& prefix, const std::string& name) {
  namespace fs = std::filesystem;
  struct Cleanup {
    std::vector<fs::path> paths;
    ~Cleanup() {
      std::error_code ec;
      for (const auto& p : paths)
        for (const char* s : {"", "-wal", "-shm"}) fs::remove(p.string() + s, ec);
    }
  };
  static Cleanup cleanup;
  fs::path p = fs::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + "-" + name);
  std::error_code ec;
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(p.string() + s, ec);
  cleanup.paths.push_back(p);
  return p;
}
