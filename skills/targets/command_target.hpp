#pragma once
// The `command` measurement target: the bridge to real hardware. For each
// candidate a user's program is run with the candidate's parameters placed in
// its argv; it prints one JSON object of metrics on stdout.
//
// Goal syntax (the `target:` mapping):
//   target:
//     kind: command
//     argv: [python3, bench.py, --tile, "{tile_size}", --unroll, "{unroll}"]
//     timeout_s: 120          # per run, default 60
//     repeats: 5              # runs per candidate, default 1; metrics are medians
//     confidence: 0.95        # of each median's interval (core/noise.hpp), default 0.95
//     remeasure_beyond: 3     # noise widths beyond which a win is measured again, default 3
//     objective: latency_s    # metric to minimise, default latency_s
//     metrics: [gflops]       # further metrics every run must report (optional)
//     workdir: bench/         # relative to the goal file; default: the goal file's folder
//
// Placeholders: `{name}` in any argv element is replaced by the candidate's
// parameter `name` (strings verbatim, numbers as JSON prints them, true/false);
// `{{` and `}}` stand for literal braces. The argv is executed directly (never
// through a shell), so an element with spaces or `;` reaches the program as
// one argument. The program also finds all parameters as a JSON object in the
// environment variable AUTOTUNE_PARAMS and the 0-based run index in
// AUTOTUNE_REPEAT.
//
// The program's output: the last non-empty stdout line that parses as a JSON
// object is used (so build logs before it are fine); a later line shaped like
// an object whose number is not finite (NaN, Infinity, 1e400: not JSON) fails
// the run, saying so. The object must hold the objective as a finite, positive
// number, and may hold `valid` (a boolean; false: the candidate is invalid,
// with `error` as the reason), any other metric, and profile fields, but none
// of reserved_metric_names().
//
// With two runs or more, every numeric metric also gets the order-statistic
// interval of its median (core/noise.hpp) in metrics["intervals"][name]:
// {low, high, confidence, n}; the loop compares noisy candidates by it.
//
// Outcomes (a candidate's failure is data, never an exception):
//   ok       every run printed the objective; metrics are medians over runs
//   invalid  a run reported valid: false (no further runs)
//   failed   non-zero exit, crash, no JSON object (or one with a number that
//            is not finite), objective or an expected metric missing, the
//            objective not positive, `valid` not a boolean, a reserved metric
//            name (no further runs); error holds the reason and stderr tail
//   timeout  a run exceeded timeout_s (its process group was killed)
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "core/noise.hpp"
#include "core/outcome.hpp"
#include "skills/measurement_target.hpp"

namespace autotune::skills {

// Where a program's own latency_s is kept when the objective is another
// metric: metrics["latency_s"] is then the objective's value.
inline constexpr const char* kProgramLatencyMetric = "program_latency_s";

struct CommandTargetConfig {
  std::vector<std::string> argv;  // templates with {name} placeholders
  double timeout_s = 60.0;        // per run
  int repeats = 1;
  double confidence = kDefaultConfidence;             // of the medians' intervals
  double remeasure_beyond = kDefaultRemeasureBeyond;  // see core/noise.hpp
  std::string objective = "latency_s";
  std::vector<std::string> metrics;  // expected besides the objective
  std::filesystem::path workdir;     // where the program runs; empty: the current directory
};

// Reads a goal's `target:` mapping (kind must be `command`; unknown keys are
// rejected). `goal_dir` is the goal file's folder: workdir is resolved against
// it and is the default workdir. When `parameter_names` is given, a
// placeholder naming no parameter is a UserError here. A program (argv[0]
// without placeholders) that cannot be found is a UserError too.
CommandTargetConfig parse_command_target(ConfigReader& target, const std::filesystem::path& goal_dir,
                                         const std::vector<std::string>* parameter_names = nullptr);

// The metrics of a candidate's runs (each run's JSON object): the median of
// every numeric field over the runs that reported it, with its interval when
// two runs or more reported it; other fields (strings, objects: profile data)
// as the first run reported them. `valid` and `error` are not metrics.
nlohmann::json summarise_runs(const std::vector<nlohmann::json>& runs, double confidence);

struct CommandMeasurement {
  Outcome status = Outcome::failed;
  // Median over runs of every numeric field (over the runs that reported it);
  // other fields (strings, objects: profile data) from the first run. `valid`
  // and `error` are not metrics. Empty unless status is ok.
  nlohmann::json metrics = nlohmann::json::object();
  // Every run's parsed JSON object, in order, as printed (all repeats kept).
  std::vector<nlohmann::json> repeats;
  std::vector<double> repeat_wall_s;  // wall time of each run, parallel to `repeats`
  std::string error;                  // one line when status is not ok
  double wall_s = 0.0;                // all runs together
  std::vector<std::string> argv;      // the command as run (placeholders substituted)

