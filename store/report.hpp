#pragma once
// What `autotune runs | trials | log | explain` print, as library functions
// over the Store interface (so they are tested without the executable).
// Text output is for people (aligned tables, human units); the *_json
// functions are the machine-readable form printed with --json.
//
// Definitions used throughout:
//  - latency: metrics.latency_s of a measured trial (status ok or cached);
//  - baseline: the run's baseline_trial, else its first measured trial;
//  - best: the run's best_trial, else its top-1 trial by latency;
//  - speedup: baseline latency / latency (1.25 means 1.25x faster);
//  - a run's improvement: the figure the orchestrator recorded for the goal's
//    objective (summary.improvement), else the fraction of the baseline
//    latency removed (1 - best / baseline), the latency objective's figure.
#include <optional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace autotune::store::report {

// The run with that id, or a UserError "run N not found in <db>".
Run require_run(Store& store, int64_t run_id);
// The trial of that run, or a UserError naming the run and the trial.
Trial require_trial(Store& store, int64_t run_id, int64_t trial_id);

struct RunOverview {
  Run run;
  TrialCounts counts;
  std::optional<Trial> baseline;
  std::optional<Trial> best;
  std::optional<double> baseline_latency_s;
  std::optional<double> best_latency_s;
  std::optional<double> speedup;
  std::optional<double> improvement;
};

RunOverview overview(Store& store, const Run& run);
std::vector<RunOverview> overviews(Store& store);  // every run, oldest first

struct Explanation {
  Run run;
  Trial trial;
  std::optional<Decision> proposal;  // the decision whose seq proposed the trial
  // The chain behind the proposal, traced back through the decisions of its
  // iteration: the analysis of the best so far, the generator's ideas, the
  // policy's choice of one idea, and the verdict on that idea afterwards.
  // Each is absent when the run logged no such decision (the baseline, a
  // replayed target without profiles, a plugin that logs differently).
  std::optional<Decision> analysis;    // profile_analyzer: the findings
  std::optional<Decision> generation;  // kernel_generator: the ideas
  std::optional<Decision> choice;      // orchestrator try:*: the idea picked
  std::optional<Decision> verdict;     // orchestrator accept/rollback
  Json idea;                           // the chosen idea as the generator logged it, else null
  Json findings = Json::array();       // the analyzer's findings the idea answers, with their evidence
  std::optional<Trial> baseline;
  // The best measured trial known when this one was proposed: trials proposed
  // by earlier decisions (or, without decision numbers, committed earlier).
  std::optional<Trial> best_before;
  std::optional<Trial> best_now;
  std::optional<double> speedup_vs_baseline;     // baseline latency / latency
  std::optional<double> speedup_vs_best_before;  // best-before latency / latency
  bool became_best = false;                      // measured and faster than everything known before it
  bool is_run_best = false;                      // it is the run's best trial now
};

// UserError for an unknown run or trial.
Explanation explain(Store& store, int64_t run_id, int64_t trial_id);

// Text forms.
std::string format_runs(const std::vector<RunOverview>& runs);
std::string format_trials(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s);
std::string format_decisions(const std::vector<Decision>& decisions);
std::string format_explanation(const Explanation& explanation);

// JSON forms.
Json runs_json(const std::vector<RunOverview>& runs);
Json trials_json(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s);
Json decisions_json(const std::vector<Decision>& decisions);
Json explanation_json(const Explanation& explanation);

// Building blocks, exposed for other reports (run summary, sweep).
// Seconds in the unit that puts the value in [1, 1000): "3.000 ms".
std::string format_seconds(double seconds);
// "+33.3%" / "-20.0%".
std::string format_improvement(double improvement);
// "1.33x".
std::string format_speedup(double speedup);
// A JSON value on one line: objects as "key=value key=value" (strings
// unquoted), cut to `max_width` characters with "..." when longer.
std::string compact(const Json& value, std::size_t max_width = 60);

}  // namespace autotune::store::report
