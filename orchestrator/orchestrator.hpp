#pragma once
// The agentic loop (DESIGN.md; docs/loop.md):
//
//   baseline -> [ Profile Analyzer (best so far) -> Kernel Generator (ideas)
//                 -> policy (which idea, what budget, or stop)
//                 -> Param Explorer (strategy over the idea's region, in batches)
//                 -> Benchmark Runner (measure, verify, commit) -> goal check ]*
//
// An iteration that does not improve leaves the best where it was (rolled
// back) and the next iteration tries another idea. The loop stops at the
// goal, at max_iterations, at the evaluation or wall-time budget, when the
// analyzer says the best is at its bound, or when no idea is left.
//
// Everything the loop needs comes in through RunContext: no globals. A run is
// a function of (goal, seed, simulator version): every random choice is made
// by a component's stream forked from the run's seed, and the runner returns
// results in proposal order. Hence --resume: the loop re-executes, served
// from the committed trials and decisions, and continues where it stopped.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/rng.hpp"
#include "orchestrator/decision_log.hpp"
#include "orchestrator/goal.hpp"
#include "orchestrator/policy.hpp"
#include "skills/benchmark_runner.hpp"
#include "skills/measurement_target.hpp"
#include "skills/plugin/plugin_skills.hpp"
#include "skills/skill.hpp"
#include "skills/variant_catalog.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

// What the loop reports as it goes (for the CLI's progress line).
struct Progress {
  int64_t run_id = 0;  // the run in the store (for a message on interruption)
  int iteration = 0;
  int max_iterations = 0;
  int evaluations = 0;
  int budget = 0;
  std::optional<double> best_latency_s;
  std::optional<double> improvement;
  std::string phase;           // "baseline", "analyse", "search <idea>", ...
  int64_t active_workers = 0;  // measuring through a queue: workers seen heartbeating
};
using ProgressSink = std::function<void(const Progress&)>;

// The skills a run uses; null members are filled with the built-ins.
struct SkillSet {
  std::unique_ptr<skills::AnalyzerSkill> analyzer;
  std::unique_ptr<skills::GeneratorSkill> generator;
  std::unique_ptr<skills::ExplorerSkill> explorer;
  std::unique_ptr<Policy> policy;
  // Set when the goal has plugins: their calls' records, logged by the loop
  // after each skill's decision (skills/plugin/plugin_skills.hpp).
  std::shared_ptr<skills::PluginCallRecords> plugin_calls;
};

struct RunOptions {
  int jobs = 0;                       // 0: the goal's `parallel`
  std::optional<std::uint64_t> seed;  // default: the goal's seed
  std::optional<int64_t> resume;      // continue this run
  bool use_cache = true;
  // Measure through the store's shared queue, with `autotune worker`
  // processes (docs/distributed.md); jobs may then be 0.
  bool queue = false;
  ProgressSink progress;
  // The run's id, as soon as it is stored (before anything else is written).
  std::function<void(int64_t)> started;
  // One line for each failure of a skill, plugin, LLM endpoint or target,
  // as it happens (RunSummary::warnings keeps them all).
  std::function<void(const std::string&)> warning;
};

struct RunContext {
  const Goal& goal;
  const skills::VariantCatalog& catalog;
  skills::MeasurementTarget& target;
  store::Store& store;
  std::string simulator_version;  // stored with the run
  RunOptions options;
};

struct RunSummary {
  int64_t run_id = 0;
  std::string status;  // completed | failed | interrupted
  bool goal_met = false;
  std::string stop_reason;
  std::string objective;
  // What was tuned (goal.hpp kernel_text, kernel_json); "" and null for a
  // target that brings its own space.
  std::string kernel_text;
  Json kernel;
  skills::Candidate baseline;
  Json baseline_metrics;
  std::optional<int64_t> baseline_trial;
  skills::Candidate best;
  Json best_metrics;
  std::optional<int64_t> best_trial;
  double improvement = 0;
  int iterations = 0;
  int evaluations = 0;
  int cache_hits = 0;
  int resumed_trials = 0;
  int measured = 0;
  double wall_time_s = 0;
  double target_seconds = 0;  // summed over workers
  double commit_seconds = 0;
  // Screened (goal.screen): the simulations the screen spent, ranking
  // proposals, simulating device trials and refitting.
  std::optional<long> screen_simulations;
  std::string db;
  // Failures the run went on past: plugins, LLM calls, candidates that
  // failed or timed out (one line each, with what to do).
  std::vector<std::string> warnings;
  Json to_json() const;
};

// The objective value the strategies minimise, from a trial's metrics.
std::optional<double> objective_value(Objective objective, const Json& metrics);
// Improvement of `best` over `baseline` (objective values as returned above).
double improvement_of(Objective objective, double baseline, double best);
// Whether a candidate meets the goal: its improvement over the baseline
// (objective values as above) and the goal's absolute bound on its metrics.
bool meets_goal(const Goal& goal, double baseline, double value, const Json& metrics);

class Orchestrator {
 public:
  Orchestrator(RunContext context, SkillSet skills = {});
  // Runs (or resumes) the loop; the run is in the store whatever happens.
  RunSummary run();

 private:
  RunContext context_;
  SkillSet skills_;
};

}  // namespace autotune::orchestrator
