// The seeds of a case, deterministic in the campaign seed and the case's name (so adding a case changes no other
// case's rows or draws): every campaign kind and the suites' corner block derive them here.
#pragma once

#include <cstdint>
#include <string>

namespace samplecheck::harness {

// splitmix64 of the campaign seed and the FNV-1a hash of the case name.
uint64_t CaseSeed(uint64_t campaign_seed, const std::string& case_name);
// The seed of a row case's row (MakeRow) from its case seed.
uint64_t CaseRowSeed(uint64_t case_seed);

}  // namespace samplecheck::harness
