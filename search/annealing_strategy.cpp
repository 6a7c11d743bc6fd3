// annealing: simulated annealing over the neighbour graph, with restarts.
//
// A walk moves from its current configuration to an unseen neighbour;
// a worse value (in log scale, so the walk is scale-free) is accepted with
// probability exp(-delta / T), T decaying geometrically from `temperature`.
// Failures are never accepted. After `patience` evaluations without improving
// the walk's best, or when the current configuration has no unseen neighbour,
// the walk restarts from the best of a few random configurations. Batches
// take several unseen neighbours of the current configuration at once.
//
// Options: temperature (0.1), cooling (0.97 per evaluation), patience (30),
// restart_samples (4: random configurations evaluated for a restart).
#include <algorithm>
#include <cmath>

#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

struct AnnealingOptions {
  double temperature = 0.1;
  double cooling = 0.97;
  int patience = 30;
  int restart_samples = 4;
};

class AnnealingStrategy final : public IndexedStrategy {
 public:
  AnnealingStrategy(const SearchSpace& space, std::uint64_t seed, AnnealingOptions options)
      : IndexedStrategy(space, seed, "annealing"), options_(options) {
    restart_to_propose_ = static_cast<std::size_t>(options_.restart_samples);
  }

 private:
  static double scaled(double v) { return v > 0 ? std::log(v) : v; }

  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> out;
    if (current_) {
      std::vector<std::uint64_t> neighbours;
      for (std::uint64_t n : space_.neighbour_indices(*current_))
        if (!seen(n)) neighbours.push_back(n);
      std::shuffle(neighbours.begin(), neighbours.end(), rng_);
      for (std::uint64_t n : neighbours)
        if (out.size() < k) out.push_back(n);
      if (out.empty()) restart();
    }
    if (!current_) {
      // Restart: sample at least `restart_samples` random configurations
      // (over as many asks as it takes, whole batches); the walk continues
      // from the best of them once all are told.
      while (out.size() < k && seen_count() + out.size() < space_.size()) {
        const auto index = random_unseen();
        if (!index) break;
        if (std::find(out.begin(), out.end(), *index) == out.end()) out.push_back(*index);
      }
      restart_to_propose_ -= std::min(restart_to_propose_, out.size());
      restart_pending_ += out.size();
    }
    return out;
  }

  void observed(const std::vector<IndexedObservation>& batch) override {
    for (const auto& observation : batch) {
      if (!current_) {
        if (restart_pending_ > 0) --restart_pending_;
        if (observation.value && (!restart_best_ || *observation.value < restart_best_value_)) {
          restart_best_ = observation.index;
          restart_best_value_ = *observation.value;
        }
        finish_restart();
        continue;
      }
      ++since_improvement_;
      temperature_ *= options_.cooling;
      if (!observation.value) continue;
      const double delta = scaled(*observation.value) - scaled(current_value_);
      if (delta <= 0 || rng_.uniform() < std::exp(-delta / std::max(temperature_, 1e-12))) {
        current_ = observation.index;
        current_value_ = *observation.value;
      }
      if (*observation.value < walk_best_) {
        walk_best_ = *observation.value;
        since_improvement_ = 0;
      }
    }
    if (current_ && since_improvement_ >= options_.patience) restart();
  }

  // Restart samples handed back unmeasured: the restart waits for them no longer.
  void released(const std::vector<std::uint64_t>& indices) override {
    if (current_) return;
    restart_pending_ -= std::min(restart_pending_, indices.size());
    finish_restart();
  }

  // Once every restart sample is told: walk on from the best of them.
  void finish_restart() {
    if (restart_pending_ > 0 || restart_to_propose_ > 0) return;
    if (!restart_best_) {
      restart_to_propose_ = options_.restart_samples;  // every sample failed: sample again
      return;
    }
    current_ = restart_best_;
    current_value_ = restart_best_value_;
    walk_best_ = current_value_;
    temperature_ = options_.temperature;
    since_improvement_ = 0;
    restart_best_.reset();
  }

  void restart() {
    current_.reset();
    restart_to_propose_ = options_.restart_samples;
    restart_pending_ = 0;
    restart_best_.reset();
  }

  AnnealingOptions options_;
  std::optional<std::uint64_t> current_;
  double current_value_ = 0, walk_best_ = 0, temperature_ = 0;
  int since_improvement_ = 0;
  std::size_t restart_to_propose_ = 0;  // restart samples not yet proposed
  std::size_t restart_pending_ = 0;     // restart samples proposed, not yet told
  std::optional<std::uint64_t> restart_best_;
  double restart_best_value_ = 0;
};

const StrategyRegistration registration(
    "annealing",
    [](const SearchSpace& space, std::uint64_t seed, StrategyOptions& options) -> std::unique_ptr<Strategy> {
      AnnealingOptions o;
      o.temperature = options.get_within<double>("temperature", o.temperature, 1e-9, 1e9);
      o.cooling = options.get_within<double>("cooling", o.cooling, 1e-9, 1);
      o.patience = options.get_within<int>("patience", o.patience, 1, 1000000);
      o.restart_samples = options.get_within<int>("restart_samples", o.restart_samples, 1, 1000000);
      return std::make_unique<AnnealingStrategy>(space, seed, o);
    });

}  // namespace

}  // namespace autotune::search
