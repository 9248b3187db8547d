// Inside the report library: reading the fields of a stored report or journal with their JSON path in every
// message ("/cases/3/plan/tv is missing", "/seed must be a whole number in [0, ...], not -1"), never nlohmann's
// own exception text, and never a negative number read as a huge unsigned one.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

// The field `key` of the object `j`, read as T; `path` names the object for messages ("/cases/3/plan"). Throws
// std::runtime_error naming the full path when it is missing or of the wrong kind: a whole number must be one
// (nlohmann alone reads -5 as 2^64 - 5 and 1.5 as 1), within T's range.
template <class T>
inline T Field(const json& j, const std::string& path, const char* key) {
  const std::string at = path + "/" + key;
  if (!j.is_object()) throw std::runtime_error(path.empty() ? "expected a JSON object" : path + " must be an object");
  if (!j.contains(key)) throw std::runtime_error(at + " is missing");
  const json& v = j[key];
  auto wrong = [&](const char* kind) {
    return std::runtime_error(at + " must be " + kind + ", not " +
                              v.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw wrong("true or false");
    return v.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw wrong("a string");
    return v.get<std::string>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) throw wrong("a number");
    return v.get<double>();
  } else if constexpr (std::is_unsigned_v<T>) {
    const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    if (!whole || v.get<uint64_t>() > std::numeric_limits<T>::max()) {
      throw wrong(("a whole number in [0, " + std::to_string(std::numeric_limits<T>::max()) + "]").c_str());
    }
    return static_cast<T>(v.get<uint64_t>());
  } else {
    static_assert(std::is_signed_v<T>);
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<T>::min() ||
        v.get<int64_t>() > std::numeric_limits<T>::max() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      throw wrong("a whole number in range");
    }
    return static_cast<T>(v.get<int64_t>());
  }
}

// A number field of `j` that may also be "inf", "-inf" or "nan" (JsonNumber).
inline double NumberField(const json& j, const std::string& path, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + "/" + key + " is missing");
  try {
    return ReadJsonNumber(j[key]);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + "/" + key + ": " + e.what());
  }
}

// A sub-object (or array) of `j` that must be there.
inline const json& Child(const json& j, const std::string& path, const char* key) {
  if (!j.is_object()) throw std::runtime_error(path + " must be an object");
  if (!j.contains(key)) throw std::runtime_error(path + "/" + key + " is missing");
  return j[key];
}

}  // namespace samplecheck::harness
