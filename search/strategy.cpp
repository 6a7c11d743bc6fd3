#include "search/strategy.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace autotune::search {

StrategyOptions::StrategyOptions(std::string strategy, const nlohmann::json& options)
    : strategy_(std::move(strategy)), options_(options.is_null() ? nlohmann::json::object() : options) {
  if (!options_.is_object())
    throw UserError("strategy '" + strategy_ + "': options must be a JSON object, got " + options_.dump());
}

void StrategyOptions::finish() const {
  for (const auto& [key, value] : options_.items()) {
    if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
    const std::string accepted = join(read_, ", ");
    throw UserError("strategy '" + strategy_ + "': unknown option '" + key +
                    "' (accepted: " + (accepted.empty() ? "none" : accepted) + ")");
  }
}

Registry<StrategyFactory>& strategy_registry() {
  static Registry<StrategyFactory> registry("strategy");
  return registry;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, std::uint64_t seed,
                                        const nlohmann::json& options) {
  const StrategyFactory& factory = strategy_registry().get(name);
  StrategyOptions reader(name, options);
  auto strategy = factory(space, seed, reader);
  reader.finish();
  return strategy;
}

void check_strategy_options(const std::string& name, const nlohmann::json& options) {
  static const SearchSpace one_choice({ParameterSpec::range("x", 0, 1)});
  make_strategy(name, one_choice, 0, options);
}

}  // namespace autotune::search
