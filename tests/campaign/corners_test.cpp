// Corner coverage (corners.h): the pairwise design covers every pair of levels and is deterministic in its seed; the
// corner design covers its requirements (every pair, and the field's interactions at temperature 1); the corner
// cases resolve k = #finite and the boundary top_p on the rows the campaign builds; suites parse the "corners",
// "decode" and "refuse" fields and refuse bad ones naming them; a campaign of corners and a decode loop passes on
// exact, and a corner case the judged profile refuses is judged by the sampler's refusal.
#include "samplecheck/suites/corners.h"
#include "samplecheck/suites/case_seed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {
namespace {

bool Covers(const std::vector<std::vector<uint32_t>>& design, const CornerTuple& t) {
  for (const auto& row : design) {
    bool all = true;
    for (const auto& [f, level] : t) all = all && row[f] == level;
    if (all) return true;
  }
  return false;
}

TEST(Corners, PairwiseDesignCoversEveryPairAndIsDeterministic) {
  const std::vector<size_t> levels{4, 6, 3, 3, 3, 4};
  const auto design = PairwiseDesign(levels, 7);
  for (size_t f = 0; f < levels.size(); ++f) {
    for (size_t g = f + 1; g < levels.size(); ++g) {
      for (uint32_t a = 0; a < levels[f]; ++a) {
        for (uint32_t b = 0; b < levels[g]; ++b) EXPECT_TRUE(Covers(design, {{f, a}, {g, b}})) << f << g << a << b;
      }
    }
  }
  EXPECT_GE(design.size(), 24u);  // 6 x 4: the two largest factors' pairs
  EXPECT_LE(design.size(), 40u);
  EXPECT_EQ(design, PairwiseDesign(levels, 7));
  EXPECT_NE(design, PairwiseDesign(levels, 8));
}

TEST(Corners, CornerDesignCoversTheFieldsInteractionsAtALiveTemperature) {
  std::vector<size_t> levels;
  for (const CornerFactor& f : CornerFactors()) levels.push_back(f.levels.size());
  const std::vector<CornerTuple> requirements = CornerRequirements();
  for (uint64_t seed : {31u, 1234u}) {
    const auto design = CoveringDesign(levels, requirements, seed);
    for (const CornerTuple& t : requirements) EXPECT_TRUE(Covers(design, t)) << "seed " << seed;
  }
}

TEST(Corners, CasesResolveTheirLevelsOnTheirOwnRows) {
  auto cases = CornerCases(31, 5, 4096, 0.05);
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  std::set<std::string> names;
  bool k_finite = false, boundary = false, probes = false;
  for (const CaseSpec& cs : *cases) {
    EXPECT_TRUE(names.insert(cs.name).second) << cs.name;
    EXPECT_TRUE(cs.refuse_invalid);
    EXPECT_EQ(cs.max_draws, 4096u);
    probes |= cs.name == "corner/refuse-top_p";
    if (cs.name.rfind("corner/refuse", 0) == 0) continue;
    auto row = MakeRow(cs.row, CaseRowSeed(CaseSeed(5, cs.name)));
    ASSERT_TRUE(row.ok());
    const auto finite = std::count_if(row->begin(), row->end(), [](float x) { return std::isfinite(x); });
    k_finite |= cs.row.mask_fraction > 0 && finite < cs.row.vocab && cs.params.top_k == finite;
    boundary |= cs.params.top_p > 1e-7 && cs.params.top_p < 1.0;
  }
  EXPECT_TRUE(k_finite && boundary && probes);
}

Result<Suite> Parse(const std::string& fields) {
  return ParseSuite(nlohmann::json::parse(R"({"schema": "samplecheck-suite/1", "name": "t", )" + fields + "}"), ".",
                    "test");
}

TEST(Corners, SuiteFieldsParseAndBadOnesAreErrorsNamingThem) {
  auto ok = Parse(R"("corners": {"seed": "fresh", "max_draws": 100}, "cases": [])");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->corners);
  EXPECT_FALSE(ok->corners_seed.has_value());
  const char* bad[] = {
      R"("corners": {"seed": -1}, "cases": [])",
      R"("corners": {"sede": 1}, "cases": [])",
      R"("cases": [{"name": "d", "decode": true, "row": {"kind": "gaussian"}}])",
      R"("cases": [{"name": "d", "decode": 1, "batch": [{"row": {"kind": "gaussian"}, "copies": 2}]}])",
      R"("cases": [{"name": "d", "decode": true, "batch": [{"row": {"kind": "gaussian"}}]}])",
      R"("cases": [{"name": "r", "row": {"kind": "gaussian"}, "params": {"top_p": 1.5}}])",
  };
  for (const char* fields : bad) {
    auto s = Parse(fields);
    ASSERT_FALSE(s.ok()) << fields;
    EXPECT_EQ(s.error().code, ErrorCode::kParse) << fields;
  }
  auto refuse = Parse(R"("cases": [{"name": "r", "refuse": true, "row": {"kind": "gaussian"}, "params": {"top_p": 1.5}}])");
  ASSERT_TRUE(refuse.ok()) << refuse.error().message;
  EXPECT_TRUE(refuse->cases[0].refuse_invalid);
  auto decode = Parse(R"("cases": [{"name": "d", "decode": true, "batch": [{"row": {"kind": "gaussian"}, "copies": 2}]}])");
  ASSERT_TRUE(decode.ok()) << decode.error().message;
  EXPECT_TRUE(decode->cases[0].decode);
}

