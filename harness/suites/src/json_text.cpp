#include "samplecheck/suites/json_text.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

namespace samplecheck::harness {

using nlohmann::json;

json JsonNumber(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double ReadJsonNumber(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  throw std::runtime_error("expected a number, got " + j.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string JsonErrorText(const std::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) != 0) return m;
  if (const size_t close = m.find("] "); close != std::string::npos) m.erase(0, close + 2);
  auto replace_prefix = [&](const std::string& prefix, const std::string& with) {
    if (m.rfind(prefix, 0) != 0) return false;
    m = with + m.substr(prefix.size());
    return true;
  };
  if (m.rfind("key '", 0) == 0 && m.size() > 15 && m.compare(m.size() - 11, 11, "' not found") == 0) {
    return "\"" + m.substr(5, m.size() - 16) + "\" is missing";
  }
  if (replace_prefix("cannot use at() with ", "expected an object, got ")) return m;
  if (replace_prefix("cannot use operator[] with ", "expected an object, got ")) return m;
  if (replace_prefix("type must be ", "expected ")) {
    const size_t but = m.find(", but is ");
    if (but != std::string::npos) m.replace(but, 9, ", got ");
    return m;
  }
  return m;
}

std::string JsonText(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000;
    }
    bool valid = len > 0 && i + len <= n;
    uint32_t cp = valid ? (c & (0xFF >> (len + 1))) : 0;
    for (size_t k = 1; valid && k < len; ++k) {
      valid = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    valid = valid && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (valid) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

namespace {

struct DuplicateKey {
  std::string key;
  std::string path;
};

struct TooDeep {
  std::string path;
};

// nlohmann's message without its "[json.exception.parse_error.101] parse error at " prefix: "line 3, column 7:
// syntax error while parsing object key - unexpected '}'; expected string literal".
std::string PlainJsonError(const json::exception& e) {
  std::string message = e.what();
  if (const size_t close = message.find("] "); message.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
    message.erase(0, close + 2);
  }
  for (const char* prefix : {"parse error at ", "parse error: "}) {
    if (message.rfind(prefix, 0) == 0) message.erase(0, std::string(prefix).size());
  }
  return message;
}

}  // namespace

Result<json> ParseJsonStrict(std::string_view text, std::string_view what) {
  // Per open object: its path and the keys seen so far. Arrays push an entry too so that end events pop in order.
  struct Scope {
    bool object;
    std::string path;
    std::set<std::string> keys;
    std::string last_key;
    size_t index = 0;
  };
  std::vector<Scope> scopes;
  auto child_path = [&]() -> std::string {
    if (scopes.empty()) return "";
    const Scope& s = scopes.back();
    return s.object ? s.path + "/" + s.last_key : s.path + "/" + std::to_string(s.index);
  };
  auto callback = [&](int, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // Refused before it is built: nesting far past any samplecheck file would cost time and memory (and, in
        // the DOM's destructor, stack) without bound.
        if (scopes.size() >= kMaxJsonDepth) throw TooDeep{child_path()};
        scopes.push_back({event == json::parse_event_t::object_start, child_path(), {}, {}, 0});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!scopes.empty()) scopes.pop_back();
        if (!scopes.empty() && !scopes.back().object) ++scopes.back().index;
        break;
      case json::parse_event_t::key: {
        Scope& s = scopes.back();
        s.last_key = parsed.get<std::string>();
        if (!s.keys.insert(s.last_key).second) throw DuplicateKey{s.last_key, s.path.empty() ? "/" : s.path};
        break;
      }
      case json::parse_event_t::value:
        if (!scopes.empty() && !scopes.back().object) ++scopes.back().index;
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const DuplicateKey& d) {
    return Error{ErrorCode::kParse, std::string(what) + ": duplicate key \"" + d.key + "\" in the object at " + d.path +
                                        " (each key may appear once)"};
  } catch (const TooDeep& d) {
    return Error{ErrorCode::kParse, std::string(what) + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                        " levels (at " + d.path + "), more than any samplecheck file holds"};
  } catch (const json::parse_error& e) {
    return Error{ErrorCode::kParse, std::string(what) + ": not valid JSON at " + PlainJsonError(e)};
  } catch (const json::exception& e) {
    return Error{ErrorCode::kParse, std::string(what) + ": " + JsonErrorText(e)};
  }
}

}  // namespace samplecheck::harness
