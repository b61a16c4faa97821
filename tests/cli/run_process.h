#pragma once
// Runs the real perfloom binary and captures its output, as a script would.
#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

struct ProcessResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline ProcessResult runPerfloom(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const std::string errFile =
      "/tmp/perfloom-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".err";
  const std::string cmd = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM " + env + " " +
                          std::string(PERFLOOM_BIN) + " " + args + " 2>" + errFile;
  ProcessResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* e = std::fopen(errFile.c_str(), "r")) {
    while ((n = std::fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
    std::fclose(e);
  }
  std::remove(errFile.c_str());
  return r;
}
