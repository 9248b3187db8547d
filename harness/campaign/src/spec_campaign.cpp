// Speculative-decoding campaigns (spec_campaign.h): the stages of engine.h configured for a Verifier. Plan: every
// request's rows and laws (spec_request.cpp) and each case's trials. Draw: one VerifierDrawer per worker
// (spec_draw.cpp). Judge: the positions, residuals and lengths of each request through the check objects
// (judge.h). Report: the sink (engine.cpp), the cases in suite order, the verdict.
#include "samplecheck/campaign/spec_campaign.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "campaign_work.h"
#include "engine.h"
#include "judge.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/case_selection.h"
#include "spec_draw.h"

namespace samplecheck::harness {
namespace {

constexpr double kMinResidualDraws = 20.0;  // a residual case needs this many expected rejections

// A target whose reference has ambiguous tokens (a decision fp32 arithmetic could flip) would judge a correct fp32
// engine on a coin toss: its rows are drawn again from the next row seed, up to 8 times.
Result<Request> PlanRequest(const SpecCaseSpec& cs, size_t k, const Profile& profile, uint64_t case_seed) {
  const std::string name = cs.requests.size() == 1 ? cs.name : cs.name + "/e" + std::to_string(k);
  const uint64_t row_seed = SplitMix64(case_seed + k);
  auto r = BuildRequest(cs.requests[k], profile, row_seed, name);
  auto ambiguous = [](const Request& q) {
    return std::any_of(q.p.begin(), q.p.end(), [](const ProcessedDistribution& p) { return !p.ambiguous.empty(); });
  };
  for (uint64_t attempt = 1; r.ok() && ambiguous(*r) && attempt < 8; ++attempt) {
    r = BuildRequest(cs.requests[k], profile, SplitMix64(row_seed + attempt * 0x9E3779B97F4A7C15ULL), name);
  }
  if (!r.ok()) return r.error().WithContext("case " + cs.name);
  r->params = cs.requests[k].params;
  r->params.seed = SplitMix64(case_seed ^ (0xC0FFEEULL + k));
  r->params.offset = (case_seed >> 20) & 0xFFFFFFFFULL;
  return r;
}

// Step 3: every position with two or more kept tokens gets the draws a row case would get for the suite's TV at its
// alpha and power, divided by its reach; clamped to [min_trials, max_trials].
Status PlanTrials(SpecCaseWork& w, const SpecSuite& suite, const SpecCampaignOptions& options, double tv,
                  double alpha_test) {
  const bool batch = w.requests.size() > 1;
  const uint64_t cap = std::min<uint64_t>(options.max_trials.value_or(UINT64_MAX),
                                          w.spec->max_trials ? w.spec->max_trials
                                                             : (batch ? suite.batch_max_trials : suite.max_trials));
  double needed = double(std::min(std::max(suite.min_trials, w.spec->min_trials), cap));
  for (const Request& r : w.requests) {
    for (int32_t j = 0; j <= r.spec.g; ++j) {
      const auto& p = r.p[static_cast<size_t>(j)];
      if (p.kept.size() < 2) continue;
      auto at_cap = stats::PlanBinnings(p.Dense(), double(cap), CampaignBinningOptions());
      if (!at_cap.ok()) return InternalError("binning: " + at_cap.error().message);
      auto plan = stats::PlanDrawsForTotalVariation(tv, alpha_test / 2, suite.power,
                                                    std::max<uint64_t>(at_cap->head.cells.size(), 2));
      if (!plan.ok()) return plan.error();
      const double reach = double(r.reach[static_cast<size_t>(j)]);
      if (reach > 0) needed = std::max(needed, plan->draws / reach);
    }
  }
  w.trials = static_cast<uint64_t>(std::clamp(std::ceil(needed), 1.0, double(cap)));
  return Status::Ok();
}

// Steps 1-3 for every case; the report's identity.
Result<std::vector<SpecCaseWork>> PlanSpec(const SpecSuite& suite, const SpecCampaignOptions& options,
                                           const Profile& profile, CampaignReport& report, double& alpha_test) {
  std::vector<SpecCaseWork> work;
  size_t judged_cases = 0;
  for (const SpecCaseSpec& cs : suite.cases) {
    SpecCaseWork w;
    w.spec = &cs;
    w.case_seed = CaseSeed(report.seed, cs.name);
    for (size_t k = 0; k < cs.requests.size(); ++k) {
      auto r = PlanRequest(cs, k, profile, w.case_seed);
      if (!r.ok()) return r.error();
      judged_cases += static_cast<size_t>(2 * r->spec.g + 2);  // positions, residuals (at most), length
      w.requests.push_back(std::move(*r));
    }
    work.push_back(std::move(w));
  }
  alpha_test = suite.alpha / (double(std::max<size_t>(judged_cases, 1)) * kPlannedTestsPerCase);
  // --case: the selected cases, planned with the whole suite's alpha split (case_selection.h).
  std::vector<std::string> entries;
  for (const SpecCaseSpec& cs : suite.cases) entries.push_back(cs.name);
  if (Status st = CheckSelection(options.only_cases, entries, suite.name); !st.ok()) return st.error();
  report.selected_cases = options.only_cases;
  std::erase_if(work, [&](const SpecCaseWork& w) { return !EntrySelected(options.only_cases, w.spec->name); });
  for (SpecCaseWork& w : work) {
    if (Status st = PlanTrials(w, suite, options, report.tv, alpha_test); !st.ok()) return st.error();
  }
  return work;
}

// What every judged case of a request shares, and where the results go.
struct RequestJudge {
  const Request& r;
  const CampaignReport& report;
  double alpha_test;
  uint64_t trials;
  const std::string& verifier_error;
  std::vector<CaseResult>& out;

