#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "search/search_loop.hpp"

using namespace autotune;
using namespace autotune::search;

namespace {

const std::vector<std::string> kStrategies{"grid", "random", "bayes", "annealing", "genetic", "coordinate"};

SearchSpace test_space() {
  return SearchSpace({ParameterSpec::range("x", 0, 15), ParameterSpec::powers_of_two("y", 1, 64),
                      ParameterSpec::categorical("mode", {"a", "b", "c"})},
                     {"x * y <= 400"});
}

// Smooth, with a single optimum away from the corners.
double smooth(const SearchSpace& space, const Configuration& c) {
  const double x = numeric_value(c[0]), y = std::log2(numeric_value(c[1]));
  const double mode = static_cast<double>(*space.parameters()[2].position(c[2]));
  return 1.0 + (x - 9) * (x - 9) / 20.0 + (y - 2) * (y - 2) / 3.0 + 0.5 * mode;
}

std::string key(const SearchSpace& space, const Configuration& c) { return to_string(space, c); }

std::vector<std::string> run(const std::string& name, std::uint64_t seed, std::size_t budget,
                             std::size_t batch) {
  const SearchSpace space = test_space();
  auto strategy = make_strategy(name, space, seed);
  const auto record = run_search(
      *strategy,
      [&](const Configuration& c) { return std::optional(Observation::success(c, smooth(space, c))); },
      StopCondition::evaluations(budget), batch);
  std::vector<std::string> out;
  for (const auto& o : record.observations) out.push_back(key(space, o.configuration));
  return out;
}

}  // namespace

TEST_CASE("every strategy: no repeats, in the space, respects the budget, deterministic by seed") {
  const SearchSpace space = test_space();
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    for (std::size_t batch : {std::size_t{1}, std::size_t{4}}) {
      const auto first = run(name, 7, 40, batch);
      CHECK(first.size() == 40);
      CHECK(std::set<std::string>(first.begin(), first.end()).size() == first.size());
      CHECK(first == run(name, 7, 40, batch));
    }
    if (name != "grid") CHECK(run(name, 7, 30, 1) != run(name, 8, 30, 1));
  }
}

TEST_CASE("every strategy: exhausts a small space exactly once, then is done") {
  const SearchSpace space({ParameterSpec::range("x", 0, 5), ParameterSpec::categorical("m", {"p", "q"})},
                          {"x != 3"});
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    auto strategy = make_strategy(name, space, 1);
    std::set<std::string> seen;
    while (!strategy->done()) {
      const auto batch = strategy->ask(3);
      if (batch.empty()) break;
      std::vector<Observation> told;
      for (const auto& c : batch) {
        CHECK(space.contains(c));
        CHECK(seen.insert(key(space, c)).second);
        told.push_back(Observation::success(c, 1.0 + numeric_value(c[0])));
      }
      strategy->tell(told);
    }
    CHECK(seen.size() == space.size());
    CHECK(strategy->done());
    CHECK(strategy->ask(2).empty());
  }
}

TEST_CASE("every strategy: all-failing batches do not stop or break it") {
  const SearchSpace space = test_space();
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    auto strategy = make_strategy(name, space, 3);
    std::set<std::string> seen;
    for (int round = 0; round < 12; ++round) {
      const auto batch = strategy->ask(3);
      REQUIRE(batch.size() == 3);
      std::vector<Observation> told;
      for (const auto& c : batch) {
        CHECK(seen.insert(key(space, c)).second);
        told.push_back(Observation::failed(c, "does not compile"));
      }
      strategy->tell(told);
    }
  }
}

TEST_CASE("every strategy: warm start with observations it did not propose, which it never proposes") {
  const SearchSpace space = test_space();
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    auto strategy = make_strategy(name, space, 5);
    std::vector<Observation> cache;
    std::set<std::string> cached;
    for (std::uint64_t i = 0; i < space.size(); i += 3) {
      const auto c = space.configuration_at(i);
      cache.push_back(Observation::success(c, smooth(space, c)));
      cached.insert(key(space, c));
    }
    strategy->tell(cache);
    for (int round = 0; round < 10; ++round)
      for (const auto& c : strategy->ask(2)) CHECK(cached.count(key(space, c)) == 0);
  }
}

TEST_CASE("asking again before telling never repeats a pending configuration") {
  const SearchSpace space = test_space();
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    auto strategy = make_strategy(name, space, 2);
    std::vector<Observation> told;
    for (const auto& c : strategy->ask(8)) told.push_back(Observation::success(c, smooth(space, c)));
    strategy->tell(told);
    std::set<std::string> seen;
    for (const auto& o : told) seen.insert(key(space, o.configuration));
    const auto first = strategy->ask(3);
    const auto second = strategy->ask(3);
    for (const auto& c : first) CHECK(seen.insert(key(space, c)).second);
    for (const auto& c : second) CHECK(seen.insert(key(space, c)).second);
  }
}

