// The replay family (checks.h, ReplayChecks; docs/replay.md): the checks of replay campaigns
// (replay_campaign.h). Their fields are null on every other case, so other reports read as before.
//   replay-engine      hard: the engine's kept set equals the profile's exact kept set of its row but for tokens
//                      inside the numerics model's margin (reported as numeric drift), and every kept token's
//                      logprob equals the exact logprob renormalized over the kept set within the fp32 tolerance.
//                      Alpha 0 (exact comparison); any token beyond the margin or the tolerance is seen.
//   replay-trainer     hard: the same for the trainer's answer on the logits it saw; a label the trainer restored
//                      (label guard) joins the expected set and is counted as a guard event.
//   replay-label       hard: the row's label (a token the engine sampled) has a finite trainer logprob; a silent
//                      -inf (importance ratio 0, loss inf) fails, a guarded one is reported.
//   replay-agreement   hard: the two sides' kept sets differ only where the profile leaves it open (a tie group cut by
//                      position: tie order; a decision inside the numerics margin: numeric drift) or the trainer's
//                      other logits (input) explain it; reported: max |delta logprob| on the tokens both
//                      keep, the kept mass an unrenormalized trainer's ratio would carry, and the synthetic rollout's
//                      importance ratios (mean, share outside [0.9, 1.1], mismatch KL r - log r - 1; a rollout token
//                      the trainer drops is counted at its guarded logprob when the trainer takes labels, at ratio 0
//                      otherwise).
//   replay-ratio-bias  hard (the "aggregate" case): |mean importance ratio - 1| over the rollout of the rows whose
//                      trainer saw the engine's logits within the suite's max_ratio_bias (the rows on bf16 or
//                      jittered logits, whose bias is the input's, reported apart); every row's figures summed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "check_family.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/core/format.h"
#include "samplecheck/reference/numerics.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr double kFp32UnitRoundoff = 0x1p-24;
constexpr size_t kListedTokens = 32;  // tokens listed per kind of disagreement (all are counted)
constexpr double kInf = std::numeric_limits<double>::infinity();

const ReplayEvidence* RowEvidence(const CaseEvidence& e) {
  return e.replay != nullptr && e.replay->role == ReplayRole::kRow ? e.replay : nullptr;
}

std::vector<int32_t> KeptTokens(std::span<const float> lp) {
  std::vector<int32_t> kept;
  for (size_t t = 0; t < lp.size(); ++t) {
    if (std::isfinite(lp[t])) kept.push_back(static_cast<int32_t>(t));
  }
  return kept;
}

bool Contains(const std::vector<int32_t>& sorted, int32_t t) {
  return std::binary_search(sorted.begin(), sorted.end(), t);
}

// The closest decision the reference recorded for `t` (nullptr: none, the token is far from every boundary).
const Decision* DecisionOf(const ProcessedDistribution& ref, int32_t t) {
  const Decision* best = nullptr;
  auto it = std::lower_bound(ref.boundary.begin(), ref.boundary.end(), t,
                             [](const Decision& d, int32_t token) { return d.token < token; });
  for (; it != ref.boundary.end() && it->token == t; ++it) {
    if (best == nullptr || it->margin_ulps < best->margin_ulps) best = &*it;
  }
  return best;
}

const char* FilterName(Filter f) { return f == Filter::kMinP ? "min-p" : f == Filter::kTopK ? "top-k" : "top-p"; }

json MarginFields(const ProcessedDistribution& ref, int32_t t) {
  const Decision* d = DecisionOf(ref, t);
  if (d == nullptr) return {{"margin_ulps", nullptr}, {"allowed_ulps", nullptr}, {"filter", nullptr}};
  return {{"margin_ulps", JsonNumber(d->margin_ulps)},
          {"allowed_ulps", JsonNumber(d->allowed_ulps)},
          {"filter", FilterName(d->filter)}};
}

std::string MarginText(const json& m) {
  if (m.at("margin_ulps").is_null()) return "no boundary decision recorded near it";
  return "margin " + FormatSignificant(ReadJsonNumber(m.at("margin_ulps")), 3) + " ulps of " +
         FormatSignificant(ReadJsonNumber(m.at("allowed_ulps")), 3) + " allowed, " + m.at("filter").get<std::string>();
}

// The fp32 error a log-softmax over the kept set can have at token t: the normalizer's sum (the profile's shape, at
// least a 16-lane vectorized reduction) twice (the row's and the kept set's), and a few roundings of each term.
double Tolerance(const Profile& profile, int64_t live, double scaled_gap, long double expected) {
  const double u = kFp32UnitRoundoff;
  const double gamma = std::max(SumRelativeError(profile.numerics.normalizer, live, u),
                                SumRelativeError(SumModel{SumOrder::kBlocked, 16, 4}, live, u));
  return 2 * gamma + 8 * u * (scaled_gap + std::fabs(static_cast<double>(expected)) + 1);
}

int64_t LiveTokens(std::span<const float> row) {
  return std::count_if(row.begin(), row.end(), [](float x) { return !std::isnan(x) && x != -INFINITY; });
}

// ---- one side against the exact distribution of its own row ---------------------------------------------------
struct SideVerdict {
  json fields;
  uint64_t violations = 0;
};

