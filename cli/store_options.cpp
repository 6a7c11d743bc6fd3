#include "cli/store_options.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string_view>

#include "orchestrator/goal.hpp"

namespace autotune::cli {

std::string DatabaseOption::path() const { return store::resolve_database_path(flag); }

void add_database_option(CLI::App& command, DatabaseOption& option) {
  command.add_option("--db", option.flag,
                     "Decision database: a file, or postgresql://USER@HOST[:PORT]/DBNAME (default: "
                     "$AUTOTUNE_DB, else ./autotune.db)");
}

void hide_database_passwords(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    const std::string_view text(arg);
    for (const std::string_view scheme : {"postgresql://", "postgres://"}) {
      const auto start = text.find(scheme);
      if (start == std::string_view::npos) continue;
      const auto authority = start + scheme.size();
      const auto end = std::min(text.find_first_of("/?#", authority), text.size());
      const auto at = text.rfind('@', end);
      if (at != std::string_view::npos && at >= authority) {
        const auto colon = text.find(':', authority);
        if (colon != std::string_view::npos && colon < at) std::fill(arg + colon + 1, arg + at, '*');
      }
      for (auto key = text.find("password=", end); key != std::string_view::npos;
           key = text.find("password=", key + 1)) {
        if (key == 0 || (text[key - 1] != '?' && text[key - 1] != '&')) continue;
        const auto value = key + std::string_view("password=").size();
        const auto stop = std::min(text.find_first_of("&#", value), text.size());
        std::fill(arg + value, arg + stop, '*');
      }
      break;
    }
  }
}

std::string jobs_accepted_text() {
  return "1 to " + std::to_string(orchestrator::kMaxParallel) +
         " (0, all measuring left to workers, with a PostgreSQL --db)";
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
