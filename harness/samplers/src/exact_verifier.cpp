// The exact CPU verifier (the reference's VerifyChain behind the Verifier interface) and the verifier mutants:
// the same verifier with one bug class of docs/speculative.md each (re-implementations of the bugs, for the
// mutation score of the spec gate; no engine's code).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "row_cache.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

namespace {

enum class Fault {
  kNone,
  kCoinEdge,              // accept iff u <= p / q
  kResidualNotNormalized, // the residual's inverse CDF over max(0, p - q) without dividing by its mass
  kResidualFromP,         // the rejection token drawn from p
  kArgmaxFallback,        // residual formed in fp32; mass below 1e-3 "looks empty": the argmax of p
  kDraftDtype,            // acceptance uses q from bf16-rounded draft values; the draft was drawn from the fp32 q
  kProfileMismatch,       // p of the verifier under another profile than the main path's
  kGreedyMixedBatch,      // a greedy request in a batch with sampled ones is sampled at temperature 1
  kRngGlobal,             // coins from a process-wide counter, not the request's (seed, offset)
  kRngReused,             // the coin and the residual draw use the same uniform
  // issue 31: the stream across seeds, steps and calls
  kSeedIgnored,           // the counters' key is 0 whatever the request's seed
  kStepKeyReuse,          // every other step (offset / (g + 1) odd) reuses the previous step's counters
  kGraphBakedCoins,       // Verify calls of 2..64 requests replay the counters of the first call of that size
};

struct MutantDef {
  const char* name;
  Fault fault;
  const char* bug_class;
  const char* description;
};

constexpr MutantDef kMutants[] = {
    {"spec-coin-edge", Fault::kCoinEdge, "coin edge",
     "accepts iff u <= p/q: u = 0 accepts a draft of target probability 0"},
    {"spec-residual-unnormalized", Fault::kResidualNotNormalized, "residual not renormalized",
     "draws the rejection token from max(0, p - q) without dividing by its mass (the rest lands on its last token)"},
    {"spec-residual-from-p", Fault::kResidualFromP, "residual drawn from p",
     "draws the rejection token from p instead of normalize(max(0, p - q))"},
    {"spec-argmax-fallback", Fault::kArgmaxFallback, "argmax fallback on empty residual",
     "forms the residual in fp32 and emits the argmax of p when its mass is below 1e-3 (it \"looks empty\")"},
    {"spec-draft-dtype", Fault::kDraftDtype, "draft dtype mismatch",
     "accepts with q from bf16-rounded draft probabilities / logits while the draft was drawn from the fp32 q"},
    {"spec-profile-mismatch", Fault::kProfileMismatch, "verifier profile differs from the main path",
     "processes the target under flashinfer-joint (vllm when the main path is flashinfer-joint)"},
    {"spec-greedy-mixed-batch", Fault::kGreedyMixedBatch, "greedy handled wrong in a mixed batch",
     "a greedy request verified in a batch with sampled requests is sampled at temperature 1"},
    {"spec-rng-global", Fault::kRngGlobal, "shared RNG",
     "coins from a process-wide Philox counter instead of the request's (seed, offset): not reproducible"},
    {"spec-rng-reused", Fault::kRngReused, "reused RNG",
     "the coin u_j is reused as the residual draw's uniform (the rejection token is drawn given u >= p/q)"},
    {"spec-seed-ignored", Fault::kSeedIgnored, "seed ignored",
     "coins keyed by the offset alone (key 0 whatever the seed): a new request replays an earlier one's stream "
     "(TRT-LLM#19505 / #17599)"},
    {"spec-step-key-reuse", Fault::kStepKeyReuse, "keys reused across steps",
     "every other step (trial) verifies with the previous step's counters (vLLM block verification, #46781)"},
    {"spec-graph-baked-coins", Fault::kGraphBakedCoins, "uniform baked into a captured graph",
     "Verify calls of 2..64 requests (a captured decode graph) replay the counters of each slot of the first call of "
     "that size (imp#2013)"},
};

bool IsGreedyParams(const SamplingParams& params, const Profile& profile) {
  // The profile's greedy path is what ComputeDistribution reports; a 1-token row answers it cheaply.
  const float one = 0.0f;
  Result<ProcessedDistribution> d = ComputeDistribution(LogitsView::Fp32(std::span<const float>(&one, 1)), params,
                                                        profile);
  return d.ok() && d->greedy;
}

float RoundBf16(float v) { return BFloat16ToFloat(FloatToBFloat16(v)); }

class ExactVerifier final : public Verifier {
 public:
  ExactVerifier(const Profile& profile, Fault fault, std::string name)
      : profile_(profile), fault_(fault), name_(std::move(name)) {
    verify_profile_ = &profile;
    if (fault == Fault::kProfileMismatch) {
      verify_profile_ = FindProfile(profile.name == "flashinfer-joint" ? "vllm" : "flashinfer-joint");
    }
  }

