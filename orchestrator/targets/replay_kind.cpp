// A recorded space: a Kernel Tuner cachefile replayed, each configuration's
// recorded time its measurement (docs/search.md).
#include <filesystem>

#include "core/error.hpp"
#include "orchestrator/target_kind.hpp"
#include "skills/targets/replay_target.hpp"

namespace autotune::orchestrator {
namespace {

TargetKind replay_kind() {
  TargetKind kind;
  kind.description = "a recorded Kernel Tuner cachefile replayed (cachefile: PATH, objective: FIELD)";
  kind.read = [](ConfigReader& target, Goal& goal) {
    const YAML::Node file_node = target.raw("cachefile");
    std::filesystem::path cachefile =
        target.required<std::string>("cachefile", "a Kernel Tuner cachefile path");
    if (cachefile.is_relative()) cachefile = goal.file.parent_path() / cachefile;
    cachefile = cachefile.lexically_normal();
    if (!std::filesystem::exists(cachefile))
      target.fail("cachefile", "file not found: " + cachefile.string(), &file_node);
    goal.target.cachefile = cachefile;
    goal.target.replay_objective = target.optional<std::string>("objective", "");
    target.finish({"kind", "cachefile", "objective"});
  };
  kind.brings_own_space = true;
  kind.prepare = [](Goal& goal) {
    // A recording holds times, not the FLOPs an MFU needs.
    if (goal.objective == Objective::mfu)
      throw UserError(goal.where({"objective"}) +
                      "a replayed recording holds times, not MFU; accepted: latency, throughput (of the "
                      "recorded time)");
    RunSetup setup;
    std::unique_ptr<skills::ReplayTarget> target;
    try {
      target = std::make_unique<skills::ReplayTarget>(goal.target.cachefile, goal.target.replay_objective);
    } catch (const UserError& e) {  // what is wrong in the recording, located at the goal's key
      throw UserError(goal.where({"target", "cachefile"}) + e.what());
    }
    if (goal.family.empty()) goal.family = target->kernel_name();
    setup.catalog = skills::recorded_catalog(target->recorded_space(), catalog_request(goal));
    setup.catalog.kernel = target->kernel_name();
    adopt(goal, setup.catalog);
    setup.simulator_version = "replay";
    setup.target = std::move(target);
    return setup;
  };
  kind.write = [](YAML::Emitter& out, const Goal& goal) {
    out << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << "replay" << YAML::Key << "cachefile"
        << YAML::Value << goal.target.cachefile.string() << YAML::Key << "objective" << YAML::Value
        << goal.target.replay_objective << YAML::EndMap;
  };
  return kind;
}

const TargetKindRegistration registration("replay", replay_kind());

}  // namespace
}  // namespace autotune::orchestrator
