// The Plan stage, one case at a time (campaign.h, steps 1-3): the row and its reference, ambiguous tokens, the
// draws the power planner gives, the binnings; batch cases as their rows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "campaign_work.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {
namespace {

constexpr uint32_t kMaxPerturbAttempts = 8;
constexpr double kFirstPerturbScale = 1e-5;  // logits; x4 per attempt: 1e-5 .. 0.16

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

Error CaseError(const std::string& name, const char* what, const Error& e) {
  return {e.code, "case " + name + ": " + what + e.message};
}

void Skip(PreparedCase& pc, std::string reason) {
  pc.skip = true;
  pc.result.status = CaseStatus::kSkipped;
  pc.result.reason = std::move(reason);
}

// Ambiguous tokens (step 1): jitter the row until none is left (kPerturb), else condition on the firm decisions
// of the original row (kCondition, or 8 attempts failed); kSkip skips the case. `dist` becomes the reference judged.
Status ResolveAmbiguity(PreparedCase& pc, ProcessedDistribution& dist, const Profile& profile, uint64_t case_seed,
                        AmbiguousAction action) {
  CaseResult& r = pc.result;
  if (action == AmbiguousAction::kSkip) {
    Skip(pc, std::to_string(dist.ambiguous.size()) +
                 " ambiguous token(s) (fp32 could flip their keep/drop decision); suite says skip");
    return Status::Ok();
  }
  const std::vector<float> original = pc.row;
  double scale = kFirstPerturbScale;
  const uint32_t attempts = action == AmbiguousAction::kPerturb ? kMaxPerturbAttempts : 0;
  for (uint32_t attempt = 1; attempt <= attempts; ++attempt, scale *= 4) {
    std::vector<float> jittered = Jitter(original, SplitMix64(case_seed ^ (0x100 + attempt)), scale);
    auto d = ComputeDistribution(LogitsView::Fp32(jittered), r.params, profile);
    r.perturb_attempts = attempt;
    r.perturb_scale = scale;
    if (d.ok() && d->ambiguous.empty()) {
      pc.row = std::move(jittered);
      dist = std::move(*d);
      r.perturbed = true;
      return Status::Ok();
    }
  }
  // Condition on the firm decisions of the original row: ambiguous tokens leave the test (their draws are set
  // apart), p0 is renormalized over the unambiguous kept tokens. Valid because every profile renormalizes
  // proportionally: whether an ambiguous token is kept changes only the normalizer of the others.
  auto again = ComputeDistribution(LogitsView::Fp32(original), r.params, profile);
  if (!again.ok()) return CaseError(r.name, "reference: ", again.error());
  dist = std::move(*again);
  r.perturb_attempts = 0;
  r.perturb_scale = 0.0;
  r.conditioned = true;
  pc.excluded = dist.ambiguous;
  return Status::Ok();
}

// The identity of a prepared case: name, row, seeds, parameters, profile and what it is planned with.
PreparedCase Identify(const CaseSpec& spec, const Profile& profile, uint64_t case_seed, uint64_t draw_case_seed,
                      const CaseBudget& budget) {
  PreparedCase pc;
  CaseResult& r = pc.result;
  r.name = spec.name;
  r.row = spec.row;
  r.row_seed = CaseRowSeed(case_seed);
  r.params = spec.params;
  r.params.seed = SplitMix64(draw_case_seed ^ 0x2);
  r.params.offset = 0;
  r.profile = std::string(profile.name);
  r.tv = budget.tv;
  r.alpha_plan = budget.alpha_per_test;
  r.equivalence_eps = budget.equivalence_eps;
  r.equivalence_chi2_eps = budget.equivalence_chi2_eps;
  r.max_draws = budget.max_draws;
  return pc;
}

// An unsamplable row (NaN, every logit -inf): every draw must be the invalid marker, any token fails the case. A
// faulty sampler shows it at its first draw; min_draws is plenty.
void PlanUnsamplable(PreparedCase& pc, const CaseBudget& budget) {
  CaseResult& r = pc.result;
  r.unsamplable = true;
  r.kept = 0;
  pc.p0.assign(pc.row.size(), 0.0);
  r.draws = std::min(budget.min_draws, budget.max_draws);
  r.planned_draws = r.draws;
  r.achieved_power = 1.0;
}

uint64_t Saturated(double draws) {
  // A tiny TV can plan more draws than 2^64 (or inf); the cap then binds, never a wrapped count.
  return draws < 1.8e19 ? static_cast<uint64_t>(std::ceil(draws)) : std::numeric_limits<uint64_t>::max();
}

}  // namespace

