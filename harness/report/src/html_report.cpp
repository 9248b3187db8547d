#include "samplecheck/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "samplecheck/checks/checks.h"
#include "samplecheck/core/format.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

std::string Escape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // a plugin's message or a file name may hold any bytes
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A number of the page: FormatSignificant at 3 digits unless told, and every NaN "nan" (never "-nan").
std::string Fmt(double v, int digits = 3) { return std::isnan(v) ? "nan" : FormatSignificant(v, digits); }

const char* StatusClass(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kSkipped: return "skip";
    case CaseStatus::kError: return "fail";
  }
  return "fail";
}

// A small chart frame: plot area [left, left + w] x [top, top + h] inside an svg of the given size.
struct Frame {
  double width = 560, height = 200, left = 52, right = 12, top = 14, bottom = 34;
  double w() const { return width - left - right; }
  double h() const { return height - top - bottom; }
  double X(double fx) const { return left + fx * w(); }        // fx in [0, 1]
  double Y(double fy) const { return top + (1.0 - fy) * h(); }  // fy in [0, 1]
};

void OpenSvg(std::ostringstream& os, const Frame& f, const std::string& title) {
  os << "<svg class=\"chart\" viewBox=\"0 0 " << f.width << " " << f.height << "\" width=\"" << f.width
     << "\" height=\"" << f.height << "\" role=\"img\"><title>" << Escape(title) << "</title>";
  os << "<rect x=\"" << f.left << "\" y=\"" << f.top << "\" width=\"" << f.w() << "\" height=\"" << f.h()
     << "\" class=\"plot\"/>";
}

void YAxis(std::ostringstream& os, const Frame& f, double lo, double hi, int ticks, const std::string& label,
           bool log10_labels = false) {
  for (int i = 0; i <= ticks; ++i) {
    const double fy = double(i) / ticks;
    const double v = lo + fy * (hi - lo);
    const double y = f.Y(fy);
    os << "<line x1=\"" << f.left << "\" x2=\"" << f.left + f.w() << "\" y1=\"" << y << "\" y2=\"" << y
       << "\" class=\"grid\"/>";
    os << "<text x=\"" << f.left - 5 << "\" y=\"" << y + 3.5 << "\" class=\"tick\" text-anchor=\"end\">"
       << (log10_labels ? "1e-" + Fmt(v, 2) : Fmt(v, 3)) << "</text>";
  }
  os << "<text x=\"12\" y=\"" << f.top + f.h() / 2 << "\" class=\"axis\" transform=\"rotate(-90 12 "
     << f.top + f.h() / 2 << ")\" text-anchor=\"middle\">" << Escape(label) << "</text>";
}

void XLabel(std::ostringstream& os, const Frame& f, const std::string& label) {
  os << "<text x=\"" << f.left + f.w() / 2 << "\" y=\"" << f.height - 4 << "\" class=\"axis\" text-anchor=\"middle\">"
     << Escape(label) << "</text>";
}

std::optional<StoredBinning> FindBinning(const CaseResult& c, const std::string& name) {
  for (StoredBinning& b : StoredBinnings(c)) {
    if (b.name == name) return std::move(b);
  }
  return std::nullopt;
}

