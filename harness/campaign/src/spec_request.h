// Inside the campaign library: one request of a speculative-decoding case, its rows and its laws (step 1-2 of
// spec_campaign.h), and what the verifier returns for it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/samplers/verifier.h"
#include "samplecheck/suites/spec_suite.h"

namespace samplecheck::harness {

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

// The request's rows (the target's g + 1, the draft's g) and laws, from `seed`. Errors name the request.
Result<Request> BuildRequest(const SpecRequestSpec& spec, const Profile& profile, uint64_t seed, std::string name);
// The draft tokens of trials first_trial .. first_trial + n - 1, drawn by the campaign from q_j.
void DrawDrafts(const Request& r, uint64_t first_trial, uint64_t n, std::vector<int32_t>& out);
bool SameResult(const VerifyResult& a, const VerifyResult& b);
std::string Show(const VerifyResult& r);

}  // namespace samplecheck::harness
