#include "command_registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace samplecheck::tools {
namespace {
std::vector<CommandSpec>& Registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}
}  // namespace

bool RegisterCommand(CommandSpec spec) {
  auto& registry = Registry();
  registry.push_back(std::move(spec));
  std::sort(registry.begin(), registry.end(), [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  return true;
}

const std::vector<CommandSpec>& RegisteredCommands() { return Registry(); }

namespace {

// What 0 and 1 mean, by command; 2 is a usage or input error for every command, 130 / 143 a stop signal for those
// that run campaigns.
struct ExitCodes {
  std::string pass;
  std::string fail;  // empty: the command never exits 1
  std::string written_on_usage = "nothing written; a previous report at the path is untouched";
  bool signals = false;  // 130 / 143
  std::string on_signal;
};

const std::map<std::string, ExitCodes>& ExitCodeTable() {
  static const std::map<std::string, ExitCodes> table{
      {"run",
       {"pass: every judged case passed and the evidence is there (a shard: its evidence was written)",
        "a check failed: a case failed or errored, or the evidence is short (skipped, underpowered, too few cases or "
        "draws); the summary names every reason under \"not a pass:\"",
        "nothing written; a previous report at the path is untouched", true,
        "the partial report (interrupted, not a pass) and the journal; --resume finishes the run"}},
      {"verify",
       {"pass: the campaign passed and every property passed (at least one ran)",
        "a case or a property failed, none ran, or the evidence is short", "nothing written", true,
        "the partial report (interrupted, not a pass); no property runs"}},
      {"replay",
       {"pass: every replay case passed", "a replay case failed or errored, or the evidence is short",
        "nothing written; a previous report at the path is untouched", true,
        "the partial report (interrupted, not a pass); run the same command again to replay afresh"}},
      {"gate",
       {"the report passes the gate",
        "it does not: a case failed, the evidence is short, or a statistic "
        "recomputed from its counts fails",
        "a malformed or self-contradicting report (the case and field named)", false, ""}},
      {"merge",
       {"the merged campaign passes", "it does not (as run's exit 1)",
        "a shard missing, given twice, of another campaign, interrupted or tampered with; nothing written", false, ""}},
      {"identify",
       {"the sampler is consistent with at least one profile",
        "consistent with no profile (or it failed on every "
        "probe)",
        "nothing written", true, "what the finished probes exclude, marked INTERRUPTED (not a verdict)"}},
      {"mutants",
       {"every mutant was caught and the controls passed", "a mutant survived or a control failed", "nothing written",
        false, ""}},
      {"properties",
       {"every property passed (at least one ran)", "a property failed, or none ran", "nothing written", false, ""}},
      {"explain", {"the laws were printed", "", "nothing printed but the message", false, ""}},
      {"plan", {"the plan was printed", "", "nothing printed but the message", false, ""}},
      {"list", {"the list was printed", "", "nothing printed but the message", false, ""}},
  };
  return table;
}

std::string Lines(const ExitCodes& e) {
  std::string text = "  0    " + e.pass + "\n";
  if (!e.fail.empty()) text += "  1    " + e.fail + "\n";
  text += "  2    usage or input error (a bad value, file or spec, named with what is allowed): " + e.written_on_usage +
          "\n";
  if (e.signals) {
    text += "  130  stopped by SIGINT (Ctrl-C): " + e.on_signal + "\n";
    text += "  143  stopped by SIGTERM: as for 130\n";
  }
  return text;
}

}  // namespace

std::string ExitCodesHelp(const std::string& command) {
  const auto& table = ExitCodeTable();
  const auto found = table.find(command);
  if (found == table.end()) throw std::logic_error("no exit codes written for command " + command);
  return "Exit codes (docs/cli.md, \"Exit codes\"):\n" + Lines(found->second);
}

std::string AllExitCodesHelp() {
  std::string text =
      "Exit codes: 0 pass (or done), 1 a check failed (run, verify, replay, gate, merge, identify, "
      "mutants, properties), 2 usage or input error (nothing written), 130 / 143 stopped by SIGINT / "
      "SIGTERM (run, verify, replay, identify); `samplecheck <command> --help` says what each means "
      "for that command (docs/cli.md, \"Exit codes\").";
  return text;
}

void NameOptionValues(CLI::App& cmd) {
  static const std::map<std::string, std::string> by_name{
      {"--suite", "SUITE"},    {"--sampler", "SPEC"},    {"--verifier", "SPEC"},    {"--engine", "SPEC"},
      {"--trainer", "SPEC"},   {"--profile", "PROFILE"}, {"--report", "FILE"},      {"--html", "FILE"},
      {"--plan-from", "FILE"}, {"--baseline", "FILE"},   {"--json", "FILE"},        {"--shard", "I/N"},
      {"--devices", "LIST"},   {"--logits", "LIST"},     {"--logits-file", "FILE"}, {"report", "FILE"},
      {"shards", "FILE"}};
  for (CLI::Option* option : cmd.get_options()) {
    if (option->get_type_name().rfind("TEXT", 0) != 0) continue;
    std::string name = option->get_name(false, true);
    const auto comma = name.find(',');
    if (comma != std::string::npos) name = name.substr(0, comma);
    const auto found = by_name.find(name);
    option->type_name(found != by_name.end() ? found->second : "VALUE");
  }
}

void GroupOptions(CLI::App& cmd, const std::string& group, const std::vector<std::string>& options) {
  for (const std::string& name : options) {
    CLI::Option* option = cmd.get_option_no_throw(name);
    if (option == nullptr) throw std::logic_error("--help group " + group + ": command has no option " + name);
    option->group(group);
  }
}

}  // namespace samplecheck::tools
