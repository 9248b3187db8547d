// Speculative-decoding campaigns (spec_campaign.h).
#include "samplecheck/campaign/spec_campaign.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/checks.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/samplers/verifier.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/power.h"
#include "campaign_work.h"

namespace samplecheck::harness {
namespace {

struct BuiltinSpecSuiteText {
  const char* name;
  const char* json;
};
// harness/campaign/suites/spec-*.json as string literals; regenerate with harness/campaign/suites/embed.sh.
#include "../suites/spec_suites.inc"

constexpr uint64_t kDeterminismTrials = 64;     // trials re-verified alone (twice) per request
constexpr uint64_t kTrialChunk = uint64_t{1} << 16;
constexpr double kMinResidualDraws = 20.0;      // a residual case needs this many expected rejections
constexpr double kEdgeMargin = 1e-4;            // scripted coins at (p/q)(1 -+ margin): robust to fp32 p and q

Error ParseError(std::string message) { return {ErrorCode::kParse, std::move(message)}; }

// The binnings of sampler campaigns (campaign.cpp, CampaignBinningOptions): the same cells for the same p0 and N.
stats::BinningOptions SpecBinningOptions() {
  stats::BinningOptions o;
  o.max_head_cells = 1024;
  o.max_tail_cells = 256;
  o.hash_buckets = 64;
  return o;
}

Result<DraftForm> ParseForm(const std::string& s) {
  if (s == "probabilities") return DraftForm::kProbabilities;
  if (s == "logits") return DraftForm::kLogits;
  if (s == "one-hot") return DraftForm::kOneHot;
  return ParseError("draft form '" + s + "' is unknown; allowed: probabilities, logits, one-hot");
}

Result<SpecRequestSpec> ParseRequest(const nlohmann::json& e, const std::string& where) {
  SpecRequestSpec r;
  if (!e.is_object() || !e.contains("target")) return ParseError(where + ": needs \"target\" (a row spec)");
  auto row = ParseRowSpec(e["target"]);
  if (!row.ok()) return row.error().WithContext(where + " target");
  r.target = *row;
  auto params = ParseParams(e.contains("params") ? e["params"] : nlohmann::json::object());
  if (!params.ok()) return params.error().WithContext(where + " params");
  r.params = *params;
  if (e.contains("g")) {
    if (!e["g"].is_number_integer() || e["g"].get<int64_t>() < 1 || e["g"].get<int64_t>() > kMaxSpecDraft) {
      return ParseError(where + ": g = " + e["g"].dump() + "; allowed: an integer in 1.." + std::to_string(kMaxSpecDraft));
    }
    r.g = e["g"].get<int32_t>();
  }
  const nlohmann::json d = e.contains("draft") ? e["draft"] : nlohmann::json::object();
  if (!d.is_object()) return ParseError(where + ": \"draft\" must be an object");
  if (d.contains("form")) {
    auto form = ParseForm(d["form"].get<std::string>());
    if (!form.ok()) return form.error().WithContext(where);
    r.draft.form = *form;
  }
  if (d.contains("relation")) {
    r.draft.relation = d["relation"].get<std::string>();
    if (r.draft.relation != "close" && r.draft.relation != "far" && r.draft.relation != "same") {
      return ParseError(where + ": draft relation '" + r.draft.relation + "' is unknown; allowed: close, far, same");
    }
  }
  if (d.contains("noise")) {
    if (!d["noise"].is_number() || !(d["noise"].get<double>() > 0) || !(d["noise"].get<double>() <= 100)) {
      return ParseError(where + ": draft noise = " + d["noise"].dump() + "; allowed: (0, 100]");
    }
    r.draft.noise = d["noise"].get<double>();
  }
  if (d.contains("row")) {
    auto draft_row = ParseRowSpec(d["row"]);
    if (!draft_row.ok()) return draft_row.error().WithContext(where + " draft row");
    r.draft.row = *draft_row;
  } else {
    r.draft.row = r.target;
  }
  r.draft.row.vocab = r.target.vocab;
  auto dparams = ParseParams(d.contains("params") ? d["params"] : nlohmann::json::object());
  if (!dparams.ok()) return dparams.error().WithContext(where + " draft params");
  r.draft.params = *dparams;
  return r;
}

Result<SpecSuite> ParseText(const std::string& text, std::string source) {
  Result<nlohmann::json> j = ParseJsonStrict(text, source);  // depth-limited, duplicate keys refused
  if (!j.ok()) return j.error();
  return ParseSpecSuite(*j, std::move(source));
}

// The dense probabilities of a sparse distribution, as fp32 (what a draft stores).
std::vector<float> DenseFloat(const SparseDistribution& d, int64_t vocab) {
  std::vector<float> out(static_cast<size_t>(vocab), 0.0f);
  for (size_t i = 0; i < d.tokens.size(); ++i) out[static_cast<size_t>(d.tokens[i])] = static_cast<float>(d.prob[i]);
  return out;
}

// One request of a case, ready to verify.
struct Request {
  SpecRequestSpec spec;
  std::string name;                       // "<case>" or "<case>/e<k>"
  uint64_t row_seed = 0;
  std::vector<float> target;              // (g + 1) x V
  std::vector<float> draft;               // g x V: probabilities or logits (empty for one-hot)
  std::vector<SparseDistribution> proposal;  // g: what the campaign draws the draft tokens from
  std::vector<InverseCdf> proposal_cdf;
  std::vector<ProcessedDistribution> p;   // g + 1
  std::vector<PositionLaw> laws;          // g
  std::vector<long double> reach, length_law;
  SamplingParams params;                  // with the seed and offset of trial 0
  uint64_t draft_seed = 0;
  bool greedy_any = false;