  // One judged case: the tokens of `histogram` (expected `expected` of them) against p0.
  void Case(const std::string& name, std::vector<double> p0, const std::vector<uint64_t>& histogram, uint64_t draws,
            double expected, uint64_t invalid, int64_t kept, bool greedy, const SpecEvidence& ev,
            const StreamEvidence* stream = nullptr) const {
    PreparedCase pc;
    CaseResult& cr = pc.result;
    cr.name = name;
    cr.row = r.spec.target;
    cr.row_seed = r.row_seed;
    cr.params = r.params;
    cr.profile = report.profile;
    cr.vocab = static_cast<int64_t>(p0.size());
    cr.kept = kept;
    cr.greedy = greedy;
    cr.tv = report.tv;
    cr.alpha_plan = alpha_test;
    cr.planned_draws = static_cast<uint64_t>(std::ceil(expected));
    cr.max_draws = trials;
    cr.draws = draws;
    pc.p0 = std::move(p0);
    if (Status st = PlanBinningAt(pc, std::max(expected, 1.0), std::max(expected, 0.0)); !st.ok()) {
      cr.status = CaseStatus::kError;
      cr.reason = st.error().message;
    } else {
      JudgeEvidence(
          CaseEvidence{cr, pc.p0, pc.binning, histogram, invalid, verifier_error, nullptr, nullptr, &ev, stream}, cr);
    }
    out.push_back(std::move(cr));
  }
};

// Step 4 for one request: "/pos<j>" against p_j with the rejections against beta_j, "/res<j>" against r_j where
// enough rejections are expected, "/length" against the accepted-length law with the request's hard checks.
void JudgeRequest(const RequestJudge& judge, const Tally& t, const SpecEvidence& length_ev,
                  const StreamEvidence* stream) {
  const Request& r = judge.r;
  const int32_t g = r.spec.g;
  const double N = double(judge.trials);
  for (int32_t j = 0; j <= g; ++j) {
    SpecEvidence ev;
    ev.role = SpecRole::kPosition;
    ev.position = j + 1;
    if (j < g) {
      ev.has_rejection_test = true;
      ev.reached = t.reached[static_cast<size_t>(j)];
      ev.rejected = t.rejected[static_cast<size_t>(j)];
      ev.beta = static_cast<double>(r.laws[static_cast<size_t>(j)].beta);
    }
    const auto& p = r.p[static_cast<size_t>(j)];
    judge.Case(r.name + "/pos" + std::to_string(j + 1), p.Dense(), t.pos[static_cast<size_t>(j)],
               t.reached[static_cast<size_t>(j)], N * double(r.reach[static_cast<size_t>(j)]),
               t.invalid[static_cast<size_t>(j)], static_cast<int64_t>(p.kept.size()), p.greedy, ev);
  }
  for (int32_t j = 0; j < g; ++j) {
    const PositionLaw& law = r.laws[static_cast<size_t>(j)];
    const double expected = N * double(r.reach[static_cast<size_t>(j)]) * double(law.residual_mass);
    if (expected < kMinResidualDraws || law.greedy) continue;
    SpecEvidence ev;
    ev.role = SpecRole::kResidual;
    ev.position = j + 1;
    uint64_t draws = 0;
    for (uint64_t count : t.residual[static_cast<size_t>(j)]) draws += count;
    judge.Case(r.name + "/res" + std::to_string(j + 1), law.residual.Dense(r.V()), t.residual[static_cast<size_t>(j)],
               draws, expected, 0, static_cast<int64_t>(law.residual.tokens.size()), false, ev);
  }
  std::vector<double> length_p0;
  int64_t length_kept = 0;
  for (long double v : r.length_law) {
    length_p0.push_back(static_cast<double>(v));
    length_kept += v > 0 ? 1 : 0;
  }
  uint64_t lengths = 0;
  for (uint64_t count : t.length) lengths += count;
  judge.Case(r.name + "/length", length_p0, t.length, lengths, N, 0, length_kept, false, length_ev, stream);
}

// Draw and Judge of one worker: a spec case's trials through its own verifier, then its judged cases.
class VerifierDrawer final : public ItemDrawer {
 public:
  VerifierDrawer(std::unique_ptr<Verifier> verifier, FreshVerifier::Factory make_fresh,
                 const std::vector<SpecCaseWork>& work, double alpha_test, const CampaignReport& report, CaseSink& sink,
                 std::vector<std::vector<CaseResult>>& results)
      : verifier_(std::move(verifier)), caps_(verifier_->GetCapabilities()), fresh_(std::move(make_fresh)),
        work_(work), alpha_test_(alpha_test), report_(report), sink_(sink), results_(results) {}

