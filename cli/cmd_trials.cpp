// autotune trials RUN [--top K] [--db F] [--json]: the trials of one run, in
// commit order, or the best K first.
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "store/report.hpp"

namespace autotune::cli {
namespace {

struct TrialsOptions {
  DatabaseOption db;
  int64_t run = 0;
  std::optional<int> top;
  bool json = false;
};

const CommandRegistration registration{
    "trials", "List the trials of a run (best first with --top)", [](CLI::App& command) -> CommandAction {
      auto options = std::make_shared<TrialsOptions>();
      command.add_option("RUN", options->run, "Run id (see `autotune runs`)")->required()->check(check_id);
      command.add_option("--top", options->top, "Only the K best measured trials, best first (by latency)")
          ->check(CLI::Range(1, 1'000'000));
      add_database_option(command, options->db);
      command.add_flag("--json", options->json, "Print a JSON list of trials");
      return [options] {
        auto store = open_store_for_reading(options->db);
        const auto run = store::report::require_run(*store, options->run);
        const auto overview = store::report::overview(*store, run);
        const auto trials = store->trials(run.id, options->top, store::Ranking{});
        if (options->json) {
          std::cout << store::report::trials_json(trials, overview.baseline_latency_s)
                           .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                    << "\n";
        } else if (overview.model) {
          // A model goal's run measures nothing itself: say where its trials are.
          std::cout << "run " << run.id << " is a model goal's run; its trials are in its kernel runs"
                    << (overview.kernel_runs.empty()
                            ? std::string(" (none yet)")
                            : " " + store::report::id_ranges(overview.kernel_runs) + " (autotune trials " +
                                  std::to_string(overview.kernel_runs.front()) + ")")
                    << "\n";
        } else {
          std::cout << store::report::format_trials(trials, overview.baseline_latency_s);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
