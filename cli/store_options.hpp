#pragma once
// The --db option shared by every command that uses the decision store:
// `--db F`, else the AUTOTUNE_DB environment variable, else ./autotune.db.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace autotune::cli {

struct DatabaseOption {
  std::optional<std::string> flag;
  // The resolved path (flag, environment, default).
  std::string path() const;
};

void add_database_option(CLI::App& command, DatabaseOption& option);

// What `run` and `sweep` accept as --jobs: 1 to 256 local workers, or 0 (all
// measuring left to `autotune worker` processes) with a PostgreSQL --db.
std::string jobs_accepted_text();

// Overwrites, in place, the password of every PostgreSQL URL among the
// command-line arguments (user information and password= parameters) with
// '*', so that /proc/PID/cmdline and ps no longer show it once the arguments
// are parsed. Workers should still take the password from PGPASSFILE
// (~/.pgpass) or from AUTOTUNE_DB, never the command line: the arguments are
// readable by other local users until this runs.
void hide_database_passwords(int argc, char** argv);

// For reading commands: the database must exist and be an autotune database
// (nothing is created or written into a file autotune did not make); a
// missing or unusable file is a UserError of one line.
std::unique_ptr<store::Store> open_store_for_reading(const DatabaseOption& option);
// For writing commands: created when missing.
std::unique_ptr<store::Store> open_store_for_writing(const DatabaseOption& option);

// On SIGINT or SIGTERM (core/interrupt), from `run` and `sweep`: a running
// run (`run_id` > 0) is recorded as interrupted and the store frozen (no
// later write: the process is exiting), and stderr says how to go on
// (`resume_command`). Never throws.
void record_interruption(store::Store& store, int64_t run_id, int signal, const std::string& resume_command);
// The same for every run in progress (ids > 0; a suite's runs going at once,
// a model run and its kernel run): each one still running is recorded as
// interrupted. The store is frozen with the first; the others are recorded
// through a connection of their own to `database` (the --db location as
// given), opened once nothing of this process writes through `store` any more.
void record_interruption(store::Store& store, const std::string& database,
                         const std::vector<int64_t>& run_ids, int signal, const std::string& resume_command);

}  // namespace autotune::cli