// Campaign p-values, sorted, as -log10 p against the Holm thresholds alpha / (m - i).
std::string PValueChart(const CampaignReport& r) {
  std::vector<std::pair<double, const CaseResult*>> ps;
  for (const auto& c : r.cases) {
    if (c.status == CaseStatus::kSkipped || c.status == CaseStatus::kError || c.tests == 0) continue;
    ps.push_back({std::max(c.p_value, 1e-300), &c});
  }
  if (ps.empty()) return "<p class=\"muted\">No case has a p-value.</p>";
  std::sort(ps.begin(), ps.end(), [](auto& a, auto& b) { return a.first < b.first; });
  const size_t m = ps.size();
  double top = -std::log10(r.alpha / double(m)) + 1.0;
  for (auto& [p, c] : ps) top = std::max(top, std::min(-std::log10(p), 40.0) + 0.5);
  top = std::ceil(top);
  Frame f;
  const int ticks = top <= 10 ? static_cast<int>(top) : 5;
  f.width = 900;
  f.height = 240;
  std::ostringstream os;
  OpenSvg(os, f, "campaign p-values");
  YAxis(os, f, 0, top, ticks, "-log10 p");
  // Holm step: the i-th smallest p (0-based) is compared with alpha / (m - i).
  os << "<polyline class=\"threshold\" points=\"";
  for (size_t i = 0; i < m; ++i) {
    const double t = -std::log10(r.alpha / double(m - i));
    const double x0 = f.X(double(i) / m);
    const double x1 = f.X(double(i + 1) / m);
    os << x0 << "," << f.Y(t / top) << " " << x1 << "," << f.Y(t / top) << " ";
  }
  os << "\"/>";
  os << "<text x=\"" << f.X(0.0) + 6 << "\" y=\"" << f.Y((-std::log10(r.alpha / double(m))) / top) - 6
     << "\" class=\"tick thr\" text-anchor=\"start\">Holm thresholds alpha / (m - i), alpha " << Fmt(r.alpha) << "</text>";
  for (size_t i = 0; i < m; ++i) {
    const double lp = std::min(-std::log10(ps[i].first), top);
    const bool fail = ps[i].second->status == CaseStatus::kFail;
    const double x = f.X((double(i) + 0.5) / m);
    os << "<circle cx=\"" << x << "\" cy=\"" << f.Y(lp / top) << "\" r=\"4\" class=\"" << (fail ? "dot-fail" : "dot")
       << "\"><title>" << Escape(ps[i].second->name) << ": p = " << Fmt(ps[i].first) << "</title></circle>";
  }
  XLabel(os, f, "judged cases, by p-value (" + std::to_string(m) + "); red: failed (Holm or support)");
  os << "</svg>";
  // Expected under the null: the sorted p-values of m uniform variables; report a one-line reading.
  return os.str();
}

// Observed vs expected frequency of the head tokens (the most probable first), grouped bars.
std::string HeadChart(const CaseResult& c) {
  const std::optional<StoredBinning> head = FindBinning(c, "head");
  if (!head) return "";
  std::vector<size_t> cells;
  for (size_t i = 0; i < head->cell_token.size(); ++i) {
    if (head->cell_token[i] >= 0) cells.push_back(i);
  }
  if (cells.empty()) return "";
  std::stable_sort(cells.begin(), cells.end(), [&](size_t a, size_t b) { return head->expected[a] > head->expected[b]; });
  if (cells.size() > 32) cells.resize(32);
  double n = 0;
  for (uint64_t o : head->observed) n += double(o);
  if (n <= 0) return "";
  double ymax = 0;
  for (size_t i : cells) ymax = std::max({ymax, head->expected[i], double(head->observed[i]) / n});
  ymax *= 1.1;
  Frame f;
  f.bottom = 44;
  std::ostringstream os;
  OpenSvg(os, f, "head tokens: observed vs expected");
  YAxis(os, f, 0, ymax, 4, "frequency");
  const double slot = f.w() / double(cells.size());
  for (size_t k = 0; k < cells.size(); ++k) {
    const size_t i = cells[k];
    const double e = head->expected[i];
    const double o = double(head->observed[i]) / n;
    const double x = f.left + k * slot;
    const double bw = std::max(1.0, slot * 0.38);
    os << "<rect class=\"exp\" x=\"" << x + slot * 0.1 << "\" y=\"" << f.Y(e / ymax) << "\" width=\"" << bw
       << "\" height=\"" << f.Y(0) - f.Y(e / ymax) << "\"><title>token " << head->cell_token[i] << " expected "
       << Fmt(e, 6) << "</title></rect>";
    os << "<rect class=\"obs\" x=\"" << x + slot * 0.1 + bw << "\" y=\"" << f.Y(o / ymax) << "\" width=\"" << bw
       << "\" height=\"" << f.Y(0) - f.Y(o / ymax) << "\"><title>token " << head->cell_token[i] << " observed "
       << Fmt(o, 6) << " (" << head->observed[i] << ")</title></rect>";
    if (cells.size() <= 32) {
      const double tx = x + slot / 2;
      const double ty = f.Y(0) + 10;
      os << "<text x=\"" << tx << "\" y=\"" << ty << "\" class=\"tick small\" text-anchor=\"end\" transform=\"rotate(-45 "
         << tx << " " << ty << ")\">" << head->cell_token[i] << "</text>";
    }
  }
  os << "<rect x=\"" << f.X(0.70) << "\" y=\"" << f.top + 4 << "\" width=\"10\" height=\"10\" class=\"exp\"/>"
     << "<text x=\"" << f.X(0.70) + 14 << "\" y=\"" << f.top + 13 << "\" class=\"tick\">expected</text>"
     << "<rect x=\"" << f.X(0.85) << "\" y=\"" << f.top + 4 << "\" width=\"10\" height=\"10\" class=\"obs\"/>"
     << "<text x=\"" << f.X(0.85) + 14 << "\" y=\"" << f.top + 13 << "\" class=\"tick\">observed</text>";
  XLabel(os, f, "head tokens (most probable first; token ids)");
  os << "</svg>";
  return os.str();
}

