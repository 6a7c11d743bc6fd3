// autotune explain RUN TRIAL [--db F] [--json]: why a trial was proposed, what
// it was compared with, and what came of it.
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "orchestrator/explain.hpp"

namespace autotune::cli {
namespace {

struct ExplainOptions {
  DatabaseOption db;
  int64_t run = 0;
  int64_t trial = 0;
  bool json = false;
};

const CommandRegistration registration{
    "explain", "Explain one trial: who proposed it and why, what it was compared with, what came of it",
    [](CLI::App& command) -> CommandAction {
      auto options = std::make_shared<ExplainOptions>();
      command.add_option("RUN", options->run, "Run id (see `autotune runs`)")->required()->check(check_id);
      command.add_option("TRIAL", options->trial, "Trial id (see `autotune trials RUN`)")
          ->required()
          ->check(check_id);
      add_database_option(command, options->db);
      command.add_flag("--json", options->json, "Print the explanation as one JSON object");
      return [options] {
        auto store = open_store_for_reading(options->db);
        const auto explanation = orchestrator::explain(*store, options->run, options->trial);
        if (options->json) {
          std::cout << orchestrator::explanation_json(explanation)
                           .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                    << "\n";
        } else {
          std::cout << orchestrator::format_explanation(explanation);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
