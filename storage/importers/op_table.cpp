#include "storage/importers/op_table.h"

#include <sqlite3.h>
#include <algorithm>
#include <cstring>

#include "storage/importers/varint.h"

namespace perfloom::storage {

namespace {

constexpr std::size_t kMaxInterned = std::size_t(16) << 20;  // bytes of distinct names kept
constexpr std::size_t kUnorderedMerge = 1 << 16;

}  // namespace

OpTable::OpTable(std::size_t budget, std::string label) : budget_(budget), label_(std::move(label)) {}
OpTable::~OpTable() = default;

std::size_t OpTable::memory_bytes() const {
  return arena_.capacity() + sorted_.capacity() * sizeof(sorted_[0]) + unordered_.size() * 32 + intern_bytes_ * 2;
}

void OpTable::put_ref(std::string_view s) {
  auto it = intern_.find(s);
  if (it != intern_.end()) {
    varint::put(arena_, uint64_t(it->second) << 1);
    return;
  }
  if (intern_bytes_ + s.size() <= kMaxInterned) {
    uint32_t id = static_cast<uint32_t>(interned_.size());
    interned_.emplace_back(s);
    intern_.emplace(std::string(s), id);
    intern_bytes_ += s.size() + 48;
    varint::put(arena_, uint64_t(id) << 1);
    return;
  }
  varint::put(arena_, (uint64_t(s.size()) << 1) | 1);
  arena_.append(s);
}

std::string OpTable::ref_text(const unsigned char*& p) const {
  uint64_t v = varint::get(p);
  if (!(v & 1)) return interned_[v >> 1];
  std::size_t n = v >> 1;
  std::string s(reinterpret_cast<const char*>(p), n);
  p += n;
  return s;
}

void OpTable::add(int64_t ext_id, int64_t tid, double ts, double dur, std::string_view name,
                  const std::vector<std::vector<int64_t>>& dims, std::size_t n_dims,
                  const std::vector<std::string>& types, std::size_t n_types, std::string_view concrete_packed) {
  const uint64_t at = arena_.size();
  // Record: [length] name tid ts dur n_inputs {ndims+1 dims...} n_types {type} concrete
  std::size_t len_pos = arena_.size();
  arena_.append(4, '\0');
  put_ref(name);
  varint::put(arena_, varint::zigzag(tid));
  varint::put_double(arena_, ts);
  varint::put_double(arena_, dur);
  n_dims = std::min(n_dims, dims.size());
  n_types = std::min(n_types, types.size());
  varint::put(arena_, n_dims);
  for (std::size_t i = 0; i < n_dims; ++i) {
    varint::put(arena_, dims[i].size());
    for (int64_t d : dims[i]) varint::put(arena_, varint::zigzag(d));
  }
  varint::put(arena_, n_types);
  for (std::size_t i = 0; i < n_types; ++i) put_ref(types[i]);
  put_ref(concrete_packed);
  uint32_t len = static_cast<uint32_t>(arena_.size() - len_pos - 4);
  std::memcpy(arena_.data() + len_pos, &len, 4);

  if (sorted_.empty() || ext_id > sorted_.back().first) {
    sorted_.emplace_back(ext_id, at);
  } else {
    unordered_[ext_id] = at;
    if (unordered_.size() >= kUnorderedMerge) {
      std::vector<std::pair<int64_t, uint64_t>> extra(unordered_.begin(), unordered_.end());
      unordered_.clear();
      std::sort(extra.begin(), extra.end());
      auto mid = sorted_.size();
      sorted_.insert(sorted_.end(), extra.begin(), extra.end());
      std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(mid), sorted_.end());
    }
  }
  ++count_;
  if (arena_.size() > budget_) spill();
}

void OpTable::decode(std::string_view rec, OpInfo& out) const {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(rec.data());
  out.name = ref_text(p);
  varint::get(p);         // tid
  varint::get_double(p);  // ts
  varint::get_double(p);  // dur
  std::size_t n = varint::get(p);
  out.dims.resize(n);
  for (auto& d : out.dims) {
    d.resize(varint::get(p));
    for (auto& v : d) v = varint::unzigzag(varint::get(p));
  }
  std::size_t nt = varint::get(p);
  out.types.resize(nt);
  for (auto& t : out.types) t = ref_text(p);
  out.concrete.clear();
  const std::string packed = ref_text(p);
  if (!packed.empty()) {
    std::size_t from = 0;
    for (;;) {
      const std::size_t at = packed.find('\x1f', from);
      out.concrete.push_back(packed.substr(from, at == std::string::npos ? std::string::npos : at - from));
      if (at == std::string::npos) break;
      from = at + 1;
    }
  }
}

