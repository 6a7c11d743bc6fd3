// coordinate: coordinate descent over the space's parameters. From the best
// configuration known (told or measured; a random one when nothing is known
// yet) it tries every other value of one parameter with the others held,
// moves to the best configuration seen, and goes on to the next parameter.
// A pass is one visit of every parameter that has more than one value. Suited
// to choices without an order (which engine or queue does a piece of work),
// whose effects add up more than they interact: one pass costs the sum of
// the domains' sizes, not their product.
//
// Options: `passes` (0, the default: until a whole pass moves nowhere, then
// again from a random configuration not seen yet; N > 0: done after N passes);
// `line` (false, the default: every value of a parameter at once; true: for
// parameters whose values have an order, one step at a time from the best,
// upward then downward, a direction ending at the first step that does not
// improve the best, so a parameter whose optimum lies k steps away costs
// k + 1 evaluations, not its domain's size; one proposal per round).
#include "search/indexed_strategy.hpp"

namespace autotune::search {

namespace {

class CoordinateStrategy final : public IndexedStrategy {
 public:
  CoordinateStrategy(const SearchSpace& space, std::uint64_t seed, int passes, bool line)
      : IndexedStrategy(space, seed, "coordinate"), passes_(passes), line_(line) {}

  bool done() const override { return finished_ || IndexedStrategy::done(); }

 private:
  std::vector<std::uint64_t> propose(std::size_t k) override {
    std::vector<std::uint64_t> out;
    auto taken = [&](std::uint64_t index) {
      return seen(index) || std::find(out.begin(), out.end(), index) != out.end();
    };
    // Every parameter is visited at most once per round of this loop, so a
    // pass that finds nothing new ends instead of spinning.
    std::size_t idle_axes = 0;
    while (out.size() < k && !finished_) {
      if (!center_) {
        if (best_) {
          start_pass(*best_);
          continue;
        }
        // Nothing measured well yet: sample until something is.
        const auto index = random_unseen();
        if (!index) break;
        if (!taken(*index))
          out.push_back(*index);
        else
          break;
        continue;
      }
      if (axis_ >= space_.dimension()) {
        finish_pass();
        continue;
      }
      if (line_) {
        if (const auto step = line_step(); step) {
          if (!taken(*step)) out.push_back(*step);
          break;
        }
        continue;
      }
      const std::size_t before = out.size();
      Positions positions = space_.positions_at(*center_);
      const std::uint32_t own = positions[axis_];
      const auto domain = std::uint32_t(space_.parameters()[axis_].size());
      for (std::uint32_t p = 0; p < domain && out.size() < k; ++p) {
        if (p == own) continue;
        positions[axis_] = p;
        if (const auto index = space_.index_of_positions(positions); index && !taken(*index))
          out.push_back(*index);
      }
      if (out.size() < k) {  // this parameter is spent at this center: the next one, from the best
        if (out.size() == before && ++idle_axes > space_.dimension()) break;
        if (best_ && *best_ != *center_) center_ = *best_, moved_ = true;
        ++axis_;
      }
    }
    return out;
  }

  void observed(const std::vector<IndexedObservation>& batch) override {
    for (const auto& o : batch)
      if (o.value && (!best_value_ || *o.value < *best_value_)) best_value_ = o.value, best_ = o.index;
  }

  // The line's next step on the current axis from the best, or nothing when
  // the axis is done (the state then moved on to the next axis or pass). A
  // step that was proposed and did not become the best ends its direction;
  // so do the domain's end, a configuration outside the space's constraints
  // and one seen already (the best known is never worse than it).
  std::optional<std::uint64_t> line_step() {
    if (stepped_ && best_ != stepped_) end_direction();
    stepped_.reset();
    if (axis_ >= space_.dimension()) return std::nullopt;
    if (best_ && *best_ != *center_) center_ = *best_, moved_ = true;
    Positions positions = space_.positions_at(*center_);
    const auto domain = std::int64_t(space_.parameters()[axis_].size());
    const std::int64_t next = std::int64_t(positions[axis_]) + direction_;
    if (next < 0 || next >= domain) {
      end_direction();
      return std::nullopt;
    }
    positions[axis_] = std::uint32_t(next);
    const auto index = space_.index_of_positions(positions);
    if (!index || seen(*index)) {
      end_direction();
      return std::nullopt;
    }
    stepped_ = index;
    return index;
  }

  void end_direction() {
    if (direction_ > 0) {
      direction_ = -1;
      return;
    }
    direction_ = 1;
    ++axis_;
  }

  void start_pass(std::uint64_t from) {
    center_ = from;
    axis_ = 0;
    direction_ = 1;
    stepped_.reset();
    moved_ = false;
  }

  void finish_pass() {
    ++passes_done_;
    if (passes_ > 0 && passes_done_ >= passes_) {
      finished_ = true;
      return;
    }
    if (moved_) {
      start_pass(*center_);
      return;
    }
    // Converged: no parameter moves the best. Start again elsewhere.
    center_.reset();
    best_.reset();
    best_value_.reset();
  }

  int passes_;
  bool line_;
  int direction_ = 1;                     // the line's direction on the current axis
  std::optional<std::uint64_t> stepped_;  // the line's last step, until the next proposal
  int passes_done_ = 0;
  bool finished_ = false;
  bool moved_ = false;
  std::optional<std::uint64_t> center_;
  std::size_t axis_ = 0;
  std::optional<std::uint64_t> best_;
  std::optional<double> best_value_;
};

const StrategyRegistration registration("coordinate",
                                        [](const SearchSpace& space, std::uint64_t seed,
                                           StrategyOptions& options) -> std::unique_ptr<Strategy> {
                                          // 0: until a pass moves nowhere, then again from a random unseen
                                          // configuration.
                                          const int passes = options.get_within<int>("passes", 0, 0, 1000000);
                                          const bool line = options.get<bool>("line", false, "true or false");
                                          return std::make_unique<CoordinateStrategy>(space, seed, passes,
                                                                                      line);
                                        });

}  // namespace

}  // namespace autotune::search
