// Subcommands of the `samplecheck` program register themselves from their own file (tools/cmd_<name>.cpp):
//
//   namespace {
//   const bool registered = samplecheck::tools::RegisterCommand(
//       {"plan", "draws needed to detect a TV distance", [](CLI::App& cmd) {
//          auto opts = std::make_shared<Options>();
//          cmd.add_option("--tv", opts->tv, "...");
//          return [opts]() -> int { ...; return 0; };   // runs after parsing; returns the exit code
//        }});
//   }
//
// Exit codes of every command: 0 success / pass, 1 a check failed, 2 usage or input error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace samplecheck::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;

using CommandAction = std::function<int()>;

struct CommandSpec {
  std::string name;
  std::string help;
  // Adds the command's options to `cmd` and returns the action to run once the command line is parsed.
  std::function<CommandAction(CLI::App& cmd)> setup;
};

bool RegisterCommand(CommandSpec spec);
const std::vector<CommandSpec>& RegisteredCommands();

// The exit codes of one command, as its --help ends with them (docs/cli.md, "Exit codes", is the long form); the
// program's own --help lists every command's.
std::string ExitCodesHelp(const std::string& command);
std::string AllExitCodesHelp();

// The option groups of a command's --help, everyday options first (CLI11 prints groups in the order of their first
// option): each option named is put in `group`.
// Names the values of the options CLI11 would print as TEXT by what they are: FILE, SUITE, SPEC, PROFILE, VALUE.
void NameOptionValues(CLI::App& cmd);

void GroupOptions(CLI::App& cmd, const std::string& group, const std::vector<std::string>& options);

}  // namespace samplecheck::tools
