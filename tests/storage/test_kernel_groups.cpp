// Grouping a source's kernels by kernel name and by framework op (storage/kernel_groups.h, issue 59).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/kernel_groups.h"
#include "storage/kernel_store.h"

using namespace perfloom;
using namespace perfloom::storage;
namespace fs = std::filesystem;

TEST(KernelGroups, ByNameCountsTotalsMeansAndSharesSortedByTotal) {
  const std::vector<GroupInput> rows = {
      {"gemm_a", "aten::mm", 10},    {"norm", "aten::rms_norm", 4}, {"gemm_a", "aten::mm", 30}, {"copy", "", 1},
      {"norm", "aten::rms_norm", 5}, {"gemm_b", "aten::addmm", 20},
  };
  const auto g = group_kernels(rows, GroupBy::KernelName, 100);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].key, "gemm_a");
  EXPECT_EQ(g[0].count, 2);
  EXPECT_DOUBLE_EQ(g[0].total_us, 40);
  EXPECT_DOUBLE_EQ(g[0].mean_us, 20);
  EXPECT_DOUBLE_EQ(g[0].share, 0.40);
  EXPECT_EQ(g[1].key, "gemm_b");
  EXPECT_EQ(g[2].key, "norm");
  EXPECT_EQ(g[2].count, 2);
  EXPECT_DOUBLE_EQ(g[2].mean_us, 4.5);
  EXPECT_EQ(g[3].key, "copy");
  EXPECT_DOUBLE_EQ(g[3].share, 0.01);
}

TEST(KernelGroups, ByFrameworkOpNamesKernelsWithoutAnOp) {
  const std::vector<GroupInput> rows = {
      {"gemm_a", "aten::mm", 10},    {"gemm_b", "aten::mm", 30}, {"copy", "", 1}, {"fill", "", 2},
      {"norm", "aten::rms_norm", 4},
  };
  const auto g = group_kernels(rows, GroupBy::FrameworkOp, 47);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].key, "aten::mm");
  EXPECT_EQ(g[0].count, 2);
  EXPECT_DOUBLE_EQ(g[0].total_us, 40);
  EXPECT_EQ(g[1].key, "aten::rms_norm");
  EXPECT_EQ(g[2].key, kNoFrameworkOp);
  EXPECT_EQ(g[2].count, 2);
  EXPECT_DOUBLE_EQ(g[2].total_us, 3);
  EXPECT_DOUBLE_EQ(g[2].mean_us, 1.5);
}

TEST(KernelGroups, EqualTotalsSortByKeyAndNoTotalGivesNoShare) {
  const std::vector<GroupInput> rows = {{"b", "", 5}, {"c", "", 5}, {"a", "", 5}};
  const auto g = group_kernels(rows, GroupBy::KernelName, 0);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].key, "a");
  EXPECT_EQ(g[1].key, "b");
  EXPECT_EQ(g[2].key, "c");
  for (const auto& group : g) EXPECT_EQ(group.share, 0.0);
  EXPECT_TRUE(group_kernels({}, GroupBy::FrameworkOp, 10).empty());
}

TEST(KernelGroups, BadTimesAreRefusedWithTheKernelAndTheValue) {
  const std::vector<GroupInput> rows = {{"ok", "", 1}, {"bad_kernel", "", -2}};
  try {
    group_kernels(rows, GroupBy::KernelName, 10);
    FAIL() << "a negative time was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 1 (bad_kernel)"), std::string::npos) << what;
    EXPECT_NE(what.find("-2"), std::string::npos) << what;
  }
  const std::vector<GroupInput> nan = {{"k", "", std::numeric_limits<double>::quiet_NaN()}};
  EXPECT_THROW(group_kernels(nan, GroupBy::FrameworkOp, 10), std::invalid_argument);
  EXPECT_THROW(group_kernels({}, GroupBy::KernelName, std::numeric_limits<double>::infinity()), std::invalid_argument);
}

TEST(KernelGroups, NamesRoundTrip) {
  for (GroupBy by : {GroupBy::KernelName, GroupBy::FrameworkOp}) EXPECT_EQ(parse_group_by(group_by_name(by)), by);
  EXPECT_EQ(group_by_name(GroupBy::FrameworkOp), "framework-op");
  EXPECT_FALSE(parse_group_by("kernels"));
  EXPECT_FALSE(parse_group_by(""));
}

// The bundled sample, a real torch.profiler trace: the groups partition its kernels (counts and
// totals add up to the source's), and each group's figures are its kernels' sum.
TEST(KernelGroups, RealTraceGroupsAddUpToTheSource) {
  const fs::path db_path = fs::temp_directory_path() / "perfloom-kernel-groups.db";
  fs::remove(db_path);
  fs::remove(db_path.string() + "-wal");
  fs::remove(db_path.string() + "-shm");
  const GpuDatabase gpus = GpuDatabase::builtin();
  Database db(db_path);
  KernelStore store(db);
  ImportControl control;
  control.gpus = &gpus;
  const int64_t id =
      store.import_file(PERFLOOM_SOURCE_DIR "/resources/samples/h100-sxm-llama-trace.json.gz", control).source_id;
  const std::vector<StoredKernel> kernels = store.kernels(id);
  ASSERT_GT(kernels.size(), 50u);
  std::vector<GroupInput> rows;
  double total_us = 0;
  std::map<std::string, std::pair<int64_t, double>> by_op;
  for (const StoredKernel& k : kernels) {
    ASSERT_FALSE(k.measurements.empty());
    const double us = k.measurements.front().latency_us;
    rows.push_back({k.desc.name, k.launched_by, us});
    total_us += us;
    auto& [count, sum] = by_op[k.launched_by.empty() ? std::string(kNoFrameworkOp) : k.launched_by];
    ++count;
    sum += us;
  }
  const auto ops = group_kernels(rows, GroupBy::FrameworkOp, total_us);
  ASSERT_EQ(ops.size(), by_op.size());
  EXPECT_GT(ops.size(), 3u);  // torch.profiler names the launching aten ops
  int64_t count = 0;
  double sum = 0, share = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& expected = by_op.at(ops[i].key);
    EXPECT_EQ(ops[i].count, expected.first) << ops[i].key;
    EXPECT_NEAR(ops[i].total_us, expected.second, 1e-9 * total_us) << ops[i].key;
    if (i > 0) {
      EXPECT_GE(ops[i - 1].total_us, ops[i].total_us);
    }
    count += ops[i].count;
    sum += ops[i].total_us;
    share += ops[i].share;
  }
  EXPECT_EQ(count, int64_t(kernels.size()));
  EXPECT_NEAR(sum, total_us, 1e-9 * total_us);
  EXPECT_NEAR(share, 1.0, 1e-9);
  const auto names = group_kernels(rows, GroupBy::KernelName, total_us);
  EXPECT_GT(names.size(), 5u);
  EXPECT_LT(names.size(), kernels.size());  // a trace repeats its kernels
  count = 0;
  for (const auto& g : names) count += g.count;
  EXPECT_EQ(count, int64_t(kernels.size()));
  fs::remove(db_path);
}
