// Null calibration (label slow): the gate's false alarms, measured. The exact sampler runs a suite on R fresh
// campaign seeds (new rows, new draws each run); under the null every campaign should pass with probability >= 1 -
// alpha, and every per-binning Pearson p-value should be U(0, 1).
//
//   false alarms   F = failed campaigns of R. Pass iff F <= f_max, the least f with P(Bin(R, alpha) > f) <= 1e-3:
//                  this test's own false-alarm rate is below 1e-3. (R = 200, alpha = 1e-4: f_max = 1.)
//                  The Clopper-Pearson 95% upper bound of the false-alarm rate is printed beside it.
//   uniformity     KS of the Pearson p-values of each binning (head, tail, hash) over all cases and runs against
//                  U(0, 1) (stats::KolmogorovSmirnovUniformity), at alpha 1e-3 each. Cases whose binning has dof 0
//                  (one kept token) give no p-value.
//
// Environment: SAMPLECHECK_NULL_RUNS (default 200, at least 200 for the documented figures),
// SAMPLECHECK_NULL_SUITE (default smoke), SAMPLECHECK_NULL_MAX_DRAWS (a cap on every case; default: the suite's),
// SAMPLECHECK_NULL_SEED (the first campaign seed; default fresh from std::random_device, printed),
// SAMPLECHECK_NULL_SAMPLER (default exact: the gate's own false alarms; a correct sampler under test, e.g. cuda on a
// GPU machine, makes the same run a long-run acceptance test of that sampler) and SAMPLECHECK_NULL_PROFILE (the
// judged profile; default: the suite's, else the sampler's). scripts/calibration-nightly runs it.
//
// Sharded (docs/scale.md): SAMPLECHECK_NULL_SHARD=I/N (or auto, auto/N: the schedulers' variables) runs only the
// runs r with r mod N == I and writes each run's report to SAMPLECHECK_NULL_OUT/run-<r>.json (required then); the
// test judges nothing. SAMPLECHECK_NULL_JUDGE=DIR runs nothing: it reads the R reports run-0 .. run-<R-1>.json of
// DIR (every one present, each from seed SAMPLECHECK_NULL_SEED + r, one suite) and judges them as one calibration,
// exactly as the unsharded run judges the same seeds.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <filesystem>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/campaign/suite.h"
#include "samplecheck/report/report.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/stats/multiple_testing.h"

