#pragma once
// The PostgreSQL schema as an ordered list of migrations, version for version
// the same tables and views as the SQLite schema (store/schema.hpp), written
// in PostgreSQL's dialect: identity columns for ids, JSON columns as text
// (read through ::jsonb in the views), DOUBLE PRECISION for reals.
//
// The database's schema version is the one row of table autotune_schema.
// Opening applies the missing migrations in order, each in one transaction
// with its version bump, under an advisory lock, so openers on several hosts
// at once migrate exactly once. A database newer than this build is refused.
#include <functional>
#include <string>
#include <vector>

#include "store/schema.hpp"

namespace pqxx {
class transaction_base;
}  // namespace pqxx

namespace autotune::store::postgres_schema {

const std::vector<schema::Migration>& migrations();

// The database's version, 0 for one without autotune tables. A stored
// version that is not a whole number >= 0 is a UserError naming `database`.
int version(pqxx::transaction_base& txn, const std::string& database);

// Brings the database at `database` (for messages) to the latest version.
// `run` runs one transaction (the store's reconnecting wrapper).
void migrate(const std::string& database,
             const std::function<void(const std::function<void(pqxx::transaction_base&)>&)>& run);

}  // namespace autotune::store::postgres_schema