  std::string Name() const override { return name_; }

  VerifierCapabilities GetCapabilities() const override {
    VerifierCapabilities caps;
    caps.deterministic = true;  // the rng-global mutant claims it too: its bug is that it is not
    caps.scripted_uniforms = true;
    caps.draft_logits = true;
    caps.parallel_instances = true;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) override {
    if (Status st = CheckVerifyRequests(requests, results.size()); !st.ok()) return st;
    bool mixed = false;
    if (fault_ == Fault::kGreedyMixedBatch) {
      bool greedy = false, sampled = false;
      for (const VerifyRequest& r : requests) (IsGreedyParams(r.params, *verify_profile_) ? greedy : sampled) = true;
      mixed = greedy && sampled;
    }
    std::vector<SamplingParams> counters;
    for (const VerifyRequest& q : requests) counters.push_back(q.params);
    if (fault_ == Fault::kGraphBakedCoins && requests.size() >= 2 && requests.size() <= 64) {
      auto [captured, first] = graph_.try_emplace(requests.size(), counters);
      if (!first) counters = captured->second;  // a replay of the captured graph: its counters
    }
    for (size_t r = 0; r < requests.size(); ++r) {
      VerifyRequest q = requests[r];
      q.params.seed = counters[r].seed;
      q.params.offset = counters[r].offset;
      if (Status st = VerifyOne(q, results[r], mixed); !st.ok()) {
        return st.error().WithContext("request " + std::to_string(r));
      }
    }
    return Status::Ok();
  }

  Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                        std::span<VerifyResult> results) override {
    VerifyRequest first;
    if (Status st = CheckVerifyRepeated(request, draft_tokens, results.size(), &first); !st.ok()) return st;
    if (results.empty()) return Status::Ok();
    const size_t g = static_cast<size_t>(request.g);
    const bool one_hot = request.draft_form == DraftForm::kOneHot;
    Result<Prepared> prepared = Prepare(first, false);
    if (!prepared.ok()) return prepared.status();
    // One-hot drafts: a position's law depends on its token; the laws of the tokens seen are kept for this call.
    std::map<std::pair<int32_t, int32_t>, std::shared_ptr<const PositionLaw>> one_hot_laws;
    for (size_t i = 0; i < results.size(); ++i) {
      VerifyRequest trial = request;
      trial.draft_tokens = draft_tokens.data() + i * g;
      trial.params.offset = request.params.offset + i * (g + 1);
      if (one_hot && !prepared->invalid) {
        for (size_t j = 0; j < g; ++j) {
          const int32_t x = trial.draft_tokens[j];  // inside [0, vocab): CheckVerifyRepeated
          auto& law = one_hot_laws[{static_cast<int32_t>(j), x}];
          if (!law) law = std::make_shared<const PositionLaw>(MakePositionLaw(*prepared->targets[j], PointMass(x)));
          prepared->positions[j] = law;
          prepared->view.positions[j] = law.get();
        }
      }
      if (Status st = Run(*prepared, trial, results[i]); !st.ok()) return st;
    }
    return Status::Ok();
  }

 private:
  struct Prepared {
    bool invalid = false;  // a target row cannot be sampled
    std::vector<std::shared_ptr<const PositionLaw>> positions;
    std::shared_ptr<const InverseCdf> bonus;
    std::vector<std::shared_ptr<const ProcessedDistribution>> targets;  // g + 1
    ChainView view;
  };