// Standardized residuals of the head tokens in p0-rank order, with the max-|z| threshold.
std::string ResidualChart(const CaseResult& c) {
  const std::optional<StoredBinning> head = FindBinning(c, "head");
  const double threshold = StoredMaxAbsZTest(c).threshold;
  if (!head) return "";
  std::vector<size_t> cells;
  for (size_t i = 0; i < head->cell_token.size(); ++i) {
    if (head->cell_token[i] >= 0) cells.push_back(i);
  }
  if (cells.empty()) return "";
  std::stable_sort(cells.begin(), cells.end(), [&](size_t a, size_t b) { return head->expected[a] > head->expected[b]; });
  double n = 0;
  for (uint64_t o : head->observed) n += double(o);
  std::vector<double> z;
  double zmax = std::max(3.0, threshold);
  for (size_t i : cells) {
    const double e = n * head->expected[i];
    const double var = e * (1.0 - head->expected[i]);
    z.push_back(var > 0 ? (double(head->observed[i]) - e) / std::sqrt(var) : 0.0);
    zmax = std::max(zmax, std::fabs(z.back()));
  }
  zmax = std::ceil(zmax * 1.1);
  Frame f;
  std::ostringstream os;
  OpenSvg(os, f, "head residuals");
  YAxis(os, f, -zmax, zmax, 4, "z");
  const double slot = f.w() / double(z.size());
  for (double t : {threshold, -threshold}) {
    if (t == 0) continue;
    const double y = f.Y((t + zmax) / (2 * zmax));
    os << "<line class=\"threshold\" x1=\"" << f.left << "\" x2=\"" << f.left + f.w() << "\" y1=\"" << y
       << "\" y2=\"" << y << "\"/>";
  }
  const double y0 = f.Y(0.5);
  for (size_t k = 0; k < z.size(); ++k) {
    const double y = f.Y((z[k] + zmax) / (2 * zmax));
    const bool out = threshold > 0 && std::fabs(z[k]) >= threshold;
    os << "<rect class=\"" << (out ? "res-out" : "res") << "\" x=\"" << f.left + k * slot + slot * 0.1
       << "\" y=\"" << std::min(y, y0) << "\" width=\"" << std::max(0.6, slot * 0.8) << "\" height=\""
       << std::max(0.5, std::fabs(y - y0)) << "\"><title>token " << head->cell_token[cells[k]] << ": z = "
       << Fmt(z[k]) << "</title></rect>";
  }
  XLabel(os, f, std::to_string(z.size()) + " head tokens by p0 rank; dashed: max-|z| threshold " +
                    Fmt(threshold));
  os << "</svg>";
  return os.str();
}