TEST(Corners, CampaignOfCornersAndADecodeLoopPassesOnExact) {
  auto suite = Parse(R"("seed": 2, "alpha": 1e-4, "tv": 0.05, "max_draws": 8192, "min_draws": 2000,
    "corners": {"seed": 31, "max_draws": 2048},
    "cases": [{"name": "decode", "decode": true, "max_draws": 2048, "batch": [
      {"row": {"kind": "gaussian", "vocab": 500, "sigma": 2}, "params": {"top_k": 40}, "copies": 2},
      {"row": {"kind": "zipf", "vocab": 500}, "params": {"top_p": 0.9}, "copies": 2}]}])");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  CampaignOptions o;
  o.sampler_spec = "exact";
  o.progress = Progress::Mode::kQuiet;
  o.jobs = 1;
  auto report = RunCampaign(*suite, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->Passed()) << report->VerdictProblems().front();
  size_t refusals = 0, decode_steps = 0, seed_tests = 0;
  for (const CaseResult& c : report->cases) {
    refusals += !c.OutcomesOf("refusal").empty();
    decode_steps += c.name.rfind("decode/", 0) == 0 && !c.OutcomesOf("step-repeats").empty();
    seed_tests += !c.OutcomesOf("seed-dependence").empty();
  }
  EXPECT_GE(refusals, 4u);  // the probes, and the temperature 4 cases vllm refuses
  EXPECT_EQ(decode_steps, 4u);
  EXPECT_GT(seed_tests, 0u);
  // The same campaign on a sampler that ignores its seed fails the seed test.
  o.sampler_spec = "mutant:seed-ignored";
  auto bad = RunCampaign(*suite, o);
  ASSERT_TRUE(bad.ok());
  bool by_seed = false;
  for (const CaseResult& c : bad->cases) {
    for (const CheckOutcome* x : c.OutcomesOf("seed-dependence")) by_seed |= x->p_value < 1e-10;
  }
  EXPECT_TRUE(by_seed);
  EXPECT_FALSE(bad->Passed());
}

TEST(Corners, AGraphThatBakesItsUniformFailsTheDecodeLoopByItsRepeats) {
  auto suite = Parse(R"("seed": 2, "alpha": 1e-4, "tv": 0.05, "max_draws": 2048, "min_draws": 2000,
    "cases": [{"name": "decode", "decode": true, "batch": [
      {"row": {"kind": "gaussian", "vocab": 500, "sigma": 2}, "params": {"top_k": 40}, "copies": 4}]}])");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  CampaignOptions o;
  o.progress = Progress::Mode::kQuiet;
  o.jobs = 1;
  for (const char* mutant : {"mutant:graph-baked-uniform", "mutant:step-key-reuse"}) {
    o.sampler_spec = mutant;
    auto report = RunCampaign(*suite, o);
    ASSERT_TRUE(report.ok());
    ASSERT_EQ(report->cases.size(), 4u);
    for (const CaseResult& c : report->cases) {
      const auto repeats = c.OutcomesOf("step-repeats");
      ASSERT_EQ(repeats.size(), 1u) << mutant;
      EXPECT_LT(repeats[0]->p_value, 1e-10) << mutant << " " << c.name;
    }
  }
}

}  // namespace
}  // namespace samplecheck::harness
