// Chain speculative sampling, exactly (speculative.h): the laws, the stream discipline and the reference verifier.
#include "samplecheck/reference/speculative.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "samplecheck/reference/explain.h"
#include "samplecheck/reference/numerics.h"
#include "samplecheck/reference/philox.h"

namespace samplecheck {
namespace {

long double Sum(const std::vector<long double>& values) {
  KahanSum sum;
  for (long double v : values) sum.Add(v);
  return sum.Value();
}

// Visits the union of two supports in ascending id: f(token, a(token), b(token)).
template <class F>
void Merge(const SparseDistribution& a, const SparseDistribution& b, F&& f) {
  size_t i = 0, j = 0;
  while (i < a.tokens.size() || j < b.tokens.size()) {
    if (j == b.tokens.size() || (i < a.tokens.size() && a.tokens[i] < b.tokens[j])) {
      f(a.tokens[i], a.prob[i], 0.0L);
      ++i;
    } else if (i == a.tokens.size() || b.tokens[j] < a.tokens[i]) {
      f(b.tokens[j], 0.0L, b.prob[j]);
      ++j;
    } else {
      f(a.tokens[i], a.prob[i], b.prob[j]);
      ++i;
      ++j;
    }
  }
}

// normalize(max(0, a - b)), its unnormalized mass, and sum min(a, b).
struct Overlap {
  long double overlap = 0;
  long double residual_mass = 0;
  SparseDistribution residual;
};
Overlap OverlapOf(const SparseDistribution& a, const SparseDistribution& b) {
  Overlap out;
  std::vector<long double> mins, positives;
  Merge(a, b, [&](int32_t t, long double pa, long double pb) {
    mins.push_back(std::min(pa, pb));
    if (pa > pb) {
      out.residual.tokens.push_back(t);
      out.residual.prob.push_back(pa - pb);
      positives.push_back(pa - pb);
    }
  });
  out.overlap = Sum(mins);
  out.residual_mass = Sum(positives);
  if (out.residual_mass > 0) {
    for (long double& v : out.residual.prob) v /= out.residual_mass;
  } else {
    out.residual = a;  // a == b: a rejection cannot happen; the residual is the target itself
  }
  return out;
}

uint64_t CounterOf(uint64_t offset, int32_t position) { return offset + static_cast<uint64_t>(position - 1); }

}  // namespace

const char* DraftFormName(DraftForm form) {
  switch (form) {
    case DraftForm::kProbabilities: return "probabilities";
    case DraftForm::kLogits: return "logits";
    case DraftForm::kOneHot: return "one-hot";
  }
  return "?";
}

long double SparseDistribution::Prob(int32_t token) const {
  const auto it = std::lower_bound(tokens.begin(), tokens.end(), token);
  return it != tokens.end() && *it == token ? prob[static_cast<size_t>(it - tokens.begin())] : 0.0L;
}

std::vector<double> SparseDistribution::Dense(int64_t vocab) const {
  std::vector<double> out(static_cast<size_t>(vocab), 0.0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= 0 && tokens[i] < vocab) out[static_cast<size_t>(tokens[i])] = static_cast<double>(prob[i]);
  }
  return out;
}

Result<SparseDistribution> DraftFromProbabilities(std::span<const float> probs) {
  if (probs.empty()) return InvalidArgument("a draft probability row has no values");
  SparseDistribution q;
  std::vector<long double> values;
  for (size_t t = 0; t < probs.size(); ++t) {
    const float v = probs[t];
    if (!std::isfinite(v) || v < 0) {
      return InvalidArgument("draft probability of token " + std::to_string(t) + " is " + FormatValue(v) +
                             "; allowed: finite and >= 0");
    }
    if (v > 0) {
      q.tokens.push_back(static_cast<int32_t>(t));
      values.push_back(v);
    }
  }
  const long double total = Sum(values);
  if (!(std::fabs(static_cast<double>(total) - 1.0) <= kDraftSumTolerance)) {
    return InvalidArgument("draft probabilities sum to " + FormatValue(static_cast<double>(total)) +
                           "; allowed: within " + FormatValue(kDraftSumTolerance) + " of 1");
  }
  for (long double& v : values) v /= total;
  q.prob = std::move(values);
  return q;
}

