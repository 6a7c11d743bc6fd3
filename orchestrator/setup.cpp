#include "orchestrator/setup.hpp"

#include <algorithm>
#include <cctype>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "skills/catalog_builder.hpp"
#include "skills/targets/command_target.hpp"
#include "skills/targets/replay_target.hpp"
#include "skills/targets/sim_target.hpp"
#include "skills/targets/source_target.hpp"

namespace autotune::orchestrator {

namespace {

skills::CatalogRequest catalog_request(const Goal& goal) {
  skills::CatalogRequest request;
  request.domains = goal.space;
  request.constraints = goal.constraints;
  request.variants = goal.variants;
  request.start_variant = goal.start_variant;
  request.start_params = goal.start_params;
  request.roles = goal.roles;
  request.shape = goal.shape;
  request.dtype = goal.dtype;
  request.where = goal.where;
  return request;
}

// The goal, resolved: its start point and variants are the catalog's.
void adopt(Goal& goal, const skills::VariantCatalog& catalog) {
  goal.start_variant = catalog.baseline.variant;
  goal.start_params = catalog.baseline.params;
  goal.variants.clear();
  for (const auto& v : catalog.variants) goal.variants.push_back(v.name);
}

skills::VariantCatalog family_catalog(Goal& goal, const std::map<std::string, double>& target_constants,
                                      const kernels::FamilySpec& family) {
  auto catalog = skills::family_catalog(family, catalog_request(goal), target_constants);
  adopt(goal, catalog);
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

// The goal's kernel is a user source: compiled and described now, measured in
// kernel workers. Without kernel.family the shape and dtype are resolved
// against what the source declares.
RunSetup source_setup(Goal& goal) {
  try {
    (void)sim::load_target(goal.target.name);
  } catch (const UserError& e) {
    throw UserError(goal.where({"target"}) + e.what());
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
      throw UserError(goal.where({"kernel_source"}) + "the source's kernel '" + d.name + "' " +
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
  if (target->built()) {
    setup.catalog = family_catalog(goal, target->constants(), target->family());
  } else {
    setup.catalog = skills::single_configuration_catalog(
        goal.family.empty() ? target->family().name : goal.family, target->family());
    adopt(goal, setup.catalog);
  }
  setup.target = std::move(target);
  return setup;
}

}  // namespace

RunSetup prepare_run(Goal& goal) {
  // A goal made in code (a model's operators) points at its file's first line.
  if (goal.where.file().empty()) goal.where = KeyLocations(YAML::Node(), goal.file.string());
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
      throw UserError(goal.where({"target"}) + e.what());
    }
    setup.catalog = family_catalog(goal, target->constants(), kernels::family_registry().get(goal.family));
    setup.simulator_version = std::string(sim::kSimulatorVersion);
    setup.target = std::move(target);
  } else if (goal.target.kind == "replay") {
    auto target = std::make_unique<skills::ReplayTarget>(goal.target.cachefile, goal.target.replay_objective);
    if (goal.family.empty()) goal.family = target->kernel_name();
    setup.catalog = skills::recorded_catalog(target->recorded_space(), catalog_request(goal));
    setup.catalog.kernel = target->kernel_name();
    adopt(goal, setup.catalog);
    setup.simulator_version = "replay";
    setup.target = std::move(target);
  } else if (goal.target.kind == "command") {
    setup.catalog = skills::goal_space_catalog(goal.family, catalog_request(goal));
    adopt(goal, setup.catalog);
    std::vector<std::string> names;
    for (const auto& [name, values] : goal.space) names.push_back(name);
    ConfigReader spec(goal.target.spec, goal.file.string(), "target");
    setup.target = std::make_unique<skills::CommandMeasurementTarget>(
        skills::parse_command_target(spec, goal.file.parent_path(), &names));
    setup.simulator_version = "command";
  } else {
    throw UserError(goal.where({"target", "kind"}) + "the '" + goal.target.kind +
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
