#include "samplecheck/gate/gate.h"

#include <sstream>

#include "samplecheck/properties/suite.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

Result<GateResult> RunGate(const GateOptions& o) {
  auto suite = LoadSuite(o.suite);
  if (!suite.ok()) return suite.error();
  auto report = RunCampaign(*suite, o.campaign);
  if (!report.ok()) return report.error();
  GateResult result{std::move(*report), std::nullopt};
  CampaignReport& r = result.report;
  if (o.properties && !r.interrupted) {
    SamplerOptions sampler_options;
    sampler_options.profile = r.profile;
    auto sampler = MakeSampler(o.campaign.sampler_spec, sampler_options);
    if (!sampler.ok()) return sampler.error();
    properties::PropertyOptions popts;
    popts.seed = o.property_seed;
    popts.max_success = o.property_cases;
    auto suite_result = properties::RunPropertySuite(**sampler, popts, r.profile, o.campaign.sampler_spec);
    if (!suite_result.ok()) return suite_result.error();
    r.properties_run = true;
    r.property_seed = o.property_seed;
    for (const properties::PropertyResult& p : suite_result->results) {
      r.properties.push_back({p.name, properties::PropertyStatusName(p.status),
                              p.status == properties::PropertyStatus::kPassed ||
                                  p.status == properties::PropertyStatus::kSkipped,
                              p.cases, p.message, p.replay});
    }
  }
  if (!o.baseline.empty()) {
    auto base = LoadReport(o.baseline);
    if (!base.ok()) return base.error().WithContext("baseline");
    auto ab = CompareWithBaseline(r, *base);
    if (!ab.ok()) return ab.error().WithContext("baseline " + o.baseline);
    result.ab = std::move(*ab);
  }
  return result;
}

std::string FormatGateSummary(const GateResult& result, const std::string& baseline_path) {
  std::string summary = FormatSummary(result.report);
  // FormatSummary ends with the campaign's verdict line; the gate's verdict (with the A/B) replaces it.
  const size_t at = summary.rfind("VERDICT: ");
  if (at != std::string::npos) summary.erase(at);
  std::ostringstream os;
  os << summary;
  if (result.ab) os << FormatAbComparison(*result.ab, baseline_path);
  os << "VERDICT: " << (result.Passed() ? "PASS" : "FAIL") << "\n";
  return os.str();
}

}  // namespace samplecheck::harness
