// grid: every configuration once, in index order (`order: "index"`, the
// default) or in a space-filling order (`order: "space_filling"`: indices in
// bit-reversed order, so any prefix of the sweep spreads over the whole index
// range, coarse to fine). Deterministic; the seed is unused.
#include <algorithm>
#include <bit>

#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

class GridStrategy final : public IndexedStrategy {
 public:
  GridStrategy(const SearchSpace& space, std::uint64_t seed, bool space_filling)
      : IndexedStrategy(space, seed, "grid"), space_filling_(space_filling) {
    bits_ = space.size() <= 1 ? 0 : std::bit_width(space.size() - 1);
  }

 private:
  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> out;
    const std::uint64_t end = space_filling_ ? (std::uint64_t{1} << bits_) : space_.size();
    while (out.size() < k && cursor_ < end) {
      const std::uint64_t index = space_filling_ ? reversed(cursor_) : cursor_;
      ++cursor_;
      if (index < space_.size() && !seen(index)) out.push_back(index);
    }
    return out;
  }
  // Handed back unmeasured: the sweep passes them again.
  void released(const std::vector<std::uint64_t>& indices) override {
    for (std::uint64_t index : indices) cursor_ = std::min(cursor_, space_filling_ ? reversed(index) : index);
  }
  std::uint64_t reversed(std::uint64_t x) const {
    std::uint64_t r = 0;
    for (int b = 0; b < bits_; ++b) r |= ((x >> b) & 1) << (bits_ - 1 - b);
    return r;
  }

  bool space_filling_;
  int bits_ = 0;
  std::uint64_t cursor_ = 0;
};

const StrategyRegistration registration(
    "grid",
    [](const SearchSpace& space, std::uint64_t seed, StrategyOptions& options) -> std::unique_ptr<Strategy> {
      const auto order = options.get<std::string>("order", "index", "\"index\" or \"space_filling\"");
      if (order != "index" && order != "space_filling")
        throw UserError("strategy 'grid': option 'order': '" + order +
                        "' is not accepted; accepted: index, space_filling");
      return std::make_unique<GridStrategy>(space, seed, order == "space_filling");
    });

}  // namespace

}  // namespace autotune::search
