#include "cli/store_options.hpp"

#include <csignal>
#include <cstdio>

namespace autotune::cli {

std::string DatabaseOption::path() const { return store::resolve_database_path(flag); }

void add_database_option(CLI::App& command, DatabaseOption& option) {
  command.add_option("--db", option.flag,
                     "Decision database: a file, or postgresql://USER@HOST[:PORT]/DBNAME (default: "
                     "$AUTOTUNE_DB, else ./autotune.db)");
}

std::unique_ptr<store::Store> open_store_for_reading(const DatabaseOption& option) {
  return store::open_store(option.path(), store::OpenMode::existing);
}

std::unique_ptr<store::Store> open_store_for_writing(const DatabaseOption& option) {
  return store::open_store(option.path(), store::OpenMode::create);
}

void record_interruption(store::Store& store, int64_t run_id, int signal, const std::string& resume_command) {
  if (run_id > 0) {
    try {
      store.freeze_interrupted(run_id,
                               std::string("interrupted by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\nautotune: the interruption could not be recorded: %s\n", e.what());
    }
    std::fprintf(stderr,
                 "\nautotune: interrupted; run %lld keeps every committed trial; continue with\n  %s\n",
                 static_cast<long long>(run_id), resume_command.c_str());
  } else {
    std::fprintf(stderr, "\nautotune: interrupted\n");
  }
  std::fflush(stderr);
}

}  // namespace autotune::cli
