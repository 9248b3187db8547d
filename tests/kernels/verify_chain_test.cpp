// The CUDA chain verifier (kernels/include/samplecheck/kernels/verify_chain.h) against the exact verifier of
// reference/speculative.h (VerifyChain), token for token; batch invariance and determinism; the trial path
// (VerifyChainRepeated) equal to the batch path; every invalid input a Status or a per-request diagnosis naming the
// value; the `cuda` verifier of the harness against the `exact` one (scripted uniforms included). Label gpu: every
// test skips without a CUDA device.
//
// Token for token, and where the two may legitimately differ: the kernel's p and q are fp32 (the planner's
// ComputeProcessedDistribution, relative error <= ~3e-7 against the reference's long doubles), its draws are
// integer inverse CDFs over 2^-52 fixed-point weights. So a decision can differ only when its uniform lies within
// a few 1e-7 (relative) of the decision's boundary: the coin u_j within kCoinTol * (p/q) of p(x)/q(x); a residual
// draw's d_j within kDrawTol / residual_mass of a cumulative value of the residual (max(0, p - q) cancels: its
// absolute error ~1e-7 (p + q) becomes relative to the residual's mass); a bonus draw's d within kDrawTol of a
// cumulative value of p_{g+1}; or a target row with tokens the reference calls ambiguous (kept-set decisions
// within 64 fp32 ulps, docs/kernels.md). Every disagreement is classified with the reference: one that is not at
// such a boundary fails the test; the boundary ones are bounded by kMaxBoundaryShare of the requests (the chance
// of a uniform landing in those windows is ~1e-5 a request: the bound has a wide margin and is never reached by a
// correct kernel, while any systematic error (wrong stream, wrong rule) disagrees far from boundaries and fails).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels_test_support.h"
#include "samplecheck/kernels/verify_chain.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/samplers/cuda_verifier.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::kernels::testing {
namespace {

constexpr double kCoinTol = 2e-6;
constexpr double kDrawTol = 2e-6;
constexpr double kMaxBoundaryShare = 1.0 / 200;

uint16_t ToBf16Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
float FromBf16Bits(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// One random request as both sides see it (fp32 values: bf16 ones are already rounded).
struct Request {
  int32_t g = 0;
  std::vector<float> target;  // (g + 1) x vocab
  std::vector<float> draft;   // g x vocab (probabilities or logits)
  std::vector<int32_t> tokens;
  samplecheck::SamplingParams params, draft_params;
  std::vector<double> scripted;
};

struct Batch {
  int64_t vocab = 0;
  ChainDraftForm form = ChainDraftForm::kProbabilities;
  bool bf16 = false;
  Profile profile = Profile::kVllm;
  std::vector<Request> requests;
};

samplecheck::SamplingParams RandomParams(std::mt19937_64& rng, Profile profile, bool allow_greedy) {
  std::uniform_int_distribution<int> pick(0, allow_greedy ? 7 : 6);
  samplecheck::SamplingParams p;
  switch (pick(rng)) {
    case 0: break;
    case 1: p.temperature = 0.7; p.top_k = 20; break;
    case 2: p.top_p = 0.9; break;
    case 3: p.min_p = 0.05; p.temperature = 1.3; break;
    case 4: p.top_k = 50; p.top_p = 0.8; p.min_p = 0.02; break;
    case 5: p.temperature = 0.5; p.top_p = 0.95; break;
    case 6: p.top_k = 1; break;
    case 7: p.temperature = 0.0; break;  // greedy under both profiles
  }
  (void)profile;
  return p;
}

const samplecheck::Profile& RefProfile(Profile p) { return *FindProfile(p == Profile::kVllm ? "vllm" : "hf"); }

std::vector<float> Round(std::vector<float> v, bool bf16) {
  if (bf16) {
    for (float& x : v) x = FromBf16Bits(ToBf16Bits(x));
  }
  return v;
}

// The reference's draft distribution of position j.
Result<SparseDistribution> RefDraft(const Batch& b, const Request& r, int32_t j) {
  const std::span<const float> row(r.draft.data() + j * b.vocab, static_cast<size_t>(b.vocab));
  if (b.form == ChainDraftForm::kProbabilities) return DraftFromProbabilities(row);
  if (b.form == ChainDraftForm::kLogits) return DraftFromLogits(LogitsView::Fp32(row), r.draft_params, RefProfile(b.profile));
  return PointMass(r.tokens[j]);
}

int32_t DrawFrom(const SparseDistribution& d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  return SparseInverseCdfDraw(d, u(rng));
}

Request MakeRequest(std::mt19937_64& rng, int64_t vocab, int32_t g, ChainDraftForm form, bool bf16, Profile profile,
                    bool scripted) {
  Request r;
  r.g = g;
  std::uniform_real_distribution<double> unit(0, 1);
  const double sigma = unit(rng) < 0.5 ? 1.0 : 3.0;
  r.params = RandomParams(rng, profile, true);
  r.target = Round(RandomLogits((g + 1) * vocab, sigma, rng()), bf16);
  const bool close = unit(rng) < 0.5;  // drafts close to the target (perturbed logits) or far (independent)
  if (form != ChainDraftForm::kOneHot) {
    std::vector<float> dl(static_cast<size_t>(g * vocab));
    const std::vector<float> noise = RandomLogits(g * vocab, close ? 0.3 : sigma, rng());
    for (int64_t i = 0; i < g * vocab; ++i) dl[i] = (close ? r.target[i] : 0.0f) + noise[i];
    if (form == ChainDraftForm::kLogits) {
      r.draft = Round(dl, bf16);
      r.draft_params = RandomParams(rng, profile, false);
    } else {
      r.draft.resize(dl.size());
      for (int32_t j = 0; j < g; ++j) {  // softmax in fp32, as a draft model stores it
        float mx = -INFINITY;
        for (int64_t t = 0; t < vocab; ++t) mx = std::max(mx, dl[j * vocab + t]);
        double s = 0;
        for (int64_t t = 0; t < vocab; ++t) s += std::exp(static_cast<double>(dl[j * vocab + t] - mx));
        for (int64_t t = 0; t < vocab; ++t) {
          r.draft[j * vocab + t] = static_cast<float>(std::exp(static_cast<double>(dl[j * vocab + t] - mx)) / s);
        }
      }
    }
  }
  Batch tmp;
  tmp.vocab = vocab;
  tmp.form = form;
  tmp.profile = profile;
  r.tokens.assign(static_cast<size_t>(g), 0);
  for (int32_t j = 0; j < g; ++j) {
    if (form == ChainDraftForm::kOneHot) {
      // n-gram style: half the time the target's likeliest kept token, else a uniform token
      std::uniform_int_distribution<int64_t> tok(0, vocab - 1);
      r.tokens[j] = static_cast<int32_t>(tok(rng));
      if (unit(rng) < 0.5) {
        auto p = ComputeDistribution(LogitsView::Fp32(std::span<const float>(r.target.data() + j * vocab, vocab)),
                                     r.params, RefProfile(profile));
        if (p.ok()) r.tokens[j] = DrawFrom(FromProcessed(*p), rng);
      }
    } else {
      auto q = RefDraft(tmp, r, j);
      EXPECT_TRUE(q.ok()) << q.error().message;
      r.tokens[j] = q.ok() ? DrawFrom(*q, rng) : 0;
    }
  }
  r.params.seed = rng();
  r.params.offset = unit(rng) < 0.2 ? (uint64_t{1} << 32) - 3 : rng() >> 8;
  if (scripted) {
    r.scripted.resize(static_cast<size_t>(2 * (g + 1)));
    for (double& v : r.scripted) v = unit(rng) < 0.1 ? 0.0 : unit(rng);
  }
  return r;
}

struct DeviceOut {
  std::vector<int32_t> accepted, emitted;
  std::vector<ChainDiag> diag;
};

// Runs a batch through VerifyChainBatch. order: the requests' order in the launch (batch invariance).
::testing::AssertionResult RunBatch(const Batch& b, DeviceOut* out) {
  const size_t n = b.requests.size();
  std::vector<float> target, draft;
  std::vector<uint16_t> target16, draft16;
  std::vector<int32_t> g, tokens;
  std::vector<uint64_t> seed, offset;
  std::vector<double> t, tp, mp, dt, dtp, dmp, scripted;
  std::vector<int64_t> k, dk;
  bool any_scripted = false;
  for (const Request& r : b.requests) any_scripted |= !r.scripted.empty();
  for (const Request& r : b.requests) {
    target.insert(target.end(), r.target.begin(), r.target.end());
    draft.insert(draft.end(), r.draft.begin(), r.draft.end());
    g.push_back(r.g);
    tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
    seed.push_back(r.params.seed);
    offset.push_back(r.params.offset);
    t.push_back(r.params.temperature);
    k.push_back(r.params.top_k);
    tp.push_back(r.params.top_p);
    mp.push_back(r.params.min_p);
    dt.push_back(r.draft_params.temperature);
    dk.push_back(r.draft_params.top_k);
    dtp.push_back(r.draft_params.top_p);
    dmp.push_back(r.draft_params.min_p);
    if (any_scripted) {
      std::vector<double> s(kChainScriptedStride, 0.5);
      std::copy(r.scripted.begin(), r.scripted.end(), s.begin());
      scripted.insert(scripted.end(), s.begin(), s.end());
    }
  }
  for (float v : target) target16.push_back(ToBf16Bits(v));
  for (float v : draft) draft16.push_back(ToBf16Bits(v));
  DeviceArray<float> d_target(target), d_draft(draft.empty() ? std::vector<float>{0.f} : draft);
  DeviceArray<uint16_t> d_target16(target16), d_draft16(draft16.empty() ? std::vector<uint16_t>{0} : draft16);
  DeviceArray<int32_t> d_tokens(tokens.empty() ? std::vector<int32_t>{0} : tokens);
  DeviceArray<uint64_t> d_seed(seed), d_offset(offset);
  DeviceArray<double> d_scripted(scripted.empty() ? std::vector<double>{0.0} : scripted);
  DeviceArray<int32_t> d_acc(n), d_emit(n * kChainEmittedStride);
  DeviceArray<ChainDiag> d_diag(n);
  ChainBatch c;
  c.batch = static_cast<int64_t>(n);
  c.vocab = b.vocab;
  c.g = g.data();
  c.target_dtype = b.bf16 ? DType::kBFloat16 : DType::kFloat32;
  c.target = b.bf16 ? static_cast<const void*>(d_target16.get()) : d_target.get();
  c.target_params.temperature.values = t.data();
  c.target_params.top_k.values = k.data();
  c.target_params.top_p.values = tp.data();
  c.target_params.min_p.values = mp.data();
  c.draft_form = b.form;
  const bool draft16_in = b.bf16 && b.form == ChainDraftForm::kLogits;
  c.draft_dtype = draft16_in ? DType::kBFloat16 : DType::kFloat32;
  c.draft = draft16_in ? static_cast<const void*>(d_draft16.get()) : d_draft.get();
  c.draft_params.temperature.values = dt.data();
  c.draft_params.top_k.values = dk.data();
  c.draft_params.top_p.values = dtp.data();
  c.draft_params.min_p.values = dmp.data();
  c.draft_tokens = d_tokens.get();
  c.seed = d_seed.get();
  c.offset = d_offset.get();
  c.scripted = any_scripted ? d_scripted.get() : nullptr;
  const Status st = VerifyChainBatch(c, b.profile, {d_acc.get(), d_emit.get(), d_diag.get()}, nullptr);
  if (!st.ok()) return ::testing::AssertionFailure() << "VerifyChainBatch: " << st.message;
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "cuda error";
  out->accepted = d_acc.Download();
  out->emitted = d_emit.Download();
  out->diag = d_diag.Download();
  return ::testing::AssertionSuccess();
}

// Runs `trials` trials of one request through VerifyChainRepeated: the request's target, draft and parameters, trial
// i's draft tokens at trial_tokens[i g .. i g + g) and its offset base.params.offset + i (g + 1). out->emitted holds
// g + 1 slots a trial.
::testing::AssertionResult RunRepeated(const Request& base, int64_t vocab, int32_t g, ChainDraftForm form,
                                       const std::vector<int32_t>& trial_tokens, int trials, DeviceOut* out) {
  DeviceArray<float> d_target(base.target), d_draft(base.draft.empty() ? std::vector<float>{0.f} : base.draft);
  DeviceArray<int32_t> d_tokens(trial_tokens), d_acc(trials), d_emit(static_cast<size_t>(trials) * (g + 1));
  DeviceArray<ChainDiag> d_diag(trials);
  DeviceArray<uint64_t> d_seed(std::vector<uint64_t>{base.params.seed});
  DeviceArray<uint64_t> d_offset(std::vector<uint64_t>{base.params.offset});
  ChainBatch c;
  c.batch = 1;
  c.vocab = vocab;
  c.g_scalar = g;
  c.target = d_target.get();
  // One request: its filter parameters as scalars (seed and offset go in their own arrays below).
  auto scalars = [](const samplecheck::SamplingParams& from, SamplingParams* to) {
    to->temperature.scalar = from.temperature;
    to->top_k.scalar = from.top_k;
    to->top_p.scalar = from.top_p;
    to->min_p.scalar = from.min_p;
  };
  scalars(base.params, &c.target_params);
  c.draft_form = form;
  c.draft = d_draft.get();
  scalars(base.draft_params, &c.draft_params);
  c.seed = d_seed.get();
  c.offset = d_offset.get();
  const Status st =
      VerifyChainRepeated(c, d_tokens.get(), trials, Profile::kVllm, {d_acc.get(), d_emit.get(), d_diag.get()}, nullptr);
  if (!st.ok()) return ::testing::AssertionFailure() << "VerifyChainRepeated: " << st.message;
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "cuda error";
  out->accepted = d_acc.Download();
  out->emitted = d_emit.Download();
  return ::testing::AssertionSuccess();
}

// Distance from u to the nearest inclusive cumulative value of d (ascending ids).
double CdfDistance(const SparseDistribution& d, double u) {
  long double run = 0;
  double best = 1;
  for (long double p : d.prob) {
    run += p;
    best = std::min(best, std::fabs(static_cast<double>(run) - u));
  }
  return best;
}

enum class Verdict { kEqual, kBoundary, kMismatch };

// Compares one request's device result with the exact verifier; explains a mismatch.
Verdict Judge(const Batch& b, const Request& r, int32_t accepted, const int32_t* emitted, std::string* why) {
  ChainInput in;
  for (int32_t j = 0; j <= r.g; ++j) {
    in.target.push_back(LogitsView::Fp32(std::span<const float>(r.target.data() + j * b.vocab, b.vocab)));
  }
  in.params = r.params;
  in.profile = &RefProfile(b.profile);
  in.draft_form = b.form == ChainDraftForm::kProbabilities ? DraftForm::kProbabilities
                  : b.form == ChainDraftForm::kLogits    ? DraftForm::kLogits
                                                          : DraftForm::kOneHot;
  for (int32_t j = 0; j < r.g && b.form != ChainDraftForm::kOneHot; ++j) {
    in.draft_rows.emplace_back(r.draft.data() + j * b.vocab, static_cast<size_t>(b.vocab));
  }
  in.draft_params = r.draft_params;
  in.draft_tokens = r.tokens;
  auto laws = ComputeChainLaws(in);
  if (!laws.ok()) {
    *why = "reference: " + laws.error().message;
    return Verdict::kMismatch;
  }
  const SpecUniforms uni{r.scripted};
  auto ref = VerifyChain(*laws, r.tokens, r.params.seed, r.params.offset, uni);
  if (!ref.ok()) {
    *why = "reference verify: " + ref.error().message;
    return Verdict::kMismatch;
  }
  std::vector<int32_t> dev(emitted, emitted + std::max(accepted, 0) + 1);
  if (accepted == ref->accepted && dev == ref->emitted) return Verdict::kEqual;
  bool ambiguous = !laws->bonus.ambiguous.empty();
  for (int32_t j = 0; j < r.g; ++j) {
    // the target rows' ambiguity: recompute (PositionLaw keeps p as a sparse distribution only)
    auto p = ComputeDistribution(in.target[j], r.params, *in.profile);
    ambiguous |= p.ok() && !p->ambiguous.empty();
  }
  *why = "device accepted " + std::to_string(accepted) + " vs reference " + std::to_string(ref->accepted);
  if (ambiguous) return Verdict::kBoundary;
  const int32_t common = std::min(accepted, ref->accepted);
  if (accepted < 0) return Verdict::kMismatch;
  for (int32_t j = 0; j < common; ++j) {
    if (dev[j] != ref->emitted[j]) return Verdict::kMismatch;
  }
  const int32_t j = common + 1;  // 1-based position where they part
  if (accepted != ref->accepted) {
    if (j > r.g) return Verdict::kMismatch;
    const PositionLaw& law = laws->positions[j - 1];
    if (law.greedy) return Verdict::kMismatch;
    const int32_t x = r.tokens[j - 1];
    const double ratio = static_cast<double>(law.p.Prob(x) / law.q.Prob(x));
    const double u = uni.Coin(r.params.seed, r.params.offset, j);
    *why += ": coin " + std::to_string(u) + " vs p/q " + std::to_string(ratio);
    return std::fabs(u - ratio) <= kCoinTol * std::max(ratio, 1e-300) ? Verdict::kBoundary : Verdict::kMismatch;
  }
  const double d = uni.Draw(r.params.seed, r.params.offset, j);
  if (j <= r.g) {
    const PositionLaw& law = laws->positions[j - 1];
    if (law.greedy) return Verdict::kMismatch;
    const double mass = static_cast<double>(law.residual_mass);
    const double dist = CdfDistance(law.residual, d);
    *why += ": residual draw d " + std::to_string(d) + ", distance " + std::to_string(dist) + ", residual mass " +
            std::to_string(mass);
    return dist <= kDrawTol / std::max(mass, 1e-12) ? Verdict::kBoundary : Verdict::kMismatch;
  }
  if (laws->bonus.greedy) return Verdict::kMismatch;
  const double dist = CdfDistance(FromProcessed(laws->bonus), d);
  *why += ": bonus draw d " + std::to_string(d) + ", distance " + std::to_string(dist);
  return dist <= kDrawTol ? Verdict::kBoundary : Verdict::kMismatch;
}

struct Tally {
  int64_t requests = 0, boundary = 0, accepted_total = 0, rejections = 0;
};

void CheckBatch(const Batch& b, Tally* tally) {
  DeviceOut out;
  ASSERT_TRUE(RunBatch(b, &out));
  for (size_t i = 0; i < b.requests.size(); ++i) {
    ASSERT_EQ(out.diag[i].code, kChainOk) << DescribeChainDiag(out.diag[i], static_cast<int64_t>(i), b.vocab);
    std::string why;
    const Verdict v = Judge(b, b.requests[i], out.accepted[i], &out.emitted[i * kChainEmittedStride], &why);
    ++tally->requests;
    tally->accepted_total += std::max(out.accepted[i], 0);
    tally->rejections += out.accepted[i] < b.requests[i].g ? 1 : 0;
    if (v == Verdict::kBoundary) ++tally->boundary;
    EXPECT_NE(v, Verdict::kMismatch) << "request " << i << " (V " << b.vocab << ", g " << b.requests[i].g
                                      << ", form " << static_cast<int>(b.form) << ", bf16 " << b.bf16 << ", profile "
                                      << ProfileName(b.profile) << "): " << why;
  }
}

TEST(VerifyChain, TokenForTokenAgainstTheExactVerifier) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937_64 rng(20251123);
  Tally tally;
  const bool small = UnderSanitizer();
  const std::vector<int64_t> vocabs = small ? std::vector<int64_t>{2, 7, 1000}
                                            : std::vector<int64_t>{2, 3, 17, 257, 1000, 4096, 32000, 128256};
  for (int64_t vocab : vocabs) {
    for (ChainDraftForm form : {ChainDraftForm::kProbabilities, ChainDraftForm::kLogits, ChainDraftForm::kOneHot}) {
      for (bool bf16 : {false, true}) {
        for (Profile profile : {Profile::kVllm, Profile::kHf}) {
          Batch b;
          b.vocab = vocab;
          b.form = form;
          b.bf16 = bf16;
          b.profile = profile;
          const int n = small ? 3 : vocab >= 32000 ? 3 : 24;
          const int max_g = vocab >= 32000 ? 4 : 16;
          std::uniform_int_distribution<int32_t> g(0, max_g);
          const bool scripted = (vocab % 2 == 1) && !bf16;
          for (int i = 0; i < n; ++i) b.requests.push_back(MakeRequest(rng, vocab, g(rng), form, bf16, profile, scripted));
          CheckBatch(b, &tally);
        }
      }
    }
  }
  RecordProperty("requests", static_cast<int>(tally.requests));
  std::printf("token for token: %lld requests, %lld tokens accepted, %lld rejections, %lld boundary disagreements\n",
              static_cast<long long>(tally.requests), static_cast<long long>(tally.accepted_total),
              static_cast<long long>(tally.rejections), static_cast<long long>(tally.boundary));
  EXPECT_GT(tally.rejections, tally.requests / 10) << "the cases must exercise rejections";
  EXPECT_LE(tally.boundary, std::max<int64_t>(1, static_cast<int64_t>(tally.requests * kMaxBoundaryShare)));
}

// Trial i of a repeated-trials test: r (base's rows and parameters) at offset base + i (g + 1), its draft tokens
// drawn from base's draft law q_j (one-hot drafts: uniform ids when one_hot_draws, else r's own), appended to batch
// and to trial_tokens.
void AppendTrial(Request r, const Request& base, int32_t g, int i, bool one_hot_draws, std::mt19937_64& rng,
                 Batch* batch, std::vector<int32_t>* trial_tokens) {
  r.params.offset = base.params.offset + static_cast<uint64_t>(i) * static_cast<uint64_t>(g + 1);
  for (int32_t j = 0; j < g; ++j) {
    if (batch->form == ChainDraftForm::kOneHot) {
      if (one_hot_draws) r.tokens[j] = static_cast<int32_t>(rng() % static_cast<uint64_t>(batch->vocab));
      continue;
    }
    auto q = RefDraft(*batch, base, j);
    ASSERT_TRUE(q.ok());
    r.tokens[j] = DrawFrom(*q, rng);
  }
  trial_tokens->insert(trial_tokens->end(), r.tokens.begin(), r.tokens.end());
  batch->requests.push_back(r);
}

// The trials of `batch` (base with trial_tokens, offsets base + i (g + 1)) verified by VerifyChainRepeated equal
// VerifyChainBatch token for token; counts the trials that rejected a draft into *rejections.
void ExpectRepeatedEqualsBatch(const Batch& batch, const Request& base, int32_t g,
                               const std::vector<int32_t>& trial_tokens, int trials, const std::string& label,
                               int* rejections) {
  DeviceOut ref;
  ASSERT_TRUE(RunBatch(batch, &ref));
  DeviceOut repeated;
  ASSERT_TRUE(RunRepeated(base, batch.vocab, g, batch.form, trial_tokens, trials, &repeated));
  for (int i = 0; i < trials; ++i) {
    ASSERT_EQ(repeated.accepted[i], ref.accepted[i]) << label << "trial " << i;
    *rejections += repeated.accepted[i] < g;
    for (int k = 0; k <= repeated.accepted[i]; ++k) {
      ASSERT_EQ(repeated.emitted[i * (g + 1) + k], ref.emitted[i * kChainEmittedStride + k])
          << label << "trial " << i << ", slot " << k;
    }
  }
}

Batch SmallMixedBatch(uint64_t seed, ChainDraftForm form, int n) {
  std::mt19937_64 rng(seed);
  Batch b;
  b.vocab = 1000;
  b.form = form;
  std::uniform_int_distribution<int32_t> g(0, 16);
  for (int i = 0; i < n; ++i) b.requests.push_back(MakeRequest(rng, b.vocab, g(rng), form, false, b.profile, false));
  return b;
}

TEST(VerifyChain, BatchInvariantAndDeterministic) {
  SKIP_WITHOUT_DEVICE();
  for (ChainDraftForm form : {ChainDraftForm::kProbabilities, ChainDraftForm::kLogits, ChainDraftForm::kOneHot}) {
    const Batch b = SmallMixedBatch(7 + static_cast<int>(form), form, 32);
    DeviceOut whole, again;
    ASSERT_TRUE(RunBatch(b, &whole));
    ASSERT_TRUE(RunBatch(b, &again));
    EXPECT_EQ(whole.accepted, again.accepted);
    EXPECT_EQ(whole.emitted, again.emitted);
    Batch reversed = b;
    std::reverse(reversed.requests.begin(), reversed.requests.end());
    DeviceOut rev;
    ASSERT_TRUE(RunBatch(reversed, &rev));
    for (size_t i = 0; i < b.requests.size(); ++i) {
      Batch alone = b;
      alone.requests = {b.requests[i]};
      DeviceOut one;
      ASSERT_TRUE(RunBatch(alone, &one));
      const size_t ri = b.requests.size() - 1 - i;
      EXPECT_EQ(one.accepted[0], whole.accepted[i]) << "request " << i;
      EXPECT_EQ(rev.accepted[ri], whole.accepted[i]) << "request " << i;
      for (int k = 0; k < kChainEmittedStride; ++k) {
        EXPECT_EQ(one.emitted[k], whole.emitted[i * kChainEmittedStride + k]) << "request " << i << " slot " << k;
        EXPECT_EQ(rev.emitted[ri * kChainEmittedStride + k], whole.emitted[i * kChainEmittedStride + k]);
      }
    }
  }
}

// VerifyChainRepeated's trial i equals VerifyChainBatch of that trial alone (offset + i (g + 1)).
TEST(VerifyChain, RepeatedTrialsEqualTheBatchPath) {
  SKIP_WITHOUT_DEVICE();
  for (ChainDraftForm form : {ChainDraftForm::kProbabilities, ChainDraftForm::kLogits, ChainDraftForm::kOneHot}) {
    std::mt19937_64 rng(99 + static_cast<int>(form));
    Batch one;
    one.vocab = 500;
    one.form = form;
    const Request base = MakeRequest(rng, one.vocab, 5, form, false, Profile::kVllm, false);
    const int trials = UnderSanitizer() ? 16 : 512;
    // trials: draft tokens from q (a fresh draw per trial), as the campaign does
    Batch batch = one;
    std::vector<int32_t> trial_tokens;
    for (int i = 0; i < trials; ++i) {
      Request r = MakeRequest(rng, one.vocab, 5, form, false, Profile::kVllm, false);
      r.target = base.target;
      r.draft = base.draft;
      r.params = base.params;
      r.draft_params = base.draft_params;
      // tokens of positive draft probability under the base request; one-hot drafts keep r's own
      ASSERT_NO_FATAL_FAILURE(AppendTrial(r, base, 5, i, false, rng, &batch, &trial_tokens));
    }
    int rejections = 0;
    ASSERT_NO_FATAL_FAILURE(ExpectRepeatedEqualsBatch(batch, base, 5, trial_tokens, trials, "", &rejections));
    if (!UnderSanitizer()) {
      EXPECT_GT(rejections, 0);
    }
  }
}

// The batch path's chunked draws (chunk sums, then a scan of one chunk) against the trial path's whole-row prefix
// searches, exactly, at vocabs of many chunks (the last one partial) and every draft form: trial i of
// VerifyChainRepeated equals VerifyChainBatch of that trial alone, token for token, with no boundary allowance.
TEST(VerifyChain, ChunkedDrawsEqualWholeRowSearches) {
  SKIP_WITHOUT_DEVICE();
  const int32_t g = 3;
  for (int64_t vocab : {int64_t{2049}, int64_t{70001}}) {
    for (ChainDraftForm form : {ChainDraftForm::kProbabilities, ChainDraftForm::kLogits, ChainDraftForm::kOneHot}) {
      std::mt19937_64 rng(311 + vocab + static_cast<int>(form));
      Batch one;
      one.vocab = vocab;
      one.form = form;
      const Request base = MakeRequest(rng, vocab, g, form, false, Profile::kVllm, false);
      const int trials = UnderSanitizer() ? 8 : vocab > 10000 ? 48 : 256;
      Batch batch = one;
      std::vector<int32_t> trial_tokens;
      for (int i = 0; i < trials; ++i) {
        ASSERT_NO_FATAL_FAILURE(AppendTrial(base, base, g, i, true, rng, &batch, &trial_tokens));
      }
      int rejections = 0;
      const std::string label = "V " + std::to_string(vocab) + ", form " + std::to_string(static_cast<int>(form)) + ", ";
      ASSERT_NO_FATAL_FAILURE(ExpectRepeatedEqualsBatch(batch, base, g, trial_tokens, trials, label, &rejections));
    }
  }
}

// One random request of g = 3 over V = 64 with draft probabilities (vllm), from rng_seed.
Batch OneProbabilityRequest(uint64_t rng_seed) {
  std::mt19937_64 rng(rng_seed);
  Batch b;
  b.vocab = 64;
  b.form = ChainDraftForm::kProbabilities;
  b.requests.push_back(MakeRequest(rng, 64, 3, b.form, false, Profile::kVllm, false));
  return b;
}

TEST(VerifyChain, InvalidInputsAreNamed) {
  SKIP_WITHOUT_DEVICE();
  const Batch b = OneProbabilityRequest(5);
  DeviceOut out;
  // host-validated: g and parameters
  {
    Batch bad = b;
    bad.requests[0].g = 17;
    bad.requests[0].target.resize(18 * 64, 0.f);
    bad.requests[0].draft.resize(17 * 64, 1.f / 64);
    bad.requests[0].tokens.resize(17, 0);
    const ::testing::AssertionResult r = RunBatch(bad, &out);
    ASSERT_FALSE(r);
    EXPECT_NE(std::string(r.message()).find("g = 17 is outside [0, 16]"), std::string::npos) << r.message();
  }
  {
    Batch bad = b;
    bad.requests[0].params.top_p = 1.5;
    const ::testing::AssertionResult r = RunBatch(bad, &out);
    ASSERT_FALSE(r);
    EXPECT_NE(std::string(r.message()).find("top_p = 1.5 is outside (0, 1]"), std::string::npos) << r.message();
  }
  auto expect_diag = [&](const Batch& bad, int32_t code, int32_t position, int32_t token, const char* text) {
    DeviceOut o;
    ASSERT_TRUE(RunBatch(bad, &o));
    EXPECT_EQ(o.accepted[0], -1);
    EXPECT_EQ(o.diag[0].code, code);
    EXPECT_EQ(o.diag[0].position, position);
    EXPECT_EQ(o.diag[0].token, token);
    const std::string msg = DescribeChainDiag(o.diag[0], 0, bad.vocab);
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
    for (int k = 0; k < kChainEmittedStride; ++k) EXPECT_EQ(o.emitted[k], kInvalidToken);
  };
  {
    Batch bad = b;
    bad.requests[0].target[2 * 64 + 5] = NAN;
    expect_diag(bad, kChainTargetRowInvalid, 3, -1, "target row 2 cannot be sampled");
  }
  // The chain reaches a position with plain parameters and scripted coins 0 (accept iff p > 0).
  auto reach = [](Batch* bad) {
    bad->requests[0].params.temperature = 1.0;
    bad->requests[0].params.top_k = -1;
    bad->requests[0].params.top_p = 1.0;
    bad->requests[0].params.min_p = 0.0;
    bad->requests[0].scripted.assign(8, 0.0);
  };
  {
    Batch bad = b;  // the value read at position 2: q_2(x_2)
    bad.requests[0].draft[64 + 9] = -0.25f;
    bad.requests[0].tokens[1] = 9;
    reach(&bad);
    expect_diag(bad, kChainDraftValueInvalid, 2, 9, "draft probability of token 9 is -0.25");
  }
  {
    Batch bad = b;  // the rejected position's draft row is read whole (the residual is normalized by its sum)
    for (int t = 0; t < 64; ++t) bad.requests[0].draft[t] *= 0.5f;
    bad.requests[0].target[bad.requests[0].tokens[0]] = -INFINITY;  // p_1(x_1) = 0: rejected whatever the coin
    reach(&bad);
    expect_diag(bad, kChainDraftSumInvalid, 1, -1, "sum to 0.4999");  // the fp32 halves sum to 0.4999999994
  }
  {
    Batch bad = b;
    bad.requests[0].draft[2 * 64 + 11] = 0.0f;
    bad.requests[0].draft[2 * 64 + 12] += 1e-6f;
    bad.requests[0].tokens[2] = 11;
    reach(&bad);  // the chain must reach position 3
    expect_diag(bad, kChainDraftTokenImpossible, 3, 11, "draft token 11 at position 3 has draft probability 0");
  }
  {
    Batch bad = b;
    bad.requests[0].scripted.assign(8, 0.5);
    bad.requests[0].scripted[3] = 1.0;
    expect_diag(bad, kChainBadParams, 0, -1, "scripted uniform");
  }
  {
    Batch bad = b;
    bad.form = ChainDraftForm::kLogits;
    for (float& v : bad.requests[0].draft) v = std::log(std::max(v, 1e-30f));
    bad.requests[0].draft[64 + 3] = NAN;
    expect_diag(bad, kChainDraftRowInvalid, 2, -1, "draft row 1");
  }
  {
    Batch bad = b;
    bad.form = ChainDraftForm::kOneHot;
    bad.requests[0].draft.clear();
    bad.requests[0].tokens[0] = 64;
    expect_diag(bad, kChainDraftTokenImpossible, 1, 64, "outside [0, 64)");
  }
}

// What the batch path reads (docs/kernels.md "What the verifier reads"): x_j, p_j(x_j), q_j(x_j) and the row
// statuses up to the position that ends the chain, and whole rows only where a decision needs them. A draft row past
// the rejection is not read, so a bad value in it is not diagnosed (the request is verified as its read values
// say); the same bad value in the rejected position's row (read whole for the residual's normalization) is.
TEST(VerifyChain, RowsThatAreNotReadAreNotChecked) {
  SKIP_WITHOUT_DEVICE();
  Batch b = OneProbabilityRequest(21);
  Request& r = b.requests[0];
  r.params = samplecheck::SamplingParams{};
  r.target[r.tokens[0]] = -INFINITY;  // p_1(x_1) = 0: position 1 is rejected whatever the coin
  DeviceOut out;
  {
    Batch past = b;
    past.requests[0].draft[2 * 64 + 5] = NAN;  // draft row 2 (position 3): never read
    ASSERT_TRUE(RunBatch(past, &out));
    EXPECT_EQ(out.diag[0].code, kChainOk) << DescribeChainDiag(out.diag[0], 0, 64);
    EXPECT_EQ(out.accepted[0], 0);
    EXPECT_GE(out.emitted[0], 0);
    EXPECT_LT(out.emitted[0], 64);
  }
  {
    Batch read = b;
    read.requests[0].draft[5] = NAN;  // draft row 0: the residual's row, read whole
    ASSERT_TRUE(RunBatch(read, &out));
    EXPECT_EQ(out.accepted[0], -1);
    EXPECT_EQ(out.diag[0].code, kChainDraftValueInvalid);
    EXPECT_EQ(out.diag[0].position, 1);
    EXPECT_EQ(out.diag[0].token, 5);
  }
}

// q is normalized by its row's sum (DraftFromProbabilities). The batch path decides without the sum while the coin
// is outside the band a valid sum (within 1e-3 of 1) can move; inside it, it reads the row. Rows summing to
// 1 +- 6e-4 with coins 3e-4 (relative) on either side of p/q: the normalized test decides opposite to the raw one,
// so only a path that read the sum passes.
TEST(VerifyChain, CoinsInTheNormalizationBandReadTheDraftRow) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937_64 rng(22);
  Batch b;
  b.vocab = 64;
  b.form = ChainDraftForm::kProbabilities;
  for (const double scale : {1.0 + 6e-4, 1.0 - 6e-4}) {
    Request r = MakeRequest(rng, 64, 1, b.form, false, Profile::kVllm, false);
    r.params = samplecheck::SamplingParams{};
    r.params.seed = 5;
    auto p = ComputeDistribution(LogitsView::Fp32(std::span<const float>(r.target.data(), 64)), r.params,
                                 RefProfile(Profile::kVllm));
    ASSERT_TRUE(p.ok());
    const SparseDistribution pd = FromProcessed(*p);
    double qsum = 0;
    for (int t = 0; t < 64; ++t) qsum += r.draft[t];
    int32_t x = 0;  // the draft's favourite against the target: p / q < 1 there
    for (int32_t t = 1; t < 64; ++t) {
      if (r.draft[t] / pd.Prob(t) > r.draft[x] / pd.Prob(x)) x = t;
    }
    for (float& v : r.draft) v = static_cast<float>(v * scale);
    r.tokens[0] = x;
    const double ratio = static_cast<double>(pd.Prob(x)) / (r.draft[x] / (qsum * scale));
    ASSERT_LT(ratio, 0.99);
    r.scripted = {ratio * (scale > 1.0 ? 1.0 - 3e-4 : 1.0 + 3e-4), 0.5, 0.5, 0.5};
    b.requests.push_back(r);
  }
  DeviceOut out;
  ASSERT_TRUE(RunBatch(b, &out));
  EXPECT_EQ(out.diag[0].code, kChainOk);
  EXPECT_EQ(out.diag[1].code, kChainOk);
  EXPECT_EQ(out.accepted[0], 1) << "u * q(x) / qsum < p(x): accepted (the raw q would reject it)";
  EXPECT_EQ(out.accepted[1], 0) << "u * q(x) / qsum >= p(x): rejected (the raw q would accept it)";
}

