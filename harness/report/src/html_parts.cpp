#include "html_parts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "samplecheck/core/format.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness::html {

std::string Escape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);
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

std::string Fmt(double v, int digits) { return std::isnan(v) ? "nan" : FormatSignificant(v, digits); }

const char* StatusClass(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kSkipped: return "skip";
    case CaseStatus::kError: return "fail";
  }
  return "fail";
}

const nlohmann::json* ObjectAt(const nlohmann::json* j, const char* key) {
  if (j == nullptr || !j->is_object() || !j->contains(key) || !(*j)[key].is_object()) return nullptr;
  return &(*j)[key];
}

double NumberAt(const nlohmann::json* j, const char* key) {
  if (j == nullptr || !j->is_object() || !j->contains(key)) return std::nan("");
  const nlohmann::json& v = (*j)[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "inf") return INFINITY;
  if (v.is_string() && v.get<std::string>() == "-inf") return -INFINITY;
  return std::nan("");
}

std::string CountAt(const nlohmann::json* j, const char* key) {
  const double v = NumberAt(j, key);
  return std::isnan(v) ? std::string("-") : FormatCount(v);
}

std::string TextAt(const nlohmann::json* j, const char* key, const std::string& absent) {
  if (j == nullptr || !j->is_object() || !j->contains(key) || !(*j)[key].is_string()) return absent;
  return (*j)[key].get<std::string>();
}

bool FlagAt(const nlohmann::json* j, const char* key) {
  return j != nullptr && j->is_object() && j->contains(key) && (*j)[key].is_boolean() && (*j)[key].get<bool>();
}

void OpenSvg(std::ostringstream& os, const Frame& f, const std::string& title, const std::string& kind) {
  os << "<svg class=\"chart\" data-chart=\"" << Escape(kind) << "\" viewBox=\"0 0 " << f.width << " " << f.height
     << "\" width=\"" << f.width << "\" height=\"" << f.height << "\" role=\"img\"><title>" << Escape(title)
     << "</title>";
  os << "<rect x=\"" << f.left << "\" y=\"" << f.top << "\" width=\"" << f.w() << "\" height=\"" << f.h()
     << "\" class=\"plot\"/>";
}

void YAxis(std::ostringstream& os, const Frame& f, double lo, double hi, int ticks, const std::string& label,
           bool log10_labels) {
  for (int i = 0; i <= ticks; ++i) {
    const double fy = double(i) / ticks;
    const double v = lo + fy * (hi - lo);
    const double y = f.Y(fy);
    os << "<line x1=\"" << f.left << "\" x2=\"" << f.left + f.w() << "\" y1=\"" << y << "\" y2=\"" << y
       << "\" class=\"grid\"/>";
    os << "<text x=\"" << f.left - 5 << "\" y=\"" << y + 3.5 << "\" class=\"tick\" text-anchor=\"end\">"
       << (log10_labels ? "1e" + Fmt(v, 2) : Fmt(v, 3)) << "</text>";
  }
  os << "<text x=\"12\" y=\"" << f.top + f.h() / 2 << "\" class=\"axis\" transform=\"rotate(-90 12 "
     << f.top + f.h() / 2 << ")\" text-anchor=\"middle\">" << Escape(label) << "</text>";
}

void XLabel(std::ostringstream& os, const Frame& f, const std::string& label) {
  os << "<text x=\"" << f.left + f.w() / 2 << "\" y=\"" << f.height - 4 << "\" class=\"axis\" text-anchor=\"middle\">"
     << Escape(label) << "</text>";
}