  VerifyRequest Base() const {
    VerifyRequest q;
    q.target = target.data();
    q.vocab = spec.target.vocab;
    q.g = spec.g;
    q.draft_form = spec.draft.form;
    q.draft = draft.empty() ? nullptr : draft.data();
    q.params = params;
    q.draft_params = spec.draft.params;
    return q;
  }
  int64_t V() const { return spec.target.vocab; }
};

Result<Request> BuildRequest(const SpecRequestSpec& spec, const Profile& profile, uint64_t seed, std::string name) {
  Request r;
  r.spec = spec;
  r.name = std::move(name);
  r.row_seed = seed;
  const int32_t g = spec.g;
  const int64_t V = spec.target.vocab;
  if (auto bad = ValidateParams(spec.params, profile)) return bad->ToError().WithContext(r.name);
  if (auto bad = ValidateParams(spec.draft.params, profile)) return bad->ToError().WithContext(r.name + " draft");
  r.target.reserve(static_cast<size_t>((g + 1) * V));
  for (int32_t j = 0; j <= g; ++j) {
    auto row = MakeRow(spec.target, SplitMix64(seed + 0x100 * static_cast<uint64_t>(j)));
    if (!row.ok()) return row.error().WithContext(r.name + " target row " + std::to_string(j));
    r.target.insert(r.target.end(), row->begin(), row->end());
    auto p = ComputeDistribution(LogitsView::Fp32(*row), spec.params, profile);
    if (!p.ok()) return p.error().WithContext(r.name + " target row " + std::to_string(j));
    r.greedy_any = r.greedy_any || p->greedy;
    r.p.push_back(std::move(*p));
  }
  std::vector<float> draft_logits(static_cast<size_t>(V));
  for (int32_t j = 0; j < g; ++j) {
    const float* t = r.target.data() + static_cast<size_t>(j) * static_cast<size_t>(V);
    if (spec.draft.relation == "same") {
      std::copy(t, t + V, draft_logits.begin());
    } else if (spec.draft.relation == "close") {
      RowSpec noise;
      noise.kind = "gaussian";
      noise.vocab = V;
      noise.sigma = spec.draft.noise;
      auto n = MakeRow(noise, SplitMix64(seed ^ (0xD4AF7ULL + static_cast<uint64_t>(j))));
      if (!n.ok()) return n.error().WithContext(r.name + " draft noise");
      for (int64_t i = 0; i < V; ++i) draft_logits[static_cast<size_t>(i)] = t[i] + (std::isfinite(t[i]) ? (*n)[i] : 0.0f);
    } else {
      auto far = MakeRow(spec.draft.row, SplitMix64(seed ^ (0xFA12ULL + static_cast<uint64_t>(j))));
      if (!far.ok()) return far.error().WithContext(r.name + " draft row");
      draft_logits = std::move(*far);
    }
    auto q = ComputeDistribution(LogitsView::Fp32(draft_logits), spec.draft.params, profile);
    if (!q.ok()) return q.error().WithContext(r.name + " draft row " + std::to_string(j));
    SparseDistribution qd = FromProcessed(*q);
    switch (spec.draft.form) {
      case DraftForm::kProbabilities: {
        std::vector<float> stored = DenseFloat(qd, V);
        auto normalized = DraftFromProbabilities(stored);  // what the verifier reads: the fp32 values, normalized
        if (!normalized.ok()) return normalized.error().WithContext(r.name + " draft row " + std::to_string(j));
        qd = std::move(*normalized);
        r.draft.insert(r.draft.end(), stored.begin(), stored.end());
        break;
      }
      case DraftForm::kLogits:
        r.draft.insert(r.draft.end(), draft_logits.begin(), draft_logits.end());
        break;
      case DraftForm::kOneHot:
        break;
    }
    r.laws.push_back(spec.draft.form == DraftForm::kOneHot ? MakeOneHotPositionLaw(r.p[static_cast<size_t>(j)], qd)
                                                           : MakePositionLaw(r.p[static_cast<size_t>(j)], qd));
    r.proposal_cdf.emplace_back(qd.tokens, qd.prob);
    r.proposal.push_back(std::move(qd));
  }
  long double reach = 1;
  for (int32_t j = 0; j <= g; ++j) {
    r.reach.push_back(reach);
    if (j < g) {
      r.length_law.push_back(reach * r.laws[static_cast<size_t>(j)].residual_mass);
      reach *= r.laws[static_cast<size_t>(j)].beta;
    } else {
      r.length_law.push_back(reach);
    }
  }
  r.draft_seed = SplitMix64(seed ^ 0xD7AF75EEDULL);
  return r;
}

// Tallies of one request's trials.
struct Tally {
  std::vector<std::vector<uint64_t>> pos;       // g + 1 histograms
  std::vector<std::vector<uint64_t>> residual;  // g histograms
  std::vector<uint64_t> reached, rejected, invalid;
  std::vector<uint64_t> length;                 // g + 1
  uint64_t structure = 0;
  std::string structure_finding;
  std::vector<VerifyResult> first;              // the first kDeterminismTrials results
  std::vector<int32_t> first_drafts;