stats::BinningOptions CampaignBinningOptions() {
  stats::BinningOptions o;
  o.max_head_cells = 1024;  // dof 1023: 9.1e7 draws at alpha 1e-6 for TV 1e-3 (statistics.md 5.4)
  o.max_tail_cells = 256;
  o.hash_buckets = 64;
  return o;
}

Result<PreparedCase> PrepareCase(const CaseSpec& spec, const Profile& profile, uint64_t case_seed,
                                 uint64_t draw_case_seed, const CaseBudget& budget) {
  PreparedCase pc = Identify(spec, profile, case_seed, draw_case_seed, budget);
  CaseResult& r = pc.result;
  auto row = MakeRow(spec.row, r.row_seed);
  if (!row.ok()) return Error{row.error().code, "case " + spec.name + ": " + row.error().message};
  pc.row = std::move(*row);
  r.vocab = static_cast<int64_t>(pc.row.size());
  if (auto bad = ValidateParams(r.params, profile)) {
    if (!spec.refuse_invalid) {
      Skip(pc, "params invalid under profile " + r.profile + ": " + bad->message);
      return pc;
    }
    // A refusal case: the sampler must refuse these parameters (checks_stream.cpp, refusal); nothing is drawn.
    pc.refusal = true;
    pc.refusal_field = ParamFieldName(bad->field);
    pc.refusal_value = FormatValue(bad->value);
    return pc;
  }
  auto dist = ComputeDistribution(LogitsView::Fp32(pc.row), r.params, profile);
  if (!dist.ok() && dist.error().code == ErrorCode::kInvalidRow) {
    PlanUnsamplable(pc, budget);
    return pc;
  }
  if (!dist.ok()) return CaseError(spec.name, "reference: ", dist.error());
  r.ambiguous = dist->ambiguous;
  r.numeric_drift = dist->numeric_drift;
  std::sort(r.numeric_drift.begin(), r.numeric_drift.end());
  if (!dist->ambiguous.empty()) {
    if (Status st = ResolveAmbiguity(pc, *dist, profile, case_seed, budget.ambiguous); !st.ok()) return st.error();
    if (pc.skip) return pc;
  }
  pc.p0 = dist->Dense();
  for (int32_t t : pc.excluded) pc.p0[static_cast<size_t>(t)] = 0.0;
  if (std::none_of(pc.p0.begin(), pc.p0.end(), [](double p) { return p > 0; })) {
    Skip(pc, "every kept token is ambiguous (" + std::to_string(r.ambiguous.size()) + "): nothing firm to judge");
    return pc;
  }
  r.greedy = dist->greedy;
  r.kept = static_cast<int64_t>(std::count_if(pc.p0.begin(), pc.p0.end(), [](double p) { return p > 0; }));
  if (Status st = PlanCaseDraws(pc, budget); !st.ok()) return st.error();
  return pc;
}

Status PlanCaseDraws(PreparedCase& pc, const CaseBudget& budget) {
  CaseResult& r = pc.result;
  r.max_draws = budget.max_draws;
  if (r.kept >= 2) {
    // Cells of the head binning at the cap, then the draws for TV at that many cells, at the upper tail's half of
    // the two-sided Pearson test's alpha.
    const Result<stats::BinningPlan> at_cap = PlanBinnings(pc.p0, double(budget.max_draws), CampaignBinningOptions());
    if (!at_cap.ok()) return InternalError("case " + r.name + ": binning: " + at_cap.error().message);
    const uint64_t cells = std::max<uint64_t>(at_cap->head.cells.size(), 2);
    const Result<stats::DrawPlan> plan =
        stats::PlanDrawsForTotalVariation(budget.tv, budget.alpha_per_test / 2, budget.power, cells);
    if (!plan.ok()) return plan.error().WithContext("case " + r.name + ": plan");
    r.planned_draws = Saturated(plan->draws);
  } else {
    // One kept token: support check only. N draws see a leak of mass tv with probability 1 - (1 - tv)^N.
    r.planned_draws = Saturated(std::log(1.0 / (1.0 - budget.power)) / budget.tv);
  }
  return PlanAtDraws(pc, std::clamp(r.planned_draws, budget.min_draws, budget.max_draws));
}

Status PlanCaseAtDraws(PreparedCase& pc, uint64_t draws) { return PlanAtDraws(pc, draws); }

