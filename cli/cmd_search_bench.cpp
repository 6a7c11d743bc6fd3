// autotune search-bench: run a search strategy against recorded, brute-forced
// tuning spaces (Kernel Tuner cachefiles) and write or score the traces.
//
//   autotune search-bench CACHEFILE... --strategy NAME --budget N|auto [--repeats R]
//                         [--seed S] [--batch K] [--options JSON] [--transfer N] [--jobs J]
//                         [--json OUT]
//   autotune search-bench CACHEFILE... --score TRACES.json [--json SCORES.json]
//
// Traces: {"<parent-dir>/<file-stem>": [[v1, v2, ...], ...]}, per repeat the
// objective of every evaluation in order, null for a failed configuration.
// Scores with --json: {"<space>": {"score", "low_budget", "high_budget",
// "median_fraction_of_optimum", "objective": the recorded field minimised
// ("time", or a negated score), "optimum": its best recorded value,
// "per_repeat": [each repeat's own score],
// "bootstrap_se": the score's standard error over repeats, "curve": P(M) for
// M = 1 .. the window's end or the longest trace, whichever is later}}.
// Repeat r uses seed S + r. `--budget auto` runs each file for its B(0.95)
// capped at 300, the largest budget its score looks at.
// With `--transfer N`, every run first learns (Strategy::learn_from) from runs
// on the related spaces among the files given (the same kernel and parameters:
// RecordedSpace::same_kernel_as): one run of N evaluations of bayes with its
// defaults on each, seed S + r + 1000000 in repeat r, as a store would hold
// from earlier tunings on other devices. A file's own recording never informs
// its runs.
// Runs are independent and each has its own seed, so `--jobs J` runs J at
// once (threads) and the traces are the same for every J.
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "core/output_file.hpp"
#include "kernels/calibration.hpp"
#include "search/search_loop.hpp"

namespace autotune::cli {

namespace {

struct SearchBenchArguments {
  std::vector<std::string> cachefiles;
  std::string strategy;
  std::string budget;
  int repeats = 10;  // seeds per file: enough for a median, quick on recorded spaces
  std::uint64_t seed = 1;
  std::size_t batch = 1;
  std::string options = "{}";
  std::string json_out;
  std::string score_file;
  std::size_t transfer = 0;  // evaluations of each related run; 0: no transfer
  int jobs = 2;              // runs at once
};

constexpr std::uint64_t kRelatedSeedOffset = 1000000;

std::size_t parse_budget(const std::string& text, const search::SpaceScoring& scoring) {
  if (text == "auto") return scoring.capped_budget(0.95);
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0)
    throw UserError("--budget '" + text + "': expected a positive integer or 'auto'");
  if (value < 1) throw UserError("--budget " + text + ": the budget must be at least 1 evaluation");
  return static_cast<std::size_t>(value);
}

void print_scores(const std::vector<std::string>& names, const std::vector<search::SpaceScore>& scores,
                  const std::string& heading) {
  std::cout << heading << "\n";
  std::cout << std::left << std::setw(28) << "space" << std::right << std::setw(14) << "B(0.01..0.95)"
            << std::setw(9) << "score" << std::setw(22) << "median best/optimum\n";
  std::vector<double> fractions;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::ostringstream window;
    window << scores[i].low_budget << ".." << scores[i].high_budget;
    std::cout << std::left << std::setw(28) << names[i] << std::right << std::setw(14) << window.str()
              << std::fixed << std::setprecision(3) << std::setw(9) << scores[i].score << std::setw(21)
              << scores[i].median_fraction_of_optimum << "\n";
    fractions.push_back(scores[i].median_fraction_of_optimum);
  }
  std::sort(fractions.begin(), fractions.end());
  const double median_fraction =
      fractions.size() % 2 ? fractions[fractions.size() / 2]
                           : 0.5 * (fractions[fractions.size() / 2 - 1] + fractions[fractions.size() / 2]);
  std::cout << std::left << std::setw(28) << "overall (mean / median)" << std::right << std::setw(14) << ""
            << std::setw(9) << search::mean_score(scores) << std::setw(21) << median_fraction << "\n";
}

