// The files a command reads whole, given as something else: a named pipe as `--calibration`, as a
// GPU file of `$PERFLOOM_GPUS_DIR` or as `--workload trace:FILE` ends the command at once with the
// file's name and why (each run is stopped by `timeout` after 20 s, exit 124, should it block), and
// a file over its kind's size is refused with its size.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_process.h"
#include "temp_path.h"

namespace fs = std::filesystem;

namespace {

const std::string kTimeout = "timeout 20";

struct Folder {
  fs::path path;
  explicit Folder(const std::string& name) : path(fresh_temp_path("perfloom-cli-input", name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path fifo_in(const Folder& f, const std::string& name) {
  const fs::path p = f.path / name;
  EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
  return p;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kPipe = ": is a named pipe (FIFO), not a regular file";

}  // namespace

TEST(CliInputFiles, ANamedPipeAsCalibrationIsReportedAndIgnored) {
  Folder f("calibration");
  const fs::path fifo = fifo_in(f, "cal.json");
  const auto r = runPerfloom(
      "gpus h100-sxm --json --calibration " + fifo.string() + " --db " + (f.path / "p.db").string(), kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "calibration not used: " + fifo.string() + kPipe)) << r.err;
}

TEST(CliInputFiles, ANamedPipeInTheGpusFolderIsRefusedByName) {
  Folder f("gpus");
  const fs::path fifo = fifo_in(f, "pipe.json");
  const auto r =
      runPerfloom("gpus --db " + (f.path / "p.db").string(), "PERFLOOM_GPUS_DIR=" + f.path.string() + " " + kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(has(r.err, fifo.string() + kPipe)) << r.err;
}

TEST(CliInputFiles, ANamedPipeAsWorkloadTraceIsRefusedByName) {
  Folder f("trace");
  const fs::path fifo = fifo_in(f, "trace.csv");
  const auto r = runPerfloom("simulate --model llama-3-8b --gpu h100 --workload trace:" + fifo.string() + " --db " +
                                 (f.path / "p.db").string(),
                             kTimeout);
  EXPECT_NE(r.exit_code, 124) << "still reading after 20 s";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "trace " + fifo.string() + kPipe)) << r.err;
}

TEST(CliInputFiles, ANamedPipeOrADeviceAsKernelListIsRefusedByWhatItIs) {
  Folder f("kernels");
  const fs::path fifo = fifo_in(f, "kernels.csv");
  const std::string db = " --db " + (f.path / "p.db").string();
  const auto pipe = runPerfloom("predict --gpu h100 --kernels " + fifo.string() + db, kTimeout);
  EXPECT_NE(pipe.exit_code, 124) << "still reading after 20 s";
  EXPECT_EQ(pipe.exit_code, 1) << pipe.err;
  EXPECT_TRUE(has(pipe.err, fifo.string() + kPipe)) << pipe.err;
  const auto device = runPerfloom("predict --gpu h100 --kernels /dev/zero" + db, kTimeout);
  EXPECT_EQ(device.exit_code, 1) << device.err;
  EXPECT_TRUE(has(device.err, "/dev/zero: is a character device, not a regular file")) << device.err;
}

TEST(CliInputFiles, AnOversizedGpuFileIsRefusedWithItsSize) {
  Folder f("big");
  const fs::path big = f.path / "big.json";
  std::ofstream(big) << "{}";
  fs::resize_file(big, 2u * 1024 * 1024 * 1024);  // 2 GiB, sparse: nothing is written
  const auto r =
      runPerfloom("gpus --db " + (f.path / "p.db").string(), "PERFLOOM_GPUS_DIR=" + f.path.string() + " " + kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(has(r.err, big.string() + ": is 2147483648 bytes; a GPU file may have at most 1048576 bytes (1 MiB)"))
      << r.err;
}
