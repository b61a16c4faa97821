// An installed perfloom (`cmake --install` into a fresh prefix) finds everything it ships beside itself
// (models, tuner tables, the sample trace) and nothing of the machine that built it: no source tree,
// no training data.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Installed {
  fs::path prefix;
  fs::path bin;
  std::string error;
};

// One installation per test process, removed when the tests end.
const Installed& installed() {
  static const Installed inst = [] {
    Installed i;
    i.prefix = fs::temp_directory_path() / ("perfloom-install-" + std::to_string(::getpid()));
    fs::remove_all(i.prefix);
    const std::string cmd =
        "cmake --install '" PERFLOOM_BUILD_DIR "' --prefix '" + i.prefix.string() + "' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) i.error = "failed: " + cmd;
    i.bin = i.prefix / "bin" / "perfloom";
    return i;
  }();
  struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(installed().prefix, ec);
    }
  };
  static Cleanup cleanup;
  return inst;
}

// The installed binary, run from a folder outside the source tree, without $PERFLOOM_RESOURCES.
ProcessResult runInstalled(const std::string& args, const fs::path& cwd) {
  const Installed& i = installed();
  fs::create_directories(cwd);
  const std::string db = (cwd / "p.db").string();
  const std::string cmd = "cd '" + cwd.string() + "' && env -u PERFLOOM_RESOURCES -u PERFLOOM_DATA -u DISPLAY '" +
                          i.bin.string() + "' " + args + " --db '" + db + "'";
  const std::string err = (cwd / "err.txt").string();
  ProcessResult r;
  FILE* p = ::popen((cmd + " 2>'" + err + "'").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  return r;
}

}  // namespace

TEST(CliInstalled, TuneReadsTheInstalledTunerTables) {
  ASSERT_TRUE(installed().error.empty()) << installed().error;
  EXPECT_TRUE(fs::is_regular_file(installed().prefix / "share/perfloom/tuner/h200.json.gz"));
  auto r = runInstalled("tune --gemm 4096,4096,4096 --dtype bf16 --gpu h200 --top 3 --json",
                        installed().prefix / "work-tune");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("method"), "wave-table") << r.out;
}

TEST(CliInstalled, PredictUsesTheInstalledModels) {
  ASSERT_TRUE(installed().error.empty()) << installed().error;
  const fs::path cwd = installed().prefix / "work-predict";
  fs::create_directories(cwd);
  std::ofstream(cwd / "k.csv") << "op,dtype,M,N,K\ngemm,bf16,4096,4096,4096\n";
  auto r = runInstalled("predict --kernels k.csv --gpu h100", cwd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",xgboost"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("roofline baseline"), std::string::npos) << r.err;  // no fallback: the models were found
}

TEST(CliInstalled, WithoutItsTunerFolderTuneFallsBackRatherThanReadingTheSourceTree) {
  ASSERT_TRUE(installed().error.empty()) << installed().error;
  // A second installation whose tuner/ folder is gone: the tables are read from the installation only.
  const fs::path copy = installed().prefix / "copy";
  fs::create_directories(copy);
  fs::copy(installed().prefix / "bin", copy / "bin", fs::copy_options::recursive);
  fs::copy(installed().prefix / "share", copy / "share", fs::copy_options::recursive);
  fs::remove_all(copy / "share/perfloom/tuner");
  const std::string cmd = "cd '" + copy.string() + "' && env -u PERFLOOM_RESOURCES ./bin/perfloom tune --gemm " +
                          "4096,4096,4096 --dtype bf16 --gpu h200 --json --db p.db 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ASSERT_EQ(::pclose(p), 0) << out;
  EXPECT_NE(json::parse(out).at("method"), "wave-table") << out;
}

TEST(CliInstalled, TheSampleTraceIsInstalledAndImports) {
  ASSERT_TRUE(installed().error.empty()) << installed().error;
  const fs::path sample = installed().prefix / "share/perfloom/samples/h100-sxm-llama-trace.json.gz";
  ASSERT_TRUE(fs::is_regular_file(sample));
  auto r = runInstalled("import '" + sample.string() + "'", installed().prefix / "work-import");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("torch"), std::string::npos) << r.out;
}

TEST(CliInstalled, TrainWithoutDataSaysWhereToPointIt) {
  ASSERT_TRUE(installed().error.empty()) << installed().error;
  auto r = runInstalled("train", installed().prefix / "work-train");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--data DIR"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("PERFLOOM_DATA"), std::string::npos) << r.err;
}