SparseDistribution FromProcessed(const ProcessedDistribution& dist) { return {dist.kept, dist.prob}; }

Result<SparseDistribution> DraftFromLogits(const LogitsView& row, const SamplingParams& params, const Profile& profile) {
  Result<ProcessedDistribution> dist = ComputeDistribution(row, params, profile);
  if (!dist.ok()) return dist.error().WithContext("draft logits");
  return FromProcessed(*dist);
}

SparseDistribution PointMass(int32_t token) { return {{token}, {1.0L}}; }

PositionLaw MakePositionLaw(const ProcessedDistribution& p, const SparseDistribution& q) {
  PositionLaw law;
  law.p = FromProcessed(p);
  law.q = q;
  law.greedy = p.greedy;
  Overlap o = OverlapOf(law.p, q);
  law.beta = o.overlap;
  law.residual_mass = o.residual_mass;
  law.residual = std::move(o.residual);
  law.residual_cdf = InverseCdf(law.residual.tokens, law.residual.prob);
  // The emitted law from its two parts: min(p, q) + residual_mass * r (= max(0, p - q)).
  Merge(law.p, q, [&](int32_t t, long double pa, long double pb) {
    const long double v = std::min(pa, pb) + (law.residual_mass > 0 ? law.residual_mass * law.residual.Prob(t) : 0.0L);
    if (v > 0) {
      law.emitted.tokens.push_back(t);
      law.emitted.prob.push_back(v);
    }
  });
  return law;
}

Result<ChainLaws> ComputeChainLaws(const ChainInput& in) {
  if (in.profile == nullptr) return InvalidArgument("no target profile");
  if (in.target.size() < 1) return InvalidArgument("a request needs g + 1 >= 1 target rows, got 0");
  const int32_t g = static_cast<int32_t>(in.target.size()) - 1;
  const int64_t vocab = in.target[0].vocab;
  for (size_t j = 0; j < in.target.size(); ++j) {
    if (in.target[j].vocab != vocab || vocab < 1) {
      return InvalidArgument("target row " + std::to_string(j) + " has vocab " + std::to_string(in.target[j].vocab) +
                             "; allowed: the vocab of row 0 (" + std::to_string(vocab) + "), >= 1");
    }
  }
  if (in.draft_form != DraftForm::kOneHot && in.draft_rows.size() != static_cast<size_t>(g)) {
    return InvalidArgument("a " + std::string(DraftFormName(in.draft_form)) + " draft needs g = " +
                           std::to_string(g) + " rows, got " + std::to_string(in.draft_rows.size()));
  }
  if (in.draft_form == DraftForm::kOneHot && in.draft_tokens.size() != static_cast<size_t>(g)) {
    return InvalidArgument("a one-hot draft needs g = " + std::to_string(g) + " draft tokens, got " +
                           std::to_string(in.draft_tokens.size()));
  }
  ChainLaws laws;
  laws.g = g;
  laws.vocab = vocab;
  const Profile& draft_profile = in.draft_profile != nullptr ? *in.draft_profile : *in.profile;
  for (int32_t j = 0; j <= g; ++j) {
    Result<ProcessedDistribution> p = ComputeDistribution(in.target[static_cast<size_t>(j)], in.params, *in.profile);
    if (!p.ok()) return p.error().WithContext("target row " + std::to_string(j));
    if (j == g) {
      laws.bonus = std::move(*p);
      laws.bonus_cdf = InverseCdf(laws.bonus);
      break;
    }
    SparseDistribution q;
    switch (in.draft_form) {
      case DraftForm::kProbabilities: {
        const std::span<const float> row = in.draft_rows[static_cast<size_t>(j)];
        if (static_cast<int64_t>(row.size()) != vocab) {
          return InvalidArgument("draft row " + std::to_string(j) + " has " + std::to_string(row.size()) +
                                 " values; allowed: the target's vocab " + std::to_string(vocab));
        }
        Result<SparseDistribution> d = DraftFromProbabilities(row);
        if (!d.ok()) return d.error().WithContext("draft row " + std::to_string(j));
        q = std::move(*d);
        break;
      }
      case DraftForm::kLogits: {
        const std::span<const float> row = in.draft_rows[static_cast<size_t>(j)];
        if (static_cast<int64_t>(row.size()) != vocab) {
          return InvalidArgument("draft row " + std::to_string(j) + " has " + std::to_string(row.size()) +
                                 " values; allowed: the target's vocab " + std::to_string(vocab));
        }
        Result<SparseDistribution> d = DraftFromLogits(LogitsView::Fp32(row), in.draft_params, draft_profile);
        if (!d.ok()) return d.error().WithContext("draft row " + std::to_string(j));
        q = std::move(*d);
        break;
      }
      case DraftForm::kOneHot: {
        const int32_t x = in.draft_tokens[static_cast<size_t>(j)];
        if (x < 0 || x >= vocab) {
          return InvalidArgument("draft token " + std::to_string(x) + " at position " + std::to_string(j + 1) +
                                 " is outside [0, " + std::to_string(vocab) + ")");
        }
        q = PointMass(x);
        break;
      }
    }
    laws.positions.push_back(MakePositionLaw(*p, q));
  }
  laws.reach.assign(static_cast<size_t>(g) + 1, 0.0L);
  laws.length_law.assign(static_cast<size_t>(g) + 1, 0.0L);
  long double reach = 1;
  for (int32_t j = 0; j <= g; ++j) {
    laws.reach[static_cast<size_t>(j)] = reach;
    if (j < g) {
      const long double beta = laws.positions[static_cast<size_t>(j)].beta;
      laws.length_law[static_cast<size_t>(j)] = reach * laws.positions[static_cast<size_t>(j)].residual_mass;
      reach *= beta;
    } else {
      laws.length_law[static_cast<size_t>(g)] = reach;
    }
  }
  return laws;
}