json TokenEntry(int32_t t, double logprob, const ProcessedDistribution& ref) {
  json j = MarginFields(ref, t);
  j["token"] = t;
  j["logprob"] = JsonNumber(logprob);
  j["within_margin"] = ref.IsAmbiguous(t);
  return j;
}

SideVerdict JudgeSide(const ReplayEvidence& ev, const ReplaySideEvidence& s, bool trainer) {
  const ProcessedDistribution& ref = *s.reference;
  SideVerdict v;
  uint64_t nan = 0;
  for (float x : s.logprobs) nan += std::isnan(x) || x == INFINITY;
  const std::vector<int32_t> kept = KeptTokens(s.logprobs);
  const bool guard = trainer && ev.label != kNoLabel && !ref.IsKept(ev.label) && Contains(kept, ev.label);
  json missing = json::array(), extra = json::array();
  uint64_t beyond = 0, drift = 0;
  auto note = [&](json& list, int32_t t, double lp) {
    const bool within = ref.IsAmbiguous(t);
    (within ? drift : beyond) += 1;
    if (list.size() < kListedTokens) list.push_back(TokenEntry(t, lp, ref));
  };
  for (size_t i = 0; i < ref.kept.size(); ++i) {
    if (!Contains(kept, ref.kept[i])) note(missing, ref.kept[i], static_cast<double>(std::log(ref.prob[i])));
  }
  for (int32_t t : kept) {
    if (!ref.IsKept(t) && !(guard && t == ev.label)) note(extra, t, s.logprobs[static_cast<size_t>(t)]);
  }
  // The logprobs over the set the side kept (its own renormalization), against the exact ones over that set.
  const std::vector<long double> expected = LogprobsOver(s.row, ev.params, kept);
  const int64_t live = LiveTokens(s.row);
  float x_max = -INFINITY;
  for (int32_t t : kept) x_max = std::max(x_max, s.row[static_cast<size_t>(t)]);
  const double T = ev.params.temperature > 0 ? ev.params.temperature : 1.0;
  uint64_t off = 0;
  double max_delta = 0.0, worst_ratio = -1.0, worst_tol = 0.0;
  int32_t worst = -1;
  for (int32_t t : kept) {
    const long double want = expected[static_cast<size_t>(t)];
    const double got = s.logprobs[static_cast<size_t>(t)];
    const double gap = std::isfinite(x_max) ? std::fabs(double(x_max) - double(s.row[static_cast<size_t>(t)])) / T : 0;
    const double delta = std::isfinite(static_cast<double>(want)) ? std::fabs(got - static_cast<double>(want)) : kInf;
    const double tol = Tolerance(*ev.profile, live, gap, std::isfinite(static_cast<double>(want)) ? want : 0.0L);
    max_delta = std::max(max_delta, delta);
    off += delta > tol;
    if (delta / tol > worst_ratio) {
      worst_ratio = delta / tol;
      worst = t;
      worst_tol = tol;
    }
  }
  v.violations = nan + beyond + off;
  v.fields = {{"source", s.source},
              {"kept", kept.size()},
              {"reference_kept", ref.kept.size()},
              {"missing", missing},
              {"extra", extra},
              {"numeric_drift", drift},
              {"beyond_margin", beyond},
              {"guard_label", guard ? json(ev.label) : json(nullptr)},
              {"nan", nan},
              {"max_abs_delta_logprob", JsonNumber(max_delta)},
              {"worst_token", worst},
              {"worst_logprob", worst < 0 ? json(nullptr) : JsonNumber(s.logprobs[static_cast<size_t>(worst)])},
              {"worst_expected", worst < 0 ? json(nullptr) : JsonNumber(double(expected[static_cast<size_t>(worst)]))},
              {"tolerance_at_worst", JsonNumber(worst_tol)},
              {"logprob_violations", off},
              {"violations", v.violations}};
  return v;
}

std::string SideFinding(const json& j, const std::string& side) {
  std::ostringstream os;
  const uint64_t beyond = j.at("beyond_margin").get<uint64_t>(), off = j.at("logprob_violations").get<uint64_t>();
  const uint64_t nan = j.at("nan").get<uint64_t>();
  if (beyond + off + nan == 0) {
    os << side << " keeps " << j.at("kept").get<uint64_t>() << " tokens as the reference of its row ("
       << j.at("numeric_drift").get<uint64_t>() << " disagreement(s) inside the numerics margin)"
       << (j.at("guard_label").is_null() ? "" : ", the label restored by its guard") << "; max |delta logprob| "
       << FormatSignificant(ReadJsonNumber(j.at("max_abs_delta_logprob")), 3) << " within the fp32 tolerance";
    return os.str();
  }
  os << side << " (" << j.at("source").get<std::string>()
     << ") departs from the exact processed distribution of its row:";
  for (const char* list : {"missing", "extra"}) {
    for (const json& t : j.at(list)) {
      if (t.at("within_margin").get<bool>()) continue;
      os << " token " << t.at("token").get<int32_t>() << (std::string(list) == "missing" ? " dropped" : " kept") << " ("
         << MarginText(t) << ");";
    }
  }
  if (off > 0) {
    os << " " << off << " logprob(s) off, worst token " << j.at("worst_token").get<int32_t>() << ": "
       << FormatSignificant(ReadJsonNumber(j.at("worst_logprob")), 7) << " vs exact "
       << FormatSignificant(ReadJsonNumber(j.at("worst_expected")), 7) << " (tolerance "
       << FormatSignificant(ReadJsonNumber(j.at("tolerance_at_worst")), 2) << ");";
  }
  if (nan > 0) os << " " << nan << " NaN or +inf logprob(s);";
  return os.str();
}

