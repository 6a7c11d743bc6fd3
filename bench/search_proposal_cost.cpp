// Proposal cost of the model-based strategy: time per proposed configuration
// with 300 observations on a 20 000-configuration space (the figure the
// Param Explorer promises for parallel runners). Prints milliseconds.
//
//   build/bench/bench_search_proposal_cost [observations=300] [batch=1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "search/strategy.hpp"

using namespace autotune;
using namespace autotune::search;

int main(int argc, char** argv) {
  const std::size_t observations = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 300;
  const std::size_t batch = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  // 20 000 configurations: four ordered parameters and a categorical one.
  const SearchSpace space({ParameterSpec::range("a", 1, 25), ParameterSpec::powers_of_two("b", 1, 16),
                           ParameterSpec::range("c", 0, 9), ParameterSpec::ordered("d", {0.5, 1.0, 2.0, 4.0}),
                           ParameterSpec::categorical("e", {"x", "y", "z", "w"})});
  std::printf("space: %s\n", space.describe().c_str());
  const auto f = [&](const Configuration& c) {
    const double a = numeric_value(c[0]), b = std::log2(numeric_value(c[1])), cc = numeric_value(c[2]);
    return 1.0 + std::pow(a - 17, 2) / 50 + std::pow(b - 3, 2) / 4 + std::sin(cc) + numeric_value(c[3]) / 4 +
           static_cast<double>(*space.parameters()[4].position(c[4])) / 5;
  };
  auto strategy = make_strategy("bayes", space, 1);
  // Warm start with random observations, then time proposals.
  Rng rng(9);
  std::vector<Observation> warm;
  while (warm.size() < observations) {
    const auto c = space.random_valid(rng);
    bool repeated = false;
    for (const auto& o : warm) repeated = repeated || o.configuration == c;
    if (!repeated) warm.push_back(Observation::success(c, f(c)));
  }
  strategy->tell(warm);
  // The first proposal fits the hyperparameters from scratch on all 300
  // observations (a warm start from a cache); it is reported on its own. The
  // next 40 proposals span one refit (data grow by 10%), so their mean is the
  // amortised cost a runner sees in a run at this size.
  {
    const std::clock_t start = std::clock();
    const auto asked = strategy->ask(batch);
    std::printf("first proposal after the warm start (full hyperparameter fit): %.1f ms CPU\n",
                1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC);
    std::vector<Observation> told;
    for (const auto& c : asked) told.push_back(Observation::success(c, f(c)));
    strategy->tell(told);
  }
  const int rounds = 40;
  const std::clock_t cpu_start = std::clock();
  std::vector<double> per_configuration;
  double total_ms = 0;
  std::size_t proposed = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto asked = strategy->ask(batch);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    total_ms += ms;
    per_configuration.push_back(ms / static_cast<double>(asked.size()));
    proposed += asked.size();
    std::vector<Observation> told;
    for (const auto& c : asked) told.push_back(Observation::success(c, f(c)));
    strategy->tell(told);
  }
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::sort(per_configuration.begin(), per_configuration.end());
  std::printf(
      "bayes proposal cost, %zu observations, batch %zu, %zu proposals: mean %.1f ms per configuration, "
      "median %.1f ms, worst %.1f ms (a hyperparameter refit)\n",
      observations, batch, proposed, total_ms / static_cast<double>(proposed),
      per_configuration[per_configuration.size() / 2], per_configuration.back());
  std::printf("CPU time (excludes waiting for a core on a shared machine): %.1f ms per configuration\n",
              cpu_ms / static_cast<double>(proposed));
  return 0;
}
