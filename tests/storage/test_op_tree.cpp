// The framework-op tree (storage/op_tree.h): a hand-made trace whose tree is known, and the real
// eager Llama-3-8B prefill trace (every kernel placed once, attention and GEMMs under their ops).
#include <functional>

#include "storage/kernel_groups.h"
#include "storage/op_tree.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

// Every kernel leaf's launches, and the check that each node's numbers are its children's sum.
int64_t check_sums(const OpTreeNode& n) {
  if (n.kind == OpTreeKind::Kernel) {
    EXPECT_TRUE(n.children.empty());
    EXPECT_EQ(n.kernels, n.calls);
    return n.kernels;
  }
  int64_t kernels = 0;
  double total = 0;
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    kernels += check_sums(n.children[i]);
    total += n.children[i].total_us;
    if (i > 0) {
      EXPECT_GE(n.children[i - 1].total_us, n.children[i].total_us) << n.name;
    }
  }
  EXPECT_EQ(n.kernels, kernels) << n.name;
  EXPECT_NEAR(n.total_us, total, 1e-6 * std::max(1.0, total)) << n.name;
  return kernels;
}

// Kernels in the subtree of every node named `op` whose name contains `part`.
int64_t kernels_under(const OpTreeNode& n, const std::string& op, const std::string& part, bool inside = false) {
  const bool in = inside || (n.kind == OpTreeKind::Op && n.name == op);
  if (n.kind == OpTreeKind::Kernel) return in && contains(n.name, part) ? n.kernels : 0;
  int64_t sum = 0;
  for (const auto& c : n.children) sum += kernels_under(c, op, part, in);
  return sum;
}

// Two decoder layers, each an aten::linear (one GEMM) and an aten::add (one elementwise kernel),
// on thread 1; a kernel launched while no op was open; one without a launch time.
int64_t hand_made(Database& db) {
  db.exec("INSERT INTO sources (id, path, format, content_hash, bytes) VALUES (1, 't.json', 'torch', 'h', 1)");
  const char* ops[] = {
      // seq, start, dur, name, depth
      "(1, 0, 1, 1, 0, 100, 'layer', 0)",       "(1, 1, 1, 1, 10, 20, 'aten::linear', 1)",
      "(1, 2, 1, 1, 40, 10, 'aten::add', 1)",   "(1, 3, 1, 1, 100, 100, 'layer', 0)",
      "(1, 4, 1, 1, 110, 20, 'aten::linear', 1)", "(1, 5, 1, 1, 140, 10, 'aten::add', 1)",
      "(1, 6, 1, 1, 150, 5, 'aten::empty', 1)",  // launches nothing: left out
  };
  for (const char* o : ops)
    db.exec(std::string("INSERT INTO cpu_ops (source_id, seq, pid, tid, start_us, dur_us, name, depth) VALUES ") + o);
  struct K {
    int id;
    const char* launch;
    const char* name;
    const char* by;
    double us;
  };
  const K ks[] = {{1, "12", "sm90_gemm", "aten::linear", 30},   {2, "45", "add_kernel", "aten::add", 2},
                  {3, "112", "sm90_gemm", "aten::linear", 31},  {4, "145", "add_kernel", "aten::add", 3},
                  {5, "300", "memcpy_kernel", "", 4},           {6, "NULL", "old_kernel", "aten::mm", 5}};
  for (const K& k : ks) {
    db.exec("INSERT INTO kernels (id, source_id, seq, name, launched_by, launch_us) VALUES (" + std::to_string(k.id) +
            ", 1, " + std::to_string(k.id) + ", '" + k.name + "', '" + k.by + "', " + k.launch + ")");
    db.exec("INSERT INTO measurements (kernel_id, latency_us, method) VALUES (" + std::to_string(k.id) + ", " +
            std::to_string(k.us) + ", 'trace')");
  }
  return 1;
}

TEST(OpTree, HandMadeTraceMergesLayersAndPlacesEveryKernel) {
  TempDir dir;
  Database db(dir / "p.db");
  const OpTree t = op_tree(db, hand_made(db));
  EXPECT_EQ(t.root.kind, OpTreeKind::Root);
  EXPECT_EQ(t.root.kernels, 6);
  EXPECT_DOUBLE_EQ(t.root.total_us, 75);
  EXPECT_DOUBLE_EQ(t.source_total_us, 75);
  EXPECT_EQ(t.kernels_placed_by_launch, 4);
  check_sums(t.root);
  // layer (2 calls) > aten::mm (no launch time) > (no framework op) (launched outside every op).
  ASSERT_EQ(t.root.children.size(), 3u);
  const OpTreeNode& layer = t.root.children[0];
  EXPECT_EQ(layer.name, "layer");
  EXPECT_EQ(layer.calls, 2);
  EXPECT_EQ(layer.kernels, 4);
  EXPECT_DOUBLE_EQ(layer.total_us, 66);
  EXPECT_DOUBLE_EQ(layer.share, 66.0 / 75);
  ASSERT_EQ(layer.children.size(), 2u);  // aten::empty ran no kernel
  const OpTreeNode& linear = layer.children[0];
  EXPECT_EQ(linear.name, "aten::linear");
  EXPECT_EQ(linear.calls, 2);
  ASSERT_EQ(linear.children.size(), 1u);
  EXPECT_EQ(linear.children[0].kind, OpTreeKind::Kernel);
  EXPECT_EQ(linear.children[0].name, "sm90_gemm");
  EXPECT_EQ(linear.children[0].calls, 2);
  EXPECT_DOUBLE_EQ(linear.children[0].total_us, 61);
  EXPECT_EQ(layer.children[1].name, "aten::add");
  EXPECT_DOUBLE_EQ(layer.children[1].total_us, 5);
  EXPECT_EQ(t.root.children[1].name, "aten::mm");
  EXPECT_EQ(t.root.children[1].children.at(0).name, "old_kernel");
  EXPECT_EQ(t.root.children[2].name, std::string(kNoFrameworkOp));
  EXPECT_EQ(t.root.children[2].children.at(0).name, "memcpy_kernel");

  // A filter keeps a matching node's subtree and its ancestors; totals are of what stays.
  const OpTree f = filter_op_tree(t, [](const OpTreeNode& n) { return n.name == "aten::add"; });
  check_sums(f.root);
  EXPECT_EQ(f.root.kernels, 2);
  EXPECT_DOUBLE_EQ(f.root.total_us, 5);
  ASSERT_EQ(f.root.children.size(), 1u);
  EXPECT_EQ(f.root.children[0].name, "layer");
  EXPECT_DOUBLE_EQ(f.root.children[0].share, 5.0 / 75);
  ASSERT_EQ(f.root.children[0].children.size(), 1u);
  EXPECT_EQ(f.root.children[0].children[0].children.at(0).name, "add_kernel");
  const OpTree none = filter_op_tree(t, [](const OpTreeNode&) { return false; });
  EXPECT_EQ(none.root.kernels, 0);
  EXPECT_TRUE(none.root.children.empty());
}