// A replay check's stored fields against each other: what one field determines of another (a count of its list,
// a sum of its parts, a test of its numbers) must hold, so that a hand-edited replay report cannot pass the gate
// (CaseCheck::Recheck). `check` names the check in the error.
template <class F>
Status RecheckReplay(std::string_view check, F&& recheck) {
  try {
    recheck();
  } catch (const std::exception& e) {
    return Error{ErrorCode::kParse, "check " + std::string(check) + ": " + JsonErrorText(e)};
  }
  return Status::Ok();
}

[[noreturn]] void Contradiction(const std::string& what) { throw std::runtime_error(what); }

// Counts of the entries of a stored token list that are inside / outside the numerics margin.
std::pair<uint64_t, uint64_t> WithinAndBeyond(const json& list) {
  uint64_t within = 0, beyond = 0;
  for (const json& t : list) (t.at("within_margin").get<bool>() ? within : beyond) += 1;
  return {within, beyond};
}

// One side's fields (JudgeSide): violations = nan + beyond_margin + logprob_violations; the margin counts are those
// of the missing and extra lists (at least, when a list is full); its kept count follows from the reference's and
// the lists; the worst token's numbers say whether any logprob is off.
void RecheckSide(const json& j, const std::string& key) {
  const uint64_t nan = StoredCount(j.at("nan"), key + ".nan");
  const uint64_t beyond = StoredCount(j.at("beyond_margin"), key + ".beyond_margin");
  const uint64_t drift = StoredCount(j.at("numeric_drift"), key + ".numeric_drift");
  const uint64_t off = StoredCount(j.at("logprob_violations"), key + ".logprob_violations");
  const uint64_t violations = StoredCount(j.at("violations"), key + ".violations");
  if (violations != nan + beyond + off) {
    Contradiction(key + ".violations = " + std::to_string(violations) + " but nan + beyond_margin + " +
                  "logprob_violations = " + std::to_string(nan) + " + " + std::to_string(beyond) + " + " +
                  std::to_string(off));
  }
  const json &missing = j.at("missing"), &extra = j.at("extra");
  const auto [w_missing, b_missing] = WithinAndBeyond(missing);
  const auto [w_extra, b_extra] = WithinAndBeyond(extra);
  const bool complete = missing.size() < kListedTokens && extra.size() < kListedTokens;
  if (complete ? (beyond != b_missing + b_extra || drift != w_missing + w_extra)
               : (beyond < b_missing + b_extra || drift < w_missing + w_extra)) {
    Contradiction(key + ": beyond_margin = " + std::to_string(beyond) + ", numeric_drift = " + std::to_string(drift) +
                  " but its missing and extra tokens list " + std::to_string(b_missing + b_extra) + " beyond and " +
                  std::to_string(w_missing + w_extra) + " inside the margin");
  }
  const uint64_t kept = StoredCount(j.at("kept"), key + ".kept");
  const uint64_t reference = StoredCount(j.at("reference_kept"), key + ".reference_kept");
  const uint64_t guard = j.at("guard_label").is_null() ? 0 : 1;
  if (complete && (missing.size() > reference || kept != reference - missing.size() + extra.size() + guard)) {
    Contradiction(key + ".kept = " + std::to_string(kept) + " but the reference keeps " + std::to_string(reference) +
                  ", " + std::to_string(missing.size()) + " missing, " + std::to_string(extra.size()) + " extra" +
                  (guard ? ", the guarded label" : ""));
  }
  const int32_t worst = j.at("worst_token").get<int32_t>();
  if (worst < 0) {
    if (off > 0) Contradiction(key + ": " + std::to_string(off) + " logprob(s) off and no worst token");
    return;
  }
  const double got = ReadJsonNumber(j.at("worst_logprob")), want = ReadJsonNumber(j.at("worst_expected"));
  const double tol = ReadJsonNumber(j.at("tolerance_at_worst"));
  const double delta = std::isfinite(want) ? std::fabs(got - want) : kInf;
  if ((delta > tol) != (off > 0)) {
    Contradiction(key + ": worst token " + std::to_string(worst) + " is off by " + FormatSignificant(delta, 3) +
                  " at tolerance " + FormatSignificant(tol, 3) + " but logprob_violations = " + std::to_string(off));
  }
  const double max_delta = ReadJsonNumber(j.at("max_abs_delta_logprob"));
  if (!(delta <= max_delta * (1 + 1e-12)) && !std::isnan(delta)) {
    Contradiction(key + ".max_abs_delta_logprob = " + FormatSignificant(max_delta, 6) + " is below the worst token's " +
                  FormatSignificant(delta, 6));
  }
}

