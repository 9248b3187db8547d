#include "samplecheck/report/failing_case_suite.h"

#include <string>

#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

nlohmann::json ReplaySuiteJson(const CampaignReport& report, const CaseResult& c) {
  nlohmann::json params = ParamsToJson(c.params, false);
  nlohmann::json out = {
      {"schema", kSuiteSchema},
      {"name", report.suite + "-replay"},
      {"description",
       "Replays case " + c.name + " of a run of suite " + report.suite + " (seed " + std::to_string(report.seed) +
           (report.draw_seed != report.seed ? ", run it with --draw-seed " + std::to_string(report.draw_seed)
                                            : std::string()) +
           ") with the same row, parameters and draws"},
      {"seed", report.seed},
      {"alpha", report.alpha},
      {"tv", c.tv},
      {"max_draws", c.draws},
      {"min_draws", c.draws},
      {"profile", c.profile},
      {"cases", nlohmann::json::array({{{"name", c.name}, {"row", RowSpecToJson(c.row)}, {"params", params}}})}};
  // A refusal case (a corner case with parameters the profile refuses) replays as one.
  if (c.checks.contains("refusal") && !c.checks["refusal"].is_null()) out["cases"][0]["refuse"] = true;
  return out;
}

}  // namespace samplecheck::harness
