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
#include <unordered_map>

#include "build_info.h"
#include "campaign_work.h"
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/campaign/checks.h"
#include "samplecheck/campaign/generated.h"
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
  r.equivalence_eps = budget.equivalence_eps;
  r.equivalence_chi2_eps = budget.equivalence_chi2_eps;
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
  if (!dist.ok() && dist.error().code == ErrorCode::kInvalidRow) {
    // An unsamplable row (NaN, every logit -inf): every draw must be the invalid marker, any token fails the case.
    // A faulty sampler shows it at its first draw; min_draws is plenty.
    r.unsamplable = true;
    r.kept = 0;
    pc.p0.assign(pc.row.size(), 0.0);
    r.draws = std::min(budget.min_draws, budget.max_draws);
    r.planned_draws = r.draws;
    r.achieved_power = 1.0;
    return pc;
  }
  if (!dist.ok()) return Error{dist.error().code, "case " + spec.name + ": reference: " + dist.error().message};
  r.ambiguous = dist->ambiguous;
  r.numeric_drift = dist->numeric_drift;
  std::sort(r.numeric_drift.begin(), r.numeric_drift.end());
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

  r.max_draws = budget.max_draws;
  if (Status st = PlanCaseDraws(pc, budget); !st.ok()) return st.error();
  return pc;
}

