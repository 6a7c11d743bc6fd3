#include <cstdio>
#include <iostream>
#include <map>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace autotune::cli {
std::vector<Command>& registered_commands() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace autotune::cli

int main(int argc, char** argv) {
  using namespace autotune;
  CLI::App app{"autotune: an agentic kernel-autotuning orchestrator", "autotune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "autotune 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Print diagnostics on stderr");

  std::map<CLI::App*, cli::CommandAction> actions;
  auto& commands = cli::registered_commands();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    actions[sub] = command.setup(*sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (verbose) log::set_level(log::Level::info);

  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
    return 2;
  } catch (const UserError& e) {
    std::fprintf(stderr, "autotune: error: %s\n", e.what());
    return 2;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "autotune: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autotune: internal error: %s\n", e.what());
    return 3;
  }
}
