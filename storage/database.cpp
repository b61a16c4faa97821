#include "storage/database.h"

#include <sqlite3.h>
#include <chrono>
#include <cstdlib>
#include <thread>

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
  // While another connection turns a brand-new file into WAL mode, SQLite answers "database is
  // locked" at once rather than through the busy handler: opening retries that for a few seconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    try {
      // The first read of the schema is where a foreign file shows itself ("file is not a database").
      schema_version();
      exec("PRAGMA foreign_keys = ON");
      exec("PRAGMA journal_mode = WAL");
      exec("PRAGMA synchronous = NORMAL");
      migrate();
      break;
    } catch (const DatabaseError& e) {
      const int rc = e.sqlite_code();
      if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
}

Database::~Database() {
  if (db_) sqlite3_close(db_);
}

int Database::schema_version() const {
  auto fail = [&](int rc) {
    rc &= 0xff;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) throw DatabaseError(path_.string() + ": " + sqlite3_errmsg(db_), rc);
    throw DatabaseError(path_.string() + ": not a perfloom database: " + sqlite3_errmsg(db_), rc);
  };
  sqlite3_stmt* st = nullptr;
  if (const int rc = sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &st, nullptr); rc != SQLITE_OK) fail(rc);
  int v = 0;
  const int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) fail(rc);
  return v;
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  if (const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw DatabaseError(path_.string() + ": " + msg, rc & 0xff);
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
  auto refuse_newer = [&](int have) {
    if (have > kSchemaVersion)
      throw DatabaseError(path_.string() + ": schema version " + std::to_string(have) +
                          " is newer than this perfloom understands (" + std::to_string(kSchemaVersion) +
                          "); use a newer perfloom");
  };
  const int seen = schema_version();
  refuse_newer(seen);
  if (seen == kSchemaVersion) return;  // the usual case: nothing to do, no write lock taken
  // One step per transaction. Each step re-reads the version under the write lock (BEGIN
  // IMMEDIATE): another connection (a GUI worker, a CLI import in another process) may be creating
  // or migrating the same file at this moment, and must not be repeated or mistaken for a foreign
  // file.
  const auto& steps = schema_migrations();
  for (;;) {
    bool done = false;
    transaction([&] {
      const int have = schema_version();
      refuse_newer(have);
      if (have == 0) {
        // A brand-new file has no tables; a non-empty file without our version is someone else's.
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
        sqlite3_step(st);
        const int tables = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (tables > 0) throw DatabaseError(path_.string() + ": is an SQLite file but not a perfloom database");
      }
      if (have >= kSchemaVersion) {
        done = true;
        return;
      }
      exec(steps.at(static_cast<std::size_t>(have)));
      exec("PRAGMA user_version = " + std::to_string(have + 1));
    });
    if (done) return;
  }
}

}  // namespace perfloom::storage
