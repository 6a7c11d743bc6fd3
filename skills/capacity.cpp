#include "skills/capacity.hpp"

#include <algorithm>

namespace autotune::skills {

namespace {

// Failures of capacity: the configuration needs more on-chip memory than the
// target has (the simulator's rule ids, docs/simulator.md).
constexpr const char* kCapacityFailures[] = {"sbuf_overflow", "psum_overflow"};

}  // namespace

std::optional<std::string> capacity_rule(const search::Observation& observation) {
  if (observation.ok()) return std::nullopt;
  for (const char* rule : kCapacityFailures)
    if (observation.failure.rfind(rule, 0) == 0) return std::string(rule);
  return std::nullopt;
}

bool holds_memory(const std::string& role) { return role == kRoleBlock || role == kRolePipelineDepth; }

CapacityPrediction::CapacityPrediction(const VariantSpace& variant,
                                       const std::vector<search::ParameterSpec>& parameters) {
  for (const auto& parameter : parameters) {
    const auto role = variant.roles.find(parameter.name());
    grows_.push_back(role != variant.roles.end() && holds_memory(role->second) &&
                     !parameter.is_categorical());
  }
}

void CapacityPrediction::learn(const std::vector<search::Observation>& observations) {
  if (grows_.empty()) return;
  for (const auto& o : observations)
    if (const auto rule = capacity_rule(o); rule && o.configuration.size() == grows_.size())
      failures_.push_back({o.configuration, *rule});
}

const std::pair<search::Configuration, std::string>* CapacityPrediction::predicts(
    const search::Configuration& configuration) const {
  for (const auto& failure : failures_)
    if (needs_at_least(configuration, failure.first)) return &failure;
  return nullptr;
}

bool CapacityPrediction::needs_at_least(const search::Configuration& c,
                                        const search::Configuration& failed) const {
  if (c.size() != failed.size() || c.size() != grows_.size()) return false;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (grows_[i] && search::is_numeric(c[i]) && search::is_numeric(failed[i])) {
      if (search::numeric_value(c[i]) < search::numeric_value(failed[i])) return false;
    } else if (!search::same_value(c[i], failed[i])) {
      return false;
    }
  }
  return true;
}

std::vector<search::Configuration> fitting_ladder(const VariantSpace& variant,
                                                  const search::Configuration& failed,
                                                  const std::string& kept) {
  std::vector<search::Configuration> out;
  if (!variant.space || failed.size() != variant.parameters.size()) return out;
  // Each memory-holding parameter's position at `failed`.
  std::vector<std::optional<std::uint32_t>> start(variant.parameters.size());
  std::uint32_t deepest = 0;
  for (std::size_t p = 0; p < variant.parameters.size(); ++p) {
    const auto& parameter = variant.parameters[p];
    const auto role = variant.roles.find(parameter.name());
    if (role == variant.roles.end() || !holds_memory(role->second) || parameter.is_categorical() ||
        parameter.name() == kept)
      continue;
    start[p] = parameter.position(failed[p]);
    if (start[p]) deepest = std::max(deepest, *start[p]);
  }
  for (std::uint32_t steps = 1; steps <= deepest; ++steps) {
    search::Configuration c = failed;
    for (std::size_t p = 0; p < c.size(); ++p)
      if (start[p]) c[p] = variant.parameters[p].values()[*start[p] >= steps ? *start[p] - steps : 0];
    if (c == failed || std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (variant.space->contains(c)) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace autotune::skills
