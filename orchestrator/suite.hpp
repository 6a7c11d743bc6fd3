#pragma once
// A suite: a list of tuning tasks (a kernel family at a shape and dtype, with
// its start, variants and knobs) run by the agentic loop on every target,
// each with the same budget, and scored as a fraction of each task's peak
// (docs/suite.md):
//
//   fraction of peak = the task's roofline bound on the target
//                      (kernels::roofline_bound_s) / its tuned latency.
//
// load_suite() reads strictly, as load_goal does: every task is turned into
// a goal per target and prepared (its family, shape, dtype, variants, start
// and knobs checked against the family) before anything runs; a mistake is a
// UserError naming file:line: key. A task the project has no family for yet
// is listed with `unavailable: <reason>` and reported as such, never run.
//
// run_suite() runs every (task, target) whose run is not already completed in
// the store: each is an ordinary run of the loop (Orchestrator), identified by
// its resolved goal (to_yaml), its seed and the simulator version (a run is a
// function of the three). A completed run with the same goal is reused, an
// interrupted one (or one left running by a process that died) is resumed, a
// failed one is run afresh; a run of another simulator version is neither
// shown as the task's nor resumed: the task gets a new run, and its row
// names the earlier one. Runs go `jobs` at a time, sharing
// `jobs` cores: each run measures with its share of the workers the runs in
// progress leave free (workers_for_next_run), and keeps them until it ends,
// so that together they never use more than `jobs`.
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/goal.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

struct SuiteTask {
  std::string name;
  std::string note;         // how the task maps onto its family (shown with it)
  std::string unavailable;  // why it is not yet a family; empty when it runs
  YAML::Node node;          // the task's mapping in the suite file
};

struct Suite {
  std::filesystem::path file;
  std::string name;
  std::string description;
  std::vector<std::string> targets;
  std::uint64_t seed = 0;
  int budget_evaluations = 60;
  double budget_wall_time_s = 1800;
  int max_iterations = 10;
  std::string strategy = "bayes";
  Json strategy_options = Json::object();  // search.options, as a goal's
  int parallel = 1;                        // each loop's batch of proposals (Goal::parallel)
  // The loop stops early once the tuned latency reaches this fraction of
  // the roofline bound; 1 (the default) never stops it early.
  double stop_fraction_of_peak = 1.0;
  std::vector<SuiteTask> tasks;
};

// Reads a suite and checks every available task on every target (see above).
Suite load_suite(const std::filesystem::path& path);

// The goal of `task` on `target`, resolved (its family's defaults filled in),
// with its measurement setup. UserError (file:line: key) on misuse.
struct TaskGoal {
  Goal goal;
  RunSetup setup;
  double roofline_bound_s = 0;
};
TaskGoal task_goal(const Suite& suite, const SuiteTask& task, const std::string& target);

// One row of the suite's table: a task on a target.
struct SuiteRow {
  std::string task, target;
  std::string family, shape, dtype, note;
  // "not yet a family" | "not run" | "completed" | "failed" | "interrupted" | "running" | "error"
  std::string status;
  std::string reason;  // unavailable: why; failed or error: what went wrong
  std::optional<int64_t> run;
  bool ran_now = false;  // run (or resumed) by this invocation
  // The latest run of the same goal and seed measured by another simulator
  // version, when none of this version was there to go on from.
  std::optional<int64_t> earlier_run;
  std::string earlier_simulator_version;
  double roofline_bound_s = 0;
  std::optional<double> baseline_latency_s, tuned_latency_s;
  int evaluations = 0;
  double wall_time_s = 0;
  std::string stop_reason;

  std::optional<double> fraction_of_peak() const;           // bound / tuned latency
  std::optional<double> baseline_fraction_of_peak() const;  // bound / baseline latency
  Json to_json() const;
};

struct SuiteResult {
  std::vector<SuiteRow> rows;  // tasks in file order, each on every target in order
  double wall_time_s = 0;
  int runs_started = 0;  // runs this invocation created or resumed
  // The suite as `suite --json` prints it: the rows, and per target the mean
  // fraction of peak over the tasks with a tuned latency.
  Json to_json(const Suite& suite, const std::string& database) const;
};

// The mean fraction of peak of the rows on `target` with a tuned latency
// (baseline: of their baselines), and how many rows it averages.
struct SuiteMean {
  std::string target;
  int tasks = 0;
  double fraction_of_peak = 0, baseline_fraction_of_peak = 0;
};
std::vector<SuiteMean> suite_means(const Suite& suite, const std::vector<SuiteRow>& rows);

// Each (task, target)'s latest run in `store`, read only: the table of
// `autotune report --suite` and of run_suite's reused runs.
std::vector<SuiteRow> suite_rows(const Suite& suite, store::Store& store);

struct SuiteOptions {
  int jobs = 1;  // runs at once, and the cores they share
  // One line per task started or finished (may be called from any thread; calls are serialised).
  std::function<void(const std::string&)> progress;
  // The runs in progress, which an interruption records: each as it is
  // stored (started), and again when it ends. Calls are serialised.
  std::function<void(int64_t run, bool started)> running;
};

SuiteResult run_suite(const Suite& suite, store::Store& store, const SuiteOptions& options);

// The workers of a run starting now, out of `jobs` shared by every run in
// progress: `in_use` are held by the runs going, and `starting_now` runs
// (this one included) take their share of the rest at once (the suite's idle
// threads, at most the runs left to start). At least 1. With `jobs` no less
// than the runs that go at once, the runs never hold more than `jobs`
// together: each leaves at least one worker for every other run starting.
int workers_for_next_run(int jobs, int in_use, int starting_now);

}  // namespace autotune::orchestrator