TEST(OpTree, UnknownSourceIsRefused) {
  TempDir dir;
  Database db(dir / "p.db");
  EXPECT_THROW(op_tree(db, 42), std::invalid_argument);
}

TEST(OpTree, RealLlamaPrefillTrace) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  const ImportSummary sum =
      store.import_file(source_dir() / "tests/data/traces/llama-3-8b_eager-prefill_b4s1024.json.gz", control());
  const OpTree t = op_tree(db, sum.source_id);
  // Every kernel once; the root's total is the sum of every kernel's (first) measured time.
  EXPECT_EQ(t.root.kernels, int64_t(sum.kernels));
  EXPECT_EQ(t.root.kernels, scalar(db, "SELECT count(*) FROM kernels WHERE source_id = " + std::to_string(sum.source_id)));
  EXPECT_EQ(check_sums(t.root), t.root.kernels);
  double total = 0;
  {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db.handle(),
                                 "SELECT sum(m.latency_us) FROM kernels k JOIN measurements m ON m.kernel_id = k.id",
                                 -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    total = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
  }
  EXPECT_GT(total, 0);
  EXPECT_NEAR(t.root.total_us, total, 1e-6 * total);
  EXPECT_NEAR(t.root.share, 1.0, 1e-9);
  // Most kernels are placed by their launch time, and the tree is merged: far fewer nodes than ops.
  EXPECT_GT(t.kernels_placed_by_launch, t.root.kernels * 9 / 10);
  // The 32 layers' attention: cuDNN's SDPA kernels under aten::scaled_dot_product_attention.
  EXPECT_EQ(kernels_under(t.root, "aten::scaled_dot_product_attention", "cudnn"), 32);
  // The projections' GEMMs (cuBLAS's nvjet kernels on this H100) under aten::linear: all of them,
  // seven per layer and the LM head.
  const int64_t gemms = scalar(db, "SELECT count(*) FROM kernels WHERE name LIKE 'nvjet%'");
  EXPECT_GE(gemms, 32 * 7);
  EXPECT_EQ(kernels_under(t.root, "aten::linear", "nvjet"), gemms);
  // Merged: aten::linear appears as few nodes with many calls, not once per call.
  std::function<int64_t(const OpTreeNode&)> max_calls = [&](const OpTreeNode& n) {
    int64_t m = n.name == "aten::linear" ? n.calls : 0;
    for (const auto& c : n.children) m = std::max(m, max_calls(c));
    return m;
  };
  EXPECT_GE(max_calls(t.root), 32);
}

}  // namespace

// Ops nested 5,000 deep (a hostile Nsight Systems export nests NVTX ranges 100,000 deep) fold into
// their ancestor at kMaxOpTreeDepth: the tree stays that deep, and the kernel is still counted.
TEST(OpTree, DeepNestingFoldsAtTheMaximumDepth) {
  TempDir dir;
  Database db(dir / "p.db");
  db.exec("INSERT INTO sources (id, path, format, content_hash, bytes) VALUES (1, 't.json', 'nsys', 'h', 1)");
  db.exec("BEGIN");
  constexpr int kDepth = 5000;
  for (int d = 0; d < kDepth; ++d)
    db.exec("INSERT INTO cpu_ops (source_id, seq, pid, tid, start_us, dur_us, name, depth) VALUES (1, " +
            std::to_string(d) + ", 1, 1, " + std::to_string(d) + ", " + std::to_string(2 * kDepth - 2 * d) +
            ", 'range" + std::to_string(d) + "', " + std::to_string(d) + ")");
  db.exec("INSERT INTO kernels (id, source_id, seq, name, launched_by, launch_us) VALUES (1, 1, 0, 'k', 'range', " +
          std::to_string(kDepth) + ")");
  db.exec("INSERT INTO measurements (kernel_id, latency_us, method) VALUES (1, 7, 'trace')");
  db.exec("COMMIT");
  const OpTree t = op_tree(db, 1);
  EXPECT_EQ(t.root.kernels, 1);
  EXPECT_DOUBLE_EQ(t.root.total_us, 7);
  std::size_t depth = 0;
  const OpTreeNode* n = &t.root;
  while (!n->children.empty()) {
    n = &n->children.front();
    ++depth;
  }
  EXPECT_EQ(n->kind, OpTreeKind::Kernel);
  EXPECT_EQ(depth, kMaxOpTreeDepth + 1);  // 128 op levels, then the kernel
}
