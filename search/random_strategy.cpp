// random: uniform sampling without replacement over the valid configurations.
#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

class RandomStrategy final : public IndexedStrategy {
 public:
  RandomStrategy(const SearchSpace& space, std::uint64_t seed) : IndexedStrategy(space, seed, "random") {}

 private:
  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> out;
    // random_unseen() does not know about this batch yet: reject repeats here.
    while (out.size() < k && seen_count() + out.size() < space_.size()) {
      const auto index = random_unseen();
      if (!index) break;
      if (std::find(out.begin(), out.end(), *index) == out.end()) out.push_back(*index);
    }
    return out;
  }
};

const StrategyRegistration registration("random",
                                        [](const SearchSpace& space, std::uint64_t seed,
                                           StrategyOptions&) -> std::unique_ptr<Strategy> {
                                          return std::make_unique<RandomStrategy>(space, seed);
                                        });

}  // namespace

}  // namespace autotune::search
