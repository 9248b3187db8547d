// What a campaign concludes: one CaseResult per case (identity, plan, the fields of every check, the outcomes the
// checks read from them, the verdict) and the CampaignReport around them. The report library (report/) writes and
// reads these as JSON ("samplecheck-report/1", docs/report-format.md) and renders them as text and HTML.
//
// The checks of a case are objects (checks.h): each writes its own fields into CaseResult::checks and reads back
// its outcomes from them, so a stored report is re-judged exactly as the campaign judged it and a new check needs
// no new field here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {

inline constexpr char kReportSchema[] = "samplecheck-report/1";

enum class CaseStatus { kPass, kFail, kSkipped, kError };
const char* CaseStatusName(CaseStatus status);

// One test of one case, as a check concluded it (checks.h). Read generically by the verdict, the summaries, the
// HTML report and the mutation score.
struct CheckOutcome {
  enum class Kind {
    kHard,    // a hard check: violations > 0 fails the case, whatever the p-values (support, sampler errors)
    kPValue,  // a statistical test: p_value joins the case's Bonferroni family, the campaign's Holm over cases
  };
  std::string check;  // the check's name: "support", "pearson", "max-abs-z"
  std::string scope;  // what it looked at: the binning ("head", "tail", "hash"), a token, or ""
  std::string test;   // one label for tables: "support", "pearson head", "max-|z| token 997"
  Kind kind = Kind::kPValue;
  uint64_t violations = 0;       // kHard
  double p_value = 1.0;          // kPValue
  double statistic = 0.0;        // the test statistic (X^2, |z|, violation count) for tables
  std::string finding;           // kHard with violations: the reason text; otherwise a short reading
  double draws_for_power = 0.0;  // estimated draws at which this test reaches power 0.99 at the case's alpha
                                 // (0 when the check has no estimate); the mutation score's "needed"

  bool Fails() const { return kind == Kind::kHard && violations > 0; }
};

// Where a case sits in a batch case (size 0: a row case, drawn alone through CountDraws).
struct BatchPosition {
  std::string batch;      // the batch case's name
  uint32_t position = 0;  // this row's index in the batch
  uint32_t size = 0;      // rows in the batch
  uint32_t entry = 0;     // the suite entry it comes from
  uint32_t copy = 0;      // which copy of that entry (copies have consecutive seeds)
  std::string partner;    // the case whose draws its independence test pairs with
};

struct CaseResult {
  std::string name;
  BatchPosition batch;  // a row of a batch case (batch.size > 0)
  RowSpec row;
  uint64_t row_seed = 0;
  SamplingParams params;  // seed/offset: the RNG of the case's first draw
  std::string profile;    // the judged profile

  CaseStatus status = CaseStatus::kPass;
  std::string reason;  // why failed / skipped / error; empty on pass

  int64_t vocab = 0;
  int64_t kept = 0;  // tokens of positive reference probability
  bool greedy = false;
  std::vector<int32_t> ambiguous;  // ambiguous tokens of the unperturbed reference
  bool perturbed = false;          // the row was jittered (docs/campaigns.md) to clear them
  uint32_t perturb_attempts = 0;
  double perturb_scale = 0.0;    // largest jitter added to a logit
  bool conditioned = false;      // judged on the unambiguous tokens only (AmbiguousAction::kCondition)
  bool unsamplable = false;      // the row cannot be sampled (NaN, all -inf): every draw must be invalid
  uint64_t ambiguous_draws = 0;  // draws of ambiguous tokens set apart when conditioned
  // Numeric boundary drift (reference/numerics.h): the ambiguous tokens that only the profile's numerics model
  // (fp32 sums over the row, ties of fp32 probabilities) makes ambiguous, and the draws that landed on them when the
  // case was conditioned: a correct fp32 engine may keep them, so they are reported apart, never as violations.
  std::vector<int32_t> numeric_drift;
  uint64_t drift_draws = 0;

  double tv = 0.0;          // detectable TV the draws were planned for
  double alpha_plan = 0.0;  // per-test alpha the plan assumed (campaign alpha / (cases x tests))
  // --equivalence: the TV (and optionally chi-square divergence) the case must be certified within; 0 = not asked.
  // What the case is judged with; the report keeps them in the case's "equivalence" fields.
  double equivalence_eps = 0.0;
  double equivalence_chi2_eps = 0.0;
  uint64_t planned_draws = 0;  // from the power planner (before the cap)
  uint64_t max_draws = 0;      // the cap
  // A recorded plan (--plan-from, a resumed journal's) gave the case fewer draws than this suite and seed plan for it
  // under the run's caps: a cut like --max-draws, judged by the power floor (UnderpoweredCases). The report's
  // plan.recorded_cut (written when true).
  bool recorded_cut = false;
  uint64_t draws = 0;           // draws made
  double achieved_power = 0.0;  // power at `tv` of the gate binning at `draws` (worst-case shift)

