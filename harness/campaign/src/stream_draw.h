// Inside the campaign library: the stream draws of sampler campaigns (checks_stream.cpp judges them; stream.h).
//   a row case     its first draws again under a second seed (seed dependence) and through a fresh instance of the
//                  sampler, in one batch and one call per draw (determinism across handles and calls)
//   a decode case  its requests drawn as an engine's decode loop draws them: one Sample call per step holding every
//                  request once, the same batch buffer every call (a captured graph may replay it), each request's
//                  offset advancing by one per step; then its first steps replayed on a fresh instance
//   a batch row    its draws in offset order, for the repeats of adjacent steps
//   a refusal case one sampling call with parameters the judged profile calls invalid
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "judge.h"
#include "samplecheck/campaign/prepare.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

// A StreamEvidence and the results its spans point at.
struct StreamDraws {
  StreamEvidence evidence;
  std::vector<int32_t> under_a, under_b, fresh_batch, fresh_calls, steps;
  std::vector<int32_t> reference;  // what a fresh instance must repeat (empty: under_a)
  std::vector<double> match;
  std::string sampler_error;  // the sampler failed while drawing them ("" when it did not)

  // Points the evidence's spans at this object's vectors (after a copy or move).
  void Bind();
};

// A second instance of the campaign's sampler (or verifier) for one worker, opened on first use.
template <class T>
class FreshInstance {
 public:
  using Factory = std::function<Result<std::unique_ptr<T>>()>;
  explicit FreshInstance(Factory make) : make_(std::move(make)) {}
  // nullptr when it cannot be opened; why() says why.
  T* Get() {
    if (!tried_) {
      tried_ = true;
      auto made = make_ ? make_() : Result<std::unique_ptr<T>>(InvalidArgument("no second instance to open"));
      if (made.ok()) {
        instance_ = std::move(*made);
      } else {
        why_ = "a fresh instance could not be opened: " + made.error().ToString();
      }
    }
    return instance_.get();
  }
  const std::string& why() const { return why_; }

 private:
  Factory make_;
  std::unique_ptr<T> instance_;
  bool tried_ = false;
  std::string why_;
};
using FreshSampler = FreshInstance<Sampler>;
using FreshVerifier = FreshInstance<Verifier>;

// The stream draws of a row case (not for an unsamplable or skipped one). `gpu`: a GPU sampler (more draws).
StreamDraws MeasureRowStream(Sampler& sampler, FreshSampler& fresh, const PreparedCase& pc, bool deterministic,
                             bool gpu);

// A refusal case: one Sample call with its (invalid) parameters.
StreamDraws DrawRefusal(Sampler& sampler, const PreparedCase& pc);

// A decode case's loop (every row's draws into out.sequence, draw i at offset + i), one call per step.
void DrawDecode(Sampler& sampler, const std::vector<PreparedCase*>& rows, CaseSink& sink, BatchDraws& out);

// Every batch row's step evidence (its draws in offset order) and, for a decode case of a deterministic sampler,
// its first steps replayed on a fresh instance (one batch per step, then the row alone one call per step).
std::vector<StreamDraws> BatchStreams(const std::vector<PreparedCase*>& rows, const BatchDraws& draws, bool decode,
                                      bool deterministic, FreshSampler& fresh);

// sum_t p_t^2: the probability that two independent draws from p are equal.
double CollisionProbability(std::span<const double> p);

}  // namespace samplecheck::harness
