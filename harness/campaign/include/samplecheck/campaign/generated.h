// Generated cases: a seeded generator over the space the property generators cover (row kinds, V from 1 to
// 262144, -inf masks, ties, every filter and sentinel value alone and combined, corners such as top_p < 1 with a
// top_k at or above the number of finite logits). `standard` holds a fixed-seed block of them, `nightly` fresh ones
// every night, and `samplecheck run --generated N` adds N to any suite. A failing generated case is written out as
// a one-case suite that replays it (ReplaySuiteJson).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/result.h"
#include "samplecheck/campaign/suite.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness {

// `count` cases named "<prefix>/<i>", deterministic in `seed`, every one's parameters valid under `profile` (a
// generated case is never skipped).
std::vector<CaseSpec> GenerateCases(uint64_t seed, size_t count, const Profile& profile,
                                    const std::string& prefix = "gen");

// A one-case suite that replays `c` of a report of `suite` exactly: the same campaign seed, case name, row, params
// and draws (min_draws = max_draws = c.draws; the verdict of one case is at the whole alpha, so a failure of the
// campaign fails again). `draw_seed` is the report's (the replay line says --draw-seed when it differs).
nlohmann::json ReplaySuiteJson(const CampaignReport& report, const CaseResult& c);

}  // namespace samplecheck::harness
