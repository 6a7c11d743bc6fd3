#include "cli/store_options.hpp"

namespace autotune::cli {

std::string DatabaseOption::path() const { return store::resolve_database_path(flag); }

void add_database_option(CLI::App& command, DatabaseOption& option) {
  command.add_option("--db", option.flag, "Decision database (default: $AUTOTUNE_DB, else ./autotune.db)");
}

std::unique_ptr<store::Store> open_store_for_reading(const DatabaseOption& option) {
  return store::open_store(option.path(), store::OpenMode::existing);
}

std::unique_ptr<store::Store> open_store_for_writing(const DatabaseOption& option) {
  return store::open_store(option.path(), store::OpenMode::create);
}

}  // namespace autotune::cli
