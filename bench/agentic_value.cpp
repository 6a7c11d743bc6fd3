// The loop's worth: for each example goal, how many evaluations the agentic
// loop and a plain `bayes` over the flattened space (the variant as one more
// categorical parameter) need to come within 5% of the sweep's optimum, with
// the same seed and the same evaluation budget.
//
// Every goal is swept first (exhaustively; goals whose spaces exceed the cap
// are skipped and said so). The sweep, the loop and bayes share one database,
// so the loop and bayes are served from the sweep's measurements: identical
// numbers, counted as evaluations exactly as fresh ones would be.
// With --seeds N both run with the goal's seed and the N-1 following ones;
// the table then shows medians and how many runs got within 5%.
// Also printed: the evaluations each needed to reach the goal's own target
// (its improvement over the start point), from the same runs.
// Both stop as soon as they are within 5% of the optimum and have met the
// goal's own improvement (the loop's absolute bound is replaced by the 5%
// one; its budget, iterations and seed are the goal's).
//
//   build/bench/bench_agentic_value [goal.yaml ...] [--cap N] [--seeds N]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/sweep.hpp"
#include "search/strategy.hpp"
#include "skills/benchmark_runner.hpp"
#include "skills/flat_space.hpp"
#include "store/store.hpp"

using namespace autotune;
using Json = nlohmann::json;

