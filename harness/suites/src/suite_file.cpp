#include "samplecheck/suites/suite_file.h"

#include <cstdlib>
#include <sstream>

#include "samplecheck/core/files.h"

namespace samplecheck::harness {
namespace {

// harness/suites/data/*.json as string literals, written by the build (cmake/SamplecheckEmbedSuites.cmake).
#include "builtin_suites.inc"

const char* DocOf(SuiteKind kind) {
  switch (kind) {
    case SuiteKind::kSampler: return "docs/suites.md";
    case SuiteKind::kSpec: return "docs/speculative.md";
    case SuiteKind::kReplay: return "docs/replay.md";
  }
  return "docs/suites.md";
}

Result<SuiteText> ReadFile(const std::filesystem::path& path, SuiteKind kind) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Error{ErrorCode::kIo, std::string(SuiteKindName(kind)) + " file " + path.string() + " does not exist"};
  }
  Result<std::string> text = ReadFileCapped(path, kMaxSuiteBytes, std::string("a ") + SuiteKindName(kind) + " file");
  if (!text.ok()) return text.error();
  return SuiteText{std::move(*text), path.string(), path.parent_path()};
}

}  // namespace

const char* SuiteKindName(SuiteKind kind) {
  switch (kind) {
    case SuiteKind::kSampler: return "suite";
    case SuiteKind::kSpec: return "spec suite";
    case SuiteKind::kReplay: return "replay suite";
  }
  return "suite";
}

std::vector<BuiltinSuiteText> BuiltinSuiteTexts(SuiteKind kind) {
  std::vector<BuiltinSuiteText> out;
  for (const BuiltinSuiteText& b : kBuiltinSuiteTexts) {
    if (b.kind == kind) out.push_back(b);
  }
  return out;
}

Result<SuiteText> ReadSuiteText(std::string_view name_or_path, SuiteKind kind) {
  const std::string arg(name_or_path);
  std::error_code ec;
  const bool looks_like_path = arg.find('/') != std::string::npos || arg.ends_with(".json");
  if (looks_like_path || std::filesystem::is_regular_file(arg, ec)) return ReadFile(arg, kind);
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(kind)) {
    if (arg == b.name) return SuiteText{b.json, std::string("builtin:") + b.name, {}};
  }
  if (const char* path = std::getenv("SAMPLECHECK_SUITE_PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      const std::filesystem::path candidate = std::filesystem::path(dir) / (arg + ".json");
      if (std::filesystem::is_regular_file(candidate, ec)) return ReadFile(candidate, kind);
    }
  }
  std::string known;
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(kind)) known += std::string(known.empty() ? "" : ", ") + b.name;
  return InvalidArgument("unknown " + std::string(SuiteKindName(kind)) + " \"" + arg + "\" (built-in: " + known +
                         "; or a path to a " + SuiteKindName(kind) + " file, or <name>.json on " +
                         "SAMPLECHECK_SUITE_PATH; " + DocOf(kind) + ")");
}

}  // namespace samplecheck::harness
