// The time budget of a sampler campaign (work_items.h): the probe, the estimate, power by budget, the re-plan.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "samplecheck/campaign/progress.h"
#include "samplecheck/core/format.h"
#include "sampler_draw.h"
#include "stream_draw.h"
#include "work_items.h"

namespace samplecheck::harness {
namespace {

using Clock = std::chrono::steady_clock;

// Wall seconds of `call` made by every worker's sampler at once (-1 when one failed).
double AllAtOnce(const std::vector<std::unique_ptr<Sampler>>& samplers, const std::function<Status(Sampler&)>& call) {
  std::vector<uint8_t> ok(samplers.size(), 0);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t j = 1; j < samplers.size(); ++j) threads.emplace_back([&, j] { ok[j] = call(*samplers[j]).ok(); });
  ok[0] = call(*samplers[0]).ok();
  for (std::thread& t : threads) t.join();
  const double seconds = SecondsSince(t0);
  return std::all_of(ok.begin(), ok.end(), [](uint8_t b) { return b != 0; }) ? seconds : -1.0;
}

// The longest row case to draw: draws cost more on long rows (a larger CDF), so the estimate errs long.
const PreparedCase* ProbeCase(const CampaignWork& work) {
  const PreparedCase* probe = nullptr;
  for (const std::vector<size_t>& unit : work.units) {
    const size_t i = unit.front();
    const PreparedCase& pc = work.prepared[i];
    if (unit.size() != 1 || pc.skip || work.resumed[i] || pc.result.unsamplable || pc.refusal) continue;
    if (probe == nullptr || pc.row.size() > probe->row.size()) probe = &pc;
  }
  return probe;
}

// Counted draws on the probe row: two counts, 2^8 and 2^10 (or more) draws, whose difference is the per-draw cost
// free of the per-call cost (a distribution computed, a kernel planned) that one short count would mistake for
// slowness. Small first: a real engine can cost milliseconds a draw on a long row. The large count grows (x4)
// until it takes 50 ms more than the small one (a GPU draws 2^20 in well under a millisecond).
bool MeasureCounting(const std::vector<std::unique_ptr<Sampler>>& samplers, const PreparedCase& pc, CostModel& cost,
                     std::vector<uint64_t>& histogram) {
  auto timed = [&](uint64_t n) {
    return AllAtOnce(samplers, [&](Sampler& s) {
      std::vector<uint64_t> h(pc.row.size(), 0);
      uint64_t invalid = 0;
      Status st = s.CountDraws(pc.row, pc.result.params, n, h, &invalid);
      if (&s == samplers.front().get()) histogram = std::move(h);
      return st;
    });
  };
  const uint64_t small = 1 << 8;
  uint64_t large = 1 << 10;
  const double t_small = timed(small);
  double t_large = timed(large);
  while (t_small >= 0 && t_large >= 0 && t_large - t_small < 0.05 && large < (uint64_t{1} << 32)) {
    large *= 4;
    t_large = timed(large);
  }
  if (!(t_small >= 0 && t_large > t_small)) return false;
  const double per_draw = (t_large - t_small) / double(large - small);
  cost.counted_draw = per_draw * 1e9;
  cost.call_per_token = std::max(0.0, t_small - per_draw * double(small)) / double(pc.row.size()) * 1e9;
  return true;
}

// A batch's rows through SampleReplicated on every worker at once, as DrawBatch calls it (the same replicas per
// call), after one call that warms what a sampler keeps between calls: a batch row's draw per token, and the cost of
// one call of the batch alone (a decode loop's step).
void MeasureBatch(const std::vector<std::unique_ptr<Sampler>>& samplers, const CampaignWork& work, CostModel& cost) {
  for (const std::vector<size_t>& unit : work.units) {
    const PreparedCase& first = work.prepared[unit.front()];
    if (first.result.batch.size == 0 || first.decode || work.resumed[unit.front()]) continue;
    const size_t b = unit.size(), vocab = first.row.size();
    const uint64_t by_memory = std::max<uint64_t>(1, (uint64_t{64} << 20) / (sizeof(float) * b * std::max<size_t>(vocab, 1)));
    const uint64_t replicas = std::max<uint64_t>(1, std::min({4096 / b, by_memory, first.result.draws}));
    std::vector<float> logits;
    std::vector<SamplingParams> params;
    for (size_t i : unit) {
      logits.insert(logits.end(), work.prepared[i].row.begin(), work.prepared[i].row.end());
      params.push_back(work.prepared[i].result.params);
    }
    for (uint64_t k = 1; k < replicas; ++k) params.insert(params.end(), params.begin(), params.begin() + long(b));
    const RowBatch batch{logits.data(), static_cast<int64_t>(b), static_cast<int64_t>(vocab),
                         static_cast<int64_t>(vocab)};
    std::vector<std::vector<int32_t>> out(samplers.size(), std::vector<int32_t>(params.size()));
    auto call = [&](uint64_t n) {
      return AllAtOnce(samplers, [&](Sampler& s) {
        size_t j = 0;
        while (samplers[j].get() != &s) ++j;
        return s.SampleReplicated(batch, n, std::span(params).first(n * b), std::span(out[j]).first(n * b));
      });
    };
    // Each call shape twice, the second timed: a first call of a shape may compile (vLLM's Triton kernels at a new
    // batch size took seconds on the H200, and the estimate of standard's batches came out 40 times their time).
    if (call(1) < 0) return;
    const double one = call(1);
    if (call(replicas) < 0) return;
    const double t = call(replicas);
    if (t > 0) cost.sampled_draw_per_token = t / double(replicas * b * vocab) * 1e9;
    if (one > 0) cost.batch_call = one * 1e9;
    return;
  }
}

// The sampler of the probe standing in for its own fresh instance (the probe opens no second process).
class Borrowed final : public Sampler {
 public:
  explicit Borrowed(Sampler& s) : s_(s) {}
  std::string Name() const override { return s_.Name(); }
  Capabilities GetCapabilities() const override { return s_.GetCapabilities(); }
  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    return s_.Sample(batch, params, tokens);
  }
  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid) override {
    return s_.CountDraws(row, params, draws, histogram, invalid);
  }
  Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) override {
    return s_.SampleRepeated(row, params, tokens);
  }
  Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                          std::span<int32_t> tokens) override {
    return s_.SampleReplicated(rows, replicas, params, tokens);
  }
  Status SampleSteps(const RowBatch& batch, std::span<const SamplingParams> params, uint64_t steps,
                     std::span<int32_t> tokens) override {
    return s_.SampleSteps(batch, params, steps, tokens);
  }

 private:
  Sampler& s_;
};

