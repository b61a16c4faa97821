// The what-if engine of a profiled trace (storage/trace_whatif.h) on the real H100 torch.profiler
// trace and collector sweep of data: methods, totals, errors and the prediction cache.
#include <gtest/gtest.h>

#include <chrono>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "model/families/family_models.h"
#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"

using namespace perfloom;
using namespace perfloom::storage;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;

// The roofline baseline, counting the kernels it is asked to predict.
class CountingPredictor : public KernelPredictor {
 public:
  explicit CountingPredictor(std::string name = "roofline-test") : name_(std::move(name)) {}
  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override {
    ++calls;
    return predict_roofline(k, gpu);
  }
  std::string name() const override { return name_; }
  mutable std::atomic<int> calls{0};

 private:
  std::string name_;
};

class TraceWhatIfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("perfloom-test-whatif-" + std::to_string(::getpid()) + ".db");
    Remove();
    db_ = std::make_unique<Database>(path_);
    store_ = std::make_unique<KernelStore>(*db_);
    control_.gpus = &gpus_;
  }
  void TearDown() override {
    store_.reset();
    db_.reset();
    Remove();
  }
  void Remove() {
    std::error_code ec;
    for (const char* s : {"", "-wal", "-shm"}) fs::remove(path_.string() + s, ec);
  }
  int64_t Import(const fs::path& p) { return store_->import_file(p, control_).source_id; }

  GpuDatabase gpus_ = GpuDatabase::builtin();
  fs::path path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<KernelStore> store_;
  ImportControl control_;
};

TEST_F(TraceWhatIfTest, EveryKernelOnEveryTargetWithMethodsAndTotals) {
  const int64_t src = Import(kSrc / "data/h100-sxm/trace.json.gz");
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  const GpuSpec& h200 = gpus_.get("h200");
  const GpuSpec& a100 = gpus_.get("a100-sxm-80gb");
  CountingPredictor predictor;
  const TraceWhatIf r = run_trace_whatif(*store_, src, h100, {&h200, &h100, &a100}, predictor);

  ASSERT_EQ(r.kernels.size(), 155u);
  ASSERT_EQ(r.targets.size(), 3u);
  EXPECT_EQ(r.model_version, "roofline-test");
  std::map<std::string, int> methods;
  int memory_scaled = 0;
  for (const auto& t : r.targets) {
    ASSERT_EQ(t.cells.size(), r.kernels.size());
    double sum = 0, lo = 0, hi = 0;
    for (std::size_t i = 0; i < t.cells.size(); ++i) {
      const auto& c = t.cells[i];
      const auto& k = r.kernels[i];
      ++methods[std::string(whatif_method_name(c.method))];
      ASSERT_TRUE(k.measured_us.has_value()) << "every kernel of a torch trace is measured";
      if (t.gpu == &h100) {
        EXPECT_EQ(c.method, WhatIfMethod::measured);
        EXPECT_DOUBLE_EQ(c.pred_us, *k.measured_us);
      } else if (c.method == WhatIfMethod::scaled) {
        // measured x predicted target / predicted source, recomputed here.
        const double ps = predict_roofline(k.desc, h100).pred_us, pt = predict_roofline(k.desc, *t.gpu).pred_us;
        EXPECT_NEAR(c.pred_us, *k.measured_us * pt / ps, 1e-9 * c.pred_us);
        ASSERT_TRUE(c.lo_us && c.hi_us);
        EXPECT_LE(*c.lo_us, c.pred_us);
        EXPECT_GE(*c.hi_us, c.pred_us);
      } else {
        // A kernel the model cannot analyse (none in this trace since its SDPA kernels take their
        // shapes from the launching op; kept so that a trace change shows here).
        EXPECT_EQ(c.method, WhatIfMethod::scaled_spec) << k.desc.name;
        const auto ratio = whatif_spec_ratio(
            k.family, k.dtype_known ? std::optional<Dtype>(k.desc.dtype) : std::nullopt, h100, *t.gpu);
        ASSERT_TRUE(ratio);
        if ((k.family == Family::norm || k.family == Family::elementwise) && k.desc.launch && k.desc.launch->known()) {
          // Memory kernels with a launch grid (PyTorch's elementwise_kernel, CatArrayBatchedCopy):
          // between the bandwidth ratio (a large grid; the achievable bandwidths' ratio, 0.67 for
          // H100 -> H200 against the datasheets' 0.70) and their own time (a small grid, latency-
          // bound; the H100 and H200 have one latency, 383 / 381 ns).
          ++memory_scaled;
          EXPECT_GE(c.pred_us, *k.measured_us * std::min(1.0, *ratio) * 0.95) << k.desc.name;
          EXPECT_LE(c.pred_us, *k.measured_us * std::max(1.0, *ratio) * 1.01) << k.desc.name;
        } else {
          EXPECT_DOUBLE_EQ(c.pred_us, *k.measured_us * *ratio);
        }
        ASSERT_TRUE(c.lo_us && c.hi_us);
        EXPECT_LE(*c.lo_us, c.pred_us);
        EXPECT_GE(*c.hi_us, c.pred_us);
      }
      EXPECT_GT(c.pred_us, 0);
      sum += c.pred_us;
      lo += c.lo_us.value_or(c.pred_us);
      hi += c.hi_us.value_or(c.pred_us);
    }
    EXPECT_NEAR(t.total.pred_us, sum, 1e-9 * sum);
    EXPECT_NEAR(t.total.lo_us, lo, 1e-9 * lo);
    EXPECT_NEAR(t.total.hi_us, hi, 1e-9 * hi);
    EXPECT_EQ(t.total.kernels, 155u);
    EXPECT_EQ(t.total.errors, 0u);
    // The families add up to the whole.
    double fam_sum = 0;
    std::size_t fam_kernels = 0;
    for (const auto& [f, ft] : t.by_family) {
      fam_sum += ft.pred_us;
      fam_kernels += ft.kernels;
    }
    EXPECT_NEAR(fam_sum, t.total.pred_us, 1e-9 * sum);
    EXPECT_EQ(fam_kernels, 155u);
  }
  EXPECT_EQ(methods["measured"], 155);
  // Every kernel has a shape, the cuDNN SDPA ones from aten::_cudnn_attention_forward's inputs: all
  // are scaled by the model on the two other GPUs.
  EXPECT_EQ(methods["scaled"], 2 * 155);
  EXPECT_EQ(methods["scaled-spec"], 0);
  EXPECT_EQ(memory_scaled, 0);
  // Totals: measured on the source equals the source GPU's total.
  EXPECT_NEAR(r.targets[1].total.measured_us, r.targets[1].total.pred_us, 1e-9);
  // A100 is slower than H100 on this trace, H200 faster (more bandwidth, same compute).
  EXPECT_GT(r.targets[2].total.pred_us, r.targets[1].total.pred_us);
  EXPECT_LT(r.targets[0].total.pred_us, r.targets[1].total.pred_us);
}

