// Inside the campaign library: the Draw stage of speculative-decoding campaigns. A case's trials through the
// verifier (one VerifyRepeated chunk at a time for a request, one Verify call per trial for a batch), the first
// trials again alone (determinism, batch invariance), the scripted-coin probes; tallied per request for the Judge
// stage (spec_campaign.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine.h"
#include "samplecheck/checks/checks.h"
#include "spec_request.h"
#include "stream_draw.h"

namespace samplecheck::harness {

// A case of a spec suite, planned: its requests (one, or a batch) and its trials.
struct SpecCaseWork {
  const SpecCaseSpec* spec = nullptr;
  uint64_t case_seed = 0;
  std::vector<Request> requests;
  uint64_t trials = 0;
};

// Tallies of one request's trials.
struct Tally {
  std::vector<std::vector<uint64_t>> pos;       // g + 1 histograms
  std::vector<std::vector<uint64_t>> residual;  // g histograms
  std::vector<uint64_t> reached, rejected, invalid;
  std::vector<uint64_t> length;                 // g + 1
  uint64_t structure = 0;
  std::string structure_finding;
  std::vector<VerifyResult> first;              // the first kStreamTrials results (determinism: the first 64)
  std::vector<int32_t> first_drafts;
  std::vector<int32_t> lengths;                 // every trial's accepted length, in trial (step) order

  void Init(int32_t g, int64_t V);
  void Add(const VerifyResult& r, std::span<const int32_t> drafts, int32_t g, int64_t V);
};

// What a case drew: every request's tally and its "length" evidence (structure, determinism, batch invariance,
// scripted coins), and the verifier's error ("" when none).
struct SpecDrawn {
  std::vector<Tally> tallies;
  std::vector<SpecEvidence> length;
  std::vector<StreamDraws> stream;          // per request: seeds, a fresh verifier, adjacent trials (stream.h)
  std::vector<std::string> verifier_error;  // per request: the verifier's first error up to its checks
};

SpecDrawn DrawSpecCase(Verifier& verifier, FreshVerifier& fresh, const SpecCaseWork& w,
                       const VerifierCapabilities& caps, const CaseSink& sink);

}  // namespace samplecheck::harness
