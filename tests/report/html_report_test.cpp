// The HTML report says why: the verdict's reasons at the top, a reason per case, the tokens drawn outside the kept
// set drawn and listed, the flags a pass needed, and a layout of its own for replay and speculative reports. The
// page as a browser renders it is checked by tests/report/html_browser_test.sh; these check the markup it renders.
// Deterministic (fixed seeds).
#include <gtest/gtest.h>

#include <algorithm>

#include "quiet_campaign.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/replay_campaign.h"
#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/suites/replay_suite.h"
#include "samplecheck/suites/spec_suite.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

// The smoke suite's cases of these names only, run on `sampler`.
CampaignReport SmokeCases(const std::vector<std::string>& names, const std::string& sampler,
                          const CampaignOptions& base = {}) {
  auto suite = LoadSuite("smoke");
  EXPECT_TRUE(suite.ok());
  std::erase_if(suite->cases,
                [&](const CaseSpec& c) { return std::find(names.begin(), names.end(), c.name) == names.end(); });
  EXPECT_EQ(suite->cases.size(), names.size());
  suite->generated = 0;
  CampaignOptions options = base;
  options.sampler_spec = sampler;
  return RunQuietCampaign(*suite, options);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The text of the svg of one chart kind in one case's details ("" when absent).
std::string ChartOf(const std::string& html, const std::string& case_name, const std::string& kind) {
  const size_t details = html.find("id=\"case-" + case_name + "\"");
  if (details == std::string::npos) return "";
  const size_t end = html.find("</details>", details);
  const size_t svg = html.find("<svg class=\"chart\" data-chart=\"" + kind + "\"", details);
  if (svg == std::string::npos || svg > end) return "";
  return html.substr(svg, html.find("</svg>", svg) - svg);
}

TEST(HtmlReport, SupportViolationsAreDrawnListedAndNamedInTheVerdict) {
  // min-p after top-p keeps token 2 of V4 (dyadic): every draw of it is outside the vllm kept set.
  const CampaignReport r = SmokeCases({"V4-minp-order", "topk"}, "mutant:minp-after-topp");
  ASSERT_EQ(r.Count(CaseStatus::kFail), 1u);
  const std::string html = RenderHtmlReport(r);
  EXPECT_NE(html.find("data-verdict=\"FAIL\""), std::string::npos);
  EXPECT_NE(html.find("FAIL: 1 case(s) failed (support violations: V4-minp-order)"), std::string::npos);
  const std::string head = ChartOf(html, "V4-minp-order", "head");
  ASSERT_FALSE(head.empty());
  EXPECT_NE(head.find("class=\"viol\" data-violating-token=\"2\""), std::string::npos) << head;
  EXPECT_NE(ChartOf(html, "V4-minp-order", "residuals").find("data-violating-token=\"2\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"viol\" data-violating-token=\"2\">"), std::string::npos);
  // The residual table and the support table each list it; the passing case draws none.
  EXPECT_EQ(Count(html, "<tr class=\"viol\" data-violating-token=\"2\">"), 2u);
  EXPECT_EQ(ChartOf(html, "topk", "head").find("data-violating-token"), std::string::npos);
  // The reason column of the cases table.
  EXPECT_NE(html.find("<td class=\"why\">" + r.cases[0].reason + "</td>"), std::string::npos) << r.cases[0].reason;
}

TEST(HtmlReport, TheFieldsBesideAViolatingTokenAreShownWhenPresent) {
  CampaignReport r = SmokeCases({"V4-minp-order"}, "mutant:minp-after-topp");
  ASSERT_EQ(r.cases.size(), 1u);
  nlohmann::json& token = r.cases[0].checks["support"]["tokens"][0];
  for (const char* field : {"dropped_by", "rank", "reference_prob", "why"}) token.erase(field);  // set below alone
  token["reference_prob"] = 0.125;
  token["dropped_by"] = "min-p";
  r.cases[0].checks["support"]["kept"] = 2;
  const std::string html = RenderHtmlReport(r);
  EXPECT_NE(html.find("<th>dropped_by</th><th>reference_prob</th>"), std::string::npos);  // by name
  EXPECT_NE(html.find("<td class=\"num\">min-p</td><td class=\"num\">0.125</td>"), std::string::npos);
  EXPECT_NE(html.find("<b>kept</b> 2"), std::string::npos);
}

TEST(HtmlReport, AnUnderpoweredPassShowsWhatItNeeded) {
  CampaignOptions capped;
  capped.max_draws = 2000;
  capped.evidence.allow_underpowered = true;
  const CampaignReport pass = SmokeCases({"topk", "gauss-full"}, "exact", capped);
  ASSERT_TRUE(pass.Passed());
  ASSERT_FALSE(pass.UnderpoweredCases().empty());
  const std::string html = RenderHtmlReport(pass);
  EXPECT_NE(html.find("data-verdict=\"PASS\""), std::string::npos);
  EXPECT_NE(html.find("data-flag=\"underpowered\""), std::string::npos);
  EXPECT_NE(html.find("data-flag=\"capped\">--max-draws 2000"), std::string::npos);
  EXPECT_NE(html.find("(accepted by --allow-underpowered)"), std::string::npos);
  // The same run without the flag fails, and says so at the top.
  capped.evidence.allow_underpowered = false;
  const std::string fail = RenderHtmlReport(SmokeCases({"topk", "gauss-full"}, "exact", capped));
  EXPECT_NE(fail.find("data-problem=\"underpowered\">FAIL: underpowered:"), std::string::npos);
  // A plain pass has no flag.
  EXPECT_EQ(RenderHtmlReport(SmokeCases({"topk"}, "exact")).find("data-flag="), std::string::npos);
}

TEST(HtmlReport, ASkippedFailSaysWhyAndHowToAcceptIt) {
  CampaignOptions options;
  options.profile = "tokenspeed";  // top_k <= 127
  auto suite = LoadSuite("smoke");
  ASSERT_TRUE(suite.ok());
  std::erase_if(suite->cases, [](const CaseSpec& c) { return c.name != "topk"; });
  suite->cases.push_back(suite->cases.front());
  suite->cases.back().name = "topk-500";
  suite->cases.back().params.top_k = 500;
  suite->generated = 0;
  options.seed = 1;
  options.progress = Progress::Mode::kQuiet;
  auto r = RunCampaign(*suite, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->Count(CaseStatus::kSkipped), 1u);
  std::string html = RenderHtmlReport(*r);
  EXPECT_NE(html.find("data-problem=\"skipped\">FAIL: 1 case(s) skipped, never judged (--allow-skipped accepts "
                      "them): 1 &times; " +
                      r->cases[1].reason + " (e.g. topk-500)"),
            std::string::npos)
      << html.substr(html.find("<section"), 1200);
  r->evidence.allow_skipped = true;
  html = RenderHtmlReport(*r);
  EXPECT_NE(html.find("data-verdict=\"PASS\""), std::string::npos);
  EXPECT_NE(html.find("data-flag=\"skipped\">1 skipped, allowed"), std::string::npos);
}

TEST(HtmlReport, AReplayReportHasItsOwnLayout) {
  auto suite = LoadReplaySuite("replay-smoke");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  ReplayCampaignOptions options;
  options.trainer = "fault:no-renormalization";
  options.quiet = true;
  auto r = RunReplayCampaign(*suite, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->Passed());
  const std::string html = RenderHtmlReport(*r);
  EXPECT_NE(html.find("data-layout=\"replay\""), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"logprob-error\""), std::string::npos);
  EXPECT_NE(html.find("Aggregate over the rows"), std::string::npos);
  EXPECT_NE(html.find("importance ratio bias: aggregate"), std::string::npos);
  EXPECT_EQ(html.find("One kept token"), std::string::npos);
  EXPECT_EQ(html.find("<th>kept / V</th>"), std::string::npos);  // no sampler columns
  EXPECT_EQ(html.find("Campaign p-values"), std::string::npos);
  // Its checks are exact: no alpha, TV or power in the header (a replay report's are 0).
  EXPECT_EQ(html.find("<dt>TV / power</dt>"), std::string::npos);
  EXPECT_NE(html.find("<dt>checks</dt><dd>exact: every processed logprob"), std::string::npos);
  // Every judged row is a point of the plot, each failing trainer row a red one.
  size_t failing = 0;
  for (const CaseResult& c : r->cases) failing += c.status == CaseStatus::kFail && c.name != "aggregate";
  EXPECT_EQ(Count(html, "class=\"dot-fail\" data-row="), failing);
}

TEST(HtmlReport, ASpeculativeReportShowsItsAcceptance) {
  auto suite = LoadSpecSuite("spec-smoke");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  suite->cases.resize(2);
  SpecCampaignOptions options;
  options.quiet = true;
  options.max_trials = 4096;
  auto r = RunSpecCampaign(*suite, options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string html = RenderHtmlReport(*r);
  EXPECT_NE(html.find("data-layout=\"speculative\""), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"acceptance\""), std::string::npos);
  EXPECT_NE(html.find("<th>acceptance by position: observed / beta (p)</th>"), std::string::npos);
}

}  // namespace
}  // namespace samplecheck::harness