class ReplaySideCheck final : public CaseCheck {
 public:
  explicit ReplaySideCheck(bool trainer) : trainer_(trainer) {}
  std::string_view Name() const override { return trainer_ ? "replay-trainer" : "replay-engine"; }
  std::string_view Summary() const override {
    return trainer_ ? "replay rows, hard: the trainer's kept set is the exact one of the logits it saw but for tokens "
                      "inside the numerics margin (numeric drift) and a label its guard restored; its logprobs the "
                      "exact ones over its kept set within the fp32 tolerance"
                    : "replay rows, hard: the engine's processed logprobs keep the exact kept set of its row but for "
                      "tokens inside the numerics margin (numeric drift), each within the fp32 tolerance of the exact "
                      "logprob over the kept set";
  }
  std::vector<std::string> ReportKeys() const override { return {Key()}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    const ReplayEvidence* ev = RowEvidence(e);
    const ReplaySideEvidence* s = ev == nullptr ? nullptr : trainer_ ? &ev->trainer : &ev->engine;
    if (s == nullptr || !s->given) return {{Key(), nullptr}};
    return {{Key(), JudgeSide(*ev, *s, trainer_).fields}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at(Key());
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome(std::string(Name()), "", trainer_ ? "trainer replay" : "engine processed logprobs",
                                   CheckOutcome::Kind::kHard);
      o.violations = j.at("violations").get<uint64_t>();
      o.statistic = double(o.violations);
      o.finding = SideFinding(j, trainer_ ? "the trainer" : "the engine");
      if (o.violations > 0) o.draws_for_power = 1;
      return {o};
    });
  }

  Status Recheck(const json& fields, const CaseResult&) const override {
    return RecheckReplay(Name(), [&] {
      if (!fields.at(Key()).is_null()) RecheckSide(fields.at(Key()), Key());
    });
  }

 private:
  std::string Key() const { return trainer_ ? "replay_trainer" : "replay_engine"; }
  bool trainer_;
};

