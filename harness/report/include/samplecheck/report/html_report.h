// The self-contained HTML report of a campaign: one file, inline CSS and SVG, no script, no external asset, so
// it can be attached to a CI run or mailed. Contents (docs/report-format.md "HTML"): the verdict with its reasons
// and the flags it was reached under, and the run metadata; then the layout of the report's kind. Sampler and
// speculative reports: the campaign's p-values against the Holm thresholds (speculative: the acceptance by
// position first); a table of the cases with their reasons; per case, observed vs expected frequencies of the
// head tokens and the tokens drawn outside the kept set, the standardized residuals against the max-|z|
// threshold, the observed/expected ratio of the tail bins with +-3 sigma bands, the largest residuals and the
// support violations. Replay reports: the aggregate, the per-row logprob error, the rows and their details.
#pragma once

#include <filesystem>
#include <string>

#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/core/files.h"

namespace samplecheck::harness {

std::string RenderHtmlReport(const CampaignReport& report);
// Replaces the file at `path` atomically, as SaveReport does.
Status SaveHtmlReport(const CampaignReport& report, const std::filesystem::path& path, const WriteOptions& options = {});

}  // namespace samplecheck::harness