// Observed / expected per tail bin (equal expected mass, p0-rank order), with +-3 sigma bands.
std::string TailChart(const CaseResult& c) {
  const std::optional<StoredBinning> tail = FindBinning(c, "tail");
  if (!tail || tail->expected.size() < 2) return "";
  double n = 0;
  for (uint64_t o : tail->observed) n += double(o);
  if (n <= 0) return "";
  const size_t k = tail->expected.size();
  std::vector<double> ratio(k), band(k);
  double dev = 0.05;
  for (size_t i = 0; i < k; ++i) {
    const double e = n * tail->expected[i];
    ratio[i] = e > 0 ? double(tail->observed[i]) / e : 0.0;
    band[i] = e > 0 ? 3.0 / std::sqrt(e) : 0.0;
    dev = std::max({dev, std::fabs(ratio[i] - 1.0), band[i]});
  }
  dev = std::min(dev * 1.15, 1.0);
  const double lo = 1.0 - dev;
  const double hi = 1.0 + dev;
  auto fy = [&](double v) { return (std::clamp(v, lo, hi) - lo) / (hi - lo); };
  Frame f;
  std::ostringstream os;
  OpenSvg(os, f, "tail bins");
  YAxis(os, f, lo, hi, 4, "observed / expected");
  os << "<polygon class=\"band\" points=\"";
  for (size_t i = 0; i < k; ++i) os << f.X((i + 0.5) / k) << "," << f.Y(fy(1 + band[i])) << " ";
  for (size_t i = k; i-- > 0;) os << f.X((i + 0.5) / k) << "," << f.Y(fy(1 - band[i])) << " ";
  os << "\"/>";
  os << "<line class=\"unity\" x1=\"" << f.left << "\" x2=\"" << f.left + f.w() << "\" y1=\"" << f.Y(fy(1.0))
     << "\" y2=\"" << f.Y(fy(1.0)) << "\"/>";
  os << "<polyline class=\"ratio\" points=\"";
  for (size_t i = 0; i < k; ++i) os << f.X((i + 0.5) / k) << "," << f.Y(fy(ratio[i])) << " ";
  os << "\"/>";
  for (size_t i = 0; i < k; ++i) {
    const bool out = std::fabs(ratio[i] - 1.0) > band[i];
    os << "<circle cx=\"" << f.X((i + 0.5) / k) << "\" cy=\"" << f.Y(fy(ratio[i])) << "\" r=\"" << (k > 64 ? 1.8 : 2.6)
       << "\" class=\"" << (out ? "dot-fail" : "dot") << "\"><title>" << (i == 0 ? "head aggregate" : "tail bin " + std::to_string(i))
       << ": " << tail->observed[i] << " observed, " << Fmt(n * tail->expected[i], 6) << " expected</title></circle>";
  }
  XLabel(os, f, "bin 0 = all head tokens, then " + std::to_string(k - 1) +
                    " equal-mass tail bins by p0 rank; band: +-3 sigma");
  os << "</svg>";
  return os.str();
}

