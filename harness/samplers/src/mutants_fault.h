// The fault policy of a mutant (internal to harness/samplers/src/mutants*.cpp): the hooks of the correct sampler's
// pipeline, of which a mutant sets exactly one. mutants.cpp runs the pipeline, mutants_zoo.cpp defines the zoo.
//
// The correct pipeline, for row r of a batch (what `exact` computes):
//   params  = params[r]
//   dist    = ComputeDistribution(row, params, profile)                           (reference/distribution.h)
//   weights = dist as a dense vector over the vocab (sums to 1)
//   u       = UniformForDraw(params.seed, params.offset)                          (reference/philox.h)
//   token   = the first token t, ascending id, with weight > 0 whose inclusive cumulative weight exceeds u;
//             the last such token when u lies past the last cumulative value (fp rounding)
//   an unsamplable row (NaN, every logit -inf): kInvalidToken
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/samplers/mutants.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness::mutants {

// One row as the distribution hook sees it: the row, the parameters and profile the engine used (after the
// params and profile hooks) and the correct processed distribution of that row under them.
struct RowView {
  std::span<const float> logits;
  const SamplingParams& params;
  const Profile& profile;
  const ProcessedDistribution& dist;
};

// How a draw turns the weights and the (seed, offset) of the draw into a token.
enum class DrawRule {
  kInverseCdf,          // correct: see above (the weights are used as given, never divided by their sum)
  kFp32Cumsum,          // the cumulative weights accumulated in fp32 and u rounded to fp32: tokens whose weight
                        // is below half an ulp of the running sum get no width; u past the end: the last token
  kRejectionThenArgmax, // draw a candidate from the unfiltered tempered softmax, accept it if it has weight;
                        // after kRejectionRetries misses return the argmax (u of retry j at offset * 4 + j)
  kZeroUniformNonStrict,// u = 24-bit fp32 uniform in [0, 1) and the first token of the vocab whose cumulative
                        // weight is >= u: u == 0 (probability 2^-24) returns token 0 even when it is masked
  kLowDiscrepancy,      // u = frac(offset * golden ratio + seed's Philox uniform): a Weyl sequence, evenly spread
                        // over any run of draws: the right marginal, and a fit far too good to be random
};
inline constexpr int kRejectionRetries = 4;

struct Counter {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// A fault of the stream across calls: state one sampler instance keeps from call to call (issue 31), invisible in
// any one call. The counting fast path (CountDraws: batches of 4096 rows, run eager) never has it.
enum class StreamFault {
  kNone,
  kGraphBakedUniform,  // calls of 2, 4, 8, 16 or 32 rows (the batch sizes of a captured decode graph) replay the
                       // (seed, offset) of each row slot of the first call of that size: the uniform is baked into
                       // the graph (imp#2013: 8 of 8 replies began with the same token)
  kStepKeyReuse,       // a call of 2 or more rows that repeats the previous call's seeds with every offset advanced by
                       // one (a decode step) reuses the previous step's counters every other step: keys reused
                       // across consecutive steps (vLLM block verification, #46781)
};

using ProfileHook = void (*)(Profile& profile);
// The parameters the engine uses for row `row` of the batch (the hook keeps seed and offset of that row).
using ParamsHook = SamplingParams (*)(std::span<const SamplingParams> batch, size_t row);
// Rewrites the dense weights (size vocab, the correct distribution on entry) of one row.
using DistributionHook = void (*)(const RowView& row, std::vector<long double>& weights);
// The (seed, offset) of the draw of row `row` of the batch.
using RngHook = Counter (*)(std::span<const SamplingParams> batch, size_t row);

struct Fault {
  ProfileHook profile = nullptr;
  ParamsHook params = nullptr;
  DistributionHook distribution = nullptr;
  // The distribution hook only changes what ProcessedDistribution reports (the processed logprobs); the
  // draws use the correct weights (e.g. torch.multinomial renormalizes what it is given).
  bool distribution_reported_only = false;
  DrawRule draw = DrawRule::kInverseCdf;
  RngHook rng = nullptr;
  StreamFault stream = StreamFault::kNone;
  int32_t unsamplable_row_token = kInvalidToken;  // what a NaN / all -inf row returns
};

struct MutantDef {
  MutantInfo info;
  Fault fault;
};

// The zoo (mutants_zoo.cpp): the control `none` first, then every mutant of ListMutants in order.
const std::vector<MutantDef>& MutantDefs();

// Shared by the hooks: the softmax of logits / temperature over the whole row in long double (0 for -inf);
// empty when the row has a NaN or a +inf logit, or temperature <= 0.
std::vector<long double> TemperedSoftmax(std::span<const float> logits, double temperature);

}  // namespace samplecheck::harness::mutants
