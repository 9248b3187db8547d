// Quick tests of the mutant zoo (label unit): the zoo's metadata covers every bug class of semantics.md §2, the
// fault-free control draws token for token what `exact` draws, and a few mutants are each caught, in seconds, by
// the check meant for them. The full table (every mutant, the whole gate) is the slow ctest mutants_table.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/mutants/mutation_score.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/mutants.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

std::unique_ptr<Sampler> Make(const std::string& spec, const std::string& profile = "vllm") {
  SamplerOptions options;
  options.profile = profile;
  auto sampler = MakeSampler(spec, options);
  EXPECT_TRUE(sampler.ok()) << spec << ": " << (sampler.ok() ? "" : sampler.error().ToString());
  return sampler.ok() ? std::move(*sampler) : nullptr;
}

TEST(MutantZoo, HasTwentyMutantsWithUniqueNamesAndFullMetadata) {
  const auto& zoo = ListMutants();
  EXPECT_GE(zoo.size(), 20u);
  std::set<std::string> names;
  for (const MutantInfo& m : zoo) {
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate mutant " << m.name;
    EXPECT_FALSE(m.bug_class.empty()) << m.name;
    EXPECT_FALSE(m.source.empty()) << m.name;
    EXPECT_FALSE(m.fault.empty()) << m.name;
    EXPECT_FALSE(m.expected_check.empty()) << m.name;
    EXPECT_NE(m.name, kControlMutant);
  }
}

// semantics.md §2: "The mutant zoo models every class at least once".
TEST(MutantZoo, ModelsEveryBugClassOfSemantics) {
  std::set<std::string> classes;
  for (const MutantInfo& m : ListMutants()) classes.insert(m.bug_class);
  for (const char* required : {"not renormalized after truncation", "order of filters", "boundary rules",
                               "tie resolution by value", "rejection fallback to argmax",
                               "disabled values that are not no-ops", "RNG stream errors",
                               "per-row parameters from the wrong row", "numerical floors", "bad rows",
                               "generic planted faults", "parameter corners"}) {
    EXPECT_TRUE(classes.count(required)) << "no mutant models the class '" << required << "'";
  }
}

TEST(MutantZoo, UnknownNameIsAnErrorThatListsTheZoo) {
  auto sampler = MakeSampler("mutant:no-such-bug", {});
  ASSERT_FALSE(sampler.ok());
  EXPECT_EQ(sampler.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(sampler.error().message.find("no-renorm-cdf"), std::string::npos) << sampler.error().message;
}

// The control is the mutant machinery with no fault: it must draw exactly what `exact` draws, so every verdict on a
// mutant is about its fault and nothing else.
TEST(MutantZoo, ControlDrawsTokenForTokenWhatExactDraws) {
  for (const std::string profile : {"vllm", "hf"}) {
    auto exact = Make("exact:" + profile);
    auto control = Make(std::string("mutant:") + kControlMutant, profile);
    ASSERT_TRUE(exact && control);
    RowSpec spec;
    spec.kind = "gaussian";
    spec.vocab = 512;
    spec.sigma = 2.0;
    const std::vector<SamplingParams> settings = {
        {1.0, -1, 1.0, 0.0, 1, 0}, {0.7, 20, 0.9, 0.0, 2, 5}, {1.3, -1, 0.8, 0.05, 3, 9}, {0.0, -1, 1.0, 0.0, 4, 0}};
    for (size_t s = 0; s < settings.size(); ++s) {
      auto row = MakeRow(spec, 100 + s);
      ASSERT_TRUE(row.ok());
      constexpr int kRows = 64;
      std::vector<float> logits;
      std::vector<SamplingParams> params;
      for (int r = 0; r < kRows; ++r) {
        logits.insert(logits.end(), row->begin(), row->end());
        SamplingParams p = settings[s];
        p.offset += static_cast<uint64_t>(r);
        params.push_back(p);
      }
      const RowBatch batch{logits.data(), kRows, spec.vocab, spec.vocab};
      std::vector<int32_t> a(kRows), b(kRows);
      ASSERT_TRUE(exact->Sample(batch, params, a).ok());
      ASSERT_TRUE(control->Sample(batch, params, b).ok());
      EXPECT_EQ(a, b) << profile << " setting " << s;
      std::vector<uint64_t> ha(spec.vocab, 0), hb(spec.vocab, 0);
      ASSERT_TRUE(exact->CountDraws(*row, settings[s], 20000, ha, nullptr).ok());
      ASSERT_TRUE(control->CountDraws(*row, settings[s], 20000, hb, nullptr).ok());
      EXPECT_EQ(ha, hb) << profile << " setting " << s;
      auto pa = exact->ProcessedDistribution(*row, settings[s]);
      auto pb = control->ProcessedDistribution(*row, settings[s]);
      ASSERT_TRUE(pa.ok() && pb.ok());
      EXPECT_EQ(*pa, *pb);
    }
  }
}

// A one-case campaign (smoke-sized: at most 2^20 draws) of `spec` on `case_json`.
CampaignReport RunCase(const std::string& spec, const std::string& case_json) {
  const std::string text = R"({"schema": "samplecheck-suite/1", "name": "quick", "seed": 3, "alpha": 1e-4,
                               "tv": 0.01, "max_draws": 1048576, "min_draws": 20000, "cases": [)" +
                           case_json + "]}";
  auto suite = ParseSuite(nlohmann::json::parse(text), ".", "test");
  EXPECT_TRUE(suite.ok()) << (suite.ok() ? "" : suite.error().ToString());
  CampaignOptions options;
  options.sampler_spec = spec;
  options.profile = "vllm";
  options.progress = Progress::Mode::kQuiet;
  options.jobs = 1;
  auto report = RunCampaign(*suite, options);
  EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().ToString());
  return report.ok() ? *report : CampaignReport{};
}

