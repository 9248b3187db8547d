// Generated cases: a seeded generator over the space the property generators cover (row kinds, V from 1 to
// 262144, -inf masks, ties, every filter and sentinel value alone and combined, corners such as top_p < 1 with a
// top_k at or above the number of finite logits). `standard` holds a fixed-seed block of them, `nightly` fresh ones
// every night, and `samplecheck run --generated N` adds N to any suite. A failing generated case is written out as
// a one-case suite that replays it (report/failing_case_suite.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/reference/profile.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// `count` cases named "<prefix>/<i>", deterministic in `seed`, every one's parameters valid under `profile` (a
// generated case is never skipped).
std::vector<CaseSpec> GenerateCases(uint64_t seed, size_t count, const Profile& profile,
                                    const std::string& prefix = "gen");

}  // namespace samplecheck::harness
