#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace {
std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
std::string journal_mode_of(const fs::path& p) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(p.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, nullptr);
  std::string mode = sqlite3_step(st) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
  sqlite3_finalize(st);
  sqlite3_close(h);
  return mode;
}
}  // namespace

TEST(Database, AForeignFileIsRefusedBeforeAnythingIsWrittenToIt) {
  fs::path other = tempPath("foreign-delete-mode.db");
  {
    sqlite3* h = nullptr;
    sqlite3_open(other.c_str(), &h);
    sqlite3_exec(h,
                 "PRAGMA journal_mode = DELETE; CREATE TABLE customers(id INTEGER); INSERT INTO customers VALUES (7)",
                 nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  const std::string before = bytes_of(other);
  ASSERT_EQ(journal_mode_of(other), "delete");
  // Also one that claims a perfloom schema version but holds none of perfloom's tables.
  fs::path claims = tempPath("foreign-claims-version.db");
  fs::copy_file(other, claims);
  {
    sqlite3* h = nullptr;
    sqlite3_open(claims.c_str(), &h);
    sqlite3_exec(h, "PRAGMA user_version = 1", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  const std::string claims_before = bytes_of(claims);
  for (const auto& [p, original] : {std::pair{other, before}, std::pair{claims, claims_before}}) {
    try {
      Database db(p);
      FAIL() << p;
    } catch (const DatabaseError& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": is an SQLite file but not a perfloom database"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(bytes_of(p), original) << p;
    EXPECT_EQ(journal_mode_of(p), "delete") << p;
    EXPECT_FALSE(fs::exists(p.string() + "-wal")) << p;
    EXPECT_FALSE(fs::exists(p.string() + "-shm")) << p;
  }
}

TEST(Database, AnUnknownSchemaVersionIsNamedWithTheVersionsThisBuildReads) {
  for (const int version : {-5, -1, 99}) {
    fs::path p = tempPath("version" + std::to_string(version) + ".db");
    {
      Database db(p);
      db.exec("PRAGMA user_version = " + std::to_string(version));
    }
    try {
      Database db(p);
      FAIL() << version;
    } catch (const DatabaseError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(p.string() + ": schema version " + std::to_string(version) + " "), std::string::npos) << what;
      EXPECT_NE(what.find("versions 1 to " + std::to_string(Database::kSchemaVersion)), std::string::npos) << what;
      EXPECT_EQ(what.find("range_check"), std::string::npos) << what;
    }
  }
}

TEST(Database, TheDefaultDatabaseIsPrivateToItsUser) {
  const fs::path xdg = tempPath("xdg-data");
  fs::remove_all(xdg);
  fs::create_directories(xdg);
  const char* old = std::getenv("XDG_DATA_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_DATA_HOME", xdg.c_str(), 1);
  const fs::path p = Database::default_path();
  EXPECT_EQ(p, xdg / "perfloom" / "perfloom.db");
  const mode_t old_umask = ::umask(022);  // the common default, under which SQLite alone gives 0644
  { Database db(p); }
  ::umask(old_umask);
  if (old)
    ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(fs::status(xdg / "perfloom").permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(p).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  // Its WAL files take the database's mode.
  {
    Database db(p);
    db.exec("INSERT INTO sources(path, format, content_hash, bytes) VALUES ('a','x','h1',1)");
    if (fs::exists(p.string() + "-wal")) {
      EXPECT_EQ(fs::status(p.string() + "-wal").permissions(), fs::perms::owner_read | fs::perms::owner_write);
    }
  }
  fs::remove_all(xdg);
}

TEST(Database, AReadOnlyFileOpensReadOnlyOrSaysItIsReadOnly) {
  fs::path p = tempPath("read-only.db");
  {
    Database db(p);
    db.exec("INSERT INTO sources(path, format, content_hash, bytes) VALUES ('a','x','h1',1)");
  }
  fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  {
    Database db(p);
    EXPECT_TRUE(db.read_only());
    EXPECT_EQ(count(db, "SELECT count(*) FROM sources"), 1);
    EXPECT_THROW(db.exec("INSERT INTO sources(path, format, content_hash, bytes) VALUES ('b','x','h2',1)"),
                 DatabaseError);
  }
  // One that would need a migration cannot be opened: the message says why.
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
  {
    Database db(p);
    EXPECT_FALSE(db.read_only());
    db.exec("PRAGMA user_version = 1");
  }
  fs::permissions(p, fs::perms::owner_read);
  try {
    Database db(p);
    FAIL();
  } catch (const DatabaseError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(p.string() + ": is read-only"), std::string::npos) << what;
    EXPECT_EQ(what.find("not a perfloom database"), std::string::npos) << what;
  }
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
}
