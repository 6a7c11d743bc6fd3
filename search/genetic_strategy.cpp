// genetic: a steady-state (mu + lambda) genetic algorithm.
//
// The population is the `population` best successful observations so far
// (elitist; failures never enter it). A child takes each parameter from one
// of two parents chosen by binary tournament (uniform crossover), then each
// parameter mutates with probability `mutation` / dimension (at least one
// mutation when the child equals a parent): to a value up to two valid steps
// away in its ordered domain, or, half of the time, to any value of its domain.
// A child that is invalid, seen or already in the batch is redrawn; after
// `attempts` failed draws a uniformly random unseen configuration is taken,
// which is also how the search starts until the population has 4 members.
//
// Options: population (20), mutation (1.0), attempts (50).
#include <algorithm>

#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

struct GeneticOptions {
  int population = 20;
  double mutation = 1.0;
  int attempts = 50;
};

class GeneticStrategy final : public IndexedStrategy {
 public:
  GeneticStrategy(const SearchSpace& space, std::uint64_t seed, GeneticOptions options)
      : IndexedStrategy(space, seed, "genetic"), options_(options) {}

 private:
  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> out;
    const auto taken = [&](std::uint64_t i) {
      return seen(i) || std::find(out.begin(), out.end(), i) != out.end();
    };
    while (out.size() < k && seen_count() + out.size() < space_.size()) {
      std::optional<std::uint64_t> child;
      if (population_.size() >= 4) {
        for (int attempt = 0; attempt < options_.attempts && !child; ++attempt) {
          const auto candidate = breed();
          if (candidate && !taken(*candidate)) child = candidate;
        }
      }
      while (!child) {
        const auto index = random_unseen();
        if (!index) return out;
        if (!taken(*index)) child = index;
      }
      out.push_back(*child);
    }
    return out;
  }

  void observed(const std::vector<IndexedObservation>& batch) override {
    for (const auto& o : batch)
      if (o.value) population_.push_back({*o.value, o.index});
    std::sort(population_.begin(), population_.end());
    if (population_.size() > static_cast<std::size_t>(options_.population))
      population_.resize(options_.population);
  }

  std::uint64_t tournament() {
    const auto n = static_cast<std::int64_t>(population_.size());
    const auto a = rng_.uniform_int(0, n - 1), b = rng_.uniform_int(0, n - 1);
    return population_[std::min(a, b)].second;  // sorted best first
  }

  std::optional<std::uint64_t> breed() {
    const Positions mother = space_.positions_at(tournament()), father = space_.positions_at(tournament());
    const std::size_t d = mother.size();
    Positions child(d);
    for (std::size_t p = 0; p < d; ++p) child[p] = rng_.uniform() < 0.5 ? mother[p] : father[p];
    const double rate = options_.mutation / static_cast<double>(d);
    bool mutated = false;
    for (std::size_t p = 0; p < d; ++p)
      if (rng_.uniform() < rate) mutated = mutate(child, p) || mutated;
    if (!mutated && (child == mother || child == father)) {
      for (int tries = 0; tries < 4 && !mutated; ++tries)
        mutated =
            mutate(child, static_cast<std::size_t>(rng_.uniform_int(0, static_cast<std::int64_t>(d) - 1)));
    }
    return space_.index_of_positions(child);
  }

  bool mutate(Positions& child, std::size_t p) {
    const auto& spec = space_.parameters()[p];
    const auto n = static_cast<std::int64_t>(spec.size());
    if (n <= 1) return false;
    std::int64_t value = child[p];
    if (spec.is_categorical() || rng_.uniform() < 0.5) {
      value = rng_.uniform_int(0, n - 2);
      if (value >= child[p]) ++value;
    } else {
      const std::int64_t step = rng_.uniform_int(1, 2) * (rng_.uniform() < 0.5 ? -1 : 1);
      value = std::clamp<std::int64_t>(value + step, 0, n - 1);
    }
    const bool changed = value != child[p];
    child[p] = static_cast<std::uint32_t>(value);
    return changed;
  }

  GeneticOptions options_;
  std::vector<std::pair<double, std::uint64_t>> population_;  // (value, index), best first
};

const StrategyRegistration registration(
    "genetic",
    [](const SearchSpace& space, std::uint64_t seed, StrategyOptions& options) -> std::unique_ptr<Strategy> {
      GeneticOptions o;
      o.population = options.get_within<int>("population", o.population, 4, 100000);
      o.mutation = options.get_within<double>("mutation", o.mutation, 0, 1000);
      o.attempts = options.get_within<int>("attempts", o.attempts, 1, 100000);
      return std::make_unique<GeneticStrategy>(space, seed, o);
    });

}  // namespace

}  // namespace autotune::search
