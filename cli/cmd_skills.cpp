// autotune skills [GOAL.yaml] [--json]: the registered built-in skills and, given a
// goal, the plugin skills it declares (validated as `run` validates them).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "core/text.hpp"
#include "orchestrator/goal.hpp"
#include "skills/skill.hpp"

namespace autotune::cli {
namespace {

struct BuiltinSkill {
  std::string name;
  const skills::SkillInfo* info;
};

std::vector<BuiltinSkill> builtin_skills() {
  std::vector<BuiltinSkill> out;
  for (const auto& name : skills::skills_in_loop_order())
    out.push_back({name, &skills::skill_registry().get(name)});
  return out;
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
                {{"name", b.name}, {"role", b.name}, {"does", b.info->does}, {"plugins", b.info->plugins}});
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
          std::printf("  %-17s %s\n", b.name.c_str(), b.info->does.c_str());
          std::printf("  %-17s plugins: %s\n", "", b.info->plugins.c_str());
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