  // The fields every check wrote, keyed as in the report ("support", "binnings", "max_abs_z", ...), and what the
  // checks read from them. Empty for a skipped case.
  nlohmann::json checks = nlohmann::json::object();
  std::vector<CheckOutcome> outcomes;

  uint32_t tests = 0;            // p-value tests among the outcomes
  double p_value = 1.0;          // Bonferroni over the case's tests: min(1, tests * min p)
  double holm_adjusted_p = 1.0;  // Holm over the campaign's judged cases
  double seconds = 0.0;

  // Sum of the violations of the hard outcomes (support violations, invalid tokens, a sampler error).
  uint64_t HardViolations() const;
  // The outcomes of one check (by name), in the order the check gave them.
  std::vector<const CheckOutcome*> OutcomesOf(const std::string& check) const;
};

// What a passing verdict needs besides the absence of failures: evidence. A report with no judged case, or with
// skipped cases (unless allowed), or below the floors, does not pass (`run` and `gate` exit 1).
struct EvidencePolicy {
  uint64_t min_judged_cases = 1;    // cases judged: not skipped, not errored
  uint64_t min_draws = 1;           // draws over the judged cases
  bool allow_skipped = false;       // skipped cases (params invalid under the judged profile, an unjudgeable row)
                                    // are reported, and fail the verdict unless allowed
  bool allow_underpowered = false;  // a row case whose draws reach less than the report's power at its TV (a cap,
                                    // --max-draws, a time budget) fails the verdict unless allowed: a pass on 38
                                    // draws is no evidence that the sampler is right
};

// A property of the RapidCheck suites run by the same gate (`samplecheck verify`; properties/suite.h).
struct PropertyOutcome {
  std::string name;
  std::string status;  // passed, FAILED, skipped, GAVE UP, ERROR
  bool ok = true;      // passed or skipped
  int cases = 0;
  std::string message;  // failure: the shrunk counterexample; skip: why
  std::string replay;   // a command line that replays the failure
};

struct MachineInfo {
  std::string hostname;
  std::string os;
  std::string cpu;
  uint32_t cores = 0;
};

// A token histogram kept sparse: (token, draws) for the tokens drawn at least once, in token order.
using SparseCounts = std::vector<std::pair<int32_t, uint64_t>>;

// The raw evidence of the draws a shard made of one row case (docs/scale.md): counts are sufficient statistics,
// so `samplecheck merge` adds the pieces of every shard and judges the case once, exactly as an unsharded run.
struct ShardRowEvidence {
  std::string name;                                   // the case
  std::vector<std::pair<uint64_t, uint64_t>> pieces;  // draw ranges [begin, end) this shard made (offset + begin ..)
  SparseCounts histogram;                             // their draws per token
  uint64_t invalid_draws = 0;
  std::string sampler_error;  // the sampler failed on one of them ("" when none)
  // The agreement check's draws (a sampler with a counting fast path), made by the shard holding draw 0.
  bool has_agreement = false;
  uint64_t agreement_draws = 0;
  bool agreement_deterministic = false;
  SparseCounts agreement_fast, agreement_sampled;
  int64_t agreement_first_difference = -1;
  int32_t agreement_fast_token = 0, agreement_sampled_token = 0;
  int32_t agreement_sampled_alone_token = -1;  // kInvalidToken: not drawn (shards before it)
  // The stream checks' fields (seed_dependence, fresh_handle, step_repeats, ...) as this shard judged them from the
  // case's first draws, which it holds; null in the other shards' evidence (and in reports before issue 31).
  nlohmann::json stream;
};

// What makes a report a shard's (run --shard I/N): which part it is, what fixes the plan, and the evidence of its
// row cases (its batch cases are drawn whole and judged in CampaignReport::cases).
struct ShardInfo {
  uint32_t index = 0;  // 0-based, < count
  uint32_t count = 1;
  std::string source;                 // where the index came from: "--shard", "GTEST_SHARD_INDEX", ...
  uint64_t plan_fingerprint = 0;      // of every case's name, row seed, parameters and draws
  std::optional<double> tv;           // the plan's overrides (--tv, --max-draws, --generated), for merge to
  std::optional<uint64_t> max_draws;  // plan again exactly as the shards did
  uint64_t generated = 0;
  uint64_t items = 0;  // work items of this shard (whole cases, or draw ranges of big ones)
  std::vector<ShardRowEvidence> evidence;
};

