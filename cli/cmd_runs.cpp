// autotune runs [--db F] [--json]: the runs in the decision database.
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "store/report.hpp"

namespace autotune::cli {
namespace {

struct RunsOptions {
  DatabaseOption db;
  bool json = false;
};

const CommandRegistration registration{
    "runs", "List the runs in the decision database", [](CLI::App& command) -> CommandAction {
      auto options = std::make_shared<RunsOptions>();
      add_database_option(command, options->db);
      command.add_flag("--json", options->json, "Print a JSON list of runs");
      return [options] {
        auto store = open_store_for_reading(options->db);
        const auto runs = store::report::overviews(*store);
        if (options->json) {
          std::cout << store::report::runs_json(runs).dump(2, ' ', false,
                                                           nlohmann::json::error_handler_t::replace)
                    << "\n";
        } else {
          std::cout << store::report::format_runs(runs);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