// ---- the label ------------------------------------------------------------------------------------------------
class ReplayLabelCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "replay-label"; }
  std::string_view Summary() const override {
    return "replay rows, hard: the row's label (the engine's sampled token) has a finite trainer logprob; a label "
           "outside the trainer's kept set is a guard event (reported), a silent -inf (ratio 0, loss inf) a failure";
  }
  std::vector<std::string> ReportKeys() const override { return {"replay_label"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    const ReplayEvidence* ev = RowEvidence(e);
    if (ev == nullptr || ev->label == kNoLabel) return {{"replay_label", nullptr}};
    const size_t y = static_cast<size_t>(ev->label);
    const ProcessedDistribution& ref = *ev->trainer.reference;
    const double lp_t = ev->trainer.logprobs[y];
    const bool dropped = !std::isfinite(lp_t);
    return {{"replay_label",
             {{"label", ev->label},
              {"choice", ev->label_choice},
              {"trainer", ev->trainer.source},
              {"sent", ev->labels_sent},
              {"engine_logprob", JsonNumber(ev->engine.logprobs[y])},
              {"trainer_logprob", JsonNumber(lp_t)},
              {"in_trainer_reference", ref.IsKept(ev->label)},
              {"within_margin", ref.IsAmbiguous(ev->label)},
              {"margin", MarginFields(ref, ev->label)},
              {"guard_event", !dropped && !ref.IsKept(ev->label)},
              {"guard_reported", ev->trainer.guard_reported},
              {"silent_drop", dropped}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("replay_label");
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome("replay-label", "", "label guard", CheckOutcome::Kind::kHard);
      const int32_t label = j.at("label").get<int32_t>();
      const bool dropped = j.at("silent_drop").get<bool>();
      o.violations = dropped ? 1 : 0;
      o.statistic = double(o.violations);
      const std::string what = "label " + std::to_string(label) + " (" + j.at("choice").get<std::string>() +
                               ", engine logprob " + FormatSignificant(ReadJsonNumber(j.at("engine_logprob")), 4) + ")";
      if (dropped) {
        o.finding = what + " has trainer logprob " + FormatSignificant(ReadJsonNumber(j.at("trainer_logprob")), 4) +
                    " with no guard event: importance ratio 0, loss inf (" +
                    (j.at("in_trainer_reference").get<bool>()
                         ? std::string("the exact replay keeps it")
                         : "outside the trainer's exact kept set, " + MarginText(j.at("margin"))) +
                    (j.at("sent").get<bool>() ? "" : "; the trainer takes no labels") + ")";
        o.draws_for_power = 1;
      } else if (j.at("guard_event").get<bool>()) {
        o.finding =
            what + " is outside the trainer's exact kept set (" + MarginText(j.at("margin")) +
            "): restored by the label guard (a guard event" +
            (j.at("guard_reported").get<bool>() ? ", reported by the trainer)" : ", not reported by the trainer)");
      } else {
        o.finding = what + " kept by the trainer";
      }
      return {o};
    });
  }

  // silent_drop is a non-finite trainer logprob; a guard event a finite one outside the trainer's exact kept set.
  Status Recheck(const json& fields, const CaseResult&) const override {
    return RecheckReplay(Name(), [&] {
      const json& j = fields.at("replay_label");
      if (j.is_null()) return;
      const bool dropped = !std::isfinite(ReadJsonNumber(j.at("trainer_logprob")));
      if (j.at("silent_drop").get<bool>() != dropped) {
        Contradiction("replay_label.silent_drop = " + j.at("silent_drop").dump() + " but the trainer logprob is " +
                      j.at("trainer_logprob").dump());
      }
      const bool guard = !dropped && !j.at("in_trainer_reference").get<bool>();
      if (j.at("guard_event").get<bool>() != guard) {
        Contradiction("replay_label.guard_event = " + j.at("guard_event").dump() + " but the label is " +
                      (j.at("in_trainer_reference").get<bool>() ? "inside" : "outside") +
                      " the trainer's exact kept set with trainer logprob " + j.at("trainer_logprob").dump());
      }
    });
  }
};

// ---- the two sides against each other ----------------------------------------------------------------------------
struct Rollout {
  uint64_t tokens = 0, outside = 0, zero = 0, guarded = 0;
  double ratio_sum = 0.0, kl_sum = 0.0;
};

// r = p_trainer / p_engine of one token (0 when the trainer drops it) and its mismatch KL term r - log r - 1.
void AddRatio(Rollout& r, double lp_engine, double lp_trainer) {
  const double log_ratio = lp_trainer - lp_engine;
  const double ratio = std::isfinite(lp_trainer) ? std::exp(log_ratio) : 0.0;
  ++r.tokens;
  r.ratio_sum += ratio;
  r.outside += ratio < 0.9 || ratio > 1.1;
  r.zero += ratio == 0.0;
  r.kl_sum += ratio == 0.0 ? kInf : ratio - log_ratio - 1.0;
}

// The trainer's logprob of a rollout token it dropped, as its label guard would give it were the token the label of
// its position (every rollout token is one in training): the token's weight put back beside the trainer's own
// normalization, read off its most probable kept token i: a - log(1 + e^a), a = (x_y - x_i) / T + lp_t(i). -inf
// when the trainer takes no labels (a dropped token is then a ratio of 0, a loss of inf).
double GuardedTrainerLogprob(const ReplayEvidence& ev, int32_t y) {
  const std::span<const float> lt = ev.trainer.logprobs;
  const double lp = lt[static_cast<size_t>(y)];
  if (std::isfinite(lp) || !ev.labels_sent || !(ev.params.temperature > 0)) return lp;
  size_t best = lt.size();
  for (size_t t = 0; t < lt.size(); ++t) {
    if (std::isfinite(lt[t]) && (best == lt.size() || lt[t] > lt[best])) best = t;
  }
  const double x_y = ev.trainer.row[static_cast<size_t>(y)];
  if (best == lt.size() || !std::isfinite(x_y)) return lp;
  const double a = (x_y - double(ev.trainer.row[best])) / ev.params.temperature + lt[best];
  return a - std::log1p(std::exp(a));
}

// Whether t is an ambiguous member of a tie group its reference cuts (another ambiguous token of the same logit on
// the other side of the cut): the profile leaves the member to the sort's order.
bool InCutTie(const ProcessedDistribution& ref, std::span<const float> row, int32_t t) {
  if (!ref.IsAmbiguous(t)) return false;
  for (int32_t u : ref.ambiguous) {
    if (u != t && row[size_t(u)] == row[size_t(t)] && ref.IsKept(u) != ref.IsKept(t)) return true;
  }
  return false;
}

// Why the sides disagree on t (the label is never among them: the engine keeps it, the trainer keeps or restores it
// or fails replay-label).
std::string Cause(const ReplayEvidence& ev, int32_t t) {
  const ProcessedDistribution& re = *ev.engine.reference;
  const ProcessedDistribution& rt = *ev.trainer.reference;
  if (InCutTie(re, ev.engine.row, t) || InCutTie(rt, ev.trainer.row, t)) return "tie_order";
  if (re.IsAmbiguous(t) || rt.IsAmbiguous(t)) return "numeric_drift";
  if (re.IsKept(t) != rt.IsKept(t)) return "input";
  return "beyond";
}

json AgreementFields(const ReplayEvidence& ev) {
  const std::span<const float> le = ev.engine.logprobs, lt = ev.trainer.logprobs;
  const std::vector<int32_t> ke = KeptTokens(le), kt = KeptTokens(lt);
  json list = json::array();
  json by_cause = {{"tie_order", 0}, {"numeric_drift", 0}, {"input", 0}, {"beyond", 0}};
  double max_delta = 0.0;
  int32_t delta_token = -1;
  uint64_t shared = 0;
  for (size_t t = 0; t < le.size(); ++t) {
    const bool e_keeps = std::isfinite(le[t]), t_keeps = std::isfinite(lt[t]);
    if (e_keeps && t_keeps) {
      ++shared;
      const double d = std::fabs(double(lt[t]) - double(le[t]));
      if (d > max_delta || delta_token < 0) {
        max_delta = std::max(max_delta, d);
        delta_token = static_cast<int32_t>(t);
      }
    } else if (e_keeps != t_keeps) {
      const std::string cause = Cause(ev, static_cast<int32_t>(t));
      by_cause[cause] = by_cause[cause].get<uint64_t>() + 1;
      if (list.size() < kListedTokens) {
        const ProcessedDistribution& closer =
            DecisionOf(*ev.engine.reference, int32_t(t)) ? *ev.engine.reference : *ev.trainer.reference;
        json d = MarginFields(closer, static_cast<int32_t>(t));
        d["token"] = t;
        d["engine_logprob"] = JsonNumber(le[t]);
        d["trainer_logprob"] = JsonNumber(lt[t]);
        d["cause"] = cause;
        list.push_back(std::move(d));
      }
    }
  }
  // The kept mass a trainer that takes the full log-softmax would carry: the engine's kept set under the trainer's
  // unfiltered distribution (the mean ratio of an unrenormalized replay, trl#6789).
  std::vector<int32_t> all(ev.trainer.row.size());
  for (size_t t = 0; t < all.size(); ++t) all[t] = static_cast<int32_t>(t);
  const std::vector<long double> full = LogprobsOver(ev.trainer.row, ev.params, all);
  long double kept_mass = 0;
  for (int32_t t : ke) kept_mass += std::exp(full[static_cast<size_t>(t)]);
  Rollout drawn;
  for (int32_t y : ev.rollout) {
    drawn.guarded += !std::isfinite(lt[static_cast<size_t>(y)]) && ev.labels_sent;
    AddRatio(drawn, le[static_cast<size_t>(y)], GuardedTrainerLogprob(ev, y));
  }
  double exp_ratio = 0.0, exp_kl = 0.0;
  for (int32_t y : ke) {
    Rollout one;
    AddRatio(one, le[static_cast<size_t>(y)], GuardedTrainerLogprob(ev, y));
    const double p = std::exp(double(le[static_cast<size_t>(y)]));
    exp_ratio += p * one.ratio_sum;
    exp_kl += one.kl_sum == 0.0 ? 0.0 : p * one.kl_sum;
  }
  const double n = double(std::max<uint64_t>(drawn.tokens, 1));
  return {{"engine", ev.engine.source},
          {"trainer", ev.trainer.source},
          {"dtype", ev.dtype},
          {"trainer_logits", ev.trainer_logits},
          {"engine_kept", ke.size()},
          {"trainer_kept", kt.size()},
          {"shared", shared},
          {"disagreements", list},
          {"by_cause", by_cause},
          {"max_abs_delta_logprob", JsonNumber(max_delta)},
          {"delta_token", delta_token},
          {"kept_mass_unrenormalized", JsonNumber(static_cast<double>(kept_mass))},
          {"rollout",
           {{"tokens", drawn.tokens},
            {"ratio_sum", JsonNumber(drawn.ratio_sum)},
            {"mean_ratio", JsonNumber(drawn.ratio_sum / n)},
            {"outside_0_9_1_1", drawn.outside},
            {"zero_ratio_tokens", drawn.zero},
            {"guarded_tokens", drawn.guarded},
            {"mismatch_kl", JsonNumber(drawn.kl_sum / n)},
            {"expected_mean_ratio", JsonNumber(exp_ratio)},
            {"expected_mismatch_kl", JsonNumber(exp_kl)}}}};
}

std::string RolloutText(double mean_ratio, double outside_share, double kl) {
  return "mean ratio " + FormatSignificant(mean_ratio, 6) + ", " + FormatSignificant(100 * outside_share, 3) +
         "% outside [0.9, 1.1], mismatch KL " + FormatSignificant(kl, 3);
}

class ReplayAgreementCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "replay-agreement"; }
  std::string_view Summary() const override {
    return "replay rows, hard: the engine's and the trainer's kept sets differ only where a numerics margin or the "
           "trainer's other logits explain it (each disagreement with its cause and margin); "
           "reported: max |delta logprob| on shared tokens, the unrenormalized kept mass, the synthetic rollout's "
           "importance ratios";
  }
  std::vector<std::string> ReportKeys() const override { return {"replay_agreement"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    const ReplayEvidence* ev = RowEvidence(e);
    if (ev == nullptr) return {{"replay_agreement", nullptr}};
    return {{"replay_agreement", AgreementFields(*ev)}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("replay_agreement");
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome("replay-agreement", "", "engine vs trainer", CheckOutcome::Kind::kHard);
      const json& c = j.at("by_cause");
      o.violations = c.at("beyond").get<uint64_t>();
      o.statistic = double(o.violations);
      const json& r = j.at("rollout");
      const double tokens = double(std::max<uint64_t>(r.at("tokens").get<uint64_t>(), 1));
      std::ostringstream os;
      if (o.violations > 0) {
        os << o.violations << " token(s) kept by one side only where both exact references agree:";
        for (const json& d : j.at("disagreements")) {
          if (d.at("cause").get<std::string>() != "beyond") continue;
          os << " " << d.at("token").get<int32_t>() << " (engine "
             << FormatSignificant(ReadJsonNumber(d.at("engine_logprob")), 4) << ", trainer "
             << FormatSignificant(ReadJsonNumber(d.at("trainer_logprob")), 4) << ");";
        }
        os << " ";
        o.draws_for_power = 1;
      }
      os << "kept sets " << j.at("engine_kept").get<uint64_t>() << " / " << j.at("trainer_kept").get<uint64_t>()
         << " (disagreements: " << c.at("tie_order").get<uint64_t>() << " tie order, "
         << c.at("numeric_drift").get<uint64_t>() << " numeric drift, " << c.at("input").get<uint64_t>()
         << " input), max |delta "
         << "logprob| " << FormatSignificant(ReadJsonNumber(j.at("max_abs_delta_logprob")), 3) << " on "
         << j.at("shared").get<uint64_t>() << " shared tokens, unrenormalized kept mass "
         << FormatSignificant(ReadJsonNumber(j.at("kept_mass_unrenormalized")), 6) << "; rollout of "
         << r.at("tokens").get<uint64_t>() << ": "
         << RolloutText(ReadJsonNumber(r.at("mean_ratio")), double(r.at("outside_0_9_1_1").get<uint64_t>()) / tokens,
                        ReadJsonNumber(r.at("mismatch_kl")));
      o.finding = os.str();
      return {o};
    });
  }

  // The causes count the listed disagreements (at least, when the list is full), which are the tokens one side keeps
  // and the other does not; the kept counts are the sides' own; the rollout's mean is its sum over its tokens.
  Status Recheck(const json& fields, const CaseResult& c) const override {
    return RecheckReplay(Name(), [&] {
      const json& j = fields.at("replay_agreement");
      if (j.is_null()) return;
      const json& list = j.at("disagreements");
      uint64_t total = 0;
      for (const char* cause : {"tie_order", "numeric_drift", "input", "beyond"}) {
        const uint64_t n = StoredCount(j.at("by_cause").at(cause), std::string("by_cause.") + cause);
        uint64_t listed = 0;
        for (const json& d : list) listed += d.at("cause").get<std::string>() == cause;
        if (list.size() < kListedTokens ? n != listed : n < listed) {
          Contradiction(std::string("replay_agreement.by_cause.") + cause + " = " + std::to_string(n) + " but " +
                        std::to_string(listed) + " disagreement(s) of that cause are listed");
        }
        total += n;
      }
      const uint64_t ke = StoredCount(j.at("engine_kept"), "engine_kept");
      const uint64_t kt = StoredCount(j.at("trainer_kept"), "trainer_kept");
      const uint64_t shared = StoredCount(j.at("shared"), "shared");
      if (shared > ke || shared > kt || ke + kt - 2 * shared != total) {
        Contradiction("replay_agreement: kept sets " + std::to_string(ke) + " / " + std::to_string(kt) + " sharing " +
                      std::to_string(shared) + " tokens differ in " + std::to_string(ke + kt - 2 * shared) +
                      ", the causes count " + std::to_string(total));
      }
      for (const auto& [key, kept] : {std::pair<const char*, uint64_t>{"replay_engine", ke}, {"replay_trainer", kt}}) {
        const json side = c.checks.value(key, json());
        if (!side.is_null() && StoredCount(side.at("kept"), std::string(key) + ".kept") != kept) {
          Contradiction(std::string("replay_agreement's ") +
                        (key == std::string("replay_engine") ? "engine" : "trainer") + " keeps " +
                        std::to_string(kept) + " tokens, " + key + ".kept says " + side.at("kept").dump());
        }
      }
      const json& r = j.at("rollout");
      const uint64_t tokens = StoredCount(r.at("tokens"), "rollout.tokens");
      for (const char* count : {"outside_0_9_1_1", "zero_ratio_tokens", "guarded_tokens"}) {
        if (StoredCount(r.at(count), std::string("rollout.") + count) > tokens) {
          Contradiction(std::string("rollout.") + count + " = " + r.at(count).dump() + " of " + std::to_string(tokens) +
                        " rollout tokens");
        }
      }
      const double mean = ReadJsonNumber(r.at("mean_ratio"));
      const double from_sum = ReadJsonNumber(r.at("ratio_sum")) / double(std::max<uint64_t>(tokens, 1));
      if (!SameStoredNumber(mean, from_sum)) {
        Contradiction("rollout.mean_ratio = " + FormatSignificant(mean, 7) +
                      " but ratio_sum / tokens = " + FormatSignificant(from_sum, 7));
      }
    });
  }
};