Status PlanCaseDraws(PreparedCase& pc, const CaseBudget& budget) {
  CaseResult& r = pc.result;
  r.max_draws = budget.max_draws;
  // Plan: cells of the head binning at the cap, then the draws for TV at that many cells, at the upper tail's half
  // of the two-sided Pearson test's alpha.
  const stats::BinningOptions bopts = CampaignBinningOptions();
  uint64_t draws = budget.min_draws;
  uint64_t cells = 1;
  if (r.kept >= 2) {
    const Result<stats::BinningPlan> at_cap = PlanBinnings(pc.p0, double(budget.max_draws), bopts);
    if (!at_cap.ok()) return InternalError("case " + r.name + ": binning: " + at_cap.error().message);
    cells = std::max<uint64_t>(at_cap->head.cells.size(), 2);
    const Result<stats::DrawPlan> plan =
        stats::PlanDrawsForTotalVariation(budget.tv, budget.alpha_per_test / 2, budget.power, cells);
    if (!plan.ok()) return plan.error().WithContext("case " + r.name + ": plan");
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
  if (!binning.ok()) return InternalError("case " + r.name + ": binning: " + binning.error().message);
  pc.binning = std::move(*binning);
  if (r.kept >= 2 && pc.binning.head.usable()) {
    auto power = stats::PowerOfRunForTotalVariation(budget.tv, budget.alpha_per_test / 2, pc.binning.head.cells.size(),
                                                    double(draws));
    r.achieved_power = power.ok() ? *power : 0.0;
  } else {
    r.achieved_power = 1.0 - std::pow(1.0 - budget.tv, double(draws));
  }
  return Status::Ok();
}

void EvaluateCase(PreparedCase& pc, const std::vector<uint64_t>& all_draws, uint64_t invalid_draws,
                  const std::string& sampler_error, const BatchEvidence* batch, const AgreementEvidence* agreement) {
  CaseResult& r = pc.result;
  std::vector<uint64_t> histogram = all_draws;
  r.ambiguous_draws = 0;
  r.drift_draws = 0;
  for (int32_t t : pc.excluded) {
    r.ambiguous_draws += histogram[static_cast<size_t>(t)];
    if (std::binary_search(r.numeric_drift.begin(), r.numeric_drift.end(), t)) {
      r.drift_draws += histogram[static_cast<size_t>(t)];
    }
    histogram[static_cast<size_t>(t)] = 0;
  }
  CaseEvidence evidence{r, pc.p0, pc.binning, histogram, invalid_draws, sampler_error, batch, agreement};
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

namespace {

size_t BatchRows(const CaseSpec& cs) {
  size_t rows = 0;
  for (const BatchEntry& e : cs.batch) rows += e.copies;
  return rows;
}

// The rows of a batch case, each a prepared case "<name>/b<k>" in the batch's (shuffled) order. Copies of an entry
// share the entry's row and have consecutive draw seeds; every row is drawn the case's max_draws times (one token
// per row per call); a row's partner is the next copy of its entry, else the next row of the batch.
Result<std::vector<PreparedCase>> PrepareBatch(const CaseSpec& cs, const Profile& profile, uint64_t seed,
                                               uint64_t draw_seed, CaseBudget budget) {
  std::vector<std::pair<uint32_t, uint32_t>> slots;  // (entry, copy)
  for (uint32_t e = 0; e < cs.batch.size(); ++e) {
    for (uint32_t j = 0; j < cs.batch[e].copies; ++j) slots.emplace_back(e, j);
  }
  uint64_t state = CaseSeed(seed, cs.name + "/order");
  for (size_t i = slots.size(); i > 1; --i) {  // Fisher-Yates with the harness's splitmix stream
    state += 0x9E3779B97F4A7C15ULL;
    std::swap(slots[i - 1], slots[SplitMix64(state) % i]);
  }
  budget.min_draws = budget.max_draws;  // every row of a batch is drawn by the same calls
  std::vector<PreparedCase> rows;
  const auto size = static_cast<uint32_t>(slots.size());
  for (uint32_t k = 0; k < size; ++k) {
    const auto [e, j] = slots[k];
    CaseSpec sub = cs;
    sub.batch.clear();
    sub.name = cs.name + "/b" + std::to_string(k);
    sub.row = cs.batch[e].row;
    sub.params = cs.batch[e].params;
    const std::string entry = cs.name + "/e" + std::to_string(e);
    auto pc = PrepareCase(sub, profile, CaseSeed(seed, entry), CaseSeed(draw_seed, entry), budget);
    if (!pc.ok()) return pc.error();
    pc->result.params.seed += j;  // consecutive seeds: a stream must not repeat itself across them either
    pc->result.batch = {cs.name, k, size, e, j, ""};
    if (!rows.empty() && pc->row.size() != rows.front().row.size()) {
      return InvalidArgument("batch case " + cs.name + ": its rows have " + std::to_string(rows.front().row.size()) +
                             " and " + std::to_string(pc->row.size()) +
                             " tokens; a batch is one vocabulary (give every entry the same vocab)");
    }
    rows.push_back(std::move(*pc));
  }
  for (PreparedCase& pc : rows) {
    const BatchPosition& b = pc.result.batch;
    uint32_t partner = (b.position + 1) % size;
    if (cs.batch[b.entry].copies > 1) {
      const uint32_t next_copy = (b.copy + 1) % cs.batch[b.entry].copies;
      for (uint32_t k = 0; k < size; ++k) {
        if (slots[k].first == b.entry && slots[k].second == next_copy) partner = k;
      }
    }
    pc.result.batch.partner = size > 1 ? cs.name + "/b" + std::to_string(partner) : "";
  }
  return rows;
}

// The shipped sampling call behind the counting fast path: the case's first draws (at most 2^16) counted by
// CountDraws and drawn by Sample on replicated rows at the same seeds and offsets. For a deterministic sampler the
// first differing draw is found by bisection over CountDraws of prefixes.
struct Agreement {
  AgreementEvidence evidence;
  std::vector<uint64_t> fast, sampled;
  std::string error;  // the sampler failed on one of the two paths
};

Agreement MeasureAgreement(Sampler& sampler, const PreparedCase& pc, bool deterministic, bool gpu) {
  Agreement a;
  const std::span<const float> row = pc.row;
  const SamplingParams& params = pc.result.params;
  // 2^16 draws on a GPU. A CPU sampler (a plugin, a process) computes a row's distribution in every sampling call,
  // so 4 MiB of replicated rows at most: 1024 draws up to V = 1024, 64 at least (V = 128256).
  const uint64_t by_bytes = (uint64_t{1} << 22) / (4 * std::max<size_t>(row.size(), 1));
  const uint64_t m = std::min<uint64_t>(pc.result.draws,
                                        gpu ? uint64_t{1} << 16 : std::clamp<uint64_t>(by_bytes, 64, 1024));
  const size_t vocab = row.size();
  a.fast.assign(vocab, 0);
  a.sampled.assign(vocab, 0);
  uint64_t fast_invalid = 0;
  if (Status st = sampler.CountDraws(row, params, m, a.fast, &fast_invalid); !st.ok()) {
    a.error = st.error().ToString();
    return a;
  }
  // The sampling call on the repeated row: draw i at offset + i.
  std::vector<int32_t> sequence(m, kInvalidToken);
  if (Status st = sampler.SampleRepeated(row, params, sequence); !st.ok()) {
    a.error = st.error().ToString();
    return a;
  }
  uint64_t sampled_invalid = 0;
  auto histogram_of = [&](uint64_t lo, uint64_t hi, std::vector<uint64_t>& h, uint64_t& invalid) {
    for (uint64_t i = lo; i < hi; ++i) {
      const int32_t t = sequence[i];
      if (t >= 0 && static_cast<size_t>(t) < vocab) {
        ++h[static_cast<size_t>(t)];
      } else {
        ++invalid;
      }
    }
  };
  histogram_of(0, m, a.sampled, sampled_invalid);
  a.evidence.draws = m;
  a.evidence.deterministic = deterministic;
  if (deterministic && (a.fast != a.sampled || fast_invalid != sampled_invalid)) {
    uint64_t lo = 0, hi = m;  // the first differing draw lies in [lo, hi)
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      SamplingParams prefix = params;
      prefix.offset = params.offset + lo;
      std::vector<uint64_t> counted(vocab, 0), drawn(vocab, 0);
      uint64_t counted_invalid = 0, drawn_invalid = 0;
      if (!sampler.CountDraws(row, prefix, mid - lo, counted, &counted_invalid).ok()) break;
      histogram_of(lo, mid, drawn, drawn_invalid);
      if (counted != drawn || counted_invalid != drawn_invalid) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    SamplingParams one = params;
    one.offset = params.offset + lo;
    std::vector<uint64_t> counted(vocab, 0);
    uint64_t counted_invalid = 0;
    (void)sampler.CountDraws(row, one, 1, counted, &counted_invalid);
    const auto at = std::max_element(counted.begin(), counted.end());
    a.evidence.first_difference = static_cast<int64_t>(lo);
    a.evidence.fast_token = counted_invalid > 0 || *at == 0 ? kInvalidToken : static_cast<int32_t>(at - counted.begin());
    a.evidence.sampled_token = sequence[lo];
  }
  a.evidence.fast = a.fast;
  a.evidence.sampled = a.sampled;
  return a;
}

struct BatchDraws {
  std::vector<std::vector<int32_t>> sequence;          // per row: draw i at offset + i
  std::vector<std::vector<int32_t>> alone;             // deterministic samplers: the first draws alone
  std::vector<std::vector<uint64_t>> alone_histogram;  // otherwise: as many draws alone at other offsets
  std::string sampler_error;
};

// Draws every row of a batch through SampleReplicated (Sample on K copies of the batch): each call holds K replicas
// (draws c*K .. c*K + K - 1 of every row, replica k at offset + c*K + k), at most 4096 rows and 64 MiB of copied
// logits per call. Then the rows alone:
// deterministic samplers draw the first draws of each row in calls of one row (batch size 1) at the same offsets;
// the others count as many draws of the row alone at offsets after the batch's.
BatchDraws DrawBatch(Sampler& sampler, const std::vector<PreparedCase*>& rows, bool deterministic,
                     const std::function<bool()>& halted, Progress& progress) {
  BatchDraws out;
  if (rows.empty()) return out;
  const size_t b = rows.size();
  const size_t vocab = rows.front()->row.size();
  const uint64_t draws = rows.front()->result.draws;
  out.sequence.assign(b, std::vector<int32_t>(draws, kInvalidToken));
  constexpr uint64_t kMaxRows = 4096;
  constexpr uint64_t kMaxBytes = uint64_t{64} << 20;
  const uint64_t by_memory = std::max<uint64_t>(1, kMaxBytes / (sizeof(float) * b * std::max<size_t>(vocab, 1)));
  const uint64_t replicas = std::max<uint64_t>(1, std::min({kMaxRows / b, by_memory, draws}));
  std::vector<float> logits(b * vocab);
  for (size_t r = 0; r < b; ++r) std::copy(rows[r]->row.begin(), rows[r]->row.end(), logits.begin() + r * vocab);
  std::vector<SamplingParams> params(replicas * b);
  std::vector<int32_t> tokens(replicas * b);
  for (uint64_t done = 0; done < draws && !halted();) {
    const uint64_t n = std::min(replicas, draws - done);
    for (uint64_t k = 0; k < n; ++k) {
      for (size_t r = 0; r < b; ++r) {
        params[k * b + r] = rows[r]->result.params;
        params[k * b + r].offset = rows[r]->result.params.offset + done + k;
      }
    }
    const RowBatch batch{logits.data(), static_cast<int64_t>(b), static_cast<int64_t>(vocab),
                         static_cast<int64_t>(vocab)};
    Status st = sampler.SampleReplicated(batch, n, std::span(params).first(n * b), std::span(tokens).first(n * b));
    if (!st.ok()) {
      out.sampler_error = st.error().ToString();
      return out;
    }
    for (uint64_t k = 0; k < n; ++k) {
      for (size_t r = 0; r < b; ++r) out.sequence[r][done + k] = tokens[k * b + r];
    }
    done += n;
    progress.AddDraws(n * b);
  }
  if (halted()) return out;
  if (deterministic) {
    const uint64_t m = std::min<uint64_t>(draws, std::clamp<uint64_t>(kMaxRows / b, 8, 256));
    out.alone.assign(b, std::vector<int32_t>(m, kInvalidToken));
    for (size_t r = 0; r < b && !halted(); ++r) {
      SamplingParams one = rows[r]->result.params;
      const RowBatch single{rows[r]->row.data(), 1, static_cast<int64_t>(vocab), static_cast<int64_t>(vocab)};
      for (uint64_t i = 0; i < m; ++i) {
        one.offset = rows[r]->result.params.offset + i;
        int32_t token = kInvalidToken;
        Status st = sampler.Sample(single, std::span(&one, 1), std::span(&token, 1));
        if (!st.ok()) {
          out.sampler_error = st.error().ToString();
          return out;
        }
        out.alone[r][i] = token;
      }
    }
  } else {
    out.alone_histogram.assign(b, std::vector<uint64_t>(vocab, 0));
    for (size_t r = 0; r < b && !halted(); ++r) {
      SamplingParams later = rows[r]->result.params;
      later.offset += draws;  // independent of the batch's draws
      uint64_t invalid = 0;
      Status st = sampler.CountDraws(rows[r]->row, later, draws, out.alone_histogram[r], &invalid);
      if (!st.ok()) {
        out.sampler_error = st.error().ToString();
        return out;
      }
    }
  }
  return out;
}

// Judges every row of a drawn batch with the batch's evidence.
void EvaluateBatch(const std::vector<PreparedCase*>& rows, const BatchDraws& draws, bool deterministic) {
  for (size_t r = 0; r < rows.size(); ++r) {
    PreparedCase& pc = *rows[r];
    std::vector<uint64_t> histogram(pc.row.size(), 0);
    uint64_t invalid = 0;
    const std::vector<int32_t> none;
    const std::vector<int32_t>& sequence = r < draws.sequence.size() ? draws.sequence[r] : none;
    for (int32_t t : sequence) {
      if (t >= 0 && static_cast<size_t>(t) < histogram.size()) {
        ++histogram[static_cast<size_t>(t)];
      } else {
        ++invalid;
      }
    }
    BatchEvidence evidence;
    evidence.deterministic = deterministic;
    evidence.sequence = sequence;
    for (size_t o = 0; o < rows.size(); ++o) {
      if (rows[o]->result.name == pc.result.batch.partner && o != r && o < draws.sequence.size()) {
        evidence.partner_sequence = draws.sequence[o];
        evidence.partner_p0 = rows[o]->p0;
      }
    }
    if (r < draws.alone.size()) evidence.alone = draws.alone[r];
    if (r < draws.alone_histogram.size()) evidence.alone_histogram = draws.alone_histogram[r];
    EvaluateCase(pc, histogram, invalid, draws.sampler_error, draws.sampler_error.empty() ? &evidence : nullptr);
  }
}

}  // namespace

namespace {

// The cap a row case gets when the time budget affords full power (the suite's budget cap; --max-draws still caps).
CaseBudget FullBudget(CaseBudget b, const Suite& suite, const CampaignOptions& options) {
  b.max_draws = std::max(b.max_draws, suite.budget_max_draws);
  if (options.max_draws) b.max_draws = std::min(b.max_draws, *options.max_draws);
  return b;
}

bool RowCase(const PreparedCase& pc) { return pc.result.batch.size == 0 && !pc.skip && !pc.result.unsamplable; }
}  // namespace

bool Ranged(const PreparedCase& pc, bool resumed) {
  return pc.result.batch.size == 0 && !pc.skip && !resumed && pc.result.draws > 0;
}

Result<CampaignWork> PrepareWork(const Suite& suite, const CampaignOptions& options, const std::string& judged,
                                 const std::string& sampler_name) {
  CampaignWork work;
  work.default_profile = FindProfile(judged);
  CampaignReport& report = work.report;
  StampReport(report, suite, options, judged);
  report.sampler = sampler_name;
  report.sampler_spec = options.sampler_spec;
  if (options.seed) {
    report.seed = *options.seed;
  } else if (suite.fresh_seed) {
    std::random_device rd;
    report.seed = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  } else {
    report.seed = suite.seed;
  }
  report.draw_seed = options.draw_seed.value_or(report.seed);
  report.max_draws_override = options.max_draws;
  if (!(report.tv > 0 && report.tv <= 0.5)) return InvalidArgument("--tv must be in (0, 0.5]");

  report.evidence = options.evidence;
  if (!(options.equivalence_eps >= 0 && options.equivalence_eps < 1)) {
    std::ostringstream v;
    v << options.equivalence_eps;
    return InvalidArgument("--equivalence must be a total variation in (0, 1), not " + v.str());
  }
  if (!(options.equivalence_chi2_eps >= 0 && std::isfinite(options.equivalence_chi2_eps))) {
    std::ostringstream v;
    v << options.equivalence_chi2_eps;
    return InvalidArgument("--equivalence-chi2 must be a positive finite chi-square divergence, not " + v.str());
  }
  if (options.equivalence_chi2_eps > 0 && options.equivalence_eps == 0) {
    return InvalidArgument("--equivalence-chi2 needs --equivalence (the TV to certify)");
  }
  report.equivalence_eps = options.equivalence_eps;
  report.equivalence_chi2_eps = options.equivalence_chi2_eps;

  // Prepare every case before drawing: input errors stop the run before it starts. A batch case becomes one
  // prepared case per batch row; a unit is what a worker draws at once (one row case, or one batch).
  size_t judged_cases = 0;
  // The suite's cases, then its generated block (a fixed seed, or the campaign's for "fresh"), then --generated.
  std::vector<CaseSpec> cases = suite.cases;
  if (suite.generated > 0) {
    const uint64_t gen_seed = suite.generated_seed.value_or(report.seed);
    for (CaseSpec& cs : GenerateCases(gen_seed, suite.generated, *work.default_profile, "gen")) {
      cs.max_draws = suite.generated_max_draws;
      cases.push_back(std::move(cs));
    }
  }
  if (options.generated > 0) {
    for (CaseSpec& cs : GenerateCases(report.seed ^ 0xC11, options.generated, *work.default_profile, "cli-gen")) {
      cases.push_back(std::move(cs));
    }
  }
  for (const CaseSpec& cs : cases) judged_cases += cs.batch.empty() ? 1 : BatchRows(cs);
  report.planned_cases = judged_cases;
  const double alpha_per_test = suite.alpha / (double(judged_cases) * kPlannedTestsPerCase);
  std::vector<PreparedCase>& prepared = work.prepared;
  prepared.reserve(judged_cases);
  CampaignPlan& plan = work.plan;
  plan.cases = judged_cases;
  auto budget_of = [&](const CaseSpec& cs) {
    CaseBudget budget;
    budget.alpha_per_test = alpha_per_test;
    budget.tv = options.tv.value_or(cs.tv.value_or(suite.tv));
    budget.power = suite.power;
    // --max-draws caps: it lowers a case's cap, never raises it (a batch case keeps its small one).
    budget.max_draws = cs.max_draws ? cs.max_draws : suite.max_draws;
    if (options.max_draws) budget.max_draws = std::min(budget.max_draws, *options.max_draws);
    budget.min_draws = std::min(suite.min_draws, budget.max_draws);
    budget.ambiguous = cs.ambiguous.value_or(suite.ambiguous);
    budget.equivalence_eps = options.equivalence_eps;
    budget.equivalence_chi2_eps = options.equivalence_chi2_eps;
    return budget;
  };
  const double budget_seconds = options.budget_seconds.value_or(suite.budget_seconds);
  // Adds one prepared case (reused from the journal when it finished there) and says whether it needs drawing.
  auto add = [&](PreparedCase pc, const CaseBudget& budget) -> Result<bool> {
    work.budgets.push_back(budget);
    const auto done = std::find_if(options.finished.begin(), options.finished.end(),
                                   [&](const CaseResult& c) { return c.name == pc.result.name; });
    bool reuse = false;
    if (done != options.finished.end()) {
      // A case of the earlier run is reused only if it is the same case spec (a suite edited since: report_check.h)
      if (std::string diff = CaseSpecDifference(*done, pc.result); !diff.empty()) {
        return InvalidArgument("cannot resume: case " + pc.result.name + " changed since the journal was started (" +
                               diff + "): the suite or its rows were edited; --restart starts afresh");
      }
      // A case of the earlier run is reused only if it was planned exactly as this run plans it.
      // Its draws are this run's plan, or the plan the time budget gave the earlier run.
      bool same_draws = done->draws == pc.result.draws;
      if (!same_draws && budget_seconds > 0 && pc.result.batch.size == 0 && !pc.skip) {
        PreparedCase trial{pc.result, {}, pc.p0, {}, {}, false};
        same_draws = PlanCaseDraws(trial, FullBudget(budget, suite, options)).ok() && trial.result.draws == done->draws;
      }
      if (done->row_seed != pc.result.row_seed || done->params.seed != pc.result.params.seed || !same_draws ||
          done->profile != pc.result.profile) {
        return InvalidArgument("cannot resume: case " + pc.result.name +
                               " of the journal was planned differently (seed, draws or profile); start afresh");
      }
      pc.result = *done;
      reuse = true;
      ++plan.resumed;
    } else if (pc.skip) {
      ++plan.skipped;
    }
    work.resumed.push_back(reuse);
    prepared.push_back(std::move(pc));
    return !reuse && !prepared.back().skip;
  };
  for (const CaseSpec& cs : cases) {
    const CaseBudget budget = budget_of(cs);
    const Profile& profile = cs.profile.empty() ? *work.default_profile : *FindProfile(cs.profile);
    if (cs.batch.empty()) {
      auto pc = PrepareCase(cs, profile, CaseSeed(report.seed, cs.name), CaseSeed(report.draw_seed, cs.name), budget);
      if (!pc.ok()) return pc.error();
      auto needs = add(std::move(*pc), budget);
      if (!needs.ok()) return needs.error();
      work.units.push_back({prepared.size() - 1});
      continue;
    }
    auto batch = PrepareBatch(cs, profile, report.seed, report.draw_seed, budget);
    if (!batch.ok()) return batch.error();
    std::vector<size_t> unit;
    bool any_resumed = false, all_resumed = true;
    for (PreparedCase& pc : *batch) {
      auto needs = add(std::move(pc), budget);
      if (!needs.ok()) return needs.error();
      any_resumed = any_resumed || work.resumed.back();
      all_resumed = all_resumed && work.resumed.back();
      unit.push_back(prepared.size() - 1);
    }
    // A batch is drawn whole: a partly journaled batch (an interrupted write) is drawn again.
    if (any_resumed && !all_resumed) {
      for (size_t i : unit) {
        if (work.resumed[i]) {
          work.resumed[i] = false;
          --plan.resumed;
        }
      }
    }
    work.units.push_back(std::move(unit));
  }
  // A sharded campaign plans without a clock (every shard must plan alike): with a time budget, every row case gets
  // the draws the budget gives it when it affords full power (docs/scale.md); without one, the power plan stands.
  if (options.shard && budget_seconds > 0) {
    bool every_plan_met = true;
    for (size_t i = 0; i < prepared.size(); ++i) {
      if (!RowCase(prepared[i]) || work.resumed[i]) continue;
      if (Status st = PlanCaseDraws(prepared[i], FullBudget(work.budgets[i], suite, options)); !st.ok()) {
        return st.error();
      }
      every_plan_met = every_plan_met && prepared[i].result.draws >= prepared[i].result.planned_draws;
    }
    report.full_power = plan.full_power = every_plan_met;
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (!prepared[i].skip && !work.resumed[i]) work.total_draws += prepared[i].result.draws;
  }
  plan.draws = work.total_draws;
  return work;
}

uint64_t PlanFingerprint(const std::vector<PreparedCase>& prepared) {
  std::ostringstream os;
  os.precision(17);
  for (const PreparedCase& pc : prepared) {
    const CaseResult& r = pc.result;
    os << r.name << '|' << r.row_seed << '|' << r.params.seed << '|' << r.params.offset << '|' << r.params.temperature
       << '|' << r.params.top_k << '|' << r.params.top_p << '|' << r.params.min_p << '|' << r.draws << '|'
       << pc.row.size() << '|' << r.kept << '|' << pc.skip << '\n';
  }
  return Fnv1a(os.str());
}

namespace {

// What a worker draws at once: a whole unit (a batch, a case without draws), or the draws [begin, end) of a row
// case. Ranges are whole chunks of kDrawChunk from the case's first draw, so a case drawn in pieces (by shards, by
// devices) makes exactly the sampler calls of the case drawn at once, and the same counts.
struct WorkItem {
  size_t unit = 0;
  uint64_t begin = 0, end = 0;  // a row case's draws; 0, 0 for a whole unit
  double cost = 0.0;            // for the assignment to shards (the model below)
};
// The cost model of the assignment to shards and of the order workers take items in, in nanoseconds: a counted
// draw, a CountDraws call per token of its row, and a batch row's draw (one row of a Sample call) per token. Measured
// on standard: the exact sampler on one core of the 2-core VM, and the cuda sampler on an H200 (counted draws at
// 1.3e9/s; a batch call's time is its logits' transfer to the device). It depends on the sampler's kind alone, so
// every shard computes the same assignment; only the balance depends on it, never the counts.
struct CostModel {
  double counted_draw;
  double call_per_token;
  double sampled_draw_per_token;
};
constexpr CostModel kCpuCost{20.0, 2000.0, 2.5};
constexpr CostModel kGpuCost{0.75, 0.05, 0.8};
constexpr uint64_t kPieceDraws = kDrawChunk * 8;  // 2^25: the largest piece of a row case

std::vector<WorkItem> MakeWorkItems(const CampaignWork& work, const CostModel& model) {
  std::vector<WorkItem> items;
  for (size_t u = 0; u < work.units.size(); ++u) {
    const std::vector<size_t>& unit = work.units[u];
    const PreparedCase& first = work.prepared[unit.front()];
    const double vocab = double(first.row.size());
    if (unit.size() == 1 && Ranged(first, work.resumed[unit.front()])) {
      const uint64_t draws = first.result.draws;
      for (uint64_t b = 0; b < draws; b += kPieceDraws) {
        const uint64_t e = std::min(draws, b + kPieceDraws);
        items.push_back({u, b, e, model.counted_draw * double(e - b) +
                                      model.call_per_token * vocab * double((e - b + kDrawChunk - 1) / kDrawChunk)});
      }
      continue;
    }
    double cost = 0.0;
    for (size_t i : unit) {
      if (!work.prepared[i].skip && !work.resumed[i]) {
        cost += model.sampled_draw_per_token * double(work.prepared[i].result.draws) * vocab;
      }
    }
    items.push_back({u, 0, 0, cost});
  }
  return items;
}

// Which shard draws each item: the largest items first, each to the least loaded shard (lowest index on a tie).
// Deterministic from the plan and the shard count alone, so every shard computes the same assignment.
std::vector<uint32_t> AssignShards(const std::vector<WorkItem>& items, uint32_t count) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].cost > items[b].cost; });
  std::vector<double> load(count, 0.0);
  std::vector<uint32_t> shard_of(items.size(), 0);
  for (size_t i : order) {
    const auto least = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard_of[i] = least;
    load[least] += items[i].cost;
  }
  return shard_of;
}

