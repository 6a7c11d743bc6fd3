#include "skills/catalog_builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "search/expression.hpp"
#include "sim/program.hpp"

namespace autotune::skills {

namespace {

std::string values_text(const std::vector<search::ParamValue>& values) {
  return "[" + join(values, ", ", [](const auto& v) { return search::to_string(v); }) + "]";
}

bool has_value(const std::vector<search::ParamValue>& values, const search::ParamValue& value) {
  return std::any_of(values.begin(), values.end(),
                     [&](const auto& v) { return search::same_value(v, value); });
}

const std::vector<search::ParamValue>* requested_domain(const CatalogRequest& request,
                                                        const std::string& name) {
  for (const auto& [key, values] : request.domains)
    if (key == name) return &values;
  return nullptr;
}

// The goal key its constraints or, without any, its space were written under.
std::vector<std::string> space_key(const CatalogRequest& request) {
  return {"search", request.constraints.empty() ? "space" : "constraints"};
}

// The variants the run may use, the start variant first (it is the baseline).
std::vector<std::string> allowed_variants(const kernels::FamilySpec& family, const CatalogRequest& request,
                                          const std::string& start) {
  auto is_family_variant = [&](const std::string& name) {
    return std::any_of(family.variants.begin(), family.variants.end(),
                       [&](const auto& v) { return v.name == name; });
  };
  const std::string family_variants = join(family.variants, ", ", [](const auto& v) { return v.name; });
  for (const auto& name : request.variants)
    if (!is_family_variant(name))
      throw UserError(request.where({"variants"}) + "unknown variant '" + name + "' of kernel '" +
                      family.name + "'; accepted: " + family_variants);
  const bool explicit_variants = !request.variants.empty();
  std::vector<std::string> allowed = request.variants;
  if (!explicit_variants)
    for (const auto& v : family.variants) allowed.push_back(v.name);
  if (std::find(allowed.begin(), allowed.end(), start) == allowed.end()) {
    const bool known = is_family_variant(start);
    // Without a start the run starts from the family's baseline: the variants as written leave it out.
    if (known && explicit_variants && request.start_variant.empty())
      throw UserError(request.where({"variants"}) + "the run starts from the family's baseline '" + start +
                      "', which is not among these variants; accepted: variants that include " + start +
                      ", or a start: {variant: V} with V one of " + join(allowed, ", "));
    if (!known || explicit_variants) {
      // The goal's variants are the family's when it names none.
      const std::string accepted = explicit_variants ? join(allowed, ", ") : family_variants;
      throw UserError(request.where({"start", "variant"}) + "variant '" + start + "' is not " +
                      (known ? "among the goal's variants" : "a variant of kernel '" + family.name + "'") +
                      "; accepted: " + accepted);
    }
  }
  std::stable_partition(allowed.begin(), allowed.end(), [&](const auto& n) { return n == start; });
  if (std::find(allowed.begin(), allowed.end(), start) == allowed.end())
    allowed.insert(allowed.begin(), start);
  return allowed;
}

// Every parameter the goal names belongs to some allowed variant, and each of
// its values is in some allowed variant's domain.
void check_requested_domains(const kernels::FamilySpec& family, const CatalogRequest& request,
                             const std::vector<std::string>& allowed) {
  for (const auto& [name, values] : request.domains) {
    bool found = false;
    for (const auto& variant_name : allowed) found = found || family.variant(variant_name).find_param(name);
    if (!found) {
      std::vector<std::string> known;
      std::set<std::string> seen;
      for (const auto& variant_name : allowed)
        for (const auto& p : family.variant(variant_name).params)
          if (seen.insert(p.name).second) known.push_back(p.name);
      throw UserError(request.where({"search", "space", name}) + "unknown parameter '" + name +
                      "' of kernel '" + family.name + "'; accepted: " + join(known, ", "));
    }
  }
  for (const auto& [name, values] : request.domains) {
    std::vector<search::ParamValue> union_domain;
    for (const auto& variant_name : allowed)
      if (const auto* p = family.variant(variant_name).find_param(name))
        for (auto d : p->values) union_domain.push_back(std::int64_t(d));
    for (const auto& v : values) {
      if (has_value(union_domain, v)) continue;
      std::sort(union_domain.begin(), union_domain.end(), [](const auto& a, const auto& b) {
        return search::numeric_value(a) < search::numeric_value(b);
      });
      union_domain.erase(std::unique(union_domain.begin(), union_domain.end(),
                                     [](const auto& a, const auto& b) { return search::same_value(a, b); }),
                         union_domain.end());
      const bool quoted_number = std::holds_alternative<std::string>(v) && [&] {
        const std::string& text = std::get<std::string>(v);
        char* end = nullptr;
        std::strtod(text.c_str(), &end);
        return !text.empty() && end == text.c_str() + text.size();
      }();
      throw UserError(request.where({"search", "space", name}) + "value " + search::to_string(v) +
                      " is not in the domain of '" + name + "': " + values_text(union_domain) +
                      (quoted_number
                           ? "; '" + std::get<std::string>(v) +
                                 "' is quoted, so it is a name, not a number: write it without quotes"
                           : ""));
    }
  }
}

// A default outside the goal's domain becomes the domain's nearest value.
void move_defaults_into_domains(VariantSpace& variant) {
  for (const auto& parameter : variant.parameters) {
    const auto value = search::ParamValue(variant.defaults[parameter.name()].get<std::int64_t>());
    if (parameter.position(value)) continue;
    search::ParamValue nearest = parameter.values().front();
    for (const auto& v : parameter.values())
      if (std::abs(search::numeric_value(v) - search::numeric_value(value)) <
          std::abs(search::numeric_value(nearest) - search::numeric_value(value)))
        nearest = v;
    variant.defaults[parameter.name()] = search::to_json(nearest);
  }
}

// A goal's constraint and the names it reads.
struct GoalConstraint {
  std::string text;
  std::set<std::string> names;
};

// The goal's constraints, parsed once for the whole family: a syntax error, or
// a name that is neither a parameter of an allowed variant nor a constant, is
// the goal's error at search.constraints, whichever variants it would reach.
std::vector<GoalConstraint> goal_constraints(const kernels::FamilySpec& family, const CatalogRequest& request,
                                             const std::vector<std::string>& allowed,
                                             const std::map<std::string, double>& constants) {
  std::set<std::string> parameters;
  for (const auto& name : allowed)
    for (const auto& p : family.variant(name).params) parameters.insert(p.name);
  std::vector<GoalConstraint> out;
  for (const auto& text : request.constraints) {
    GoalConstraint constraint{text, {}};
    try {
      search::Expression::parse(text, [&](std::string_view name) -> std::optional<search::Symbol> {
        constraint.names.insert(std::string(name));
        return search::Symbol{std::nullopt, 1.0, nullptr};
      });
    } catch (const UserError& e) {
      throw UserError(request.where({"search", "constraints"}) + e.what());
    }
    for (const auto& name : constraint.names)
      if (!parameters.count(name) && !constants.count(name))
        throw UserError(request.where({"search", "constraints"}) + "constraint '" + text + "': '" + name +
                        "' is neither a parameter of " + family.name + " (" + join(parameters, ", ") +
                        ") nor a constant (the shape's arguments, dtype_bytes, the target's figures)");
    out.push_back(std::move(constraint));
  }
  return out;
}

// One variant narrowed to the goal's domains; nullopt when the goal leaves it
// no value of some parameter and it may be left out (`required`: an error).
// A goal constraint binds the variant only if the variant has every parameter
// it names: "tiles_in_block_m <= 4" narrows the blocked variants and leaves
// the others as they are.
std::optional<VariantSpace> variant_space(const kernels::VariantSpec& spec, const CatalogRequest& request,
                                          const std::vector<GoalConstraint>& goal_constraints,
                                          const std::map<std::string, double>& constants, bool required) {
  VariantSpace variant;
  variant.name = spec.name;
  variant.description = spec.description;
  variant.constraints = spec.constraints;
  for (const auto& constraint : goal_constraints)
    if (std::all_of(constraint.names.begin(), constraint.names.end(), [&](const std::string& name) {
          return constants.count(name) || std::any_of(spec.params.begin(), spec.params.end(),
                                                      [&](const auto& p) { return p.name == name; });
        }))
      variant.constraints.push_back(constraint.text);
  variant.constants = constants;
  for (const auto& p : spec.params) {
    std::vector<search::ParamValue> domain;
    for (auto v : p.values) domain.push_back(std::int64_t(v));
    if (const auto* wanted = requested_domain(request, p.name)) {
      // In the family's order, whatever the goal's: the order decides which
      // values are neighbours (a search's steps, its encoding).
      std::vector<search::ParamValue> kept;
      for (const auto& v : domain)
        if (has_value(*wanted, v)) kept.push_back(v);
      if (kept.empty()) {
        if (!required) return std::nullopt;
        throw UserError(request.where({"search", "space", p.name}) + "none of " + values_text(*wanted) +
                        " is in the domain of '" + p.name + "' in variant '" + spec.name +
                        "': " + values_text(domain));
      }
      domain = kept;
    }
    variant.parameters.push_back(search::ParameterSpec::ordered(p.name, domain));
    const auto role = request.roles.find(p.name);
    variant.roles[p.name] = role != request.roles.end() ? role->second : kernels::role_name(p.role);
    variant.defaults[p.name] = p.default_value;
  }
  move_defaults_into_domains(variant);
  if (variant.parameters.empty()) {
    // A variant without parameters: one configuration.
    variant.parameters.push_back(search::ParameterSpec::ordered("_", {std::int64_t(0)}));
    variant.defaults["_"] = 0;
    variant.constraints.clear();
  }
  try {
    build_space(variant);
  } catch (const UserError& e) {
    if (!required) return std::nullopt;
    throw UserError(request.where(space_key(request)) + "the space of variant '" + spec.name +
                    "' is infeasible: " + e.what());
  }
  return variant;
}

// The start point: the goal's parameters over the start variant's defaults.
Json start_params(const VariantSpace& start, const CatalogRequest& request) {
  Json params = start.defaults;
  for (const auto& [name, value] : request.start_params.items()) {
    const auto* parameter = start.parameter(name);
    if (!parameter) {
      std::vector<std::string> names;
      for (const auto& p : start.parameters)
        if (p.name() != "_") names.push_back(p.name());  // the placeholder of a variant without parameters
      const std::string accepted = join(names, ", ");
      throw UserError(request.where({"start", "params", name}) + "unknown parameter '" + name +
                      "' of variant '" + start.name +
                      "'; accepted: " + (accepted.empty() ? "none" : accepted));
    }
    const auto v = search::param_value_from_json(value, name);
    if (!parameter->position(v))
      throw UserError(request.where({"start", "params", name}) + "value " + search::to_string(v) +
                      " is not in the goal's domain of '" + name + "': " + values_text(parameter->values()));
    params[name] = value;
  }
  const auto configuration = search::configuration_from_json(*start.space, params);
  if (!start.space->contains(configuration))
    throw UserError(request.where({"start"}) + "the start point " + Candidate{start.name, params}.text() +
                    " violates the constraints of variant '" + start.name + "'");
  // The domain's values, as the target takes them: the goal's 64.0 is the domain's 64.
  return search::to_json(*start.space, configuration);
}

}  // namespace

VariantCatalog family_catalog(const kernels::FamilySpec& family, const CatalogRequest& request,
                              const std::map<std::string, double>& target_constants) {
  const std::string start = request.start_variant.empty() ? family.baseline_variant : request.start_variant;
  const std::vector<std::string> allowed = allowed_variants(family, request, start);
  check_requested_domains(family, request, allowed);
  for (const auto& [name, role] : request.roles) {
    bool found = false;
    for (const auto& variant_name : allowed) found = found || family.variant(variant_name).find_param(name);
    if (!found) {
      std::set<std::string> known;
      for (const auto& variant_name : allowed)
        for (const auto& p : family.variant(variant_name).params) known.insert(p.name);
      throw UserError(request.where({"roles", name}) + "unknown parameter '" + name + "' of kernel '" +
                      family.name + "'; accepted: " + join(known, ", "));
    }
  }

  std::map<std::string, double> constants = target_constants;
  for (const auto& [arg, value] : request.shape) constants[arg] = double(value);
  if (auto dtype = sim::parse_dtype(request.dtype)) constants["dtype_bytes"] = sim::dtype_bytes(*dtype);

  const auto constraints = goal_constraints(family, request, allowed, constants);
  VariantCatalog catalog;
  catalog.kernel = family.name;
  for (const auto& name : allowed) {
    // A variant the goal did not ask for, outside its domains or impossible at
    // this shape, is left out; the start variant and named ones are errors.
    const bool required = !request.variants.empty() || name == start;
    if (auto variant = variant_space(family.variant(name), request, constraints, constants, required))
      catalog.variants.push_back(std::move(*variant));
  }
  const VariantSpace& start_space = catalog.variant(start);
  catalog.baseline = {start_space.name, start_params(start_space, request)};
  return catalog;
}

VariantCatalog recorded_catalog(const VariantSpace& recorded, const CatalogRequest& request) {
  // A recording is one variant: a goal naming another means another target.
  for (const auto& name : request.variants)
    if (name != recorded.name)
      throw UserError(request.where({"variants"}) + "unknown variant '" + name +
                      "'; a recorded space has one, '" + recorded.name + "'");
  if (!request.start_variant.empty() && request.start_variant != recorded.name)
    throw UserError(request.where({"start", "variant"}) + "unknown variant '" + request.start_variant +
                    "'; a recorded space has one, '" + recorded.name + "'");
  for (const auto& [name, role] : request.roles)
    if (!recorded.parameter(name))
      throw UserError(request.where({"roles", name}) + "unknown parameter '" + name +
                      "' of the recorded space; accepted: " +
                      join(recorded.parameters, ", ", [](const auto& p) { return p.name(); }));
  VariantSpace variant = recorded;
  for (const auto& [name, values] : request.domains)
    if (!variant.parameter(name))
      throw UserError(request.where({"search", "space", name}) + "unknown parameter '" + name +
                      "' of the recorded space; accepted: " +
                      join(variant.parameters, ", ", [](const auto& p) { return p.name(); }));
  std::map<std::string, std::vector<search::ParamValue>> subsets(request.domains.begin(),
                                                                 request.domains.end());
  if (!subsets.empty() || !request.constraints.empty()) {
    // The goal narrows the recorded space: rebuild it as that region.
    auto region = variant.region(subsets);
    if (!region)
      throw UserError(request.where({"search", "space"}) +
                      "no recorded configuration is in the goal's space");
    VariantSpace narrowed;
    narrowed.name = variant.name;
    narrowed.description = variant.description;
    narrowed.parameters = region->parameters();
    std::vector<search::Positions> positions;
    for (std::uint64_t i = 0; i < region->size(); ++i) positions.push_back(region->positions_at(i));
    try {
      narrowed.allowed =
          search::SearchSpace::satisfying(narrowed.parameters, std::move(positions), request.constraints);
    } catch (const UserError& e) {
      throw UserError(request.where({"search", "constraints"}) + e.what());
    }
    if (narrowed.allowed.empty())
      throw UserError(request.where({"search", "constraints"}) +
                      "no recorded configuration in the goal's space satisfies the constraints");
    variant = std::move(narrowed);
  }
  for (const auto& [name, role] : request.roles) variant.roles[name] = role;
  build_space(variant);
  for (const auto& p : variant.parameters) variant.defaults[p.name()] = search::to_json(p.values().front());
  // Start: the goal's parameters, else the first recorded configuration in index order.
  Json params = search::to_json(*variant.space, variant.space->configuration_at(0));
  for (const auto& [name, value] : request.start_params.items()) {
    if (!variant.parameter(name))
      throw UserError(request.where({"start", "params", name}) + "unknown parameter '" + name +
                      "' of the recorded space");
    params[name] = value;
  }
  const auto start = search::configuration_from_json(*variant.space, params);
  if (!variant.space->contains(start))
    throw UserError(request.where({"start", "params"}) + "the start point is not a recorded configuration");
  params = search::to_json(*variant.space, start);
  VariantCatalog catalog;
  catalog.baseline = {variant.name, params};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

VariantCatalog goal_space_catalog(const std::string& name, const CatalogRequest& request) {
  if (request.domains.empty())
    throw UserError(request.where({"search", "space"}) +
                    "a command target needs its parameters here, e.g. space: {tile: [32, 64, 128]}");
  VariantSpace variant;
  variant.name = name;
  variant.description = "the command target's program";
  for (const auto& [parameter, values] : request.domains) {
    const bool all_text = std::all_of(values.begin(), values.end(),
                                      [](const auto& v) { return std::holds_alternative<std::string>(v); });
    try {
      if (all_text) {
        std::vector<std::string> names;
        for (const auto& v : values) names.push_back(std::get<std::string>(v));
        variant.parameters.push_back(search::ParameterSpec::categorical(parameter, names));
      } else {
        variant.parameters.push_back(search::ParameterSpec::ordered(parameter, values));
      }
    } catch (const UserError& e) {
      throw UserError(request.where({"search", "space", parameter}) + e.what() +
                      " (quote every name, or write {categorical: [...]})");
    }
    variant.roles[parameter] = "";
  }
  for (const auto& [parameter, role] : request.roles) {
    if (!variant.parameter(parameter))
      throw UserError(
          request.where({"roles", parameter}) + "unknown parameter '" + parameter +
          "'; the space has: " + join(request.domains, ", ", [](const auto& d) { return d.first; }));
    variant.roles[parameter] = role;
  }
  variant.constraints = request.constraints;
  try {
    build_space(variant);
  } catch (const UserError& e) {
    throw UserError(request.where(space_key(request)) + e.what());
  }
  // Start: the goal's parameters over the first valid configuration in index order.
  Json params = search::to_json(*variant.space, variant.space->configuration_at(0));
  variant.defaults = params;
  for (const auto& [parameter_name, value] : request.start_params.items()) {
    const auto* parameter = variant.parameter(parameter_name);
    if (!parameter)
      throw UserError(request.where({"start", "params", parameter_name}) + "unknown parameter '" +
                      parameter_name + "' of search.space");
    if (!parameter->position(search::param_value_from_json(value, parameter_name)))
      throw UserError(request.where({"start", "params", parameter_name}) + "value " + value.dump() +
                      " is not in search.space." + parameter_name + ": " + values_text(parameter->values()));
    params[parameter_name] = value;
  }
  const auto start = search::configuration_from_json(*variant.space, params);
  if (!variant.space->contains(start))
    throw UserError(request.where({"start", "params"}) + "the start point violates search.constraints");
  params = search::to_json(*variant.space, start);
  if (!request.start_variant.empty() && request.start_variant != variant.name)
    throw UserError(request.where({"start", "variant"}) + "a command target has one variant, '" +
                    variant.name + "'");
  for (const auto& other : request.variants)
    if (other != variant.name)
      throw UserError(request.where({"variants"}) + "unknown variant '" + other +
                      "'; a command target has one, '" + variant.name + "'");
  VariantCatalog catalog;
  catalog.kernel = variant.name;
  catalog.baseline = {variant.name, params};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

VariantCatalog single_configuration_catalog(const std::string& kernel, const kernels::FamilySpec& family) {
  VariantSpace variant;
  variant.name = family.variants.front().name;
  variant.description = family.variants.front().description;
  variant.parameters.push_back(search::ParameterSpec::ordered("_", {std::int64_t(0)}));
  variant.defaults["_"] = 0;
  build_space(variant);
  VariantCatalog catalog;
  catalog.kernel = kernel;
  catalog.baseline = {variant.name, variant.defaults};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

}  // namespace autotune::skills