// The Plan stage's decision, recorded in the report ("draw_plan", docs/report-format.md): every planned case's draws
// and why, what decided them, and the time planned against the time spent. A run is reproducible from (suite, seed,
// sampler, profile) when `basis` does not depend on the clock (kPower, kShard, kRecorded); otherwise
// `samplecheck run ... --plan-from <this report>` replays exactly this plan.

// Why a planned case has its draws; the report writes the name beside each ("why").
enum class DrawsWhy {
  kPower,        // "power": what the power plan asks, under the cap
  kCap,          // "cap": the power plan asks more than --max-draws
  kFloor,        // "floor": raised to the suite's min_draws
  kBudget,       // "budget": what the time budget gave (full power)
  kBudgetCap,    // "budget cap": the time budget gave less than the power plan asks
  kBatch,        // "batch": a batch case's draws (planned with its batch)
  kUnsamplable,  // "unsamplable": a row without a sampling distribution (no draws)
  kSkipped,      // "skipped": not drawn (its reason in the case)
  kRefusal,      // "refusal": a refusal probe (its parameters must be refused; no draws)
  kReplanned,    // "replanned": back to its cap when the first cases ran slower than planned
  kRecorded,     // "recorded": the draws of a report written before plans were recorded
};
const char* DrawsWhyName(DrawsWhy why);
// kParse naming the text and every allowed name.
Result<DrawsWhy> DrawsWhyFromName(const std::string& name);

// What decided the plan; the report writes the name ("basis").
enum class PlanBasis {
  kPower,            // "power": no time budget
  kBudgetFullPower,  // "budget: full power": the time budget affords every case's power plan
  kBudgetCaps,       // "budget: caps": the time budget affords less; the cases at their caps
  kBudgetReplanned,  // "budget: replanned": full power, then re-planned when the first cases ran slower
  kBudgetTv,         // "budget: tv": --tv auto: full power at the least TV the time budget affords (DrawPlan::tv)
  kShard,            // "shard": a shard plans without the clock
  kRecorded,         // "recorded": --plan-from, or the journal of a resumed run
};
const char* PlanBasisName(PlanBasis basis);
// kParse naming the text and every allowed name.
Result<PlanBasis> PlanBasisFromName(const std::string& name);

struct PlannedCase {
  std::string name;
  uint64_t draws = 0;
  uint64_t max_draws = 0;  // the cap it was planned under (raised when the time budget gave full power)
  DrawsWhy why = DrawsWhy::kPower;
};
struct DrawPlan {
  PlanBasis basis = PlanBasis::kPower;
  std::string reason;              // one line for people: the budget, the measured cost, what it afforded
  double budget_seconds = 0.0;     // the time budget (0: none)
  double planned_seconds = 0.0;    // the estimate before drawing, from the measured cost (0: not measured)
  double spent_seconds = 0.0;      // from the first draw to the last judged case
  uint64_t fingerprint = 0;        // of every case's name, row seed, parameters, vocabulary and draws
  uint32_t replanned = 0;          // cases sent back to their caps during the run
  std::vector<PlannedCase> cases;  // every planned case, in suite order
  // The TV every case was planned at when the run fixed it (--tv, or --tv auto: chosen by the time budget); nullopt
  // when each case has its suite's TV. --plan-from replays at it; the gate plans the report again at it.
  std::optional<double> tv;
  // --tv auto: the time budget (seconds) and the measured draws/s that chose `tv` (0: not chosen by a budget).
  double tv_chosen_budget_seconds = 0.0;
  double tv_chosen_draws_per_second = 0.0;

  bool empty() const { return cases.empty(); }
};
// The record as JSON and back (kParse naming the field).
nlohmann::json DrawPlanToJson(const DrawPlan& plan);
Result<DrawPlan> DrawPlanFromJson(const nlohmann::json& json);

