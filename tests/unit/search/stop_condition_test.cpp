#include <doctest/doctest.h>

#include "core/error.hpp"
#include "search/search_loop.hpp"

using namespace autotune;
using namespace autotune::search;

TEST_CASE("stop conditions: budget, target, no improvement, any-of") {
  SearchProgress progress;
  const auto budget = StopCondition::evaluations(3);
  const auto target = StopCondition::target(1.0);
  const auto patience = StopCondition::no_improvement(2);
  const auto any = budget || target;
  progress.record(5.0);
  CHECK_FALSE(budget.reached(progress));
  CHECK_FALSE(patience.reached(progress));
  progress.record(std::nullopt);  // a failure counts as an evaluation
  CHECK(progress.evaluations_since_improvement() == 1);
  progress.record(0.5);
  CHECK(budget.reached(progress));
  CHECK(target.reached(progress));
  CHECK(any.reached(progress));
  progress.record(7.0);
  progress.record(8.0);
  CHECK(patience.reached(progress));
  CHECK(progress.best() == 0.5);
  CHECK(any.evaluation_budget() == 3);
  CHECK_FALSE(target.evaluation_budget().has_value());
  CHECK_FALSE(StopCondition::never().reached(progress));
  CHECK(any.describe() == "3 evaluations or target 1 reached");
  CHECK_THROWS_AS(StopCondition::evaluations(0), UserError);
}

TEST_CASE("the search loop stops at the first condition reached") {
  const SearchSpace space({ParameterSpec::range("x", 0, 99)});
  auto strategy = make_strategy("grid", space, 0);
  const auto record = run_search(
      *strategy,
      [](const Configuration& c) {
        return std::optional(Observation::success(c, 100.0 - numeric_value(c[0])));
      },
      StopCondition::evaluations(50) || StopCondition::target(95.0), 4);
  CHECK(record.observations.size() == 8);  // x = 0..7, value 93 reached after the 6th; batches of 4
  CHECK(record.stopped_because.find("target") != std::string::npos);

  auto wall = make_strategy("random", space, 0);
  const auto timed = run_search(
      *wall, [](const Configuration& c) { return std::optional(Observation::success(c, 1.0)); },
      StopCondition::wall_time(1e-9) || StopCondition::evaluations(1000));
  CHECK(timed.observations.size() <= 1);

  auto all = make_strategy("random", space, 0);
  const auto exhausted = run_search(
      *all, [](const Configuration& c) { return std::optional(Observation::success(c, 1.0)); },
      StopCondition::evaluations(1000), 7);
  CHECK(exhausted.observations.size() == 100);
  CHECK(exhausted.stopped_because == "strategy done");
}
