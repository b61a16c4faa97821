#include "storage/op_tree.h"

#include <sqlite3.h>
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "storage/importers/scratch_db.h"
#include "storage/statement.h"
#include "storage/kernel_groups.h"

namespace perfloom::storage {

namespace {

std::string_view col_text(sqlite3_stmt* st, int c) {
  const unsigned char* t = sqlite3_column_text(st, c);
  if (!t) return {};
  return {reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st, c))};
}

// The merged tree while it is built: flat, each node after its parent.
struct FlatNode {
  uint32_t name = 0;  // index into the interned names
  OpTreeKind kind = OpTreeKind::Op;
  uint32_t parent = 0;
  int64_t calls = 0, kernels = 0;
  double total_us = 0;
};

class Builder {
 public:
  Builder() {
    names_.emplace_back();
    name_ids_.emplace(std::string(), 0);
    nodes_.push_back({0, OpTreeKind::Root, 0, 0, 0, 0});
  }
  uint32_t intern(std::string_view s) {
    auto it = name_ids_.find(std::string(s));
    if (it != name_ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(s);
    name_ids_.emplace(names_.back(), id);
    return id;
  }
  const std::string& name(uint32_t id) const { return names_[id]; }
  // The child of `parent` with this name and kind, made when there is none.
  uint32_t child(uint32_t parent, uint32_t name, OpTreeKind kind) {
    const uint64_t key = (uint64_t(parent) << 33) | (uint64_t(name) << 1) | (kind == OpTreeKind::Kernel ? 1u : 0u);
    auto it = children_.find(key);
    if (it != children_.end()) return it->second;
    const auto id = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({name, kind, parent, 0, 0, 0});
    children_.emplace(key, id);
    return id;
  }
  FlatNode& node(uint32_t id) { return nodes_[id]; }

  OpTreeNode finish() {
    // Children come after their parents: one backward pass adds each subtree to its parent.
    for (std::size_t i = nodes_.size(); i-- > 1;) {
      nodes_[nodes_[i].parent].kernels += nodes_[i].kernels;
      nodes_[nodes_[i].parent].total_us += nodes_[i].total_us;
    }
    std::vector<std::vector<uint32_t>> kids(nodes_.size());
    for (uint32_t i = 1; i < nodes_.size(); ++i)
      if (nodes_[i].kernels > 0) kids[nodes_[i].parent].push_back(i);  // ops with no kernel are left out
    return build(0, kids);
  }

 private:
  OpTreeNode build(uint32_t id, const std::vector<std::vector<uint32_t>>& kids) {
    const FlatNode& f = nodes_[id];
    OpTreeNode n;
    n.name = names_[f.name];
    n.kind = f.kind;
    n.calls = f.calls;
    n.kernels = f.kernels;
    n.total_us = f.total_us;
    n.children.reserve(kids[id].size());
    for (uint32_t c : kids[id]) n.children.push_back(build(c, kids));
    return n;
  }

  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<FlatNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> children_;
};

void sort_and_share(OpTreeNode& n, double source_total_us) {
  n.share = source_total_us > 0 ? n.total_us / source_total_us : 0;
  for (auto& c : n.children) sort_and_share(c, source_total_us);
  std::sort(n.children.begin(), n.children.end(), [](const OpTreeNode& a, const OpTreeNode& b) {
    if (a.total_us != b.total_us) return a.total_us > b.total_us;
    if (a.kind != b.kind) return a.kind == OpTreeKind::Op;
    return a.name < b.name;
  });
}

struct OpenOp {
  double end_us;
  uint32_t node;
};

// What a node keeps under a filter; `inside`: an ancestor matched, so the whole subtree stays.
bool filter_node(const OpTreeNode& in, bool inside, const std::function<bool(const OpTreeNode&)>& matches,
                 OpTreeNode& out) {
  const bool keep_all = inside || (in.kind != OpTreeKind::Root && matches(in));
  out.name = in.name;
  out.kind = in.kind;
  out.calls = in.calls;
  out.kernels = 0;
  out.total_us = 0;
  if (in.kind == OpTreeKind::Kernel) {
    if (!keep_all) return false;
    out.kernels = in.kernels;
    out.total_us = in.total_us;
    out.share = in.share;
    return true;
  }
  for (const OpTreeNode& c : in.children) {
    OpTreeNode kept;
    if (!filter_node(c, keep_all, matches, kept)) continue;
    out.kernels += kept.kernels;
    out.total_us += kept.total_us;
    out.children.push_back(std::move(kept));
  }
  return out.kernels > 0;
}

void reshare(OpTreeNode& n, double source_total_us) {
  n.share = source_total_us > 0 ? n.total_us / source_total_us : 0;
  for (auto& c : n.children) reshare(c, source_total_us);
}

}  // namespace

