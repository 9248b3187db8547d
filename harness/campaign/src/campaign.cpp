#include "samplecheck/campaign/campaign.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "build_info.h"
#include "samplecheck/campaign/checks.h"
#include "samplecheck/campaign/row_source.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/samplers/devices.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/stats/power.h"

namespace samplecheck::harness {
namespace {

constexpr uint32_t kMaxPerturbAttempts = 8;
constexpr double kFirstPerturbScale = 1e-5;  // logits; x4 per attempt: 1e-5 .. 0.16
constexpr uint64_t kDrawChunk = uint64_t{1} << 22;

stats::BinningOptions CampaignBinningOptions() {
  stats::BinningOptions o;
  o.max_head_cells = 1024;  // dof 1023: 9.1e7 draws at alpha 1e-6 for TV 1e-3 (statistics.md 5.4)
  o.max_tail_cells = 256;
  o.hash_buckets = 64;
  return o;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

// The jittered row of a perturbation attempt: every finite logit moves by scale * (2u - 1).
std::vector<float> Jitter(const std::vector<float>& row, uint64_t seed, double scale) {
  std::vector<float> out = row;
  uint64_t state = seed;
  for (float& x : out) {
    state += 0x9E3779B97F4A7C15ULL;
    const double u = (static_cast<double>(SplitMix64(state) >> 11) + 0.5) * 0x1.0p-53;
    if (std::isfinite(x)) x = static_cast<float>(double(x) + scale * (2.0 * u - 1.0));
  }
  return out;
}

}  // namespace

uint64_t CaseSeed(uint64_t campaign_seed, const std::string& case_name) {
  return SplitMix64(campaign_seed ^ SplitMix64(Fnv1a(case_name)));
}

Result<PreparedCase> PrepareCase(const CaseSpec& spec, const Profile& profile, uint64_t case_seed,
                                 uint64_t draw_case_seed, const CaseBudget& budget) {
  PreparedCase pc;
  CaseResult& r = pc.result;
  r.name = spec.name;
  r.row = spec.row;
  r.row_seed = SplitMix64(case_seed ^ 0x1);
  r.params = spec.params;
  r.params.seed = SplitMix64(draw_case_seed ^ 0x2);
  r.params.offset = 0;
  r.profile = std::string(profile.name);
  r.tv = budget.tv;
  r.alpha_plan = budget.alpha_per_test;
  r.max_draws = budget.max_draws;

  auto row = MakeRow(spec.row, r.row_seed);
  if (!row.ok()) return Error{row.error().code, "case " + spec.name + ": " + row.error().message};
  pc.row = std::move(*row);
  r.vocab = static_cast<int64_t>(pc.row.size());

  if (auto bad = ValidateParams(r.params, profile)) {
    pc.skip = true;
    r.status = CaseStatus::kSkipped;
    r.reason = "params invalid under profile " + r.profile + ": " + bad->message;
    return pc;
  }
  auto dist = ComputeDistribution(LogitsView::Fp32(pc.row), r.params, profile);
  if (!dist.ok()) return Error{dist.error().code, "case " + spec.name + ": reference: " + dist.error().message};
  r.ambiguous = dist->ambiguous;
  if (!dist->ambiguous.empty()) {
    if (budget.ambiguous == AmbiguousAction::kSkip) {
      pc.skip = true;
      r.status = CaseStatus::kSkipped;
      r.reason = std::to_string(dist->ambiguous.size()) +
                 " ambiguous token(s) (fp32 could flip their keep/drop decision); suite says skip";
      return pc;
    }
    const std::vector<float> original = pc.row;
    double scale = kFirstPerturbScale;
    bool cleared = false;
    const uint32_t attempts = budget.ambiguous == AmbiguousAction::kPerturb ? kMaxPerturbAttempts : 0;
    for (uint32_t attempt = 1; attempt <= attempts; ++attempt, scale *= 4) {
      std::vector<float> jittered = Jitter(original, SplitMix64(case_seed ^ (0x100 + attempt)), scale);
      auto d = ComputeDistribution(LogitsView::Fp32(jittered), r.params, profile);
      r.perturb_attempts = attempt;
      r.perturb_scale = scale;
      if (d.ok() && d->ambiguous.empty()) {
        pc.row = std::move(jittered);
        dist = std::move(d);
        cleared = true;
        break;
      }
    }
    r.perturbed = cleared;
    if (!cleared) {
      // Condition on the firm decisions of the original row: ambiguous tokens leave the test (their draws are set
      // apart), p0 is renormalized over the unambiguous kept tokens. Valid because every profile renormalizes
      // proportionally: whether an ambiguous token is kept changes only the normalizer of the others.
      pc.row = original;
      dist = ComputeDistribution(LogitsView::Fp32(pc.row), r.params, profile);
      if (!dist.ok()) return Error{dist.error().code, "case " + spec.name + ": reference: " + dist.error().message};
      r.perturb_attempts = 0;
      r.perturb_scale = 0.0;
      r.conditioned = true;
      pc.excluded = dist->ambiguous;
    }
  }
  pc.p0 = dist->Dense();
  for (int32_t t : pc.excluded) pc.p0[static_cast<size_t>(t)] = 0.0;
  if (std::none_of(pc.p0.begin(), pc.p0.end(), [](double p) { return p > 0; })) {
    pc.skip = true;
    r.status = CaseStatus::kSkipped;
    r.reason = "every kept token is ambiguous (" + std::to_string(r.ambiguous.size()) + "): nothing firm to judge";
    return pc;
  }
  r.greedy = dist->greedy;
  r.kept = static_cast<int64_t>(std::count_if(pc.p0.begin(), pc.p0.end(), [](double p) { return p > 0; }));

  // Plan: cells of the head binning at the cap, then the draws for TV at that many cells.
  const stats::BinningOptions bopts = CampaignBinningOptions();
  uint64_t draws = budget.min_draws;
  uint64_t cells = 1;
  if (r.kept >= 2) {
    const Result<stats::BinningPlan> at_cap = PlanBinnings(pc.p0, double(budget.max_draws), bopts);
    if (!at_cap.ok()) return InternalError("case " + spec.name + ": binning: " + at_cap.error().message);
    cells = std::max<uint64_t>(at_cap->head.cells.size(), 2);
    const Result<stats::DrawPlan> plan =
        stats::PlanDrawsForTotalVariation(budget.tv, budget.alpha_per_test, budget.power, cells);
    if (!plan.ok()) return plan.error().WithContext("case " + spec.name + ": plan");
    // Saturate: a tiny TV can plan more draws than 2^64 (or inf); the cap then binds, never a wrapped count.
    r.planned_draws = plan->draws < 1.8e19 ? static_cast<uint64_t>(std::ceil(plan->draws))
                                           : std::numeric_limits<uint64_t>::max();
    draws = std::clamp(r.planned_draws, budget.min_draws, budget.max_draws);
  } else {
    // One kept token: support check only. N draws see a leak of mass tv with probability 1 - (1 - tv)^N.
    const double needed = std::ceil(std::log(1.0 / (1.0 - budget.power)) / budget.tv);
    r.planned_draws = needed < 1.8e19 ? static_cast<uint64_t>(needed) : std::numeric_limits<uint64_t>::max();
    draws = std::clamp(r.planned_draws, budget.min_draws, budget.max_draws);
  }
  r.draws = draws;
  Result<stats::BinningPlan> binning = PlanBinnings(pc.p0, double(draws), bopts);
  if (!binning.ok()) return InternalError("case " + spec.name + ": binning: " + binning.error().message);
  pc.binning = std::move(*binning);
  if (r.kept >= 2 && pc.binning.head.usable()) {
    auto power = stats::PowerOfRunForTotalVariation(budget.tv, budget.alpha_per_test, pc.binning.head.cells.size(),
                                                    double(draws));
    r.achieved_power = power.ok() ? *power : 0.0;
  } else {
    r.achieved_power = 1.0 - std::pow(1.0 - budget.tv, double(draws));
  }
  return pc;
}

void EvaluateCase(PreparedCase& pc, const std::vector<uint64_t>& all_draws, uint64_t invalid_draws,
                  const std::string& sampler_error) {
  CaseResult& r = pc.result;
  std::vector<uint64_t> histogram = all_draws;
  r.ambiguous_draws = 0;
  for (int32_t t : pc.excluded) {
    r.ambiguous_draws += histogram[static_cast<size_t>(t)];
    histogram[static_cast<size_t>(t)] = 0;
  }
  const CaseEvidence evidence{r, pc.p0, pc.binning, histogram, invalid_draws, sampler_error};
  if (Status st = RunCaseChecks(evidence, r); !st.ok()) {
    r.status = CaseStatus::kError;
    r.reason = st.error().message;
  }
  ComputeCasePValue(r);
}

MachineInfo DetectMachine() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.hostname = host;
  struct utsname u {};
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = Trim(line.substr(line.find(':') + 1));
      break;
    }
  }
  m.cores = std::thread::hardware_concurrency();
  return m;
}

