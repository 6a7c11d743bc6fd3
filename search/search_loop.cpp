#include "search/search_loop.hpp"

namespace autotune::search {

SearchRecord run_search(Strategy& strategy, const Evaluator& evaluate, const StopCondition& stop,
                        std::size_t batch_size) {
  if (batch_size == 0) throw UserError("batch size must be at least 1");
  SearchRecord record;
  SearchProgress progress;
  while (!stop.reached(progress)) {
    if (strategy.done()) {
      record.stopped_because = "strategy done";
      return record;
    }
    std::size_t want = batch_size;
    if (const auto budget = stop.evaluation_budget()) want = std::min(want, *budget - progress.evaluations());
    const auto batch = strategy.ask(want);
    if (batch.empty()) {
      record.stopped_because = "strategy done";
      return record;
    }
    std::vector<Observation> told;
    for (const auto& configuration : batch) {
      auto observation = evaluate(configuration);
      if (!observation) continue;
      progress.record(observation->value);
      record.observations.push_back(*observation);
      told.push_back(std::move(*observation));
    }
    strategy.tell(told);
  }
  record.stopped_because = stop.describe();
  return record;
}

std::vector<Observation> replay_run(const RecordedSpace& target, const std::string& strategy_name,
                                    std::uint64_t seed, std::size_t budget, const nlohmann::json& options,
                                    std::size_t batch_size,
                                    const std::vector<std::vector<Observation>>& related_runs) {
  auto strategy = make_strategy(strategy_name, target.space(), seed, options);
  if (!related_runs.empty()) strategy->learn_from(related_runs);
  return run_search(
             *strategy, [&](const Configuration& c) { return target.observe(c); },
             StopCondition::evaluations(budget), batch_size)
      .observations;
}

Trace replay_trace(const RecordedSpace& target, const std::string& strategy_name, std::uint64_t seed,
                   std::size_t budget, const nlohmann::json& options, std::size_t batch_size,
                   const std::vector<std::vector<Observation>>& related_runs) {
  Trace trace;
  for (const auto& observation :
       replay_run(target, strategy_name, seed, budget, options, batch_size, related_runs))
    trace.push_back(observation.value);
  return trace;
}

}  // namespace autotune::search
