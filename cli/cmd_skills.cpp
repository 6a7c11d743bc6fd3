// autotune skills [GOAL.yaml] [--json]: the four built-in skills and, given a
// goal, the plugin skills it declares (validated as `run` validates them).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "core/text.hpp"
#include "orchestrator/goal.hpp"
#include "skills/kernel_generator.hpp"
#include "skills/param_explorer.hpp"
#include "skills/profile_analyzer.hpp"

namespace autotune::cli {
namespace {

struct BuiltinSkill {
  std::string name;
  std::string does;
  std::string plugins;  // how a plugin can take part in this role
};

std::vector<BuiltinSkill> builtin_skills() {
  // Names come from the skills themselves, so the list follows the code.
  return {
      {skills::ProfileAnalyzer().name(),
       "reads the best candidate's profile and returns findings with evidence (bound, engine activity, "
       "DMA/compute "
       "overlap, small transfers, SBUF/PSUM pressure, roofline headroom), each mapped to an action",
       "replaces or after"},
      {skills::KernelGenerator().name(),
       "turns findings into ideas: which structural variant to try and which region of its parameter space",
       "replaces or after"},
      {skills::ParamExplorer().name(),
       "searches an idea's region with the goal's strategy (grid, random, bayes, ...) within a budget, in "
       "batches",
       "replaces or after (the plan: strategy and budget)"},
      {skills::kBenchmarkRunner,
       "measures candidates on the target (sim, replay, command) in parallel with a timeout, verifies them, "
       "caches "
       "and commits every trial",
       "none (measure through your own program with target: {kind: command})"},
  };
}

nlohmann::json plugin_json(const skills::PluginSkillConfig& p) {
  nlohmann::json out = {{"name", p.name},
                        {"role", p.role},
                        {"command", p.command},
                        {"timeout_s", p.timeout_s},
                        {"max_restarts", p.max_restarts},
                        {"workdir", p.workdir.string()}};
  if (!p.replaces.empty()) out["replaces"] = p.replaces;
  if (!p.after.empty()) out["after"] = p.after;
  return out;
}

std::string command_text(const std::vector<std::string>& argv) {
  return join(argv, " ", [](const std::string& a) {
    const bool quote = a.empty() || a.find_first_of(" \t'\"") != std::string::npos;
    return quote ? "'" + a + "'" : a;
  });
}

const CommandRegistration registration(
    "skills", "List the built-in skills and, given a goal, its plugin skills",
    [](CLI::App& app) -> CommandAction {
      struct Options {
        std::optional<std::string> goal;
        bool json = false;
      };
      auto options = std::make_shared<Options>();
      app.add_option("goal", options->goal, "Goal file (YAML) whose plugin skills to list and validate");
      app.add_flag("--json", options->json, "Print one JSON object");
      return [options]() -> int {
        std::optional<orchestrator::Goal> goal;
        if (options->goal) goal = orchestrator::load_goal(*options->goal);
        const auto builtins = builtin_skills();
        if (options->json) {
          nlohmann::json out = {{"builtin", nlohmann::json::array()}};
          for (const auto& b : builtins)
            out["builtin"].push_back(
                {{"name", b.name}, {"role", b.name}, {"does", b.does}, {"plugins", b.plugins}});
          if (goal) {
            out["goal"] = goal->file.string();
            out["plugins"] = nlohmann::json::array();
            for (const auto& p : goal->plugins) out["plugins"].push_back(plugin_json(p));
          }
          std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
          return 0;
        }
        std::printf("built-in skills\n");
        for (const auto& b : builtins) {
          std::printf("  %-17s %s\n", b.name.c_str(), b.does.c_str());
          std::printf("  %-17s plugins: %s\n", "", b.plugins.c_str());
        }
        if (goal) {
          std::printf("\nplugin skills of %s", goal->file.string().c_str());
          if (goal->plugins.empty())
            std::printf(": none\n");
          else
            std::printf("\n");
          for (const auto& p : goal->plugins) {
            std::printf("  %-17s role %s, %s %s, timeout %g s, %d restart(s)\n", p.name.c_str(),
                        p.role.c_str(), p.replaces.empty() ? "after" : "replaces",
                        (p.replaces.empty() ? p.after : p.replaces).c_str(), p.timeout_s, p.max_restarts);
            std::printf("  %-17s command: %s (in %s)\n", "", command_text(p.command).c_str(),
                        p.workdir.empty() ? "." : p.workdir.string().c_str());
          }
        } else {
          std::printf(
              "\nplugin skills are declared in a goal (skills:); `autotune skills GOAL.yaml` lists and "
              "validates them (docs/plugins.md)\n");
        }
        return 0;
      };
    });

}  // namespace
}  // namespace autotune::cli
