// Screened tuning's worth (docs/loop.md, "Screened tuning"): how many device
// evaluations a search needs to come within 5% of the device's optimum with
// a simulated screen in front of the device, and without it.
//
// The device is a stand-in: the simulator with another target file
// (bench/targets/trn2-standin.yaml: trn2 with its fitted constants moved
// about 30%); the screen simulates at the goal's screen.target (trn2) and
// learns the difference from the device's measurements only. Each goal's
// device space is swept first (exhaustively) for its optimum. Then, per seed:
//  - bayes over the flattened space (the variant as one more categorical
//    parameter), unscreened: each batch of `keep` proposals goes to the device;
//  - the same bayes, screened: each round it proposes `propose`, the screen
//    (skills/screen.hpp, as the Param Explorer uses it) keeps the best `keep`,
//    the others are released back to it, and it is told the device's values
//    only; the screen learns from every device trial;
//  - with --loop, the agentic loop with the goal's screen and without it.
// Each stops once within 5% of the optimum or at the goal's budget. Printed per
// seed and as medians: device evaluations to within 5% (a search that never got
// there counts as worse than any that did) and the simulations the screen
// spent. The goal: screened bayes within 5% in at most a third of the device
// evaluations unscreened bayes needs.
//
// The sweep and the searches share one database under $TMPDIR (a cache
// between invocations; the device's numbers are the same whether measured or
// served from it).
//
// With --refit-cost, instead: screened bayes over the goal's whole budget,
// the screen's refit on the last 16 device trials and on every one, and the
// simulations each spent.
//
//   build/bench/bench_screened_tuning [goal.yaml ...] [--seeds N] [--first-seed S] [--propose N] [--loop]
//                                     [--refit-cost]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "orchestrator/orchestrator.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/sweep.hpp"
#include "search/strategy.hpp"
#include "skills/benchmark_runner.hpp"
#include "skills/screen.hpp"
#include "store/store.hpp"

using namespace autotune;