// The checks a row case makes once, besides its counted draws, drawn on the probe case by every worker at once as
// the campaign draws them (MeasureAgreement for a counting fast path, MeasureRowStream with the worker's own sampler
// as the fresh instance): at an engine's rates they are seconds a case (TokenSpeed on the H200: 13 row cases took
// 312 s where their counted draws were estimated at about 100 s). Nanoseconds a row token (the checks draw more on
// longer rows; the probe's is the longest, so the estimate errs long); 0 when a call failed.
double MeasureRowChecks(const std::vector<std::unique_ptr<Sampler>>& samplers, const PreparedCase& pc) {
  const Capabilities caps = samplers.front()->GetCapabilities();
  const double seconds = AllAtOnce(samplers, [&](Sampler& s) {
    if (caps.count_draws) {
      const bool token_equal = caps.deterministic && !caps.count_distributional;
      if (Agreement a = MeasureAgreement(s, pc, token_equal, caps.gpu); !a.status.ok()) return a.status;
    }
    FreshSampler fresh(
        [&s]() -> Result<std::unique_ptr<Sampler>> { return std::unique_ptr<Sampler>(new Borrowed(s)); });
    const StreamDraws d = MeasureRowStream(s, fresh, pc, caps.deterministic, caps.gpu);
    return d.sampler_error.empty() ? Status::Ok() : Status(InvalidArgument(d.sampler_error));
  });
  return seconds > 0 ? seconds * 1e9 / double(std::max<size_t>(pc.row.size(), 1)) : 0.0;
}

}  // namespace

std::optional<CostModel> MeasureCost(const std::vector<std::unique_ptr<Sampler>>& samplers, const CampaignWork& work) {
  const PreparedCase* probe = ProbeCase(work);
  if (probe == nullptr || work.total_draws == 0) return std::nullopt;
  CostModel cost;
  std::vector<uint64_t> histogram;
  if (!MeasureCounting(samplers, *probe, cost, histogram)) return std::nullopt;
  // Judging the probe's draws as its case will be judged (the checks' cost grows with the row).
  PreparedCase trial{probe->result, {}, probe->p0, probe->excluded, probe->binning, false};
  const auto t0 = Clock::now();
  EvaluateCase(trial, histogram, 0);
  cost.judge_per_token = SecondsSince(t0) / double(probe->row.size()) * 1e9;
  cost.row_checks_per_token = MeasureRowChecks(samplers, *probe);
  MeasureBatch(samplers, work, cost);
  return cost;
}

