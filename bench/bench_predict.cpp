// Speed of batch prediction: a synthetic 100,000-kernel trace (LLM-shaped GEMMs, attention, norms,
// elementwise) predicted on 20 GPUs with the learned models (goal: >= 200,000 kernels/s and the
// whole 100k x 20 in under 2 s on a 2-core machine). Usage: perfloom-bench-predict [KERNELS] [GPUS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "model/gpu_database.h"
#include "model/learned_predictor.h"
#include "model/resources.h"

using namespace perfloom;

int main(int argc, char** argv) {
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
      if (errs[i].empty()) total_us += preds[i].pred_us;
      else ++errors;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double predictions = static_cast<double>(n * targets.size());
  std::printf("%zu kernels x %zu GPUs = %.0f predictions in %.2f s: %.0f kernels/s (model load %.2f s, %zu errors, "
              "checksum %.3g us)\n",
              n, targets.size(), predictions, secs, predictions / secs, load_s, errors, total_us);
  return 0;
}