TEST_F(TraceWhatIfTest, SecondRunReadsTheCacheAndPredictsNothing) {
  const int64_t src = Import(kSrc / "data/h100-sxm/trace.json.gz");
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  const GpuSpec& h200 = gpus_.get("h200");
  const GpuSpec& b200 = gpus_.get("b200");
  CountingPredictor first;
  const TraceWhatIf a = run_trace_whatif(*store_, src, h100, {&h200, &b200}, first);
  // Each distinct kernel once per GPU: the source (for scaling) and two targets.
  ASSERT_GT(a.distinct_kernels, 0u);
  EXPECT_LT(a.distinct_kernels, 155u) << "a trace repeats its kernels";
  const int distinct = static_cast<int>(a.distinct_kernels);
  EXPECT_EQ(first.calls.load(), 3 * distinct);
  EXPECT_FALSE(a.source_from_cache);
  EXPECT_EQ(a.source_predicted_kernels, a.distinct_kernels);
  for (const auto& t : a.targets) EXPECT_FALSE(t.from_cache);
  EXPECT_TRUE(store_->has_predictions(src, "h100-sxm", "roofline-test"));
  EXPECT_TRUE(store_->has_predictions(src, "b200", "roofline-test"));

  CountingPredictor second;
  const TraceWhatIf b = run_trace_whatif(*store_, src, h100, {&h200, &b200}, second);
  EXPECT_EQ(second.calls.load(), 0);
  EXPECT_TRUE(b.source_from_cache);
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_TRUE(b.targets[t].from_cache);
    EXPECT_EQ(b.targets[t].predicted_kernels, 0u);
    for (std::size_t i = 0; i < b.kernels.size(); ++i) {
      EXPECT_DOUBLE_EQ(b.targets[t].cells[i].pred_us, a.targets[t].cells[i].pred_us);
      EXPECT_EQ(b.targets[t].cells[i].method, a.targets[t].cells[i].method);
      EXPECT_EQ(b.targets[t].cells[i].bound, a.targets[t].cells[i].bound);
    }
    EXPECT_DOUBLE_EQ(b.targets[t].total.pred_us, a.targets[t].total.pred_us);
  }

  // Another model version is another cache entry.
  CountingPredictor other("another-model");
  run_trace_whatif(*store_, src, h100, {&h200}, other);
  EXPECT_EQ(other.calls.load(), 2 * distinct);
  // And the cache can be bypassed.
  CountingPredictor bypass;
  WhatIfOptions no_cache;
  no_cache.use_cache = false;
  run_trace_whatif(*store_, src, h100, {&h200}, bypass, no_cache);
  EXPECT_EQ(bypass.calls.load(), 2 * distinct);
}