  Result<std::shared_ptr<const ProcessedDistribution>> Target(std::span<const float> row, SamplingParams params,
                                                              bool mixed) {
    if (fault_ == Fault::kGreedyMixedBatch && mixed && IsGreedyParams(params, *verify_profile_)) {
      params.temperature = 1.0;
      params.top_p = 1.0;
      if (params.top_k == 1) params.top_k = -1;
    }
    return targets_.Get(row, params, [&]() { return ComputeDistribution(LogitsView::Fp32(row), params, *verify_profile_); });
  }

  Result<std::shared_ptr<const SparseDistribution>> Draft(const VerifyRequest& q, int32_t j) {
    const std::span<const float> row(q.draft + static_cast<int64_t>(j) * q.vocab, static_cast<size_t>(q.vocab));
    const bool bf16 = fault_ == Fault::kDraftDtype;
    if (q.draft_form == DraftForm::kProbabilities) {
      return drafts_.Get(row, SamplingParams{}, [&]() -> Result<SparseDistribution> {
        if (!bf16) return DraftFromProbabilities(row);
        std::vector<float> rounded(row.begin(), row.end());
        for (float& v : rounded) v = RoundBf16(v);
        return DraftFromProbabilities(rounded);
      });
    }
    return draft_logits_.Get(row, q.draft_params, [&]() -> Result<SparseDistribution> {
      if (!bf16) return DraftFromLogits(LogitsView::Fp32(row), q.draft_params, profile_);
      std::vector<float> rounded(row.begin(), row.end());
      for (float& v : rounded) v = RoundBf16(v);
      return DraftFromLogits(LogitsView::Fp32(rounded), q.draft_params, profile_);
    });
  }

  std::shared_ptr<const PositionLaw> Law(const std::shared_ptr<const ProcessedDistribution>& p,
                                         const std::shared_ptr<const SparseDistribution>& q) {
    const auto key = std::make_pair(p.get(), q.get());
    auto it = laws_.find(key);
    if (it != laws_.end()) return it->second.law;
    if (laws_.size() > 256) laws_.clear();
    auto law = std::make_shared<const PositionLaw>(MakePositionLaw(*p, *q));
    laws_[key] = {p, q, law};
    return law;
  }

  Result<Prepared> Prepare(const VerifyRequest& q, bool mixed) {
    Prepared out;
    for (int32_t j = 0; j <= q.g; ++j) {
      const std::span<const float> row(q.target + static_cast<int64_t>(j) * q.vocab, static_cast<size_t>(q.vocab));
      auto p = Target(row, q.params, mixed);
      if (!p.ok()) {
        if (p.error().code == ErrorCode::kInvalidRow) {
          out.invalid = true;
          return out;
        }
        return p.error().WithContext("target row " + std::to_string(j));
      }
      out.targets.push_back(*p);
    }
    for (int32_t j = 0; j < q.g; ++j) {
      std::shared_ptr<const SparseDistribution> draft;
      if (q.draft_form == DraftForm::kOneHot) {
        draft = std::make_shared<const SparseDistribution>(PointMass(q.draft_tokens[j]));
        out.positions.push_back(std::make_shared<const PositionLaw>(MakePositionLaw(*out.targets[j], *draft)));
        continue;
      }
      auto d = Draft(q, j);
      if (!d.ok()) return d.error().WithContext("draft row " + std::to_string(j));
      out.positions.push_back(Law(out.targets[static_cast<size_t>(j)], *d));
    }
    const auto& last = out.targets.back();
    auto bonus = bonus_.find(last.get());
    if (bonus == bonus_.end()) {
      if (bonus_.size() > 64) bonus_.clear();
      bonus = bonus_.emplace(last.get(), std::make_pair(last, std::make_shared<const InverseCdf>(*last))).first;
    }
    out.bonus = bonus->second.second;
    out.view.vocab = q.vocab;
    for (const auto& law : out.positions) out.view.positions.push_back(law.get());
    out.view.bonus = out.bonus.get();
    return out;
  }

