// Two traces side by side (storage/trace_compare.h) on the real torch.profiler traces of data: the
// same program measured on an H100 (data/h100-sxm) and an H200 (data/h200), 155 kernels each, and
// small made-up sequences for the matching rules.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "model/families/family_models.h"
#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "storage/trace_compare.h"
#include "storage/trace_whatif.h"

using namespace perfloom;
using namespace perfloom::storage;
namespace fs = std::filesystem;

namespace {

const fs::path kSrc = PERFLOOM_SOURCE_DIR;
constexpr std::size_t kTraceKernels = 155;

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

class CompareTestRoofline : public KernelPredictor {
 public:
  Prediction predict(const KernelDesc& k, const GpuSpec& gpu) const override { return predict_roofline(k, gpu); }
  std::string name() const override { return "roofline-compare-test"; }
};

class TraceCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("perfloom-test-compare-" + std::to_string(::getpid()) + ".db");
    Remove();
    db_ = std::make_unique<Database>(path_);
    store_ = std::make_unique<KernelStore>(*db_);
    control_.gpus = &gpus_;
    h100_ = store_->import_file(kSrc / "data/h100-sxm/trace.json.gz", control_).source_id;
    h200_ = store_->import_file(kSrc / "data/h200/trace.json.gz", control_).source_id;
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
  const ComparedKernel& Seq(const TraceComparison& c, int64_t seq) {
    auto it = std::find_if(c.kernels.begin(), c.kernels.end(), [&](const ComparedKernel& k) { return k.seq_a == seq; });
    EXPECT_NE(it, c.kernels.end()) << "no pair for kernel " << seq;
    return *it;
  }

  GpuDatabase gpus_ = GpuDatabase::builtin();
  fs::path path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<KernelStore> store_;
  ImportControl control_;
  int64_t h100_ = 0, h200_ = 0;
};

TEST_F(TraceCompareTest, TheSameProgramOnTwoGpusMatchesEveryKernelByPosition) {
  const TraceComparison c = compare_traces(*store_, {h100_}, {h200_});
  EXPECT_EQ(c.a.gpu_id, "h100-sxm");
  EXPECT_EQ(c.b.gpu_id, "h200");
  EXPECT_FALSE(c.a.predicted);
  EXPECT_EQ(c.a.kernels, kTraceKernels);
  EXPECT_EQ(c.kernels.size(), kTraceKernels);
  EXPECT_EQ(c.by_position, kTraceKernels);
  EXPECT_EQ(c.by_name, 0u);
  EXPECT_TRUE(c.only_a.empty());
  EXPECT_TRUE(c.only_b.empty());
  for (const ComparedKernel& k : c.kernels) EXPECT_EQ(k.seq_a, k.seq_b);
  // The measured totals of the traces (gemm 526.541 us on the H100, 443.779 us on the H200).
  ASSERT_EQ(c.by_family.size(), 4u);
  const CompareGroup& gemm = c.by_family[0];
  EXPECT_EQ(gemm.family, Family::gemm);
  EXPECT_EQ(gemm.kernels, 48u);
  EXPECT_NEAR(gemm.a_us, 526.541, 1e-6);
  EXPECT_NEAR(gemm.b_us, 443.779, 1e-6);
  EXPECT_TRUE(near(*gemm.ratio(), gemm.b_us / gemm.a_us));
  EXPECT_NEAR(c.a.total_us, c.total.a_us, 1e-9);
  EXPECT_NEAR(c.b.total_us, c.total.b_us, 1e-9);
}

