// autotune log RUN [--skill S] [--db F] [--json]: the decision chain of a run.
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "store/report.hpp"

namespace autotune::cli {
namespace {

struct LogOptions {
  DatabaseOption db;
  int64_t run = 0;
  std::optional<std::string> skill;
  bool json = false;
};

const CommandRegistration registration{
    "log", "Show the decision log of a run: who decided what, on which evidence",
    [](CLI::App& command) -> CommandAction {
      auto options = std::make_shared<LogOptions>();
      command.add_option("RUN", options->run, "Run id (see `autotune runs`)")->required();
      command.add_option("--skill", options->skill,
                         "Only this skill's decisions (profile_analyzer, kernel_generator, param_explorer, "
                         "benchmark_runner, orchestrator, or a plugin's name)");
      add_database_option(command, options->db);
      command.add_flag("--json", options->json, "Print a JSON list of decisions");
      return [options] {
        auto store = open_store_for_reading(options->db);
        const auto run = store::report::require_run(*store, options->run);
        const auto decisions = store->decisions(run.id, options->skill);
        if (options->json) {
          std::cout << store::report::decisions_json(decisions).dump(2) << "\n";
        } else {
          std::cout << store::report::format_decisions(decisions);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
