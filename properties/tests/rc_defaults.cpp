#include "rc_defaults.h"

#include <cstdlib>

#include <rapidcheck.h>

namespace samplecheck::properties::testing {
namespace {

// Runs before main, so before RapidCheck loads its configuration; an RC_PARAMS already set wins (overwrite = 0).
const bool kDefaultsInstalled = [] { return setenv("RC_PARAMS", kDefaultRcParams, 0) == 0; }();

}  // namespace

std::string RcParams() {
  const char* value = std::getenv("RC_PARAMS");
  return value ? value : "";
}

PropertyOptions OptionsFromRcParams() {
  (void)kDefaultsInstalled;
  const auto& config = rc::detail::configuration();
  PropertyOptions options;
  options.seed = config.testParams.seed;
  options.max_success = config.testParams.maxSuccess;
  options.max_size = config.testParams.maxSize;
  const std::string params = RcParams();
  const size_t at = params.find("reproduce=");
  if (at != std::string::npos) {
    const size_t begin = at + 10;
    const size_t end = params.find_first_of(" \t", begin);
    options.reproduce = params.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return options;
}

}  // namespace samplecheck::properties::testing
