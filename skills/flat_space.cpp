#include "skills/flat_space.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace autotune::skills {

namespace {

std::vector<const VariantSpace*> in_catalog_order(const VariantCatalog& catalog,
                                                  const std::vector<std::string>& names) {
  for (const auto& name : names)
    if (!catalog.find(name)) throw InternalError("flatten: no variant '" + name + "' in the catalog");
  std::vector<const VariantSpace*> out;
  for (const auto& variant : catalog.variants)
    if (std::find(names.begin(), names.end(), variant.name) != names.end()) out.push_back(&variant);
  if (out.empty()) throw InternalError("flatten: no variant to flatten");
  return out;
}

}  // namespace

std::uint64_t flat_size(const VariantCatalog& catalog, const std::vector<std::string>& variants) {
  std::uint64_t size = 0;
  for (const VariantSpace* variant : in_catalog_order(catalog, variants)) size += variant->space->size();
  return size;
}

FlatSpace flatten(const VariantCatalog& catalog, const std::vector<std::string>& names) {
  const auto variants = in_catalog_order(catalog, names);
  FlatSpace out;
  for (const VariantSpace* variant : variants) out.variants.push_back(variant->name);
  if (variants.size() == 1) {
    out.space = variants.front()->space;
    return out;
  }

  // The union of the domains, parameters in the order first met.
  std::vector<std::string> order;
  std::map<std::string, std::vector<search::ParamValue>> domains;
  std::map<std::string, bool> categorical;
  std::map<std::string, search::ParamValue> first_met;
  for (const VariantSpace* variant : variants)
    for (const auto& parameter : variant->parameters) {
      if (!domains.count(parameter.name())) {
        order.push_back(parameter.name());
        first_met.emplace(parameter.name(), parameter.values().front());
      }
      auto& domain = domains[parameter.name()];
      categorical[parameter.name()] = categorical[parameter.name()] || parameter.is_categorical();
      for (const auto& value : parameter.values())
        if (std::none_of(domain.begin(), domain.end(),
                         [&](const auto& known) { return search::same_value(known, value); }))
          domain.push_back(value);
    }
  out.variant_parameter = "variant";
  while (domains.count(out.variant_parameter)) out.variant_parameter = "_" + out.variant_parameter;

  std::vector<search::ParameterSpec> parameters{
      search::ParameterSpec::categorical(out.variant_parameter, out.variants)};
  for (const auto& name : order) {
    auto& domain = domains[name];
    bool numeric = !categorical[name];
    for (const auto& value : domain) numeric = numeric && search::is_numeric(value);
    if (numeric) {
      std::sort(domain.begin(), domain.end(), [](const auto& a, const auto& b) {
        return search::numeric_value(a) < search::numeric_value(b);
      });
      parameters.push_back(search::ParameterSpec::ordered(name, domain));
    } else {
      std::vector<std::string> labels;
      for (const auto& value : domain) labels.push_back(search::to_string(value));
      parameters.push_back(search::ParameterSpec::categorical(name, labels));
    }
  }

  // Every variant's valid configurations, positions translated to the flat
  // domains; the parameters a variant lacks stay at the first value met.
  search::Positions& pinned = out.pinned;
  pinned.assign(parameters.size(), 0);
  for (std::size_t p = 1; p < parameters.size(); ++p) {
    const auto& value = first_met.at(parameters[p].name());
    auto position = parameters[p].position(value);
    if (!position) position = parameters[p].position(search::ParamValue(search::to_string(value)));
    pinned[p] = std::uint32_t(position.value_or(0));
  }
  std::vector<search::Positions> allowed;
  allowed.reserve(std::size_t(flat_size(catalog, out.variants)));
  for (std::size_t v = 0; v < variants.size(); ++v) {
    FlatSpace::Member member;
    member.own = variants[v]->space;
    for (const auto& parameter : member.own->parameters()) {
      const auto column =
          std::size_t(std::find(order.begin(), order.end(), parameter.name()) - order.begin()) + 1;
      const search::ParameterSpec& target = parameters[column];
      std::vector<std::uint32_t> positions;
      for (const auto& value : parameter.values()) {
        auto position = target.position(value);
        if (!position) position = target.position(search::ParamValue(search::to_string(value)));
        if (!position) throw InternalError("flatten: a value of " + parameter.name() + " is lost");
        positions.push_back(std::uint32_t(*position));
      }
      member.column.push_back(column);
      member.position.push_back(std::move(positions));
    }
    for (std::uint64_t i = 0; i < member.own->size(); ++i) {
      const auto own = member.own->positions_at(i);
      search::Positions flat = pinned;
      flat[0] = std::uint32_t(v);
      for (std::size_t p = 0; p < own.size(); ++p) flat[member.column[p]] = member.position[p][own[p]];
      allowed.push_back(std::move(flat));
    }
    out.members.push_back(std::move(member));
  }
  out.space = std::make_shared<const search::SearchSpace>(
      search::SearchSpace::from_allowed(std::move(parameters), std::move(allowed)));
  return out;
}

Candidate FlatSpace::candidate(const search::Configuration& flat) const {
  if (variant_parameter.empty()) return {variants.front(), search::to_json(*space, flat)};
  const auto positions = space->positions_of(flat);
  if (!positions) throw InternalError("FlatSpace::candidate: not a configuration of the flat space");
  const Member& member = members.at((*positions)[0]);
  search::Positions own;
  for (std::size_t p = 0; p < member.column.size(); ++p) {
    const auto& map = member.position[p];
    const auto at = std::find(map.begin(), map.end(), (*positions)[member.column[p]]);
    own.push_back(std::uint32_t(at - map.begin()));
  }
  return {variants[(*positions)[0]], search::to_json(*member.own, member.own->configuration_of(own))};
}

std::optional<search::Configuration> FlatSpace::configuration(const std::string& variant,
                                                              const search::Configuration& own) const {
  const auto v = std::find(variants.begin(), variants.end(), variant);
  if (v == variants.end()) return std::nullopt;
  if (variant_parameter.empty()) {
    if (!space->contains(own)) return std::nullopt;
    return own;
  }
  const Member& member = members[std::size_t(v - variants.begin())];
  const auto positions = member.own->positions_of(own);
  if (!positions) return std::nullopt;
  search::Positions flat = pinned;
  flat[0] = std::uint32_t(v - variants.begin());
  for (std::size_t p = 0; p < positions->size(); ++p)
    flat[member.column[p]] = member.position[p][(*positions)[p]];
  if (!space->index_of_positions(flat)) return std::nullopt;
  return space->configuration_of(flat);
}

}  // namespace autotune::skills
