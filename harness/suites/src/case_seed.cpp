#include "samplecheck/suites/case_seed.h"

#include "samplecheck/core/splitmix.h"

namespace samplecheck::harness {

uint64_t CaseRowSeed(uint64_t case_seed) { return SplitMix64(case_seed ^ 0x1); }

uint64_t CaseSeed(uint64_t campaign_seed, const std::string& case_name) {
  return SplitMix64(campaign_seed ^ SplitMix64(Fnv1a64(case_name)));
}

}  // namespace samplecheck::harness