// ---- the aggregate ---------------------------------------------------------------------------------------------
// The rollout's figures over a group of rows: the rows whose trainer saw the engine's logits ("same": the bias the
// replay itself carries, bounded) and the rows whose trainer saw other logits (bf16, jitter: the bias the input
// carries, reported).
struct RolloutGroup {
  uint64_t rows = 0, tokens = 0, outside = 0, zero = 0, guarded = 0;
  double ratio_sum = 0.0, kl_sum = 0.0;

  void Add(const json& r) {
    const uint64_t n = r.at("tokens").get<uint64_t>();
    ++rows;
    tokens += n;
    ratio_sum += ReadJsonNumber(r.at("ratio_sum"));
    kl_sum += double(n) * ReadJsonNumber(r.at("mismatch_kl"));
    outside += r.at("outside_0_9_1_1").get<uint64_t>();
    zero += r.at("zero_ratio_tokens").get<uint64_t>();
    guarded += r.at("guarded_tokens").get<uint64_t>();
  }
  json Fields() const {
    const double n = double(std::max<uint64_t>(tokens, 1));
    return {{"rows", rows},
            {"tokens", tokens},
            {"mean_ratio", JsonNumber(tokens ? ratio_sum / n : 1.0)},
            {"outside_0_9_1_1", JsonNumber(double(outside) / n)},
            {"zero_ratio_tokens", zero},
            {"guarded_tokens", guarded},
            {"mismatch_kl", JsonNumber(kl_sum / n)}};
  }
};

