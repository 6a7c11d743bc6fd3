#pragma once
// The SQLite schema as an ordered list of migrations. The database's schema
// version is `PRAGMA user_version`: 0 for a new file, N after migration N.
// Opening applies the missing migrations in order, each in its own
// transaction together with its user_version bump, so a crash leaves the
// database at a whole version. A database newer than this build is refused.
//
// Rule for changes: never edit a released migration; append a new one.
// docs/store.md describes the resulting tables and views.
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite_handle.hpp"

namespace autotune::store::schema {

struct Migration {
  int version;  // user_version after applying it
  std::string description;
  std::string sql;
};

const std::vector<Migration>& migrations();
int latest_version();

// Brings the database to `target` (default: the latest version). Throws
// UserError when the database is newer than this build, or when a file
// without a schema version already holds tables (not an autotune database).
void migrate(sqlite::Connection& connection, std::optional<int> target = std::nullopt);

}  // namespace autotune::store::schema
