// The (profile, property) pairs a parameterized property suite instantiates, and their test names.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

#include "samplecheck/reference/profile.h"

namespace samplecheck::properties::testing_pairs {

using Param = std::tuple<std::string, std::string>;  // profile, property

// Every profile with every property of `infos` (anything with a `.name`).
template <class Infos>
std::vector<Param> EveryProfileWith(const Infos& infos) {
  std::vector<Param> pairs;
  for (const Profile* profile : AllProfiles()) {
    for (const auto& info : infos) pairs.emplace_back(std::string(profile->name), info.name);
  }
  return pairs;
}

// The named profiles with every property of `infos`.
template <class Infos>
std::vector<Param> ProfilesWith(std::initializer_list<const char*> profiles, const Infos& infos) {
  std::vector<Param> pairs;
  for (const char* profile : profiles) {
    for (const auto& info : infos) pairs.emplace_back(profile, info.name);
  }
  return pairs;
}

// "<profile>__<property>" with every character outside [A-Za-z0-9] made '_'.
inline std::string PairName(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::get<0>(info.param) + "__" + std::get<1>(info.param);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

}  // namespace samplecheck::properties::testing_pairs
