// The campaign report as JSON: what `samplecheck run` writes and `samplecheck gate` reads. Versioned schema
// "samplecheck-report/1", documented field by field in docs/report-format.md. The report keeps the fields of every
// check of every case (binned counts and expected cell probabilities included), so a gate can recompute every
// verdict and run the two-sample test against a baseline report without the sampler.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/result.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

nlohmann::json ReportToJson(const CampaignReport& report);
// kParse with the path of the offending field; rejects other schema versions. The checks' outcomes are read back
// from their fields (checks.h), so a loaded report is judged exactly as the campaign judged it.
Result<CampaignReport> ReportFromJson(const nlohmann::json& json);
Status SaveReport(const CampaignReport& report, const std::filesystem::path& path);
Result<CampaignReport> LoadReport(const std::filesystem::path& path);

// The one-screen summary of `run` and `gate`: header, counts, every failed / skipped case with its reason, the
// smallest p-values, the lowest achieved power, and the verdict line "VERDICT: PASS" / "VERDICT: FAIL".
std::string FormatSummary(const CampaignReport& report);

}  // namespace samplecheck::harness