json AggregateFields(const ReplayEvidence& ev) {
  uint64_t rows = 0, failed = 0, guard_events = 0, silent = 0;
  double max_delta = 0.0, mass_sum = 0.0, mass_min = 1.0;
  std::string delta_row, mass_row;
  json causes = {{"tie_order", 0}, {"numeric_drift", 0}, {"input", 0}, {"beyond", 0}};
  RolloutGroup same, other;
  for (const CaseResult& c : ev.rows) {
    if (c.status == CaseStatus::kSkipped || c.status == CaseStatus::kError) continue;
    const json& a = c.checks.value("replay_agreement", json());
    if (a.is_null()) continue;
    ++rows;
    failed += std::any_of(c.outcomes.begin(), c.outcomes.end(), [](const CheckOutcome& o) { return o.Fails(); });
    for (auto& [cause, n] : causes.items()) n = n.get<uint64_t>() + a.at("by_cause").at(cause).get<uint64_t>();
    const double delta = ReadJsonNumber(a.at("max_abs_delta_logprob"));
    if (delta > max_delta || delta_row.empty()) {
      max_delta = std::max(max_delta, delta);
      delta_row = c.name;
    }
    const double mass = ReadJsonNumber(a.at("kept_mass_unrenormalized"));
    mass_sum += mass;
    if (mass < mass_min || mass_row.empty()) {
      mass_min = std::min(mass_min, mass);
      mass_row = c.name;
    }
    (a.at("trainer_logits").get<std::string>() == "same" ? same : other).Add(a.at("rollout"));
    const json& label = c.checks.value("replay_label", json());
    if (!label.is_null()) {
      guard_events += label.at("guard_event").get<bool>();
      silent += label.at("silent_drop").get<bool>();
    }
  }
  return {{"rows", rows},
          {"failed_rows", failed},
          {"disagreements", causes},
          {"max_abs_delta_logprob", JsonNumber(max_delta)},
          {"max_delta_row", delta_row},
          {"kept_mass_mean", JsonNumber(rows ? mass_sum / double(rows) : 1.0)},
          {"kept_mass_min", JsonNumber(mass_min)},
          {"kept_mass_min_row", mass_row},
          {"guard_events", guard_events},
          {"silent_drops", silent},
          {"same_logits", same.Fields()},
          {"other_logits", other.Fields()},
          {"max_ratio_bias", JsonNumber(ev.max_ratio_bias)}};
}

