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
// test judges nothing. Beside each report it writes run-<r>.summary.json: what the judge uses of a run (its verdict,
// the failed cases, every judged case's p-value and every Pearson p-value by binning; ~40 KB where the report of a
// standard run is ~6 MB). A shard resumes: a run whose summary is already in SAMPLECHECK_NULL_OUT (same seed, suite
// and sampler) is not run again, so a shard cut by a machine's deadline goes on where it stopped, and the summaries
// alone can travel between machines. SAMPLECHECK_NULL_JUDGE=DIR runs nothing: it reads, for every run r of 0 ..
// R-1, DIR/run-<r>.json (the report; checked as the gate checks one) or else DIR/run-<r>.summary.json (every run
// present, each from seed SAMPLECHECK_NULL_SEED + r, one suite, one sampler) and judges them as one calibration,
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
#include <fstream>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/report/report.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// What the judge uses of one campaign run.
struct RunSummary {
  uint64_t seed = 0;
  std::string suite, sampler;
  bool passed = false;
  std::vector<std::string> alarms;  // "case: reason" of each failed or errored case
  std::vector<double> case_p;       // every judged case's p-value
  std::map<std::string, std::vector<double>> pearson;  // the Pearson p-values by binning
};

RunSummary Summarize(const CampaignReport& report) {
  RunSummary s;
  s.seed = report.seed;
  s.suite = report.suite;
  s.sampler = report.sampler_spec;
  s.passed = report.Passed();
  for (const CaseResult& r : report.cases) {
    if (r.status == CaseStatus::kFail || r.status == CaseStatus::kError) s.alarms.push_back(r.name + ": " + r.reason);
    if (r.status == CaseStatus::kSkipped) continue;
    s.case_p.push_back(r.p_value);
    for (const CheckOutcome* o : r.OutcomesOf("pearson")) s.pearson[o->scope].push_back(o->p_value);
  }
  return s;
}

std::filesystem::path SummaryPath(const std::filesystem::path& dir, uint64_t run) {
  return dir / ("run-" + std::to_string(run) + ".summary.json");
}

void SaveSummary(const RunSummary& s, const std::filesystem::path& path) {
  const nlohmann::json j = {{"seed", s.seed},       {"suite", s.suite},   {"sampler", s.sampler}, {"passed", s.passed},
                            {"alarms", s.alarms},   {"case_p", s.case_p}, {"pearson", s.pearson}};
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump() << "\n";
    ASSERT_TRUE(out.good()) << "cannot write " << tmp;
  }
  std::filesystem::rename(tmp, path);  // whole or absent: a shard cut mid-write leaves no half summary
}

// A summary written by SaveSummary; an error names the file and what is wrong with it.
Result<RunSummary> LoadSummary(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read " + path.string());
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    RunSummary s;
    s.seed = j.at("seed").get<uint64_t>();
    s.suite = j.at("suite").get<std::string>();
    s.sampler = j.at("sampler").get<std::string>();
    s.passed = j.at("passed").get<bool>();
    s.alarms = j.at("alarms").get<std::vector<std::string>>();
    s.case_p = j.at("case_p").get<std::vector<double>>();
    s.pearson = j.at("pearson").get<std::map<std::string, std::vector<double>>>();
    for (double p : s.case_p) {
      if (!(p >= 0 && p <= 1)) return InvalidArgument(path.string() + ": a case p-value " + std::to_string(p) + " is not in [0, 1]");
    }
    for (const auto& [scope, ps] : s.pearson) {
      for (double p : ps) {
        if (!(p >= 0 && p <= 1)) {
          return InvalidArgument(path.string() + ": a Pearson p-value of binning " + scope + " is " + std::to_string(p) +
                                 ", not in [0, 1]");
        }
      }
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path.string() + ": not a run summary: " + e.what());
  }
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
  uint64_t reused = 0;
  for (uint64_t i = 0; i < runs; ++i) {
    if (!judge_only && i % shard.count != shard.index) continue;
    RunSummary run;
    bool have = false;
    const std::filesystem::path dir = judge_only ? judge_env : (out_env ? out_env : "");
    const std::filesystem::path report_path = dir / ("run-" + std::to_string(i) + ".json");
    if (judge_only && std::filesystem::exists(report_path)) {
      Result<CampaignReport> report = LoadReport(report_path);
      ASSERT_TRUE(report.ok()) << report_path << ": " << report.error().ToString();
      run = Summarize(*report);
      have = true;
    } else if (!dir.empty() && std::filesystem::exists(SummaryPath(dir, i))) {
      Result<RunSummary> loaded = LoadSummary(SummaryPath(dir, i));
      ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
      run = std::move(*loaded);
      have = true;
      if (!judge_only) ++reused;  // a resumed shard: this run finished in an earlier call
    }
    if (have) {
      ASSERT_EQ(run.seed, first_seed + i) << "run " << i << " in " << dir << " is not of seed " << first_seed << " + " << i;
      ASSERT_EQ(run.suite, suite->name) << "run " << i << " in " << dir;
      ASSERT_EQ(run.sampler, sampler) << "run " << i << " in " << dir;
    } else {
      ASSERT_FALSE(judge_only) << "run " << i << ": neither " << report_path << " nor " << SummaryPath(dir, i)
                               << " (every run's report or summary is needed)";
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
      Result<CampaignReport> report = RunCampaign(*suite, options);
      ASSERT_TRUE(report.ok()) << report.error().ToString();
      run = Summarize(*report);
      if (out_env && *out_env) {
        std::filesystem::create_directories(out_env);
        const Status saved = SaveReport(*report, report_path);
        ASSERT_TRUE(saved.ok()) << saved.error().ToString();
        SaveSummary(run, SummaryPath(out_env, i));
      }
    }
    if (!run.passed) {
      ++failed;
      for (const std::string& alarm : run.alarms) std::cout << "  FALSE ALARM: seed " << run.seed << " case " << alarm << "\n";
    }
    // One line per run: a nightly run of the standard suite takes hours, and its log says how far it got.
    std::cout << "  run " << i + 1 << "/" << runs << " seed " << run.seed << ": " << (run.passed ? "pass" : "FAIL")
              << (have && !judge_only ? " (reused)" : "") << ", " << failed << " false alarm(s) so far, "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s" << std::endl;
    judged_cases += run.case_p.size();
    case_p.insert(case_p.end(), run.case_p.begin(), run.case_p.end());
    for (const auto& [scope, ps] : run.pearson) {
      p_by_binning[scope].insert(p_by_binning[scope].end(), ps.begin(), ps.end());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (shard.count > 1) {
    std::cout << "shard " << shard.index << "/" << shard.count << " done in " << seconds << " s (" << reused
              << " run(s) reused from earlier calls); judge every shard's runs together with SAMPLECHECK_NULL_JUDGE=" << out_env << "\n";
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