// The harness's cuda verifier against the exact one: Verify (mixed forms and vocabs in one call, scripted streams),
// VerifyRepeated, and the same error messages for invalid requests.
TEST(CudaVerifier, EqualsTheExactVerifier) {
  SKIP_WITHOUT_DEVICE();
  using harness::VerifyRequest;
  using harness::VerifyResult;
  for (const char* profile : {"vllm", "hf"}) {
    auto cuda = harness::MakeCudaVerifier(profile);
    ASSERT_TRUE(cuda.ok()) << cuda.error().message;
    auto exact = harness::MakeExactVerifier(profile);
    ASSERT_TRUE(exact.ok());
    EXPECT_TRUE((*cuda)->GetCapabilities().scripted_uniforms);
    std::mt19937_64 rng(profile[0]);
    std::vector<Request> store;
    std::vector<VerifyRequest> requests;
    const Profile kp = profile[0] == 'v' ? Profile::kVllm : Profile::kHf;
    const ChainDraftForm forms[] = {ChainDraftForm::kProbabilities, ChainDraftForm::kLogits, ChainDraftForm::kOneHot};
    store.reserve(48);
    for (int i = 0; i < 48; ++i) {
      const ChainDraftForm form = forms[(i / 4) % 3];
      const int64_t vocab = i % 8 < 4 ? 100 : 33;
      store.push_back(MakeRequest(rng, vocab, static_cast<int32_t>(rng() % 9), form, false, kp, i % 5 == 0));
      const Request& r = store.back();
      VerifyRequest q;
      q.target = r.target.data();
      q.vocab = vocab;
      q.g = r.g;
      q.draft_tokens = r.tokens.data();
      q.draft_form = form == ChainDraftForm::kProbabilities ? DraftForm::kProbabilities
                     : form == ChainDraftForm::kLogits      ? DraftForm::kLogits
                                                            : DraftForm::kOneHot;
      q.draft = r.draft.empty() ? nullptr : r.draft.data();
      q.params = r.params;
      q.draft_params = r.draft_params;
      q.uniforms = r.scripted;
      requests.push_back(q);
    }
    std::vector<VerifyResult> a(requests.size()), e(requests.size());
    ASSERT_TRUE((*cuda)->Verify(requests, a).ok());
    ASSERT_TRUE((*exact)->Verify(requests, e).ok());
    int differ = 0;
    for (size_t i = 0; i < requests.size(); ++i) differ += a[i].accepted != e[i].accepted || a[i].emitted != e[i].emitted;
    EXPECT_LE(differ, 1) << "token-for-token (boundary cases are classified in VerifyChain.TokenForToken...)";
    // VerifyRepeated: many trials of one request through the device trial path against the exact verifier.
    VerifyRequest one = requests[1];
    one.draft_tokens = nullptr;  // as the campaign calls it: the trials' tokens only in the span
    const int trials = UnderSanitizer() ? 64 : 20000;
    std::vector<int32_t> tokens;
    for (int i = 0; i < trials; ++i) tokens.insert(tokens.end(), requests[1].draft_tokens, requests[1].draft_tokens + one.g);
    std::vector<VerifyResult> ra(trials), re(trials);
    ASSERT_TRUE((*cuda)->VerifyRepeated(one, tokens, ra).ok());
    ASSERT_TRUE((*exact)->VerifyRepeated(one, tokens, re).ok());
    int rdiff = 0;
    for (int i = 0; i < trials; ++i) rdiff += ra[i].accepted != re[i].accepted || ra[i].emitted != re[i].emitted;
    EXPECT_LE(rdiff, std::max(1, trials / 500)) << "repeated trials differing from the exact verifier";
    // The same message as the exact verifier for bad parameters; a NaN target row: accepted 0, no tokens.
    VerifyRequest bad = requests[0];
    bad.params.min_p = 2.0;
    std::vector<VerifyResult> one_result(1);
    const samplecheck::Status sa = (*cuda)->Verify({&bad, 1}, one_result);
    const samplecheck::Status se = (*exact)->Verify({&bad, 1}, one_result);
    ASSERT_FALSE(sa.ok());
    ASSERT_FALSE(se.ok());
    EXPECT_NE(sa.error().message.find("min_p = 2"), std::string::npos) << sa.error().message;
    std::vector<float> nan_target(store[0].target);
    nan_target[0] = NAN;
    VerifyRequest nan = requests[0];
    nan.target = nan_target.data();
    ASSERT_TRUE((*cuda)->Verify({&nan, 1}, one_result).ok());
    EXPECT_EQ(one_result[0].accepted, 0);
    EXPECT_EQ(one_result[0].emitted[0], kInvalidToken);
  }
}

}  // namespace
}  // namespace samplecheck::kernels::testing