constexpr char kCss[] = R"css(
:root { --pass:#1a7f37; --fail:#cf222e; --skip:#9a6700; --ink:#1f2328; --muted:#656d76; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink); margin: 0;
       background: #f6f8fa; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 18px 28px; }
main { padding: 18px 28px 40px; max-width: 1280px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 26px 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.badge { display: inline-block; padding: 2px 12px; border-radius: 12px; color: #fff; font-weight: 600;
         font-size: 14px; vertical-align: middle; margin-left: 10px; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.meta { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 3px 16px; font-size: 13px; }
.meta dt { color: var(--muted); } .meta dd { margin: 0; font-family: ui-monospace, Menlo, monospace; }
.counts span { margin-right: 16px; font-weight: 600; }
.pass-t { color: var(--pass); } .fail-t { color: var(--fail); } .skip-t { color: var(--skip); }
table { border-collapse: collapse; background: #fff; width: 100%; font-size: 12.5px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; }
td.num { text-align: right; font-family: ui-monospace, Menlo, monospace; white-space: nowrap; }
tr.fail td:first-child { border-left: 4px solid var(--fail); } tr.skip td:first-child { border-left: 4px solid var(--skip); }
tr.pass td:first-child { border-left: 4px solid var(--pass); }
.st { font-weight: 600; text-transform: uppercase; font-size: 11px; }
.st.pass { color: var(--pass); } .st.fail { color: var(--fail); } .st.skip { color: var(--skip); }
details.case { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 6px 12px; }
details.case summary { cursor: pointer; font-weight: 600; }
details.case.fail { border-left: 5px solid var(--fail); } details.case.skip { border-left: 5px solid var(--skip); }
details.case.pass { border-left: 5px solid var(--pass); }
.reason { color: var(--fail); margin: 6px 0; } .skip .reason { color: var(--skip); }
.charts { display: flex; flex-wrap: wrap; gap: 10px; }
.chart { background: #fff; max-width: 100%; height: auto; }
.plot { fill: #fbfcfd; stroke: var(--line); } .grid { stroke: #eaeef2; } .tick { font-size: 10px; fill: var(--muted); }
.tick.small { font-size: 8.5px; } .axis { font-size: 11px; fill: var(--muted); }
.exp { fill: #8c959f; } .obs { fill: #0969da; } .res { fill: #0969da; } .res-out { fill: var(--fail); }
.threshold { fill: none; stroke: var(--fail); stroke-dasharray: 5 3; stroke-width: 1.2; } .thr { fill: var(--fail); }
.dot { fill: #0969da; } .dot-fail { fill: var(--fail); } .band { fill: #0969da; fill-opacity: 0.12; }
.unity { stroke: #8c959f; } .ratio { fill: none; stroke: #0969da; stroke-width: 1; }
.muted { color: var(--muted); } code { font-family: ui-monospace, Menlo, monospace; font-size: 12px; }
.kv { font-size: 12.5px; margin: 4px 0; } .kv b { font-weight: 600; }
)css";

void CaseRow(std::ostringstream& os, const CaseResult& c) {
  os << "<tr class=\"" << StatusClass(c.status) << "\"><td><a href=\"#case-" << Escape(c.name) << "\">"
     << Escape(c.name) << "</a></td><td class=\"st " << StatusClass(c.status) << "\">" << CaseStatusName(c.status)
     << "</td><td>" << Escape(DescribeRowSpec(c.row)) << "</td><td><code>" << Escape(DescribeParams(c.params))
     << "</code></td>";
  if (c.status == CaseStatus::kSkipped) {
    os << "<td colspan=\"7\" class=\"muted\">" << Escape(c.reason) << "</td></tr>";
    return;
  }
  os << "<td class=\"num\">" << c.kept << " / " << c.vocab << "</td><td class=\"num\">" << FormatCount(double(c.draws))
     << "</td><td class=\"num\">" << Fmt(c.achieved_power, 2) << "</td><td class=\"num\">" << c.HardViolations()
     << "</td><td class=\"num\">" << c.tests << "</td><td class=\"num\">" << (c.tests ? Fmt(c.p_value) : "-")
     << "</td><td class=\"num\">" << (c.tests ? Fmt(c.holm_adjusted_p) : "-") << "</td></tr>";
}

// The charts and tables of one check, for the checks that have any (the outcome table shows every check).
using CheckSection = std::string (*)(const CaseResult& c);

std::string PearsonSection(const CaseResult& c) { return "<div class=\"charts\">" + HeadChart(c) + TailChart(c) + "</div>"; }

std::string MaxAbsZSection(const CaseResult& c) {
  const StoredMaxAbsZ mz = StoredMaxAbsZTest(c);
  std::ostringstream os;
  os << "<div class=\"charts\">" << ResidualChart(c) << "</div>";
  if (!mz.top_residuals.empty()) {
    os << "<h3>Largest residuals (head tokens)</h3><table style=\"width:auto\"><tr><th>token</th><th>observed</th>"
          "<th>expected</th><th>z</th></tr>";
    for (const StoredResidual& r : mz.top_residuals) {
      os << "<tr><td class=\"num\">" << r.token << "</td><td class=\"num\">" << r.observed << "</td><td class=\"num\">"
         << Fmt(r.expected, 7) << "</td><td class=\"num\">" << Fmt(r.z) << "</td></tr>";
    }
    os << "</table>";
  }
  return os.str();
}

// The equivalence bounds of each binning (reported whether or not --equivalence asked for a verdict).
std::string EquivalenceSection(const CaseResult& c) {
  const StoredEquivalence e = StoredEquivalenceOf(c);
  if (!e.present) return "";
  std::ostringstream os;
  os << "<h3>Equivalence bounds (alpha " << Fmt(e.alpha) << " each)</h3>";
  if (!e.bound.ok()) return os.str() + "<div class=\"muted\">no bound: " + Escape(e.bound.error().message) + "</div>";
  os << "<table style=\"width:auto\"><tr><th>binning</th><th>cells</th><th>draws</th><th>TV observed</th>"
        "<th>TV upper</th><th>chi&sup2; observed</th><th>chi&sup2; upper</th></tr>";
  for (const nlohmann::json& b : c.checks["equivalence"]["binnings"]) {
    os << "<tr><td>" << Escape(b.at("name").get<std::string>()) << "</td><td class=\"num\">"
       << b.at("cells").get<uint64_t>() << "</td><td class=\"num\">"
       << FormatCount(double(b.at("draws").get<uint64_t>())) << "</td><td class=\"num\">"
       << Fmt(ReadJsonNumber(b.at("tv_point"))) << "</td><td class=\"num\">" << Fmt(ReadJsonNumber(b.at("tv_upper")))
       << "</td><td class=\"num\">" << Fmt(ReadJsonNumber(b.at("chi2_point"))) << "</td><td class=\"num\">"
       << Fmt(ReadJsonNumber(b.at("chi2_upper"))) << "</td></tr>";
  }
  os << "</table>";
  if (e.eps > 0) {
    os << "<div class=\"kv\"><b>equivalence within TV " << Fmt(e.eps) << "</b>: "
       << (e.certified     ? "certified"
           : e.lacks_draws ? "inconclusive for lack of draws (a correct sampler needs about " +
                                 FormatCount(e.draws_to_certify) + ")"
                           : std::string("inconclusive: the data point at a distance near or above it"))
       << "</div>";
  }
  return os.str();
}

CheckSection SectionOf(std::string_view check) {
  if (check == "pearson") return PearsonSection;
  if (check == "max-abs-z") return MaxAbsZSection;
  if (check == "equivalence") return EquivalenceSection;
  return nullptr;
}

void CaseDetails(std::ostringstream& os, const CaseResult& c) {
  const bool open = c.status == CaseStatus::kFail || c.status == CaseStatus::kError;
  os << "<details class=\"case " << StatusClass(c.status) << "\" id=\"case-" << Escape(c.name) << "\""
     << (open ? " open" : "") << "><summary>" << Escape(c.name) << " &mdash; <span class=\"st "
     << StatusClass(c.status) << "\">" << CaseStatusName(c.status) << "</span> <span class=\"muted\">"
     << Escape(DescribeRowSpec(c.row)) << ", " << Escape(DescribeParams(c.params)) << ", profile "
     << Escape(c.profile) << "</span></summary>";
  if (!c.reason.empty()) os << "<div class=\"reason\">" << Escape(c.reason) << "</div>";
  os << "<div class=\"kv\"><b>draws</b> " << c.draws << " (planned " << c.planned_draws << ", cap " << c.max_draws
     << ") &middot; <b>power</b> at TV " << Fmt(c.tv) << ": " << Fmt(c.achieved_power) << " &middot; <b>alpha/test</b> "
     << Fmt(c.alpha_plan) << " &middot; <b>kept</b> " << c.kept << " of " << c.vocab
     << (c.greedy ? " (greedy)" : "") << " &middot; <b>row seed</b> " << c.row_seed << " &middot; <b>draw seed</b> "
     << c.params.seed << "</div>";
  if (!c.ambiguous.empty()) {
    os << "<div class=\"kv\"><b>ambiguous tokens</b> " << c.ambiguous.size()
       << (c.perturbed ? " &mdash; row perturbed (attempt " + std::to_string(c.perturb_attempts) + ", jitter &plusmn;" +
                             Fmt(c.perturb_scale) + " logits)"
                       : std::string())
       << (c.conditioned ? " &mdash; judged conditioned on the unambiguous tokens (" + std::to_string(c.ambiguous_draws) +
                               " draws of ambiguous tokens set apart)"
                         : std::string())
       << (c.numeric_drift.empty() ? std::string()
                                   : " &mdash; numeric boundary drift: " + std::to_string(c.numeric_drift.size()) +
                                         " token(s) an fp32 engine may keep, " + std::to_string(c.drift_draws) +
                                         " draw(s) on them (never a violation)")
       << "</div>";
  }
  if (c.status == CaseStatus::kSkipped) {
    os << "</details>";
    return;
  }
  // Every outcome of every check, generically: hard checks first in the table as the checks gave them.
  os << "<table style=\"width:auto\"><tr><th>check</th><th>test</th><th>statistic</th><th>p</th><th>finding</th></tr>";
  for (const CheckOutcome& o : c.outcomes) {
    const bool hard = o.kind == CheckOutcome::Kind::kHard;
    os << "<tr" << (o.Fails() ? " class=\"fail\"" : "") << "><td>" << Escape(o.check) << "</td><td>" << Escape(o.test)
       << "</td><td class=\"num\">" << (hard ? std::to_string(o.violations) : Fmt(o.statistic, 5))
       << "</td><td class=\"num\">" << (hard ? std::string(o.Fails() ? "fail" : "pass") : Fmt(o.p_value))
       << "</td><td>" << Escape(o.finding) << "</td></tr>";
  }
  os << "</table>";
  if (c.tests == 0) os << "<div class=\"muted\">One kept token: support check only (no goodness of fit).</div>";
  for (const auto& check : CaseChecks()) {
    if (CheckSection section = SectionOf(check->Name())) os << section(c);
  }
  os << "</details>";
}

}  // namespace

std::string RenderHtmlReport(const CampaignReport& r) {
  std::ostringstream os;
  const bool pass = r.Passed();
  uint64_t draws = 0;
  for (const auto& c : r.cases) draws += c.status == CaseStatus::kSkipped ? 0 : c.draws;
  os << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>samplecheck: " << Escape(r.suite)
     << " / " << Escape(r.sampler) << " &mdash; " << (pass ? "PASS" : "FAIL") << "</title><style>" << kCss
     << "</style></head><body><header><h1>samplecheck report: " << Escape(r.suite) << " on " << Escape(r.sampler)
     << "<span class=\"badge " << (pass ? "pass" : "fail") << "\">" << (pass ? "PASS" : "FAIL") << "</span></h1>";
  os << "<div class=\"counts\"><span>" << r.cases.size() << " cases</span><span class=\"pass-t\">"
     << r.Count(CaseStatus::kPass) << " pass</span><span class=\"fail-t\">" << r.Count(CaseStatus::kFail)
     << " fail</span><span class=\"skip-t\">" << r.Count(CaseStatus::kSkipped) << " skipped</span>"
     << (r.Count(CaseStatus::kError)
             ? "<span class=\"fail-t\">" + std::to_string(r.Count(CaseStatus::kError)) + " error</span>"
             : std::string())
     << "<span class=\"muted\">" << FormatCount(double(draws)) << " draws in " << Fmt(r.seconds) << " s</span></div>";
  os << "<dl class=\"meta\"><dt>sampler</dt><dd>" << Escape(r.sampler) << " (<code>" << Escape(r.sampler_spec)
     << "</code>)</dd><dt>judged profile</dt><dd>" << Escape(r.profile) << "</dd><dt>suite</dt><dd>"
     << Escape(r.suite_source) << "</dd><dt>seed</dt><dd>" << r.seed
     << (r.draw_seed != r.seed ? " (draws " + std::to_string(r.draw_seed) + ")" : std::string())
     << "</dd><dt>alpha (Holm)</dt><dd>" << Fmt(r.alpha) << "</dd><dt>TV / power</dt><dd>" << Fmt(r.tv) << " / "
     << Fmt(r.power) << "</dd>"
     << (r.budget_seconds > 0 ? "<dt>time budget</dt><dd>" + Fmt(r.budget_seconds) + " s at " +
                                    FormatCount(r.measured_draws_per_second) + " draws/s: " +
                                    (r.full_power ? "every row case at its planned draws" : "draws capped") + "</dd>"
                              : std::string())
     << (r.equivalence_eps > 0
             ? "<dt>equivalence</dt><dd>every case within TV " + Fmt(r.equivalence_eps) +
                   (r.equivalence_chi2_eps > 0 ? " and chi&sup2; divergence " + Fmt(r.equivalence_chi2_eps)
                                               : std::string()) +
                   " (upper confidence bounds)</dd>"
             : std::string())
     << "<dt>machine</dt><dd>" << Escape(r.machine.hostname) << ", " << Escape(r.machine.cpu) << ", " << r.machine.cores
     << " cores</dd><dt>GPU</dt><dd>" << Escape(r.gpu.value_or("none")) << "</dd><dt>git</dt><dd>"
     << Escape(r.git_revision.value_or("unknown")) << "</dd><dt>started</dt><dd>" << Escape(r.started)
     << "</dd><dt>version</dt><dd>" << Escape(r.samplecheck_version) << "</dd><dt>command</dt><dd>"
     << Escape(r.command_line) << "</dd></dl></header><main>";
  os << "<h2>Campaign p-values</h2>" << PValueChart(r);
  os << "<h2>Cases</h2><table><tr><th>case</th><th>status</th><th>row</th><th>params</th><th>kept / V</th>"
        "<th>draws</th><th>power</th><th>hard failures</th><th>tests</th><th>p</th><th>Holm p</th></tr>";
  // Failures first, then skipped, then passes, each in suite order.
  for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
    for (const auto& c : r.cases) {
      if (c.status == s) CaseRow(os, c);
    }
  }
  os << "</table><h2>Case details</h2>";
  for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
    for (const auto& c : r.cases) {
      if (c.status == s) CaseDetails(os, c);
    }
  }
  os << "<p class=\"muted\">Schema " << Escape(r.schema)
     << ". Pearson X&sup2; gates each binning (head, tail, hash; cells from p0 only, expected &ge; 10); a case's p is "
        "Bonferroni over its tests, the campaign applies Holm at alpha. Any draw outside the kept set fails its case "
        "regardless of p-values. See docs/report-format.md and docs/campaigns.md.</p></main></body></html>\n";
  return os.str();
}

Status SaveHtmlReport(const CampaignReport& report, const std::filesystem::path& path, const WriteOptions& options) {
  return WriteFileAtomically(path, RenderHtmlReport(report), options);
}

}  // namespace samplecheck::harness
