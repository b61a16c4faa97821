#include <gtest/gtest.h>

#include <sqlite3.h>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "storage/database.h"

using namespace perfloom::storage;
namespace fs = std::filesystem;

namespace {
fs::path tempPath(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("perfloom-storage-" + name);
  fs::remove(p);
  fs::remove(p.string() + "-wal");
  fs::remove(p.string() + "-shm");
  return p;
}

int count(Database& db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr), SQLITE_OK);
  sqlite3_step(st);
  int n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return n;
}
}  // namespace

TEST(Database, CreatesSchemaWithWalAndForeignKeys) {
  fs::path p = tempPath("new.db");
  Database db(p);
  EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
                  "('sources','kernels','measurements','predictions','simulations','simulation_requests')"),
            6);
  EXPECT_EQ(count(db, "PRAGMA foreign_keys"), 1);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "PRAGMA journal_mode", -1, &st, nullptr);
  sqlite3_step(st);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
}

TEST(Database, ReopeningKeepsDataAndVersion) {
  fs::path p = tempPath("reopen.db");
  {
    Database db(p);
    db.exec("INSERT INTO sources(path, format, content_hash, bytes) VALUES ('a.json','torch',  'h1', 10)");
  }
  Database db(p);
  EXPECT_EQ(count(db, "SELECT count(*) FROM sources"), 1);
}

TEST(Database, TransactionRollsBackOnError) {
  fs::path p = tempPath("tx.db");
  Database db(p);
  EXPECT_THROW(db.transaction([&] {
    db.exec("INSERT INTO sources(path, format, content_hash, bytes) VALUES ('a','x','h1',1)");
    db.exec("INSERT INTO kernels(source_id, seq, name) VALUES (999, 0, 'k')");  // no such source
  }),
               DatabaseError);
  EXPECT_EQ(count(db, "SELECT count(*) FROM sources"), 0);
}

TEST(Database, RefusesForeignFilesWithTheirName) {
  fs::path text = tempPath("not-a-db.db");
  std::ofstream(text) << "this is plain text, not SQLite, and long enough to have a header......";
  try {
    Database db(text);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("not-a-db.db"), std::string::npos) << e.what();
  }
  fs::path other = tempPath("other-app.db");
  {
    sqlite3* h = nullptr;
    sqlite3_open(other.c_str(), &h);
    sqlite3_exec(h, "CREATE TABLE customers(id INTEGER)", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  try {
    Database db(other);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("not a perfloom database"), std::string::npos) << e.what();
  }
}

TEST(Database, RefusesANewerSchema) {
  fs::path p = tempPath("future.db");
  {
    Database db(p);
    db.exec("PRAGMA user_version = 99");
  }
  try {
    Database db(p);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST(Database, ConnectionsCreatingOneNewFileAtOnceMigrateItOnce) {
  // A GUI's workers, or the GUI and a CLI import, may open a brand-new database together: each
  // migration step re-reads the version under the write lock, so none repeats a step or mistakes
  // the other's half-made file for a foreign one.
  for (int round = 0; round < 10; ++round) {
    const fs::path p = tempPath("concurrent-" + std::to_string(round) + ".db");
    std::vector<std::string> errors(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        try {
          perfloom::storage::Database db(p);
          if (db.schema_version() != perfloom::storage::Database::kSchemaVersion) errors[t] = "wrong version";
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (const auto& e : errors) EXPECT_EQ(e, "") << "round " << round;
  }
}
