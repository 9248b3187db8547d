// The campaign report as JSON: what `samplecheck run` writes and `samplecheck gate` reads. Versioned schema
// "samplecheck-report/1", documented field by field in docs/report-format.md. The report keeps the fields of every
// check of every case (binned counts and expected cell probabilities included), so a gate can recompute every
// verdict and run the two-sample test against a baseline report without the sampler.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/core/files.h"

namespace samplecheck::harness {

nlohmann::json ReportToJson(const CampaignReport& report);
// One case as the report holds it, and back (kParse naming the field); the journal writes cases this way.
nlohmann::json CaseToJson(const CaseResult& c);
Result<CaseResult> CaseFromJson(const nlohmann::json& json);
// kParse with the path of the offending field; rejects other schema versions. The checks' outcomes are read back
// from their fields (checks.h), so a loaded report is judged exactly as the campaign judged it.
Result<CampaignReport> ReportFromJson(const nlohmann::json& json);
// Replaces the file at `path` atomically (core/files.h): the previous report survives any failure byte for byte; a
// symbolic link at `path` is refused unless options.follow_symlink. Never throws (invalid UTF-8 becomes U+FFFD).
Status SaveReport(const CampaignReport& report, const std::filesystem::path& path, const WriteOptions& options = {});
Result<CampaignReport> LoadReport(const std::filesystem::path& path);

// The one-screen summary of `run` and `gate`: header, counts, every failed / skipped case with its reason, the
// smallest p-values, the lowest achieved power, and the verdict line "VERDICT: PASS" / "VERDICT: FAIL".
std::string FormatSummary(const CampaignReport& report);
// "chosen by the S s budget at R draws/s" when --tv auto chose the report's TV (draw_plan.tv_chosen_by), else "".
std::string TvChosenBy(const CampaignReport& report);

}  // namespace samplecheck::harness
