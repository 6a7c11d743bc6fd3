#pragma once
// Strategy: decides which configurations of a SearchSpace get measured.
//
// Lifecycle (batched, after TVM MetaSchedule's search strategy):
//   make_strategy(name, space, seed, options)   // initialise
//   while (!done()) {
//     batch = ask(k);        // up to k new configurations; may return fewer;
//                            // empty when the strategy has nothing left
//     ... measure batch (in parallel) ...
//     tell(observations);    // a value (minimised) or a failure reason each
//   }
// Contract, for every strategy:
//  - ask() never returns a configuration it returned before or was told
//    about; every returned configuration is in the space.
//  - ask() may be called again before the previous batch was told (a runner
//    with free slots); told results may arrive in any order and in parts.
//  - tell() accepts observations the strategy did not propose (warm start
//    from a cache or a previous run); observations outside the space are
//    ignored. A failure costs that configuration once; the strategy should
//    steer away from its region.
//  - release() hands back configurations ask() returned that will not be
//    measured (a simulated screen passed them over): the strategy forgets
//    it proposed them and may propose them again later; they are not
//    observations and must not bias its model. A strategy that cannot may
//    keep them as proposed (the default), never proposing them again.
//  - learn_from() (optional, before the first ask) hands over runs on related
//    spaces: the same kernel and parameters on another device or shape. They
//    are hints for where to look, not measurements of this space: nothing in
//    them counts as seen, and a strategy may ignore them (the default).
//  - Deterministic: the same seed, space, options and sequence of calls give
//    the same proposals.
//  - The space must outlive the strategy.
// Stopping on a budget or time is not the strategy's business: see
// stop_condition.hpp.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/text.hpp"
#include "search/search_space.hpp"

namespace autotune::search {

struct Observation {
  Configuration configuration;
  std::optional<double> value;  // the objective, minimised; empty when failed
  std::string failure;          // why it failed (when !value)

  static Observation success(Configuration c, double v) { return {std::move(c), v, {}}; }
  static Observation failed(Configuration c, std::string reason) {
    return {std::move(c), std::nullopt, std::move(reason)};
  }
  bool ok() const { return value.has_value(); }
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::vector<Configuration> ask(std::size_t k) = 0;
  virtual void tell(const std::vector<Observation>& observations) = 0;
  virtual bool done() const = 0;
  virtual std::string name() const = 0;
  virtual void release(const std::vector<Configuration>& configurations) {}
  // Each inner list: one run on a related space, in any order.
  virtual void learn_from(const std::vector<std::vector<Observation>>& related_runs) {}
};

// Options of a strategy: a JSON object read key by key; keys never read are
// rejected by finish() (a typo is an error, not a silently ignored setting).
class StrategyOptions {
 public:
  StrategyOptions(std::string strategy, const nlohmann::json& options);
  template <class T>
  T get(const std::string& key, T fallback, const std::string& accepted = "");
  // A number from `lowest` to `highest`, read wide so that a value beyond T's range is refused, not wrapped.
  template <class T>
  T get_within(const std::string& key, T fallback, T lowest, T highest);
  void finish() const;  // UserError naming the unknown key and the accepted ones

 private:
  std::string strategy_;
  nlohmann::json options_;
  std::vector<std::string> read_;
};

using StrategyFactory =
    std::function<std::unique_ptr<Strategy>(const SearchSpace&, std::uint64_t seed, StrategyOptions&)>;
Registry<StrategyFactory>& strategy_registry();

// Strategies join the registry from their own .cpp file:
//   static const StrategyRegistration registration("grid", [](auto& space, auto seed, auto& options) {...});
struct StrategyRegistration : Registration<StrategyFactory> {
  StrategyRegistration(const std::string& name, StrategyFactory factory)
      : Registration(strategy_registry(), name, std::move(factory)) {}
};

// An unknown name is a UserError listing the accepted names; a bad option is
// a UserError naming it.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, std::uint64_t seed,
                                        const nlohmann::json& options = {});

// The UserError make_strategy would throw for `name` and `options`, thrown
// now: every strategy reads and range-checks its options in its factory,
// whatever the space, so a goal's options are checked when it is read, before
// any work, not when its first search starts.
void check_strategy_options(const std::string& name, const nlohmann::json& options);

template <class T>
T StrategyOptions::get(const std::string& key, T fallback, const std::string& accepted) {
  read_.push_back(key);
  if (!options_.contains(key) || options_.at(key).is_null()) return fallback;
  try {
    return options_.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw UserError("strategy '" + strategy_ + "': option '" + key + "': '" + options_.at(key).dump() +
                    "' has the wrong type" + (accepted.empty() ? "" : "; accepted: " + accepted));
  }
}

template <class T>
T StrategyOptions::get_within(const std::string& key, T fallback, T lowest, T highest) {
  static_assert(std::is_arithmetic_v<T>);
  const std::string range =
      number_text(static_cast<double>(lowest)) + " to " + number_text(static_cast<double>(highest));
  const std::string kind = std::is_integral_v<T> ? "an integer" : "a number";
  const double value = get<double>(key, static_cast<double>(fallback), kind + " from " + range);
  if (!(value >= static_cast<double>(lowest) && value <= static_cast<double>(highest)) ||
      (std::is_integral_v<T> && value != std::floor(value)))
    throw UserError("strategy '" + strategy_ + "': option out of range: " + key + " = " +
                    options_.at(key).dump() + "; accepted: " + kind + " from " + range);
  return static_cast<T>(value);
}

}  // namespace autotune::search
