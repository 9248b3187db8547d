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

#include "html_parts.h"

namespace samplecheck::harness {
namespace {

using html::Escape;
using html::Fmt;
using html::Frame;
using html::OpenSvg;
using html::StatusClass;
using html::XLabel;
using html::YAxis;

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
  OpenSvg(os, f, "campaign p-values", "pvalues");
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

// A draw outside the kept set, as the support check lists it (support.tokens: the invalid marker -1 first, then
// the tokens by count, the largest kept), with what else the list says of it (its reference probability, the
// filter that drops it, ...: shown when present, whatever their names).
struct Violation {
  int32_t token = 0;  // -1: an invalid token
  uint64_t count = 0;
  nlohmann::json extra = nlohmann::json::object();
};

std::vector<Violation> Violations(const CaseResult& c) {
  std::vector<Violation> out;
  if (!c.checks.contains("support") || !c.checks["support"].is_object()) return out;
  const nlohmann::json& support = c.checks["support"];
  if (!support.contains("tokens") || !support["tokens"].is_array()) return out;
  const nlohmann::json& tokens = support["tokens"];
  for (const nlohmann::json& t : tokens) {
    if (!t.is_object() || !t.contains("token") || !t.contains("count")) continue;
    if (!t["token"].is_number_integer() || !t["count"].is_number_unsigned()) continue;
    Violation v{t["token"].get<int32_t>(), t["count"].get<uint64_t>(), nlohmann::json::object()};
    for (const auto& [key, value] : t.items()) {
      if (key != "token" && key != "count") v.extra[key] = value;
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string TokenName(int32_t token) { return token < 0 ? std::string("invalid") : std::to_string(token); }

// A field of the report the page does not know by name: a number at 4 digits, a string, else its JSON.
std::string ExtraValue(const nlohmann::json& v) {
  if (v.is_number()) return Fmt(v.get<double>(), 4);
  if (v.is_string()) return Escape(v.get<std::string>());
  if (v.is_null()) return "-";
  return Escape(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Observed vs expected frequency of the head tokens (the most probable first), grouped bars; then the tokens drawn
// outside the kept set, red bars at expected 0 in a shaded zone (each at least a few pixels high, with a marker
// above it: one stray draw in a million is what the check is for).
std::string HeadChart(const CaseResult& c) {
  const std::optional<StoredBinning> head = FindBinning(c, "head");
  const std::vector<Violation> violations = Violations(c);
  std::vector<size_t> cells;
  double n = 0;
  if (head) {
    for (size_t i = 0; i < head->cell_token.size(); ++i) {
      if (head->cell_token[i] >= 0) cells.push_back(i);
    }
    std::stable_sort(cells.begin(), cells.end(),
                     [&](size_t a, size_t b) { return head->expected[a] > head->expected[b]; });
    for (uint64_t o : head->observed) n += double(o);
  }
  if (n <= 0) cells.clear();
  const size_t max_kept = violations.empty() ? 32 : 24;
  if (cells.size() > max_kept) cells.resize(max_kept);
  if (cells.empty() && violations.empty()) return "";
  const double draws = c.draws > 0 ? double(c.draws) : std::max(n, 1.0);
  double ymax = 0;
  for (size_t i : cells) ymax = std::max({ymax, head->expected[i], double(head->observed[i]) / n});
  for (const Violation& v : violations) ymax = std::max(ymax, double(v.count) / draws);
  ymax = ymax > 0 ? ymax * 1.1 : 1.0;
  Frame f;
  f.bottom = 44;
  if (!violations.empty()) f.top = 26;  // room above the plot for the legend and the zone's label
  std::ostringstream os;
  OpenSvg(os, f,
          violations.empty() ? "head tokens: observed vs expected"
                             : "head tokens and the tokens drawn outside the kept set",
          "head");
  YAxis(os, f, 0, ymax, 4, "frequency");
  const size_t slots = cells.size() + violations.size() + (cells.empty() || violations.empty() ? 0 : 1);
  const double slot = f.w() / double(slots);
  const double bw = std::max(1.0, slot * 0.38);
  auto tick = [&](double tx, const std::string& label, bool viol) {
    const double ty = f.Y(0) + 10;
    os << "<text x=\"" << tx << "\" y=\"" << ty << "\" class=\"tick small" << (viol ? " viol-t" : "")
       << "\" text-anchor=\"end\" transform=\"rotate(-45 " << tx << " " << ty << ")\">" << label << "</text>";
  };
  for (size_t k = 0; k < cells.size(); ++k) {
    const size_t i = cells[k];
    const double e = head->expected[i];
    const double o = double(head->observed[i]) / n;
    const double x = f.left + k * slot;
    os << "<rect class=\"exp\" x=\"" << x + slot * 0.1 << "\" y=\"" << f.Y(e / ymax) << "\" width=\"" << bw
       << "\" height=\"" << f.Y(0) - f.Y(e / ymax) << "\"><title>token " << head->cell_token[i] << " expected "
       << Fmt(e, 6) << "</title></rect>";
    os << "<rect class=\"obs\" x=\"" << x + slot * 0.1 + bw << "\" y=\"" << f.Y(o / ymax) << "\" width=\"" << bw
       << "\" height=\"" << f.Y(0) - f.Y(o / ymax) << "\"><title>token " << head->cell_token[i] << " observed "
       << Fmt(o, 6) << " (" << head->observed[i] << ")</title></rect>";
    tick(x + slot / 2, std::to_string(head->cell_token[i]), false);
  }
  if (!violations.empty()) {
    const size_t first = slots - violations.size();
    const double zone_x = f.left + first * slot;
    os << "<rect class=\"viol-zone\" x=\"" << zone_x << "\" y=\"" << f.top << "\" width=\"" << f.left + f.w() - zone_x
       << "\" height=\"" << f.h() << "\"/><text x=\"" << f.left + f.w() << "\" y=\"" << f.top - 6
       << "\" class=\"tick viol-t\" text-anchor=\"end\">shaded: outside the kept set (expected 0)</text>";
    for (size_t k = 0; k < violations.size(); ++k) {
      const Violation& v = violations[k];
      const double o = double(v.count) / draws;
      const double x = f.left + (first + k) * slot;
      const double h = std::max(3.0, f.Y(0) - f.Y(o / ymax));
      os << "<rect class=\"viol\" data-violating-token=\"" << v.token << "\" data-count=\"" << v.count << "\" x=\""
         << x + slot * 0.1 + bw << "\" y=\"" << f.Y(0) - h << "\" width=\"" << bw << "\" height=\"" << h
         << "\"><title>token " << TokenName(v.token) << " outside the kept set: drawn " << v.count << "x (" << Fmt(o, 3)
         << " of the draws), expected 0</title></rect>";
      os << "<circle class=\"viol-mark\" cx=\"" << x + slot * 0.1 + 1.5 * bw << "\" cy=\"" << f.Y(0) - h - 5
         << "\" r=\"2.6\"/>";
      tick(x + slot / 2, TokenName(v.token), true);
    }
  }
  // The legend: inside the plot's top right, or above the plot when the shaded zone holds that corner.
  const double lx = violations.empty() ? f.X(0.70) : f.left + 4;
  const double ly = violations.empty() ? f.top + 4 : f.top - 15;
  os << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"10\" height=\"10\" class=\"exp\"/>"
     << "<text x=\"" << lx + 14 << "\" y=\"" << ly + 9 << "\" class=\"tick\">expected</text>"
     << "<rect x=\"" << lx + 84 << "\" y=\"" << ly << "\" width=\"10\" height=\"10\" class=\"obs\"/>"
     << "<text x=\"" << lx + 98 << "\" y=\"" << ly + 9 << "\" class=\"tick\">observed</text>";
  XLabel(os, f,
         violations.empty() ? "head tokens (most probable first; token ids)"
                            : "head tokens (most probable first), then the " + std::to_string(violations.size()) +
                                  " listed token(s) outside the kept set (red)");
  os << "</svg>";
  return os.str();
}

// Standardized residuals of the head tokens in p0-rank order, with the max-|z| threshold; a token drawn outside the
// kept set has no finite z (expected 0): a red bar to the edge at the right.
std::string ResidualChart(const CaseResult& c) {
  const std::optional<StoredBinning> head = FindBinning(c, "head");
  const double threshold = StoredMaxAbsZTest(c).threshold;
  if (!head) return "";
  std::vector<size_t> cells;
  for (size_t i = 0; i < head->cell_token.size(); ++i) {
    if (head->cell_token[i] >= 0) cells.push_back(i);
  }
  if (cells.empty()) return "";
  const std::vector<Violation> violations = Violations(c);
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
  OpenSvg(os, f, "head residuals", "residuals");
  YAxis(os, f, -zmax, zmax, 4, "z");
  const double slot = f.w() / double(z.size() + violations.size());
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
  for (size_t k = 0; k < violations.size(); ++k) {
    os << "<rect class=\"viol\" data-violating-token=\"" << violations[k].token << "\" x=\""
       << f.left + (z.size() + k) * slot + slot * 0.1 << "\" y=\"" << f.top << "\" width=\""
       << std::max(1.5, slot * 0.8) << "\" height=\"" << y0 - f.top << "\"><title>token "
       << TokenName(violations[k].token) << " outside the kept set (" << violations[k].count
       << " draws, expected 0): z infinite</title></rect>";
  }
  XLabel(os, f,
         std::to_string(z.size()) + " head tokens by p0 rank" +
             (violations.empty() ? std::string() : ", then " + std::to_string(violations.size()) + " outside (red)") +
             "; dashed: max-|z| threshold " + Fmt(threshold));
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
  OpenSvg(os, f, "tail bins", "tail");
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

void CaseRow(std::ostringstream& os, const CampaignReport& r, const CaseResult& c) {
  os << "<tr class=\"" << StatusClass(c.status) << "\" data-case=\"" << Escape(c.name) << "\"><td><a href=\"#case-"
     << Escape(c.name) << "\">" << Escape(c.name) << "</a></td><td class=\"st " << StatusClass(c.status) << "\">"
     << CaseStatusName(c.status) << "</td><td class=\"why\">" << Escape(html::CaseReason(r, c)) << "</td><td>"
     << Escape(DescribeRowSpec(c.row)) << "</td><td><code>" << Escape(DescribeParams(c.params)) << "</code></td>";
  if (c.status == CaseStatus::kSkipped) {
    os << "<td colspan=\"7\" class=\"muted\">not judged</td></tr>";
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

// The violating rows of a table of tokens: observed draws, expected 0, and what the support check lists beside
// them, in the columns `extra_columns` (their union over the list).
void ViolationRows(std::ostringstream& os, const std::vector<Violation>& violations, const CaseResult& c,
                   const std::vector<std::string>& extra_columns, bool z_column) {
  for (const Violation& v : violations) {
    os << "<tr class=\"viol\" data-violating-token=\"" << v.token << "\"><td class=\"num\">" << TokenName(v.token)
       << "</td><td class=\"num\">" << v.count << "</td><td class=\"num\">0</td>";
    if (z_column) {
      os << "<td>outside the kept set</td>";
    } else {
      os << "<td class=\"num\">" << (c.draws ? Fmt(double(v.count) / double(c.draws)) : std::string("-")) << "</td>";
    }
    for (const std::string& key : extra_columns) {
      os << "<td class=\"num\">" << (v.extra.contains(key) ? ExtraValue(v.extra[key]) : std::string("-")) << "</td>";
    }
    os << "</tr>";
  }
}

// The fields beside token and count in the support check's list: their union, by name (the JSON's order).
std::vector<std::string> ExtraColumns(const std::vector<Violation>& violations) {
  std::vector<std::string> keys;
  for (const Violation& v : violations) {
    for (const auto& [key, value] : v.extra.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  return keys;
}

std::string MaxAbsZSection(const CaseResult& c) {
  const StoredMaxAbsZ mz = StoredMaxAbsZTest(c);
  const std::vector<Violation> violations = Violations(c);
  std::ostringstream os;
  os << "<div class=\"charts\">" << ResidualChart(c) << "</div>";
  if (!mz.top_residuals.empty() || !violations.empty()) {
    os << "<h3>Largest residuals (head tokens"
       << (violations.empty() ? "" : "; first, in red, the tokens drawn outside the kept set") << ")</h3>"
       << "<table style=\"width:auto\" class=\"residuals\"><tr><th>token</th><th>observed</th><th>expected</th>"
          "<th>z</th></tr>";
    ViolationRows(os, violations, c, {}, true);
    for (const StoredResidual& r : mz.top_residuals) {
      os << "<tr><td class=\"num\">" << r.token << "</td><td class=\"num\">" << r.observed << "</td><td class=\"num\">"
         << Fmt(r.expected, 7) << "</td><td class=\"num\">" << Fmt(r.z) << "</td></tr>";
    }
    os << "</table>";
  }
  return os.str();
}

// The draws outside the kept set: every token the support check lists, its draws and share, and the fields the
// list carries beside them (the reference's probability of the token, the filter that drops it, ...) when present.
std::string SupportSection(const CaseResult& c) {
  const std::vector<Violation> violations = Violations(c);
  if (violations.empty()) return "";
  const nlohmann::json& s = c.checks["support"];
  const uint64_t total =
      s.contains("violations") && s["violations"].is_number_unsigned() ? s["violations"].get<uint64_t>() : 0;
  uint64_t listed = 0;
  for (const Violation& v : violations) listed += v.count;
  const std::vector<std::string> extra = ExtraColumns(violations);
  std::ostringstream os;
  os << "<h3 class=\"viol-title\">Draws outside the kept set: " << total << " of " << FormatCount(double(c.draws))
     << " (kept set " << c.kept << " of " << c.vocab << " tokens)</h3>";
  std::string others;
  for (const auto& [key, value] : s.items()) {
    if (key == "violations" || key == "invalid_draws" || key == "tokens" || key == "sampler_error") continue;
    others += " &middot; <b>" + Escape(key) + "</b> " + ExtraValue(value);
  }
  if (!others.empty()) os << "<div class=\"kv\">" << others.substr(std::string(" &middot; ").size()) << "</div>";
  os << "<table style=\"width:auto\" class=\"support-violations\"><tr><th>token</th><th>draws</th><th>expected</th>"
        "<th>share of draws</th>";
  for (const std::string& key : extra) os << "<th>" << Escape(key) << "</th>";
  os << "</tr>";
  ViolationRows(os, violations, c, extra, false);
  os << "</table>";
  if (listed < total) {
    os << "<div class=\"muted\">The report lists the " << violations.size() << " tokens drawn most often (" << listed
       << " of the " << total << " violating draws).</div>";
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
  if (check == "support") return SupportSection;
  if (check == "pearson") return PearsonSection;
  if (check == "max-abs-z") return MaxAbsZSection;
  if (check == "equivalence") return EquivalenceSection;
  return nullptr;
}

void CaseDetails(std::ostringstream& os, const CampaignReport& r, const CaseResult& c) {
  const bool open = c.status == CaseStatus::kFail || c.status == CaseStatus::kError;
  os << "<details class=\"case " << StatusClass(c.status) << "\" id=\"case-" << Escape(c.name) << "\""
     << (open ? " open" : "") << "><summary>" << Escape(c.name) << " &mdash; <span class=\"st "
     << StatusClass(c.status) << "\">" << CaseStatusName(c.status) << "</span> <span class=\"muted\">"
     << Escape(DescribeRowSpec(c.row)) << ", " << Escape(DescribeParams(c.params)) << ", profile "
     << Escape(c.profile) << "</span></summary>";
  if (const std::string why = html::CaseReason(r, c); !why.empty()) {
    os << "<div class=\"reason\">" << Escape(why) << "</div>";
  }
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
  os << html::OutcomesTable(c);
  if (c.tests == 0) {
    os << "<div class=\"muted\">"
       << (c.kept == 1 ? "One kept token: support check only (no goodness of fit)."
                       : "No goodness-of-fit test ran on this case: its hard checks judge it.")
       << "</div>";
  }
  for (const auto& check : CaseChecks()) {
    if (CheckSection section = SectionOf(check->Name())) os << section(c);
  }
  os << "</details>";
}

// ---- speculative decoding (run --verifier): the requests, their acceptance by position, their hard checks -----

struct SpecPosition {
  const CaseResult* c;
  double position, reached, rejected, beta, p;  // NaN where the report lacks the field
};
struct SpecRequest {
  std::string name;
  std::vector<SpecPosition> positions;
  const CaseResult* length = nullptr;
  CaseStatus worst = CaseStatus::kPass;
};

// The requests of a spec report, in report order: its judged cases "<request>/pos<j>", "/res<j>", "/length".
std::vector<SpecRequest> SpecRequests(const CampaignReport& r) {
  std::vector<SpecRequest> out;
  for (const CaseResult& c : r.cases) {
    const size_t slash = c.name.rfind('/');
    const std::string request = slash == std::string::npos ? c.name : c.name.substr(0, slash);
    auto it = std::find_if(out.begin(), out.end(), [&](const SpecRequest& q) { return q.name == request; });
    if (it == out.end()) it = out.insert(out.end(), SpecRequest{request, {}, nullptr, CaseStatus::kPass});
    if (c.status == CaseStatus::kFail || c.status == CaseStatus::kError) it->worst = CaseStatus::kFail;
    if (c.status == CaseStatus::kSkipped && it->worst == CaseStatus::kPass) it->worst = CaseStatus::kSkipped;
    if (c.name.size() >= 7 && c.name.compare(c.name.size() - 7, 7, "/length") == 0) it->length = &c;
    const nlohmann::json* s = html::ObjectAt(&c.checks, "spec_rejection");
    if (s == nullptr) continue;
    it->positions.push_back({&c, html::NumberAt(s, "position"), html::NumberAt(s, "reached"),
                             html::NumberAt(s, "rejected"), html::NumberAt(s, "beta"), html::NumberAt(s, "p_value")});
  }
  return out;
}

double Acceptance(const SpecPosition& q) { return q.reached > 0 ? 1.0 - q.rejected / q.reached : std::nan(""); }

// Observed acceptance per position (dots; red where the case failed) against beta_j (grey bars), every request in
// turn.
std::string AcceptanceChart(const std::vector<SpecRequest>& requests) {
  size_t m = 0;
  for (const SpecRequest& q : requests) m += q.positions.size();
  if (m == 0) return "";
  Frame f;
  f.width = 900;
  f.height = 240;
  f.bottom = 60;
  std::ostringstream os;
  OpenSvg(os, f, "acceptance by position", "acceptance");
  YAxis(os, f, 0, 1, 4, "acceptance");
  const double slot = f.w() / double(m);
  size_t k = 0;
  for (const SpecRequest& q : requests) {
    const size_t first = k;
    for (const SpecPosition& p : q.positions) {
      const double x = f.left + k * slot;
      const double a = Acceptance(p);
      const bool fail = p.c->status == CaseStatus::kFail || p.c->status == CaseStatus::kError;
      os << "<rect class=\"exp\" x=\"" << x + slot * 0.15 << "\" y=\"" << f.Y(p.beta) << "\" width=\"" << slot * 0.7
         << "\" height=\"" << f.Y(0) - f.Y(p.beta) << "\"><title>" << Escape(p.c->name) << ": beta " << Fmt(p.beta, 4)
         << "</title></rect>";
      if (!std::isnan(a)) {
        os << "<circle class=\"" << (fail ? "dot-fail" : "dot") << "\" data-case=\"" << Escape(p.c->name) << "\" cx=\""
           << x + slot / 2 << "\" cy=\"" << f.Y(a) << "\" r=\"3.2\"><title>" << Escape(p.c->name) << ": accepted "
           << Fmt(a, 4) << " of " << FormatCount(p.reached) << " reaching (expected " << Fmt(p.beta, 4)
           << ", p = " << Fmt(p.p) << ")</title></circle>";
      }
      ++k;
    }
    const double tx = f.left + (first + k) * slot / 2;
    const double ty = f.Y(0) + 10;
    os << "<text x=\"" << tx << "\" y=\"" << ty << "\" class=\"tick small\" text-anchor=\"end\" transform=\"rotate(-30 "
       << tx << " " << ty << ")\">" << Escape(q.name) << "</text>";
  }
  XLabel(os, f, "positions 1..g of each request; grey: beta_j = sum min(p_j, q_j); dots: observed acceptance");
  os << "</svg>";
  return os.str();
}

std::string SpecSection(const CampaignReport& r) {
  const std::vector<SpecRequest> requests = SpecRequests(r);
  std::ostringstream os;
  os << "<h2>Speculative requests</h2><div class=\"charts\">" << AcceptanceChart(requests) << "</div>";
  os << "<table class=\"spec-requests\"><tr><th>request</th><th>status</th><th>acceptance by position: observed / "
        "beta (p)</th><th>trials</th><th>structure</th><th>determinism</th><th>batch invariance</th>"
        "<th>scripted probes</th></tr>";
  for (const SpecRequest& q : requests) {
    os << "<tr class=\"" << StatusClass(q.worst) << "\"><td>" << Escape(q.name) << "</td><td class=\"st "
       << StatusClass(q.worst) << "\">" << CaseStatusName(q.worst) << "</td><td>";
    for (const SpecPosition& p : q.positions) {
      os << "<span" << (p.c->status == CaseStatus::kFail ? " class=\"fail-t\"" : "") << ">" << Fmt(p.position) << ": "
         << Fmt(Acceptance(p), 3) << " / " << Fmt(p.beta, 3) << " (" << Fmt(p.p, 2) << ")</span> ";
    }
    os << "</td><td class=\"num\">"
       << (q.positions.empty() ? std::string("-") : FormatCount(q.positions.front().reached)) << "</td>";
    for (const char* key : {"spec_structure", "spec_determinism", "spec_batch_invariance", "spec_scripted"}) {
      const nlohmann::json* f = q.length != nullptr ? html::ObjectAt(&q.length->checks, key) : nullptr;
      if (f == nullptr) {
        os << "<td class=\"muted\">-</td>";
        continue;
      }
      const bool bad = html::NumberAt(f, "violations") > 0;
      os << "<td class=\"num" << (bad ? " fail-t" : "") << "\">" << html::CountAt(f, "violations") << " of "
         << html::CountAt(f, "compared") << "</td>";
    }
    os << "</tr>";
  }
  os << "</table>";
  return os.str();
}

}  // namespace

std::string RenderHtmlReport(const CampaignReport& r) {
  std::ostringstream os;
  const bool pass = r.Passed();
  const html::ReportLayout layout = html::LayoutOf(r);
  const char* kind = layout == html::ReportLayout::kReplay        ? "replay report"
                     : layout == html::ReportLayout::kSpeculative ? "speculative-decoding report"
                                                                  : "report";
  os << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>samplecheck: " << Escape(r.suite)
     << " / " << Escape(r.sampler) << " &mdash; " << (pass ? "PASS" : "FAIL") << "</title><style>" << html::kCss
     << "</style></head><body data-layout=\""
     << (layout == html::ReportLayout::kReplay        ? "replay"
         : layout == html::ReportLayout::kSpeculative ? "speculative"
                                                      : "sampler")
     << "\">" << html::PageHeader(r, kind) << "<main>";
  if (layout == html::ReportLayout::kReplay) {
    os << html::ReplayBody(r);
  } else {
    if (layout == html::ReportLayout::kSpeculative) os << SpecSection(r);
    os << "<h2>Campaign p-values</h2>" << PValueChart(r);
    os << "<h2>Cases</h2><table class=\"cases\"><tr><th>case</th><th>status</th><th>reason</th><th>row</th>"
          "<th>params</th><th>kept / V</th><th>draws</th><th>power</th><th>hard failures</th><th>tests</th><th>p</th>"
          "<th>Holm p</th></tr>";
    // Failures first, then skipped, then passes, each in suite order.
    for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
      for (const auto& c : r.cases) {
        if (c.status == s) CaseRow(os, r, c);
      }
    }
    os << "</table><h2>Case details</h2>";
    for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
      for (const auto& c : r.cases) {
        if (c.status == s) CaseDetails(os, r, c);
      }
    }
    os << "<p class=\"muted\">Schema " << Escape(r.schema)
       << ". Pearson X&sup2; gates each binning (head, tail, hash; cells from p0 only, expected &ge; 10); a case's p "
          "is Bonferroni over its tests, the campaign applies Holm at alpha. Any draw outside the kept set fails its "
          "case regardless of p-values. See docs/report-format.md and docs/campaigns.md.</p>";
  }
  os << "</main></body></html>\n";
  return os.str();
}

Status SaveHtmlReport(const CampaignReport& report, const std::filesystem::path& path, const WriteOptions& options) {
  return WriteFileAtomically(path, RenderHtmlReport(report), options);
}

}  // namespace samplecheck::harness