double SpecCoin(uint64_t seed, uint64_t offset, int32_t position) {
  const uint64_t counter = CounterOf(offset, position);
  const PhiloxBlock block = Philox4x32_10(
      {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}, static_cast<uint32_t>(seed),
      static_cast<uint32_t>(seed >> 32));
  const uint64_t bits = (static_cast<uint64_t>(block[2]) << 32 | block[3]) >> 12;  // 52 bits
  return (static_cast<double>(bits) + 0.5) * 0x1p-52;
}

double SpecDrawUniform(uint64_t seed, uint64_t offset, int32_t position) {
  return UniformForDraw(seed, CounterOf(offset, position));
}

double SpecUniforms::Coin(uint64_t seed, uint64_t offset, int32_t position) const {
  return scripted.empty() ? SpecCoin(seed, offset, position) : scripted[2 * static_cast<size_t>(position - 1)];
}

double SpecUniforms::Draw(uint64_t seed, uint64_t offset, int32_t position) const {
  return scripted.empty() ? SpecDrawUniform(seed, offset, position)
                          : scripted[2 * static_cast<size_t>(position - 1) + 1];
}

Status ValidateScriptedUniforms(std::span<const double> scripted, int32_t g) {
  if (scripted.empty()) return Status::Ok();
  if (scripted.size() != 2 * (static_cast<size_t>(g) + 1)) {
    return InvalidArgument("a scripted uniform stream for g = " + std::to_string(g) + " has " +
                           std::to_string(scripted.size()) + " values; allowed: 2 (g + 1) = " +
                           std::to_string(2 * (g + 1)) + " (coin and draw uniform per position)");
  }
  for (size_t i = 0; i < scripted.size(); ++i) {
    if (!(scripted[i] >= 0.0 && scripted[i] < 1.0)) {
      return InvalidArgument("scripted uniform " + std::to_string(i) + " is " + FormatValue(scripted[i]) +
                             "; allowed: [0, 1)");
    }
  }
  return Status::Ok();
}

