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

}  // namespace samplecheck::tools
