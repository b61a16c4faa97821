// Speed of batch prediction: a synthetic 100,000-kernel trace (LLM-shaped GEMMs, attention, norms,
// elementwise) predicted on 20 GPUs with the learned models (goal: >= 200,000 kernels/s and the
// whole 100k x 20 in under 2 s on a 2-core machine). Usage: perfloom-bench-predict [KERNELS] [GPUS]
//
// perfloom-bench-predict --trace [MB] [GPUS]: the trace what-if end to end (storage/trace_whatif.h,
// what `perfloom predict --trace` runs): a synthetic torch.profiler trace of about MB megabytes
// (default 175, ~100k kernels) is written and imported into a fresh database (timed apart), then
// predicted on GPUS GPUs (default 20): without the cache, with the cache written (first open) and
// read back (re-open).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/resources.h"
#include "storage/database.h"
#include "storage/importers/synthetic_trace.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"

using namespace perfloom;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int bench_trace(std::size_t mb, std::size_t n_gpus) {
  namespace fs = std::filesystem;
  const GpuDatabase gpus = GpuDatabase::builtin();
  auto predictor = LearnedPredictor::load(resources_dir() / "models");
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = "perfloom-bench-whatif-" + std::to_string(::getpid());
  const fs::path trace = dir / (tag + ".json"), db_path = dir / (tag + ".db");
  auto t0 = std::chrono::steady_clock::now();
  const auto stats = storage::write_synthetic_trace(trace, static_cast<uint64_t>(mb) << 20);
  const double write_s = since(t0);
  int rc = 0;
  {
    storage::Database db(db_path);
    storage::KernelStore store(db);
    storage::ImportControl control;
    control.gpus = &gpus;
    t0 = std::chrono::steady_clock::now();
    const auto summary = store.import_file(trace, control);
    const double import_s = since(t0);
    const GpuSpec& source = gpus.get(summary.gpu_id.empty() ? "h100-sxm" : summary.gpu_id);
    std::vector<const GpuSpec*> targets;
    for (const auto& g : gpus.all())
      if (targets.size() < n_gpus && g.supports(Dtype::bf16) && g.id != source.id) targets.push_back(&g);
    std::printf(
        "synthetic trace: %.0f MB, %llu kernels on %s (written in %.2f s, imported in %.2f s); %zu target GPUs\n",
        static_cast<double>(stats.bytes) / 1048576.0, static_cast<unsigned long long>(summary.kernels),
        source.id.c_str(), write_s, import_s, targets.size());
    auto run = [&](const char* what, bool cache) {
      storage::WhatIfOptions o;
      o.use_cache = cache;
      const auto t = std::chrono::steady_clock::now();
      const auto r = storage::run_trace_whatif(store, summary.source_id, source, targets, *predictor, o);
      const double secs = since(t);
      double total = 0;
      std::size_t predicted = r.source_predicted_kernels, cached = 0, errors = 0;
      for (const auto& tg : r.targets) {
        total += tg.total.pred_us;
        predicted += tg.predicted_kernels;
        cached += tg.from_cache;
        errors += tg.total.errors;
      }
      std::printf(
          "  %-38s %6.2f s  (%zu kernels x %zu GPUs; model predictions made %zu, GPUs from cache %zu, "
          "errors %zu, checksum %.6g us)\n",
          what, secs, r.kernels.size(), r.targets.size(), predicted, cached, errors, total);
      return total;
    };
    const double a = run("predict, no cache:", false);
    const double b = run("first open (predict + write cache):", true);
    const double c = run("re-open (read cache):", true);
    if (a != b || b != c) {
      std::printf("MISMATCH between the runs\n");
      rc = 1;
    }
  }
  std::error_code ec;
  fs::remove(trace, ec);
  for (const char* sfx : {"", "-wal", "-shm"}) fs::remove(db_path.string() + sfx, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--trace")
    return bench_trace(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 175,
                       argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 20);
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  const std::size_t n_gpus = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 20;
  const GpuDatabase gpus = GpuDatabase::builtin();
  auto t_load = std::chrono::steady_clock::now();
  auto predictor = LearnedPredictor::load(resources_dir() / "models");
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  std::mt19937 rng(42);
  auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + rng() % v.size()); };
  std::vector<KernelDesc> kernels;
  kernels.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    KernelDesc k;
    k.dtype = Dtype::bf16;
    const int64_t tokens = pick({1, 8, 32, 128, 512, 2048, 8192});
    switch (i % 6) {
      case 0:
      case 1:
        k.op = Op::gemm;
        k.shape.M = tokens;
        k.shape.N = pick({4096, 6144, 14336 * 2, 128256});
        k.shape.K = pick({4096, 14336});
        break;
      case 2:
        k.op = tokens > 32 ? Op::attn_prefill : Op::attn_decode;
        k.shape.B = tokens > 32 ? 1 : tokens;
        k.shape.S = tokens;
        k.shape.L = pick({512, 2048, 8192});
        k.shape.Hq = 32;
        k.shape.Hkv = 8;
        k.shape.D = 128;
        break;
      case 3:
        k.op = Op::fused_add_rmsnorm;
        k.shape.T = tokens;
        k.shape.H = 4096;
        break;
      case 4:
        k.op = Op::silu_mul;
        k.shape.T = tokens;
        k.shape.I = 14336;
        break;
      default:
        k.op = Op::rotary;
        k.shape.T = tokens;
        k.shape.Hq = 32;
        k.shape.Hkv = 8;
        k.shape.D = 128;
    }
    kernels.push_back(k);
  }
  std::vector<const GpuSpec*> targets;
  for (const auto& g : gpus.all())
    if (targets.size() < n_gpus && g.supports(Dtype::bf16)) targets.push_back(&g);
  const auto t0 = std::chrono::steady_clock::now();
  double total_us = 0;
  std::size_t errors = 0;
  for (const GpuSpec* g : targets) {
    std::vector<std::string> errs;
    auto preds = predictor->predict_batch(kernels, *g, &errs);
    for (std::size_t i = 0; i < preds.size(); ++i) {
      if (errs[i].empty())
        total_us += preds[i].pred_us;
      else
        ++errors;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double predictions = static_cast<double>(n * targets.size());
  std::printf(
      "%zu kernels x %zu GPUs = %.0f predictions in %.2f s: %.0f kernels/s (model load %.2f s, %zu errors, "
      "checksum %.3g us)\n",
      n, targets.size(), predictions, secs, predictions / secs, load_s, errors, total_us);
  return 0;
}