namespace {

// The draws of every prepared case with the row cases (not resumed) at `draws_of_row(i)`.
template <class F>
std::vector<uint64_t> DrawsWith(const CampaignWork& work, F&& draws_of_row) {
  std::vector<uint64_t> draws(work.prepared.size());
  for (size_t i = 0; i < draws.size(); ++i) {
    const bool row = RowCase(work.prepared[i]) && !work.resumed[i];
    draws[i] = row ? draws_of_row(i) : work.prepared[i].result.draws;
  }
  return draws;
}

double Estimate(const CampaignWork& work, const CostModel& cost, unsigned workers,
                const std::vector<uint64_t>& draws) {
  return EstimateSeconds(MakeWorkItems(work, cost, &draws), workers);
}

// What the budget affords when it does not hold the caps: the largest per-case cap that fits, and the least power
// of a row case under it.
std::string Affordable(const CampaignWork& work, const CostModel& cost, unsigned workers, double caps_seconds) {
  uint64_t lo = 1, hi = 0;
  for (const PreparedCase& pc : work.prepared) hi = std::max(hi, RowCase(pc) ? pc.result.draws : 0);
  auto capped = [&](uint64_t c) {
    return DrawsWith(work, [&](size_t i) { return std::min(work.prepared[i].result.draws, c); });
  };
  std::ostringstream os;
  os.precision(3);
  os << "the time budget of " << work.budget_seconds << " s does not hold this plan (about "
     << Progress::FormatDuration(caps_seconds) << " at the measured cost)";
  const double fixed_seconds = Estimate(work, cost, workers, capped(1));
  if (fixed_seconds > work.budget_seconds) {
    os << "; the cases it cannot shorten (batches, unsamplable rows) alone need about "
       << Progress::FormatDuration(fixed_seconds) << ": no cap of the row cases keeps it";
    return os.str();
  }
  while (lo < hi) {  // the largest cap whose estimate fits
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (Estimate(work, cost, workers, capped(mid)) <= work.budget_seconds) lo = mid; else hi = mid - 1;
  }
  double least = 1.0;
  std::string weakest;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    const PreparedCase& pc = work.prepared[i];
    if (!RowCase(pc) || work.resumed[i]) continue;
    PreparedCase trial{pc.result, {}, pc.p0, {}, {}, false};
    if (!PlanAtDraws(trial, std::min(pc.result.draws, lo)).ok() || trial.result.achieved_power >= least) continue;
    least = trial.result.achieved_power;
    weakest = pc.result.name;
  }
  os << "; within it, at most " << lo
     << " draws per row case (--max-draws " << lo << ") give power " << least << " at the case's TV"
     << (weakest.empty() ? "" : " (least: " + weakest + ")");
  return os.str();
}

}  // namespace

Status ApplyBudget(CampaignWork& work, const CostModel& cost, unsigned workers, const std::optional<uint64_t>& cap) {
  std::vector<CaseBudget> full(work.prepared.size());
  const std::vector<uint64_t> full_draws = DrawsWith(work, [&](size_t i) {
    PreparedCase trial{work.prepared[i].result, {}, work.prepared[i].p0, {}, {}, false};
    full[i] = FullBudget(work.budgets[i], work, cap);
    return PlanCaseDraws(trial, full[i]).ok() ? trial.result.draws : work.prepared[i].result.draws;
  });
  const double full_seconds = Estimate(work, cost, workers, full_draws);
  const double caps_seconds = Estimate(work, cost, workers, DrawsWith(work, [&](size_t i) {
                                         return work.prepared[i].result.draws;
                                       }));
  std::ostringstream reason;
  reason.precision(3);
  reason << "time budget " << work.budget_seconds << " s; measured " << 1e9 / cost.counted_draw * workers
         << " counted draws/s on " << workers << " worker(s); full power estimated at " << full_seconds
         << " s, the caps at " << caps_seconds << " s";
  if (full_seconds <= work.budget_seconds) {
    bool every_plan_met = true;
    for (size_t i = 0; i < work.prepared.size(); ++i) {
      PreparedCase& pc = work.prepared[i];
      if (!RowCase(pc) || work.resumed[i]) continue;
      if (Status st = PlanCaseDraws(pc, full[i]); !st.ok()) return st;
      work.why[i] = pc.result.draws < pc.result.planned_draws ? DrawsWhy::kBudgetCap : DrawsWhy::kBudget;
      every_plan_met = every_plan_met && pc.result.draws >= pc.result.planned_draws;
    }
    work.report.full_power = work.plan.full_power = every_plan_met;
    RecordPlan(work, PlanBasis::kBudgetFullPower, reason.str());
    work.report.draw_plan.planned_seconds = full_seconds;
  } else {
    if (caps_seconds > 1.2 * work.budget_seconds) {
      work.plan.budget_note = Affordable(work, cost, workers, caps_seconds);
    }
    RecordPlan(work, PlanBasis::kBudgetCaps, reason.str());
    work.report.draw_plan.planned_seconds = caps_seconds;
  }
  work.total_draws = 0;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    if (!work.prepared[i].skip && !work.resumed[i]) work.total_draws += work.prepared[i].result.draws;
  }
  work.plan.draws = work.total_draws;
  return Status::Ok();
}

