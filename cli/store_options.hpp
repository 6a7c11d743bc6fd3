#pragma once
// The --db option shared by every command that uses the decision store:
// `--db F`, else the AUTOTUNE_DB environment variable, else ./autotune.db.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "store/store.hpp"

namespace autotune::cli {

struct DatabaseOption {
  std::optional<std::string> flag;
  // The resolved path (flag, environment, default).
  std::string path() const;
};

void add_database_option(CLI::App& command, DatabaseOption& option);

// For reading commands: the database must exist (nothing is created); a
// missing or unusable file is a UserError of one line.
std::unique_ptr<store::Store> open_store_for_reading(const DatabaseOption& option);
// For writing commands: created when missing.
std::unique_ptr<store::Store> open_store_for_writing(const DatabaseOption& option);

}  // namespace autotune::cli
