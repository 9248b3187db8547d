// Replay campaigns (replay_campaign.h): the built-in replay suites parse; replay-smoke passes with the exact engine and
// the exact trainer, and fails for each planted replay fault (samplers/replay_source.h, ReplayFaults()) by the check
// built for it; the report carries the replay fields and reads back to the same verdict; bad suites and sources are
// errors naming the value. Deterministic: the rows, labels and rollouts are functions of the seeds.
#include "samplecheck/campaign/replay_campaign.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "samplecheck/checks/checks.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {
namespace {

Result<CampaignReport> RunSmoke(const std::string& engine, const std::string& trainer) {
  auto suite = LoadReplaySuite("replay-smoke");
  EXPECT_TRUE(suite.ok()) << suite.error().message;
  ReplayCampaignOptions o;
  o.engine = engine;
  o.trainer = trainer;
  o.quiet = true;
  return RunReplayCampaign(*suite, o);
}

// The failing hard outcomes of a report, by check.
std::map<std::string, int> FailuresByCheck(const CampaignReport& r) {
  std::map<std::string, int> out;
  for (const CaseResult& c : r.cases) {
    for (const CheckOutcome& o : c.outcomes) out[o.check] += o.Fails();
  }
  return out;
}

TEST(ReplayCampaign, BuiltinSuitesParse) {
  const auto suites = BuiltinReplaySuites();
  ASSERT_EQ(suites.size(), 2u);
  for (const BuiltinSuiteInfo& s : suites) {
    EXPECT_EQ(s.description.rfind("BROKEN", 0), std::string::npos) << s.name << ": " << s.description;
    EXPECT_GT(s.cases, 10u);
  }
  EXPECT_EQ(LoadReplaySuite("no-such-suite").error().code, ErrorCode::kInvalidArgument);
}

TEST(ReplayCampaign, ExactEngineAndTrainerPassSmokeWithEveryReplayCheck) {
  auto report = RunSmoke("exact", "exact");
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->Passed()) << report->VerdictProblems().front();
  std::map<std::string, int> outcomes;
  uint64_t guard_events = 0, input = 0, ties = 0;
  for (const CaseResult& c : report->cases) {
    for (const CheckOutcome& o : c.outcomes) ++outcomes[o.check];
    if (c.name == kReplayAggregateCase) {
      const nlohmann::json& a = c.checks.at("replay_aggregate");
      guard_events = a.at("guard_events").get<uint64_t>();
      input = a.at("disagreements").at("input").get<uint64_t>();
      ties = a.at("disagreements").at("tie_order").get<uint64_t>();
      EXPECT_NEAR(ReadJsonNumber(a.at("same_logits").at("mean_ratio")), 1.0, 1e-6);
    }
  }
  for (const char* check : {"replay-engine", "replay-trainer", "replay-label", "replay-agreement", "replay-ratio-bias"}) {
    EXPECT_GT(outcomes[check], 0) << check;
  }
  // The suite reaches what it is for: labels pushed out by the trainer's logits (guarded), kept sets that differ by
  // the trainer's input and by the order of a tie group the profile cuts by position.
  EXPECT_GT(guard_events, 0u);
  EXPECT_GT(input, 0u);
  EXPECT_GT(ties, 0u);
  // Every case's fields read back to the same outcomes (what the gate re-judges a stored report with).
  for (const CaseResult& c : report->cases) {
    CaseResult back;
    ASSERT_TRUE(ReadCaseChecks(c.checks, back).ok()) << c.name;
    EXPECT_EQ(back.outcomes.size(), c.outcomes.size()) << c.name;
  }
}

// Each planted fault fails replay-smoke, through the check built for its class (and never passes).
TEST(ReplayCampaign, EveryPlantedFaultFailsSmokeByItsCheck) {
  const std::map<std::string, std::string> expected = {
      {"topp-unrenormalized", "replay-trainer"},     // kept sets beyond the margin at top-k + top-p rows
      {"ties-cut-at-k", "replay-trainer"},           // the tie group at k trimmed
      {"no-label-guard", "replay-label"},            // a silent -inf label
      {"temperature-after-masks", "replay-trainer"}, // kept sets of the T = 1 distribution
      {"no-renormalization", "replay-trainer"},      // logprobs off by the kept mass
  };
  ASSERT_EQ(ReplayFaults().size(), expected.size());
  for (const ReplayFault& f : ReplayFaults()) {
    auto report = RunSmoke("exact", "fault:" + f.name);
    ASSERT_TRUE(report.ok()) << f.name << ": " << report.error().message;
    EXPECT_FALSE(report->Passed()) << f.name;
    const auto failures = FailuresByCheck(*report);
    ASSERT_TRUE(expected.count(f.name)) << f.name;
    EXPECT_GT(failures.count(expected.at(f.name)) ? failures.at(expected.at(f.name)) : 0, 0)
        << f.name << " is not caught by " << expected.at(f.name);
  }
  // The same fault on the engine side is caught by the engine's check.
  auto engine = RunSmoke("fault:ties-cut-at-k", "exact");
  ASSERT_TRUE(engine.ok());
  EXPECT_GT(FailuresByCheck(*engine)["replay-engine"], 0);
}