OpTree op_tree(const Database& db, int64_t source_id) {
  {
    Stmt st = prepare(db, "SELECT 1 FROM sources WHERE id = ?1");
    sqlite3_bind_int64(st, 1, source_id);
    if (sqlite3_step(st) != SQLITE_ROW)
      throw std::invalid_argument("source " + std::to_string(source_id) + " is not in " + db.path().string());
  }
  OpTree tree;
  tree.source_id = source_id;
  Builder b;
  const uint32_t no_op = b.intern(kNoFrameworkOp);

  // Both sorted by time in SQLite (a temporary b-tree, spilled to disk when large). An op starting
  // at a launch's instant contains it, so ops go first at equal times; parents before children.
  Stmt ops = prepare(db,
                     "SELECT pid, tid, start_us, dur_us, name, depth FROM cpu_ops WHERE source_id = ?1 "
                     "ORDER BY start_us, depth, seq");
  sqlite3_bind_int64(ops, 1, source_id);
  Stmt ks = prepare(db,
                    "SELECT k.launch_us, k.name, k.launched_by, "
                    "(SELECT m.latency_us FROM measurements m WHERE m.kernel_id = k.id ORDER BY m.id LIMIT 1) "
                    "FROM kernels k WHERE k.source_id = ?1 ORDER BY k.launch_us, k.seq");
  sqlite3_bind_int64(ks, 1, source_id);

  std::map<std::pair<int64_t, int64_t>, std::vector<OpenOp>> stacks;  // per (pid, tid)
  int op_rc = sqlite3_step(ops);
  int k_rc = sqlite3_step(ks);
  auto fail = [&db](int rc) {
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw DatabaseError(db.path().string() + ": " + sqlite3_errmsg(db.handle()));
  };
  fail(op_rc);
  fail(k_rc);
  while (k_rc == SQLITE_ROW) {
    const bool has_launch = sqlite3_column_type(ks, 0) != SQLITE_NULL;
    const double launch_us = sqlite3_column_double(ks, 0);
    // Every op that starts by this launch opens first.
    while (has_launch && op_rc == SQLITE_ROW && sqlite3_column_double(ops, 2) <= launch_us) {
      const double start = sqlite3_column_double(ops, 2);
      const double end = start + std::max(0.0, sqlite3_column_double(ops, 3));
      const auto depth = static_cast<std::size_t>(std::max(0, sqlite3_column_int(ops, 5)));
      auto& stack = stacks[{sqlite3_column_int64(ops, 0), sqlite3_column_int64(ops, 1)}];
      while (!stack.empty() && (stack.size() > depth || stack.back().end_us < start)) stack.pop_back();
      const uint32_t parent = stack.empty() ? 0 : stack.back().node;
      // Ops nested deeper than kMaxOpTreeDepth fold into their ancestor at that depth: the tree's
      // depth (and every recursion over it) stays bounded whatever the trace nests.
      const bool folded = stack.size() >= kMaxOpTreeDepth;
      const uint32_t node = folded ? parent : b.child(parent, b.intern(col_text(ops, 4)), OpTreeKind::Op);
      if (!folded) ++b.node(node).calls;
      stack.push_back({end, node});
      op_rc = sqlite3_step(ops);
      fail(op_rc);
    }
    const std::string_view launched_by = col_text(ks, 2);
    const double us = std::max(0.0, sqlite3_column_double(ks, 3));
    // The innermost op open at the launch: on the thread whose innermost op is the one that launched
    // the kernel where there is one, else on the thread where it is deepest.
    uint32_t under = 0;
    std::size_t best_depth = 0;
    bool best_named = false;
    if (has_launch) {
      for (auto& [thread, stack] : stacks) {
        while (!stack.empty() && stack.back().end_us < launch_us) stack.pop_back();
        if (stack.empty()) continue;
        const bool named = !launched_by.empty() && b.name(b.node(stack.back().node).name) == launched_by;
        if (!under || (named && !best_named) || (named == best_named && stack.size() > best_depth)) {
          under = stack.back().node;
          best_depth = stack.size();
          best_named = named;
        }
      }
    }
    if (under) {
      ++tree.kernels_placed_by_launch;
    } else {
      under = b.child(0, launched_by.empty() ? no_op : b.intern(launched_by), OpTreeKind::Op);
      ++b.node(under).calls;
    }
    const uint32_t leaf = b.child(under, b.intern(col_text(ks, 1)), OpTreeKind::Kernel);
    FlatNode& l = b.node(leaf);
    ++l.calls;
    ++l.kernels;
    l.total_us += us;
    k_rc = sqlite3_step(ks);
    fail(k_rc);
  }
  tree.root = b.finish();
  tree.root.kind = OpTreeKind::Root;
  tree.source_total_us = tree.root.total_us;
  sort_and_share(tree.root, tree.source_total_us);
  return tree;
}

OpTree filter_op_tree(const OpTree& tree, const std::function<bool(const OpTreeNode&)>& matches) {
  OpTree out;
  out.source_id = tree.source_id;
  out.kernels_placed_by_launch = tree.kernels_placed_by_launch;
  out.source_total_us = tree.source_total_us;
  filter_node(tree.root, false, matches, out.root);
  reshare(out.root, out.source_total_us);
  return out;
}

}  // namespace perfloom::storage
