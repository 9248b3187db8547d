// The Draw stage of speculative-decoding campaigns (spec_draw.h).
#include "spec_draw.h"

#include <algorithm>

#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {
namespace {

constexpr uint64_t kDeterminismTrials = 64;  // trials re-verified alone (twice) per request
constexpr uint64_t kStreamTrials = 256;       // trials verified again under a second seed (seed dependence)
constexpr uint64_t kFreshCalls = 16;          // trials a fresh verifier verifies one call each
constexpr uint64_t kSeedSalt = 0x5EED0F31ULL; // the second seed: splitmix of the first ^ this
constexpr uint64_t kTrialChunk = uint64_t{1} << 16;
constexpr double kEdgeMargin = 1e-4;         // scripted coins at (p/q)(1 -+ margin): robust to fp32 p and q

void KeepFirst(Tally& t, const VerifyResult& result, std::span<const int32_t> drafts, uint64_t trial) {
  if (trial >= kStreamTrials) return;
  t.first.push_back(result);
  t.first_drafts.insert(t.first_drafts.end(), drafts.begin(), drafts.end());
}

// A request alone: its trials in chunks through VerifyRepeated (trial i at offset + i (g + 1)).
std::string VerifyRequest1(Verifier& verifier, const SpecCaseWork& w, Tally& tally, const CaseSink& sink) {
  const Request& r = w.requests[0];
  const size_t g = static_cast<size_t>(r.spec.g);
  std::vector<int32_t> drafts;
  std::vector<VerifyResult> out;
  for (uint64_t begin = 0; begin < w.trials && !sink.Halted(); begin += kTrialChunk) {
    const uint64_t n = std::min(kTrialChunk, w.trials - begin);
    DrawDrafts(r, begin, n, drafts);
    VerifyRequest q = r.Base();
    q.params.offset = r.params.offset + begin * static_cast<uint64_t>(r.spec.g + 1);
    out.assign(n, VerifyResult{});
    if (Status st = verifier.VerifyRepeated(q, drafts, out); !st.ok()) return st.error().message;
    for (uint64_t i = 0; i < n; ++i) {
      const std::span<const int32_t> d = std::span<const int32_t>(drafts).subspan(i * g, g);
      tally.Add(out[i], d, r.spec.g, r.V());
      KeepFirst(tally, out[i], d, begin + i);
    }
  }
  return "";
}

// A batch: one Verify call per trial, every request's trial i, in an order shuffled by the case seed.
std::string VerifyBatch(Verifier& verifier, const SpecCaseWork& w, std::vector<Tally>& tallies, const CaseSink& sink) {
  const size_t R = w.requests.size();
  std::vector<size_t> order(R);
  std::vector<VerifyRequest> batch(R);
  std::vector<VerifyResult> out(R);
  std::vector<std::vector<int32_t>> drafts(R);
  for (uint64_t i = 0; i < w.trials && !sink.Halted(); ++i) {
    for (size_t k = 0; k < R; ++k) order[k] = k;
    uint64_t h = SplitMix64(w.case_seed ^ (i * 0x9E3779B97F4A7C15ULL));
    for (size_t k = R; k > 1; --k) {
      h = SplitMix64(h);
      std::swap(order[k - 1], order[h % k]);
    }
    for (size_t s = 0; s < R; ++s) {
      const Request& r = w.requests[order[s]];
      DrawDrafts(r, i, 1, drafts[order[s]]);
      batch[s] = r.Base();
      batch[s].draft_tokens = drafts[order[s]].data();
      batch[s].params.offset = r.params.offset + i * static_cast<uint64_t>(r.spec.g + 1);
    }
    if (Status st = verifier.Verify(batch, out); !st.ok()) return st.error().message;
    for (size_t s = 0; s < R; ++s) {
      const size_t k = order[s];
      tallies[k].Add(out[s], drafts[k], w.requests[k].spec.g, w.requests[k].V());
      KeepFirst(tallies[k], out[s], drafts[k], i);
    }
  }
  return "";
}

// Determinism (and batch invariance): a request's first trials verified alone, twice, against each other and
// against the campaign's results (in a batch: against the batch's).
std::string RecheckAlone(Verifier& verifier, const Request& r, const Tally& t, bool in_batch, SpecEvidence& ev) {
  const int32_t g = r.spec.g;
  ev.determinism_run = true;
  ev.batch_run = in_batch;
  std::vector<VerifyResult> alone[2];
  const size_t n = std::min<size_t>(t.first.size(), kDeterminismTrials);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      VerifyRequest q = r.Base();
      q.draft_tokens = t.first_drafts.data() + i * static_cast<size_t>(g);
      q.params.offset = r.params.offset + i * static_cast<uint64_t>(g + 1);
      VerifyResult res;
      if (Status st = verifier.Verify({&q, 1}, {&res, 1}); !st.ok()) return st.error().message;
      alone[pass].push_back(res);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ++ev.determinism_compared;
    if (!SameResult(alone[0][i], alone[1][i]) || (!in_batch && !SameResult(alone[0][i], t.first[i]))) {
      if (ev.determinism_differences++ == 0) {
        ev.determinism_finding = "trial " + std::to_string(i) + " at (seed " + std::to_string(r.params.seed) +
                                 ", offset " + std::to_string(r.params.offset + i * static_cast<uint64_t>(g + 1)) +
                                 "): alone " + Show(alone[0][i]) + "; again " + Show(alone[1][i]) +
                                 (in_batch ? "" : "; in the campaign " + Show(t.first[i]));
      }
    }
    if (in_batch) {
      ++ev.batch_compared;
      if (!SameResult(alone[0][i], t.first[i]) && ev.batch_differences++ == 0) {
        ev.batch_finding = "trial " + std::to_string(i) + ": alone " + Show(alone[0][i]) + "; in the batch " +
                           Show(t.first[i]);
      }
    }
  }
  return "";
}

