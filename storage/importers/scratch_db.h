#pragma once
// A private, temporary, on-disk SQLite database (deleted when closed): where importers park what
// does not fit their memory budget. SQLite's page cache bounds the memory it takes.
#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace perfloom::storage {

class ScratchDb {
 public:
  explicit ScratchDb(std::string label);  // label names the imported file in errors
  ~ScratchDb();
  ScratchDb(const ScratchDb&) = delete;
  ScratchDb& operator=(const ScratchDb&) = delete;

  void exec(const std::string& sql);
  sqlite3_stmt* prepare(const std::string& sql);  // owned by the caller: finalize it (Stmt does)
  sqlite3* handle() const { return db_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string label_;
  sqlite3* db_ = nullptr;
};

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, const std::string& sql);  // throws std::runtime_error with SQLite's message
  explicit Stmt(sqlite3_stmt* st) : st_(st) {}
  ~Stmt();
  Stmt(Stmt&& o) noexcept : st_(o.st_) { o.st_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return st_; }
  operator sqlite3_stmt*() const { return st_; }

 private:
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace perfloom::storage
