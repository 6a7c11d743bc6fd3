#include "orchestrator/distributed.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace autotune::orchestrator {

store::MeasurementContext measurement_context(const Goal& goal, int64_t run) {
  Goal portable = goal;
  if (!portable.kernel_source.empty()) portable.kernel_source = std::filesystem::absolute(goal.kernel_source);
  if (!portable.target.cachefile.empty())
    portable.target.cachefile = std::filesystem::absolute(goal.target.cachefile);
  return store::MeasurementContext{run, to_yaml(portable), std::filesystem::absolute(goal.file).string(),
                                   goal.timeout_s};
}

PreparedGoal prepare_from_context(const store::MeasurementContext& context) {
  // The goal reader reads files; the text goes through a private one, in a
  // folder made by mkdtemp so that nothing planted in the temporary folder
  // under a predictable name is written through.
  std::string pattern = (std::filesystem::temp_directory_path() /
                         ("autotune-worker-" + std::to_string(context.run) + "-XXXXXX"))
                            .string();
  if (!::mkdtemp(pattern.data()))
    throw UserError("run " + std::to_string(context.run) + ": cannot make a folder for its goal in " +
                    std::filesystem::temp_directory_path().string() + ": " + std::strerror(errno));
  const std::filesystem::path folder = pattern;
  const auto file = folder / "goal.yaml";
  {
    std::ofstream out(file);
    out << context.goal_yaml;
  }
  try {
    PreparedGoal prepared{load_goal(file), {}};
    std::filesystem::remove_all(folder);
    prepared.goal.file =
        context.goal_file;  // relative paths (a command's workdir) resolve as for the coordinator
    prepared.setup = prepare_run(prepared.goal);
    return prepared;
  } catch (const UserError& error) {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
    throw UserError("run " + std::to_string(context.run) +
                    ": its goal cannot be measured on this host: " + error.what());
  }
}

}  // namespace autotune::orchestrator
