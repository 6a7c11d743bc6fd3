#include "orchestrator/setup.hpp"

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "orchestrator/target_kind.hpp"

namespace autotune::orchestrator {

RunSetup prepare_run(Goal& goal) {
  // A goal made in code (a model's operators) points at its file's first line.
  if (goal.where.file().empty()) goal.where = KeyLocations(YAML::Node(), goal.file.string());
  const auto& kinds = target_kind_registry();
  if (!kinds.contains(goal.target.kind))
    throw UserError(goal.where({"target", "kind"}) + "unknown target kind '" + goal.target.kind +
                    "'; accepted: " + kinds.joined_names());
  return kinds.get(goal.target.kind).prepare(goal);
}

PreparedGoal load_and_prepare(const std::filesystem::path& path) {
  PreparedGoal prepared{load_goal(path), {}};
  prepared.setup = prepare_run(prepared.goal);
  return prepared;
}

}  // namespace autotune::orchestrator