struct Probe {
  int32_t x;
  double coin;
  bool expect_accept;
  std::string what;
};

// An accepted-for-sure token at position i with coin 0: positive p, positive q (one-hot: any positive p).
int32_t Sure(const Request& r, int32_t i) {
  const PositionLaw& law = r.laws[static_cast<size_t>(i)];
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  int32_t best = -1;
  long double best_p = 0;
  for (int32_t t : one_hot ? law.p.tokens : law.q.tokens) {
    const long double pt = law.p.Prob(t);
    if (pt > best_p) {
      best_p = pt;
      best = t;
    }
  }
  return best;
}

// The probes of position j: a draft of target probability 0 at u = 0, u just below and above p/q at an edge token;
// a greedy position accepts exactly its argmax. No probe on a token fp32 arithmetic could flip.
std::vector<Probe> ProbesAt(const Request& r, int32_t j) {
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  const PositionLaw& law = r.laws[static_cast<size_t>(j)];
  const ProcessedDistribution& pj = r.p[static_cast<size_t>(j)];
  auto qof = [&](int32_t x) -> long double { return one_hot ? 1.0L : law.q.Prob(x); };
  const std::vector<int32_t> none;
  const std::vector<int32_t>& cands = one_hot ? none : law.q.tokens;
  int32_t zero = -1, edge = -1;
  if (one_hot) {
    for (int32_t t = 0; t < r.V() && zero < 0; ++t) {
      if (!(law.p.Prob(t) > 0) && !pj.IsAmbiguous(t)) zero = t;
    }
    for (int32_t t : law.p.tokens) {
      if (law.p.Prob(t) < 1.0L / (1 + 2 * kEdgeMargin) && !pj.IsAmbiguous(t)) {
        edge = t;
        break;
      }
    }
  } else {
    for (int32_t t : cands) {
      if (pj.IsAmbiguous(t)) continue;
      const long double pt = law.p.Prob(t), qt = law.q.Prob(t);
      if (!(pt > 0) && zero < 0) zero = t;
      if (pt > 0 && pt < qt / (1 + 2 * kEdgeMargin) && edge < 0) edge = t;
    }
  }
  std::vector<Probe> probes;
  if (law.greedy) {
    const int32_t argmax = law.p.tokens.front();
    const int32_t other = zero >= 0 ? zero : (cands.empty() ? -1 : cands.front());
    if (other >= 0 && other != argmax && qof(other) > 0) probes.push_back({other, 0.0, false, "greedy, non-argmax draft"});
    if (one_hot || law.q.Prob(argmax) > 0) probes.push_back({argmax, 0.9999, true, "greedy, argmax draft"});
    return probes;
  }
  if (zero >= 0) probes.push_back({zero, 0.0, false, "u = 0 on a draft of target probability 0"});
  if (edge >= 0) {
    const double ratio = static_cast<double>(law.p.Prob(edge) / qof(edge));
    probes.push_back({edge, ratio * (1 - kEdgeMargin), true, "u just below p/q"});
    probes.push_back({edge, ratio * (1 + kEdgeMargin), false, "u just above p/q"});
  }
  return probes;
}

