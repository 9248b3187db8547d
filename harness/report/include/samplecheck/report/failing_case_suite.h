// A failing case of a run as a suite of its own: `samplecheck run` writes one beside the report for every failing
// generated or corner case (<report>.<case>.replay.json) and prints the command that replays it.
#pragma once

#include <nlohmann/json.hpp>

#include "samplecheck/checks/result.h"

namespace samplecheck::harness {

// A one-case suite that replays `c` of a report of `suite` exactly: the same campaign seed, case name, row, params
// and draws (min_draws = max_draws = c.draws; the verdict of one case is at the whole alpha, so a failure of the
// campaign fails again). `draw_seed` is the report's (the replay line says --draw-seed when it differs).
nlohmann::json ReplaySuiteJson(const CampaignReport& report, const CaseResult& c);

}  // namespace samplecheck::harness
