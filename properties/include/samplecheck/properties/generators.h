// RapidCheck generators of logits rows and sampling parameters, composed from small pieces.
//
// Rows are built from small integers wherever possible (logit = code / 16, run lengths, group sizes, a
// permutation seed where 0 is the identity), so RapidCheck's shrinking ends in a short row of small dyadic values
// rather than in a vector of arbitrary floats. Every row generator returns a Row whose `kind` names it.
//
//   dyadic rows             logit = code / 16, |logit| <= 64: exact in fp32, and exact under + c (integer |c| <=
//                           256) and / T (T a power of two): the rows of the shift and temperature relations
//   -inf runs               dyadic rows with runs of -inf (at least one finite logit)
//   whole-row ties          every logit equal
//   top-k boundary ties     a tie group straddling the k-th position (the Case's top_k cuts the group)
//   top-p boundary ties     a tie group containing the crossing token (the Case's top_p lands inside its mass)
//   on / one ulp off        top_p equal to the mass above a token (or one fp32 ulp either side), min_p equal to a
//   a boundary              probability ratio p_j / p_max (or one fp32 ulp either side)
//   huge / tiny magnitudes  +-FLT_MAX, 1e38, 1e-38, denormals, +-0 mixed with dyadic values
//   wide range              a head and a tail 40..100 logits below it (p ~ 1e-18..1e-43: alive in fp32; the
//                           "min_p = 0 as log(max(min_p, 1e-20))" clamp removes them)
//   realistic               Zipf (logit = -s ln rank, shuffled) and Gaussian N(0, sigma^2) rows, V up to 1024
//   bad rows                a NaN, all -inf, or +inf logits (+inf is valid: the +inf tokens share the mass)
//
// Parameters include the disabled and sentinel values (top_k -1 / 0 / 1 / V / > V, top_p 1 and 0, min_p 0 and 1,
// T = 0, T just below / above each profile's greedy threshold, powers of two) and may be invalid for a profile:
// ValidParams repairs a parameter set for a profile (an invalid field is reset to its disabled value).
#pragma once

#include <cstdint>

#include <rapidcheck.h>

#include "samplecheck/properties/cases.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties::gen {

// ---- rows ----
rc::Gen<Row> DyadicRow();              // 1..~100 logits, code / 16 with |code| <= 1024
rc::Gen<Row> NegInfRunsRow();          // dyadic runs and -inf runs
rc::Gen<Row> WholeRowTies();           // every logit equal
rc::Gen<Row> TopTiesRow();             // a tie group of 2..8 at the maximum, the rest >= 1 below it (V <= 32)
rc::Gen<Row> HugeTinyRow();            // extreme magnitudes mixed with dyadic values
rc::Gen<Row> WideRangeRow();           // head plus a tail 40..100 logits down
rc::Gen<Row> ZipfRow();                // V in [2, 1024]
rc::Gen<Row> GaussianRow();            // V in [2, 1024], sigma in {0.5, 1, 3, 5}
rc::Gen<Row> NearUniformRow();         // V in [256, 1024], logits within +-1/64 of 0 (for stream checks)
rc::Gen<Row> BadRow();                 // NaN, all -inf, or +inf logits
rc::Gen<Row> ValidRow();               // any of the valid-row generators above (no NaN, not all -inf)
// Row kinds ValidRow / BadRow / AnyRow leave out (`samplecheck properties --exclude-rows`): a documented limitation
// of an engine fenced in the open, never silently. Names are Row::kind values; RowKinds() lists them.
void SetExcludedRowKinds(std::vector<std::string> kinds);
const std::vector<std::string>& ExcludedRowKinds();
const std::vector<std::string>& RowKinds();  // the kinds ValidRow and BadRow make
// min_p held at 0 in every generated case (`samplecheck properties --no-min-p`): for a sampler path whose engine
// refuses min-p (TensorRT-LLM's vanilla path, SGLang's seeded path, vLLM's spec decoding), fenced in the open like
// --exclude-rows. MinP() then yields only 0, AnyValidCase leaves MinPOnBoundary out, and the properties that need a
// min_p other than 0 skip it (or, monotone-min-p, are skipped by the suite).
void SetMinPHeldAtZero(bool held);
bool MinPHeldAtZero();
rc::Gen<Row> AnyRow();                 // ValidRow or BadRow

// ---- parameters (raw: may be invalid for a profile) ----
rc::Gen<double> Temperature();         // 1, powers of two, (0.05, 2], 0, and values around every greedy threshold
rc::Gen<double> PowerOfTwoTemperature(const Profile& profile);  // 2^j, j in [-6, 1], valid and not greedy
rc::Gen<int64_t> TopK(int64_t vocab);  // -1, 0, 1, V, V + 1, 2^40, and 1..V
rc::Gen<double> TopP();                // 1, 0, 1e-9, (0, 1) in 1/1000 steps, 0.5, 0.75, 0.875, nextafter(1, 0)
rc::Gen<double> MinP();                // 0, 1, (0, 1) in 1/1000 steps, 1e-3 (only 0 when MinPHeldAtZero())
rc::Gen<uint64_t> Seed();              // any uint64 (shrinks to 0)
rc::Gen<Params> AnyParams(int64_t vocab);
// AnyParams repaired for `profile` (ValidParams).
rc::Gen<Params> ValidParams(int64_t vocab, const Profile& profile);
// The valid parameter set closest to `params`: each invalid field reset to its disabled value (temperature 1,
// top_k -1, top_p 1, min_p 0).
Params MakeValid(Params params, const Profile& profile);
// true when the profile takes its greedy path for these (valid) parameters (reference/distribution.cpp rule).
bool IsGreedy(const SamplingParams& params, const Profile& profile);

// ---- cases (a row with boundary parameters built for it) ----
rc::Gen<Case> TopKBoundaryTies(const Profile& profile);  // only top-k active; top_k cuts a tie group
rc::Gen<Case> TopPBoundaryTies(const Profile& profile);  // only top-p active; crossing token inside a tie group
rc::Gen<Case> TopPOnBoundary(const Profile& profile);    // only top-p active; top_p = a mass above (+- 1 ulp)
rc::Gen<Case> MinPOnBoundary(const Profile& profile);    // only min-p active; min_p = p_j / p_max (+- 1 ulp)
// Any valid row with ValidParams, or a boundary case (about one case in three).
rc::Gen<Case> AnyValidCase(const Profile& profile);

}  // namespace samplecheck::properties::gen
