#include "storage/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

namespace {

// Creates the missing folders above a database, each 0700 (XDG base directory practice: the
// per-user data folder holds the user's traces). Folders that exist are left as they are; a
// folder that cannot be made shows up as the open's error.
void create_private_dirs(const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.empty() || std::filesystem::exists(dir, ec)) return;
  if (dir.has_parent_path() && dir.parent_path() != dir) create_private_dirs(dir.parent_path());
  ::mkdir(dir.c_str(), 0700);
}

// A file its owner marked read-only (no write bit, chmod 0444) is opened read-only even where the
// process could write it anyway (root), as is one this process may not write.
bool marked_read_only(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || ::access(path.c_str(), W_OK) != 0;
}

std::string readable_versions() { return "versions 1 to " + std::to_string(Database::kSchemaVersion); }

}  // namespace

Database::Database(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!exists) {
    if (path.has_parent_path()) create_private_dirs(path.parent_path());
    // Created here, 0600, rather than by SQLite (0644): its -wal and -shm files take its mode.
    if (const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0) ::close(fd);
  }
  read_only_ = exists && marked_read_only(path);
  const int flags =
      (read_only_ ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw DatabaseError(path.string() + ": cannot open database" + (read_only_ ? " (read-only)" : "") + ": " + msg);
  }
  if (!read_only_ && sqlite3_db_readonly(db_, "main") == 1) read_only_ = true;
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // While another connection turns a brand-new file into WAL mode, SQLite answers "database is
  // locked" at once rather than through the busy handler: opening retries that for a few seconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    try {
      // Nothing is written (no WAL switch, no migration) until the file is known to be perfloom's.
      check_is_perfloom();
      exec("PRAGMA foreign_keys = ON");
      if (!read_only_) {
        exec("PRAGMA journal_mode = WAL");
        exec("PRAGMA synchronous = NORMAL");
        migrate();
      }
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

void Database::check_is_perfloom() const {
  // One statement, so one snapshot: another connection may be creating the schema right now.
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db_,
                              "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM "
                              "sqlite_master), (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                              "name = 'sources')",
                              -1, &st, nullptr);
  int version = 0, objects = 0, sources = 0;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      version = sqlite3_column_int(st, 0);
      objects = sqlite3_column_int(st, 1);
      sources = sqlite3_column_int(st, 2);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_OK) {
    rc &= 0xff;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) throw DatabaseError(path_.string() + ": " + sqlite3_errmsg(db_), rc);
    if (read_only_ && (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN))
      throw DatabaseError(path_.string() + ": is read-only and cannot be read as it is: " + sqlite3_errmsg(db_), rc);
    throw DatabaseError(path_.string() + ": not a perfloom database: " + sqlite3_errmsg(db_), rc);
  }
  const std::string name = path_.string();
  if (version > kSchemaVersion)
    throw DatabaseError(name + ": schema version " + std::to_string(version) +
                        " is newer than this perfloom understands (it reads " + readable_versions() +
                        "); use a newer perfloom");
  if (version < 0)
    throw DatabaseError(name + ": schema version " + std::to_string(version) +
                        " is not one perfloom writes (this build reads " + readable_versions() +
                        "): not a perfloom database, or a damaged one");
  if (version == 0 && objects > 0) throw DatabaseError(name + ": is an SQLite file but not a perfloom database");
  if (version > 0 && sources == 0)
    throw DatabaseError(name + ": is an SQLite file but not a perfloom database (user_version " +
                        std::to_string(version) + ", but no perfloom tables)");
  if (read_only_ && version != kSchemaVersion)
    throw DatabaseError(name + ": is read-only, and " +
                        (version == 0 ? std::string("empty")
                                      : "at schema version " + std::to_string(version) + ", which needs upgrading to " +
                                            std::to_string(kSchemaVersion)) +
                        "; make it writable or open another database");
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

void Database::set_busy_timeout_ms(int ms) { sqlite3_busy_timeout(db_, ms); }

int Database::busy_wait(void* p, int count) {
  const Waiter& w = *static_cast<const Waiter*>(p);
  if (w.cancel && w.cancel->load(std::memory_order_relaxed)) return 0;
  if (count == 0 && w.waiting) w.waiting();
  constexpr int kStepMs = 20;
  if (static_cast<int64_t>(count) * kStepMs >= w.max_ms) return 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(kStepMs));
  return 1;
}

void Database::wait_for_writers(int64_t max_ms, const std::atomic<bool>* cancel, std::function<void()> waiting) {
  waiter_ = {max_ms, cancel, std::move(waiting)};
  sqlite3_busy_handler(db_, &Database::busy_wait, &waiter_);
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
  // check_is_perfloom() has vetted the version; another connection may change it meanwhile.
  auto refuse_newer = [&](int have) {
    if (have > kSchemaVersion || have < 0)
      throw DatabaseError(path_.string() + ": schema version " + std::to_string(have) +
                          " is not one this perfloom reads (" + readable_versions() + ")");
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
