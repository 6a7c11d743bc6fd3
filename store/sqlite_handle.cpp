#include "store/sqlite_handle.hpp"

#include <filesystem>

#include "core/error.hpp"

namespace autotune::store::sqlite {
namespace {

// Errors that come from the file or from other processes, not from this code.
bool is_environment_error(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return true;
    default:
      return false;
  }
}

std::string describe(int code, const std::string& path) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "database " + path + " is locked by another writer (waited for the busy timeout)";
    case SQLITE_NOTADB:
      return path + " is not an SQLite database";
    case SQLITE_CORRUPT:
      return "database " + path + " is corrupt";
    case SQLITE_FULL:
      return "cannot write database " + path + ": disk full";
    // SQLite keeps a write-ahead log and its index (-wal, -shm) beside the file: even reading needs
    // a folder it may write in.
    case SQLITE_READONLY:
      return "cannot write database " + path +
             ": it, or its folder, is read-only (reading needs a writable folder too, for SQLite's -wal and "
             "-shm files)";
    case SQLITE_CANTOPEN:
      return "cannot open database " + path +
             " (its folder must exist and be writable, for SQLite's -wal and -shm files)";
    case SQLITE_IOERR:
      return "database " + path + ": disk I/O error (is the disk full?)";
    default:
      return "database " + path + ": " + sqlite3_errstr(code);
  }
}

}  // namespace

Connection::Connection(const std::string& path, bool create) : path_(path.empty() ? ":memory:" : path) {
  const bool in_memory = path_ == ":memory:";
  if (!create && !in_memory && !std::filesystem::exists(path_)) {
    throw UserError("database " + path_ + " does not exist (use --db or AUTOTUNE_DB to choose another)");
  }
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int code = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (code != SQLITE_OK) {
    std::string message = describe(code, path_);
    if (db_ != nullptr) {
      message += std::string(": ") + sqlite3_errmsg(db_);
      sqlite3_close(db_);
      db_ = nullptr;
    }
    throw UserError(message);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

void Connection::execute(const std::string& sql) {
  char* message = nullptr;
  const int code = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  if (code != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errstr(code);
    sqlite3_free(message);
    if (is_environment_error(code)) throw UserError(describe(code, path_));
    throw InternalError("database " + path_ + ": " + text + " in: " + sql.substr(0, 200));
  }
}

int64_t Connection::query_int(const std::string& sql) {
  Statement statement(*this, sql);
  AUTOTUNE_CHECK(statement.step(), "query returned no row: " + sql);
  return statement.int64(0);
}

std::string Connection::query_text(const std::string& sql) {
  Statement statement(*this, sql);
  AUTOTUNE_CHECK(statement.step(), "query returned no row: " + sql);
  return statement.text(0);
}

void Connection::fail(int code, std::string_view doing) const {
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED)
    throw DatabaseBusy(describe(code, path_));
  if (is_environment_error(code)) throw UserError(describe(code, path_));
  throw InternalError("database " + path_ + ": " + sqlite3_errmsg(db_) + " (" + std::string(doing) + ")");
}

Statement::Statement(Connection& connection, std::string_view sql) : connection_(connection) {
  const int code =
      sqlite3_prepare_v2(connection.get(), sql.data(), static_cast<int>(sql.size()), &statement_, nullptr);
  // autotune's statements name only what its schema has: a table or column
  // missing from a database at the current version was dropped outside autotune.
  if (code != SQLITE_OK && std::string_view(sqlite3_errmsg(connection.get())).starts_with("no such "))
    throw UserError("database " + connection.path() + " does not have the tables autotune writes (" +
                    sqlite3_errmsg(connection.get()) + "); was it changed outside autotune?");
  if (code != SQLITE_OK) connection.fail(code, "preparing " + std::string(sql.substr(0, 200)));
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int index, int64_t value) {
  const int code = sqlite3_bind_int64(statement_, index, value);
  if (code != SQLITE_OK) connection_.fail(code, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int code = sqlite3_bind_double(statement_, index, value);
  if (code != SQLITE_OK) connection_.fail(code, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  const int code =
      sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (code != SQLITE_OK) connection_.fail(code, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, const Json& value) {
  if (value.is_null()) return bind_null(index);
  // Replace invalid UTF-8 rather than fail: the text comes from kernels,
  // external commands and LLM replies, and losing a record is worse.
  return bind(index, std::string_view(value.dump(-1, ' ', false, Json::error_handler_t::replace)));
}

Statement& Statement::bind(int index, const std::optional<int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  const int code = sqlite3_bind_null(statement_, index);
  if (code != SQLITE_OK) connection_.fail(code, "binding a parameter");
  return *this;
}

bool Statement::step() {
  const int code = sqlite3_step(statement_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  connection_.fail(code, std::string("running ") + sqlite3_sql(statement_));
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }
int64_t Statement::int64(int column) const { return sqlite3_column_int64(statement_, column); }
double Statement::real(int column) const { return sqlite3_column_double(statement_, column); }

std::string Statement::text(int column) const {
  const auto* bytes = sqlite3_column_text(statement_, column);
  if (bytes == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(bytes), sqlite3_column_bytes(statement_, column));
}

Json Statement::json(int column) const {
  if (is_null(column)) return nullptr;
  const std::string source = text(column);
  Json value = Json::parse(source, nullptr, /*allow_exceptions=*/false);
  // Only an outside edit of the file can get here: the store writes valid JSON.
  if (value.is_discarded()) {
    throw UserError("database " + connection_.path() + " holds invalid JSON in column " +
                    sqlite3_column_name(statement_, column) + ": " + source.substr(0, 80));
  }
  return value;
}

std::optional<int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

Transaction::Transaction(Connection& connection) : connection_(connection) {
  connection_.execute("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.execute("COMMIT");
  done_ = true;
}

}  // namespace autotune::store::sqlite
