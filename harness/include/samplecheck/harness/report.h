// The campaign report: what `samplecheck run` writes and `samplecheck gate` reads. JSON, versioned schema
// "samplecheck-report/1", documented field by field in docs/report-format.md. The report keeps the binned counts
// and expected cell probabilities of every case, so a gate can recompute every verdict and run the two-sample
// test against a baseline report without the sampler.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/harness/row_source.h"
#include "samplecheck/reference/error.h"
#include "samplecheck/reference/params.h"

namespace samplecheck::harness {

inline constexpr char kReportSchema[] = "samplecheck-report/1";

// One binning of one case: the cells, their expected probabilities (from p0 only) and the observed counts.
struct BinningResult {
  std::string name;                  // "head", "tail", "hash"
  std::vector<double> expected;      // p0 mass per cell (sums to 1)
  std::vector<uint64_t> observed;    // draws per cell
  std::vector<int32_t> cell_token;   // head binning: the token of each single-token cell, -1 for the rest cell
  double pearson = 0.0;              // X^2 (the gate statistic)
  double pearson_p = 1.0;
  double g = 0.0;                    // G (reported)
  double g_p = 1.0;
  uint64_t dof = 0;
  double min_expected = 0.0;         // least N * p0 over the cells
};

struct Residual {
  int32_t token = 0;
  uint64_t observed = 0;
  double expected = 0.0;             // N * p0
  double z = 0.0;                    // (O - E) / sqrt(E (1 - p0))
};

struct SupportViolation {
  int32_t token = 0;                 // -1: invalid token (kInvalidToken or an id outside [0, V))
  uint64_t count = 0;
};

enum class CaseStatus { kPass, kFail, kSkipped, kError };
const char* CaseStatusName(CaseStatus status);

struct CaseResult {
  std::string name;
  RowSpec row;
  uint64_t row_seed = 0;
  SamplingParams params;             // seed/offset: the RNG of the case's first draw
  std::string profile;               // the judged profile

  CaseStatus status = CaseStatus::kPass;
  std::string reason;                // why failed / skipped / error; empty on pass

  int64_t vocab = 0;
  int64_t kept = 0;                  // tokens of positive reference probability
  bool greedy = false;
  std::vector<int32_t> ambiguous;    // ambiguous tokens of the unperturbed reference
  bool perturbed = false;            // the row was jittered (docs/campaigns.md) to clear them
  uint32_t perturb_attempts = 0;
  double perturb_scale = 0.0;        // largest jitter added to a logit
  bool conditioned = false;          // judged on the unambiguous tokens only (AmbiguousAction::kCondition)
  uint64_t ambiguous_draws = 0;      // draws of ambiguous tokens set apart when conditioned

  double tv = 0.0;                   // detectable TV the draws were planned for
  double alpha_plan = 0.0;           // per-test alpha the plan assumed (campaign alpha / (cases x tests))
  uint64_t planned_draws = 0;        // from the power planner (before the cap)
  uint64_t max_draws = 0;            // the cap
  uint64_t draws = 0;                // draws made
  double achieved_power = 0.0;       // power at `tv` of the gate binning at `draws` (worst-case shift)

  uint64_t support_violations = 0;   // draws outside the kept set, invalid tokens included
  uint64_t invalid_draws = 0;        // draws that returned an invalid token
  std::vector<SupportViolation> violation_tokens;  // the most frequent offenders (at most 16)
  std::string sampler_error;         // the sampler failed (an error, not a crash): the case fails

  std::vector<BinningResult> binnings;
  double max_abs_z = 0.0;            // over head tokens
  int32_t max_z_token = -1;
  double max_z_threshold = 0.0;      // Bonferroni two-sided threshold at alpha_plan
  double max_z_p = 1.0;              // Bonferroni-adjusted p of the max-|z| test
  uint32_t tests = 0;                // tests in the case (usable binnings + max-|z|)
  double p_value = 1.0;              // Bonferroni over the case's tests: min(1, tests * min p)
  double holm_adjusted_p = 1.0;      // Holm over the campaign's judged cases
  std::vector<Residual> top_residuals;  // largest |z| among head tokens (at most 10)
  double seconds = 0.0;
};

struct MachineInfo {
  std::string hostname;
  std::string os;
  std::string cpu;
  uint32_t cores = 0;
};

struct CampaignReport {
  std::string schema = kReportSchema;
  std::string samplecheck_version;
  std::string suite;                 // name
  std::string suite_source;          // builtin:<name> or the file path
  std::string sampler;               // Sampler::Name()
  std::string sampler_spec;          // --sampler as given
  std::string profile;               // judged profile
  uint64_t seed = 0;                 // rows and their perturbations
  uint64_t draw_seed = 0;            // the sampler's seeds (== seed unless --draw-seed)
  double alpha = 0.0;
  double tv = 0.0;
  double power = 0.0;
  MachineInfo machine;
  std::optional<std::string> gpu;    // nvidia-smi name and driver, null without a GPU
  std::optional<std::string> git_revision;
  std::string started;               // ISO 8601 UTC
  double seconds = 0.0;
  std::string command_line;
  std::vector<CaseResult> cases;

  // "pass" when every judged case passes (skipped cases are reported, never judged), "fail" otherwise.
  bool Passed() const;
  size_t Count(CaseStatus status) const;
};

nlohmann::json ReportToJson(const CampaignReport& report);
// kParse with the path of the offending field; rejects other schema versions.
Result<CampaignReport> ReportFromJson(const nlohmann::json& json);
Status SaveReport(const CampaignReport& report, const std::filesystem::path& path);
Result<CampaignReport> LoadReport(const std::filesystem::path& path);

// Holm over the cases whose p-value judges them (not skipped, no support violation deciding them already), then
// each case's status: fail on a support violation, an invalid draw, or a Holm rejection at `alpha`. Used by the
// campaign after the last case and by the gate to recompute the verdict of a stored report.
void ApplyCampaignVerdict(CampaignReport& report);

// The one-screen summary of `run` and `gate`: header, counts, every failed / skipped case with its reason, the
// smallest p-values, the lowest achieved power, and the verdict line "VERDICT: PASS" / "VERDICT: FAIL".
std::string FormatSummary(const CampaignReport& report);

}  // namespace samplecheck::harness
