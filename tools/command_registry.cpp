#include "command_registry.h"

#include <algorithm>

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

}  // namespace samplecheck::tools