Status PlanAtDraws(PreparedCase& pc, uint64_t draws) {
  pc.result.draws = draws;
  if (pc.result.unsamplable || pc.skip || pc.refusal) return Status::Ok();
  return PlanBinningAt(pc, double(draws), double(draws));
}

Status PlanBinningAt(PreparedCase& pc, double draws, double support_draws) {
  CaseResult& r = pc.result;
  Result<stats::BinningPlan> binning = PlanBinnings(pc.p0, draws, CampaignBinningOptions());
  if (!binning.ok()) return InternalError("case " + r.name + ": binning: " + binning.error().message);
  pc.binning = std::move(*binning);
  if (r.kept >= 2 && pc.binning.head.usable()) {
    auto power = stats::PowerOfRunForTotalVariation(r.tv, r.alpha_plan / 2, pc.binning.head.cells.size(), draws);
    r.achieved_power = power.ok() ? *power : 0.0;
  } else {
    r.achieved_power = 1.0 - std::pow(1.0 - r.tv, support_draws);
  }
  return Status::Ok();
}

DrawsWhy WhyDraws(const PreparedCase& pc) {
  const CaseResult& r = pc.result;
  if (pc.skip) return DrawsWhy::kSkipped;
  if (pc.refusal) return DrawsWhy::kRefusal;
  if (r.unsamplable) return DrawsWhy::kUnsamplable;
  if (r.batch.size > 0) return DrawsWhy::kBatch;
  if (r.draws < r.planned_draws) return DrawsWhy::kCap;
  if (r.draws > r.planned_draws) return DrawsWhy::kFloor;
  return DrawsWhy::kPower;
}

size_t BatchRows(const CaseSpec& cs) {
  size_t rows = 0;
  for (const BatchEntry& e : cs.batch) rows += e.copies;
  return rows;
}

namespace {

// A batch row's partner: the next copy of its entry, else the next row of the batch ("" in a batch of one).
std::string Partner(const CaseSpec& cs, const std::vector<std::pair<uint32_t, uint32_t>>& slots,
                    const BatchPosition& b) {
  const auto size = static_cast<uint32_t>(slots.size());
  uint32_t partner = (b.position + 1) % size;
  if (cs.batch[b.entry].copies > 1) {
    const uint32_t next_copy = (b.copy + 1) % cs.batch[b.entry].copies;
    for (uint32_t k = 0; k < size; ++k) {
      if (slots[k].first == b.entry && slots[k].second == next_copy) partner = k;
    }
  }
  return size > 1 ? cs.name + "/b" + std::to_string(partner) : "";
}

// The batch's (entry, copy) slots in the order of its rows: Fisher-Yates with the harness's splitmix stream.
std::vector<std::pair<uint32_t, uint32_t>> BatchSlots(const CaseSpec& cs, uint64_t seed) {
  std::vector<std::pair<uint32_t, uint32_t>> slots;
  for (uint32_t e = 0; e < cs.batch.size(); ++e) {
    for (uint32_t j = 0; j < cs.batch[e].copies; ++j) slots.emplace_back(e, j);
  }
  uint64_t state = CaseSeed(seed, cs.name + "/order");
  for (size_t i = slots.size(); i > 1; --i) {
    state += 0x9E3779B97F4A7C15ULL;
    std::swap(slots[i - 1], slots[SplitMix64(state) % i]);
  }
  return slots;
}

}  // namespace

// The rows of a batch case, each a prepared case "<name>/b<k>" in the batch's (shuffled) order. Copies of an entry
// share the entry's row and have consecutive draw seeds; every row is drawn the case's max_draws times (one token
// per row per call).
Result<std::vector<PreparedCase>> PrepareBatch(const CaseSpec& cs, const Profile& profile, uint64_t seed,
                                               uint64_t draw_seed, CaseBudget budget) {
  const std::vector<std::pair<uint32_t, uint32_t>> slots = BatchSlots(cs, seed);
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
    pc->decode = cs.decode;
    pc->result.batch = {cs.name, k, size, e, j, ""};
    if (!rows.empty() && pc->row.size() != rows.front().row.size()) {
      return InvalidArgument("batch case " + cs.name + ": its rows have " + std::to_string(rows.front().row.size()) +
                             " and " + std::to_string(pc->row.size()) +
                             " tokens; a batch is one vocabulary (give every entry the same vocab)");
    }
    rows.push_back(std::move(*pc));
  }
  for (PreparedCase& pc : rows) pc.result.batch.partner = Partner(cs, slots, pc.result.batch);
  return rows;
}

}  // namespace samplecheck::harness