std::vector<search::Trace> traces_from_json(const nlohmann::json& runs, const std::string& where) {
  if (!runs.is_array()) throw UserError(where + ": expected a list of runs");
  std::vector<search::Trace> out;
  for (const auto& run : runs) {
    if (!run.is_array()) throw UserError(where + ": each run must be a list of values");
    search::Trace trace;
    for (const auto& v : run) {
      if (v.is_null())
        trace.emplace_back();
      else if (v.is_number())
        trace.emplace_back(v.get<double>());
      else
        throw UserError(where + ": '" + v.dump() + "' is neither a number nor null");
    }
    out.push_back(std::move(trace));
  }
  if (out.empty()) throw UserError(where + ": no run");
  return out;
}

// The files --json must not replace: the cachefiles and the traces it reads.
std::vector<KeptFile> input_files(const SearchBenchArguments& args) {
  std::vector<KeptFile> files;
  for (const auto& file : args.cachefiles) files.push_back({file, "a cachefile it reads"});
  if (!args.score_file.empty()) files.push_back({args.score_file, "the trace file it scores"});
  return files;
}

int run_search_bench(const SearchBenchArguments& args) {
  if (args.cachefiles.empty()) throw UserError("search-bench: no CACHEFILE given");
  if (!args.json_out.empty()) check_output_path(args.json_out, "--json", input_files(args));
  std::vector<search::RecordedSpace> targets;
  std::map<std::string, std::size_t> by_name;
  for (const auto& file : args.cachefiles) {
    targets.push_back(search::RecordedSpace::load(file));
    if (!by_name.emplace(targets.back().name(), targets.size() - 1).second)
      throw UserError("search-bench: two cachefiles are both named '" + targets.back().name() +
                      "' (parent-dir/stem)");
  }

  std::vector<std::string> names;
  std::vector<search::SpaceScore> scores;
  if (!args.score_file.empty()) {
    std::ifstream in(args.score_file);
    if (!in) throw UserError(args.score_file + ": trace file not found");
    nlohmann::json document;
    try {
      document =
          parse_json(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(args.score_file + ": invalid JSON (" + e.what() + ")");
    }
    if (!document.is_object())
      throw UserError(args.score_file + ": expected {\"<space>\": [[values...], ...]}");
    nlohmann::json score_json = nlohmann::json::object();
    for (const auto& target : targets) {
      if (!document.contains(target.name()))
        throw UserError(args.score_file + ": no traces for '" + target.name() + "'");
      const std::string where = args.score_file + ": " + target.name();
      const auto traces = traces_from_json(document.at(target.name()), where);
      const search::SpaceScoring scoring(target.valid_values());
      // A trace holds values of the space's configurations: none is better than its optimum.
      const double optimum = scoring.optimum();
      for (std::size_t r = 0; r < traces.size(); ++r) {
        if (traces[r].empty()) throw UserError(where + ": run " + std::to_string(r + 1) + " is empty");
        for (std::size_t e = 0; e < traces[r].size(); ++e) {
          const auto& v = traces[r][e];
          if (!v || (std::isfinite(*v) && *v >= optimum - 1e-9 * std::max(1.0, std::fabs(optimum)))) continue;
          char text[96];
          std::snprintf(text, sizeof text, "%.10g is below the space's optimum %.10g", *v, optimum);
          throw UserError(where + ": run " + std::to_string(r + 1) + ", evaluation " + std::to_string(e + 1) +
                          ": " + (std::isfinite(*v) ? text : "not a finite number") +
                          " (a trace holds the values of the space's configurations, in the "
                          "cachefile's objective)");
        }
      }
      names.push_back(target.name());
      scores.push_back(scoring.score(traces));
      // Each repeat scored on its own: the spread a mean over repeats hides.
      nlohmann::json per_repeat = nlohmann::json::array();
      for (const auto& trace : traces) per_repeat.push_back(scoring.score({trace}).score);
      const auto& score = scores.back();
      // P(M) from the first evaluation to the window's end or the longest
      // trace, whichever is later: what compares spaces of different budgets
      // at equal evaluations.
      std::size_t last = score.high_budget;
      for (const auto& trace : traces) last = std::max(last, trace.size());
      nlohmann::json curve = nlohmann::json::array();
      for (std::size_t m = 1; m <= last; ++m)
        curve.push_back(m >= score.low_budget && m <= score.high_budget
                            ? score.performance[m - score.low_budget]  // computed by score()
                            : scoring.performance(traces, m));
      score_json[target.name()] = {{"score", score.score},
                                   {"low_budget", score.low_budget},
                                   {"high_budget", score.high_budget},
                                   {"median_fraction_of_optimum", score.median_fraction_of_optimum},
                                   {"objective", target.objective()},
                                   {"optimum", scoring.optimum()},
                                   {"per_repeat", per_repeat},
                                   {"bootstrap_se", scoring.bootstrap_standard_error(traces)},
                                   {"curve", curve}};
    }
    if (!args.json_out.empty()) {
      write_output_file(args.json_out, score_json.dump(1) + "\n", "--json", input_files(args));
      return 0;
    }
    print_scores(names, scores, "traces " + args.score_file);
    return 0;
  }

  if (args.strategy.empty())
    throw UserError("search-bench: --strategy is required (accepted: " +
                    search::strategy_registry().joined_names() + ")");
  search::strategy_registry().get(args.strategy);  // unknown name: one clear line before any work
  if (args.budget.empty())
    throw UserError("search-bench: --budget is required (a positive integer or 'auto')");
  // Every run's trace is held until the scores are printed: a bound keeps a typo from exhausting memory.
  constexpr int kMaxRepeats = 100000;
  if (args.repeats < 1 || args.repeats > kMaxRepeats)
    throw UserError("search-bench: --repeats " + std::to_string(args.repeats) +
                    " is out of range; accepted: 1 to " + std::to_string(kMaxRepeats));
  if (args.seed > std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(args.repeats - 1))
    throw UserError("search-bench: --seed " + std::to_string(args.seed) + " with --repeats " +
                    std::to_string(args.repeats) + " runs past the largest seed (2^64 - 1)");
  if (args.batch < 1) throw UserError("search-bench: --batch must be at least 1");
  if (args.jobs < 1) throw UserError("search-bench: --jobs must be at least 1");
  nlohmann::json options;
  try {
    options = parse_json(args.options);
  } catch (const nlohmann::json::exception&) {
    throw UserError("search-bench: --options '" + args.options + "' is not JSON");
  }
  // Validate the budget and the options before the first run.
  std::vector<search::SpaceScoring> scorings;
  std::vector<std::size_t> budgets;
  for (const auto& target : targets) {
    scorings.emplace_back(target.valid_values());
    budgets.push_back(parse_budget(args.budget, scorings.back()));
  }
  search::make_strategy(args.strategy, targets.front().space(), args.seed, options);

  const auto repeats = static_cast<std::size_t>(args.repeats);
  const auto seed_of = [&](std::size_t repeat) { return args.seed + static_cast<std::uint64_t>(repeat); };
  // Per file, the other files that record the same kernel; their runs (one per repeat) are made once and
  // shared by every file they inform.
  std::vector<std::vector<std::size_t>> relatives(targets.size());
  std::vector<std::vector<std::vector<search::Observation>>> related_run(
      targets.size(), std::vector<std::vector<search::Observation>>(repeats));
  if (args.transfer > 0) {
    std::vector<bool> informs(targets.size(), false);
    for (std::size_t t = 0; t < targets.size(); ++t)
      for (std::size_t other = 0; other < targets.size(); ++other)
        if (other != t && targets[other].same_kernel_as(targets[t])) {
          relatives[t].push_back(other);
          informs[other] = true;
        }
    kernels::parallel_for(
        targets.size() * repeats,
        [&](std::size_t i) {
          const std::size_t other = i / repeats, repeat = i % repeats;
          if (informs[other])
            related_run[other][repeat] = search::replay_run(
                targets[other], "bayes", seed_of(repeat) + kRelatedSeedOffset, args.transfer);
        },
        static_cast<unsigned>(args.jobs));
  }
  const auto related_runs = [&](std::size_t target, std::size_t repeat) {
    std::vector<std::vector<search::Observation>> runs;
    for (std::size_t other : relatives[target]) runs.push_back(related_run[other][repeat]);
    return runs;
  };

  std::vector<std::vector<search::Trace>> traces(targets.size(), std::vector<search::Trace>(repeats));
  kernels::parallel_for(
      targets.size() * repeats,
      [&](std::size_t i) {
        const std::size_t t = i / repeats, r = i % repeats;
        log::info("search-bench: " + targets[t].name() + " repeat " + std::to_string(r + 1) + "/" +
                  std::to_string(args.repeats) + ", budget " + std::to_string(budgets[t]));
        traces[t][r] = search::replay_trace(targets[t], args.strategy, seed_of(r), budgets[t], options,
                                            args.batch, related_runs(t, r));
      },
      static_cast<unsigned>(args.jobs));

  nlohmann::json traces_json = nlohmann::json::object();
  for (std::size_t t = 0; t < targets.size(); ++t) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& trace : traces[t]) {
      nlohmann::json run = nlohmann::json::array();
      for (const auto& v : trace) run.push_back(v ? nlohmann::json(*v) : nlohmann::json());
      runs.push_back(std::move(run));
    }
    traces_json[targets[t].name()] = std::move(runs);
    names.push_back(targets[t].name());
    scores.push_back(scorings[t].score(traces[t]));
  }
  if (!args.json_out.empty()) {
    write_output_file(args.json_out, traces_json.dump() + "\n", "--json", input_files(args));
    return 0;
  }
  print_scores(names, scores,
               "strategy " + args.strategy + ", budget " + args.budget + ", " + std::to_string(args.repeats) +
                   " repeats, seeds " + std::to_string(args.seed) + ".." +
                   std::to_string(args.seed + static_cast<std::uint64_t>(args.repeats) - 1));
  return 0;
}

