#pragma once
// How a subcommand joins the `autotune` executable: a cmd_<name>.cpp file
// defines one static CommandRegistration. Its `setup` declares the options on
// the CLI11 subcommand and returns the action to run when that subcommand is
// chosen. The action returns the process exit code; misuse is reported by
// throwing autotune::UserError (main prints it as one line, exit code 2).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace autotune::cli {

using CommandAction = std::function<int()>;
using CommandSetup = std::function<CommandAction(CLI::App& subcommand)>;

struct Command {
  std::string name;
  std::string description;
  CommandSetup setup;
};

std::vector<Command>& registered_commands();

// The one-line message for a command line CLI11 rejects: an unknown command
// names the nearest known one (at most two edits away) and lists them all;
// otherwise CLI11's message.
std::string parse_error_text(int argc, char** argv, const std::vector<std::string>& commands,
                             const std::string& message);

// A CLI11 check for an unsigned 64-bit option (a seed): digits only, at most
// 2^64 - 1. CLI11 alone saturates larger values silently.
std::string check_uint64(const std::string& text);

// A CLI11 check for a run's or a trial's id: digits only, at most 2^63 - 1
// (an empty word was read as 0, a larger number as 2^63 - 1).
std::string check_id(const std::string& text);

// A CLI11 check for a whole-number option and its accepted range, saying
// which word it refuses (CLI11 alone says "Could not convert" past the
// type's range, or saturates). `accepted` replaces "LOWEST to LARGEST" in
// the message where the range depends on other flags.
CLI::Validator whole_number_in(std::int64_t lowest, std::int64_t largest, const std::string& accepted = "");

// A CLI11 check for a flag whose default is taken by leaving it out: an empty
// value is refused rather than read as the default.
std::string check_not_empty(const std::string& text);

struct CommandRegistration {
  CommandRegistration(std::string name, std::string description, CommandSetup setup) {
    registered_commands().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace autotune::cli