  Status VerifyOne(const VerifyRequest& q, VerifyResult& result, bool mixed) {
    Result<Prepared> prepared = Prepare(q, mixed);
    if (!prepared.ok()) return prepared.status();
    return Run(*prepared, q, result);
  }

  Status Run(const Prepared& prepared, const VerifyRequest& q, VerifyResult& result) {
    result.emitted.fill(kInvalidToken);
    if (prepared.invalid) {
      result.accepted = 0;
      return Status::Ok();
    }
    const std::span<const int32_t> tokens(q.draft_tokens, static_cast<size_t>(q.g));
    uint64_t seed = q.params.seed, offset = q.params.offset;
    const uint64_t step = static_cast<uint64_t>(q.g) + 1;
    if (fault_ == Fault::kSeedIgnored) seed = 0;
    if (fault_ == Fault::kStepKeyReuse && (offset / step) % 2 == 1) offset -= step;
    const bool stream_fault = fault_ == Fault::kSeedIgnored || fault_ == Fault::kStepKeyReuse ||
                              fault_ == Fault::kGraphBakedCoins;
    Result<ChainOutcome> out = fault_ == Fault::kNone || stream_fault
                                   ? VerifyChain(prepared.view, tokens, seed, offset, {q.uniforms})
                                   : FaultyChain(prepared, tokens, q);
    if (!out.ok()) return out.status();
    result.accepted = out->accepted;
    std::copy(out->emitted.begin(), out->emitted.end(), result.emitted.begin());
    return Status::Ok();
  }

  // The chain of reference/speculative.h with the mutant's fault (kNone never comes here).
  Result<ChainOutcome> FaultyChain(const Prepared& prepared, std::span<const int32_t> tokens, const VerifyRequest& q) {
    const SpecUniforms uniforms{q.uniforms};
    const uint64_t seed = q.params.seed, offset = q.params.offset;
    ChainOutcome out;
    for (int32_t j = 1; j <= q.g; ++j) {
      const PositionLaw& law = *prepared.positions[static_cast<size_t>(j - 1)];
      const int32_t x = tokens[static_cast<size_t>(j - 1)];
      const long double qx = law.q.Prob(x);
      if (!(qx > 0)) {
        return InvalidArgument("draft token " + std::to_string(x) + " at position " + std::to_string(j) +
                               " has draft probability 0");
      }
      double u = uniforms.Coin(seed, offset, j);
      if (fault_ == Fault::kRngGlobal) u = SpecCoin(0x5eed, global_counter_.fetch_add(1), 1);
      if (fault_ == Fault::kRngReused) u = uniforms.Draw(seed, offset, j);
      const long double px = law.p.Prob(x);
      const bool accept = law.greedy ? x == law.p.tokens.front()
                          : fault_ == Fault::kCoinEdge ? static_cast<long double>(u) * qx <= px
                                                       : static_cast<long double>(u) * qx < px;
      if (accept) {
        out.emitted.push_back(x);
        ++out.accepted;
        continue;
      }
      const double d = uniforms.Draw(seed, offset, j);
      if (law.greedy) {
        out.emitted.push_back(law.p.tokens.front());
      } else if (fault_ == Fault::kResidualFromP || fault_ == Fault::kResidualNotNormalized ||
                 fault_ == Fault::kArgmaxFallback) {
        const Derived& derived = DerivedOf(prepared.positions[static_cast<size_t>(j - 1)]);
        if (fault_ == Fault::kArgmaxFallback && derived.fp32_mass < 1e-3f) {
          out.emitted.push_back(derived.argmax);
        } else if (fault_ == Fault::kArgmaxFallback) {
          out.emitted.push_back(law.residual_cdf.Draw(d));
        } else {
          out.emitted.push_back(derived.cdf.Draw(d));
        }
      } else {
        out.emitted.push_back(law.residual_cdf.Draw(d));
      }
      return out;
    }
    out.emitted.push_back(prepared.bonus->Draw(uniforms.Draw(seed, offset, q.g + 1)));
    return out;
  }