namespace samplecheck::harness {
namespace {

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// The least f with P(Bin(n, p) > f) <= tail.
uint64_t BinomialQuantile(uint64_t n, double p, double tail) {
  double pmf = std::pow(1 - p, double(n));  // P(X = 0)
  double cdf = pmf;
  uint64_t f = 0;
  while (1 - cdf > tail && f < n) {
    pmf *= double(n - f) / double(f + 1) * p / (1 - p);
    ++f;
    cdf += pmf;
  }
  return f;
}

TEST(NullCalibration, ExactSamplerFalseAlarmsWithinAlphaAndPValuesUniform) {
  const uint64_t runs = EnvU64("SAMPLECHECK_NULL_RUNS", 200);
  const char* suite_env = std::getenv("SAMPLECHECK_NULL_SUITE");
  const std::string suite_name = suite_env && *suite_env ? suite_env : "smoke";
  const char* sampler_env = std::getenv("SAMPLECHECK_NULL_SAMPLER");
  const std::string sampler = sampler_env && *sampler_env ? sampler_env : "exact";
  const char* profile_env = std::getenv("SAMPLECHECK_NULL_PROFILE");
  const std::string profile = profile_env ? profile_env : "";
  const uint64_t max_draws = EnvU64("SAMPLECHECK_NULL_MAX_DRAWS", 0);
  std::random_device rd;
  const uint64_t first_seed = EnvU64("SAMPLECHECK_NULL_SEED", (uint64_t(rd()) << 32) ^ rd());

  auto suite = LoadSuite(suite_name);
  ASSERT_TRUE(suite.ok()) << suite.error().ToString();
  std::cout << "null calibration: sampler " << sampler << (profile.empty() ? "" : " judged as " + profile)
            << ", suite " << suite_name << " (" << suite->cases.size() << " cases, alpha " << suite->alpha << "), "
            << runs << " runs, seeds " << first_seed << " + 0.." << runs - 1
            << (max_draws ? ", max_draws " + std::to_string(max_draws) : std::string()) << std::endl;

  const char* shard_env = std::getenv("SAMPLECHECK_NULL_SHARD");
  const char* out_env = std::getenv("SAMPLECHECK_NULL_OUT");
  const char* judge_env = std::getenv("SAMPLECHECK_NULL_JUDGE");
  ShardSpec shard;
  if (shard_env && *shard_env) {
    auto parsed = ParseShard(shard_env);
    ASSERT_TRUE(parsed.ok()) << "SAMPLECHECK_NULL_SHARD: " << parsed.error().message;
    shard = *parsed;
    ASSERT_TRUE(out_env && *out_env) << "SAMPLECHECK_NULL_SHARD needs SAMPLECHECK_NULL_OUT (where the runs' reports go)";
    ASSERT_TRUE(std::getenv("SAMPLECHECK_NULL_SEED")) << "every shard needs the same SAMPLECHECK_NULL_SEED";
    std::cout << "shard " << shard.index << "/" << shard.count << " (" << shard.source << "): runs r with r mod "
              << shard.count << " == " << shard.index << ", reports to " << out_env << std::endl;
  }
  const bool judge_only = judge_env && *judge_env;
  if (judge_only) {
    ASSERT_TRUE(std::getenv("SAMPLECHECK_NULL_SEED")) << "SAMPLECHECK_NULL_JUDGE needs the shards' SAMPLECHECK_NULL_SEED";
  }

  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failed = 0;
  uint64_t judged_cases = 0;
  std::map<std::string, std::vector<double>> p_by_binning;
  std::vector<double> case_p;
  for (uint64_t i = 0; i < runs; ++i) {
    if (!judge_only && i % shard.count != shard.index) continue;
    Result<CampaignReport> report = InvalidArgument("");
    if (judge_only) {
      const std::filesystem::path path = std::filesystem::path(judge_env) / ("run-" + std::to_string(i) + ".json");
      report = LoadReport(path);
      ASSERT_TRUE(report.ok()) << path << ": " << report.error().ToString() << " (every run's report is needed)";
      ASSERT_EQ(report->seed, first_seed + i) << path << " is not run " << i << " of seed " << first_seed;
      ASSERT_EQ(report->suite, suite->name) << path;
      ASSERT_EQ(report->sampler_spec, sampler) << path;
    } else {
      CampaignOptions options;
      options.sampler_spec = sampler;
      options.profile = profile;
      options.seed = first_seed + i;
      options.jobs = static_cast<unsigned>(EnvU64("SAMPLECHECK_NULL_JOBS", 0));  // 0: one per core
      if (max_draws) {
        options.max_draws = max_draws;
        options.evidence.allow_underpowered = true;  // false alarms are counted, not the power a cap leaves
      }
      options.progress = Progress::Mode::kQuiet;
      report = RunCampaign(*suite, options);
      ASSERT_TRUE(report.ok()) << report.error().ToString();
      if (out_env && *out_env) {
        std::filesystem::create_directories(out_env);
        const std::filesystem::path path = std::filesystem::path(out_env) / ("run-" + std::to_string(i) + ".json");
        const Status saved = SaveReport(*report, path);
        ASSERT_TRUE(saved.ok()) << saved.error().ToString();
      }
    }
    if (!report->Passed()) {
      ++failed;
      for (const CaseResult& r : report->cases) {
        if (r.status == CaseStatus::kFail || r.status == CaseStatus::kError) {
          std::cout << "  FALSE ALARM: seed " << report->seed << " case " << r.name << ": " << r.reason << "\n";
        }
      }
    }
    // One line per run: a nightly run of the standard suite takes hours, and its log says how far it got.
    std::cout << "  run " << i + 1 << "/" << runs << " seed " << report->seed << ": "
              << (report->Passed() ? "pass" : "FAIL") << ", " << failed << " false alarm(s) so far, "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s" << std::endl;
    for (const CaseResult& r : report->cases) {
      if (r.status == CaseStatus::kSkipped) continue;
      ++judged_cases;
      case_p.push_back(r.p_value);
      for (const CheckOutcome* o : r.OutcomesOf("pearson")) p_by_binning[o->scope].push_back(o->p_value);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (shard.count > 1) {
    std::cout << "shard " << shard.index << "/" << shard.count << " done in " << seconds
              << " s; judge every shard's runs together with SAMPLECHECK_NULL_JUDGE=" << out_env << "\n";
    return;
  }

  const uint64_t allowed = BinomialQuantile(runs, suite->alpha, 1e-3);
  const auto upper = stats::ClopperPearsonInterval(failed, runs, 0.95);
  std::cout << "false alarms: " << failed << " of " << runs << " campaigns (" << judged_cases
            << " judged cases); allowed <= " << allowed << " (P(Bin(" << runs << ", " << suite->alpha << ") > "
            << allowed << ") <= 1e-3); 95% upper bound on the rate: " << (upper.ok() ? upper->upper : -1.0)
            << "; " << seconds << " s\n";
  EXPECT_LE(failed, allowed);

  for (const auto& [name, ps] : p_by_binning) {
    const Result<stats::UniformityTest> tested = stats::KolmogorovSmirnovUniformity(ps);
    ASSERT_TRUE(tested.ok()) << tested.error().message;
    const stats::UniformityTest& ks = *tested;
    std::cout << "KS uniformity of the " << name << " Pearson p-values: n = " << ks.count << ", D = " << ks.statistic
              << ", p = " << ks.p_value << "\n";
    EXPECT_TRUE(ks.Passes(1e-3)) << name << " p-values are not uniform: D = " << ks.statistic << ", p = "
                                 << ks.p_value;
  }
  // The case p-value is Bonferroni over the case's tests (min(1, tests * min p)): conservative, not uniform; its
  // share below 0.01 is printed for the record.
  size_t small = 0;
  for (double p : case_p) small += p < 0.01;
  std::cout << "case p-values below 0.01: " << small << " of " << case_p.size() << "\n";
}

}  // namespace
}  // namespace samplecheck::harness
