// The user's own program measures each candidate (argv with {placeholders},
// a time parsed from its output): real hardware, a vendor toolchain, a
// remote machine (docs/goals.md).
#include <vector>

#include "orchestrator/target_kind.hpp"
#include "skills/targets/command_target.hpp"

namespace autotune::orchestrator {
namespace {

TargetKind command_kind() {
  TargetKind kind;
  kind.description = "your own program measures each candidate (argv: [...], a time parsed from its output)";
  kind.read = [](ConfigReader& target, Goal& goal) {
    // Keys and program are checked here; the placeholders against the
    // goal's space when the run is prepared.
    (void)skills::parse_command_target(target, goal.file.parent_path());
    goal.target.name = "command";
  };
  kind.brings_own_space = true;
  kind.own_space_family = "command";
  kind.prepare = [](Goal& goal) {
    RunSetup setup;
    setup.catalog = skills::goal_space_catalog(goal.family, catalog_request(goal));
    adopt(goal, setup.catalog);
    std::vector<std::string> names;
    for (const auto& [name, values] : goal.space) names.push_back(name);
    ConfigReader spec(goal.target.spec, goal.file.string(), "target");
    setup.target = std::make_unique<skills::CommandMeasurementTarget>(
        skills::parse_command_target(spec, goal.file.parent_path(), &names));
    setup.simulator_version = "command";
    return setup;
  };
  return kind;
}

const TargetKindRegistration registration("command", command_kind());

}  // namespace
}  // namespace autotune::orchestrator