  void Draw(const WorkItem& item) override {
    const SpecCaseWork& w = work_[item.unit];
    const auto start = std::chrono::steady_clock::now();
    const SpecDrawn drawn = DrawSpecCase(*verifier_, fresh_, w, caps_, sink_);
    if (sink_.Halted()) return;
    std::vector<CaseResult> cases;
    for (size_t k = 0; k < w.requests.size(); ++k) {
      const RequestJudge judge{w.requests[k], report_, alpha_test_, w.trials, drawn.verifier_error[k], cases};
      JudgeRequest(judge, drawn.tallies[k], drawn.length[k], k < drawn.stream.size() ? &drawn.stream[k].evidence : nullptr);
    }
    const double seconds = SecondsSince(start);
    for (CaseResult& cr : cases) cr.seconds = seconds;
    sink_.Line(item.unit, w.spec->name, "done",
               std::to_string(w.trials) + " trials, " + std::to_string(cases.size()) + " judged cases", seconds);
    results_[item.unit] = std::move(cases);
  }

 private:
  std::unique_ptr<Verifier> verifier_;
  VerifierCapabilities caps_;
  FreshVerifier fresh_;  // this worker's second verifier (the stream checks), opened on first use
  const std::vector<SpecCaseWork>& work_;
  double alpha_test_;
  const CampaignReport& report_;
  CaseSink& sink_;
  std::vector<std::vector<CaseResult>>& results_;
};

// The speculative-decoding campaign as a kind of the engine (engine.h): one verifier per worker, a spec case per
// work item, its judged cases (positions, residuals, length) collected in case order.
class SpecCampaign final : public ReportKind {
 public:
  SpecCampaign(const SpecSuite& suite, const SpecCampaignOptions& options) : suite_(suite), options_(options) {}

