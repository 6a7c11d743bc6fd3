// The loop's worth: for each example goal, how many evaluations the agentic
// loop and a plain `bayes` over the flattened space (the variant as one more
// categorical parameter) need to come within 5% of the sweep's optimum, with
// the same seed and the same evaluation budget. Both measure the goal's start
// point first and count it (the loop's baseline).
//
// Every goal is swept first (exhaustively; goals whose spaces exceed the cap
// are skipped and said so). The sweep, the loop and bayes share one database,
// so the loop and bayes are served from the sweep's measurements: identical
// numbers, counted as evaluations exactly as fresh ones would be.
// With --seeds N both run with the goal's seed and the N-1 following ones;
// the table then shows medians and how many runs got within 5%, and a line
// under the row pairs the two seed by seed: in how many seeds the loop got
// within 5% sooner than flat bayes, level with it (both at the same count,
// or neither within the budget) and later. A median of five heavy-tailed
// runs moves by several evaluations with the seeds; the pairing says whether
// one is ahead seed after seed or by one lucky run.
// Also printed: the evaluations each needed to reach the goal's own target
// (its improvement over the start point), from the same runs.
// Both stop as soon as they are within 5% of the optimum and have met the
// goal's own improvement (the loop's absolute bound is replaced by the 5%
// one; its budget, iterations and seed are the goal's).
//
// With --suite FILE the goals are a suite's tasks (docs/suite.md), each on
// each of the suite's targets, made exactly as `autotune suite` makes them
// (orchestrator::task_goal: its budget, iterations, strategy, seed, and the
// roofline bound as the goal's own target); --tasks and --targets choose
// among them. A task that is not yet a family is listed and skipped.
//
// With --limit N a space larger than N is not swept whole: its start point and
// a uniform sample of the rest, N in all, seeded by the goal's seed (as
// `autotune sweep --limit`); the optimum is then the sample's, which the
// searches may beat (that counts as within 5%), and the row says so.
//
//   build/bench/bench_agentic_value [goal.yaml ...] [--cap N] [--seeds N] [--limit N]
//   build/bench/bench_agentic_value --suite FILE [--tasks a,b] [--targets trn1,trn2] [--cap N] [--seeds N]
//                                   [--limit N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/suite.hpp"
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
  std::optional<skills::Candidate> start;  // the loop's first trial: the goal's start point
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

// A run that never got within the bound ranks after every run that did.
constexpr int kNever = 1 << 30;

// One seed: its figure. Several: the median (a search that never got within
// the bound counts as worse than any that did) and how many got there.
std::string summarise(const std::vector<SearchOutcome>& outcomes, std::optional<int> SearchOutcome::*figure) {
  if (outcomes.size() == 1) return reached(outcomes.front().*figure, outcomes.front().evaluations);
  std::vector<int> ranks;
  for (const auto& o : outcomes) ranks.push_back((o.*figure).value_or(kNever));
  std::sort(ranks.begin(), ranks.end());
  const auto got = std::count_if(ranks.begin(), ranks.end(), [](int r) { return r < kNever; });
  const int median = ranks[(ranks.size() - 1) / 2];
  return (median < kNever ? std::to_string(median) : std::string("none")) + " (" + std::to_string(got) + "/" +
         std::to_string(outcomes.size()) + ")";
}

struct PairedSeeds {
  int sooner = 0, level = 0, later = 0;
};

// Seed k's loop against seed k's flat bayes on evaluations to within 5%.
PairedSeeds pair_seeds(const std::vector<SearchOutcome>& loop, const std::vector<SearchOutcome>& bayes) {
  PairedSeeds paired;
  for (std::size_t k = 0; k < loop.size() && k < bayes.size(); ++k) {
    const int a = loop[k].evaluations_to_bound.value_or(kNever);
    const int b = bayes[k].evaluations_to_bound.value_or(kNever);
    (a < b ? paired.sooner : a == b ? paired.level : paired.later) += 1;
  }
  return paired;
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
  if (!trials.empty()) {
    out.start_value = orchestrator::objective_value(goal.objective, trials.front().metrics);
    out.start = skills::Candidate{trials.front().variant, trials.front().params};
  }
  for (const auto& trial : trials) count(out, goal, threshold, trial);
  out.note = summary.stop_reason + "; best " + summary.best.text();
  return out;
}

