#pragma once
// The framework ops of a torch.profiler trace (cat "cpu_op"), by External id, for joining each
// GPU kernel to the op that launched it. Kineto writes every CPU op before the GPU events, so
// the whole table must be kept until the kernels arrive: records are packed (interned names and
// types, varint dimensions, ~20-40 bytes an op), and past a memory budget they spill to a
// temporary on-disk SQLite table, so memory stays bounded on traces of any size.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/importers/scratch_db.h"

namespace perfloom::storage {

struct OpInfo {
  std::string name;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
  // torch.profiler's "Concrete Inputs": the scalar arguments as text ("True", "0", "-1"), "" for a
  // tensor or a value longer than kMaxConcreteChars; position i is the op's argument i.
  std::vector<std::string> concrete;
};

// Scalar arguments kept per op: flags and small integers (is_causal, dim); longer values (a float
// scale) are dropped, so that few distinct records are interned.
constexpr std::size_t kMaxConcreteChars = 12;
// The concrete inputs packed as add() takes them: each value cut per kMaxConcreteChars, joined by
// '\x1f'; at most `max_values` values.
std::string pack_concrete(const std::vector<std::string>& values, std::size_t n, std::size_t max_values);

class OpTable {
 public:
  OpTable(std::size_t memory_budget_bytes, std::string label);
  ~OpTable();

  // `dims` entries past `n_dims` and types past `n_types` are ignored (callers reuse vectors).
  void add(int64_t ext_id, int64_t tid, double ts, double dur, std::string_view name,
           const std::vector<std::vector<int64_t>>& dims, std::size_t n_dims, const std::vector<std::string>& types,
           std::size_t n_types, std::string_view concrete_packed = {});
  bool find(int64_t ext_id, OpInfo& out);
  // The innermost op of thread `tid` whose [ts, ts + dur] contains `t` (time containment, for
  // launches without an External id). Moves everything to the on-disk table and indexes it on
  // first use: call it only after the last add().
  bool find_enclosing(int64_t tid, double t, OpInfo& out);

  std::size_t size() const { return count_; }
  std::size_t memory_bytes() const;
  bool spilled() const { return scratch_ != nullptr; }

 private:
  void spill();
  void decode(std::string_view rec, OpInfo& out) const;
  void put_ref(std::string_view s);
  std::string ref_text(const unsigned char*& p) const;
  ScratchDb& scratch();

  std::size_t budget_;
  std::string label_;
  std::string arena_;
  // Sorted by External id (they rise through a trace); the few that come out of order wait in
  // `unordered_` until it is merged in.
  std::vector<std::pair<int64_t, uint64_t>> sorted_;
  std::unordered_map<int64_t, uint64_t> unordered_;
  // Interned op names and input types: few distinct, repeated millions of times.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> intern_;
  std::deque<std::string> interned_;
  std::size_t intern_bytes_ = 0;
  std::size_t count_ = 0;

  std::unique_ptr<ScratchDb> scratch_;
  Stmt insert_, lookup_, enclosing_;
  bool indexed_ = false;
};

}  // namespace perfloom::storage