int32_t SparseInverseCdfDraw(const SparseDistribution& dist, double u) {
  if (dist.tokens.empty()) return -1;
  KahanSum running;  // the InverseCdf rule: cdf rounded once per entry to double
  for (size_t i = 0; i < dist.tokens.size(); ++i) {
    if (static_cast<double>(running.Add(dist.prob[i])) > u) return dist.tokens[i];
  }
  return dist.tokens.back();
}

ChainView ViewOf(const ChainLaws& laws) {
  ChainView view;
  view.vocab = laws.vocab;
  for (const PositionLaw& law : laws.positions) view.positions.push_back(&law);
  view.bonus = &laws.bonus_cdf;
  return view;
}

Result<ChainOutcome> VerifyChain(const ChainLaws& laws, std::span<const int32_t> draft_tokens, uint64_t seed,
                                 uint64_t offset, const SpecUniforms& uniforms) {
  return VerifyChain(ViewOf(laws), draft_tokens, seed, offset, uniforms);
}

Result<ChainOutcome> VerifyChain(const ChainView& view, std::span<const int32_t> draft_tokens, uint64_t seed,
                                 uint64_t offset, const SpecUniforms& uniforms) {
  const int32_t g = static_cast<int32_t>(view.positions.size());
  if (draft_tokens.size() != static_cast<size_t>(g)) {
    return InvalidArgument("the request has g = " + std::to_string(g) + " positions, got " +
                           std::to_string(draft_tokens.size()) + " draft tokens");
  }
  if (Status st = ValidateScriptedUniforms(uniforms.scripted, g); !st.ok()) return st.error();
  ChainOutcome out;
  for (int32_t j = 1; j <= g; ++j) {
    const PositionLaw& law = *view.positions[static_cast<size_t>(j - 1)];
    const int32_t x = draft_tokens[static_cast<size_t>(j - 1)];
    const long double qx = law.q.Prob(x);
    if (x < 0 || x >= view.vocab || !(qx > 0)) {
      return InvalidArgument("draft token " + std::to_string(x) + " at position " + std::to_string(j) +
                             " has draft probability 0 (or is outside [0, " + std::to_string(view.vocab) +
                             ")): the draft cannot have proposed it");
    }
    bool accept;
    if (law.greedy) {
      accept = x == law.p.tokens.front();  // the greedy token: accepted iff proposed; no coin decides
    } else {
      const double u = uniforms.Coin(seed, offset, j);
      accept = static_cast<long double>(u) * qx < law.p.Prob(x);
    }
    if (accept) {
      out.emitted.push_back(x);
      ++out.accepted;
      continue;
    }
    out.emitted.push_back(law.greedy ? law.p.tokens.front() : law.residual_cdf.Draw(uniforms.Draw(seed, offset, j)));
    return out;
  }
  out.emitted.push_back(view.bonus->Draw(uniforms.Draw(seed, offset, g + 1)));
  return out;
}

PositionLaw MakeOneHotPositionLaw(const ProcessedDistribution& p, const SparseDistribution& proposal) {
  PositionLaw law;
  law.p = FromProcessed(p);
  law.q = proposal;
  law.greedy = p.greedy;
  std::vector<long double> overlap;
  Merge(law.p, proposal, [&](int32_t, long double pa, long double pb) { overlap.push_back(pa * pb); });
  law.beta = Sum(overlap);
  std::vector<long double> rest;
  Merge(law.p, proposal, [&](int32_t t, long double pa, long double pb) {
    const long double v = pa * (1 - pb);
    if (v > 0) {
      law.residual.tokens.push_back(t);
      law.residual.prob.push_back(v);
      rest.push_back(v);
    }
  });
  law.residual_mass = Sum(rest);
  if (law.residual_mass > 0) {
    for (long double& v : law.residual.prob) v /= law.residual_mass;
  } else {
    law.residual = law.p;
  }
  law.residual_cdf = InverseCdf(law.residual.tokens, law.residual.prob);
  law.emitted = law.p;  // sum_x proposal(x) [p(x) 1{y = x} + (1 - p(x)) p(y) 1{y != x} / (1 - p(x))] = p(y)
  return law;
}