namespace {

struct LoopOutcome {
  std::optional<int> evaluations_to_bound;  // device evaluations to within 5% of the optimum
  int evaluations = 0;
  long screen_simulations = 0;
  std::string best;
};

LoopOutcome run_loop(orchestrator::PreparedGoal& prepared, orchestrator::Goal goal, double threshold,
                     store::Store& store) {
  goal.improvement.reset();
  goal.absolute = threshold;  // stop once within 5% of the optimum (a latency objective)
  orchestrator::RunOptions options;
  options.jobs = 2;
  orchestrator::RunContext context{goal,  prepared.setup.catalog,           *prepared.setup.target,
                                   store, prepared.setup.simulator_version, options};
  const auto summary = orchestrator::Orchestrator(context).run();
  LoopOutcome out;
  for (const auto& trial : store.trials(summary.run_id)) {
    ++out.evaluations;
    const auto latency = trial.metric("latency_s");
    if (is_measured(trial.status) && latency && *latency <= threshold && !out.evaluations_to_bound)
      out.evaluations_to_bound = out.evaluations;
  }
  out.screen_simulations = summary.screen_simulations.value_or(0);
  out.best = summary.best.text();
  return out;
}

// The catalog's variants as one space: the variant a categorical parameter,
// every other parameter pinned where the variant lacks it (agentic_value.cpp).
std::unique_ptr<search::SearchSpace> flatten(const skills::VariantCatalog& catalog) {
  std::vector<std::string> names, order;
  std::map<std::string, std::vector<search::ParamValue>> domains;
  std::map<std::string, double> constants;
  for (const auto& v : catalog.variants) {
    names.push_back(v.name);
    constants.insert(v.constants.begin(), v.constants.end());
    for (const auto& p : v.parameters) {
      if (!domains.count(p.name())) order.push_back(p.name());
      auto& d = domains[p.name()];
      for (const auto& value : p.values())
        if (std::none_of(d.begin(), d.end(), [&](const auto& x) { return search::same_value(x, value); }))
          d.push_back(value);
    }
  }
  std::vector<search::ParameterSpec> parameters{search::ParameterSpec::categorical("variant", names)};
  for (const auto& name : order) {
    auto d = domains[name];
    std::sort(d.begin(), d.end(), [](const auto& a, const auto& b) {
      return search::numeric_value(a) < search::numeric_value(b);
    });
    parameters.push_back(search::ParameterSpec::ordered(name, d));
  }
  std::vector<std::string> constraints;
  for (const auto& v : catalog.variants) {
    const std::string guard = "variant != '" + v.name + "' || ";
    for (const auto& c : v.constraints) constraints.push_back(guard + "(" + c + ")");
    for (const auto& name : order) {
      const auto* p = v.parameter(name);
      if (!p) {
        constraints.push_back(guard + name + " == " + search::to_string(domains[name].front()));
        continue;
      }
      if (p->size() == domains[name].size()) continue;
      std::string allowed;
      for (const auto& value : p->values())
        allowed += (allowed.empty() ? "" : " || ") + name + " == " + search::to_string(value);
      constraints.push_back(guard + "(" + allowed + ")");
    }
  }
  return std::make_unique<search::SearchSpace>(parameters, constraints, constants);
}

// Bayes over the flattened space on the device, screened when `screened`.
LoopOutcome run_flat(orchestrator::PreparedGoal& prepared, const search::SearchSpace& space,
                     const orchestrator::Goal& goal, double threshold, bool screened, store::Store& store,
                     std::size_t refit_window = skills::kScreenRefitWindow, int* refits = nullptr) {
  store::Run record;
  record.goal_name = goal.name + (screened ? " (flattened bayes, screened)" : " (flattened bayes)");
  record.goal_yaml = orchestrator::to_yaml(goal);
  record.seed = goal.seed;
  record.id = store.create_run(record);
  skills::BenchmarkRunner runner(*prepared.setup.target, store, record.id, {2, goal.timeout_s});
  auto strategy = search::make_strategy("bayes", space, Rng(goal.seed).fork("param_explorer").seed(),
                                        goal.strategy_options);
  std::optional<skills::SimulatedScreen> screen;
  if (screened) {
    skills::ScreenConfig config;
    config.target = goal.screen->target;
    config.family = goal.screen->family;
    config.shape = goal.screen->shape;
    config.dtype = goal.screen->dtype;
    config.correction = goal.screen->correction;
    config.threads = 2;
    config.refit_window = refit_window;
    screen.emplace(config);
  }
  auto candidate_of = [&](const search::Configuration& configuration) {
    const std::string variant = std::get<std::string>(configuration[0]);
    skills::Candidate candidate{variant, nlohmann::json::object()};
    for (const auto& p : prepared.setup.catalog.variant(variant).parameters)
      candidate.params[p.name()] = search::to_json(configuration[*space.parameter_index(p.name())]);
    if (candidate.params.empty()) candidate.params["_"] = 0;
    return candidate;
  };
  LoopOutcome out;
  const int keep = goal.screen->keep;
  while (out.evaluations < goal.budget_evaluations && !out.evaluations_to_bound && !strategy->done()) {
    const std::size_t k = std::size_t(std::min(keep, goal.budget_evaluations - out.evaluations));
    auto batch = strategy->ask(screened ? std::size_t(goal.screen->propose) : k);
    if (batch.empty()) break;
    std::vector<skills::Candidate> candidates;
    for (const auto& c : batch) candidates.push_back(candidate_of(c));
    if (screened && batch.size() > k) {
      const auto chosen = skills::SimulatedScreen::choose(screen->predict(candidates), k);
      std::vector<bool> kept(batch.size(), false);
      std::vector<search::Configuration> kept_batch, released;
      std::vector<skills::Candidate> kept_candidates;
      for (std::size_t i : chosen) {
        kept[i] = true;
        kept_batch.push_back(batch[i]);
        kept_candidates.push_back(candidates[i]);
      }
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (!kept[i]) released.push_back(batch[i]);
      strategy->release(released);
      batch = std::move(kept_batch);
      candidates = std::move(kept_candidates);
    }
    std::vector<skills::TrialRequest> requests;
    for (const auto& c : candidates) requests.push_back({c, 0, std::nullopt});
    const auto measured = runner.measure(requests);
    std::vector<search::Observation> observations;
    std::vector<std::pair<skills::Candidate, double>> device;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& trial = measured.result[i].trial;
      const auto latency = trial.metric("latency_s");
      ++out.evaluations;
      if (is_measured(trial.status) && latency) {
        observations.push_back(search::Observation::success(batch[i], *latency));
        device.push_back({candidates[i], *latency});
        if (*latency <= threshold && !out.evaluations_to_bound) out.evaluations_to_bound = out.evaluations;
      } else {
        observations.push_back(search::Observation::failed(batch[i], trial.error));
      }
    }
    strategy->tell(observations);
    if (screen && !device.empty()) screen->learn(device);
  }
  if (screen) out.screen_simulations = screen->simulations();
  if (screen && refits) *refits = screen->correction_json().value("refits", 0);
  record.status = store::RunStatus::completed;
  store.update_run(record);
  return out;
}