struct QuickCatch {
  const char* mutant;
  const char* case_json;
  bool by_support;  // caught by a support violation (else by the statistical tests)
};

void PrintTo(const QuickCatch& q, std::ostream* os) { *os << "mutant:" << q.mutant; }

class CaughtByItsCheck : public ::testing::TestWithParam<QuickCatch> {};

TEST_P(CaughtByItsCheck, CampaignFailsAndTheControlPasses) {
  const QuickCatch& q = GetParam();
  const CampaignReport control = RunCase(std::string("mutant:") + kControlMutant, q.case_json);
  ASSERT_EQ(control.cases.size(), 1u);
  EXPECT_TRUE(control.Passed()) << "the control fails " << q.case_json << ": " << control.cases[0].reason;
  const CampaignReport report = RunCase(std::string("mutant:") + q.mutant, q.case_json);
  ASSERT_EQ(report.cases.size(), 1u);
  const CaseResult& r = report.cases[0];
  EXPECT_FALSE(report.Passed()) << "mutant:" << q.mutant << " survives " << q.case_json << " (seed 3, p = "
                                << r.p_value << ")";
  if (q.by_support) {
    EXPECT_GT(r.HardViolations(), 0u) << "mutant:" << q.mutant << " should draw masked tokens";
  } else {
    EXPECT_EQ(r.HardViolations(), 0u);
    EXPECT_LT(r.holm_adjusted_p, report.alpha);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Quick, CaughtByItsCheck,
    ::testing::Values(
        QuickCatch{"no-renorm-cdf", R"({"name": "topk", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0},
                                       "params": {"top_k": 50}})", false},
        QuickCatch{"leak-1e-4", R"({"name": "topk", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0},
                                   "params": {"top_k": 50}})", true},
        QuickCatch{"topk-plus-one", R"({"name": "topk", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0},
                                       "params": {"top_k": 50}})", true},
        QuickCatch{"topp-joint", R"({"name": "V5", "row": {"kind": "dyadic", "vector": "V5"},
                                    "params": {"top_k": 4, "top_p": 0.82}})", true},
        QuickCatch{"minp-after-topp", R"({"name": "V4", "row": {"kind": "dyadic", "vector": "V4"},
                                         "params": {"top_p": 0.75, "min_p": 0.3}})", true},
        QuickCatch{"topp-truncated-cdf", R"({"name": "V3", "row": {"kind": "dyadic", "vector": "V3"},
                                            "params": {"top_p": 0.75}})", false},
        QuickCatch{"argmax-fallback-4-retries", R"({"name": "topp", "row": {"kind": "zipf", "vocab": 2000},
                                                   "params": {"top_p": 0.5}})", false},
        // issue 31: the seed (its own check, seed-dependence) and the parameter corners (support)
        QuickCatch{"seed-ignored", R"({"name": "topk", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0},
                                      "params": {"top_k": 50}})", false},
        QuickCatch{"topp-tiny-masks-all", R"({"name": "tiny", "row": {"kind": "gaussian", "vocab": 1001},
                                             "params": {"top_p": 1e-7}})", true},
        QuickCatch{"topk-over-finite-leak", R"({"name": "masked", "row": {"kind": "gaussian", "vocab": 1001,
                                               "mask_fraction": 0.5}, "params": {"top_k": 1001, "top_p": 0.9}})",
                   true},
        QuickCatch{"topk-at-vocab-skips-topp", R"({"name": "kv", "row": {"kind": "gaussian", "vocab": 1001},
                                                  "params": {"top_k": 1004, "top_p": 0.5}})", true},
        QuickCatch{"minp-first-32k-only", R"({"name": "big", "row": {"kind": "gaussian", "vocab": 65537},
                                             "params": {"min_p": 0.5}})", true}),
    [](const ::testing::TestParamInfo<QuickCatch>& param_info) {
      std::string name = param_info.param.mutant;
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// A lossy sampler's report keeps its declaration through the report file, so `gate --max-tv` can judge it there.
TEST(MutantZoo, ALossyReportRoundTripsAndIsJudgedByADistance) {
  const CampaignReport r = RunCase("lossy:mutant:topp-truncated-cdf",
                                   R"({"name": "V3", "row": {"kind": "dyadic", "vector": "V3"}, "params": {"top_p": 0.75}})");
  ASSERT_TRUE(r.lossy);
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "samplecheck-lossy-roundtrip.json";
  ASSERT_TRUE(SaveReport(r, path).ok());
  auto back = LoadReport(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_TRUE(back->lossy);
  EXPECT_FALSE(back->Passed());
  ASSERT_TRUE(ApplyMaxTv(*back, 0.2).ok());
  EXPECT_TRUE(back->Passed()) << back->VerdictProblems().front();
}

// Faults invisible to one-row campaigns, each caught by the property meant for it.
TEST(MutantZoo, PropertyOnlyFaultsAreCaughtByTheirProperty) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"no-renorm-logprobs", "mass-sums-to-one"},
      {"nan-row-token-0", "support-containment"},
      {"seed-reused-across-rows", "stream-independence"},
  };
  properties::PropertyOptions options;
  options.max_success = 100;  // the CI count: support-containment reaches a NaN row within it
  for (const auto& [mutant, property] : expected) {
    auto sampler = Make("mutant:" + mutant);
    ASSERT_TRUE(sampler);
    const properties::PropertyResult result =
        properties::RunProperty(*sampler, *FindProfile("vllm"), property, options, "mutant:" + mutant);
    EXPECT_EQ(result.status, properties::PropertyStatus::kFailed)
        << "mutant:" << mutant << " survives property " << property << ": " << result.message;
  }
}