std::vector<double> TvLadder(double suite_tv) {
  static constexpr double kR10[] = {1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0};
  std::vector<double> ladder{suite_tv};
  for (double decade = std::pow(10.0, std::floor(std::log10(suite_tv))); decade < 0.5; decade *= 10) {
    for (double m : kR10) {
      // Rounded to 3 significant digits, so the ladder's TVs read as written (0.0025, not 0.0025000000000000001).
      const double t = std::stod(FormatSignificant(m * decade, 3));
      if (t > suite_tv * (1 + 1e-9) && t < 0.5) ladder.push_back(t);
    }
  }
  if (suite_tv < 0.5) ladder.push_back(0.5);
  return ladder;
}

TvChoice ChooseTv(const CampaignWork& work, const CostModel& cost, unsigned workers,
                  const std::optional<uint64_t>& cap) {
  const std::vector<double> ladder = TvLadder(work.report.tv);
  // The estimate of every row case at its full-power plan at `tv`; -1 when a plan is not met (a cap binds).
  auto seconds_at = [&](double tv) {
    bool met = true;
    const std::vector<uint64_t> draws = DrawsWith(work, [&](size_t i) {
      CaseBudget budget = FullBudget(work.budgets[i], work, cap);
      budget.tv = tv;
      PreparedCase trial{work.prepared[i].result, {}, work.prepared[i].p0, {}, {}, false};
      if (!PlanCaseDraws(trial, budget).ok()) {
        met = false;
        return work.prepared[i].result.draws;
      }
      met = met && trial.result.draws >= trial.result.planned_draws;
      return trial.result.draws;
    });
    const double seconds = Estimate(work, cost, workers, draws);
    return met ? seconds : -1.0;
  };
  auto fits = [&](double seconds) { return seconds >= 0 && seconds <= work.budget_seconds; };
  size_t lo = 0, hi = ladder.size() - 1;
  const double at_largest = seconds_at(ladder[hi]);
  if (!fits(at_largest)) return {ladder[hi], false, at_largest};
  while (lo < hi) {  // the least index that fits; ladder[hi] fits
    const size_t mid = lo + (hi - lo) / 2;
    if (fits(seconds_at(ladder[mid]))) hi = mid;
    else lo = mid + 1;
  }
  return {ladder[lo], true, seconds_at(ladder[lo])};
}

BudgetMonitor::BudgetMonitor(double budget_seconds, double planned_seconds, double planned_cost)
    : budget_(budget_seconds), planned_seconds_(planned_seconds), planned_cost_(planned_cost) {}

bool BudgetMonitor::ItemDone(double cost, double spent_seconds) {
  done_cost_ += cost;
  if (fired_ || planned_cost_ <= 0 || done_cost_ <= 0) return false;
  // Not before a twentieth of the plan has run (one slow item says little), and only when the run projects past
  // the budget by more than 20% at the pace it has kept.
  if (done_cost_ < 0.05 * planned_cost_ && spent_seconds < 0.2 * planned_seconds_) return false;
  const double projected = spent_seconds * planned_cost_ / done_cost_;
  if (projected <= 1.2 * budget_) return false;
  fired_ = true;
  return true;
}

}  // namespace samplecheck::harness
