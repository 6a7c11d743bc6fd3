#include "orchestrator/setup.hpp"

#include <algorithm>
#include <cctype>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "skills/targets/command_target.hpp"
#include "skills/targets/replay_target.hpp"
#include "skills/targets/sim_target.hpp"
#include "skills/targets/source_target.hpp"

namespace autotune::orchestrator {

namespace {

// "file:line: a.b.c: " for a key path of the goal file (the line of the
// deepest key that exists).
std::string locate(const Goal& goal, const std::vector<std::string>& path) {
  YAML::Node node;
  try {
    node = YAML::LoadFile(goal.file.string());
  } catch (const YAML::Exception&) {
    return goal.file.string() + ": ";
  }
  int line = 1;
  std::string joined;
  for (const auto& key : path) {
    joined += (joined.empty() ? "" : ".") + key;
    if (!node || !node.IsMap()) continue;
    YAML::Node next;
    for (const auto& entry : node)
      if (entry.first.Scalar() == key) {
        line = entry.first.Mark().line + 1;
        next = entry.second;
      }
    node = next;
  }
  return goal.file.string() + ":" + std::to_string(line) + ": " + joined + ": ";
}

template <class P>
std::string declared_role(const P& parameter) {
  if constexpr (requires { parameter.role; }) {
    return std::string(parameter.role);
  } else {
    return "";
  }
}

std::string values_text(const std::vector<search::ParamValue>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + search::to_string(v);
  return "[" + out + "]";
}

const std::vector<search::ParamValue>* goal_domain(const Goal& goal, const std::string& name) {
  for (const auto& [key, values] : goal.space)
    if (key == name) return &values;
  return nullptr;
}

skills::VariantCatalog sim_catalog(Goal& goal, const std::map<std::string, double>& target_constants,
                                   const kernels::FamilySpec& family) {
  skills::VariantCatalog catalog;
  catalog.kernel = family.name;

  std::vector<std::string> allowed = goal.variants;
  const bool explicit_variants = !allowed.empty();
  for (const auto& name : allowed) {
    const bool known = std::any_of(family.variants.begin(), family.variants.end(),
                                   [&](const auto& v) { return v.name == name; });
    if (!known) {
      std::string accepted;
      for (const auto& v : family.variants) accepted += (accepted.empty() ? "" : ", ") + v.name;
      throw UserError(locate(goal, {"variants"}) + "unknown variant '" + name + "' of kernel '" +
                      family.name + "'; accepted: " + accepted);
    }
  }
  if (allowed.empty())
    for (const auto& v : family.variants) allowed.push_back(v.name);
  if (goal.start_variant.empty()) goal.start_variant = family.baseline_variant;
  if (std::find(allowed.begin(), allowed.end(), goal.start_variant) == allowed.end()) {
    const bool known = std::any_of(family.variants.begin(), family.variants.end(),
                                   [&](const auto& v) { return v.name == goal.start_variant; });
    if (!known || explicit_variants) {
      std::string accepted;
      for (const auto& v : explicit_variants ? allowed : std::vector<std::string>{})
        accepted += (accepted.empty() ? "" : ", ") + v;
      if (!known)
        for (const auto& v : family.variants) accepted += (accepted.empty() ? "" : ", ") + v.name;
      throw UserError(locate(goal, {"start", "variant"}) + "variant '" + goal.start_variant + "' is not " +
                      (known ? "among the goal's variants" : "a variant of kernel '" + family.name + "'") +
                      "; accepted: " + accepted);
    }
  }
  // The start variant is always in the catalog (it is the baseline), first.
  std::stable_partition(allowed.begin(), allowed.end(),
                        [&](const auto& n) { return n == goal.start_variant; });
  if (std::find(allowed.begin(), allowed.end(), goal.start_variant) == allowed.end())
    allowed.insert(allowed.begin(), goal.start_variant);

  // Every parameter the goal names must belong to some allowed variant.
  for (const auto& [name, values] : goal.space) {
    bool found = false;
    for (const auto& variant_name : allowed)
      found = found || family.variant(variant_name).find_param(name) != nullptr;
    if (!found) {
      std::string accepted;
      std::set<std::string> seen;
      for (const auto& variant_name : allowed)
        for (const auto& p : family.variant(variant_name).params)
          if (seen.insert(p.name).second) accepted += (accepted.empty() ? "" : ", ") + p.name;
      throw UserError(locate(goal, {"search", "space", name}) + "unknown parameter '" + name +
                      "' of kernel '" + family.name + "'; accepted: " + accepted);
    }
  }

  for (const auto& [name, values] : goal.space) {
    for (const auto& v : values) {
      bool somewhere = false;
      std::vector<search::ParamValue> union_domain;
      for (const auto& variant_name : allowed)
        if (const auto* p = family.variant(variant_name).find_param(name))
          for (auto d : p->values) {
            somewhere = somewhere || search::same_value(search::ParamValue(std::int64_t(d)), v);
            union_domain.push_back(std::int64_t(d));
          }
      if (!somewhere) {
        std::sort(union_domain.begin(), union_domain.end(), [](const auto& a, const auto& b) {
          return search::numeric_value(a) < search::numeric_value(b);
        });
        union_domain.erase(std::unique(union_domain.begin(), union_domain.end(),
                                       [](const auto& a, const auto& b) { return search::same_value(a, b); }),
                           union_domain.end());
        throw UserError(locate(goal, {"search", "space", name}) + "value " + search::to_string(v) +
                        " is not in the domain of '" + name + "': " + values_text(union_domain));
      }
    }
  }

  std::map<std::string, double> constants = target_constants;
  for (const auto& [arg, value] : goal.shape) constants[arg] = double(value);
  if (auto dtype = sim::parse_dtype(goal.dtype)) constants["dtype_bytes"] = sim::dtype_bytes(*dtype);

  for (const auto& variant_name : allowed) {
    const kernels::VariantSpec& spec = family.variant(variant_name);
    skills::VariantSpace variant;
    variant.name = spec.name;
    variant.description = spec.description;
    variant.constraints = spec.constraints;
    variant.constraints.insert(variant.constraints.end(), goal.constraints.begin(), goal.constraints.end());
    variant.constants = constants;
    bool unusable = false;
    for (const auto& p : spec.params) {
      std::vector<search::ParamValue> domain;
      for (auto v : p.values) domain.push_back(std::int64_t(v));
      if (const auto* wanted = goal_domain(goal, p.name)) {
        // The goal's values that this variant's domain has (a value no
        // allowed variant has is an error, checked above).
        std::vector<search::ParamValue> kept;
        for (const auto& v : *wanted)
          if (std::any_of(domain.begin(), domain.end(),
                          [&](const auto& d) { return search::same_value(d, v); }))
            kept.push_back(v);
        if (kept.empty()) {
          if (explicit_variants || variant_name == goal.start_variant)
            throw UserError(locate(goal, {"search", "space", p.name}) + "none of " + values_text(*wanted) +
                            " is in the domain of '" + p.name + "' in variant '" + variant_name +
                            "': " + values_text(domain));
          unusable = true;
        }
        domain = kept;
      }
      variant.parameters.push_back(search::ParameterSpec::ordered(p.name, domain));
      std::string role = declared_role(p);
      if (role.empty()) role = role_from_description(p.description);
      if (const auto it = goal.roles.find(p.name); it != goal.roles.end()) role = it->second;
      variant.roles[p.name] = role;
      variant.defaults[p.name] = p.default_value;
    }
    if (unusable) continue;  // a variant the goal did not ask for, outside the goal's domains: left out
    // A default outside the goal's domain becomes the domain's nearest value.
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
    if (variant.parameters.empty()) {
      // A variant without parameters: one configuration.
      variant.parameters.push_back(search::ParameterSpec::ordered("_", {std::int64_t(0)}));
      variant.defaults["_"] = 0;
      variant.constraints.clear();
    }
    try {
      skills::build_space(variant);
    } catch (const UserError& e) {
      if (explicit_variants || variant_name == goal.start_variant)
        throw UserError(locate(goal, {"search", goal.constraints.empty() ? "space" : "constraints"}) +
                        "the space of variant '" + variant_name + "' is infeasible: " + e.what());
      continue;  // a variant the goal did not ask for, impossible at this shape: left out
    }
    catalog.variants.push_back(std::move(variant));
  }

  // The start point: the goal's parameters over the variant's defaults.
  const skills::VariantSpace& start = catalog.variant(goal.start_variant);
  Json params = start.defaults;
  for (const auto& [name, value] : goal.start_params.items()) {
    const auto* parameter = start.parameter(name);
    if (!parameter) {
      std::string accepted;
      for (const auto& p : start.parameters) accepted += (accepted.empty() ? "" : ", ") + p.name();
      throw UserError(locate(goal, {"start", "params", name}) + "unknown parameter '" + name +
                      "' of variant '" + start.name +
                      "'; accepted: " + (accepted.empty() ? "none" : accepted));
    }
    const auto v = search::param_value_from_json(value, name);
    if (!parameter->position(v))
      throw UserError(locate(goal, {"start", "params", name}) + "value " + search::to_string(v) +
                      " is not in the goal's domain of '" + name + "': " + values_text(parameter->values()));
    params[name] = value;
  }
  if (!start.space->contains(search::configuration_from_json(*start.space, params)))
    throw UserError(locate(goal, {"start"}) + "the start point " +
                    skills::Candidate{start.name, params}.key() + " violates the constraints of variant '" +
                    start.name + "'");
  catalog.baseline = {start.name, params};
  goal.start_params = params;
  goal.variants.clear();
  for (const auto& v : catalog.variants) goal.variants.push_back(v.name);
  return catalog;
}

skills::VariantCatalog replay_catalog(Goal& goal, const skills::ReplayTarget& target) {
  skills::VariantCatalog catalog;
  catalog.kernel = target.kernel_name();
  if (goal.family.empty()) goal.family = target.kernel_name();
  skills::VariantSpace variant = target.recorded_space();
  for (const auto& [name, values] : goal.space)
    if (!variant.parameter(name)) {
      std::string accepted;
      for (const auto& p : variant.parameters) accepted += (accepted.empty() ? "" : ", ") + p.name();
      throw UserError(locate(goal, {"search", "space", name}) + "unknown parameter '" + name +
                      "' of the recorded space; accepted: " + accepted);
    }
  std::map<std::string, std::vector<search::ParamValue>> subsets(goal.space.begin(), goal.space.end());
  if (!subsets.empty() || !goal.constraints.empty()) {
    // The goal narrows the recorded space: rebuild it as that region.
    auto region = variant.region(subsets);
    if (!region)
      throw UserError(locate(goal, {"search", "space"}) + "no recorded configuration is in the goal's space");
    skills::VariantSpace narrowed;
    narrowed.name = variant.name;
    narrowed.description = variant.description;
    narrowed.parameters = region->parameters();
    for (std::uint64_t i = 0; i < region->size(); ++i) narrowed.allowed.push_back(region->positions_at(i));
    variant = std::move(narrowed);
  }
  for (const auto& [name, role] : goal.roles) variant.roles[name] = role;
  skills::build_space(variant);
  for (const auto& p : variant.parameters) variant.defaults[p.name()] = search::to_json(p.values().front());
  // Start: the goal's parameters, else the first recorded configuration in index order.
  Json params = search::to_json(*variant.space, variant.space->configuration_at(0));
  for (const auto& [name, value] : goal.start_params.items()) {
    if (!variant.parameter(name))
      throw UserError(locate(goal, {"start", "params", name}) + "unknown parameter '" + name +
                      "' of the recorded space");
    params[name] = value;
  }
  if (!variant.space->contains(search::configuration_from_json(*variant.space, params)))
    throw UserError(locate(goal, {"start", "params"}) + "the start point is not a recorded configuration");
  goal.start_variant = variant.name;
  goal.start_params = params;
  goal.variants = {variant.name};
  catalog.baseline = {variant.name, params};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

// A command target's space is the goal's own: one variant (named after
// `kernel.family`, default "command") whose parameters are search.space.
skills::VariantCatalog command_catalog(Goal& goal) {
  if (goal.space.empty())
    throw UserError(locate(goal, {"search", "space"}) +
                    "a command target needs its parameters here, e.g. space: {tile: [32, 64, 128]}");
  skills::VariantSpace variant;
  variant.name = goal.family;
  variant.description = "the command target's program";
  for (const auto& [name, values] : goal.space) {
    const bool all_text = std::all_of(values.begin(), values.end(),
                                      [](const auto& v) { return std::holds_alternative<std::string>(v); });
    try {
      if (all_text) {
        std::vector<std::string> names;
        for (const auto& v : values) names.push_back(std::get<std::string>(v));
        variant.parameters.push_back(search::ParameterSpec::categorical(name, names));
      } else {
        variant.parameters.push_back(search::ParameterSpec::ordered(name, values));
      }
    } catch (const UserError& e) {
      throw UserError(locate(goal, {"search", "space", name}) + e.what() +
                      " (quote every name, or write {categorical: [...]})");
    }
    variant.roles[name] = "";
  }
  for (const auto& [name, role] : goal.roles) {
    if (!variant.parameter(name))
      throw UserError(locate(goal, {"roles", name}) + "unknown parameter '" + name +
                      "'; the space has: " + [&] {
                        std::string all;
                        for (const auto& [n, v] : goal.space) all += (all.empty() ? "" : ", ") + n;
                        return all;
                      }());
    variant.roles[name] = role;
  }
  variant.constraints = goal.constraints;
  try {
    skills::build_space(variant);
  } catch (const UserError& e) {
    throw UserError(locate(goal, {"search", goal.constraints.empty() ? "space" : "constraints"}) + e.what());
  }
  // Start: the goal's parameters over the first valid configuration in index order.
  Json params = search::to_json(*variant.space, variant.space->configuration_at(0));
  variant.defaults = params;
  for (const auto& [name, value] : goal.start_params.items()) {
    const auto* parameter = variant.parameter(name);
    if (!parameter)
      throw UserError(locate(goal, {"start", "params", name}) + "unknown parameter '" + name +
                      "' of search.space");
    if (!parameter->position(search::param_value_from_json(value, name)))
      throw UserError(locate(goal, {"start", "params", name}) + "value " + value.dump() +
                      " is not in search.space." + name + ": " + values_text(parameter->values()));
    params[name] = value;
  }
  if (!variant.space->contains(search::configuration_from_json(*variant.space, params)))
    throw UserError(locate(goal, {"start", "params"}) + "the start point violates search.constraints");
  if (!goal.start_variant.empty() && goal.start_variant != variant.name)
    throw UserError(locate(goal, {"start", "variant"}) + "a command target has one variant, '" +
                    variant.name + "'");
  goal.start_variant = variant.name;
  goal.start_params = params;
  goal.variants = {variant.name};
  skills::VariantCatalog catalog;
  catalog.kernel = variant.name;
  catalog.baseline = {variant.name, params};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

// A kernel that gives its own reference, as the goal's kernel.shape and
// kernel.dtype are checked against it: its shape check runs in a worker.
KernelSignature own_signature(const kernels::external::KernelDescriptor& descriptor,
                              const std::filesystem::path& so,
                              const kernels::external::WorkerOptions& worker) {
  KernelSignature signature;
  signature.kernel = descriptor.name;
  signature.shape_args = descriptor.shape_args;
  signature.default_shape = descriptor.default_shape;
  signature.dtypes = descriptor.dtypes;
  signature.check_shape = [so, worker](const std::map<std::string, std::int64_t>& shape) {
    // A worker that fails now leaves the shape to the baseline, which reports that failure.
    const auto described = kernels::external::describe_in_worker(so, worker, shape);
    return described.ok ? described.shape_error : std::string();
  };
  return signature;
}

// A kernel source that does not compile or load: one configuration of one
// variant, measured (as that failure) as the run's baseline.
skills::VariantCatalog unbuilt_catalog(Goal& goal, const kernels::FamilySpec& family) {
  skills::VariantSpace variant;
  variant.name = family.variants.front().name;
  variant.description = family.variants.front().description;
  variant.parameters.push_back(search::ParameterSpec::ordered("_", {std::int64_t(0)}));
  variant.defaults["_"] = 0;
  skills::build_space(variant);
  skills::VariantCatalog catalog;
  catalog.kernel = goal.family.empty() ? family.name : goal.family;
  catalog.baseline = {variant.name, variant.defaults};
  goal.start_variant = variant.name;
  goal.start_params = variant.defaults;
  goal.variants = {variant.name};
  catalog.variants.push_back(std::move(variant));
  return catalog;
}

// The goal's kernel is a user source: compiled and described now, measured in
// kernel workers. Without kernel.family the shape and dtype are resolved
// against what the source declares.
RunSetup source_setup(Goal& goal) {
  try {
    (void)sim::load_target(goal.target.name);
  } catch (const UserError& e) {
    throw UserError(locate(goal, {"target"}) + e.what());
  }
  skills::SourceTargetConfig config;
  config.source = goal.kernel_source;
  config.target = goal.target.name;
  config.tolerance = goal.tolerance;
  config.verification_seed = goal.verification_seed;
  config.worker.timeout_s = goal.timeout_s;
  auto kernel =
      kernels::external::compile_and_describe(goal.kernel_source.string(), config.compile, config.worker);
  RunSetup setup;
  setup.simulator_version = std::string(sim::kSimulatorVersion);
  if (kernel.ok) {
    const auto& d = kernel.descriptor;
    if (!goal.family.empty() && d.family != goal.family)
      throw UserError(locate(goal, {"kernel_source"}) + "the source's kernel '" + d.name + "' " +
                      (d.family.empty() ? "names no family (it gives its own reference)"
                                        : "matches family '" + d.family + "'") +
                      ", the goal's kernel.family is '" + goal.family + "'" +
                      (d.family.empty() ? "; leave kernel.family out to tune it" : ""));
    if (goal.family.empty()) {
      goal.family = d.family;
      resolve_kernel_shape(goal, d.family.empty()
                                     ? own_signature(d, kernel.so_path, config.worker)
                                     : kernel_signature(kernels::family_registry().get(d.family)));
    }
    config.shape = goal.shape;
    config.dtype = goal.dtype;
  } else {
    setup.kernel_source_failure = kernels::external::failure_report(kernel);
  }
  auto target = std::make_unique<skills::SourceTarget>(config, std::move(kernel));
  setup.catalog = target->built() ? sim_catalog(goal, target->constants(), target->family())
                                  : unbuilt_catalog(goal, target->family());
  setup.target = std::move(target);
  return setup;
}

}  // namespace

std::string role_from_description(const std::string& description) {
  std::string text = description;
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  auto has = [&](const char* word) { return text.find(word) != std::string::npos; };
  if (has("rotating buffer") || has("pipeline")) return skills::kRolePipelineDepth;
  if (has("unroll") || has("per step") || has("per loop step")) return skills::kRoleUnroll;
  if (has("block")) return skills::kRoleBlock;
  if (has("tile")) return skills::kRoleTile;
  return "";
}

RunSetup prepare_run(Goal& goal) {
  RunSetup setup;
  if (goal.target.kind == "sim" && !goal.kernel_source.empty()) {
    setup = source_setup(goal);
  } else if (goal.target.kind == "sim") {
    skills::SimTargetConfig config{goal.family,      goal.shape,     goal.dtype,
                                   goal.target.name, goal.tolerance, goal.verification_seed};
    std::unique_ptr<skills::SimTarget> target;
    try {
      target = std::make_unique<skills::SimTarget>(config);
    } catch (const UserError& e) {
      throw UserError(locate(goal, {"target"}) + e.what());
    }
    setup.catalog = sim_catalog(goal, target->constants(), kernels::family_registry().get(goal.family));
    setup.simulator_version = std::string(sim::kSimulatorVersion);
    setup.target = std::move(target);
  } else if (goal.target.kind == "replay") {
    auto target = std::make_unique<skills::ReplayTarget>(goal.target.cachefile, goal.target.replay_objective);
    setup.catalog = replay_catalog(goal, *target);
    setup.simulator_version = "replay";
    setup.target = std::move(target);
  } else if (goal.target.kind == "command") {
    setup.catalog = command_catalog(goal);
    std::vector<std::string> names;
    for (const auto& [name, values] : goal.space) names.push_back(name);
    ConfigReader spec(goal.target.spec, goal.file.string(), "target");
    setup.target = std::make_unique<skills::CommandMeasurementTarget>(
        parse_command_target(spec, goal.file.parent_path(), &names));
    setup.simulator_version = "command";
  } else {
    throw UserError(locate(goal, {"target", "kind"}) + "the '" + goal.target.kind +
                    "' target is not wired into `run` yet; accepted here: sim, replay, command");
  }
  return setup;
}

PreparedGoal load_and_prepare(const std::filesystem::path& path) {
  PreparedGoal prepared{load_goal(path), {}};
  prepared.setup = prepare_run(prepared.goal);
  return prepared;
}

}  // namespace autotune::orchestrator