// The mutation score through the library (what `samplecheck mutants` prints): the control passes the smoke suite,
// a gross boundary fault is caught there by the support check, and the row says so.
TEST(MutationScore, ControlPassesAndAGrossFaultIsCaughtBySupport) {
  MutationOptions options;
  options.suites = {"smoke"};
  options.only = {"topk-plus-one"};
  options.properties = false;
  auto score = ScoreMutants(options);
  ASSERT_TRUE(score.ok()) << score.error().message;
  ASSERT_EQ(score->rows.size(), 2u);
  EXPECT_TRUE(score->rows[0].control);
  EXPECT_EQ(score->rows[0].Verdict(), "passes");
  const MutantRow& row = score->rows[1];
  EXPECT_EQ(row.Verdict(), "caught");
  ASSERT_FALSE(row.catches.empty());
  EXPECT_EQ(row.catches.front().check, "smoke/topk: support") << row.CaughtBy();
  EXPECT_GT(row.catches.front().needed, 0.0);
  EXPECT_TRUE(score->Passed());
  const std::string table = FormatMutationScore(*score, false);
  EXPECT_NE(table.find("mutation score: 1/1 caught; control passes"), std::string::npos) << table;
  EXPECT_NE(table.find("VERDICT: PASS"), std::string::npos) << table;
}

TEST(MutationScore, UnknownFamilyOrMutantIsAnErrorNamingIt) {
  MutationOptions options;
  options.family = "no-such-family";
  auto family = ScoreMutants(options);
  ASSERT_FALSE(family.ok());
  EXPECT_NE(family.error().message.find("no-such-family"), std::string::npos) << family.error().message;
  options.family = "cpu";
  options.only = {"no-such-mutant"};
  auto mutant = ScoreMutants(options);
  ASSERT_FALSE(mutant.ok());
  EXPECT_NE(mutant.error().message.find("no-such-mutant"), std::string::npos) << mutant.error().message;
}

}  // namespace
}  // namespace samplecheck::harness