struct CampaignReport {
  std::string schema = kReportSchema;
  std::string samplecheck_version;
  std::string suite;         // name
  std::string suite_source;  // builtin:<name> or the file path
  std::string sampler;       // Sampler::Name()
  std::string sampler_spec;  // --sampler as given
  // How the sampler's counted draws relate to its Sample: "" (the same tokens at the same seeds and offsets, or no
  // counting path), "distributional" (another of its paths: Capabilities::count_distributional).
  std::string sampler_counts;
  std::string profile;     // judged profile
  uint64_t seed = 0;       // rows and their perturbations
  uint64_t draw_seed = 0;  // the sampler's seeds (== seed unless --draw-seed)
  double alpha = 0.0;
  double tv = 0.0;
  double power = 0.0;
  MachineInfo machine;
  std::optional<std::string> gpu;  // nvidia-smi name and driver, null without a GPU
  std::optional<std::string> git_revision;
  std::string started;  // ISO 8601 UTC
  double seconds = 0.0;
  std::string command_line;
  EvidencePolicy evidence;  // what the verdict needs besides no failure
  // --max-draws of the run (it lowers every case's cap below the suite's; none: the suite's caps). A row case it
  // keeps below the target power is underpowered (UnderpoweredCases); the caps a suite sets itself are its design.
  std::optional<uint64_t> max_draws_override;
  // Power by budget (suite budget_seconds): the budget, the measured throughput it was judged with, and whether it
  // gave every row case its planned draws. budget_seconds 0: no budget.
  double budget_seconds = 0.0;
  double measured_draws_per_second = 0.0;
  bool full_power = false;
  // --equivalence EPS (0: not asked): every judged case must certify TV < EPS on its binnings (and chi-square
  // divergence < equivalence_chi2_eps when that is set); the cases carry their bounds ("equivalence").
  double equivalence_eps = 0.0;
  double equivalence_chi2_eps = 0.0;
  // The sampler or verifier declared itself lossy (Capabilities::lossy; `lossy:<spec>`): its cases' p-values are
  // measurements, never Holm rejections; the verdict is a distance (the cases' equivalence bounds), judged against
  // equivalence_eps (run --equivalence, gate --max-tv) and otherwise not a pass.
  bool lossy = false;
  bool interrupted = false;     // the run was stopped (SIGINT, SIGTERM) before every case was judged
  bool properties_run = false;  // the property suites ran with the campaign (samplecheck verify)
  uint64_t property_seed = 0;
  std::vector<PropertyOutcome> properties;
  size_t planned_cases = 0;  // cases of the suite (cases holds the finished ones when interrupted)
  // --case: the names the run selected (its cases are those entries' only, planned as in the whole suite); empty:
  // the whole suite. The report's "selected_cases" (absent in reports before it).
  std::vector<std::string> selected_cases;
  // The command that runs this campaign again with what fixes its draws (suite, sampler or verifier, profile,
  // seeds, TV, caps, --generated, the time budget, --plan-from): a failing case's reproduce line is this plus
  // " --case <name>" (ReproduceLine). "" where no command runs it again (merge, replay, reports before it).
  std::string reproduce;

  // The line that draws case `c` alone exactly as this campaign drew it ("" without `reproduce`).
  std::string ReproduceLine(const CaseResult& c) const;
  std::vector<CaseResult> cases;
  // run --shard: this report is one shard's evidence, not a verdict (VerdictProblems says so); merge judges.
  std::optional<ShardInfo> shard;
  uint32_t merged_shards = 0;  // samplecheck merge: the shards this report was judged from (0: not merged)
  DrawPlan draw_plan;          // what the Plan stage decided (empty in reports before the record)

  // Pass: no case failed or errored, the run was not interrupted, no case was skipped (unless allowed), every
  // judged row case reached the target power at its TV (unless allowed), and the judged cases and their draws
  // reach the floors of `evidence`.
  bool Passed() const { return VerdictProblems().empty(); }
  // Why the report does not pass, one line each ("2 cases failed", "no evidence: 0 judged cases, at least 1
  // needed", ...); empty when it passes.
  std::vector<std::string> VerdictProblems() const;
  size_t Count(CaseStatus status) const;
  uint64_t JudgedCases() const;  // not skipped, not errored
  uint64_t JudgedDraws() const;  // draws of the judged cases
  // Judged cases (at least one p-value test) below `power` at their TV and below their planned draws that were cut:
  // row cases (not batch rows) at --max-draws (max_draws_override), and any case a recorded plan gave fewer draws
  // than this suite plans for it (recorded_cut).
  std::vector<const CaseResult*> UnderpoweredCases() const;
};

// The plan of a report for --plan-from: its recorded draw_plan, or (a report written before plans were recorded)
// every case's draws as it ran them. kInvalidArgument for a shard's report, or one that lacks cases of its plan.
Result<DrawPlan> PlanOfReport(const CampaignReport& report);

// tests and p_value of one case from its outcomes: the p-value outcomes, Bonferroni min(1, tests * min p).
void ComputeCasePValue(CaseResult& c);

// The verdict of every case from its outcomes: tests and p_value (Bonferroni over the p-value outcomes), Holm over
// the judged cases (not skipped, at least one p-value test) at report.alpha, then each case's status: fail on any
// failing hard outcome or a Holm rejection. Used by the campaign after the last case and by the gate to recompute
// the verdict of a stored report.
void ApplyCampaignVerdict(CampaignReport& report);

// `gate --max-tv T`: judges every row case's stored equivalence bounds against TV T (as run --equivalence T would),
// then the verdict (ApplyCampaignVerdict). kInvalidArgument for T outside (0, 1).
Status ApplyMaxTv(CampaignReport& report, double max_tv);

}  // namespace samplecheck::harness
