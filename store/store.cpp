#include "store/store.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "store/postgres_store.hpp"
#include "store/sqlite_store.hpp"

namespace autotune::store {

std::optional<Trial> Store::best_trial(int64_t run, const Ranking& ranking) {
  auto best = trials(run, 1, ranking);
  if (best.empty()) return std::nullopt;
  return best.front();
}

bool is_postgres_url(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::chrono::seconds outage_wait(OpenMode mode, const char* environment) {
  if (environment == nullptr || *environment == '\0')
    return mode == OpenMode::create ? PostgresStore::kWriterOutageWait : PostgresStore::kReaderOutageWait;
  const std::string text = environment;
  std::size_t used = 0;
  long long seconds = -1;
  try {
    seconds = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.find_first_not_of("0123456789") != std::string::npos || seconds < 0 ||
      seconds > 86400)
    throw UserError("AUTOTUNE_DB_OUTAGE_S=" + text +
                    " is not accepted; accepted: a whole number of seconds from 0 to 86400 (how long a "
                    "PostgreSQL store call waits for an unreachable server)");
  return std::chrono::seconds(seconds);
}

namespace {

// The SQLite file a location names ("sqlite:" dropped); none for ":memory:" or a PostgreSQL URL.
std::optional<std::string> sqlite_file(const std::string& location) {
  if (location == ":memory:" || is_postgres_url(location)) return std::nullopt;
  constexpr std::string_view kSqliteScheme = "sqlite:";
  if (location.rfind(kSqliteScheme, 0) == 0) return sqlite_file(location.substr(kSqliteScheme.size()));
  return location;
}

}  // namespace

std::unique_ptr<Store> open_store(const std::string& path, OpenMode mode) {
  if (is_postgres_url(path))
    return std::make_unique<PostgresStore>(path, outage_wait(mode, std::getenv("AUTOTUNE_DB_OUTAGE_S")));
  const auto file = sqlite_file(path);
  if (!file) return std::make_unique<MemoryStore>();
  return std::make_unique<SqliteStore>(*file, mode);
}

std::vector<KeptFile> database_files(const std::string& location) {
  const auto file = sqlite_file(location);
  if (!file || file->empty()) return {};
  std::vector<KeptFile> files{{*file, "the database it reads"}};
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    files.push_back({*file + suffix, "a file of the database it reads"});
  return files;
}

std::string resolve_database_path(const std::optional<std::string>& flag, const char* environment) {
  if (flag && !flag->empty()) return *flag;
  if (environment != nullptr && *environment != '\0') return environment;
  return "autotune.db";
}

std::string resolve_database_path(const std::optional<std::string>& flag) {
  return resolve_database_path(flag, std::getenv("AUTOTUNE_DB"));
}

}  // namespace autotune::store
