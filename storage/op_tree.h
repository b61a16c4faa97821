#pragma once
// A trace's framework-op tree (issue 59): the profiler's "top-down" view of where the kernel time
// goes. Built from the source's `cpu_ops` and its kernels: each kernel hangs under the deepest op
// that contains the start of its launch call (`kernels.launch_us`) on a thread where such an op
// exists, as a leaf named by the kernel. Kernels without a launch time (older imports, other
// formats), or whose launch no op contains, go under a top-level node named by the op that launched
// them (`launched_by`), or kNoFrameworkOp. Identical sibling paths are merged: the same op name
// under the same parent (the 32 decoder layers' aten::linear) is one node with a call count, the
// same kernel name under the same op one leaf with a launch count. Ops under which no kernel ran
// are left out. A plain function over the database: the Traces view shows it, a report can call it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "storage/database.h"

namespace perfloom::storage {

enum class OpTreeKind { Root, Op, Kernel };

// Op levels the tree keeps; deeper ops are folded into their ancestor at this depth (a hostile
// Nsight Systems export nests NVTX ranges 100,000 deep).
inline constexpr std::size_t kMaxOpTreeDepth = 128;

struct OpTreeNode {
  std::string name;  // the op's or kernel's name; "" for the root
  OpTreeKind kind = OpTreeKind::Op;
  int64_t calls = 0;    // op instances merged into this node (ops), kernel launches (kernel leaves)
  int64_t kernels = 0;  // kernels in the subtree (a leaf: its launches)
  double total_us = 0;  // the measured time of those kernels
  double share = 0;     // total_us / the source's total, 0..1; 0 when that total is not positive
  std::vector<OpTreeNode> children;  // by total descending, then kind (ops first), then name
};

struct OpTree {
  int64_t source_id = 0;
  OpTreeNode root;                // kind Root; its kernels and total are the source's
  int64_t kernels_placed_by_launch = 0;  // kernels hung under an op by their launch time
  double source_total_us = 0;     // what the shares are of (the root's total before any filter)
};

// The tree of `source_id`. Reads ops and kernels sorted by time in SQLite (no whole-trace copy in
// memory: what it holds is the merged tree and one stack of open ops per thread). A kernel's measured
// time is its first measurement (0 without one). Throws std::invalid_argument for an unknown source,
// DatabaseError for a database that cannot be read.
OpTree op_tree(const Database& db, int64_t source_id);

// The part of `tree` a filter shows: a node stays when it, one of its ancestors or one of its
// descendants `matches`; kernel counts and totals are recomputed from the kernel leaves that stay
// (shares still of the source's total), and ops left with no kernel go. The root always stays.
OpTree filter_op_tree(const OpTree& tree, const std::function<bool(const OpTreeNode&)>& matches);

}  // namespace perfloom::storage
