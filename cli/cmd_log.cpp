// autotune log RUN [--skill S] [--db F] [--json]: the decision chain of a run.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "orchestrator/decision_log.hpp"
#include "skills/skill.hpp"
#include "store/report.hpp"

namespace autotune::cli {
namespace {

struct LogOptions {
  DatabaseOption db;
  int64_t run = 0;
  std::optional<std::string> skill;
  bool json = false;
};

// Whether `decision` is one of `name`'s: a skill (its role) or a plugin
// (its name; plugins record "plugin:<name>" as the proposer).
bool decided_by(const store::Decision& decision, const std::string& name) {
  return decision.skill == name || decision.proposer == name || decision.proposer == "plugin:" + name;
}

// The built-in skills are always accepted (a run may have none of their
// decisions yet); so are the run's other skills and its plugins' names.
void require_known_skill(const std::vector<store::Decision>& all, int64_t run, const std::string& skill) {
  std::vector<std::string> accepted{skills::kProfileAnalyzer, skills::kKernelGenerator,
                                    skills::kParamExplorer, skills::kBenchmarkRunner,
                                    orchestrator::kOrchestrator};
  auto accept = [&](const std::string& name) {
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) accepted.push_back(name);
  };
  for (const auto& decision : all) {
    accept(decision.skill);
    if (decision.proposer.starts_with("plugin:")) accept(decision.proposer.substr(7));
  }
  if (std::find(accepted.begin(), accepted.end(), skill) != accepted.end()) return;
  throw UserError("unknown skill '" + skill + "' for run " + std::to_string(run) +
                  "; accepted: " + join(accepted, ", "));
}

const CommandRegistration registration{
    "log", "Show the decision log of a run: who decided what, on which evidence",
    [](CLI::App& command) -> CommandAction {
      auto options = std::make_shared<LogOptions>();
      command.add_option("RUN", options->run, "Run id (see `autotune runs`)")->required()->check(check_id);
      command.add_option("--skill", options->skill,
                         "Only this skill's decisions (profile_analyzer, kernel_generator, param_explorer, "
                         "benchmark_runner, orchestrator, or a plugin's name)");
      add_database_option(command, options->db);
      command.add_flag("--json", options->json, "Print a JSON list of decisions");
      return [options] {
        auto store = open_store_for_reading(options->db);
        const auto run = store::report::require_run(*store, options->run);
        const auto all = store->decisions(run.id);
        std::vector<store::Decision> decisions;
        for (const auto& decision : all)
          if (!options->skill || decided_by(decision, *options->skill)) decisions.push_back(decision);
        // Only an empty list can mean a misspelt skill.
        if (options->skill && decisions.empty()) require_known_skill(all, run.id, *options->skill);
        if (options->json) {
          std::cout << store::report::decisions_json(decisions).dump(2, ' ', false,
                                                                     nlohmann::json::error_handler_t::replace)
                    << "\n";
        } else {
          std::cout << store::report::format_decisions(decisions);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