  Result<KindPlan> Plan() override {
    const std::string opening = OpeningProfile(options_.profile, suite_.profile);
    if (Result<const Profile*> given = ProfileByName(opening); !given.ok()) return given.error();
    auto first = MakeVerifier(options_.verifier_spec, opening);
    if (!first.ok()) return first.error();
    const VerifierCapabilities caps = (*first)->GetCapabilities();
    auto judged = JudgedProfile(options_.profile, suite_.profile, caps.profile, "verifier " + (*first)->Name());
    if (!judged.ok()) return judged.error();
    profile_name_ = *judged;
    if (profile_name_ != opening) {
      first = MakeVerifier(options_.verifier_spec, profile_name_);  // the workers' verifiers take the judged one
      if (!first.ok()) return first.error();
    }
    Result<const Profile*> profile = ProfileByName(profile_name_);
    if (!profile.ok()) return profile.error();
    StampReport(report, {suite_.name, suite_.source, suite_.alpha, options_.tv.value_or(suite_.tv), suite_.power},
                options_, profile_name_);
    report.sampler = (*first)->Name();
    report.lossy = caps.lossy;
    report.sampler_spec = "verifier:" + options_.verifier_spec;
    report.seed = options_.seed.value_or(suite_.seed);
    report.draw_seed = report.seed;
    report.reproduce = ReproduceBase(report, options_, "--verifier", options_.verifier_spec) +
                       (options_.max_trials ? " --max-draws " + std::to_string(*options_.max_trials) : "");
    auto work = PlanSpec(suite_, options_, **profile, report, alpha_test_);
    if (!work.ok()) return work.error();
    work_ = std::move(*work);
    first_ = std::move(*first);
    results_.assign(work_.size(), {});
    KindPlan plan;
    plan.items.resize(work_.size());
    for (size_t c = 0; c < plan.items.size(); ++c) plan.items[c].unit = c;
    plan.cases = plan.to_draw = work_.size();
    plan.workers = WorkerCount(options_.jobs, caps.parallel_instances, work_.size());
    plan.progress = options_.quiet ? Progress::Mode::kQuiet : Progress::Mode::kLines;
    return plan;
  }

  Result<std::unique_ptr<ItemDrawer>> Drawer(unsigned worker, CaseSink& sink) override {
    auto verifier = worker == 0 ? std::move(first_) : MakeVerifier(options_.verifier_spec, profile_name_);
    if (!verifier.ok()) return verifier.error();
    auto make_fresh = [this]() { return MakeVerifier(options_.verifier_spec, profile_name_); };
    return std::unique_ptr<ItemDrawer>(
        std::make_unique<VerifierDrawer>(std::move(*verifier), make_fresh, work_, alpha_test_, report, sink, results_));
  }

  Status Collect(const CaseSink& sink) override {
    for (size_t c = 0; c < results_.size(); ++c) {
      for (CaseResult& cr : results_[c]) report.cases.push_back(std::move(cr));
      report.interrupted = report.interrupted || !sink.Finished(c);
    }
    report.planned_cases = report.cases.size();
    ApplyCampaignVerdict(report);
    return Status::Ok();
  }

 private:
  const SpecSuite& suite_;
  const SpecCampaignOptions& options_;
  std::string profile_name_;
  Result<std::unique_ptr<Verifier>> first_ = InternalError("no verifier yet");
  double alpha_test_ = 0.0;
  std::vector<SpecCaseWork> work_;
  std::vector<std::vector<CaseResult>> results_;
};

}  // namespace

Result<CampaignReport> RunSpecCampaign(const SpecSuite& suite, const SpecCampaignOptions& options) {
  SpecCampaign kind(suite, options);
  return RunForReport(kind, options.stop);
}

}  // namespace samplecheck::harness
