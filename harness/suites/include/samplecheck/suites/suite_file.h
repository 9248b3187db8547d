// Where every suite comes from, whatever its kind (sampler suites: suite.h; speculative-decoding suites:
// spec_suite.h; RL replay suites: replay_suite.h): a built-in suite by name, a suite file by path, or
// <name>.json found on SAMPLECHECK_SUITE_PATH. One reader, one size cap, one search path, one message for an
// unknown suite (docs/suites.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::harness {

enum class SuiteKind { kSampler, kSpec, kReplay };
// "suite", "spec suite", "replay suite": as messages name them.
const char* SuiteKindName(SuiteKind kind);

// The most a suite file may hold (a device or a FIFO is refused before it is read).
inline constexpr uint64_t kMaxSuiteBytes = uint64_t{64} << 20;

struct SuiteText {
  std::string text;                // the JSON
  std::string source;              // "builtin:<name>" or the file's path
  std::filesystem::path base_dir;  // where the suite's relative paths (.npy rows) start; empty for a built-in
};

// The suite `name_or_path` of `kind`: a path (it holds '/' or ends in .json, or names a regular file) is read as
// it is; else a built-in suite of that kind by name; else <name>.json in the folders of SAMPLECHECK_SUITE_PATH
// (':'-separated), first found. kIo for a file that cannot be read (missing, not a regular file, over
// kMaxSuiteBytes); kInvalidArgument for an unknown name, listing the built-in suites of the kind.
Result<SuiteText> ReadSuiteText(std::string_view name_or_path, SuiteKind kind);

// The names of the built-in suites of `kind`, and their texts (for `samplecheck list`).
struct BuiltinSuiteText {
  SuiteKind kind;
  const char* name;
  const char* json;
};
std::vector<BuiltinSuiteText> BuiltinSuiteTexts(SuiteKind kind);

}  // namespace samplecheck::harness