  void Init(int32_t g, int64_t V) {
    pos.assign(static_cast<size_t>(g) + 1, std::vector<uint64_t>(static_cast<size_t>(V), 0));
    residual.assign(static_cast<size_t>(g), std::vector<uint64_t>(static_cast<size_t>(V), 0));
    reached.assign(static_cast<size_t>(g) + 1, 0);
    rejected.assign(static_cast<size_t>(g) + 1, 0);
    invalid.assign(static_cast<size_t>(g) + 1, 0);
    length.assign(static_cast<size_t>(g) + 1, 0);
  }

  void Add(const VerifyResult& r, std::span<const int32_t> drafts, int32_t g, int64_t V) {
    if (r.accepted < 0 || r.accepted > g) {
      if (structure++ == 0) structure_finding = "accepted length " + std::to_string(r.accepted) + " outside 0.." + std::to_string(g);
      return;
    }
    ++length[static_cast<size_t>(r.accepted)];
    for (int32_t j = 0; j <= r.accepted; ++j) {
      const int32_t t = r.emitted[static_cast<size_t>(j)];
      ++reached[static_cast<size_t>(j)];
      if (j < r.accepted && t != drafts[static_cast<size_t>(j)]) {
        if (structure++ == 0) {
          structure_finding = "position " + std::to_string(j + 1) + " accepted token " + std::to_string(t) +
                              ", not the draft token " + std::to_string(drafts[static_cast<size_t>(j)]);
        }
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
    if (r.accepted < g) {
      // reached counts positions 1..accepted+1; the rejection test needs reached[j] for j <= accepted only
    }
  }
};

bool SameResult(const VerifyResult& a, const VerifyResult& b) {
  if (a.accepted != b.accepted) return false;
  if (a.accepted < 0 || a.accepted > kMaxSpecDraft) return true;
  return std::equal(a.emitted.begin(), a.emitted.begin() + a.accepted + 1, b.emitted.begin());
}

std::string Show(const VerifyResult& r) {
  std::string s = "accepted " + std::to_string(r.accepted) + ", tokens";
  for (int32_t j = 0; j <= std::clamp(r.accepted, 0, kMaxSpecDraft); ++j) s += " " + std::to_string(r.emitted[static_cast<size_t>(j)]);
  return s;
}

void DrawDrafts(const Request& r, uint64_t first_trial, uint64_t n, std::vector<int32_t>& out) {
  const size_t g = static_cast<size_t>(r.spec.g);
  out.resize(n * g);
  for (uint64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < g; ++j) {
      out[i * g + j] = r.proposal_cdf[j].Draw(UniformForDraw(r.draft_seed, (first_trial + i) * g + j));
    }
  }
}

// The scripted-coin probes of one request (spec_checks.cpp, spec-scripted). Returns probes and failures.
struct ScriptedOutcome {
  uint64_t probes = 0, failures = 0;
  std::string finding;
};

ScriptedOutcome RunScripted(Verifier& verifier, const Request& r) {
  ScriptedOutcome out;
  const int32_t g = r.spec.g;
  const bool one_hot = r.spec.draft.form == DraftForm::kOneHot;
  // An accepted-for-sure token at position i with coin 0: positive p, positive q (one-hot: any positive p).
  auto sure = [&](int32_t i) -> int32_t {
    const PositionLaw& law = r.laws[static_cast<size_t>(i)];
    int32_t best = -1;
    long double best_p = 0;
    const auto& cands = one_hot ? law.p.tokens : law.q.tokens;
    for (int32_t t : cands) {
      const long double pt = law.p.Prob(t);
      if (pt > best_p) {
        best_p = pt;
        best = t;
      }
    }
    return best;
  };
  auto qof = [&](int32_t j, int32_t x) -> long double {
    return one_hot ? 1.0L : r.laws[static_cast<size_t>(j)].q.Prob(x);
  };
  for (int32_t j = 0; j < g; ++j) {
    // positions before j: accepted for sure (coin 0; greedy positions: their argmax)
    std::vector<int32_t> prefix;
    bool ok = true;
    for (int32_t i = 0; i < j && ok; ++i) {
      const int32_t t = sure(i);
      if (t < 0 || (r.laws[static_cast<size_t>(i)].greedy && t != r.laws[static_cast<size_t>(i)].p.tokens.front())) ok = false;
      prefix.push_back(t);
    }
    if (!ok) continue;
    const PositionLaw& law = r.laws[static_cast<size_t>(j)];
    struct Probe {
      int32_t x;
      double coin;
      bool expect_accept;
      std::string what;
    };
    std::vector<Probe> probes;
    const auto& cands = one_hot ? std::vector<int32_t>{} : law.q.tokens;
    int32_t zero = -1, edge = -1;
    const ProcessedDistribution& pj = r.p[static_cast<size_t>(j)];
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
        if (pj.IsAmbiguous(t)) continue;  // a decision fp32 arithmetic could flip is no probe
        const long double pt = law.p.Prob(t), qt = law.q.Prob(t);
        if (!(pt > 0) && zero < 0) zero = t;
        if (pt > 0 && pt < qt / (1 + 2 * kEdgeMargin) && edge < 0) edge = t;
      }
    }
    if (law.greedy) {
      const int32_t argmax = law.p.tokens.front();
      const int32_t other = zero >= 0 ? zero : (cands.empty() ? -1 : cands.front());
      if (other >= 0 && other != argmax && qof(j, other) > 0) probes.push_back({other, 0.0, false, "greedy, non-argmax draft"});
      if (one_hot || law.q.Prob(argmax) > 0) probes.push_back({argmax, 0.9999, true, "greedy, argmax draft"});
    } else {
      if (zero >= 0) probes.push_back({zero, 0.0, false, "u = 0 on a draft of target probability 0"});
      if (edge >= 0) {
        const double ratio = static_cast<double>(law.p.Prob(edge) / qof(j, edge));
        probes.push_back({edge, ratio * (1 - kEdgeMargin), true, "u just below p/q"});
        probes.push_back({edge, ratio * (1 + kEdgeMargin), false, "u just above p/q"});
      }
    }
    for (const Probe& probe : probes) {
      std::vector<int32_t> drafts = prefix;
      drafts.push_back(probe.x);
      for (int32_t i = j + 1; i < g; ++i) {
        const int32_t s = sure(i);
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
      ++out.probes;
      std::string fail;
      if (Status st = verifier.Verify({&q, 1}, {&res, 1}); !st.ok()) {
        fail = "verifier error: " + st.error().message;
      } else if (probe.expect_accept ? res.accepted < j + 1 : res.accepted != j) {
        fail = std::string(probe.expect_accept ? "rejected" : "accepted") + " (accepted length " +
               std::to_string(res.accepted) + ")";
      } else if (!probe.expect_accept) {
        const int32_t t = res.emitted[static_cast<size_t>(j)];
        const bool in_support = law.greedy ? t == law.p.tokens.front()
                                           : (one_hot ? (law.p.Prob(t) > 0 && t != probe.x) : law.residual.Prob(t) > 0);
        if (!in_support) fail = "emitted token " + std::to_string(t) + " outside the residual's support";
      }
      if (!fail.empty() && out.failures++ == 0) {
        out.finding = "position " + std::to_string(j + 1) + ", " + probe.what + " (draft token " +
                      std::to_string(probe.x) + ", coin " + FormatValue(probe.coin) + "): " + fail;
      }
    }
  }
  if (out.failures > 1) out.finding += " (" + std::to_string(out.failures) + " of " + std::to_string(out.probes) + " probes failed)";
  return out;
}

struct CaseWork {
  const SpecCaseSpec* spec = nullptr;
  uint64_t case_seed = 0;
  std::vector<Request> requests;
  uint64_t trials = 0;
};

}  // namespace

Result<SpecSuite> ParseSpecSuite(const nlohmann::json& j, std::string source) {
  SpecSuite s;
  s.source = std::move(source);
  try {
    if (!j.is_object() || j.value("schema", "") != kSpecSuiteSchema) {
      return ParseError(s.source + ": \"schema\" must be \"" + std::string(kSpecSuiteSchema) + "\"");
    }
    s.name = j.at("name").get<std::string>();
    s.description = j.value("description", "");
    s.seed = j.value("seed", uint64_t{1});
    s.alpha = j.value("alpha", 1e-4);
    s.tv = j.value("tv", 0.02);
    s.power = j.value("power", 0.99);
    s.max_trials = j.value("max_trials", s.max_trials);
    s.min_trials = j.value("min_trials", s.min_trials);
    s.batch_max_trials = j.value("batch_max_trials", s.batch_max_trials);
    s.profile = j.value("profile", "");
    if (!(s.alpha > 0 && s.alpha < 1)) return ParseError(s.source + ": alpha = " + FormatValue(s.alpha) + "; allowed: (0, 1)");
    if (!(s.tv > 0 && s.tv <= 0.5)) return ParseError(s.source + ": tv = " + FormatValue(s.tv) + "; allowed: (0, 0.5]");
    if (!(s.power > s.alpha && s.power < 1)) return ParseError(s.source + ": power = " + FormatValue(s.power) + "; allowed: (alpha, 1)");
    if (s.min_trials < 1 || s.max_trials < s.min_trials) {
      return ParseError(s.source + ": min_trials " + std::to_string(s.min_trials) + ", max_trials " +
                        std::to_string(s.max_trials) + "; allowed: 1 <= min_trials <= max_trials");
    }
    for (const nlohmann::json& c : j.at("cases")) {
      SpecCaseSpec cs;
      cs.name = c.at("name").get<std::string>();
      cs.max_trials = c.value("max_trials", uint64_t{0});
      cs.min_trials = c.value("min_trials", uint64_t{0});
      if (c.contains("batch")) {
        size_t k = 0;
        for (const nlohmann::json& e : c["batch"]) {
          auto r = ParseRequest(e, "case " + cs.name + " entry " + std::to_string(k++));
          if (!r.ok()) return r.error();
          const uint32_t copies = e.value("copies", 1u);
          for (uint32_t i = 0; i < copies; ++i) cs.requests.push_back(*r);
        }
        if (cs.requests.size() < 2) return ParseError("case " + cs.name + ": a batch needs two or more requests");
      } else {
        auto r = ParseRequest(c, "case " + cs.name);
        if (!r.ok()) return r.error();
        cs.requests.push_back(*r);
      }
      s.cases.push_back(std::move(cs));
    }
  } catch (const std::exception& e) {
    return ParseError(s.source + ": " + JsonErrorText(e));
  }
  return s;
}

bool IsBuiltinSpecSuite(std::string_view name) {
  for (const BuiltinSpecSuiteText& b : kBuiltinSpecSuites) {
    if (name == b.name) return true;
  }
  return false;
}

std::vector<BuiltinSuiteInfo> BuiltinSpecSuites() {
  std::vector<BuiltinSuiteInfo> out;
  for (const BuiltinSpecSuiteText& b : kBuiltinSpecSuites) {
    auto s = ParseText(b.json, std::string("builtin:") + b.name);
    out.push_back({b.name, s.ok() ? s->description : "BROKEN: " + s.error().message, s.ok() ? s->cases.size() : 0});
  }
  return out;
}

Result<SpecSuite> LoadSpecSuite(std::string_view name_or_path) {
  for (const BuiltinSpecSuiteText& b : kBuiltinSpecSuites) {
    if (name_or_path == b.name) return ParseText(b.json, std::string("builtin:") + b.name);
  }
  const std::filesystem::path path(name_or_path);
  std::ifstream in(path);
  if (!in) {
    std::string known;
    for (const BuiltinSpecSuiteText& b : kBuiltinSpecSuites) known += (known.empty() ? "" : ", ") + std::string(b.name);
    return InvalidArgument("unknown spec suite \"" + std::string(name_or_path) + "\" (built-in: " + known +
                           "; or a path to a spec suite file, docs/speculative.md)");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseText(buffer.str(), path.string());
}

Result<CampaignReport> RunSpecCampaign(const SpecSuite& suite, const SpecCampaignOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const std::string profile_name = !options.profile.empty() ? options.profile
                                   : !suite.profile.empty() ? suite.profile
                                                            : "vllm";
  const Profile* profile = FindProfile(profile_name);
  if (profile == nullptr) return InvalidArgument("unknown profile '" + profile_name + "'");
  auto probe = MakeVerifier(options.verifier_spec, profile_name);
  if (!probe.ok()) return probe.error();
  const VerifierCapabilities caps = (*probe)->GetCapabilities();

  CampaignReport report;
  StampReport(report, suite, options, profile_name);
  report.sampler = (*probe)->Name();
  report.sampler_spec = "verifier:" + options.verifier_spec;
  report.seed = options.seed.value_or(suite.seed);
  report.draw_seed = report.seed;
  report.evidence = options.evidence;

  // 1-2: every request and its laws.
  std::vector<CaseWork> work;
  size_t judged_cases = 0;
  for (const SpecCaseSpec& cs : suite.cases) {
    CaseWork w;
    w.spec = &cs;
    w.case_seed = CaseSeed(report.seed, cs.name);
    for (size_t k = 0; k < cs.requests.size(); ++k) {
      const std::string name = cs.requests.size() == 1 ? cs.name : cs.name + "/e" + std::to_string(k);
      // A target whose reference has ambiguous tokens (a decision fp32 arithmetic could flip) would judge a correct
      // fp32 engine on a coin toss: its rows are drawn again from the next row seed, up to 8 times.
      const uint64_t row_seed = SplitMix64(w.case_seed + k);
      auto r = BuildRequest(cs.requests[k], *profile, row_seed, name);
      auto ambiguous = [](const Request& q) {
        return std::any_of(q.p.begin(), q.p.end(), [](const ProcessedDistribution& p) { return !p.ambiguous.empty(); });
      };
      for (uint64_t attempt = 1; r.ok() && ambiguous(*r) && attempt < 8; ++attempt) {
        r = BuildRequest(cs.requests[k], *profile, SplitMix64(row_seed + attempt * 0x9E3779B97F4A7C15ULL), name);
      }
      if (!r.ok()) return r.error().WithContext("case " + cs.name);
      r->params = cs.requests[k].params;
      r->params.seed = SplitMix64(w.case_seed ^ (0xC0FFEEULL + k));
      r->params.offset = (w.case_seed >> 20) & 0xFFFFFFFFULL;
      judged_cases += static_cast<size_t>(2 * r->spec.g + 2);  // positions, residuals (at most), length
      w.requests.push_back(std::move(*r));
    }
    work.push_back(std::move(w));
  }
  const double alpha_test = suite.alpha / (double(std::max<size_t>(judged_cases, 1)) * kPlannedTestsPerCase);
  const stats::BinningOptions bopts = SpecBinningOptions();

  // 3: the trials of every case.
  for (CaseWork& w : work) {
    const bool batch = w.requests.size() > 1;
    const uint64_t cap = std::min<uint64_t>(options.max_trials.value_or(UINT64_MAX),
                                            w.spec->max_trials ? w.spec->max_trials
                                                               : (batch ? suite.batch_max_trials : suite.max_trials));
    double needed = double(std::min(std::max(suite.min_trials, w.spec->min_trials), cap));
    for (const Request& r : w.requests) {
      for (int32_t j = 0; j <= r.spec.g; ++j) {
        const auto& p = r.p[static_cast<size_t>(j)];
        if (p.kept.size() < 2) continue;
        auto at_cap = stats::PlanBinnings(p.Dense(), double(cap), bopts);
        if (!at_cap.ok()) return InternalError("binning: " + at_cap.error().message);
        auto plan = stats::PlanDrawsForTotalVariation(report.tv, alpha_test / 2, suite.power,
                                                      std::max<uint64_t>(at_cap->head.cells.size(), 2));
        if (!plan.ok()) return plan.error();
        const double reach = double(r.reach[static_cast<size_t>(j)]);
        if (reach > 0) needed = std::max(needed, plan->draws / reach);
      }
    }
    w.trials = static_cast<uint64_t>(std::clamp(std::ceil(needed), 1.0, double(cap)));
  }

  // 4: verify and judge, cases in parallel for verifiers that allow it.
  std::vector<std::vector<CaseResult>> results(work.size());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::optional<Error> first_error;
  auto worker = [&]() {
    auto made = MakeVerifier(options.verifier_spec, profile_name);
    if (!made.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = made.error();
      return;
    }
    Verifier& verifier = **made;
    for (size_t c = next++; c < work.size(); c = next++) {
      CaseWork& w = work[c];
      const auto case_start = std::chrono::steady_clock::now();
      const size_t R = w.requests.size();
      std::vector<Tally> tallies(R);
      std::string verifier_error;
      for (size_t k = 0; k < R; ++k) tallies[k].Init(w.requests[k].spec.g, w.requests[k].V());
      std::vector<std::vector<int32_t>> drafts(R);
      if (R == 1) {
        const Request& r = w.requests[0];
        std::vector<VerifyResult> out;
        for (uint64_t begin = 0; begin < w.trials && verifier_error.empty(); begin += kTrialChunk) {
          const uint64_t n = std::min(kTrialChunk, w.trials - begin);
          DrawDrafts(r, begin, n, drafts[0]);
          VerifyRequest q = r.Base();
          q.params.offset = r.params.offset + begin * static_cast<uint64_t>(r.spec.g + 1);
          out.assign(n, VerifyResult{});
          if (Status st = verifier.VerifyRepeated(q, drafts[0], out); !st.ok()) {
            verifier_error = st.error().message;
            break;
          }
          const size_t g = static_cast<size_t>(r.spec.g);
          for (uint64_t i = 0; i < n; ++i) {
            tallies[0].Add(out[i], std::span<const int32_t>(drafts[0]).subspan(i * g, g), r.spec.g, r.V());
            if (begin + i < kDeterminismTrials) {
              tallies[0].first.push_back(out[i]);
              tallies[0].first_drafts.insert(tallies[0].first_drafts.end(), drafts[0].begin() + i * g,
                                             drafts[0].begin() + (i + 1) * g);
            }
          }
        }
      } else {
        // One Verify call per trial: every request's trial i, in an order shuffled by the case seed.
        std::vector<size_t> order(R);
        std::vector<VerifyRequest> batch(R);
        std::vector<VerifyResult> out(R);
        std::vector<std::vector<int32_t>> trial_drafts(R);
        for (uint64_t i = 0; i < w.trials && verifier_error.empty(); ++i) {
          for (size_t k = 0; k < R; ++k) order[k] = k;
          uint64_t h = SplitMix64(w.case_seed ^ (i * 0x9E3779B97F4A7C15ULL));
          for (size_t k = R; k > 1; --k) {
            h = SplitMix64(h);
            std::swap(order[k - 1], order[h % k]);
          }
          for (size_t s = 0; s < R; ++s) {
            const Request& r = w.requests[order[s]];
            DrawDrafts(r, i, 1, trial_drafts[order[s]]);
            batch[s] = r.Base();
            batch[s].draft_tokens = trial_drafts[order[s]].data();
            batch[s].params.offset = r.params.offset + i * static_cast<uint64_t>(r.spec.g + 1);
          }
          if (Status st = verifier.Verify(batch, out); !st.ok()) {
            verifier_error = st.error().message;
            break;
          }
          for (size_t s = 0; s < R; ++s) {
            const size_t k = order[s];
            const Request& r = w.requests[k];
            tallies[k].Add(out[s], trial_drafts[k], r.spec.g, r.V());
            if (i < kDeterminismTrials) {
              tallies[k].first.push_back(out[s]);
              tallies[k].first_drafts.insert(tallies[k].first_drafts.end(), trial_drafts[k].begin(), trial_drafts[k].end());
            }
          }
        }
      }

      std::vector<CaseResult> case_results;
      for (size_t k = 0; k < R; ++k) {
        const Request& r = w.requests[k];
        Tally& t = tallies[k];
        const int32_t g = r.spec.g;
        SpecEvidence length_ev;
        length_ev.role = "length";
        length_ev.structure_violations = t.structure;
        length_ev.structure_finding = t.structure_finding;
        // Determinism (and batch invariance): the first trials alone, twice.
        if (verifier_error.empty() && caps.deterministic && !t.first.empty()) {
          length_ev.determinism_run = true;
          if (R > 1) length_ev.batch_run = true;
          std::vector<VerifyResult> alone[2];
          for (int pass = 0; pass < 2; ++pass) {
            for (size_t i = 0; i < t.first.size(); ++i) {
              VerifyRequest q = r.Base();
              q.draft_tokens = t.first_drafts.data() + i * static_cast<size_t>(g);
              q.params.offset = r.params.offset + i * static_cast<uint64_t>(g + 1);
              VerifyResult res;
              if (Status st = verifier.Verify({&q, 1}, {&res, 1}); !st.ok()) {
                verifier_error = st.error().message;
                break;
              }
              alone[pass].push_back(res);
            }
          }
          if (verifier_error.empty()) {
            for (size_t i = 0; i < t.first.size(); ++i) {
              ++length_ev.determinism_compared;
              if (!SameResult(alone[0][i], alone[1][i]) || (R == 1 && !SameResult(alone[0][i], t.first[i]))) {
                if (length_ev.determinism_differences++ == 0) {
                  length_ev.determinism_finding =
                      "trial " + std::to_string(i) + " at (seed " + std::to_string(r.params.seed) + ", offset " +
                      std::to_string(r.params.offset + i * static_cast<uint64_t>(g + 1)) + "): alone " +
                      Show(alone[0][i]) + "; again " + Show(alone[1][i]) + (R == 1 ? "; in the campaign " + Show(t.first[i]) : "");
                }
              }
              if (R > 1) {
                ++length_ev.batch_compared;
                if (!SameResult(alone[0][i], t.first[i]) && length_ev.batch_differences++ == 0) {
                  length_ev.batch_finding = "trial " + std::to_string(i) + ": alone " + Show(alone[0][i]) +
                                            "; in the batch " + Show(t.first[i]);
                }
              }
            }
          }
        }
        if (verifier_error.empty() && caps.scripted_uniforms) {
          const ScriptedOutcome s = RunScripted(verifier, r);
          length_ev.scripted_run = true;
          length_ev.scripted_probes = s.probes;
          length_ev.scripted_failures = s.failures;
          length_ev.scripted_finding = s.finding;
        }

        auto make_case = [&](const std::string& name, std::vector<double> p0, const std::vector<uint64_t>& histogram,
                             uint64_t draws, double expected, uint64_t invalid, int64_t kept, bool greedy,
                             const SpecEvidence& ev) {
          PreparedCase pc;
          CaseResult& cr = pc.result;
          cr.name = name;
          cr.row = r.spec.target;
          cr.row_seed = r.row_seed;
          cr.params = r.params;
          cr.profile = profile_name;
          cr.vocab = static_cast<int64_t>(p0.size());
          cr.kept = kept;
          cr.greedy = greedy;
          cr.tv = report.tv;
          cr.alpha_plan = alpha_test;
          cr.planned_draws = static_cast<uint64_t>(std::ceil(expected));
          cr.max_draws = w.trials;
          cr.draws = draws;
          auto binning = stats::PlanBinnings(p0, std::max(expected, 1.0), bopts);
          if (!binning.ok()) {
            cr.status = CaseStatus::kError;
            cr.reason = "binning: " + binning.error().message;
            case_results.push_back(std::move(cr));
            return;
          }
          pc.binning = std::move(*binning);
          if (kept >= 2 && pc.binning.head.usable()) {
            auto power = stats::PowerOfRunForTotalVariation(report.tv, alpha_test / 2, pc.binning.head.cells.size(),
                                                            std::max(expected, 1.0));
            cr.achieved_power = power.ok() ? *power : 0.0;
          } else {
            cr.achieved_power = 1.0 - std::pow(1.0 - report.tv, std::max(expected, 0.0));
          }
          pc.p0 = std::move(p0);
          CaseEvidence evidence{cr, pc.p0, pc.binning, histogram, invalid, verifier_error, nullptr, nullptr, &ev};
          if (Status st = RunCaseChecks(evidence, cr); !st.ok()) {
            cr.status = CaseStatus::kError;
            cr.reason = st.error().message;
          }
          ComputeCasePValue(cr);
          case_results.push_back(std::move(cr));
        };
        const double N = double(w.trials);
        for (int32_t j = 0; j <= g; ++j) {
          SpecEvidence ev;
          ev.role = "position";
          ev.position = j + 1;
          if (j < g) {
            ev.has_rejection_test = true;
            ev.reached = t.reached[static_cast<size_t>(j)];
            ev.rejected = t.rejected[static_cast<size_t>(j)];
            ev.beta = static_cast<double>(r.laws[static_cast<size_t>(j)].beta);
          }
          const auto& p = r.p[static_cast<size_t>(j)];
          make_case(r.name + "/pos" + std::to_string(j + 1), p.Dense(), t.pos[static_cast<size_t>(j)],
                    t.reached[static_cast<size_t>(j)], N * double(r.reach[static_cast<size_t>(j)]),
                    t.invalid[static_cast<size_t>(j)], static_cast<int64_t>(p.kept.size()), p.greedy, ev);
        }
        for (int32_t j = 0; j < g; ++j) {
          const PositionLaw& law = r.laws[static_cast<size_t>(j)];
          const double expected = N * double(r.reach[static_cast<size_t>(j)]) * double(law.residual_mass);
          if (expected < kMinResidualDraws || law.greedy) continue;
          SpecEvidence ev;
          ev.role = "residual";
          ev.position = j + 1;
          uint64_t draws = 0;
          for (uint64_t count : t.residual[static_cast<size_t>(j)]) draws += count;
          make_case(r.name + "/res" + std::to_string(j + 1), law.residual.Dense(r.V()), t.residual[static_cast<size_t>(j)],
                    draws, expected, 0, static_cast<int64_t>(law.residual.tokens.size()), false, ev);
        }
        std::vector<double> length_p0;
        int64_t length_kept = 0;
        for (long double v : r.length_law) {
          length_p0.push_back(static_cast<double>(v));
          length_kept += v > 0 ? 1 : 0;
        }
        uint64_t lengths = 0;
        for (uint64_t count : t.length) lengths += count;
        make_case(r.name + "/length", length_p0, t.length, lengths, N, 0, length_kept, false, length_ev);
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - case_start).count();
      for (CaseResult& cr : case_results) cr.seconds = seconds;
      if (!options.quiet) {
        std::lock_guard<std::mutex> lock(error_mutex);
        std::cerr << "spec case " << w.spec->name << ": " << w.trials << " trials, " << case_results.size()
                  << " judged cases, " << seconds << " s\n";
      }
      results[c] = std::move(case_results);
    }
  };
  unsigned jobs = options.jobs;
  if (jobs == 0) jobs = caps.parallel_instances ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(std::max<size_t>(work.size(), 1)));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < jobs; ++i) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (first_error) return *first_error;
  for (auto& rs : results) {
    for (CaseResult& cr : rs) report.cases.push_back(std::move(cr));
  }
  report.planned_cases = report.cases.size();
  ApplyCampaignVerdict(report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace samplecheck::harness
