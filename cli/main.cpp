#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

namespace autotune::cli {
std::vector<Command>& registered_commands() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

// The CLI11 check of a whole number of type T written in digits only (no sign):
// "" when it is one, else `not_one` for text that is not, or the range for a
// larger number (CLI11 alone saturates it silently).
template <class T>
std::string whole_number_check(const std::string& text, const std::string& not_one,
                               const std::string& accepted) {
  T value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text[0] == '-' || error == std::errc::invalid_argument ||
      end != text.data() + text.size())
    return "'" + text + "' " + not_one;
  if (error == std::errc::result_out_of_range)
    return text + " is out of range; " + accepted + std::to_string(std::numeric_limits<T>::max());
  return "";
}

}  // namespace

std::string check_uint64(const std::string& text) {
  return whole_number_check<std::uint64_t>(text, "is not a non-negative integer", "accepted: 0 to ");
}

std::string check_id(const std::string& text) {
  return whole_number_check<std::int64_t>(text, "is not an id (a whole number)", "ids go up to ");
}

CLI::Validator whole_number_in(std::int64_t lowest, std::int64_t largest, const std::string& accepted_text) {
  const std::string accepted =
      "; accepted: " +
      (accepted_text.empty() ? std::to_string(lowest) + " to " + std::to_string(largest) : accepted_text);
  return CLI::Validator(
      [lowest, largest, accepted](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error == std::errc::invalid_argument || end != text.data() + text.size())
          return "'" + text + "' is not a whole number" + accepted;
        if (error == std::errc::result_out_of_range || value < lowest || value > largest)
          return text + " is out of range" + accepted;
        return "";
      },
      std::to_string(lowest) + " to " + std::to_string(largest));
}

std::string check_not_empty(const std::string& text) {
  return text.empty() ? "an empty value; leave the flag out for its default" : "";
}

std::string parse_error_text(int argc, char** argv, const std::vector<std::string>& commands,
                             const std::string& message) {
  // The first word that is not an option names the command.
  std::string word;
  for (int i = 1; i < argc && word.empty(); ++i)
    if (argv[i][0] != '-') word = argv[i];
  if (word.empty() || std::find(commands.begin(), commands.end(), word) != commands.end()) {
    // CLI11's "Could not convert: --lease = abc" for a real-valued option
    // (whole-number ones have their own check, which runs first).
    const std::string prefix = "Could not convert: ";
    if (const auto equals = message.find(" = "); message.rfind(prefix, 0) == 0 && equals != std::string::npos)
      return message.substr(prefix.size(), equals - prefix.size()) + ": '" + message.substr(equals + 3) +
             "' is not a number (see --help)";
    return message + " (see --help)";
  }
  std::string nearest;
  std::size_t best = 3;  // farther than two edits is no suggestion
  for (const auto& name : commands)
    if (const auto d = edit_distance(word, name); d < best) best = d, nearest = name;
  return "unknown command '" + word + "'" + (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") +
         " (commands: " + join(commands, ", ") + ")";
}
}  // namespace autotune::cli

int main(int argc, char** argv) {
  using namespace autotune;
  log::escape_control_characters_in_standard_streams();
  interrupt::install();
  CLI::App app{"autotune: an agentic kernel-autotuning orchestrator", "autotune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "autotune 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Print diagnostics on stderr");
  // Subcommands inherit this: `autotune run goal.yaml -v` reaches the
  // global flag as `autotune -v run goal.yaml` does.
  app.fallthrough();

  std::map<CLI::App*, cli::CommandAction> actions;
  auto& commands = cli::registered_commands();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    actions[sub] = command.setup(*sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other misuse, and exit status 2.
    std::vector<std::string> names;  // hidden commands (no description) are not offered
    for (const auto& command : commands)
      if (!command.description.empty()) names.push_back(command.name);
    std::fprintf(stderr, "autotune: error: %s\n", cli::parse_error_text(argc, argv, names, e.what()).c_str());
    return 2;
  }
  // Parsed: the arguments' own copies of a database password can go.
  cli::hide_database_passwords(argc, argv);
  if (verbose) log::set_level(log::Level::info);

  const int code = [&] {
    try {
      for (auto& [sub, action] : actions) {
        if (sub->parsed()) return action();
      }
      return 2;
    } catch (const UserError& e) {
      std::fprintf(stderr, "autotune: error: %s\n", log::terminal_safe(e.what()).c_str());
      return 2;
    } catch (const InternalError& e) {
      std::fprintf(stderr, "autotune: %s\n", log::terminal_safe(e.what()).c_str());
      return 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "autotune: internal error: %s\n", log::terminal_safe(e.what()).c_str());
      return 3;
    }
  }();
  // Nothing autotune started outlives it: a plugin's helper that left its
  // process group (setsid) included.
  interrupt::kill_descendants();
  return code;
}
