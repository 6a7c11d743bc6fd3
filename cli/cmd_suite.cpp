// autotune suite SUITE.yaml [--db F] [--jobs N] [--json]: the agentic loop on
// every task of a suite, on every target, with one budget per task; then per
// task its baseline, tuned latency and fraction of peak, and the mean
// fraction of peak per target (orchestrator/suite.hpp, docs/suite.md).
// Exit status: 0 when every available task's run completed; 1 otherwise; 2
// on misuse (a mistake in the suite file is found before anything runs).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <set>
#include <vector>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/text.hpp"
#include "orchestrator/suite.hpp"

namespace autotune::cli {
namespace {

std::string seconds_text(const std::optional<double>& s) {
  if (!s) return "-";
  char buffer[48];
  if (*s >= 1)
    std::snprintf(buffer, sizeof buffer, "%.3f s", *s);
  else if (*s >= 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.3f ms", *s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f us", *s * 1e6);
  return buffer;
}

std::string percent_text(const std::optional<double>& fraction) {
  if (!fraction) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", *fraction * 100);
  return buffer;
}

void print_table(const orchestrator::Suite& suite, const orchestrator::SuiteResult& result,
                 const std::string& database) {
  std::printf("suite %s: %zu tasks on %s, %d evaluations each; %d runs started, %.1f s; database %s\n",
              suite.name.c_str(), suite.tasks.size(), join(suite.targets, ", ").c_str(),
              suite.budget_evaluations, result.runs_started, result.wall_time_s, database.c_str());
  std::printf("%-22s %-6s %-11s %-32s %-5s %10s %6s %10s %6s %6s %9s  %s\n", "task", "target", "family",
              "shape", "dtype", "baseline", "peak", "tuned", "peak", "evals", "wall", "run");
  for (const auto& row : result.rows) {
    if (row.status == "not yet a family") {
      std::printf("%-22s %-6s not yet a family: %s\n", row.task.c_str(), row.target.c_str(),
                  row.reason.c_str());
      continue;
    }
    std::string run = row.run ? "run " + std::to_string(*row.run) : "-";
    if (row.run && !row.ran_now) run += " (earlier)";
    // A run of another simulator version is never the task's: it got a new one.
    if (row.earlier_run)
      run += " (earlier run " + std::to_string(*row.earlier_run) + " was simulator " +
             row.earlier_simulator_version + (row.run ? ": new run)" : ")");
    if (row.status != "completed")
      run += " [" + row.status + (row.reason.empty() ? "" : ": " + row.reason) + "]";
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.1f s", row.wall_time_s);
    std::printf("%-22s %-6s %-11s %-32s %-5s %10s %6s %10s %6s %6d %9s  %s\n", row.task.c_str(),
                row.target.c_str(), row.family.c_str(), row.shape.c_str(), row.dtype.c_str(),
                seconds_text(row.baseline_latency_s).c_str(),
                percent_text(row.baseline_fraction_of_peak()).c_str(),
                seconds_text(row.tuned_latency_s).c_str(), percent_text(row.fraction_of_peak()).c_str(),
                row.evaluations, wall, run.c_str());
  }
  for (const auto& mean : orchestrator::suite_means(suite, result.rows)) {
    if (mean.tasks == 0) {
      std::printf("mean fraction of peak on %s: - (no task has a tuned latency)\n", mean.target.c_str());
      continue;
    }
    std::printf("mean fraction of peak on %s: %s over %d tasks (baseline %s)\n", mean.target.c_str(),
                percent_text(mean.fraction_of_peak).c_str(), mean.tasks,
                percent_text(mean.baseline_fraction_of_peak).c_str());
  }
}

const CommandRegistration registration{
    "suite",
    "Run the agentic loop on every task of a suite (YAML), on every target; fraction of peak per task",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        std::string file;
        int jobs = 2;
        bool json = false;
        DatabaseOption db;
      };
      auto o = std::make_shared<Options>();
      app.add_option("suite", o->file, "Suite file (e.g. configs/suites/nkibench.yaml)")->required();
      app.add_option("--jobs,-j", o->jobs, "Runs at once, sharing this many cores (default 2)")
          ->check(whole_number_in(1, orchestrator::kMaxParallel));
      app.add_flag("--json", o->json, "Print the table as one JSON object on stdout");
      add_database_option(app, o->db);
      return [o]() -> int {
        if (o->jobs < 1 || o->jobs > orchestrator::kMaxParallel)
          throw UserError("--jobs " + std::to_string(o->jobs) + " is out of range; accepted: 1 to " +
                          std::to_string(orchestrator::kMaxParallel));
        const orchestrator::Suite suite = orchestrator::load_suite(o->file);
        auto store = open_store_for_writing(o->db);
        std::mutex mutex;
        std::set<int64_t> running;
        const interrupt::OnInterrupt on_interrupt([&](int signal) {
          std::vector<int64_t> ids;
          {
            std::lock_guard lock(mutex);
            ids.assign(running.begin(), running.end());
          }
          // Every run in progress is recorded as interrupted; the next invocation resumes them.
          record_interruption(*store, o->db.path(), ids, signal,
                              "autotune suite " + o->file + " --db " + store->location());
        });
        orchestrator::SuiteOptions options;
        options.jobs = o->jobs;
        options.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
        options.running = [&](int64_t run, bool started) {
          std::lock_guard lock(mutex);
          if (started)
            running.insert(run);
          else
            running.erase(run);
        };
        const auto result = orchestrator::run_suite(suite, *store, options);
        if (o->json)
          std::cout << result.to_json(suite, store->location())
                           .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                    << std::endl;
        else
          print_table(suite, result, store->location());
        bool all_completed = true;
        for (const auto& row : result.rows)
          if (row.status != "not yet a family" && row.status != "completed") all_completed = false;
        return all_completed ? 0 : 1;
      };
    }};

}  // namespace
}  // namespace autotune::cli