  bool ok() const { return status == Outcome::ok; }
};

class CommandTarget {
 public:
  // Throws UserError when an argv element holds a malformed placeholder.
  explicit CommandTarget(CommandTargetConfig config);

  // Runs the program `repeats` times for one candidate. Never throws for
  // anything the program does. Thread-safe: concurrent calls run separate
  // processes.
  // `budget_s`, when given, caps the time of all runs together: each run's
  // timeout is the smaller of timeout_s and what is left of the budget.
  CommandMeasurement evaluate(const nlohmann::json& params,
                              std::optional<double> budget_s = std::nullopt) const;

  // The argv with placeholders replaced; nullopt and *error when `params`
  // lacks a named parameter.
  std::optional<std::vector<std::string>> expand(const nlohmann::json& params, std::string* error) const;

  // Metric names autotune itself writes into a command trial's metrics, which
  // a program's output therefore may not hold (the run fails, saying so):
  // `intervals` (the medians' intervals), `objective` (the metric latency_s
  // was taken from), `remeasured` (the Benchmark Runner's record of a
  // candidate measured again) and, when the objective is not latency_s,
  // kProgramLatencyMetric.
  std::vector<std::string> reserved_metric_names() const;

  // Names used as placeholders, sorted, without duplicates.
  std::vector<std::string> placeholders() const;
  const CommandTargetConfig& config() const { return config_; }

 private:
  struct Segment {
    bool placeholder;
    std::string text;  // literal text, or the parameter name
  };
  CommandTargetConfig config_;
  std::vector<std::vector<Segment>> templates_;
};

}  // namespace autotune::skills

namespace autotune::skills {

// The command target behind the Benchmark Runner's MeasurementTarget
// interface. A candidate's params fill the placeholders (its variant name is
// not used: a command target is one program). Mapping of the result: status
// ok/invalid/failed/timeout as is; metrics are the medians, with a `profile`
// object moved to Measurement::profile; repeats are every run's JSON object.
// The runner ranks by metrics["latency_s"], so it is always the objective's
// value: when the objective is another metric (still minimised), that
// metric's median (and interval) is reported as latency_s as well,
// metrics["objective"] names the metric, and a latency_s the program printed
// itself is kept as kProgramLatencyMetric, never ranked.
class CommandMeasurementTarget : public MeasurementTarget {
 public:
  explicit CommandMeasurementTarget(CommandTargetConfig config);

  std::string kind() const override { return "command"; }
  std::string description() const override;
  // The argv templates, workdir, objective, repeats and the content of every
  // argv element that names an existing file (the user's script or binary),
  // so an edited benchmark program does not reuse stale cached trials.
  std::string cache_identity() const override;
  Measurement measure(const Candidate& candidate, const MeasureOptions& options) override;
  double remeasure_beyond() const override { return target_.config().remeasure_beyond; }
  // timeout_s x repeats: what the target allows its runs altogether, so a
  // goal's shorter timeout_s does not kill a candidate its runs may finish.
  std::optional<TimeLimit> own_time_limit() const override;
  // Both measurements' runs summarised as one (medians and intervals over all of them).
  Measurement combine(const Json& earlier_repeats, const Measurement& again) const override;

  const CommandTarget& command() const { return target_; }

 private:
  // A measurement from the runs' summary: `profile` moved out, the objective reported as latency_s.
  Measurement from_summary(Json metrics) const;
  CommandTarget target_;
  std::string cache_identity_;
};

}  // namespace autotune::skills