TEST(ReplayCampaign, BadSourcesAndSuitesAreErrorsNamingTheValue) {
  auto suite = LoadReplaySuite("replay-smoke");
  ASSERT_TRUE(suite.ok());
  ReplayCampaignOptions o;
  o.quiet = true;
  o.trainer = "fault:no-such-fault";
  auto r = RunReplayCampaign(*suite, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("no-such-fault"), std::string::npos) << r.error().message;
  o.trainer = "bogus";
  EXPECT_EQ(RunReplayCampaign(*suite, o).error().code, ErrorCode::kInvalidArgument);
  o.trainer = "sampler:mutant:no-renorm-cdf";  // a sampler with a processed distribution is accepted
  EXPECT_TRUE(RunReplayCampaign(*suite, o).ok());

  auto parse = [](const std::string& text) { return ParseReplaySuite(nlohmann::json::parse(text), "unit"); };
  const std::string head = R"({"schema": "samplecheck-replay-suite/1", "name": "u", "cases": [)";
  EXPECT_EQ(parse(R"({"schema": "samplecheck-suite/1", "name": "u", "cases": []})").error().code, ErrorCode::kParse);
  auto bad_dtype = parse(head + R"({"name": "a", "row": {"kind": "gaussian", "vocab": 10}, "dtype": "fp8"}]})");
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_NE(bad_dtype.error().message.find("fp8"), std::string::npos) << bad_dtype.error().message;
  EXPECT_FALSE(parse(head + R"({"name": "aggregate", "row": {"kind": "gaussian", "vocab": 10}}]})").ok());
  EXPECT_FALSE(parse(head + R"({"name": "p", "row": {"kind": "gaussian", "vocab": 10, "poison": "nan"}}]})").ok());
  EXPECT_FALSE(parse(head + R"({"name": "r", "row": {"kind": "gaussian", "vocab": 10}, "rows": 0}]})").ok());
  auto mixed = parse(head + R"({"name": "m", "batch": [{"row": {"kind": "gaussian", "vocab": 10}},
                                {"row": {"kind": "gaussian", "vocab": 12}}]}]})");
  ASSERT_TRUE(mixed.ok());
  auto run = RunReplayCampaign(*mixed, ReplayCampaignOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("share one vocabulary"), std::string::npos) << run.error().message;
}

// A typo is an error, never the field's default (issue 44): "trainer_logit" made a trainer without the label guard
// pass (the case then replayed the engine's own row), "max_ratio_bais" kept the default bound; a duplicate case name
// made one case's result stand for two.
TEST(ReplayCampaign, SuiteRefusesUnknownFieldsAndDuplicateNames) {
  auto parse = [](const std::string& text) { return ParseReplaySuite(nlohmann::json::parse(text), "unit"); };
  const std::string head = R"({"schema": "samplecheck-replay-suite/1", "name": "u", )";
  const std::string row = R"("row": {"kind": "gaussian", "vocab": 10})";
  auto message = [&](const std::string& text) {
    auto r = parse(text);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(message(head + R"("cases": [{"name": "a", )" + row + "}]}"), "accepted");
  EXPECT_NE(message(head + R"("cases": [{"name": "a", )" + row + R"(, "trainer_logit": "bf16"}]})")
                .find("case a: unknown field \"trainer_logit\"; allowed: name, row, params, rows, copies, dtype, "
                      "trainer_logits, label"),
            std::string::npos);
  EXPECT_NE(message(head + R"("max_ratio_bais": 0.5, "cases": [{"name": "a", )" + row + "}]}")
                .find("unit: unknown field \"max_ratio_bais\"; allowed: schema, name, "),
            std::string::npos);
  EXPECT_NE(message(head + R"("cases": [{"name": "a", "batch": [{)" + row + R"(, "label": "boundary"}]}]})")
                .find("case a entry 0: unknown field \"label\"; allowed: row, params, rows, copies"),
            std::string::npos);
  EXPECT_NE(message(head + R"("cases": [{"name": "a", "batch": [{)" + row + R"(}], )" + row + "}]}")
                .find("case a: unknown field \"row\""),
            std::string::npos);
  EXPECT_NE(message(head + R"("generated": {"count": 2, "sed": 3}, "cases": []})")
                .find("generated: unknown field \"sed\"; allowed: count, seed"),
            std::string::npos);
  EXPECT_NE(message(head + R"("cases": [{"name": "a", )" + row + R"(, "rows": 2, "copies": 2}]})")
                .find("\"rows\" and \"copies\" are the same field"),
            std::string::npos);
  EXPECT_NE(message(head + R"("cases": [{"name": "a", )" + row + R"(}, {"name": "a", )" + row + "}]}")
                .find("duplicate case name \"a\""),
            std::string::npos);
}

// A row whose parameters the judged profile rejects is skipped (reported), and fails the verdict unless allowed.
TEST(ReplayCampaign, InvalidParametersAreSkippedNotJudged) {
  auto suite = ParseReplaySuite(nlohmann::json::parse(R"({"schema": "samplecheck-replay-suite/1", "name": "u",
      "cases": [{"name": "bad-top-p", "row": {"kind": "gaussian", "vocab": 50}, "params": {"top_p": 0.0}},
                {"name": "ok", "row": {"kind": "gaussian", "vocab": 50}, "params": {"top_k": 5}}]})"),
                                "unit");
  ASSERT_TRUE(suite.ok());
  ReplayCampaignOptions o;
  o.quiet = true;
  auto r = RunReplayCampaign(*suite, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Count(CaseStatus::kSkipped), 1u);
  EXPECT_FALSE(r->Passed());
  o.evidence.allow_skipped = true;
  EXPECT_TRUE(RunReplayCampaign(*suite, o)->Passed());
}

}  // namespace
}  // namespace samplecheck::harness
