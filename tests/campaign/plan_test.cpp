// The Plan stage (campaign.h, plan.cpp, budget.cpp): a campaign records its plan (every case's draws, cap and why),
// --plan-from replays exactly that plan whatever the time budget would give, a plan of other cases or seeds is
// refused, and the time budget's watch fires once, only when the run projects past its budget by more than 20%.
#include <gtest/gtest.h>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/suites/suite.h"
#include "work_items.h"  // harness/campaign/src: the items and the budget watch

namespace samplecheck::harness {
namespace {

Suite SmallSuite(double budget_seconds) {
  auto suite = ParseSuite(nlohmann::json::parse(R"({
    "schema": "samplecheck-suite/1", "name": "plan-unit", "seed": 3, "tv": 0.05, "max_draws": 4096,
    "min_draws": 1000, "budget_max_draws": 65536,
    "cases": [{"name": "topk", "row": {"kind": "gaussian", "vocab": 300, "sigma": 2}, "params": {"top_k": 40}},
              {"name": "flat", "row": {"kind": "gaussian", "vocab": 50, "sigma": 0.5}},
              {"name": "greedy", "row": {"kind": "gaussian", "vocab": 50}, "params": {"temperature": 0}},
              {"name": "bad", "row": {"kind": "gaussian", "vocab": 50}, "params": {"top_p": 0}}]})"),
                          {}, "plan-unit");
  EXPECT_TRUE(suite.ok()) << suite.error().message;
  suite->budget_seconds = budget_seconds;
  return *suite;
}

Result<CampaignReport> RunSmall(const Suite& suite, std::optional<DrawPlan> plan = std::nullopt, uint64_t seed = 3) {
  CampaignOptions o;
  o.seed = seed;
  o.jobs = 1;
  o.progress = Progress::Mode::kQuiet;
  o.plan_from = std::move(plan);
  o.plan_from_source = "unit";
  return RunCampaign(suite, o);
}

TEST(PlanTest, TheReportRecordsEveryCaseDrawsAndWhy) {
  auto report = RunSmall(SmallSuite(0));
  ASSERT_TRUE(report.ok()) << report.error().message;
  const DrawPlan& plan = report->draw_plan;
  EXPECT_EQ(plan.basis, PlanBasis::kPower);
  ASSERT_EQ(plan.cases.size(), report->cases.size());
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    EXPECT_EQ(plan.cases[i].name, report->cases[i].name);
    EXPECT_EQ(plan.cases[i].draws, report->cases[i].status == CaseStatus::kSkipped ? 0 : report->cases[i].draws);
  }
  EXPECT_EQ(plan.cases[0].why, DrawsWhy::kCap);  // TV 0.05 at 40 kept tokens needs more than the cap of 4096
  EXPECT_EQ(plan.cases[3].why, DrawsWhy::kSkipped);
  EXPECT_NE(plan.fingerprint, 0u);
  auto back = DrawPlanFromJson(DrawPlanToJson(plan));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(DrawPlanToJson(*back), DrawPlanToJson(plan));
}

TEST(PlanTest, PlanFromReplaysARecordedPlanWhateverTheBudget) {
  // A huge budget gives full power (up to 65536 draws); the same suite without a budget replays that plan.
  auto budgeted = RunSmall(SmallSuite(3600));
  ASSERT_TRUE(budgeted.ok()) << budgeted.error().message;
  EXPECT_EQ(budgeted->draw_plan.basis, PlanBasis::kBudgetFullPower);
  EXPECT_GT(budgeted->cases[0].draws, 4096u);
  auto replay = RunSmall(SmallSuite(0), budgeted->draw_plan);
  ASSERT_TRUE(replay.ok()) << replay.error().message;
  EXPECT_EQ(replay->draw_plan.basis, PlanBasis::kRecorded);
  ASSERT_EQ(replay->cases.size(), budgeted->cases.size());
  for (size_t i = 0; i < replay->cases.size(); ++i) {
    EXPECT_EQ(replay->cases[i].draws, budgeted->cases[i].draws) << replay->cases[i].name;
    EXPECT_EQ(replay->cases[i].max_draws, budgeted->cases[i].max_draws) << replay->cases[i].name;
    EXPECT_EQ(replay->cases[i].p_value, budgeted->cases[i].p_value) << replay->cases[i].name;
  }
  // A report written before plans were recorded: its cases' draws are the plan.
  CampaignReport old = *budgeted;
  old.draw_plan = DrawPlan{};
  auto from_cases = PlanOfReport(old);
  ASSERT_TRUE(from_cases.ok()) << from_cases.error().message;
  auto again = RunSmall(SmallSuite(0), *from_cases);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->cases[0].draws, budgeted->cases[0].draws);
}