namespace {

// Evaluations one search needed to come within the bound (none: not within
// the evaluations it made).
struct SearchOutcome {
  std::optional<int> evaluations_to_bound;
  std::optional<int> evaluations_to_goal;  // to the goal's own target over the start point
  int evaluations = 0;
  std::string note;
  std::optional<double> start_value;  // objective value of the loop's first trial: the goal's start point
};

// Counts an outcome's evaluation: a trial, and whether it was measured.
void count(SearchOutcome& out, const orchestrator::Goal& goal, double threshold, const store::Trial& trial) {
  ++out.evaluations;
  if (!is_measured(trial.status)) return;
  const auto latency = trial.metric("latency_s");
  if (latency && *latency <= threshold && !out.evaluations_to_bound)
    out.evaluations_to_bound = out.evaluations;
  const auto value = orchestrator::objective_value(goal.objective, trial.metrics);
  if (!out.evaluations_to_goal && out.start_value && value &&
      orchestrator::meets_goal(goal, *out.start_value, *value, trial.metrics))
    out.evaluations_to_goal = out.evaluations;
}

std::string reached(const std::optional<int>& n, int evaluations) {
  return n ? std::to_string(*n) : "not within " + std::to_string(evaluations);
}
std::string reached(const SearchOutcome& o) { return reached(o.evaluations_to_bound, o.evaluations); }

// One seed: its figure. Several: the median (a search that never got within
// the bound counts as worse than any that did) and how many got there.
std::string summarise(const std::vector<SearchOutcome>& outcomes, std::optional<int> SearchOutcome::*figure) {
  if (outcomes.size() == 1) return reached(outcomes.front().*figure, outcomes.front().evaluations);
  std::vector<int> ranks;
  for (const auto& o : outcomes) ranks.push_back((o.*figure).value_or(1 << 30));
  std::sort(ranks.begin(), ranks.end());
  const auto got = std::count_if(ranks.begin(), ranks.end(), [](int r) { return r < (1 << 30); });
  const int median = ranks[(ranks.size() - 1) / 2];
  return (median < (1 << 30) ? std::to_string(median) : std::string("none")) + " (" + std::to_string(got) +
         "/" + std::to_string(outcomes.size()) + ")";
}

// The loop, its goal's absolute bound replaced by `bound` (within 5% of the
// optimum, in the objective's unit): it stops once it has both that and the
// goal's own improvement, so both figures come from one run.
SearchOutcome run_loop(orchestrator::PreparedGoal& prepared, const orchestrator::Goal& goal, double threshold,
                       double bound, store::Store& store) {
  orchestrator::Goal loop_goal = goal;
  loop_goal.absolute = bound;
  orchestrator::RunOptions run_options;
  run_options.jobs = 2;
  orchestrator::RunContext context{loop_goal, prepared.setup.catalog,           *prepared.setup.target,
                                   store,     prepared.setup.simulator_version, run_options};
  const auto summary = orchestrator::Orchestrator(context).run();
  SearchOutcome out;
  const auto trials = store.trials(summary.run_id);
  if (!trials.empty())
    out.start_value = orchestrator::objective_value(goal.objective, trials.front().metrics);
  for (const auto& trial : trials) count(out, goal, threshold, trial);
  out.note = summary.stop_reason + "; best " + summary.best.text();
  return out;
}

// Plain bayes over the flattened space, the goal's seed, budget and batches.
SearchOutcome run_flat_bayes(orchestrator::PreparedGoal& prepared, const skills::FlatSpace& flat,
                             const orchestrator::Goal& goal, double threshold,
                             std::optional<double> start_value, store::Store& store) {
  store::Run record;
  record.goal_name = goal.name + " (flattened bayes)";
  record.goal_yaml = orchestrator::to_yaml(goal);
  record.seed = goal.seed;
  record.id = store.create_run(record);
  skills::BenchmarkRunner runner(*prepared.setup.target, store, record.id, {2, goal.timeout_s});
  auto strategy = search::make_strategy("bayes", *flat.space, Rng(goal.seed).fork("param_explorer").seed(),
                                        goal.strategy_options);
  SearchOutcome out;
  out.start_value = start_value;
  while (out.evaluations < goal.budget_evaluations &&
         !(out.evaluations_to_bound && out.evaluations_to_goal) && !strategy->done()) {
    const auto batch = strategy->ask(
        std::size_t(std::min(goal.effective_batch_size(), goal.budget_evaluations - out.evaluations)));
    if (batch.empty()) break;
    std::vector<skills::TrialRequest> requests;
    for (const auto& configuration : batch) {
      requests.push_back({flat.candidate(configuration), 0, std::nullopt});
    }
    const auto measured = runner.measure(requests);
    std::vector<search::Observation> observations;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& trial = measured.result[i].trial;
      const auto latency = trial.metric("latency_s");
      count(out, goal, threshold, trial);
      if (is_measured(trial.status) && latency) {
        observations.push_back(search::Observation::success(batch[i], *latency));
      } else {
        observations.push_back(search::Observation::failed(batch[i], trial.error));
      }
    }
    strategy->tell(observations);
  }
  record.status = store::RunStatus::completed;
  store.update_run(record);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> goals;
  // Includes the replay goal; the GEMM goals (~32 000 configurations) need --cap 40000.
  std::uint64_t cap = 8000;
  int seeds = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--cap" && i + 1 < argc)
      cap = std::strtoull(argv[++i], nullptr, 10);
    else if (std::string(argv[i]) == "--seeds" && i + 1 < argc)
      seeds = std::max(1, std::atoi(argv[++i]));
    else
      goals.push_back(argv[i]);
  }
  if (goals.empty())
    for (const char* name :
         {"quickstart", "exp-profiler", "replay-convolution", "qwen3-attention-16k", "gemm-article"})
      goals.push_back(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/goals/" + name + ".yaml");
  const auto dir = std::filesystem::temp_directory_path() / "autotune-bench-agentic-value";
  std::filesystem::create_directories(dir);
  auto store = store::open_store((dir / "shared.db").string());  // kept between invocations: a cache

  std::printf("%-20s %8s %10s %12s %14s %14s %14s %14s\n", "goal", "space", "budget", "optimum", "loop to 5%",
              "bayes to 5%", "loop to goal", "bayes to goal");
  for (const auto& file : goals) {
    auto prepared = orchestrator::load_and_prepare(file);
    auto& goal = prepared.goal;
    std::uint64_t size = 0;
    for (const auto& v : prepared.setup.catalog.variants) size += v.space->size();
    if (size > cap) {
      std::printf("%-20s %8llu  skipped: the space exceeds the sweep cap of %llu (--cap N)\n",
                  goal.name.c_str(), static_cast<unsigned long long>(size),
                  static_cast<unsigned long long>(cap));
      continue;
    }
    orchestrator::SweepOptions sweep_options;
    sweep_options.jobs = 2;
    const auto sweep = orchestrator::run_sweep(goal, prepared.setup.catalog, *prepared.setup.target, *store,
                                               prepared.setup.simulator_version, sweep_options, 1);
    if (sweep.top.empty()) {
      std::printf("%-20s no valid configuration\n", goal.name.c_str());
      continue;
    }
    const double optimum = sweep.top.front().metric("latency_s").value();
    const double threshold = optimum * 1.05;
    const auto& best = sweep.top.front();
    const double bound = goal.objective == orchestrator::Objective::throughput
                             ? best.metric("throughput_flops_per_s").value_or(0) / 1.05
                         : goal.objective == orchestrator::Objective::mfu
                             ? best.metric("mfu_percent").value_or(0) / 1.05
                             : threshold;

    std::vector<std::string> names;
    for (const auto& v : prepared.setup.catalog.variants) names.push_back(v.name);
    const skills::FlatSpace flat = skills::flatten(prepared.setup.catalog, names);
    std::vector<SearchOutcome> loop, bayes;
    for (int k = 0; k < seeds; ++k) {
      orchestrator::Goal seeded = goal;
      seeded.seed = goal.seed + std::uint64_t(k);
      loop.push_back(run_loop(prepared, seeded, threshold, bound, *store));
      bayes.push_back(run_flat_bayes(prepared, flat, seeded, threshold, loop.back().start_value, *store));
      if (seeds > 1)
        std::printf("  seed %-4llu loop %-16s bayes %-16s to the goal: loop %-16s bayes %-16s (loop: %s)\n",
                    static_cast<unsigned long long>(seeded.seed), reached(loop.back()).c_str(),
                    reached(bayes.back()).c_str(),
                    reached(loop.back().evaluations_to_goal, loop.back().evaluations).c_str(),
                    reached(bayes.back().evaluations_to_goal, bayes.back().evaluations).c_str(),
                    loop.back().note.c_str());
    }
    std::printf("%-20s %8llu %10d %10.4g s %14s %14s %14s %14s", goal.name.c_str(),
                static_cast<unsigned long long>(size), goal.budget_evaluations, optimum,
                summarise(loop, &SearchOutcome::evaluations_to_bound).c_str(),
                summarise(bayes, &SearchOutcome::evaluations_to_bound).c_str(),
                summarise(loop, &SearchOutcome::evaluations_to_goal).c_str(),
                summarise(bayes, &SearchOutcome::evaluations_to_goal).c_str());
    if (seeds == 1) std::printf("   (loop: %s)", loop.front().note.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
