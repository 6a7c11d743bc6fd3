#pragma once
// Small RAII wrappers over the SQLite C API: a connection, a prepared
// statement, a transaction. Errors become exceptions: problems of the
// environment (cannot open, not a database, locked too long, disk full,
// read-only) are UserErrors naming the file; anything else (SQL errors,
// constraint violations) is an InternalError, since it means a caller or this
// module broke an invariant.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "store/records.hpp"

namespace autotune::store::sqlite {

// A lock another connection holds that the busy timeout did not cover
// (SQLite does not wait where waiting could deadlock, e.g. taking the
// exclusive lock that changing the journal mode needs).
class DatabaseBusy : public UserError {
 public:
  using UserError::UserError;
};

class Connection {
 public:
  // Opens `path` ("" or ":memory:" for a private in-memory database).
  // `create` allows creating a missing file.
  Connection(const std::string& path, bool create);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements that return no rows of interest.
  void execute(const std::string& sql);
  // The first column of the first row of a single-value query (a PRAGMA).
  int64_t query_int(const std::string& sql);
  std::string query_text(const std::string& sql);
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }

  // Throws the exception matching `code` (see the header comment).
  [[noreturn]] void fail(int code, std::string_view doing) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(Connection& connection, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value ? 1 : 0)); }
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  // A null JSON value binds SQL NULL; anything else its compact text.
  Statement& bind(int index, const Json& value);
  Statement& bind(int index, const std::optional<int64_t>& value);
  Statement& bind_null(int index);

  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  // Columns are 0-based, as in SQLite.
  bool is_null(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;  // "" for NULL
  Json json(int column) const;         // null for NULL
  std::optional<int64_t> optional_int64(int column) const;

 private:
  Connection& connection_;
  sqlite3_stmt* statement_ = nullptr;
};

// BEGIN IMMEDIATE on construction (takes the write lock at once, so a
// concurrent writer waits on the busy timeout instead of failing on upgrade),
// ROLLBACK on destruction unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool done_ = false;
};

}  // namespace autotune::store::sqlite