TEST_F(TraceCompareTest, FamilyAndNameTotalsAreTheSumsOfTheMatchedKernels) {
  const TraceComparison c = compare_traces(*store_, {h100_}, {h200_});
  std::map<Family, std::pair<double, double>> fam;
  std::map<std::string, std::pair<double, double>> name;
  std::map<Family, std::size_t> count;
  double a = 0, b = 0;
  for (const ComparedKernel& k : c.kernels) {
    ASSERT_TRUE(k.timed());
    fam[k.family].first += *k.a_us;
    fam[k.family].second += *k.b_us;
    name[k.name].first += *k.a_us;
    name[k.name].second += *k.b_us;
    ++count[k.family];
    a += *k.a_us;
    b += *k.b_us;
  }
  double share = 0;
  for (const CompareGroup& g : c.by_family) {
    EXPECT_EQ(g.kernels, count[g.family]) << g.key;
    EXPECT_TRUE(near(g.a_us, fam[g.family].first)) << g.key;
    EXPECT_TRUE(near(g.b_us, fam[g.family].second)) << g.key;
    EXPECT_TRUE(near(g.share, g.delta_us() / c.total.delta_us())) << g.key;
    share += g.share;
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_EQ(c.by_kernel_name.size(), name.size());
  for (const CompareGroup& g : c.by_kernel_name) {
    EXPECT_TRUE(near(g.a_us, name[g.key].first)) << g.key;
    EXPECT_TRUE(near(g.b_us, name[g.key].second)) << g.key;
  }
  for (std::size_t i = 1; i < c.by_kernel_name.size(); ++i)
    EXPECT_GE(std::abs(c.by_kernel_name[i - 1].delta_us()), std::abs(c.by_kernel_name[i].delta_us()));
  EXPECT_TRUE(near(c.total.a_us, a));
  EXPECT_TRUE(near(c.total.b_us, b));
  EXPECT_EQ(c.total.kernels, kTraceKernels);
  EXPECT_LT(c.total.delta_us(), 0);  // the H200 runs the program faster
}

TEST_F(TraceCompareTest, AKnownKernelsRatioAndAKernelThatCuBlasChoseDifferently) {
  const TraceComparison c = compare_traces(*store_, {h100_}, {h200_});
  // Kernel 8: the gate/up GEMM M=512, N=11264, K=2048, 33.249 us on the H100 and 32.032 us on the H200.
  const ComparedKernel& up = Seq(c, 8);
  EXPECT_EQ(up.shape, "M=512,N=11264,K=2048");
  EXPECT_EQ(up.name, up.name_b);
  EXPECT_DOUBLE_EQ(*up.a_us, 33.249);
  EXPECT_DOUBLE_EQ(*up.b_us, 32.032);
  EXPECT_DOUBLE_EQ(*up.ratio(), 32.032 / 33.249);
  // Kernel 40: split-K GEMMs that cuBLAS tiled 2x1 on the H100 and 4x1 on the H200, paired all the same.
  const ComparedKernel& split = Seq(c, 40);
  EXPECT_EQ(split.by, MatchedBy::position);
  EXPECT_EQ(split.name, "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT");
  EXPECT_EQ(split.name_b, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  EXPECT_DOUBLE_EQ(*split.ratio(), 9.184 / 10.944);
  auto g = std::find_if(c.by_kernel_name.begin(), c.by_kernel_name.end(),
                        [&](const CompareGroup& x) { return x.key == split.name; });
  ASSERT_NE(g, c.by_kernel_name.end());
  EXPECT_EQ(g->name_b, split.name_b);
  EXPECT_EQ(g->kernels, 8u);
}

TEST_F(TraceCompareTest, ATraceAgainstItselfHasRatioOneAndNoDifference) {
  const TraceComparison c = compare_traces(*store_, {h200_}, {h200_});
  EXPECT_EQ(c.by_position, kTraceKernels);
  EXPECT_TRUE(c.only_a.empty() && c.only_b.empty());
  EXPECT_EQ(c.total.delta_us(), 0.0);
  EXPECT_EQ(*c.total.ratio(), 1.0);
  EXPECT_EQ(c.total.share, 0.0);
  for (const auto* groups : {&c.by_family, &c.by_kernel_name})
    for (const CompareGroup& g : *groups) {
      EXPECT_EQ(*g.ratio(), 1.0) << g.key;
      EXPECT_EQ(g.delta_us(), 0.0) << g.key;
      EXPECT_EQ(g.share, 0.0) << g.key;
      EXPECT_TRUE(g.name_b.empty()) << g.key;
    }
  for (const ComparedKernel& k : c.kernels) EXPECT_EQ(*k.ratio(), 1.0);
}

TEST_F(TraceCompareTest, MeasuredAgainstPredictedIsTheWhatIfsTimes) {
  CompareTestRoofline predictor;
  CompareOptions options;
  options.predictor = &predictor;
  options.whatif.use_cache = false;
  const GpuSpec& h100 = gpus_.get("h100-sxm");
  const GpuSpec& h200 = gpus_.get("h200");
  const TraceComparison c = compare_traces(*store_, {h100_, &h100, &h200}, {h200_}, options);
  EXPECT_TRUE(c.a.predicted);
  EXPECT_EQ(c.a.gpu_id, "h200");
  EXPECT_EQ(c.a.model_version, "roofline-compare-test");
  EXPECT_EQ(c.kernels.size(), kTraceKernels);
  const TraceWhatIf w = run_trace_whatif(*store_, h100_, h100, {&h200}, predictor, options.whatif);
  double predicted = 0;
  for (std::size_t i = 0; i < w.kernels.size(); ++i) {
    const WhatIfCell& cell = w.targets[0].cells[i];
    ASSERT_NE(cell.method, WhatIfMethod::error) << i;
    EXPECT_DOUBLE_EQ(*c.kernels[i].a_us, cell.pred_us) << i;
    predicted += cell.pred_us;
  }
  EXPECT_TRUE(near(c.total.a_us, predicted));
  EXPECT_TRUE(near(c.total.a_us, w.targets[0].total.pred_us));
  // Side B stays measured.
  EXPECT_NEAR(c.by_family[0].b_us, 443.779, 1e-6);
  // A predicted side needs a predictor and the GPU the source was measured on.
  EXPECT_THROW(compare_traces(*store_, {h100_, &h100, &h200}, {h200_}), std::invalid_argument);
  EXPECT_THROW(compare_traces(*store_, {h100_, nullptr, &h200}, {h200_}, options), std::invalid_argument);
  EXPECT_THROW(compare_traces(*store_, {h100_}, {h200_ + 100}), std::invalid_argument);
}

TEST_F(TraceCompareTest, KernelsMissingOnOneSideAreCountedUnmatched) {
  // The H200 trace without its last ten kernels: the sequences that lost kernels are paired by
  // name instead, the rest stays by position, and what has no partner is counted on its side.
  const auto a = store_->kernels(h100_);
  auto b = store_->kernels(h200_);
  b.resize(b.size() - 10);
  std::vector<MatchKernel> ma, mb;
  for (const auto& k : a) ma.push_back({k.launched_by, k.family, k.desc.op, k.desc.name});
  for (const auto& k : b) mb.push_back({k.launched_by, k.family, k.desc.op, k.desc.name});
  const KernelMatching m = match_kernels(ma, mb);
  EXPECT_EQ(m.pairs.size() + m.only_a.size(), a.size());
  EXPECT_EQ(m.pairs.size() + m.only_b.size(), b.size());
  EXPECT_GE(m.only_a.size(), 10u);
  for (std::size_t i = a.size() - 10; i < a.size(); ++i)
    EXPECT_TRUE(std::binary_search(m.only_a.begin(), m.only_a.end(), i)) << i;
  std::size_t by_position = 0;
  for (const KernelPair& p : m.pairs) {
    if (p.by == MatchedBy::position) {
      ++by_position;
      EXPECT_EQ(p.a, p.b);
    } else {
      EXPECT_EQ(a[p.a].desc.name, b[p.b].desc.name);
    }
  }
  EXPECT_GT(by_position, 0u);
  EXPECT_LT(by_position, m.pairs.size());
}

CompareInput In(int64_t seq, std::string name, std::string op_by, Family f, Op op, double us) {
  return {seq, std::move(name), std::move(op_by), f, op, "", us};
}

TEST(CompareKernels, PositionFirstThenNameThenUnmatched) {
  const std::vector<CompareInput> a = {
      In(0, "gemm_a", "aten::mm", Family::gemm, Op::gemm, 10),
      In(1, "copy", "aten::copy_", Family::elementwise, Op::copy, 2),
      In(2, "copy", "aten::copy_", Family::elementwise, Op::copy, 2),
      In(3, "norm", "aten::rms_norm", Family::norm, Op::rmsnorm, 4),
  };
  const std::vector<CompareInput> b = {
      In(0, "gemm_b", "aten::mm", Family::gemm, Op::gemm, 8),          // by position, another name
      In(1, "copy", "aten::copy_", Family::elementwise, Op::copy, 1),  // three copies where A has two:
      In(2, "copy", "aten::copy_", Family::elementwise, Op::copy, 1),  // by name, the third unmatched
      In(3, "copy", "aten::copy_", Family::elementwise, Op::copy, 5),
      In(4, "softmax", "aten::softmax", Family::elementwise, Op::softmax, 3),  // B only
  };
  const CompareResult r = compare_kernels(a, b);
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.by_position, 1u);
  EXPECT_EQ(r.by_name, 2u);
  EXPECT_EQ(r.kernels[0].name_b, "gemm_b");
  EXPECT_EQ(r.kernels[1].by, MatchedBy::name);
  EXPECT_EQ(r.kernels[1].seq_b, 1);
  EXPECT_EQ(r.kernels[2].seq_b, 2);
  ASSERT_EQ(r.only_a.size(), 1u);
  EXPECT_EQ(r.only_a[0].name, "norm");
  ASSERT_EQ(r.only_b.size(), 2u);
  EXPECT_EQ(r.only_b[0].seq, 3);
  EXPECT_EQ(r.only_b[1].name, "softmax");
  // Totals over the pairs: A 14, B 10; the unmatched apart.
  EXPECT_EQ(r.total.kernels, 3u);
  EXPECT_DOUBLE_EQ(r.total.a_us, 14);
  EXPECT_DOUBLE_EQ(r.total.b_us, 10);
  EXPECT_EQ(r.total.only_a, 1u);
  EXPECT_DOUBLE_EQ(r.total.only_a_us, 4);
  EXPECT_EQ(r.total.only_b, 2u);
  EXPECT_DOUBLE_EQ(r.total.only_b_us, 8);
  ASSERT_EQ(r.by_family.size(), 3u);  // gemm, norm, elementwise in Family order
  const CompareGroup& ew = r.by_family[2];
  EXPECT_EQ(ew.family, Family::elementwise);
  EXPECT_EQ(ew.kernels, 2u);
  EXPECT_DOUBLE_EQ(ew.a_us, 4);
  EXPECT_DOUBLE_EQ(ew.b_us, 2);
  EXPECT_DOUBLE_EQ(*ew.ratio(), 0.5);
  EXPECT_DOUBLE_EQ(ew.share, 0.5);  // -2 of the total's -4
  EXPECT_EQ(ew.only_b, 2u);
  const CompareGroup& norm = r.by_family[1];
  EXPECT_EQ(norm.kernels, 0u);
  EXPECT_EQ(norm.only_a, 1u);
  EXPECT_FALSE(norm.ratio().has_value());
  // By name: gemm_a (-2) and copy (-2) first, by |delta|, then norm and softmax (no pairs).
  ASSERT_EQ(r.by_kernel_name.size(), 4u);
  EXPECT_EQ(r.by_kernel_name[0].key, "copy");
  EXPECT_EQ(r.by_kernel_name[1].key, "gemm_a");
  EXPECT_EQ(r.by_kernel_name[1].name_b, "gemm_b");
  EXPECT_EQ(r.by_kernel_name[0].only_b, 1u);
}

TEST(CompareKernels, NothingInCommonAndBadTimes) {
  const std::vector<CompareInput> a = {In(0, "x", "aten::mm", Family::gemm, Op::gemm, 1)};
  const std::vector<CompareInput> b = {In(0, "y", "aten::add", Family::elementwise, Op::add, 1)};
  const CompareResult r = compare_kernels(a, b);
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_EQ(r.only_a.size(), 1u);
  EXPECT_EQ(r.only_b.size(), 1u);
  EXPECT_FALSE(r.total.ratio().has_value());
  // Kernels with neither a framework op nor an op are not paired by position: only by name.
  const std::vector<CompareInput> anon_a = {In(0, "x", "", Family::unknown, Op::unknown, 1),
                                            In(1, "z", "", Family::unknown, Op::unknown, 2)};
  const std::vector<CompareInput> anon_b = {In(0, "z", "", Family::unknown, Op::unknown, 3),
                                            In(1, "y", "", Family::unknown, Op::unknown, 1)};
  const CompareResult anon = compare_kernels(anon_a, anon_b);
  ASSERT_EQ(anon.kernels.size(), 1u);
  EXPECT_EQ(anon.kernels[0].name, "z");
  EXPECT_EQ(anon.kernels[0].by, MatchedBy::name);
  EXPECT_EQ(anon.kernels[0].seq_a, 1);
  EXPECT_EQ(anon.kernels[0].seq_b, 0);
  EXPECT_EQ(anon.only_a.size(), 1u);
  EXPECT_EQ(anon.only_b.size(), 1u);
  std::vector<CompareInput> bad = a;
  bad[0].us = -1.0;
  EXPECT_THROW(compare_kernels(bad, b), std::invalid_argument);
  bad[0].us = std::nan("");
  EXPECT_THROW(compare_kernels(a, bad), std::invalid_argument);
}

}  // namespace
