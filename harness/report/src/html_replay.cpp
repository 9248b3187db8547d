// The replay campaign's layout of the HTML report (docs/replay.md): rows of processed logprobs, not draws of a
// sampler, so no sampler columns: the aggregate (the ratio bias and the rows' figures summed), the per-row logprob
// error of each side against the exact processed distribution and between the sides, a table of the rows (ratio,
// mismatch KL, kept sets, disagreements, violations) and per row its outcomes, disagreements and label.
#include <algorithm>
#include <cmath>
#include <vector>

#include "html_parts.h"
#include "samplecheck/core/format.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness::html {
namespace {

using nlohmann::json;

const json* Fields(const CaseResult& c, const char* key) { return ObjectAt(&c.checks, key); }

std::string Cell(double v, int digits = 4) { return std::isnan(v) ? std::string("-") : Fmt(v, digits); }

bool IsAggregate(const CaseResult& c) { return Fields(c, "replay_aggregate") != nullptr; }

// One row's logprob errors: each side against its exact processed distribution (when the side was given, not the
// reference), and between the sides on the tokens both keep.
struct RowError {
  const CaseResult* row;
  double engine, engine_tolerance, trainer, trainer_tolerance, between;
};

RowError ErrorOf(const CaseResult& c) {
  const json* e = Fields(c, "replay_engine");
  const json* t = Fields(c, "replay_trainer");
  const json* a = Fields(c, "replay_agreement");
  return {&c,
          NumberAt(e, "max_abs_delta_logprob"),
          NumberAt(e, "tolerance_at_worst"),
          NumberAt(t, "max_abs_delta_logprob"),
          NumberAt(t, "tolerance_at_worst"),
          NumberAt(a, "max_abs_delta_logprob")};
}

// The per-row logprob error on a log scale: the engine's and the trainer's max |logprob - exact| (dots; red where
// the row failed, a dash at the tolerance of its worst token) and the max |delta logprob| between the sides (grey).
std::string LogprobErrorChart(const std::vector<const CaseResult*>& rows) {
  std::vector<RowError> errors;
  double lo = 0, hi = -9;
  bool any = false;
  for (const CaseResult* c : rows) {
    if (c->status == CaseStatus::kSkipped) continue;
    errors.push_back(ErrorOf(*c));
    for (double v : {errors.back().engine, errors.back().trainer, errors.back().between, errors.back().engine_tolerance,
                     errors.back().trainer_tolerance}) {
      if (!(v > 0) || !std::isfinite(v)) continue;
      any = true;
      lo = std::min(lo, std::floor(std::log10(v)));
      hi = std::max(hi, std::ceil(std::log10(v)));
    }
  }
  if (errors.empty() || !any) return "<p class=\"muted\">No row has a logprob error to plot.</p>";
  lo = std::max(lo, -12.0);
  if (hi <= lo) hi = lo + 1;
  const double step = std::ceil((hi - lo) / 8.0);  // whole decades per tick, at most 8 ticks
  hi = lo + step * std::ceil((hi - lo) / step);
  const double floor_v = std::pow(10.0, lo);
  auto fy = [&](double v) { return (std::clamp(std::log10(std::max(v, floor_v)), lo, hi) - lo) / (hi - lo); };
  Frame f;
  f.width = 900;
  f.height = 250;
  std::ostringstream os;
  OpenSvg(os, f, "per-row logprob error", "logprob-error");
  YAxis(os, f, lo, hi, static_cast<int>((hi - lo) / step), "max |delta logprob|", true);
  const size_t m = errors.size();
  for (size_t i = 0; i < m; ++i) {
    const RowError& e = errors[i];
    const double x = f.X((double(i) + 0.5) / double(m));
    const bool fail = e.row->status == CaseStatus::kFail || e.row->status == CaseStatus::kError;
    const std::string name = Escape(e.row->name);
    if (!std::isnan(e.between)) {
      os << "<circle class=\"dot-b\" data-row=\"" << name << "\" data-side=\"between\" cx=\"" << x << "\" cy=\""
         << f.Y(fy(e.between)) << "\" r=\"2.4\"><title>" << name << ": engine vs trainer max |delta logprob| "
         << Fmt(e.between) << " on the tokens both keep</title></circle>";
    }
    const std::pair<const char*, std::pair<double, double>> sides[] = {{"engine", {e.engine, e.engine_tolerance}},
                                                                       {"trainer", {e.trainer, e.trainer_tolerance}}};
    for (const auto& [side, value] : sides) {
      const auto [err, tol] = value;
      if (std::isnan(err)) continue;
      if (tol > 0) {
        os << "<line class=\"threshold\" x1=\"" << x - 4 << "\" x2=\"" << x + 4 << "\" y1=\"" << f.Y(fy(tol))
           << "\" y2=\"" << f.Y(fy(tol)) << "\"/>";
      }
      os << "<circle class=\"" << (fail ? "dot-fail" : "dot") << "\" data-row=\"" << name << "\" data-side=\"" << side
         << "\" cx=\"" << x << "\" cy=\"" << f.Y(fy(err)) << "\" r=\"3\"><title>" << name << ": " << side
         << " max |logprob - exact| " << Fmt(err) << " (tolerance at its worst token " << Fmt(tol) << ")"
         << "</title></circle>";
    }
  }
  XLabel(os, f,
         std::to_string(m) + " judged rows in suite order; blue: a side against the exact logprobs (red: the row " +
             "failed; dash: tolerance); amber: engine vs trainer. Floor 1e" + Fmt(lo, 2));
  os << "</svg>";
  return os.str();
}

std::string Ratio(const json* rollout, const char* key) { return Cell(NumberAt(rollout, key)); }

// The aggregate case: the ratio-bias verdict and the rows' figures summed.
std::string AggregateSection(const CaseResult& c) {
  const json* a = Fields(c, "replay_aggregate");
  std::ostringstream os;
  os << "<h2>Aggregate over the rows</h2><div class=\"kv\"><span class=\"st " << StatusClass(c.status) << "\">"
     << CaseStatusName(c.status) << "</span> "
     << Escape(c.reason.empty() ? "every row and the ratio bias pass" : c.reason) << "</div>";
  os << "<table style=\"width:auto\" class=\"aggregate\"><tr><th>trainer logits</th><th>rows</th><th>rollout "
        "tokens</th>"
        "<th>mean ratio</th><th>|mean ratio - 1| bound</th><th>outside [0.9, 1.1]</th><th>mismatch KL</th>"
        "<th>ratio-0 tokens</th><th>guarded tokens</th></tr>";
  for (const char* group : {"same_logits", "other_logits"}) {
    const json* g = ObjectAt(a, group);
    os << "<tr><td>" << (std::string(group) == "same_logits" ? "the engine's (judged)" : "bf16 / jittered (reported)")
       << "</td><td class=\"num\">" << CountAt(g, "rows") << "</td><td class=\"num\">" << CountAt(g, "tokens")
       << "</td><td class=\"num\">" << Ratio(g, "mean_ratio") << "</td><td class=\"num\">"
       << (std::string(group) == "same_logits" ? Cell(NumberAt(a, "max_ratio_bias")) : std::string("-"))
       << "</td><td class=\"num\">" << Ratio(g, "outside_0_9_1_1") << "</td><td class=\"num\">"
       << Ratio(g, "mismatch_kl") << "</td><td class=\"num\">" << CountAt(g, "zero_ratio_tokens")
       << "</td><td class=\"num\">" << CountAt(g, "guarded_tokens") << "</td></tr>";
  }
  os << "</table>";
  if (a != nullptr) {
    os << "<div class=\"kv\"><b>rows</b> " << CountAt(a, "rows") << " (" << CountAt(a, "failed_rows")
       << " failed) &middot; <b>kept-set disagreements</b>";
    if (const json* by_cause = ObjectAt(a, "disagreements")) {
      for (const auto& [cause, n] : by_cause->items()) {
        os << " " << Escape(cause) << " " << (n.is_number() ? FormatCount(n.get<double>()) : std::string("-"));
      }
    }
    os << " &middot; <b>max |delta logprob|</b> " << Cell(NumberAt(a, "max_abs_delta_logprob")) << " ("
       << Escape(TextAt(a, "max_delta_row")) << ") &middot; <b>unrenormalized kept mass</b> mean "
       << Cell(NumberAt(a, "kept_mass_mean")) << ", min " << Cell(NumberAt(a, "kept_mass_min")) << " ("
       << Escape(TextAt(a, "kept_mass_min_row")) << ") &middot; <b>label guard events</b> "
       << CountAt(a, "guard_events") << " &middot; <b>silent drops</b> " << CountAt(a, "silent_drops") << "</div>";
  }
  return os.str();
}

// A row's hard violations by check (the outcomes' counts), "-" when none.
std::string Violations(const CaseResult& c) {
  std::string out;
  for (const CheckOutcome& o : c.outcomes) {
    if (o.Fails()) out += (out.empty() ? "" : ", ") + o.check + " " + std::to_string(o.violations);
  }
  return out.empty() ? "0" : out;
}

void RowLine(std::ostringstream& os, const CampaignReport& r, const CaseResult& c) {
  const json* a = Fields(c, "replay_agreement");
  const json* rollout = ObjectAt(a, "rollout");
  const json* label = Fields(c, "replay_label");
  const RowError e = ErrorOf(c);
  os << "<tr class=\"" << StatusClass(c.status) << "\" data-case=\"" << Escape(c.name) << "\"><td><a href=\"#case-"
     << Escape(c.name) << "\">" << Escape(c.name) << "</a></td><td class=\"st " << StatusClass(c.status) << "\">"
     << CaseStatusName(c.status) << "</td><td class=\"why\">" << Escape(CaseReason(r, c)) << "</td><td>"
     << Escape(DescribeRowSpec(c.row)) << "</td><td><code>" << Escape(DescribeParams(c.params)) << "</code></td>";
  if (c.status == CaseStatus::kSkipped || a == nullptr) {
    os << "<td colspan=\"8\" class=\"muted\">not judged</td></tr>";
    return;
  }
  os << "<td>" << Escape(TextAt(a, "dtype")) << " / " << Escape(TextAt(a, "trainer_logits"))
     << "</td><td class=\"num\">" << CountAt(a, "engine_kept") << " / " << CountAt(a, "trainer_kept")
     << "</td><td class=\"num\">" << Ratio(rollout, "mean_ratio") << " <span class=\"muted\">(exp. "
     << Ratio(rollout, "expected_mean_ratio") << ")</span></td><td class=\"num\">" << Ratio(rollout, "mismatch_kl")
     << "</td><td class=\"num\">" << Cell(std::isnan(e.trainer) ? e.engine : std::max(e.trainer, e.engine))
     << "</td><td class=\"num\">" << Cell(e.between) << "</td><td class=\"num\">"
     << (label != nullptr ? CountAt(label, "label") + (FlagAt(label, "guard_event") ? " guarded" : "") +
                                (FlagAt(label, "silent_drop") ? " dropped" : "")
                          : std::string("-"))
     << "</td><td class=\"num\">" << Escape(Violations(c)) << "</td></tr>";
}

// The kept-set disagreements of a row (the agreement check lists up to 32, counts all).
std::string DisagreementTable(const CaseResult& c) {
  const json* a = Fields(c, "replay_agreement");
  if (a == nullptr || !a->contains("disagreements") || !(*a)["disagreements"].is_array() ||
      (*a)["disagreements"].empty()) {
    return "";
  }
  std::ostringstream os;
  os << "<h3>Tokens kept by one side only</h3><table style=\"width:auto\"><tr><th>token</th><th>cause</th>"
        "<th>filter</th><th>margin (ulps)</th><th>allowed</th><th>engine logprob</th><th>trainer logprob</th></tr>";
  for (const json& d : (*a)["disagreements"]) {
    if (!d.is_object()) continue;
    const std::string cause = TextAt(&d, "cause");
    os << "<tr" << (cause == "beyond" ? " class=\"viol\"" : "") << "><td class=\"num\">" << CountAt(&d, "token")
       << "</td><td>" << Escape(cause) << "</td><td>" << Escape(TextAt(&d, "filter")) << "</td><td class=\"num\">"
       << Cell(NumberAt(&d, "margin_ulps")) << "</td><td class=\"num\">" << Cell(NumberAt(&d, "allowed_ulps"))
       << "</td><td class=\"num\">" << Cell(NumberAt(&d, "engine_logprob")) << "</td><td class=\"num\">"
       << Cell(NumberAt(&d, "trainer_logprob")) << "</td></tr>";
  }
  os << "</table>";
  return os.str();
}

void RowDetails(std::ostringstream& os, const CampaignReport& r, const CaseResult& c) {
  const bool open = c.status == CaseStatus::kFail || c.status == CaseStatus::kError;
  os << "<details class=\"case " << StatusClass(c.status) << "\" id=\"case-" << Escape(c.name) << "\""
     << (open ? " open" : "") << "><summary>" << Escape(c.name) << " &mdash; <span class=\"st " << StatusClass(c.status)
     << "\">" << CaseStatusName(c.status) << "</span> <span class=\"muted\">" << Escape(DescribeRowSpec(c.row)) << ", "
     << Escape(DescribeParams(c.params)) << ", profile " << Escape(c.profile) << "</span></summary>";
  if (const std::string why = CaseReason(r, c); !why.empty()) os << "<div class=\"reason\">" << Escape(why) << "</div>";
  if (c.status == CaseStatus::kSkipped) {
    os << "</details>";
    return;
  }
  os << "<div class=\"kv\"><b>vocabulary</b> " << c.vocab << " &middot; <b>exact kept set</b> " << c.kept
     << " &middot; <b>rollout tokens</b> " << c.draws << " &middot; <b>row seed</b> " << c.row_seed << "</div>";
  for (const char* side : {"replay_engine", "replay_trainer"}) {
    const json* s = Fields(c, side);
    if (s == nullptr) continue;
    os << "<div class=\"kv\"><b>" << (std::string(side) == "replay_engine" ? "engine" : "trainer") << "</b> "
       << Escape(TextAt(s, "source")) << ": kept " << CountAt(s, "kept") << " of exact " << CountAt(s, "reference_kept")
       << ", max |logprob - exact| " << Cell(NumberAt(s, "max_abs_delta_logprob")) << " at token "
       << CountAt(s, "worst_token") << " (" << Cell(NumberAt(s, "worst_logprob"), 7) << " vs "
       << Cell(NumberAt(s, "worst_expected"), 7) << ", tolerance " << Cell(NumberAt(s, "tolerance_at_worst")) << "), "
       << CountAt(s, "logprob_violations") << " logprob(s) off, " << CountAt(s, "beyond_margin")
       << " kept-set error(s) beyond the margin</div>";
  }
  os << OutcomesTable(c) << DisagreementTable(c) << "</details>";
}

}  // namespace

