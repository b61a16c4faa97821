#include "storage/database.h"

#include <cstdlib>
#include <sqlite3.h>

#include "storage/schema.h"

namespace perfloom::storage {

std::filesystem::path Database::default_path() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "perfloom" / "perfloom.db";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "share" / "perfloom" / "perfloom.db";
  return std::filesystem::current_path() / "perfloom.db";
}

Database::Database(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw DatabaseError(path.string() + ": cannot open database: " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    // The first read of the schema is where a foreign file shows itself ("file is not a database").
    schema_version();
    exec("PRAGMA foreign_keys = ON");
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = NORMAL");
    migrate();
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Database::~Database() {
  if (db_) sqlite3_close(db_);
}

int Database::schema_version() const {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &st, nullptr) != SQLITE_OK)
    throw DatabaseError(path_.string() + ": not a perfloom database: " + sqlite3_errmsg(db_));
  int v = 0;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) throw DatabaseError(path_.string() + ": not a perfloom database: " + sqlite3_errmsg(db_));
  return v;
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw DatabaseError(path_.string() + ": " + msg);
  }
}

void Database::transaction(const std::function<void()>& body) {
  exec("BEGIN IMMEDIATE");
  try {
    body();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Database::migrate() {
  const int have = schema_version();
  if (have > kSchemaVersion)
    throw DatabaseError(path_.string() + ": schema version " + std::to_string(have) +
                        " is newer than this perfloom understands (" + std::to_string(kSchemaVersion) +
                        "); use a newer perfloom");
  if (have == 0) {
    // A brand-new file has no tables; a non-empty file without our version is someone else's.
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
    sqlite3_step(st);
    int tables = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (tables > 0) throw DatabaseError(path_.string() + ": is an SQLite file but not a perfloom database");
  }
  const auto& steps = schema_migrations();
  for (int v = have; v < kSchemaVersion; ++v) {
    transaction([&] {
      exec(steps.at(static_cast<std::size_t>(v)));
      exec("PRAGMA user_version = " + std::to_string(v + 1));
    });
  }
}

}  // namespace perfloom::storage