std::string pack_concrete(const std::vector<std::string>& values, std::size_t n, std::size_t max_values) {
  std::string packed;
  n = std::min({n, values.size(), max_values});
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) packed += '\x1f';
    if (values[i].size() <= kMaxConcreteChars && values[i].find('\x1f') == std::string::npos) {
      packed += values[i];
      any = any || !values[i].empty();
    }
  }
  return any ? packed : std::string();
}

ScratchDb& OpTable::scratch() {
  if (!scratch_) {
    scratch_ = std::make_unique<ScratchDb>(label_);
    scratch_->exec("CREATE TABLE ops (ext INTEGER PRIMARY KEY, tid INTEGER, ts REAL, end_ts REAL, rec BLOB)");
    insert_ = Stmt(scratch_->prepare("INSERT OR REPLACE INTO ops VALUES (?1, ?2, ?3, ?4, ?5)"));
    lookup_ = Stmt(scratch_->prepare("SELECT rec FROM ops WHERE ext = ?1"));
  }
  return *scratch_;
}

void OpTable::spill() {
  ScratchDb& db = scratch();
  db.exec("BEGIN");
  auto put = [&](int64_t ext, uint64_t at) {
    uint32_t len;
    std::memcpy(&len, arena_.data() + at, 4);
    const char* rec = arena_.data() + at + 4;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(rec);
    uint64_t nv = varint::get(p);
    if (nv & 1) p += nv >> 1;
    int64_t tid = varint::unzigzag(varint::get(p));
    double ts = varint::get_double(p);
    double dur = varint::get_double(p);
    sqlite3_bind_int64(insert_, 1, ext);
    sqlite3_bind_int64(insert_, 2, tid);
    sqlite3_bind_double(insert_, 3, ts);
    sqlite3_bind_double(insert_, 4, ts + dur);
    sqlite3_bind_blob(insert_, 5, rec, static_cast<int>(len), SQLITE_STATIC);
    if (sqlite3_step(insert_) != SQLITE_DONE) db.fail("spilling framework ops");
    sqlite3_reset(insert_);
  };
  for (const auto& [ext, at] : sorted_) put(ext, at);
  for (const auto& [ext, at] : unordered_) put(ext, at);
  db.exec("COMMIT");
  arena_.clear();
  arena_.shrink_to_fit();
  sorted_.clear();
  sorted_.shrink_to_fit();
  unordered_.clear();
  indexed_ = false;
}

bool OpTable::find(int64_t ext_id, OpInfo& out) {
  uint64_t at = UINT64_MAX;
  if (auto it = unordered_.find(ext_id); it != unordered_.end()) {
    at = it->second;
  } else {
    auto it2 = std::upper_bound(sorted_.begin(), sorted_.end(), ext_id,
                                [](int64_t v, const std::pair<int64_t, uint64_t>& e) { return v < e.first; });
    if (it2 != sorted_.begin() && std::prev(it2)->first == ext_id) at = std::prev(it2)->second;
  }
  if (at != UINT64_MAX) {
    uint32_t len;
    std::memcpy(&len, arena_.data() + at, 4);
    decode(std::string_view(arena_.data() + at + 4, len), out);
    return true;
  }
  if (!scratch_) return false;
  sqlite3_bind_int64(lookup_, 1, ext_id);
  bool found = false;
  if (sqlite3_step(lookup_) == SQLITE_ROW) {
    const void* blob = sqlite3_column_blob(lookup_, 0);
    int n = sqlite3_column_bytes(lookup_, 0);
    decode(std::string_view(static_cast<const char*>(blob), static_cast<std::size_t>(n)), out);
    found = true;
  }
  sqlite3_reset(lookup_);
  return found;
}

bool OpTable::find_enclosing(int64_t tid, double t, OpInfo& out) {
  if (count_ == 0) return false;
  if (!arena_.empty() || !scratch_) spill();
  if (!indexed_) {
    scratch_->exec("CREATE INDEX IF NOT EXISTS ops_time ON ops (tid, ts)");
    enclosing_ = Stmt(
        scratch_->prepare("SELECT rec FROM ops WHERE tid = ?1 AND ts <= ?2 AND end_ts >= ?2 ORDER BY ts DESC LIMIT 1"));
    indexed_ = true;
  }
  sqlite3_bind_int64(enclosing_, 1, tid);
  sqlite3_bind_double(enclosing_, 2, t);
  bool found = false;
  if (sqlite3_step(enclosing_) == SQLITE_ROW) {
    const void* blob = sqlite3_column_blob(enclosing_, 0);
    int n = sqlite3_column_bytes(enclosing_, 0);
    decode(std::string_view(static_cast<const char*>(blob), static_cast<std::size_t>(n)), out);
    found = true;
  }
  sqlite3_reset(enclosing_);
  return found;
}

}  // namespace perfloom::storage