// Plain bayes over the flattened space, the goal's seed, budget and batches.
// Like the loop, it measures the goal's start point first (its improvement is
// over that point, so a run without it could not say whether the goal is met)
// and counts it. Bayes is not told it: its proposals stay exactly those of
// a plain bayes run (told the start point, bayes got slower on some goals:
// the slow start skews its first model).
SearchOutcome run_flat_bayes(orchestrator::PreparedGoal& prepared, const skills::FlatSpace& flat,
                             const orchestrator::Goal& goal, double threshold,
                             const std::optional<skills::Candidate>& start, std::optional<double> start_value,
                             store::Store& store) {
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
  if (start) {
    const auto measured = runner.measure({{*start, 0, std::nullopt, std::nullopt}});
    count(out, goal, threshold, measured.result.front().trial);
  }
  while (out.evaluations < goal.budget_evaluations &&
         !(out.evaluations_to_bound && out.evaluations_to_goal) && !strategy->done()) {
    const auto batch = strategy->ask(
        std::size_t(std::min(goal.effective_batch_size(), goal.budget_evaluations - out.evaluations)));
    if (batch.empty()) break;
    std::vector<skills::TrialRequest> requests;
    for (const auto& configuration : batch) {
      requests.push_back({flat.candidate(configuration), 0, std::nullopt, std::nullopt});
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

// Sweeps one prepared goal and compares the loop with flat bayes on it; one
// row of the table, named `label`.
void compare(orchestrator::PreparedGoal& prepared, const std::string& label, int width, std::uint64_t cap,
             std::optional<std::uint64_t> limit, int seeds, store::Store& store) {
  auto& goal = prepared.goal;
  std::uint64_t size = 0;
  for (const auto& v : prepared.setup.catalog.variants) size += v.space->size();
  const bool sampled = limit && size > *limit;
  if ((sampled ? *limit : size) > cap) {
    std::printf("%-*s %8llu  skipped: the space exceeds the sweep cap of %llu (--cap N)\n", width,
                label.c_str(), static_cast<unsigned long long>(size), static_cast<unsigned long long>(cap));
    return;
  }
  orchestrator::SweepOptions sweep_options;
  sweep_options.jobs = 2;
  if (sampled) sweep_options.limit = limit;
  const auto sweep = orchestrator::run_sweep(goal, prepared.setup.catalog, *prepared.setup.target, store,
                                             prepared.setup.simulator_version, sweep_options, 1);
  if (sweep.top.empty()) {
    std::printf("%-*s no valid configuration\n", width, label.c_str());
    return;
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
    loop.push_back(run_loop(prepared, seeded, threshold, bound, store));
    bayes.push_back(
        run_flat_bayes(prepared, flat, seeded, threshold, loop.back().start, loop.back().start_value, store));
    if (seeds > 1)
      std::printf("  seed %-4llu loop %-16s bayes %-16s to the goal: loop %-16s bayes %-16s (loop: %s)\n",
                  static_cast<unsigned long long>(seeded.seed), reached(loop.back()).c_str(),
                  reached(bayes.back()).c_str(),
                  reached(loop.back().evaluations_to_goal, loop.back().evaluations).c_str(),
                  reached(bayes.back().evaluations_to_goal, bayes.back().evaluations).c_str(),
                  loop.back().note.c_str());
  }
  std::printf("%-*s %8llu %10d %10.4g s %14s %14s %14s %14s", width, label.c_str(),
              static_cast<unsigned long long>(size), goal.budget_evaluations, optimum,
              summarise(loop, &SearchOutcome::evaluations_to_bound).c_str(),
              summarise(bayes, &SearchOutcome::evaluations_to_bound).c_str(),
              summarise(loop, &SearchOutcome::evaluations_to_goal).c_str(),
              summarise(bayes, &SearchOutcome::evaluations_to_goal).c_str());
  if (seeds == 1) std::printf("   (loop: %s)", loop.front().note.c_str());
  std::printf("\n");
  if (seeds > 1) {
    const auto paired = pair_seeds(loop, bayes);
    std::printf("%-*s (to 5%%, seed by seed: the loop sooner in %d, level in %d, later in %d of %d)\n", width,
                "", paired.sooner, paired.level, paired.later, seeds);
  }
  if (sampled)
    std::printf("%-*s (the optimum of a sample of %llu of the %llu configurations: --limit)\n", width, "",
                static_cast<unsigned long long>(*limit), static_cast<unsigned long long>(size));
  std::fflush(stdout);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A suite's (task, target) goals to compare, chosen by --tasks and --targets
// (empty: all), each made as `autotune suite` makes it. Every name is checked
// before anything is measured.
struct SuiteGoal {
  std::string label;
  std::string unavailable;  // not yet a family: why
  std::optional<orchestrator::PreparedGoal> prepared;
};
std::vector<SuiteGoal> suite_goals(const std::string& file, const std::vector<std::string>& tasks,
                                   const std::vector<std::string>& targets) {
  const orchestrator::Suite suite = orchestrator::load_suite(file);
  auto listed = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
  };
  std::vector<std::string> task_names;
  for (const auto& task : suite.tasks) task_names.push_back(task.name);
  for (const auto& name : tasks)
    if (std::find(task_names.begin(), task_names.end(), name) == task_names.end())
      throw UserError(file + ": --tasks: no task '" + name + "'; accepted: " + listed(task_names));
  for (const auto& name : targets)
    if (std::find(suite.targets.begin(), suite.targets.end(), name) == suite.targets.end())
      throw UserError(file + ": --targets: the suite has no target '" + name +
                      "'; accepted: " + listed(suite.targets));
  std::vector<SuiteGoal> out;
  for (const auto& task : suite.tasks) {
    if (!tasks.empty() && std::find(tasks.begin(), tasks.end(), task.name) == tasks.end()) continue;
    for (const auto& target : suite.targets) {
      if (!targets.empty() && std::find(targets.begin(), targets.end(), target) == targets.end()) continue;
      SuiteGoal goal;
      goal.label = task.name + "/" + target;
      goal.unavailable = task.unavailable;
      if (task.unavailable.empty()) {
        auto made = orchestrator::task_goal(suite, task, target);
        goal.prepared = orchestrator::PreparedGoal{std::move(made.goal), std::move(made.setup)};
      }
      out.push_back(std::move(goal));
    }
  }
  return out;
}

// The command line: the goal files, or a suite and its selection.
struct Options {
  std::vector<std::string> goals;
  std::string suite;
  std::vector<std::string> tasks, targets;
  // Includes the replay goal; the GEMM goals (~32 000 configurations) need --cap 40000.
  std::uint64_t cap = 8000;
  std::optional<std::uint64_t> limit;  // sweep a sample of at most this many
  int seeds = 1;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool takes_value = arg == "--cap" || arg == "--seeds" || arg == "--limit" || arg == "--suite" ||
                             arg == "--tasks" || arg == "--targets";
    if (takes_value && i + 1 >= argc) throw UserError(arg + ": missing its value");
    if (arg == "--cap")
      options.cap = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--limit")
      options.limit = std::max<std::uint64_t>(1, std::strtoull(argv[++i], nullptr, 10));
    else if (arg == "--seeds")
      options.seeds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--suite")
      options.suite = argv[++i];
    else if (arg == "--tasks")
      options.tasks = split_list(argv[++i]);
    else if (arg == "--targets")
      options.targets = split_list(argv[++i]);
    else
      options.goals.push_back(arg);
  }
  if (!options.suite.empty() && !options.goals.empty())
    throw UserError("--suite: give a suite or goal files, not both");
  if (options.suite.empty() && (!options.tasks.empty() || !options.targets.empty()))
    throw UserError("--tasks and --targets choose among a suite's goals: they need --suite FILE");
  return options;
}

}  // namespace

int main(int argc, char** argv) try {
  Options options = parse(argc, argv);
  // A suite's goals are all made (and so checked) before anything runs.
  std::vector<SuiteGoal> suite;
  if (!options.suite.empty()) suite = suite_goals(options.suite, options.tasks, options.targets);
  auto& goals = options.goals;
  if (options.suite.empty() && goals.empty())
    for (const char* name :
         {"quickstart", "exp-profiler", "replay-convolution", "qwen3-attention-16k", "gemm-article"})
      goals.push_back(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/goals/" + name + ".yaml");
  const auto dir = std::filesystem::temp_directory_path() / "autotune-bench-agentic-value";
  std::filesystem::create_directories(dir);
  auto store = store::open_store((dir / "shared.db").string());  // kept between invocations: a cache

  // Goal names fit 20 columns; a suite's task/target labels may need more.
  int width = 20;
  for (const auto& goal : suite) width = std::max<int>(width, int(goal.label.size()));
  std::printf("%-*s %8s %10s %12s %14s %14s %14s %14s\n", width, "goal", "space", "budget", "optimum",
              "loop to 5%", "bayes to 5%", "loop to goal", "bayes to goal");
  for (const auto& file : goals) {
    auto prepared = orchestrator::load_and_prepare(file);
    compare(prepared, prepared.goal.name, width, options.cap, options.limit, options.seeds, *store);
  }
  for (auto& goal : suite) {
    if (!goal.prepared) {
      std::printf("%-*s not yet a family: %s\n", width, goal.label.c_str(), goal.unavailable.c_str());
      continue;
    }
    compare(*goal.prepared, goal.label, width, options.cap, options.limit, options.seeds, *store);
  }
  return 0;
} catch (const autotune::UserError& e) {
  std::fprintf(stderr, "bench_agentic_value: error: %s\n", e.what());
  return 2;
}