MultiDraftLaw ComputeMultiDraftLaw(const SparseDistribution& p, const SparseDistribution& q, int32_t k) {
  MultiDraftLaw law;
  law.k = k;
  SparseDistribution target = p;
  law.target.push_back(p);
  long double rejected = 1;
  // emitted = sum_i P(reach child i) sum_x q(x) min(1, r^{i-1}(x)/q(x)) [x] + P(all rejected) r^k
  std::vector<long double> emitted_dense;
  std::vector<int32_t> support;
  Merge(p, q, [&](int32_t t, long double, long double) { support.push_back(t); });
  emitted_dense.assign(support.size(), 0.0L);
  auto index_of = [&](int32_t t) {
    return static_cast<size_t>(std::lower_bound(support.begin(), support.end(), t) - support.begin());
  };
  for (int32_t i = 0; i < k; ++i) {
    Overlap o = OverlapOf(target, q);
    law.child_acceptance.push_back(o.overlap);
    Merge(target, q, [&](int32_t t, long double pa, long double pb) {
      emitted_dense[index_of(t)] += rejected * std::min(pa, pb);
    });
    rejected *= o.residual_mass;
    target = o.residual;
    law.target.push_back(target);
  }
  law.all_rejected = rejected;
  for (size_t i = 0; i < target.tokens.size(); ++i) emitted_dense[index_of(target.tokens[i])] += rejected * target.prob[i];
  for (size_t i = 0; i < support.size(); ++i) {
    if (emitted_dense[i] > 0) {
      law.emitted.tokens.push_back(support[i]);
      law.emitted.prob.push_back(emitted_dense[i]);
    }
  }
  return law;
}

Result<MultiDraftOutcome> VerifyMultiDraft(const MultiDraftLaw& law, const SparseDistribution& q,
                                           std::span<const int32_t> children, std::span<const double> coins,
                                           double draw) {
  if (children.size() != static_cast<size_t>(law.k) || coins.size() != static_cast<size_t>(law.k)) {
    return InvalidArgument("a position with k = " + std::to_string(law.k) + " children needs k children and k coins");
  }
  for (int32_t i = 0; i < law.k; ++i) {
    const int32_t x = children[static_cast<size_t>(i)];
    const long double qx = q.Prob(x);
    if (!(qx > 0)) {
      return InvalidArgument("child " + std::to_string(i) + " token " + std::to_string(x) + " has draft probability 0");
    }
    if (!(coins[static_cast<size_t>(i)] >= 0.0 && coins[static_cast<size_t>(i)] < 1.0)) {
      return InvalidArgument("coin " + std::to_string(i) + " is " + FormatValue(coins[static_cast<size_t>(i)]) +
                             "; allowed: [0, 1)");
    }
    if (static_cast<long double>(coins[static_cast<size_t>(i)]) * qx < law.target[static_cast<size_t>(i)].Prob(x)) {
      return MultiDraftOutcome{x, i};
    }
  }
  return MultiDraftOutcome{SparseInverseCdfDraw(law.target[static_cast<size_t>(law.k)], draw), -1};
}