const char kCss[] = R"css(
:root { --pass:#1a7f37; --fail:#cf222e; --skip:#9a6700; --flag:#8250df; --ink:#1f2328; --muted:#656d76;
        --line:#d0d7de; }
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
.badge.flag { background: #fff; color: var(--flag); border: 1.5px solid var(--flag); font-size: 12px; padding: 1px 9px; }
.badge.flag.warn { color: var(--skip); border-color: var(--skip); }
.verdict { margin: 6px 0 12px; padding: 8px 14px; border-radius: 6px; border: 1px solid var(--line); }
.verdict.fail { background: #ffebe9; border-color: #ffcecb; } .verdict.pass { background: #dafbe1; border-color: #aceebb; }
.verdict ul { margin: 4px 0 2px; padding-left: 20px; } .verdict li { margin: 2px 0; }
.verdict .lead { font-weight: 600; }
.meta { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 3px 16px; font-size: 13px; }
.meta dt { color: var(--muted); } .meta dd { margin: 0; font-family: ui-monospace, Menlo, monospace; }
.counts span { margin-right: 16px; font-weight: 600; }
.pass-t { color: var(--pass); } .fail-t { color: var(--fail); } .skip-t { color: var(--skip); }
table { border-collapse: collapse; background: #fff; width: 100%; font-size: 12.5px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; }
td.num { text-align: right; font-family: ui-monospace, Menlo, monospace; white-space: nowrap; }
td.why { min-width: 220px; max-width: 340px; } tr.fail td.why { color: var(--fail); } tr.skip td.why { color: var(--skip); }
tr.fail td:first-child { border-left: 4px solid var(--fail); } tr.skip td:first-child { border-left: 4px solid var(--skip); }
tr.pass td:first-child { border-left: 4px solid var(--pass); }
tr.viol td { color: var(--fail); font-weight: 600; }
.st { font-weight: 600; text-transform: uppercase; font-size: 11px; }
.st.pass { color: var(--pass); } .st.fail { color: var(--fail); } .st.skip { color: var(--skip); }
details.case { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 6px 12px; }
details.case summary { cursor: pointer; font-weight: 600; }
details.case.fail { border-left: 5px solid var(--fail); } details.case.skip { border-left: 5px solid var(--skip); }
details.case.pass { border-left: 5px solid var(--pass); }
.reason { color: var(--fail); margin: 6px 0; } .skip .reason { color: var(--skip); } .pass .reason { color: var(--flag); }
.charts { display: flex; flex-wrap: wrap; gap: 10px; }
.chart { background: #fff; max-width: 100%; height: auto; }
.plot { fill: #fbfcfd; stroke: var(--line); } .grid { stroke: #eaeef2; } .tick { font-size: 10px; fill: var(--muted); }
.tick.small { font-size: 8.5px; } .tick.viol-t { fill: var(--fail); font-weight: 600; } .axis { font-size: 11px; fill: var(--muted); }
.exp { fill: #8c959f; } .obs { fill: #0969da; } .res { fill: #0969da; } .res-out { fill: var(--fail); }
.viol { fill: var(--fail); } .viol-zone { fill: var(--fail); fill-opacity: 0.07; } .viol-mark { fill: var(--fail); }
.threshold { fill: none; stroke: var(--fail); stroke-dasharray: 5 3; stroke-width: 1.2; } .thr { fill: var(--fail); }
.dot { fill: #0969da; } .dot-fail { fill: var(--fail); } .dot-b { fill: #bf8700; } .band { fill: #0969da; fill-opacity: 0.12; }
.unity { stroke: #8c959f; } .ratio { fill: none; stroke: #0969da; stroke-width: 1; }
.muted { color: var(--muted); } code { font-family: ui-monospace, Menlo, monospace; font-size: 12px; }
.kv { font-size: 12.5px; margin: 4px 0; } .kv b { font-weight: 600; }
)css";

namespace {

bool HasField(const CaseResult& c, const char* key) { return c.checks.contains(key) && !c.checks[key].is_null(); }

// Names up to `shown` of `names`, then "and N more".
std::string NameList(const std::vector<std::string>& names, size_t shown = 6) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// What failed a case, for the verdict's grouping: its first failing hard outcome, else its p-values under Holm.
std::string FailureCause(const CaseResult& c) {
  for (const CheckOutcome& o : c.outcomes) {
    if (!o.Fails()) continue;
    if (o.check == "support" && o.test == "support") return "support violations";
    return o.test;
  }
  if (c.reason.rfind("goodness of fit rejected", 0) == 0) return "goodness of fit (Holm)";
  return "other";
}

// The failed cases grouped by cause, in the order the causes first appear ("support violations: A, B; ...").
std::string FailureGroups(const CampaignReport& r, CaseStatus status) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const CaseResult& c : r.cases) {
    if (c.status != status) continue;
    const std::string cause = status == CaseStatus::kError ? "error" : FailureCause(c);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == cause; });
    if (it == groups.end()) it = groups.insert(groups.end(), {cause, {}});
    it->second.push_back(c.name);
  }
  std::string out;
  for (const auto& [cause, names] : groups) out += (out.empty() ? "" : "; ") + cause + ": " + NameList(names);
  return out;
}

// The skipped cases' reasons, the commonest first, with a case of each ("12 x parameters invalid ...: e.g. X").
std::string SkipReasons(const CampaignReport& r) {
  std::map<std::string, std::pair<size_t, std::string>> by_reason;
  std::vector<std::string> order;
  for (const CaseResult& c : r.cases) {
    if (c.status != CaseStatus::kSkipped) continue;
    auto [it, fresh] = by_reason.try_emplace(c.reason, 0, c.name);
    if (fresh) order.push_back(c.reason);
    ++it->second.first;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return by_reason[a].first > by_reason[b].first; });
  std::string out;
  for (size_t i = 0; i < order.size() && i < 3; ++i) {
    const auto& [n, example] = by_reason[order[i]];
    out += (i ? "; " : "") + std::to_string(n) + " &times; " + Escape(order[i]) + " (e.g. " + Escape(example) + ")";
  }
  if (order.size() > 3) out += "; " + std::to_string(order.size() - 3) + " other reason(s)";
  return out;
}

// The lowest achieved power over the judged row cases with a p-value test, and its case (nullptr: none).
const CaseResult* WeakestJudged(const CampaignReport& r) {
  const CaseResult* weakest = nullptr;
  for (const CaseResult& c : r.cases) {
    const bool judged = c.status == CaseStatus::kPass || c.status == CaseStatus::kFail;
    if (!judged || c.batch.size != 0 || c.tests == 0) continue;
    if (weakest == nullptr || c.achieved_power < weakest->achieved_power) weakest = &c;
  }
  return weakest;
}

struct Flag {
  std::string name;  // data-flag
  std::string text;  // the badge
  std::string note;  // the line under the verdict
  bool warn = false;
};

// The conditions a verdict was reached under that a plain pass does not have.
std::vector<Flag> VerdictFlags(const CampaignReport& r) {
  std::vector<Flag> flags;
  const std::vector<const CaseResult*> weak = r.UnderpoweredCases();
  if (!weak.empty() && r.evidence.allow_underpowered) {
    const CaseResult* w = *std::min_element(weak.begin(), weak.end(), [](const CaseResult* a, const CaseResult* b) {
      return a->achieved_power < b->achieved_power;
    });
    flags.push_back({"underpowered", "underpowered, allowed",
                     "--allow-underpowered accepted " + std::to_string(weak.size()) + " case(s) below power " +
                         Fmt(r.power) + " at their TV: lowest power " + Fmt(w->achieved_power) + " (" +
                         Escape(w->name) + ", " + FormatCount(double(w->draws)) + " of " +
                         FormatCount(double(w->planned_draws)) + " planned draws)",
                     true});
  }
  if (r.max_draws_override) {
    const CaseResult* w = WeakestJudged(r);
    flags.push_back({"capped", "--max-draws " + FormatCount(double(*r.max_draws_override)),
                     "draws capped at " + FormatCount(double(*r.max_draws_override)) + " per case" +
                         (w ? ": lowest power reached " + Fmt(w->achieved_power) + " (" + Escape(w->name) +
                                  ") against the target " + Fmt(r.power)
                            : std::string()),
                     weak.size() > 0});
  }
  if (r.budget_seconds > 0 && !r.full_power) {
    flags.push_back({"budget-capped", "time budget: draws capped",
                     "the time budget of " + Fmt(r.budget_seconds) + " s did not afford every case's planned draws",
                     true});
  }
  const size_t skipped = r.Count(CaseStatus::kSkipped);
  if (skipped > 0 && r.evidence.allow_skipped) {
    flags.push_back({"skipped", std::to_string(skipped) + " skipped, allowed",
                     "--allow-skipped accepted " + std::to_string(skipped) + " case(s) never judged: " + SkipReasons(r),
                     true});
  }
  if (r.lossy)
    flags.push_back({"lossy", "lossy", "the sampler declared itself lossy: its verdict is a distance", true});
  if (r.equivalence_eps > 0) {
    flags.push_back({"equivalence", "equivalence TV &lt; " + Fmt(r.equivalence_eps),
                     "every case must certify TV below " + Fmt(r.equivalence_eps), false});
  }
  if (r.merged_shards > 0) {
    flags.push_back({"merged", "merged from " + std::to_string(r.merged_shards) + " shards", "", false});
  }
  return flags;
}

}  // namespace

ReportLayout LayoutOf(const CampaignReport& r) {
  for (const CaseResult& c : r.cases) {
    if (HasField(c, "replay_engine") || HasField(c, "replay_trainer") || HasField(c, "replay_aggregate")) {
      return ReportLayout::kReplay;
    }
  }
  if (r.sampler_spec.rfind("verifier:", 0) == 0) return ReportLayout::kSpeculative;
  for (const CaseResult& c : r.cases) {
    if (HasField(c, "spec_rejection")) return ReportLayout::kSpeculative;
  }
  return ReportLayout::kSampler;
}

std::string VerdictBlock(const CampaignReport& r) {
  const std::vector<std::string> problems = r.VerdictProblems();
  const bool pass = problems.empty();
  const std::vector<Flag> flags = VerdictFlags(r);
  std::ostringstream os;
  os << "<section class=\"verdict " << (pass ? "pass" : "fail") << "\" id=\"verdict\" data-verdict=\""
     << (pass ? "PASS" : "FAIL") << "\"><div class=\"lead\">Verdict: <span class=\"badge " << (pass ? "pass" : "fail")
     << "\" id=\"verdict-badge\">" << (pass ? "PASS" : "FAIL") << "</span>";
  for (const Flag& f : flags) {
    os << "<span class=\"badge flag" << (f.warn ? " warn" : "") << "\" data-flag=\"" << f.name << "\">" << f.text
       << "</span>";
  }
  os << "</div><ul class=\"reasons\">";
  if (pass) {
    os << "<li class=\"problem-none\">PASS: " << r.JudgedCases() << " judged case(s), "
       << FormatCount(double(r.JudgedDraws())) << " draws; no case failed</li>";
  }
  const size_t failed = r.Count(CaseStatus::kFail);
  const size_t errors = r.Count(CaseStatus::kError);
  const size_t skipped = r.Count(CaseStatus::kSkipped);
  for (const std::string& p : problems) {
    std::string line = Escape(p);
    std::string kind = "other";
    if (failed > 0 && p == std::to_string(failed) + " case(s) failed") {
      kind = "failed";
      line += " (" + Escape(FailureGroups(r, CaseStatus::kFail)) + ")";
    } else if (errors > 0 && p.rfind(std::to_string(errors) + " case(s) could not be judged", 0) == 0) {
      kind = "error";
      line += " (" + Escape(FailureGroups(r, CaseStatus::kError)) + ")";
    } else if (skipped > 0 && p.rfind(std::to_string(skipped) + " case(s) skipped", 0) == 0) {
      kind = "skipped";
      line += ": " + SkipReasons(r);
    } else if (p.rfind("underpowered:", 0) == 0) {
      kind = "underpowered";
    } else if (p.rfind("no evidence:", 0) == 0) {
      kind = "no-evidence";
    } else if (p.rfind("interrupted:", 0) == 0) {
      kind = "interrupted";
    }
    os << "<li class=\"problem\" data-problem=\"" << kind << "\">FAIL: " << line << "</li>";
  }
  for (const Flag& f : flags) {
    if (!f.note.empty()) os << "<li class=\"flag-note\" data-flag=\"" << f.name << "\">" << f.note << "</li>";
  }
  os << "</ul></section>";
  return os.str();
}

std::string CaseReason(const CampaignReport& r, const CaseResult& c) {
  if (!c.reason.empty()) return c.reason;
  for (const CaseResult* w : r.UnderpoweredCases()) {
    if (w != &c) continue;
    return "underpowered: power " + Fmt(c.achieved_power) + " at TV " + Fmt(c.tv) + " on " +
           FormatCount(double(c.draws)) + " of " + FormatCount(double(c.planned_draws)) + " planned draws" +
           (r.evidence.allow_underpowered ? " (accepted by --allow-underpowered)" : "");
  }
  return "";
}

std::string PageHeader(const CampaignReport& r, const std::string& kind_title) {
  std::ostringstream os;
  uint64_t draws = 0;
  for (const auto& c : r.cases) draws += c.status == CaseStatus::kSkipped ? 0 : c.draws;
  os << "<header><h1>samplecheck " << kind_title << ": " << Escape(r.suite) << " on " << Escape(r.sampler) << "</h1>";
  os << VerdictBlock(r);
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
     << "</dd>"
     // A replay's checks are exact comparisons (no sampling test): no alpha, TV or power to state.
     << (LayoutOf(r) == ReportLayout::kReplay
             ? std::string("<dt>checks</dt><dd>exact: every processed logprob against the reference's within the "
                           "fp32 tolerance (no sampling test: no alpha, TV or power)</dd>")
             : "<dt>alpha (Holm)</dt><dd>" + Fmt(r.alpha) + "</dd><dt>TV / power</dt><dd>" + Fmt(r.tv) + " / " +
                   Fmt(r.power) +
                   (r.draw_plan.tv_chosen_budget_seconds > 0 ? " (TV " + Escape(TvChosenBy(r)) + ")" : std::string()) +
                   "</dd>")
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
     << Escape(r.command_line) << "</dd></dl></header>";
  return os.str();
}

std::string OutcomesTable(const CaseResult& c) {
  std::ostringstream os;
  os << "<table style=\"width:auto\"><tr><th>check</th><th>test</th><th>statistic</th><th>p</th><th>finding</th></tr>";
  for (const CheckOutcome& o : c.outcomes) {
    const bool hard = o.kind == CheckOutcome::Kind::kHard;
    os << "<tr" << (o.Fails() ? " class=\"fail\"" : "") << "><td>" << Escape(o.check) << "</td><td>" << Escape(o.test)
       << "</td><td class=\"num\">" << (hard ? std::to_string(o.violations) : Fmt(o.statistic, 5))
       << "</td><td class=\"num\">" << (hard ? std::string(o.Fails() ? "fail" : "pass") : Fmt(o.p_value)) << "</td><td>"
       << Escape(o.finding) << "</td></tr>";
  }
  os << "</table>";
  return os.str();
}

}  // namespace samplecheck::harness::html
