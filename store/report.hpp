#pragma once
// What `autotune runs | trials | log` print, as library functions
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
//    latency removed (1 - best / baseline), the latency objective's figure;
//  - a model goal's run (docs/model.md) has no trials of its own: its summary
//    lists its kernel runs (summary.kernel_runs, kept current while it runs).
//    Its evaluations are its kernel runs' trials, its baseline and best the
//    forward's latency before (every operator at its baseline) and after
//    (summary.baseline_latency_s, summary.best_latency_s).
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
  // A model goal's run: its kernel runs (counts sums their trials').
  bool model = false;
  std::vector<int64_t> kernel_runs;
};

// The kernel runs of a model goal's run; nullopt for any other run.
std::optional<std::vector<int64_t>> kernel_runs_of(const Run& run);
// "2-5, 7": ids, consecutive ones as a range.
std::string id_ranges(const std::vector<int64_t>& ids);

RunOverview overview(Store& store, const Run& run);
std::vector<RunOverview> overviews(Store& store);  // every run, oldest first

// Text forms.
std::string format_runs(const std::vector<RunOverview>& runs);
std::string format_trials(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s);
std::string format_decisions(const std::vector<Decision>& decisions);

// JSON forms.
Json runs_json(const std::vector<RunOverview>& runs);
Json trials_json(const std::vector<Trial>& trials, std::optional<double> baseline_latency_s);
Json decisions_json(const std::vector<Decision>& decisions);

// Building blocks, exposed for other reports (run summary, sweep).
// Seconds in the unit that puts the value in [1, 1000): "3.000 ms".
std::string format_seconds(double seconds);
// "+33.3%" / "-20.0%".
std::string format_improvement(double improvement);
// "1.33x".
std::string format_speedup(double speedup);
// The latency of a measured trial (status ok or cached, latency_s > 0).
std::optional<double> latency_of(const std::optional<Trial>& trial);
// numerator / denominator when both are known and the denominator positive.
std::optional<double> ratio(std::optional<double> numerator, std::optional<double> denominator);
Json number_or_null(std::optional<double> value);
Json trial_or_null(const std::optional<Trial>& trial);
// The text's first line, cut to `max_width` characters with "...".
std::string first_line(const std::string& text, std::size_t max_width);
// A JSON scalar as text: strings unquoted, floats with 4 significant digits.
std::string scalar_text(const Json& value);
// "trial 7 tiled {tile_size=128 ...}".
std::string describe_trial(const Trial& trial);
// The interval of a measured trial's median latency (a noisy target's
// repeated runs, metrics.intervals.latency_s), "0.985-1.012 ms (93.75%, 5
// runs)", in the median's unit; "" when it has none wider than a point.
std::string interval_text(const Trial& trial);
// The trial's latency as format_seconds writes it, "-" when not measured.
std::string latency_text(const std::optional<Trial>& trial);
// object[key] when it is a string, else "".
std::string string_at(const Json& object, const char* key);
// A JSON value on one line: objects as "key=value key=value" (strings
// unquoted), cut to `max_width` characters with "..." when longer.
std::string compact(const Json& value, std::size_t max_width = 60);

}  // namespace autotune::store::report
