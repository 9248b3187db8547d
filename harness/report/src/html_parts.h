// Inside the report library: the pieces every layout of the HTML report (html_report.cpp) is built from: escaping,
// the page's number format, the chart frame of the inline SVGs, and the verdict block at the top of the page. The
// layouts (the sampler campaign's, the replay campaign's in html_replay.cpp) differ in their tables and charts only.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "samplecheck/checks/result.h"

namespace samplecheck::harness::html {

// Text for HTML: &, <, > and " escaped, invalid UTF-8 replaced (a plugin's message or a file name may hold any bytes).
std::string Escape(const std::string& raw);
// A number of the page: FormatSignificant at 3 digits unless told, every NaN "nan" (never "-nan").
std::string Fmt(double v, int digits = 3);
// "pass", "fail", "skip": the CSS class of a status (an error is drawn as a failure).
const char* StatusClass(CaseStatus s);

// A small chart frame: plot area [left, left + w] x [top, top + h] inside an svg of the given size.
struct Frame {
  double width = 560, height = 200, left = 52, right = 12, top = 14, bottom = 34;
  double w() const { return width - left - right; }
  double h() const { return height - top - bottom; }
  double X(double fx) const { return left + fx * w(); }         // fx in [0, 1]
  double Y(double fy) const { return top + (1.0 - fy) * h(); }  // fy in [0, 1]
};
// `kind` becomes the svg's data-chart attribute (the browser test finds charts by it).
void OpenSvg(std::ostringstream& os, const Frame& f, const std::string& title, const std::string& kind);
void YAxis(std::ostringstream& os, const Frame& f, double lo, double hi, int ticks, const std::string& label,
           bool log10_labels = false);
void XLabel(std::ostringstream& os, const Frame& f, const std::string& label);

// Fields of a report's JSON read for display, never throwing (a field may be absent, null or of another kind in a
// report of another version): the object at `key` or nullptr; a number (a JSON number, or the strings "inf",
// "-inf" the report writes for infinities), NaN otherwise; a count as FormatCount writes it, "-" otherwise; a string,
// `absent` otherwise; a flag, false otherwise.
const nlohmann::json* ObjectAt(const nlohmann::json* j, const char* key);
double NumberAt(const nlohmann::json* j, const char* key);
std::string CountAt(const nlohmann::json* j, const char* key);
std::string TextAt(const nlohmann::json* j, const char* key, const std::string& absent = "-");
bool FlagAt(const nlohmann::json* j, const char* key);

// The page's stylesheet (inline: the page fetches nothing).
extern const char kCss[];

// What kind of campaign wrote the report, read from its cases' fields: a sampler's (`run`, `verify`, `merge`), a
// speculative verifier's (`run --verifier`: spec_* fields), a replay's (`replay`: replay_* fields).
enum class ReportLayout { kSampler, kSpeculative, kReplay };
ReportLayout LayoutOf(const CampaignReport& r);

// The verdict block: the badge, the flags the verdict was reached under (underpowered or capped draws allowed,
// skipped cases allowed, lossy, an equivalence bound) as badges beside it, and the verdict's reasons one per line
// (VerdictProblems, the failed cases grouped by what failed them).
std::string VerdictBlock(const CampaignReport& r);

// The reason a case shows in the cases table: its reason (failed, skipped, error), else what a pass needed
// ("underpowered: power 0.41 at TV 0.05, 1000 of 52000 planned draws, allowed"), else "".
std::string CaseReason(const CampaignReport& r, const CaseResult& c);

// The header of every layout: title, verdict block, counts and the run's metadata (<header> ... </header>).
std::string PageHeader(const CampaignReport& r, const std::string& kind_title);

// The generic outcomes table of one case (every outcome of every check).
std::string OutcomesTable(const CaseResult& c);

// The replay campaign's body (html_replay.cpp): the aggregate, the per-row logprob error plot, the rows' table and
// per-row details.
std::string ReplayBody(const CampaignReport& r);

}  // namespace samplecheck::harness::html
