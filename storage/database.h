#pragma once
// The SQLite database: one file, WAL, foreign keys on, schema versioned by PRAGMA user_version
// and brought forward by migrations. Each thread opens its own Database (DESIGN.md, Threads).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

struct sqlite3;

namespace perfloom::storage {

class DatabaseError : public std::runtime_error {
 public:
  explicit DatabaseError(const std::string& what, int sqlite_code = 0)
      : std::runtime_error(what), sqlite_code_(sqlite_code) {}
  // SQLite's primary result code where SQLite failed (SQLITE_BUSY, ...), else 0.
  int sqlite_code() const { return sqlite_code_; }

 private:
  int sqlite_code_;
};

class Database {
 public:
  // The per-user default: $XDG_DATA_HOME/perfloom/perfloom.db, else ~/.local/share/perfloom/.
  static std::filesystem::path default_path();

  // Opens (creating if needed) and migrates to the current schema. Refuses a file that is not an
  // SQLite database, not perfloom's, or at a schema version this build does not read, before
  // writing anything to it. A new file is created 0600, its missing folders 0700. A read-only file
  // (no write permission, or no write bit at all) is opened read-only, if it needs no migration.
  explicit Database(const std::filesystem::path& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  static constexpr int kSchemaVersion = 3;
  static constexpr int kBusyTimeoutMs = 5000;  // a statement's wait for another writer, by default
  int schema_version() const;
  const std::filesystem::path& path() const { return path_; }
  // Opened read-only: every write fails (SQLITE_READONLY); callers skip what they can do without.
  bool read_only() const { return read_only_; }
  sqlite3* handle() const { return db_; }

  // How long a statement waits for another connection's write lock before SQLITE_BUSY (5 s unless
  // set). wait_for_writers: until the lock is free, up to `max_ms`, unless `cancel` is set (it is
  // asked every 20 ms); `waiting` is called once when the wait begins. Both last until changed.
  void set_busy_timeout_ms(int ms);
  void wait_for_writers(int64_t max_ms, const std::atomic<bool>* cancel, std::function<void()> waiting = {});
  // Puts the default busy timeout back (replacing a wait_for_writers handler) when it goes out of scope.
  struct DefaultBusyTimeoutOnExit {
    Database& db;
    ~DefaultBusyTimeoutOnExit() { db.set_busy_timeout_ms(kBusyTimeoutMs); }
  };

  void exec(const std::string& sql);
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; any exception rolls everything back.
  void transaction(const std::function<void()>& body);

 private:
  void migrate();
  void check_is_perfloom() const;
  struct Waiter {
    int64_t max_ms = 0;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void()> waiting;
  };
  static int busy_wait(void* waiter, int count);
  std::filesystem::path path_;
  bool read_only_ = false;
  sqlite3* db_ = nullptr;
  Waiter waiter_;
};

}  // namespace perfloom::storage