const CommandRegistration registration(
    "search-bench", "Run a search strategy against recorded tuning spaces (Kernel Tuner cachefiles)",
    [](CLI::App& app) -> CommandAction {
      auto args = std::make_shared<SearchBenchArguments>();
      app.add_option("cachefiles", args->cachefiles, "Kernel Tuner cachefiles (JSON)")->required();
      app.add_option("--strategy", args->strategy, "Strategy name (grid, random, bayes, annealing, ...)");
      app.add_option("--budget", args->budget,
                     "Evaluations per run: a positive integer, or 'auto' for B(0.95) capped at 300");
      app.add_option("--repeats", args->repeats, "Runs per file (seeds S, S+1, ...; default 10)")
          ->check(whole_number_in(1, 100000));
      app.add_option("--seed", args->seed, "First seed (default 1)")->check(check_uint64);
      app.add_option("--batch", args->batch, "Configurations asked per batch (default 1)")
          ->check(check_uint64);
      app.add_option("--options", args->options, "Strategy options as a JSON object");
      app.add_option("--transfer", args->transfer,
                     "Learn from a bayes run of N evaluations on each related file (same kernel and "
                     "parameters) before each run (default 0: none)")
          ->check(check_uint64);
      app.add_option("--jobs", args->jobs, "Runs at once (default 2); the traces do not depend on it")
          ->check(whole_number_in(1, 256));
      app.add_option("--json", args->json_out,
                     "Write the traces (or, with --score, the scores per space and per repeat) to this file "
                     "instead of printing scores");
      app.add_option("--score", args->score_file,
                     "Score a trace file (same format as --json) instead of running");
      return [args] { return run_search_bench(*args); };
    });

}  // namespace

}  // namespace autotune::cli