std::string GroupText(const json& g) {
  const uint64_t tokens = g.at("tokens").get<uint64_t>();
  if (tokens == 0) return "no rows";
  return std::to_string(g.at("rows").get<uint64_t>()) + " rows, " + std::to_string(tokens) + " rollout tokens: " +
         RolloutText(ReadJsonNumber(g.at("mean_ratio")), ReadJsonNumber(g.at("outside_0_9_1_1")),
                     ReadJsonNumber(g.at("mismatch_kl")));
}

class ReplayRatioBiasCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "replay-ratio-bias"; }
  std::string_view Summary() const override {
    return "replay campaigns (the aggregate case), hard: |mean importance ratio - 1| over the synthetic rollout of "
           "the rows whose trainer saw the engine's logits within the suite's max_ratio_bias (rows on bf16 or "
           "jittered logits reported apart); the rows' disagreements, max |delta logprob|, kept mass, guard events "
           "summed beside it";
  }
  std::vector<std::string> ReportKeys() const override { return {"replay_aggregate"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.replay == nullptr || e.replay->role != ReplayRole::kAggregate) return {{"replay_aggregate", nullptr}};
    return {{"replay_aggregate", AggregateFields(*e.replay)}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("replay_aggregate");
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome("replay-ratio-bias", "", "importance ratio bias", CheckOutcome::Kind::kHard);
      const json& same = j.at("same_logits");
      const double mean = ReadJsonNumber(same.at("mean_ratio")), bound = ReadJsonNumber(j.at("max_ratio_bias"));
      const bool off = !(std::fabs(mean - 1.0) <= bound);
      o.violations = off ? 1 : 0;
      o.statistic = std::fabs(mean - 1.0);
      const json& c = j.at("disagreements");
      std::ostringstream os;
      if (off) {
        os << "|mean ratio - 1| = " << FormatSignificant(std::fabs(mean - 1.0), 3) << " > "
           << FormatSignificant(bound, 3) << " where the trainer saw the engine's logits; ";
      }
      os << j.at("rows").get<uint64_t>() << " rows (" << j.at("failed_rows").get<uint64_t>() << " failed): "
         << "kept-set disagreements " << c.at("tie_order").get<uint64_t>() << " tie order, "
         << c.at("numeric_drift").get<uint64_t>() << " numeric drift, " << c.at("input").get<uint64_t>() << " input, "
         << c.at("beyond").get<uint64_t>() << " beyond; max |delta logprob| "
         << FormatSignificant(ReadJsonNumber(j.at("max_abs_delta_logprob")), 3) << " ("
         << j.at("max_delta_row").get<std::string>() << "); unrenormalized kept mass mean "
         << FormatSignificant(ReadJsonNumber(j.at("kept_mass_mean")), 4) << ", min "
         << FormatSignificant(ReadJsonNumber(j.at("kept_mass_min")), 4) << "; label guard events "
         << j.at("guard_events").get<uint64_t>() << ", silent drops " << j.at("silent_drops").get<uint64_t>()
         << "; same logits: " << GroupText(same) << "; other logits: " << GroupText(j.at("other_logits"));
      o.finding = os.str();
      if (off) o.draws_for_power = 1;
      return {o};
    });
  }
};

}  // namespace

CheckList ReplayChecks() {
  CheckList v;
  v.push_back(std::make_unique<ReplaySideCheck>(false));
  v.push_back(std::make_unique<ReplaySideCheck>(true));
  v.push_back(std::make_unique<ReplayLabelCheck>());
  v.push_back(std::make_unique<ReplayAgreementCheck>());
  v.push_back(std::make_unique<ReplayRatioBiasCheck>());
  return v;
}

}  // namespace samplecheck::harness