TEST(PlanTest, APlanOfOtherCasesOrSeedsIsRefused) {
  auto report = RunSmall(SmallSuite(0));
  ASSERT_TRUE(report.ok());
  DrawPlan fewer = report->draw_plan;
  fewer.cases.pop_back();
  auto refused = RunSmall(SmallSuite(0), fewer);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("the plan of unit is not this campaign's"), std::string::npos);
  DrawPlan renamed = report->draw_plan;
  renamed.cases[1].name = "other";
  refused = RunSmall(SmallSuite(0), renamed);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("no case flat"), std::string::npos) << refused.error().message;
  refused = RunSmall(SmallSuite(0), report->draw_plan, 4);  // other rows and seeds
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("other rows, seeds"), std::string::npos) << refused.error().message;
  CampaignReport interrupted = *report;
  interrupted.draw_plan = DrawPlan{};
  interrupted.cases.pop_back();
  EXPECT_FALSE(PlanOfReport(interrupted).ok());
}

TEST(PlanTest, TheBudgetWatchFiresOnceWhenTheRunProjectsPastItsBudget) {
  BudgetMonitor on_pace(60, 50, 100);  // 100 units of cost planned in 50 s, a budget of 60 s
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(on_pace.ItemDone(10, 5.0 * (i + 1)));
  BudgetMonitor slow(60, 50, 100);
  EXPECT_FALSE(slow.ItemDone(1, 5));    // 1% done in a tenth of the planned time: too early to tell
  EXPECT_TRUE(slow.ItemDone(9, 12));    // 10% done in 12 s: 120 s projected, past 72
  EXPECT_FALSE(slow.ItemDone(10, 13));  // once
}

TEST(PlanTest, TheWorkersScheduleEstimatesTheLongestWorker) {
  std::vector<WorkItem> items = {{0, 0, 0, 4e9}, {1, 0, 0, 3e9}, {2, 0, 0, 3e9}, {3, 0, 0, 2e9}};
  EXPECT_DOUBLE_EQ(EstimateSeconds(items, 1), 12.0);
  EXPECT_DOUBLE_EQ(EstimateSeconds(items, 2), 6.0);   // {4, 2} and {3, 3}
  EXPECT_DOUBLE_EQ(EstimateSeconds(items, 8), 4.0);   // the largest item alone
}

// A decode batch makes one call per step: its item costs at least the probed cost of a call per step, however few
// its tokens (8192 steps of 2 rows of 16 tokens at 1 ms a call: 8.2 s, where its tokens alone cost 262 us).
TEST(PlanTest, ADecodeBatchCostsACallPerStep) {
  CampaignWork work;
  for (int r = 0; r < 2; ++r) {
    PreparedCase pc;
    pc.row.assign(16, 0.0f);
    pc.result.draws = 8192;
    pc.result.batch.size = 2;
    pc.result.batch.position = static_cast<uint32_t>(r);
    pc.decode = true;
    work.prepared.push_back(pc);
  }
  work.units = {{0, 1}};
  work.resumed = {false, false};
  CostModel model;
  model.sampled_draw_per_token = 1.0;  // ns
  model.batch_call = 1e6;              // 1 ms
  const std::vector<WorkItem> decode = MakeWorkItems(work, model);
  ASSERT_EQ(decode.size(), 1u);
  EXPECT_DOUBLE_EQ(decode[0].cost, 8192 * 1e6);
  for (PreparedCase& pc : work.prepared) pc.decode = false;  // replicated: its tokens' cost, calls of many copies
  const std::vector<WorkItem> replicated = MakeWorkItems(work, model);
  EXPECT_DOUBLE_EQ(replicated[0].cost, 2 * 8192 * 16 * 1.0);
}

// The checks a row case makes once (agreement, seed dependence, a fresh instance) cost the probed row_checks_per_token
// a token of the row, on the item that holds the case's first draws only (TokenSpeed on the H200: 13 row cases took 312
// s where their counted draws were estimated at about 100 s, and the budget was overrun).
TEST(PlanTest, ARowCaseCostsItsChecksOnce) {
  CampaignWork work;
  PreparedCase pc;
  pc.row.assign(100, 0.0f);
  pc.result.draws = 3 * kPieceDraws;
  work.prepared.push_back(pc);
  work.units = {{0}};
  work.resumed = {false};
  CostModel model;
  model.counted_draw = 1.0;          // ns
  model.row_checks_per_token = 5e7;  // 5 s for the row of 100 tokens
  const std::vector<WorkItem> items = MakeWorkItems(work, model);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_DOUBLE_EQ(items[0].cost, double(kPieceDraws) + 5e9);
  EXPECT_DOUBLE_EQ(items[1].cost, double(kPieceDraws));
  EXPECT_DOUBLE_EQ(items[2].cost, double(kPieceDraws));
}

}  // namespace
}  // namespace samplecheck::harness
