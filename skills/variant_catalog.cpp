#include "skills/variant_catalog.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace autotune::skills {

namespace {

bool contains_value(const std::vector<search::ParamValue>& values, const search::ParamValue& value) {
  return std::any_of(values.begin(), values.end(),
                     [&](const auto& v) { return search::same_value(v, value); });
}

search::ParameterSpec restricted(const search::ParameterSpec& parameter,
                                 const std::vector<search::ParamValue>& keep) {
  std::vector<search::ParamValue> values;
  for (const auto& v : parameter.values())
    if (contains_value(keep, v)) values.push_back(v);
  if (parameter.is_categorical()) {
    std::vector<std::string> names;
    for (const auto& v : values) names.push_back(std::get<std::string>(v));
    return search::ParameterSpec::categorical(parameter.name(), names);
  }
  return search::ParameterSpec::ordered(parameter.name(), values);
}

}  // namespace

void build_space(VariantSpace& variant) {
  if (variant.allowed.empty()) {
    variant.space =
        std::make_shared<search::SearchSpace>(variant.parameters, variant.constraints, variant.constants);
  } else {
    variant.space = std::make_shared<search::SearchSpace>(
        search::SearchSpace::from_allowed(variant.parameters, variant.allowed));
  }
}

std::optional<search::SearchSpace> VariantSpace::region(
    const std::map<std::string, std::vector<search::ParamValue>>& subsets) const {
  std::vector<search::ParameterSpec> narrowed;
  // For recorded spaces: old position -> new position per parameter (-1: dropped).
  std::vector<std::vector<int>> remap(parameters.size());
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    const auto& parameter = parameters[p];
    const auto it = subsets.find(parameter.name());
    if (it == subsets.end()) {
      narrowed.push_back(parameter);
      for (std::size_t i = 0; i < parameter.size(); ++i) remap[p].push_back(int(i));
      continue;
    }
    bool any = false;
    for (const auto& v : parameter.values()) any = any || contains_value(it->second, v);
    if (!any) return std::nullopt;
    narrowed.push_back(restricted(parameter, it->second));
    int next = 0;
    for (const auto& v : parameter.values()) remap[p].push_back(contains_value(it->second, v) ? next++ : -1);
  }
  try {
    if (allowed.empty()) return search::SearchSpace(narrowed, constraints, constants);
    std::vector<search::Positions> kept;
    for (const auto& positions : allowed) {
      search::Positions mapped(positions.size());
      bool keep = true;
      for (std::size_t p = 0; p < positions.size() && keep; ++p) {
        const int to = remap[p][positions[p]];
        keep = to >= 0;
        mapped[p] = std::uint32_t(std::max(to, 0));
      }
      if (keep) kept.push_back(std::move(mapped));
    }
    if (kept.empty()) return std::nullopt;
    return search::SearchSpace::from_allowed(narrowed, std::move(kept));
  } catch (const UserError&) {
    return std::nullopt;  // infeasible region: not an error, just no idea here
  }
}

std::vector<std::string> VariantSpace::parameters_with_role(const std::string& role) const {
  std::vector<std::string> out;
  for (const auto& parameter : parameters) {
    const auto it = roles.find(parameter.name());
    if (it != roles.end() && it->second == role) out.push_back(parameter.name());
  }
  return out;
}

const search::ParameterSpec* VariantSpace::parameter(const std::string& parameter_name) const {
  for (const auto& parameter : parameters)
    if (parameter.name() == parameter_name) return &parameter;
  return nullptr;
}

const VariantSpace* VariantCatalog::find(const std::string& name) const {
  for (const auto& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

const VariantSpace& VariantCatalog::variant(const std::string& name) const {
  const VariantSpace* found = find(name);
  AUTOTUNE_CHECK(found != nullptr, "variant '" + name + "' is not in the run's catalog");
  return *found;
}

}  // namespace autotune::skills

namespace autotune::skills {

std::vector<Json> configurations_below(const VariantSpace& variant, const Json& from, std::size_t limit) {
  std::vector<Json> out;
  if (!variant.space || !from.is_object()) return out;
  // Each parameter's position in its domain at `from`; categorical ones stay.
  std::vector<std::optional<std::uint32_t>> start;
  for (const auto& parameter : variant.parameters) {
    const auto it = from.find(parameter.name());
    std::optional<std::uint32_t> position;
    if (it != from.end() && !parameter.is_categorical()) {
      try {
        position = parameter.position(search::param_value_from_json(*it, parameter.name()));
      } catch (const UserError&) {
      }
    }
    start.push_back(position);
  }
  auto add = [&](const std::vector<std::uint32_t>& down) {
    if (out.size() >= limit) return;
    Json params = from;
    bool moved = false;
    for (std::size_t p = 0; p < variant.parameters.size(); ++p) {
      if (!start[p] || down[p] == 0) continue;
      const std::uint32_t position = *start[p] >= down[p] ? *start[p] - down[p] : 0;
      if (position == *start[p]) continue;
      params[variant.parameters[p].name()] = search::to_json(variant.parameters[p].values()[position]);
      moved = true;
    }
    if (!moved || std::find(out.begin(), out.end(), params) != out.end()) return;
    try {
      if (variant.space->contains(search::configuration_from_json(*variant.space, params)))
        out.push_back(params);
    } catch (const UserError&) {
    }
  };
  std::vector<std::uint32_t> down(variant.parameters.size(), 0);
  for (std::size_t p = 0; p < down.size(); ++p) {
    down[p] = 1;
    add(down);
    down[p] = 0;
  }
  std::uint32_t deepest = 0;
  for (const auto& position : start) deepest = std::max(deepest, position.value_or(0));
  for (std::uint32_t steps = 1; steps <= deepest; ++steps)
    add(std::vector<std::uint32_t>(down.size(), steps));
  return out;
}

}  // namespace autotune::skills
