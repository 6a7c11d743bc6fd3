// The simulated NeuronCore: a built-in family's variants, or a user's kernel
// source, run on the cycle-approximate simulator (docs/goals.md).
#include "core/error.hpp"
#include "kernels/external/kernel_source.hpp"
#include "kernels/family.hpp"
#include "orchestrator/target_kind.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "skills/targets/sim_target.hpp"
#include "skills/targets/source_target.hpp"

namespace autotune::orchestrator {
namespace {

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
    setup.catalog = adopt_family_catalog(goal, target->constants(), target->family());
  } else {
    setup.catalog = skills::single_configuration_catalog(
        goal.family.empty() ? target->family().name : goal.family, target->family());
    adopt(goal, setup.catalog);
  }
  setup.target = std::move(target);
  return setup;
}

RunSetup family_setup(Goal& goal) {
  skills::SimTargetConfig config{goal.family,      goal.shape,     goal.dtype,
                                 goal.target.name, goal.tolerance, goal.verification_seed};
  std::unique_ptr<skills::SimTarget> target;
  try {
    target = std::make_unique<skills::SimTarget>(config);
  } catch (const UserError& e) {
    throw UserError(goal.where({"target"}) + e.what());
  }
  RunSetup setup;
  setup.catalog =
      adopt_family_catalog(goal, target->constants(), kernels::family_registry().get(goal.family));
  setup.simulator_version = std::string(sim::kSimulatorVersion);
  setup.target = std::move(target);
  return setup;
}

TargetKind sim_kind() {
  TargetKind kind;
  kind.description =
      "the built-in NeuronCore simulator (name: trn1, trn2 or a target file); also `target: NAME`";
  kind.read = [](ConfigReader& target, Goal& goal) {
    goal.target.name = target.optional<std::string>("name", "trn1");
    target.finish({"kind", "name"});
  };
  kind.runs_kernel_sources = true;
  kind.prepare = [](Goal& goal) {
    return goal.kernel_source.empty() ? family_setup(goal) : source_setup(goal);
  };
  kind.write = [](YAML::Emitter& out, const Goal& goal) { out << goal.target.name; };
  return kind;
}

const TargetKindRegistration registration("sim", sim_kind());

}  // namespace
}  // namespace autotune::orchestrator
