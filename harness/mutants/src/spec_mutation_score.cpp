// The mutation score of the speculative-decoding gate (`samplecheck mutants --sampler-family spec`): the verifier
// mutants of samplers/verifier.h through the spec suites (spec-smoke and spec-standard by default), the exact
// verifier first as the control, which must pass everything.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/mutants/mutation_score.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {
namespace {

MutantCatch SpecCatch(const std::string& suite, const CaseResult& r) {
  MutantCatch c;
  c.check = suite + "/" + r.name + ": ";
  for (const CheckOutcome& o : r.outcomes) {
    if (o.Fails()) {
      c.check += o.test;
      c.needed = o.draws_for_power > 0 ? o.draws_for_power : double(r.draws);
      return c;
    }
  }
  double best = std::numeric_limits<double>::infinity();
  std::string best_name = "holm";
  for (const CheckOutcome& o : r.outcomes) {
    if (o.kind == CheckOutcome::Kind::kPValue && o.p_value <= r.holm_adjusted_p * 1.0000001 &&
        o.draws_for_power > 0 && o.draws_for_power < best) {
      best = o.draws_for_power;
      best_name = o.test;
    }
  }
  if (!std::isfinite(best)) {  // the smallest p-value's test (spec-rejection has no power estimate)
    double smallest = 2;
    for (const CheckOutcome& o : r.outcomes) {
      if (o.kind == CheckOutcome::Kind::kPValue && o.p_value < smallest) {
        smallest = o.p_value;
        best_name = o.test;
      }
    }
  }
  if (r.status == CaseStatus::kError) best_name = "error: " + r.reason;
  c.check += best_name;
  c.needed = std::isfinite(best) ? best : double(r.draws);
  return c;
}

MutantRow JudgeSpec(const std::string& spec, const std::string& name, const std::string& bug_class,
                    const std::vector<SpecSuite>& suites, const MutationOptions& o) {
  MutantRow row{name, bug_class, bug_class == "control", {}, std::nullopt, 0};
  const auto t0 = std::chrono::steady_clock::now();
  for (const SpecSuite& suite : suites) {
    SpecCampaignOptions options;
    options.verifier_spec = spec;
    options.profile = o.profile;
    options.jobs = o.jobs;
    options.quiet = true;
    options.version = o.version;
    auto report = RunSpecCampaign(suite, options);
    if (!report.ok()) {
      row.error = report.error();
      return row;
    }
    for (const CaseResult& r : report->cases) {
      if (r.status == CaseStatus::kFail || r.status == CaseStatus::kError) row.catches.push_back(SpecCatch(suite.name, r));
    }
  }
  std::sort(row.catches.begin(), row.catches.end(),
            [](const MutantCatch& a, const MutantCatch& b) { return a.needed < b.needed; });
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

}  // namespace

Result<MutationScore> ScoreSpecMutants(const MutationOptions& o, const std::function<void(const MutantRow&)>& on_row) {
  MutationScore score;
  score.family = "spec";
  score.profile = o.profile;
  score.properties = false;
  score.suites = !o.suites.empty() ? o.suites : std::vector<std::string>{"spec-smoke", "spec-standard"};
  std::vector<SpecSuite> suites;
  for (const std::string& name : score.suites) {
    auto s = LoadSpecSuite(name);
    if (!s.ok()) return s.error();
    suites.push_back(std::move(*s));
  }
  for (const std::string& n : o.only) {
    const auto& list = VerifierMutants();
    if (!std::any_of(list.begin(), list.end(), [&](const auto& m) { return m.name == n; })) {
      return InvalidArgument("no spec mutant named '" + n + "' (samplecheck mutants --sampler-family spec --list)");
    }
  }
  score.rows.push_back(JudgeSpec("exact", "exact", "control", suites, o));
  if (on_row) on_row(score.rows.back());
  for (const VerifierMutantInfo& m : VerifierMutants()) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), m.name) == o.only.end()) continue;
    score.rows.push_back(JudgeSpec("mutant:" + m.name, m.name, m.bug_class, suites, o));
    if (on_row) on_row(score.rows.back());
  }
  return score;
}

std::string FormatSpecMutantFamily(bool markdown) {
  std::string out = markdown ? "| mutant | bug class | fault |\n|---|---|---|\n" : "";
  for (const VerifierMutantInfo& m : VerifierMutants()) {
    out += markdown ? "| " + m.name + " | " + m.bug_class + " | " + m.description + " |\n"
                    : m.name + std::string(m.name.size() < 30 ? 30 - m.name.size() : 1, ' ') + m.bug_class + ": " +
                          m.description + "\n";
  }
  return out;
}

}  // namespace samplecheck::harness
