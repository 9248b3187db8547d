// The self-contained HTML report of a campaign: one file, inline CSS and SVG, no script, no external asset, so
// it can be attached to a CI run or mailed. Contents: the verdict and run metadata; the campaign's p-values
// against the Holm thresholds; a table of the cases; per case, observed vs expected frequencies of the head
// tokens, their standardized residuals against the max-|z| threshold, the observed/expected ratio of the tail
// bins with +-3 sigma bands, the largest residuals and any support violation.
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
