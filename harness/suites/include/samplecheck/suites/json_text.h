// JSON as samplecheck reads and writes it (suites, reports, journals, identify results).
//   - Numbers JSON cannot hold (inf, NaN) are the strings "inf", "-inf", "nan", so a report always round-trips.
//   - Writing never throws: a string that is not valid UTF-8 (a plugin's error text, a process's stderr, a file
//     name) has each invalid byte replaced by U+FFFD.
//   - Reading is strict: a duplicate key in any object is an error, never "the last one wins".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"

namespace samplecheck::harness {

nlohmann::json JsonNumber(double value);
// Accepts a number or one of "inf", "-inf", "nan"; throws std::runtime_error naming what it got otherwise (for
// readers that collect a field path in one try block).
double ReadJsonNumber(const nlohmann::json& j);

// The message of an exception thrown while reading a JSON document, for people: nlohmann's
// "[json.exception.type_error.304] cannot use at() with number" becomes "expected an object, got a number", "key 'x'
// not found" becomes "\"x\" is missing"; other exceptions' text as it is.
std::string JsonErrorText(const std::exception& e);

// The text of `j` (indented by `indent` spaces per level; -1: one line). Invalid UTF-8 becomes U+FFFD.
std::string JsonText(const nlohmann::json& j, int indent = 1);

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD (for HTML and text output).
std::string ValidUtf8(std::string_view text);

// The deepest nesting of objects and arrays ParseJsonStrict accepts (samplecheck's own files nest fewer than 10).
inline constexpr size_t kMaxJsonDepth = 64;

// Parses `text`; kParse naming `what`, the position and the reason for malformed JSON ("line 3, column 7: ..."),
// the key and its object path for a duplicate key, and the path where nesting passes kMaxJsonDepth. Time and
// memory are linear in the text. Suites, spec suites, reports, journals and merge's shards are read through it.
Result<nlohmann::json> ParseJsonStrict(std::string_view text, std::string_view what);

}  // namespace samplecheck::harness