SparseCounts ToSparse(const std::vector<uint64_t>& dense) {
  SparseCounts out;
  for (size_t t = 0; t < dense.size(); ++t) {
    if (dense[t] != 0) out.emplace_back(static_cast<int32_t>(t), dense[t]);
  }
  return out;
}

// The draws of one row case as they arrive from its items (possibly on several workers).
struct RowDraws {
  std::mutex mu;
  size_t pending = 0;                 // items of this case still to draw (in this process)
  std::vector<uint64_t> histogram;    // allocated by the first item to finish
  uint64_t invalid = 0;
  std::string sampler_error;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  Agreement agreement;
  bool has_agreement = false;
  double seconds = 0.0;
};

}  // namespace

Result<CampaignReport> RunCampaign(const Suite& suite, const CampaignOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // The sampler and the judged profile.
  std::string judged = !options.profile.empty() ? options.profile : suite.profile;
  if (!judged.empty() && !FindProfile(judged)) {
    std::string known;
    for (const Profile* p : AllProfiles()) known += (known.empty() ? "" : ", ") + std::string(p->name);
    return InvalidArgument("unknown profile \"" + judged + "\" (known: " + known + ")");
  }
  if (options.shard && (options.shard->count == 0 || options.shard->index >= options.shard->count)) {
    return InvalidArgument("shard " + std::to_string(options.shard->index) + "/" +
                           std::to_string(options.shard->count) + ": the index runs from 0 to the count - 1");
  }
  if (options.shard && !options.finished.empty()) {
    return InvalidArgument("--resume does not apply to a shard: run the shard again (it is deterministic)");
  }
  SamplerOptions sampler_options;
  sampler_options.profile = judged.empty() ? "vllm" : judged;
  if (!options.devices.empty()) sampler_options.device = options.devices.front();
  auto first = MakeSampler(options.sampler_spec, sampler_options);
  if (!first.ok()) return first.error();
  if (!options.devices.empty() && !(*first)->GetCapabilities().gpu) {
    return InvalidArgument("--devices splits the work of a GPU sampler over GPUs; " + (*first)->Name() +
                           " is not one");
  }
  if (judged.empty()) {
    judged = (*first)->GetCapabilities().profile;
    if (!judged.empty() && !FindProfile(judged)) {
      return InvalidArgument("sampler " + (*first)->Name() + " says it implements profile \"" + judged +
                             "\", which this samplecheck does not know (samplecheck list --profiles): give --profile");
    }
    if (judged.empty()) judged = "vllm";
  }
  auto prepared_work = PrepareWork(suite, options, judged, (*first)->Name());
  if (!prepared_work.ok()) return prepared_work.error();
  CampaignWork& work = *prepared_work;
  CampaignReport& report = work.report;
  std::vector<PreparedCase>& prepared = work.prepared;
  const std::vector<std::vector<size_t>>& units = work.units;
  const std::vector<bool>& resumed = work.resumed;
  CampaignPlan& plan = work.plan;
  plan.identity = &report;
  uint64_t& total_draws = work.total_draws;
  const double budget_seconds = options.budget_seconds.value_or(suite.budget_seconds);

  // Workers: one sampler each (samplers need not be thread-safe); with --devices one per GPU.
  unsigned jobs = options.jobs;
  if (!options.devices.empty()) {
    jobs = static_cast<unsigned>(options.devices.size());
  } else if (jobs == 0) {
    jobs = (*first)->GetCapabilities().parallel_instances ? std::thread::hardware_concurrency() : 1;
  }
  jobs = std::clamp<unsigned>(jobs, 1, static_cast<unsigned>(std::max<size_t>(units.size(), 1)));
  const bool deterministic = (*first)->GetCapabilities().deterministic;
  const bool count_draws = (*first)->GetCapabilities().count_draws;  // a native counting fast path
  const bool gpu = (*first)->GetCapabilities().gpu;
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::move(*first));

  // The sampler's throughput on the first row case to draw (a short count whose draws are discarded), so the plan
  // states a time before hours of drawing start, and the time budget knows what it can afford.
  if (options.on_plan || budget_seconds > 0) {
    // The longest row to draw: draws cost more on long rows (a larger CDF), so the estimate errs long, never short.
    size_t probe_case = prepared.size();
    for (const std::vector<size_t>& unit : units) {
      const size_t i = unit.front();
      if (unit.size() != 1 || prepared[i].skip || resumed[i] || prepared[i].result.unsamplable) continue;
      if (probe_case == prepared.size() || prepared[i].row.size() > prepared[probe_case].row.size()) probe_case = i;
    }
    for (size_t i = probe_case; i < prepared.size() && total_draws > 0; i = prepared.size()) {
      const PreparedCase& pc = prepared[i];
      // Two counts, 2^8 and 2^10 (or more) draws: their difference is the rate, free of the per-call cost (a
      // distribution computed, a kernel planned) that one short count would mistake for slowness. Small first: a
      // real engine can cost milliseconds a draw on a long row (llama.cpp's dist is O(V) a draw: 2^20 draws of the
      // smoke suite's 131072-token row took over an hour), and the probe's draws are discarded.
      auto timed = [&](uint64_t n) -> double {
        std::vector<uint64_t> histogram(pc.row.size(), 0);
        uint64_t invalid = 0;
        const auto p0 = std::chrono::steady_clock::now();
        const Status st = samplers[0]->CountDraws(pc.row, pc.result.params, n, histogram, &invalid);
        return st.ok() ? std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count() : -1.0;
      };
      // The large count grows (x4) until it takes 50 ms more than the small one: a GPU draws 2^20 in well under a
      // millisecond, where the per-call cost and timer noise would decide the rate.
      const uint64_t small = 1 << 8;
      uint64_t large = 1 << 10;
      const double t_small = timed(small);
      double t_large = timed(large);
      while (t_small >= 0 && t_large >= 0 && t_large - t_small < 0.05 && large < (uint64_t{1} << 32)) {
        large *= 4;
        t_large = timed(large);
      }
      if (t_small >= 0 && t_large > t_small) {
        plan.draws_per_second = double(large - small) / (t_large - t_small) * jobs;
        plan.estimated_seconds = double(total_draws) / plan.draws_per_second;
      }
      break;
    }
  }
  // Power by budget: when the measured throughput draws every row case's planned draws (at the budget's cap) within
  // the budget, every row case gets them. Batch rows keep their caps (they target batch faults, at their own TV).
  // A sharded campaign planned without the clock (PrepareWork).
  if (budget_seconds > 0 && plan.draws_per_second > 0 && !options.shard) {
    report.budget_seconds = budget_seconds;
    report.measured_draws_per_second = plan.draws_per_second;
    uint64_t full_draws = 0;
    std::vector<size_t> replan;
    for (size_t i = 0; i < prepared.size(); ++i) {
      const PreparedCase& pc = prepared[i];
      if (!RowCase(pc) || resumed[i]) {
        if (!pc.skip && !resumed[i]) full_draws += pc.result.draws;
        continue;
      }
      PreparedCase trial{pc.result, {}, pc.p0, {}, {}, false};
      const CaseBudget full = FullBudget(work.budgets[i], suite, options);
      if (!PlanCaseDraws(trial, full).ok()) continue;
      full_draws += trial.result.draws;
      replan.push_back(i);
    }
    if (double(full_draws) / plan.draws_per_second <= budget_seconds) {
      for (size_t i : replan) {
        if (Status st = PlanCaseDraws(prepared[i], FullBudget(work.budgets[i], suite, options)); !st.ok()) {
          return st.error();
        }
      }
      // Full power only when no cap (the suite's budget cap, or --max-draws) bound a case below its plan.
      const bool every_plan_met = std::all_of(replan.begin(), replan.end(), [&](size_t i) {
        return prepared[i].result.draws >= prepared[i].result.planned_draws;
      });
      report.full_power = plan.full_power = every_plan_met;
      plan.draws = total_draws = full_draws;
      plan.estimated_seconds = double(full_draws) / plan.draws_per_second;
    }
  }

  // The work items, and this shard's part of them.
  const std::vector<WorkItem> all_items = MakeWorkItems(work, gpu ? kGpuCost : kCpuCost);
  std::vector<WorkItem> items;
  if (options.shard) {
    const std::vector<uint32_t> shard_of = AssignShards(all_items, options.shard->count);
    uint64_t shard_draws = 0;
    for (size_t k = 0; k < all_items.size(); ++k) {
      if (shard_of[k] != options.shard->index) continue;
      items.push_back(all_items[k]);
      const std::vector<size_t>& unit = units[all_items[k].unit];
      if (all_items[k].end > all_items[k].begin) {
        shard_draws += all_items[k].end - all_items[k].begin;
      } else {
        for (size_t i : unit) shard_draws += prepared[i].skip || resumed[i] ? 0 : prepared[i].result.draws;
      }
    }
    ShardInfo info;
    info.index = options.shard->index;
    info.count = options.shard->count;
    info.source = options.shard->source;
    info.plan_fingerprint = PlanFingerprint(prepared);
    info.tv = options.tv;
    info.max_draws = options.max_draws;
    info.generated = options.generated;
    info.items = items.size();
    report.shard = std::move(info);
    plan.draws = total_draws = shard_draws;
    if (plan.draws_per_second > 0) plan.estimated_seconds = double(shard_draws) / plan.draws_per_second;
  } else {
    items = all_items;
  }
  // Workers take the costliest items first (the longest-processing-time rule), so a big batch does not start last.
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& a, const WorkItem& b) { return a.cost > b.cost; });
  jobs = std::clamp<unsigned>(jobs, 1, static_cast<unsigned>(std::max<size_t>(items.size(), 1)));
  if (!options.devices.empty() && jobs < options.devices.size()) jobs = static_cast<unsigned>(options.devices.size());
  for (unsigned j = 1; j < jobs; ++j) {
    SamplerOptions o = sampler_options;
    if (!options.devices.empty()) o.device = options.devices[j % options.devices.size()];
    auto s = MakeSampler(options.sampler_spec, o);
    if (!s.ok()) return s.error();
    samplers.push_back(std::move(*s));
  }
  if (options.on_plan) {
    if (Status st = options.on_plan(plan); !st.ok()) return st.error();
  }

  size_t cases_to_draw = 0;
  std::vector<uint8_t> in_this_run(prepared.size(), 0);
  std::vector<RowDraws> row_draws(prepared.size());
  for (const WorkItem& item : items) {
    for (size_t i : units[item.unit]) {
      if (!in_this_run[i] && !resumed[i]) ++cases_to_draw;
      in_this_run[i] = 1;
      if (item.end > item.begin) ++row_draws[i].pending;
    }
  }
  Progress progress(total_draws, cases_to_draw, options.progress);
  auto stopped = [&]() { return options.stop != nullptr && options.stop->load(); };
  std::vector<uint8_t> finished(prepared.size(), 0);  // bytes, not bits: workers write their own entries
  std::mutex done_mu;
  Status done_error;
  std::atomic<bool> journal_failed{false};
  auto halted = [&]() { return stopped() || journal_failed.load(); };
  // A finished case: its progress line, then the journal (serialized).
  auto case_done = [&](size_t i, double seconds) {
    PreparedCase& pc = prepared[i];
    CaseResult& r = pc.result;
    r.seconds = seconds;
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
  };
  // The checks' fields of a case they did not judge: what they write for no evidence (no draw, no binning).
  auto not_judged = [&](size_t i) {
    const stats::BinningPlan none;
    CaseResult& r = prepared[i].result;
    (void)RunCaseChecks(CaseEvidence{r, {}, none, {}, 0, ""}, r);
  };
  // A shard keeps the evidence of its row cases for merge; a whole run judges them.
  std::mutex evidence_mu;
  auto row_case_drawn = [&](size_t i, RowDraws& d) {
    PreparedCase& pc = prepared[i];
    if (report.shard) {
      ShardRowEvidence e;
      e.name = pc.result.name;
      e.pieces = d.pieces;
      std::sort(e.pieces.begin(), e.pieces.end());
      e.histogram = ToSparse(d.histogram);
      e.invalid_draws = d.invalid;
      e.sampler_error = d.sampler_error;
      if (d.has_agreement) {
        const AgreementEvidence& a = d.agreement.evidence;
        e.has_agreement = true;
        e.agreement_draws = a.draws;
        e.agreement_deterministic = a.deterministic;
        e.agreement_fast = ToSparse(d.agreement.fast);
        e.agreement_sampled = ToSparse(d.agreement.sampled);
        e.agreement_first_difference = a.first_difference;
        e.agreement_fast_token = a.fast_token;
        e.agreement_sampled_token = a.sampled_token;
      }
      {
        std::lock_guard<std::mutex> lock(evidence_mu);
        report.shard->evidence.push_back(std::move(e));
      }
      std::lock_guard<std::mutex> lock(done_mu);
      finished[i] = 1;
      progress.CaseDone(pc.result.name, "drawn", "draws=" + std::to_string(pc.result.draws), d.seconds);
      return;
    }
    if (d.has_agreement) {
      d.agreement.evidence.fast = d.agreement.fast;
      d.agreement.evidence.sampled = d.agreement.sampled;
    }
    const bool agreement_ok = d.has_agreement && d.agreement.error.empty();
    EvaluateCase(pc, d.histogram, d.invalid, d.sampler_error, nullptr, agreement_ok ? &d.agreement.evidence : nullptr);
    case_done(i, d.seconds);
  };
  std::atomic<size_t> next{0};
  auto worker = [&](Sampler& sampler) {
    for (size_t k = next++; k < items.size(); k = next++) {
      const WorkItem& item = items[k];
      const std::vector<size_t>& unit = units[item.unit];
      if (std::all_of(unit.begin(), unit.end(), [&](size_t i) { return resumed[i]; })) {
        for (size_t i : unit) finished[i] = 1;
        continue;
      }
      if (halted()) break;
      const auto c0 = std::chrono::steady_clock::now();
      if (item.end > item.begin) {  // draws [begin, end) of a row case
        const size_t i = unit.front();
        PreparedCase& pc = prepared[i];
        const CaseResult& r = pc.result;
        std::vector<uint64_t> histogram(pc.row.size(), 0);
        uint64_t invalid = 0;
        std::string sampler_error;
        SamplingParams params = r.params;
        for (uint64_t done = item.begin; done < item.end;) {
          if (halted()) break;
          const uint64_t n = std::min(kDrawChunk, item.end - done);
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
        if (halted()) break;
        // A counting fast path is judged against the sampling call that ships (not for an unsamplable row), on the
        // case's first draws: by the item that holds them.
        Agreement agreement;
        const bool compare = count_draws && item.begin == 0 && sampler_error.empty() && !r.unsamplable;
        if (compare) {
          agreement = MeasureAgreement(sampler, pc, deterministic, gpu);
          if (halted()) break;
        }
        RowDraws& d = row_draws[i];
        bool last = false;
        {
          std::lock_guard<std::mutex> lock(d.mu);
          if (d.histogram.empty()) d.histogram.assign(pc.row.size(), 0);
          for (size_t t = 0; t < histogram.size(); ++t) d.histogram[t] += histogram[t];
          d.invalid += invalid;
          if (d.sampler_error.empty()) d.sampler_error = sampler_error;
          d.pieces.emplace_back(item.begin, item.end);
          if (compare) {
            d.agreement = std::move(agreement);
            d.has_agreement = true;
            if (!d.agreement.error.empty() && d.sampler_error.empty()) d.sampler_error = d.agreement.error;
          }
          d.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
          last = --d.pending == 0;
        }
        if (last) {
          row_case_drawn(i, d);
          std::vector<uint64_t>().swap(d.histogram);
        }
        continue;
      }
      if (unit.size() == 1 && prepared[unit.front()].result.batch.size == 0) {  // a case without draws
        const size_t i = unit.front();
        if (prepared[i].skip) {
          not_judged(i);
        } else {
          EvaluateCase(prepared[i], std::vector<uint64_t>(prepared[i].row.size(), 0), 0, "", nullptr, nullptr);
        }
        case_done(i, std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count());
        continue;
      }
      // A batch: its rows drawn together, then each judged with the batch's evidence.
      std::vector<PreparedCase*> rows;
      for (size_t i : unit) {
        if (prepared[i].skip) {
          not_judged(i);
        } else {
          rows.push_back(&prepared[i]);
        }
      }
      BatchDraws draws = DrawBatch(sampler, rows, deterministic, halted, progress);
      if (halted()) break;
      EvaluateBatch(rows, draws, deterministic);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      for (size_t i : unit) case_done(i, seconds / double(unit.size()));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker, std::ref(*samplers[j]));
  worker(*samplers[0]);
  for (auto& t : threads) t.join();
  progress.Finish();

  if (!done_error.ok()) return done_error.error();
  for (size_t i = 0; i < prepared.size(); ++i) {
    const bool row_evidence = report.shard && Ranged(prepared[i], resumed[i]);
    if (finished[i] && !row_evidence) report.cases.push_back(std::move(prepared[i].result));
  }
  if (report.shard) {
    // Evidence in case order (workers finish in any order).
    std::unordered_map<std::string, size_t> order;
    for (size_t i = 0; i < prepared.size(); ++i) order[prepared[i].result.name] = i;
    std::sort(report.shard->evidence.begin(), report.shard->evidence.end(),
              [&](const ShardRowEvidence& a, const ShardRowEvidence& b) { return order[a.name] < order[b.name]; });
    size_t expected = 0, got = 0;
    for (size_t i = 0; i < prepared.size(); ++i) {
      if (!in_this_run[i] || resumed[i]) continue;
      ++expected;
      got += finished[i];
    }
    report.interrupted = got < expected;
  } else {
    report.interrupted = report.cases.size() < prepared.size();
    ApplyCampaignVerdict(report);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace samplecheck::harness