TEST_CASE("grid visits index order, or a space-filling order") {
  const SearchSpace space({ParameterSpec::range("x", 0, 9)});
  auto grid = make_strategy("grid", space, 0);
  const auto batch = grid->ask(3);
  CHECK(to_string(space, batch[0]) == "x=0");
  CHECK(to_string(space, batch[2]) == "x=2");
  auto filling = make_strategy("grid", space, 0, {{"order", "space_filling"}});
  const auto spread = filling->ask(2);
  CHECK(to_string(space, spread[0]) == "x=0");
  CHECK(to_string(space, spread[1]) == "x=8");
}

TEST_CASE("unknown strategies and options are one clear error") {
  const SearchSpace space = test_space();
  try {
    make_strategy("simplex", space, 1);
    FAIL("expected an error");
  } catch (const UserError& e) {
    const std::string message = e.what();
    CHECK(message.find("unknown strategy 'simplex'") != std::string::npos);
    CHECK(message.find("bayes") != std::string::npos);
    CHECK(message.find("random") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(make_strategy("bayes", space, 1, {{"inital", 3}}),
                       doctest::Contains("unknown option 'inital'"), UserError);
  CHECK_THROWS_AS(make_strategy("grid", space, 1, {{"order", "zigzag"}}), UserError);
  CHECK_THROWS_AS(make_strategy("bayes", space, 1, {{"batch", "optimist"}}), UserError);
  CHECK_THROWS_WITH_AS(make_strategy("bayes", space, 1, {{"acquisition", "ucb"}}),
                       doctest::Contains("accepted: ei, hedge"), UserError);
  CHECK_NOTHROW(make_strategy("bayes", space, 1, {{"acquisition", "ei"}, {"alignment", false}}));
  CHECK_THROWS_WITH_AS(make_strategy("bayes", space, 1, {{"failures", "ignored"}}),
                       doctest::Contains("accepted: worst, classified"), UserError);
  CHECK_NOTHROW(make_strategy("bayes", space, 1, {{"failures", "classified"}}));
  // A number out of range is named with its bounds: a typo of 1e9 refit iterations ran for hours, and
  // 2^32 + 1 initial points read as 1.
  CHECK_THROWS_WITH_AS(
      make_strategy("bayes", space, 1, {{"fit_iterations", 1000000000}}),
      doctest::Contains("option out of range: fit_iterations = 1000000000; accepted: an integer "
                        "from 1 to 10000"),
      UserError);
  CHECK_THROWS_WITH_AS(make_strategy("bayes", space, 1, {{"initial", 4294967297LL}}),
                       doctest::Contains("initial = 4294967297"), UserError);
  CHECK_THROWS_WITH_AS(make_strategy("bayes", space, 1, {{"local_steps", 2.5}}),
                       doctest::Contains("local_steps = 2.5; accepted: an integer"), UserError);
  CHECK_NOTHROW(make_strategy("bayes", space, 1, {{"initial", 12}, {"xi", 0.1}, {"exhaustive_limit", 0}}));
}

TEST_CASE(
    "annealing: after its restart samples are told one by one, the walk steps to a neighbour of the best") {
  const SearchSpace space = test_space();
  auto strategy = make_strategy("annealing", space, 5, {{"restart_samples", 4}});
  std::optional<Observation> best;
  for (int i = 0; i < 4; ++i) {
    const auto batch = strategy->ask(1);
    REQUIRE(batch.size() == 1);
    const auto observation = Observation::success(batch[0], smooth(space, batch[0]));
    if (!best || *observation.value < *best->value) best = observation;
    strategy->tell({observation});
  }
  const auto step = strategy->ask(1);
  REQUIRE(step.size() == 1);
  const auto neighbours = space.neighbours(best->configuration);
  CHECK(std::find(neighbours.begin(), neighbours.end(), step[0]) != neighbours.end());
}

TEST_CASE("coordinate: one pass tries each parameter's values from the best told, keeping each winner") {
  // Three unordered choices whose effects add up: the best of each, found
  // one parameter at a time, is the optimum.
  const SearchSpace space({ParameterSpec::categorical("engine", {"a", "b", "c", "d"}),
                           ParameterSpec::categorical("queue", {"p", "q"}),
                           ParameterSpec::categorical("evacuate", {"x", "y"})});
  auto cost = [&](const Configuration& c) {
    const double engine[] = {4, 3, 1, 2}, queue[] = {1, 0}, evacuate[] = {0, 0.5};
    return 10 + engine[*space.parameters()[0].position(c[0])] + queue[*space.parameters()[1].position(c[1])] +
           evacuate[*space.parameters()[2].position(c[2])];
  };
  auto strategy = make_strategy("coordinate", space, 1, {{"passes", 1}});
  const Configuration start{std::string("a"), std::string("p"), std::string("x")};
  strategy->tell({Observation::success(start, cost(start))});
  std::vector<Configuration> proposed;
  while (!strategy->done()) {
    const auto batch = strategy->ask(1);
    if (batch.empty()) break;
    strategy->tell({Observation::success(batch[0], cost(batch[0]))});
    proposed.push_back(batch[0]);
  }
  // engine: b, c, d; queue: q (at engine c); evacuate: y (at c, q): 3 + 1 + 1.
  REQUIRE(proposed.size() == 5);
  CHECK(to_string(space, proposed[3]) == "engine=c queue=q evacuate=x");
  CHECK(to_string(space, proposed[4]) == "engine=c queue=q evacuate=y");
  CHECK(strategy->done());
  CHECK(strategy->ask(1).empty());
  CHECK_THROWS_AS(make_strategy("coordinate", space, 1, {{"passes", -1}}), UserError);
}

TEST_CASE("coordinate with `line`: each parameter walked a step at a time while the steps improve") {
  // x's optimum is three steps up from the start, y's one step down; a
  // failing step ends its direction like a worse one.
  const SearchSpace space({ParameterSpec::range("x", 0, 9), ParameterSpec::range("y", 0, 5)});
  auto cost = [](const Configuration& c) -> std::optional<double> {
    const auto x = std::get<std::int64_t>(c[0]), y = std::get<std::int64_t>(c[1]);
    if (x >= 8) return std::nullopt;  // does not fit
    return 10 + std::abs(double(x) - 5) + std::abs(double(y) - 1);
  };
  auto strategy = make_strategy("coordinate", space, 1, {{"passes", 1}, {"line", true}});
  const Configuration start{std::int64_t(2), std::int64_t(2)};
  strategy->tell({Observation::success(start, *cost(start))});
  std::vector<std::string> proposed;
  while (!strategy->done()) {
    const auto batch = strategy->ask(4);
    if (batch.empty()) break;
    CHECK(batch.size() == 1);  // each step waits for the last one's result
    const auto value = cost(batch[0]);
    strategy->tell(
        {value ? Observation::success(batch[0], *value) : Observation::failed(batch[0], "overflow")});
    proposed.push_back(to_string(space, batch[0]));
  }
  // x: 3, 4, 5 improve, 6 does not; below 5 is seen. y: 3 is worse, 1
  // improves, 0 does not.
  CHECK(proposed == std::vector<std::string>{"x=3 y=2", "x=4 y=2", "x=5 y=2", "x=6 y=2", "x=5 y=3", "x=5 y=1",
                                             "x=5 y=0"});
  CHECK(strategy->done());

  // From x = 7 the first step up fails: the walk turns downward.
  auto again = make_strategy("coordinate", space, 1, {{"passes", 1}, {"line", true}});
  const Configuration high{std::int64_t(7), std::int64_t(1)};
  again->tell({Observation::success(high, *cost(high))});
  const auto first = again->ask(1);
  REQUIRE(first.size() == 1);
  CHECK(to_string(space, first[0]) == "x=8 y=1");
  again->tell({Observation::failed(first[0], "overflow")});
  const auto second = again->ask(1);
  REQUIRE(second.size() == 1);
  CHECK(to_string(space, second[0]) == "x=6 y=1");
  CHECK_THROWS_AS(make_strategy("coordinate", space, 1, {{"line", 3}}), UserError);
}

TEST_CASE("every strategy: proposals released unmeasured come back, and the space is still exhausted once") {
  // A screen keeps two of every eight proposals; the rest are handed back.
  const SearchSpace space = test_space();
  for (const auto& name : kStrategies) {
    CAPTURE(name);
    auto strategy = make_strategy(name, space, 3);
    std::set<std::string> told, released_once;
    bool released_came_back = false;
    for (int round = 0; round < 10000 && !strategy->done(); ++round) {
      const auto proposals = strategy->ask(8);
      if (proposals.empty()) break;
      std::vector<Observation> kept;
      std::vector<Configuration> released;
      for (std::size_t i = 0; i < proposals.size(); ++i) {
        const std::string k = key(space, proposals[i]);
        CHECK(told.count(k) == 0);
        if (released_once.count(k)) released_came_back = true;
        if (i < 2 || proposals.size() <= 2) {
          told.insert(k);
          kept.push_back(Observation::success(proposals[i], smooth(space, proposals[i])));
        } else {
          released_once.insert(k);
          released.push_back(proposals[i]);
        }
      }
      strategy->release(released);
      strategy->tell(kept);
    }
    CHECK(released_came_back);
    CHECK(told.size() == space.size());
    CHECK(strategy->done());
  }
}