std::optional<std::string> DetectGpu() { return DescribeGpus(); }

std::optional<std::string> DetectGitRevision() {
  const std::string revision = BuildGitRevision();
  if (revision.empty()) return std::nullopt;
  return revision;
}

std::string NowIso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<CampaignReport> RunCampaign(const Suite& suite, const CampaignOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // The sampler and the judged profile.
  std::string judged = !options.profile.empty() ? options.profile : suite.profile;
  if (!judged.empty() && !FindProfile(judged)) {
    std::string known;
    for (const Profile* p : AllProfiles()) known += (known.empty() ? "" : ", ") + std::string(p->name);
    return InvalidArgument("unknown profile \"" + judged + "\" (known: " + known + ")");
  }
  SamplerOptions sampler_options;
  sampler_options.profile = judged.empty() ? "vllm" : judged;
  auto first = MakeSampler(options.sampler_spec, sampler_options);
  if (!first.ok()) return first.error();
  if (judged.empty()) {
    judged = (*first)->GetCapabilities().profile;
    if (judged.empty() || !FindProfile(judged)) judged = "vllm";
  }
  const Profile& default_profile = *FindProfile(judged);

  CampaignReport report;
  report.samplecheck_version = options.version;
  report.suite = suite.name;
  report.suite_source = suite.source;
  report.sampler = (*first)->Name();
  report.sampler_spec = options.sampler_spec;
  report.profile = judged;
  if (options.seed) {
    report.seed = *options.seed;
  } else if (suite.fresh_seed) {
    std::random_device rd;
    report.seed = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  } else {
    report.seed = suite.seed;
  }
  report.draw_seed = options.draw_seed.value_or(report.seed);
  report.alpha = suite.alpha;
  report.tv = options.tv.value_or(suite.tv);
  report.power = suite.power;
  report.machine = DetectMachine();
  report.gpu = DetectGpu();
  report.git_revision = DetectGitRevision();
  report.started = NowIso8601();
  report.command_line = options.command_line;
  if (!(report.tv > 0 && report.tv <= 0.5)) return InvalidArgument("--tv must be in (0, 0.5]");

  report.evidence = options.evidence;
  report.planned_cases = suite.cases.size();

  // Prepare every case before drawing: input errors stop the run before it starts.
  const double alpha_per_test = suite.alpha / (double(suite.cases.size()) * kPlannedTestsPerCase);
  std::vector<PreparedCase> prepared;
  prepared.reserve(suite.cases.size());
  std::vector<bool> resumed(suite.cases.size(), false);
  uint64_t total_draws = 0;
  CampaignPlan plan;
  plan.identity = &report;
  plan.cases = suite.cases.size();
  for (const CaseSpec& cs : suite.cases) {
    CaseBudget budget;
    budget.alpha_per_test = alpha_per_test;
    budget.tv = options.tv.value_or(cs.tv.value_or(suite.tv));
    budget.power = suite.power;
    budget.max_draws = options.max_draws.value_or(cs.max_draws ? cs.max_draws : suite.max_draws);
    budget.min_draws = std::min(suite.min_draws, budget.max_draws);
    budget.ambiguous = cs.ambiguous.value_or(suite.ambiguous);
    const Profile& profile = cs.profile.empty() ? default_profile : *FindProfile(cs.profile);
    auto pc = PrepareCase(cs, profile, CaseSeed(report.seed, cs.name), CaseSeed(report.draw_seed, cs.name), budget);
    if (!pc.ok()) return pc.error();
    const auto done = std::find_if(options.finished.begin(), options.finished.end(),
                                   [&](const CaseResult& c) { return c.name == cs.name; });
    if (done != options.finished.end()) {
      // A case of the earlier run is reused only if it was planned exactly as this run plans it.
      if (done->row_seed != pc->result.row_seed || done->params.seed != pc->result.params.seed ||
          done->draws != pc->result.draws || done->profile != pc->result.profile) {
        return InvalidArgument("cannot resume: case " + cs.name +
                               " of the journal was planned differently (seed, draws or profile); start afresh");
      }
      pc->result = *done;
      resumed[prepared.size()] = true;
      ++plan.resumed;
    } else if (pc->skip) {
      ++plan.skipped;
    } else {
      total_draws += pc->result.draws;
    }
    prepared.push_back(std::move(*pc));
  }
  plan.draws = total_draws;

  // Workers: one sampler each (samplers need not be thread-safe).
  unsigned jobs = options.jobs;
  if (jobs == 0) jobs = (*first)->GetCapabilities().parallel_instances ? std::thread::hardware_concurrency() : 1;
  jobs = std::clamp<unsigned>(jobs, 1, static_cast<unsigned>(std::max<size_t>(prepared.size(), 1)));
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::move(*first));
  for (unsigned j = 1; j < jobs; ++j) {
    auto s = MakeSampler(options.sampler_spec, sampler_options);
    if (!s.ok()) return s.error();
    samplers.push_back(std::move(*s));
  }

  // The sampler's throughput on the first case to draw (a short count whose draws are discarded), so the plan
  // states a time before hours of drawing start.
  if (options.on_plan) {
    for (size_t i = 0; i < prepared.size() && total_draws > 0; ++i) {
      if (prepared[i].skip || resumed[i]) continue;
      const PreparedCase& pc = prepared[i];
      const uint64_t probe = std::min<uint64_t>(pc.result.draws, uint64_t{1} << 16);
      std::vector<uint64_t> histogram(pc.row.size(), 0);
      uint64_t invalid = 0;
      const auto p0 = std::chrono::steady_clock::now();
      const Status st = samplers[0]->CountDraws(pc.row, pc.result.params, probe, histogram, &invalid);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
      if (st.ok() && seconds > 0) {
        plan.draws_per_second = double(probe) / seconds * jobs;
        plan.estimated_seconds = double(total_draws) / plan.draws_per_second;
      }
      break;
    }
    if (Status st = options.on_plan(plan); !st.ok()) return st.error();
  }

  Progress progress(total_draws, prepared.size() - plan.resumed, options.progress);
  auto stopped = [&]() { return options.stop != nullptr && options.stop->load(); };
  std::vector<uint8_t> finished(prepared.size(), 0);  // bytes, not bits: workers write their own entries
  std::mutex done_mu;
  Status done_error;
  std::atomic<bool> journal_failed{false};
  std::atomic<size_t> next{0};
  auto worker = [&](Sampler& sampler) {
    for (size_t i = next++; i < prepared.size(); i = next++) {
      if (resumed[i]) {
        finished[i] = 1;
        continue;
      }
      if (stopped() || journal_failed) break;
      PreparedCase& pc = prepared[i];
      CaseResult& r = pc.result;
      const auto c0 = std::chrono::steady_clock::now();
      if (pc.skip) {
        // The checks' fields of a case they did not judge: what they write for no evidence (no draw, no binning).
        const stats::BinningPlan none;
        const CaseEvidence evidence{r, {}, none, {}, 0, ""};
        (void)RunCaseChecks(evidence, r);
      } else {
        std::vector<uint64_t> histogram(pc.row.size(), 0);
        uint64_t invalid = 0;
        std::string sampler_error;
        SamplingParams params = r.params;
        for (uint64_t done = 0; done < r.draws;) {
          if (stopped() || journal_failed) break;
          const uint64_t n = std::min(kDrawChunk, r.draws - done);
          params.offset = r.params.offset + done;
          Status st = sampler.CountDraws(pc.row, params, n, histogram, &invalid);
          if (!st.ok()) {
            sampler_error = st.error().ToString();
            break;
          }
          done += n;
          progress.AddDraws(n);
        }
        // Stopped mid-case: the case is left out (a signal also kills the sampler's children, which then fail).
        if (stopped() || journal_failed) break;
        EvaluateCase(pc, histogram, invalid, sampler_error);
      }
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      // The progress line: the case's Bonferroni p (Holm over the cases follows the last case) and hard failures.
      std::ostringstream detail;
      bool hard_failure = false;
      if (pc.skip || r.status == CaseStatus::kError) {
        detail << r.reason;
      } else {
        std::string failures;
        for (const CheckOutcome& o : r.outcomes) {
          if (!o.Fails()) continue;
          hard_failure = true;
          failures += "  " + o.test + " FAILED (" + std::to_string(o.violations) + ")";
        }
        detail << "p=" << r.p_value << "  draws=" << r.draws << failures;
      }
      const char* status = pc.skip ? "skipped" : (hard_failure || r.status == CaseStatus::kError) ? "FAIL" : "done";
      progress.CaseDone(r.name, status, detail.str(), r.seconds);
      std::lock_guard<std::mutex> lock(done_mu);
      finished[i] = 1;
      if (options.on_case_done && done_error.ok()) {
        done_error = options.on_case_done(r);
        if (!done_error.ok()) journal_failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker, std::ref(*samplers[j]));
  worker(*samplers[0]);
  for (auto& t : threads) t.join();
  progress.Finish();

  if (!done_error.ok()) return done_error.error();
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (finished[i]) report.cases.push_back(std::move(prepared[i].result));
  }
  report.interrupted = report.cases.size() < prepared.size();
  ApplyCampaignVerdict(report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace samplecheck::harness