// One probe at position j behind the accepted-for-sure `prefix`: "" when the verifier did as the laws say.
std::string RunProbe(Verifier& verifier, const Request& r, int32_t j, const std::vector<int32_t>& prefix,
                     const Probe& probe) {
  const int32_t g = r.spec.g;
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  const PositionLaw& law = r.laws[static_cast<size_t>(j)];
  std::vector<int32_t> drafts = prefix;
  drafts.push_back(probe.x);
  for (int32_t i = j + 1; i < g; ++i) {
    const int32_t s = Sure(r, i);
    drafts.push_back(s >= 0 ? s : (one_hot ? 0 : r.laws[static_cast<size_t>(i)].q.tokens.front()));
  }
  std::vector<double> uniforms(2 * static_cast<size_t>(g + 1), 0.5);
  for (int32_t i = 0; i < j; ++i) uniforms[2 * static_cast<size_t>(i)] = 0.0;
  uniforms[2 * static_cast<size_t>(j)] = probe.coin;
  VerifyRequest q = r.Base();
  q.draft_tokens = drafts.data();
  q.uniforms = uniforms;
  q.params.offset = 0;
  VerifyResult res;
  if (Status st = verifier.Verify({&q, 1}, {&res, 1}); !st.ok()) return "verifier error: " + st.error().message;
  if (probe.expect_accept ? res.accepted < j + 1 : res.accepted != j) {
    return std::string(probe.expect_accept ? "rejected" : "accepted") + " (accepted length " +
           std::to_string(res.accepted) + ")";
  }
  if (probe.expect_accept) return "";
  const int32_t t = res.emitted[static_cast<size_t>(j)];
  const bool in_support = law.greedy ? t == law.p.tokens.front()
                                     : (one_hot ? (law.p.Prob(t) > 0 && t != probe.x) : law.residual.Prob(t) > 0);
  return in_support ? "" : "emitted token " + std::to_string(t) + " outside the residual's support";
}

// The scripted-coin probes of one request (checks_speculative.cpp, spec-scripted).
void RunScripted(Verifier& verifier, const Request& r, SpecEvidence& ev) {
  ev.scripted_run = true;
  for (int32_t j = 0; j < r.spec.g; ++j) {
    // positions before j: accepted for sure (coin 0; greedy positions: their argmax)
    std::vector<int32_t> prefix;
    bool ok = true;
    for (int32_t i = 0; i < j && ok; ++i) {
      const int32_t t = Sure(r, i);
      const PositionLaw& law = r.laws[static_cast<size_t>(i)];
      if (t < 0 || (law.greedy && t != law.p.tokens.front())) ok = false;
      prefix.push_back(t);
    }
    if (!ok) continue;
    for (const Probe& probe : ProbesAt(r, j)) {
      ++ev.scripted_probes;
      const std::string fail = RunProbe(verifier, r, j, prefix, probe);
      if (!fail.empty() && ev.scripted_failures++ == 0) {
        ev.scripted_finding = "position " + std::to_string(j + 1) + ", " + probe.what + " (draft token " +
                              std::to_string(probe.x) + ", coin " + FormatValue(probe.coin) + "): " + fail;
      }
    }
  }
  if (ev.scripted_failures > 1) {
    ev.scripted_finding += " (" + std::to_string(ev.scripted_failures) + " of " + std::to_string(ev.scripted_probes) +
                           " probes failed)";
  }
}

// P(accepted length l | the trial's drafts) for l = 0..g: position j accepts its draft x with probability
// min(1, p_j(x) / q_j(x)) (one-hot: p_j(x); greedy: x is the argmax).
std::vector<double> LengthGivenDrafts(const Request& r, std::span<const int32_t> drafts) {
  const auto g = static_cast<size_t>(r.spec.g);
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  std::vector<double> law(g + 1, 0.0);
  long double reach = 1.0L;
  for (size_t j = 0; j < g; ++j) {
    const PositionLaw& pl = r.laws[j];
    const int32_t x = drafts[j];
    long double accept = 0.0L;
    if (pl.greedy) {
      accept = !pl.p.tokens.empty() && x == pl.p.tokens.front() ? 1.0L : 0.0L;
    } else {
      const long double q = one_hot ? 1.0L : pl.q.Prob(x);
      accept = q > 0 ? std::min(1.0L, pl.p.Prob(x) / q) : 0.0L;
    }
    law[j] = static_cast<double>(reach * (1.0L - accept));
    reach *= accept;
  }
  law[g] = static_cast<double>(reach);
  return law;
}

