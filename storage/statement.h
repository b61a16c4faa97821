#pragma once
// A statement prepared on a perfloom database; a failure names the database file and SQLite's reason.
#include <sqlite3.h>

#include <string>

#include "storage/database.h"
#include "storage/importers/scratch_db.h"

namespace perfloom::storage {

inline Stmt prepare(const Database& db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw DatabaseError(db.path().string() + ": " + sqlite3_errmsg(db.handle()));
  return Stmt(st);
}

}  // namespace perfloom::storage
