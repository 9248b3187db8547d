// Inside the campaign library: the work items of a sampler campaign (engine.h, WorkItem) and their costs, the
// assignment of items to shards, and the time budget (budget.cpp): the cost the probe measures, the estimate, the
// plan the budget affords, and the re-plan when the first cases run slower than planned.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "campaign_work.h"
#include "engine.h"
#include "samplecheck/samplers/sampler.h"

namespace samplecheck::harness {

inline constexpr uint64_t kDrawChunk = uint64_t{1} << 22;  // draws of one CountDraws call
inline constexpr uint64_t kPieceDraws = kDrawChunk * 8;    // 2^25: the largest work item of a row case

// What draws cost, in nanoseconds: a counted draw, a CountDraws call per token of its row (its distribution, its
// setup), a batch row's draw per token (one row of a Sample call), judging a case per token of its row, and a call of
// a batch's rows (a decode step).
struct CostModel {
  double counted_draw = 0.0;
  double call_per_token = 0.0;
  double sampled_draw_per_token = 0.0;
  double judge_per_token = 0.0;
  double batch_call = 0.0;  // one call of a batch's rows (a decode step: a call per step, whatever its tokens)
  double row_checks_per_token = 0.0;  // the checks a row case makes once (agreement, seeds, a fresh instance)
};
// The fixed models of the assignment to shards and of the order workers take items in: the exact sampler on one
// core of the 2-core VM, and the cuda sampler on an H200. They depend on the sampler's kind alone, so every shard
// computes the same assignment; only the balance depends on them, never the counts.
inline constexpr CostModel kCpuCost{20.0, 2000.0, 2.5, 0.0};
inline constexpr CostModel kGpuCost{0.75, 0.05, 0.8, 0.0};

// The items of the units to draw (not resumed): a row case in pieces of kPieceDraws, a batch or a case without
// draws whole. `draws` (per prepared case) stands in for the plan's draws when given (the budget's trials).
std::vector<WorkItem> MakeWorkItems(const CampaignWork& work, const CostModel& model,
                                    const std::vector<uint64_t>* draws = nullptr);
// Which of `count` parts draws each item: the largest first, each to the least loaded part (lowest index on a tie).
// Deterministic from the items alone; also the workers' schedule the time budget estimates.
std::vector<uint32_t> AssignShards(const std::vector<WorkItem>& items, uint32_t count);
// The wall time of `items` on `workers` workers taking the largest first (the makespan of AssignShards), seconds.
double EstimateSeconds(const std::vector<WorkItem>& items, unsigned workers);

// The probe (before the first draw): the cost model of this sampler on this suite's rows, measured with every
// worker's sampler drawing at once (so a shared or throttled machine shows): two counts on the longest row case
// (the difference gives the per-draw cost free of the per-call cost), judging that case, the checks every row case
// makes once (agreement, seed dependence, a fresh instance's batch and calls) on that case, one call of each batch.
// nullopt when there is nothing to measure or the sampler fails (the plan then states no time).
std::optional<CostModel> MeasureCost(const std::vector<std::unique_ptr<Sampler>>& samplers, const CampaignWork& work);

// Power by budget: with the measured cost, every row case gets its full-power draws when their estimate fits the
// budget, else the caps stand and, when the caps' estimate exceeds the budget by more than 20%, plan.budget_note
// says what the budget affords. Records the estimate and the basis in the report's draw_plan.
Status ApplyBudget(CampaignWork& work, const CostModel& cost, unsigned workers, const std::optional<uint64_t>& cap);

// --tv auto: the TVs it chooses among, ascending: the suite's TV, the R10 preferred numbers above it (1, 1.25, 1.6,
// 2, 2.5, 3.15, 4, 5, 6.3, 8 per decade: about 26% apart), and 0.5.
std::vector<double> TvLadder(double suite_tv);
// The least TV of the ladder (from work.report.tv, the TV the work was prepared at) at which every row case's
// full-power plan (the suite's power at that TV, capped at budget_max_draws and `cap`) is met and fits the budget by
// the estimate, found by bisection over the ladder (the estimate falls as the TV grows). `fits` false: none does,
// and `tv` is the ladder's largest, 0.5. `seconds` is the estimate at `tv`.
struct TvChoice {
  double tv = 0.0;
  bool fits = false;
  double seconds = 0.0;
};
TvChoice ChooseTv(const CampaignWork& work, const CostModel& cost, unsigned workers,
                  const std::optional<uint64_t>& cap);

// Watches a budgeted run as its items finish: true once, when the time spent projects the run past its budget
// by more than 20% (then the campaign re-plans the row cases not yet started back to their caps).
class BudgetMonitor {
 public:
  BudgetMonitor(double budget_seconds, double planned_seconds, double planned_cost);
  bool ItemDone(double cost, double spent_seconds);

 private:
  double budget_, planned_seconds_, planned_cost_, done_cost_ = 0.0;
  bool fired_ = false;
};

}  // namespace samplecheck::harness