std::string ReplayBody(const CampaignReport& r) {
  std::vector<const CaseResult*> rows;
  const CaseResult* aggregate = nullptr;
  for (const CaseResult& c : r.cases) {
    if (IsAggregate(c)) {
      aggregate = &c;
    } else {
      rows.push_back(&c);
    }
  }
  std::ostringstream os;
  if (aggregate != nullptr) os << AggregateSection(*aggregate);
  os << "<h2>Logprob error per row</h2>" << LogprobErrorChart(rows);
  os << "<h2>Rows</h2><table class=\"cases replay-rows\"><tr><th>row</th><th>status</th><th>reason</th><th>logits</th>"
        "<th>params</th><th>dtype / trainer logits</th><th>kept engine / trainer</th><th>mean ratio</th>"
        "<th>mismatch KL</th><th>max |&Delta;lp| vs exact</th><th>max |&Delta;lp| between sides</th><th>label</th>"
        "<th>violations</th></tr>";
  for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
    for (const CaseResult* c : rows) {
      if (c->status == s) RowLine(os, r, *c);
    }
  }
  os << "</table><h2>Row details</h2>";
  for (CaseStatus s : {CaseStatus::kFail, CaseStatus::kError, CaseStatus::kSkipped, CaseStatus::kPass}) {
    for (const CaseResult* c : rows) {
      if (c->status == s) RowDetails(os, r, *c);
    }
  }
  os << "<p class=\"muted\">Schema " << Escape(r.schema)
     << ". Every replay check is exact (hard): each side's kept set and logprobs against the exact processed "
        "distribution of the logits it saw (fp32 tolerance), the label's logprob, the sides against each other (every "
        "token kept by one side explained by a cause), and the ratio bias over the rows. See docs/replay.md.</p>";
  return os.str();
}

}  // namespace samplecheck::harness::html
