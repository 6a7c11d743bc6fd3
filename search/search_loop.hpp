#pragma once
// A minimal driver for library users and benchmarks: ask a batch, evaluate
// it, tell the results, until the stop condition is reached or the strategy
// is done. (The orchestrator runs its own loop with parallel runners and a
// store; this one evaluates a batch in order on the calling thread.)
#include <functional>
#include <optional>

#include "search/recorded_space.hpp"
#include "search/scoring.hpp"
#include "search/stop_condition.hpp"
#include "search/strategy.hpp"

namespace autotune::search {

// Evaluates a configuration: an observation, or nothing when the
// configuration is outside what the evaluator can measure (not counted).
using Evaluator = std::function<std::optional<Observation>(const Configuration&)>;

struct SearchRecord {
  std::vector<Observation> observations;  // in evaluation order
  std::string stopped_because;            // the stop condition, or "strategy done"
};

SearchRecord run_search(Strategy& strategy, const Evaluator& evaluate, const StopCondition& stop,
                        std::size_t batch_size = 1);

// One benchmark run against a replayed space, `budget` evaluations at most,
// after the strategy learnt from `related_runs` (learn_from; none by default).
std::vector<Observation> replay_run(const RecordedSpace& target, const std::string& strategy,
                                    std::uint64_t seed, std::size_t budget,
                                    const nlohmann::json& options = {}, std::size_t batch_size = 1,
                                    const std::vector<std::vector<Observation>>& related_runs = {});
// The same run as its trace: the values of each evaluation in order (nothing
// for a failure).
Trace replay_trace(const RecordedSpace& target, const std::string& strategy, std::uint64_t seed,
                   std::size_t budget, const nlohmann::json& options = {}, std::size_t batch_size = 1,
                   const std::vector<std::vector<Observation>>& related_runs = {});

}  // namespace autotune::search