long double SquaredSum(const std::vector<long double>& p) {
  long double s = 0;
  for (long double x : p) s += x * x;
  return s;
}

// P(two independent verifications of the same drafts give the same result): the same accepted length l and the same
// token after it, drawn from the residual of position l + 1 (one-hot: p without the draft token; greedy: its argmax)
// or, when every draft was accepted, from the bonus p_{g+1}.
double MatchProbability(const Request& r, std::span<const int32_t> drafts) {
  const std::vector<double> length = LengthGivenDrafts(r, drafts);
  const auto g = static_cast<size_t>(r.spec.g);
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  long double pi = static_cast<long double>(length[g]) * length[g] * SquaredSum(r.p[g].prob);
  for (size_t l = 0; l < g; ++l) {
    const PositionLaw& law = r.laws[l];
    long double same_token = 1.0L;  // greedy: the argmax
    if (!law.greedy && one_hot) {
      const long double px = law.p.Prob(drafts[l]);
      same_token = px < 1 ? (SquaredSum(law.p.prob) - px * px) / ((1 - px) * (1 - px)) : 1.0L;
    } else if (!law.greedy) {
      same_token = SquaredSum(law.residual.prob);
    }
    pi += static_cast<long double>(length[l]) * length[l] * same_token;
  }
  return std::clamp(static_cast<double>(pi), 0.0, 1.0);
}

int32_t Code(const VerifyResult& v) {
  const int32_t a = std::clamp(v.accepted, 0, kMaxSpecDraft);
  return SpecResultCode(v.accepted, v.emitted[static_cast<size_t>(a)]);
}

// The first trials of a request again through VerifyRepeated at `seed` (the same drafts and offsets).
std::string Again(Verifier& verifier, const Request& r, const Tally& t, uint64_t seed, size_t n,
                  std::vector<VerifyResult>& out) {
  VerifyRequest q = r.Base();
  q.params.seed = seed;
  out.assign(n, VerifyResult{});
  const std::span<const int32_t> drafts(t.first_drafts.data(), n * static_cast<size_t>(r.spec.g));
  if (Status st = verifier.VerifyRepeated(q, drafts, out); !st.ok()) return st.error().message;
  return "";
}

// A request's stream draws (stream.h): its first trials under a second seed (results matched against the laws given
// each trial's drafts), on a fresh verifier (one call, then one call per trial), its lengths in order.
StreamDraws MeasureSpecStream(Verifier& verifier, FreshVerifier& fresh, const Request& r, const Tally& t,
                              bool deterministic) {
  StreamDraws d;
  StreamEvidence& e = d.evidence;
  e.unit = "trial";
  d.steps = t.lengths;
  long double c = 0;
  for (long double l : r.length_law) c += l * l;
  e.repeat_probability = static_cast<double>(c);
  const size_t n = t.first.size();
  e.seed_a = r.params.seed;
  e.seed_b = SplitMix64(r.params.seed ^ kSeedSalt);
  std::vector<VerifyResult> a, b;
  std::string err = Again(verifier, r, t, e.seed_a, n, a);
  if (err.empty()) err = Again(verifier, r, t, e.seed_b, n, b);
  if (!err.empty()) {
    d.sampler_error = err;
    d.Bind();
    return d;
  }
  const auto g = static_cast<size_t>(r.spec.g);
  for (size_t i = 0; i < n; ++i) {
    d.under_a.push_back(Code(a[i]));
    d.under_b.push_back(Code(b[i]));
    d.match.push_back(MatchProbability(r, std::span<const int32_t>(t.first_drafts).subspan(i * g, g)));
  }
  e.seed_run = n > 0;
  if (!deterministic) {
    e.handles_untested = "the verifier does not claim a deterministic stream";
  } else if (Verifier* f = fresh.Get(); f == nullptr) {
    e.handles_untested = fresh.why();
  } else {
    std::vector<VerifyResult> again;
    err = Again(*f, r, t, e.seed_a, n, again);
    for (size_t i = 0; err.empty() && i < std::min<size_t>(n, kFreshCalls); ++i) {
      VerifyRequest q = r.Base();
      q.draft_tokens = t.first_drafts.data() + i * g;
      q.params.offset = r.params.offset + i * (g + 1);
      VerifyResult one;
      if (Status st = f->Verify({&q, 1}, {&one, 1}); !st.ok()) err = st.error().message;
      d.fresh_calls.push_back(Code(one));
    }
    if (!err.empty()) {
      d.sampler_error = "a fresh verifier: " + err;
      d.Bind();
      return d;
    }
    for (const VerifyResult& v : again) d.fresh_batch.push_back(Code(v));
    e.handles_run = true;
  }
  d.Bind();
  return d;
}

}  // namespace

