// samplecheck: verify that an LLM token sampler draws exactly from the distribution its semantics define.
// Each subcommand lives in tools/cmd_<name>.cpp and registers itself (command_registry.h).
#include <iostream>
#include <map>
#include <string>

#include "command_registry.h"

int main(int argc, char** argv) {
  using namespace samplecheck::tools;
  CLI::App app{"samplecheck: statistical verification and fuzzing of LLM token samplers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("samplecheck ") + SAMPLECHECK_VERSION);
  app.footer(AllExitCodesHelp());
  std::map<std::string, CommandAction> actions;
  std::map<const CLI::App*, std::string> names;
  for (const CommandSpec& spec : RegisteredCommands()) {
    CLI::App* cmd = app.add_subcommand(spec.name, spec.help);
    actions[spec.name] = spec.setup(*cmd);
    cmd->footer(ExitCodesHelp(spec.name));
    NameOptionValues(*cmd);
    names[cmd] = spec.name;
  }
  // A first word that names no command: say so, with the commands (CLI11 would only say one is required).
  if (argc >= 2 && argv[1][0] != '-' && actions.count(argv[1]) == 0) {
    std::string known;
    for (const CommandSpec& spec : RegisteredCommands()) known += (known.empty() ? "" : ", ") + spec.name;
    std::cerr << "samplecheck: unknown command '" << argv[1] << "' (commands: " << known << "; samplecheck --help)\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // CLI11 returns 0 for --help / --version; every real parse error is a usage error (exit 2).
    return rc == 0 ? kExitOk : kExitUsage;
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    try {
      return actions.at(names.at(sub))();
    } catch (const std::exception& e) {
      std::cerr << "samplecheck " << names.at(sub) << ": internal error: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  return kExitUsage;
}
