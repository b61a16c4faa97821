// perfloom-bench-import: how fast a large torch.profiler trace imports, and in how much memory.
//
// Writes a synthetic Kineto trace of N MB (storage/importers/synthetic_trace.h; default 2000 MB)
// into a folder (default /tmp), imports it into a fresh database there with the kernel store
// (hash, streaming parse and classification into a staging database, then one transaction that copies
// it in), and reports MB/s, how long the write lock is held, and the peak RSS of
// the process (getrusage). Goal (issue 4): 100 MB/s or better on a 2-core machine, memory
// bounded whatever the size. Not part of ctest.
//
//   perfloom-bench-import [--mb N] [--gzip] [--dir DIR] [--keep]
#include <sys/resource.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/importers/synthetic_trace.h"
#include "storage/kernel_store.h"

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

double current_rss_mb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mb = 2000;
  bool gzip = false, keep = false;
  std::filesystem::path dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc) {
      mb = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--gzip") {
      gzip = true;
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::cerr << "usage: perfloom-bench-import [--mb N] [--gzip] [--dir DIR] [--keep]\n"
                   "  writes a synthetic torch.profiler trace of N MB (default 2000) and imports it\n";
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  const std::string tag = std::to_string(::getpid());
  const auto trace = dir / ("perfloom-bench-trace-" + tag + (gzip ? ".json.gz" : ".json"));
  const auto db_path = dir / ("perfloom-bench-" + tag + ".db");
  using clock = std::chrono::steady_clock;

  auto t0 = clock::now();
  const auto stats = perfloom::storage::write_synthetic_trace(trace, mb * 1000 * 1000, gzip);
  double gen_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("trace: %s, %.1f MB on disk, %llu events, %llu kernels (%llu GEMMs), written in %.1f s\n", trace.c_str(),
              static_cast<double>(stats.bytes) / 1e6, static_cast<unsigned long long>(stats.events),
              static_cast<unsigned long long>(stats.kernels), static_cast<unsigned long long>(stats.gemm_kernels),
              gen_s);
  const double rss_before = current_rss_mb();

  int status = 0;
  try {
    perfloom::storage::Database db(db_path);
    perfloom::storage::KernelStore store(db);
    const auto gpus = perfloom::GpuDatabase::builtin();
    perfloom::storage::ImportControl control;
    control.gpus = &gpus;
    double hash_s = 0, commit_at_s = 0;
    auto t_import = clock::now();
    control.progress = [&](const perfloom::storage::ImportProgress& p) {
      const double at = std::chrono::duration<double>(clock::now() - t_import).count();
      if (p.stage == "importing" && hash_s == 0) hash_s = at;
      if (p.stage == "committing" && commit_at_s == 0) commit_at_s = at;
    };
    auto sum = store.import_file(trace, control);
    double s = std::chrono::duration<double>(clock::now() - t_import).count();
    double file_mb = static_cast<double>(stats.bytes) / 1e6;
    std::printf("import: %llu kernels, GPU %s, %.2f s (SHA-256 %.2f s): %.1f MB/s of file, %.0f kernels/s\n",
                static_cast<unsigned long long>(sum.kernels), sum.gpu_id.c_str(), s, hash_s, file_mb / s,
                static_cast<double>(sum.kernels) / s);
    if (gzip) {
      double json_mb = static_cast<double>(mb);
      std::printf("        %.1f MB/s of uncompressed JSON\n", json_mb / s);
    }
    // The parse fills a staging database; only the copy into the database holds its write lock.
    std::printf("write lock: held %.2f s, for the copy of the parsed rows (%.0f%% of the import)\n", s - commit_at_s,
                100.0 * (s - commit_at_s) / s);
    std::printf("memory: peak RSS %.1f MB (%.1f MB before the import)\n", peak_rss_mb(), rss_before);
    if (sum.kernels != stats.kernels) {
      std::printf("MISMATCH: %llu kernels written, %llu imported\n", static_cast<unsigned long long>(stats.kernels),
                  static_cast<unsigned long long>(sum.kernels));
      status = 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfloom-bench-import: %s\n", e.what());
    status = 1;
  }
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove(trace, ec);
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path.string() + suffix, ec);
  }
  return status;
}