void Tally::Init(int32_t g, int64_t V) {
  pos.assign(static_cast<size_t>(g) + 1, std::vector<uint64_t>(static_cast<size_t>(V), 0));
  residual.assign(static_cast<size_t>(g), std::vector<uint64_t>(static_cast<size_t>(V), 0));
  reached.assign(static_cast<size_t>(g) + 1, 0);
  rejected.assign(static_cast<size_t>(g) + 1, 0);
  invalid.assign(static_cast<size_t>(g) + 1, 0);
  length.assign(static_cast<size_t>(g) + 1, 0);
}

void Tally::Add(const VerifyResult& r, std::span<const int32_t> drafts, int32_t g, int64_t V) {
  lengths.push_back(r.accepted);
  if (r.accepted < 0 || r.accepted > g) {
    if (structure++ == 0) {
      structure_finding = "accepted length " + std::to_string(r.accepted) + " outside 0.." + std::to_string(g);
    }
    return;
  }
  ++length[static_cast<size_t>(r.accepted)];
  for (int32_t j = 0; j <= r.accepted; ++j) {
    const int32_t t = r.emitted[static_cast<size_t>(j)];
    ++reached[static_cast<size_t>(j)];
    if (j < r.accepted && t != drafts[static_cast<size_t>(j)] && structure++ == 0) {
      structure_finding = "position " + std::to_string(j + 1) + " accepted token " + std::to_string(t) +
                          ", not the draft token " + std::to_string(drafts[static_cast<size_t>(j)]);
    }
    if (t < 0 || t >= V) {
      ++invalid[static_cast<size_t>(j)];
      continue;
    }
    ++pos[static_cast<size_t>(j)][static_cast<size_t>(t)];
    if (j == r.accepted && j < g) {
      ++rejected[static_cast<size_t>(j)];
      ++residual[static_cast<size_t>(j)][static_cast<size_t>(t)];
    }
  }
}

SpecDrawn DrawSpecCase(Verifier& verifier, FreshVerifier& fresh, const SpecCaseWork& w,
                       const VerifierCapabilities& caps, const CaseSink& sink) {
  SpecDrawn d;
  const size_t R = w.requests.size();
  d.tallies.resize(R);
  d.length.resize(R);
  for (size_t k = 0; k < R; ++k) d.tallies[k].Init(w.requests[k].spec.g, w.requests[k].V());
  std::string error = R == 1 ? VerifyRequest1(verifier, w, d.tallies[0], sink) : VerifyBatch(verifier, w, d.tallies, sink);
  for (size_t k = 0; k < R; ++k) {
    SpecEvidence& ev = d.length[k];
    ev.role = SpecRole::kLength;
    ev.structure_violations = d.tallies[k].structure;
    ev.structure_finding = d.tallies[k].structure_finding;
    if (error.empty() && caps.deterministic && !d.tallies[k].first.empty()) {
      error = RecheckAlone(verifier, w.requests[k], d.tallies[k], R > 1, ev);
    }
    if (error.empty() && caps.scripted_uniforms && !caps.lossy) RunScripted(verifier, w.requests[k], ev);
    d.stream.emplace_back();
    if (error.empty()) {
      d.stream.back() = MeasureSpecStream(verifier, fresh, w.requests[k], d.tallies[k], caps.deterministic);
      d.stream.back().Bind();
      error = d.stream.back().sampler_error;
    }
    d.verifier_error.push_back(error);
  }
  return d;
}

}  // namespace samplecheck::harness