std::string ExplainChainLaws(const ChainLaws& laws, const ChainInput& input, int64_t max_tokens) {
  std::ostringstream os;
  os << "chain speculative sampling: g = " << laws.g << " draft positions, vocab " << laws.vocab << ", target profile "
     << input.profile->name << ", draft " << DraftFormName(input.draft_form) << "\n";
  os << "  " << std::left << std::setw(10) << "position" << std::setw(14) << "reach" << std::setw(14) << "beta"
     << std::setw(14) << "1 - beta" << std::setw(12) << "greedy" << "max |emitted - p|\n";
  for (int32_t j = 0; j < laws.g; ++j) {
    const PositionLaw& law = laws.positions[static_cast<size_t>(j)];
    long double worst = 0;
    Merge(law.emitted, law.p, [&](int32_t, long double a, long double b) { worst = std::max(worst, std::fabs(a - b)); });
    os << "  " << std::setw(10) << (j + 1) << std::setw(14) << ExplainNumber(laws.reach[static_cast<size_t>(j)], 8)
       << std::setw(14) << ExplainNumber(law.beta, 8) << std::setw(14) << ExplainNumber(law.residual_mass, 8) << std::setw(12)
       << (law.greedy ? "yes" : "") << ExplainNumber(worst, 3) << "\n";
  }
  os << "  " << std::setw(10) << (std::to_string(laws.g + 1) + " bonus") << std::setw(14)
     << ExplainNumber(laws.reach[static_cast<size_t>(laws.g)], 8) << "\n";
  os << "accepted-length law P(L = k):";
  for (int32_t k = 0; k <= laws.g; ++k) os << (k ? ", " : " ") << k << ": " << ExplainNumber(laws.length_law[static_cast<size_t>(k)], 8);
  os << "\n";
  for (int32_t j = 0; j < laws.g; ++j) {
    const PositionLaw& law = laws.positions[static_cast<size_t>(j)];
    os << "position " << (j + 1) << ": token, p, q, min(p, q), residual r, emitted\n";
    std::vector<int32_t> tokens;
    Merge(law.p, law.q, [&](int32_t t, long double, long double) { tokens.push_back(t); });
    std::stable_sort(tokens.begin(), tokens.end(),
                     [&](int32_t a, int32_t b) { return law.p.Prob(a) + law.q.Prob(a) > law.p.Prob(b) + law.q.Prob(b); });
    const size_t shown = std::min<size_t>(tokens.size(), static_cast<size_t>(std::max<int64_t>(0, max_tokens)));
    for (size_t n = 0; n < shown; ++n) {
      const int32_t t = tokens[n];
      os << "  " << std::setw(10) << t << std::setw(14) << ExplainNumber(law.p.Prob(t), 8) << std::setw(14)
         << ExplainNumber(law.q.Prob(t), 8) << std::setw(14) << ExplainNumber(std::min(law.p.Prob(t), law.q.Prob(t)), 8) << std::setw(14)
         << ExplainNumber(law.residual_mass > 0 ? law.residual.Prob(t) : 0.0L, 8) << ExplainNumber(law.emitted.Prob(t), 8) << "\n";
    }
    if (shown < tokens.size()) os << "  ... " << tokens.size() - shown << " more (--max-tokens)\n";
  }
  os << "stream: request (seed " << input.params.seed << ", offset " << input.params.offset << ") owns Philox counters "
     << input.params.offset << " .. " << input.params.offset + static_cast<uint64_t>(laws.g)
     << "; position j: coin = words 2,3 and draw uniform = words 0,1 of the block at counter offset + j - 1\n";
  return os.str();
}

std::string ExplainMultiDraftLaw(const MultiDraftLaw& law, const SparseDistribution& p, const SparseDistribution& q,
                                 int64_t max_tokens) {
  std::ostringstream os;
  os << "several drafts per position (recursive rejection): k = " << law.k << " children drawn from q\n";
  for (int32_t i = 0; i < law.k; ++i) {
    os << "  child " << (i + 1) << ": accepted with probability " << ExplainNumber(law.child_acceptance[static_cast<size_t>(i)], 8)
       << " given the children before it were rejected\n";
  }
  os << "  every child rejected: " << ExplainNumber(law.all_rejected, 8) << " (the token is then drawn from r^" << law.k << ")\n";
  os << "  token, p, q, emitted\n";
  std::vector<int32_t> tokens;
  Merge(p, q, [&](int32_t t, long double, long double) { tokens.push_back(t); });
  const size_t shown = std::min<size_t>(tokens.size(), static_cast<size_t>(std::max<int64_t>(0, max_tokens)));
  for (size_t n = 0; n < shown; ++n) {
    const int32_t t = tokens[n];
    os << "  " << std::left << std::setw(10) << t << std::setw(14) << ExplainNumber(p.Prob(t), 8) << std::setw(14)
       << ExplainNumber(q.Prob(t), 8) << ExplainNumber(law.emitted.Prob(t), 8) << "\n";
  }
  if (shown < tokens.size()) os << "  ... " << tokens.size() - shown << " more (--max-tokens)\n";
  return os.str();
}

}  // namespace samplecheck