  // What a mutant draws from instead of the residual, built once per position law.
  struct Derived {
    InverseCdf cdf;         // from-p: p's table; not-normalized: max(0, p - q) without the division
    float fp32_mass = 0;    // argmax fallback: the residual's mass summed in fp32
    int32_t argmax = -1;
  };
  const Derived& DerivedOf(const std::shared_ptr<const PositionLaw>& key) {
    const PositionLaw& law = *key;
    auto it = derived_.find(key);  // the key keeps the law alive: its address is never reused while cached
    if (it != derived_.end()) return it->second;
    if (derived_.size() > 4096) derived_.clear();
    Derived d;
    if (fault_ == Fault::kResidualFromP) d.cdf = InverseCdf(law.p.tokens, law.p.prob);
    if (fault_ == Fault::kResidualNotNormalized) {
      std::vector<long double> unnormalized = law.residual.prob;
      for (long double& v : unnormalized) v *= law.residual_mass;
      d.cdf = InverseCdf(law.residual.tokens, unnormalized);
    }
    if (fault_ == Fault::kArgmaxFallback) {
      for (int32_t t : law.residual.tokens) {
        d.fp32_mass += std::max(0.0f, static_cast<float>(law.p.Prob(t)) - static_cast<float>(law.q.Prob(t)));
      }
      size_t best = 0;
      for (size_t i = 1; i < law.p.prob.size(); ++i) {
        if (law.p.prob[i] > law.p.prob[best]) best = i;
      }
      d.argmax = law.p.tokens[best];
    }
    return derived_.emplace(key, std::move(d)).first->second;
  }
  std::map<std::shared_ptr<const PositionLaw>, Derived> derived_;

  const Profile& profile_;
  const Profile* verify_profile_;
  Fault fault_;
  std::string name_;
  RowCache<ProcessedDistribution> targets_{size_t{256} << 20};
  RowCache<SparseDistribution> drafts_{size_t{128} << 20};
  RowCache<SparseDistribution> draft_logits_{size_t{128} << 20};
  struct LawEntry {
    std::shared_ptr<const ProcessedDistribution> p;
    std::shared_ptr<const SparseDistribution> q;
    std::shared_ptr<const PositionLaw> law;
  };
  std::map<std::pair<const void*, const void*>, LawEntry> laws_;
  std::map<const void*, std::pair<std::shared_ptr<const ProcessedDistribution>, std::shared_ptr<const InverseCdf>>>
      bonus_;
  static inline std::atomic<uint64_t> global_counter_{0};
  std::map<size_t, std::vector<SamplingParams>> graph_;  // kGraphBakedCoins: the counters captured per batch size
};

}  // namespace

Result<std::unique_ptr<Verifier>> MakeExactVerifier(std::string_view profile) {
  Result<const Profile*> found = ProfileByName(profile);
  if (!found.ok()) return found.error();
  return std::unique_ptr<Verifier>(
      std::make_unique<ExactVerifier>(**found, Fault::kNone, "exact:" + std::string((*found)->name)));
}

const std::vector<VerifierMutantInfo>& VerifierMutants() {
  static const std::vector<VerifierMutantInfo> list = [] {
    std::vector<VerifierMutantInfo> v;
    for (const MutantDef& m : kMutants) v.push_back({m.name, m.bug_class, m.description});
    return v;
  }();
  return list;
}

Result<std::unique_ptr<Verifier>> MakeVerifierMutant(std::string_view name, std::string_view profile) {
  Result<const Profile*> found = ProfileByName(profile);
  if (!found.ok()) return found.error();
  for (const MutantDef& m : kMutants) {
    if (name == m.name) {
      return std::unique_ptr<Verifier>(
          std::make_unique<ExactVerifier>(**found, m.fault, "mutant:" + std::string(name)));
    }
  }
  std::string names;
  for (const MutantDef& m : kMutants) names += (names.empty() ? "" : ", ") + std::string(m.name);
  return InvalidArgument("unknown verifier mutant '" + std::string(name) + "'; known: " + names);
}

}  // namespace samplecheck::harness
