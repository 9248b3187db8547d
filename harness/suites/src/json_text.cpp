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

// The DOM built by nlohmann's plain SAX parser, with the strict reader's checks on the events: a key seen twice in
// its object, and nesting past kMaxJsonDepth refused before it is built. (nlohmann's callback parser, which would
// do the same, scans the enclosing container at every object's end: quadratic in an array of objects, so that a
// 28 MB plan of 10^5-odd cases took 25 s to parse.)
class StrictSax : public nlohmann::json_sax<json> {
 public:
  explicit StrictSax(json& root) : dom_(root, true) {}

  bool null() override { return Value() && dom_.null(); }
  bool boolean(bool v) override { return Value() && dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return Value() && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return Value() && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return Value() && dom_.number_float(v, s); }
  bool string(string_t& v) override { return Value() && dom_.string(v); }
  bool binary(binary_t& v) override { return Value() && dom_.binary(v); }
  bool start_object(std::size_t n) override { return Open(true) && dom_.start_object(n); }
  bool start_array(std::size_t n) override { return Open(false) && dom_.start_array(n); }
  bool end_object() override { return Close() && dom_.end_object(); }
  bool end_array() override { return Close() && dom_.end_array(); }
  bool key(string_t& k) override {
    Scope& s = scopes_.back();
    s.last_key = k;
    if (!s.keys.insert(k).second) throw DuplicateKey{k, s.path.empty() ? "/" : s.path};
    return dom_.key(k);
  }
  // Thrown as what it is (a parse_error, or out_of_range for a number too large), as json::parse throws it.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) throw *p;
    if (const auto* o = dynamic_cast<const json::out_of_range*>(&e)) throw *o;
    throw std::runtime_error(e.what());
  }

 private:
  // Per open object: its path and the keys seen so far. Arrays push an entry too, counting their elements.
  struct Scope {
    bool object;
    std::string path;
    std::set<std::string> keys;
    std::string last_key;
    size_t index = 0;
  };

  std::string ChildPath() const {
    if (scopes_.empty()) return "";
    const Scope& s = scopes_.back();
    return s.object ? s.path + "/" + s.last_key : s.path + "/" + std::to_string(s.index);
  }
  bool Value() {
    if (!scopes_.empty() && !scopes_.back().object) ++scopes_.back().index;
    return true;
  }
  bool Open(bool object) {
    // Refused before it is built: nesting far past any samplecheck file would cost time and memory (and, in the
    // DOM's destructor, stack) without bound.
    if (scopes_.size() >= kMaxJsonDepth) throw TooDeep{ChildPath()};
    scopes_.push_back({object, ChildPath(), {}, {}, 0});
    return true;
  }
  bool Close() {
    if (!scopes_.empty()) scopes_.pop_back();
    return Value();
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<Scope> scopes_;
};

}  // namespace

Result<json> ParseJsonStrict(std::string_view text, std::string_view what) {
  json root;
  StrictSax sax(root);
  try {
    json::sax_parse(text.begin(), text.end(), &sax);
    return root;
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
  } catch (const std::runtime_error& e) {
    return Error{ErrorCode::kParse, std::string(what) + ": not valid JSON: " + e.what()};
  }
}

}  // namespace samplecheck::harness