// Issue #55: an import holds the write lock for its whole parse; a what-if run meanwhile predicts, and
// skips writing its cache (after a brief wait) instead of failing with "database is locked".
TEST_F(TraceWhatIfTest, AWriterHoldingTheLockMakesTheRunSkipItsCacheNotFail) {
  const int64_t src = Import(kSrc / "data/h100-sxm/trace.json.gz");
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  const GpuSpec& h200 = gpus_.get("h200");
  Database writer(path_);
  writer.exec("BEGIN IMMEDIATE");
  CountingPredictor predictor;
  const auto t0 = std::chrono::steady_clock::now();
  const TraceWhatIf busy = run_trace_whatif(*store_, src, h100, {&h200}, predictor);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  writer.exec("COMMIT");
  EXPECT_LT(secs, 4.0) << "waited for the writer as long as an import would";
  EXPECT_EQ(busy.cache_skipped, (std::vector<std::string>{"h100-sxm", "h200"}));
  ASSERT_EQ(busy.targets.size(), 1u);
  EXPECT_GT(busy.targets[0].total.pred_us, 0);
  EXPECT_FALSE(store_->has_predictions(src, "h200", "roofline-test"));
  // The lock released, the next run writes the cache, and the one after reads it.
  const TraceWhatIf free_run = run_trace_whatif(*store_, src, h100, {&h200}, predictor);
  EXPECT_TRUE(free_run.cache_skipped.empty());
  EXPECT_TRUE(store_->has_predictions(src, "h200", "roofline-test"));
  EXPECT_DOUBLE_EQ(free_run.targets[0].total.pred_us, busy.targets[0].total.pred_us);
}

TEST_F(TraceWhatIfTest, Fp8OnAmpereIsAnErrorRowNotAGuessAndItIsCached) {
  const int64_t src = Import(kSrc / "data/h100-sxm/gemm.csv.gz");
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  const GpuSpec& a100 = gpus_.get("a100-sxm-80gb");
  CountingPredictor predictor;
  const TraceWhatIf r = run_trace_whatif(*store_, src, h100, {&a100}, predictor);
  std::size_t fp8 = 0;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const auto& c = r.targets[0].cells[i];
    if (r.kernels[i].desc.dtype == Dtype::fp8e4m3 || r.kernels[i].desc.dtype == Dtype::fp8e5m2) {
      ++fp8;
      EXPECT_EQ(c.method, WhatIfMethod::error);
      EXPECT_NE(c.error.find("fp8"), std::string::npos) << c.error;
    } else {
      EXPECT_NE(c.method, WhatIfMethod::error) << c.error;
    }
  }
  ASSERT_GT(fp8, 0u);
  EXPECT_EQ(r.targets[0].total.errors, fp8);
  EXPECT_EQ(r.targets[0].total.kernels + fp8, r.kernels.size());
  // Read back from the cache: the same errors with their reasons.
  CountingPredictor again;
  const TraceWhatIf c = run_trace_whatif(*store_, src, h100, {&a100}, again);
  EXPECT_EQ(again.calls.load(), 0);
  EXPECT_EQ(c.targets[0].total.errors, fp8);
  for (std::size_t i = 0; i < c.kernels.size(); ++i)
    EXPECT_EQ(c.targets[0].cells[i].error, r.targets[0].cells[i].error);
}

TEST_F(TraceWhatIfTest, UnknownSourceAndSpecRatios) {
  CountingPredictor predictor;
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  EXPECT_THROW(run_trace_whatif(*store_, 12345, h100, {&h100}, predictor), std::invalid_argument);
  const GpuSpec& h200 = gpus_.get("h200");
  const GpuSpec& a100 = gpus_.get("a100-sxm-80gb");
  // H200 has H100's compute and more bandwidth.
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::gemm, Dtype::bf16, h100, h200), 1.0);
  EXPECT_DOUBLE_EQ(*whatif_spec_ratio(Family::norm, Dtype::bf16, h100, h200),
                   h100.memory_bandwidth_gb_s / h200.memory_bandwidth_gb_s);
  EXPECT_FALSE(whatif_spec_ratio(Family::gemm, Dtype::fp8e4m3, h100, a100).has_value());
  EXPECT_EQ(predictor_version(predictor), "roofline-test");
  EXPECT_EQ(readable_shape(KernelDesc{Op::gemm, Dtype::bf16, Shape{.M = 1, .N = 2, .K = 3}, {}, {}, ""}, true),
            "M=1,N=2,K=3");
  EXPECT_EQ(readable_shape(KernelDesc{}, false), "");
}

}  // namespace
