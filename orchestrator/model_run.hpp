#pragma once
// A model goal (docs/model.md, "Model goals"): `model:` in a goal file
// instead of `kernel:`. The run spends its evaluation budget where the
// model's time is:
//
//   time the forward with every operator at its family's baseline
//   -> [ choose the kernel whose tuning is worth most to the forward (its
//        share of the forward's time times its headroom to its roofline
//        bound), run the agentic loop on it (orchestrator.hpp) from its
//        current configuration with a slice of the budget, take its best
//        verified configuration, re-time the forward ]*
//   -> time the forward from the database and check it end to end.
//
// Each choice is a decision of the model run, with the candidates' shares,
// headrooms and worth as evidence; each kernel's loop is a run of its own in
// the same database, so `autotune log` explains it as usual, and `autotune
// model` afterwards picks its results up. The goal's improvement is measured
// on the whole forward against the all-baseline forward.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/verify.hpp"
#include "orchestrator/orchestrator.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

struct ModelGoal {
  std::filesystem::path file;
  std::string name;
  model::ModelSpec model;
  std::string target = "trn2";  // a simulated target
  // The forward's improvement over the all-baseline forward: the fraction
  // of its latency removed (0.8 = 5x faster), as for kernel goals.
  double improvement = 0.5;
  int max_iterations = 12;      // kernel choices
  int kernel_iterations = 3;    // the loop's iterations per choice
  int kernel_evaluations = 20;  // the most one choice may spend
  int budget_evaluations = 150;
  double budget_wall_time_s = 900;
  std::string strategy = "bayes";
  Json strategy_options = Json::object();  // search.options, as a kernel goal's
  int batch_size = 0;
  // Each kernel run learns from the earlier runs of its kernel in the
  // database (Goal::transfer): the model's other shapes of the same family.
  bool transfer = false;
  int parallel = 2;
  std::uint64_t seed = 0;
  bool verify = true;  // the end-to-end check at the end
};

// Whether the goal file at `path` is a model goal (has a top-level `model:`).
bool is_model_goal(const std::filesystem::path& path);

// Reads a model goal strictly (one line, file:line: key, on any misuse).
ModelGoal load_model_goal(const std::filesystem::path& path);

struct ModelRunSummary {
  int64_t run_id = 0;
  std::string status;  // completed | failed
  bool goal_met = false;
  std::string stop_reason;
  double baseline_latency_s = 0;  // the all-baseline forward
  double best_latency_s = 0;      // the tuned forward, timed from the database
  double improvement = 0;         // fraction of the baseline's latency removed
  model::ForwardTiming baseline, tuned;
  std::optional<model::ChainCheck> check;
  int iterations = 0;
  int evaluations = 0;  // of every kernel run
  double wall_time_s = 0;
  std::vector<int64_t> kernel_runs;
  std::map<int64_t, int> kernel_run_evaluations;  // by kernel run
  // The summary as `run --json` prints it and the store keeps it with the run
  // (Run::summary), rewritten as the run goes: while it runs, `tuned` is the
  // forward re-summed from the kernel runs so far. Besides the figures above,
  // "operators" has a row per operator: its kernel and shape, its baseline
  // and current latency per call, the speedup, its share of the current
  // forward, its configuration and the kernel run (and its evaluations) that
  // tuned it. store/report.hpp reads "kernel_runs" and the latencies;
  // report/report_data.hpp the rows.
  Json to_json() const;
};

// `progress` may be empty. `running`, when given, hears of every run as it
// is created (the model run, then each kernel run as its loop starts) and
// of each kernel run when its loop ends: the runs in progress, which an
// interruption records.
using RunningSink = std::function<void(int64_t run, bool running)>;
ModelRunSummary run_model_goal(const ModelGoal& goal, store::Store& store, const ProgressSink& progress = {},
                               const RunningSink& running = {});

}  // namespace autotune::orchestrator
