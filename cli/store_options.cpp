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
  record_interruption(store, "", std::vector<int64_t>{run_id}, signal, resume_command);
}

void record_interruption(store::Store& store, const std::string& database,
                         const std::vector<int64_t>& run_ids, int signal, const std::string& resume_command) {
  std::vector<int64_t> runs;
  for (const int64_t id : run_ids)
    if (id > 0 && std::find(runs.begin(), runs.end(), id) == runs.end()) runs.push_back(id);
  if (runs.empty()) {
    std::fprintf(stderr, "\nautotune: interrupted\n");
    std::fflush(stderr);
    return;
  }
  const std::string reason = std::string("interrupted by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT");
  try {
    store.freeze_interrupted(runs.front(), reason);
    if (runs.size() > 1) {
      // The frozen store blocks every later call of this process's threads, so nothing races these
      // writes: each run is read and written back whole, marked only if it is still running.
      const auto other = store::open_store(database, store::OpenMode::existing);
      for (std::size_t i = 1; i < runs.size(); ++i) {
        auto run = other->run(runs[i]);
        if (!run || run->status != store::RunStatus::running) continue;
        run->status = store::RunStatus::interrupted;
        run->stop_reason = reason;
        other->update_run(*run);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nautotune: the interruption could not be recorded: %s\n", e.what());
  }
  std::string ids;
  for (const int64_t id : runs) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  std::fprintf(stderr, "\nautotune: interrupted; %s %s every committed trial; continue with\n  %s\n",
               ((runs.size() == 1 ? std::string("run ") : std::string("runs ")) + ids).c_str(),
               runs.size() == 1 ? "keeps" : "keep", resume_command.c_str());
  std::fflush(stderr);
}

}  // namespace autotune::cli
