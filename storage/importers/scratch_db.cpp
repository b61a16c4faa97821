#include "storage/importers/scratch_db.h"

#include <sqlite3.h>
#include <stdexcept>

#include "storage/importers/importer.h"

namespace perfloom::storage {

ScratchDb::ScratchDb(std::string label) : label_(std::move(label)) {
  // An empty file name: a private temporary database on disk, removed when closed.
  if (sqlite3_open_v2("", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw ImportError(label_, "", "cannot create a temporary database for the import");
  }
  exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -16384; PRAGMA temp_store = FILE");
}

ScratchDb::~ScratchDb() {
  if (db_) sqlite3_close(db_);
}

void ScratchDb::fail(const std::string& what) const {
  throw ImportError(label_, "", "temporary database: " + what + ": " + sqlite3_errmsg(db_));
}

void ScratchDb::exec(const std::string& sql) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql.substr(0, 40));
}

sqlite3_stmt* ScratchDb::prepare(const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail(sql.substr(0, 40));
  return st;
}

Stmt::Stmt(sqlite3* db, const std::string& sql) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string(sqlite3_errmsg(db)) + " (in: " + sql.substr(0, 60) + ")");
}

Stmt::~Stmt() {
  if (st_) sqlite3_finalize(st_);
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (st_) sqlite3_finalize(st_);
    st_ = o.st_;
    o.st_ = nullptr;
  }
  return *this;
}

}  // namespace perfloom::storage