std::string reached(const LoopOutcome& o) {
  return o.evaluations_to_bound ? std::to_string(*o.evaluations_to_bound)
                                : "not in " + std::to_string(o.evaluations);
}

// The median over seeds; a run that never got within the bound ranks last.
int median(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> goals;
  int seeds = 5;
  std::uint64_t first_seed = 1;
  bool loop = false;        // also the agentic loop, screened and not
  bool refit_cost = false;  // instead: the refit's cost, windowed and over every trial
  int propose = 0;          // > 0: overrides the goals' screen.propose
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seeds" && i + 1 < argc)
      seeds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--loop")
      loop = true;
    else if (arg == "--refit-cost")
      refit_cost = true;
    else if (arg == "--propose" && i + 1 < argc)
      propose = std::atoi(argv[++i]);
    else if (arg == "--first-seed" && i + 1 < argc)
      first_seed = std::strtoull(argv[++i], nullptr, 10);
    else
      goals.push_back(arg);
  }
  if (goals.empty())
    for (const char* name : {"screened-attention", "screened-gemm"})
      goals.push_back(std::string(AUTOTUNE_SOURCE_DIR) + "/bench/goals/" + name + ".yaml");
  // Target files in the goals are relative to the source tree.
  std::filesystem::current_path(AUTOTUNE_SOURCE_DIR);
  const auto dir = std::filesystem::temp_directory_path() / "autotune-bench-screened-tuning";
  std::filesystem::create_directories(dir);
  auto store = store::open_store((dir / "shared.db").string());

  for (const auto& file : goals) {
    auto prepared = orchestrator::load_and_prepare(file);
    auto& goal = prepared.goal;
    if (goal.screen && propose > goal.screen->keep) goal.screen->propose = propose;
    if (!goal.screen) {
      std::printf("%s: the goal has no screen:\n", file.c_str());
      return 2;
    }
    std::uint64_t size = 0;
    for (const auto& v : prepared.setup.catalog.variants) size += v.space->size();
    orchestrator::SweepOptions sweep_options;
    sweep_options.jobs = 2;
    const auto sweep = orchestrator::run_sweep(goal, prepared.setup.catalog, *prepared.setup.target, *store,
                                               prepared.setup.simulator_version, sweep_options, 1);
    if (sweep.top.empty()) {
      std::printf("%s: no valid configuration\n", goal.name.c_str());
      continue;
    }
    const double optimum = sweep.top.front().metric("latency_s").value();
    const double threshold = optimum * 1.05;
    std::printf(
        "%s: %llu configurations on %s; device optimum %.4g ms (%s %s); screen %s, keep %d, propose "
        "%d, correction %s\n",
        goal.name.c_str(), static_cast<unsigned long long>(size), goal.target.name.c_str(), optimum * 1e3,
        sweep.top.front().variant.c_str(), sweep.top.front().params.dump().c_str(),
        goal.screen->target.c_str(), goal.screen->keep, goal.screen->propose,
        goal.screen->correction.c_str());
    const auto flat = flatten(prepared.setup.catalog);
    if (refit_cost) {
      // Screened bayes over the whole budget (no stop at the bound), the refit
      // on the last kScreenRefitWindow device trials and on every one: the
      // simulations the screen spent, and the best the device measured.
      for (int k = 0; k < seeds; ++k) {
        orchestrator::Goal seeded = goal;
        seeded.seed = first_seed + std::uint64_t(k);
        std::printf("  seed %llu, %d device evaluations:", static_cast<unsigned long long>(seeded.seed),
                    goal.budget_evaluations);
        for (std::size_t window : {skills::kScreenRefitWindow, std::size_t(0)}) {
          int refits = 0;
          const auto outcome = run_flat(prepared, *flat, seeded, 0.0, true, *store, window, &refits);
          std::printf("  refit on %s: %ld simulations, %d refits", window ? "the last 16" : "every trial",
                      outcome.screen_simulations, refits);
        }
        std::printf("\n");
        std::fflush(stdout);
      }
      continue;
    }
    struct Column {
      const char* name;
      std::vector<int> to;
      std::vector<int> simulations;
    };
    std::vector<Column> columns{{"bayes screened", {}, {}},
                                {"bayes unscreened", {}, {}},
                                {"loop screened", {}, {}},
                                {"loop unscreened", {}, {}}};
    constexpr int kNever = 1 << 20;
    for (int k = 0; k < seeds; ++k) {
      orchestrator::Goal seeded = goal;
      seeded.seed = first_seed + std::uint64_t(k);
      orchestrator::Goal plain_goal = seeded;
      plain_goal.screen.reset();
      std::vector<LoopOutcome> outcomes{run_flat(prepared, *flat, seeded, threshold, true, *store),
                                        run_flat(prepared, *flat, seeded, threshold, false, *store)};
      if (loop) {
        outcomes.push_back(run_loop(prepared, seeded, threshold, *store));
        outcomes.push_back(run_loop(prepared, plain_goal, threshold, *store));
      }
      std::printf("  seed %llu  device evaluations to within 5%%:",
                  static_cast<unsigned long long>(seeded.seed));
      for (std::size_t c = 0; c < outcomes.size(); ++c) {
        columns[c].to.push_back(outcomes[c].evaluations_to_bound.value_or(kNever));
        columns[c].simulations.push_back(int(outcomes[c].screen_simulations));
        std::printf("  %s %s", columns[c].name, reached(outcomes[c]).c_str());
        if (outcomes[c].screen_simulations > 0)
          std::printf(" (%ld simulations)", outcomes[c].screen_simulations);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    auto text = [&](int v) { return v == kNever ? std::string("never") : std::to_string(v); };
    std::printf("%s: medians over %d seeds, device evaluations to within 5%%:", goal.name.c_str(), seeds);
    for (auto& column : columns) {
      if (column.to.empty()) continue;
      std::printf("  %s %s", column.name, text(median(column.to)).c_str());
      if (median(column.simulations) > 0) std::printf(" (%d simulations)", median(column.simulations));
    }
    // The goal: within 5% in at most a third of the evaluations unscreened bayes needs.
    const int p = median(columns[1].to);
    std::printf("\n");
    for (std::size_t c : {std::size_t(0), std::size_t(2)}) {
      if (columns[c].to.empty()) continue;
      const int s = median(columns[c].to);
      char ratio[32] = "n/a";
      if (s != kNever && p != kNever) std::snprintf(ratio, sizeof ratio, "%.2f", double(s) / p);
      std::printf("%s: %s / bayes unscreened %s; goal <= 1/3: %s\n", goal.name.c_str(), columns[c].name,
                  ratio, s != kNever && (p == kNever || 3 * s <= p) ? "met" : "not met");
    }
    std::fflush(stdout);
  }
  return 0;
}
