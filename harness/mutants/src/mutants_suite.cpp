// The campaign cases the mutant zoo needs beyond the smoke suite (samplecheck-suite/1, docs/suites.md), embedded
// so that `samplecheck mutants` finds them in an installed program. Each case names the subtle fault it exposes;
// `tv` is set small on purpose so that the planner asks for more than the cap and every case runs at max_draws.
//   skew       +1% on a token of p 0.5: z = 0.0025 / (0.5 / sqrt(2^23)) = 14 (statistics.md 5.3)
//   deep-tail  one head token, 131071 tokens 20.5-23 logits below it (6e-5 of the mass): a noise floor or an fp32
//              CDF that never reaches them leaves a cell of E = 1000 empty at 2^24 draws
//   u-zero     token 0 masked by top-p: a uniform that can be exactly 0 (2^-24 per draw) draws it 8 times on
//              average in 2^27 draws (P(no hit) = 3e-4; deterministic under the fixed seed)
//   V2-ties / tied-topk / V1-nonstrict  tie groups and an exact top-p equality at the boundary
//   sentinel-k0  top_k = 0, disabled in the profile (the smoke suite has no sentinel case)
//   corners    the fixed corner block of standard (corners.h): the parameter corners of the field
//   decode     8 requests drawn as a decode loop (one call per step, offsets advancing by one): the repeats of adjacent
//              steps see a uniform baked into a captured graph and keys reused across steps (issue 31)
#include "samplecheck/mutants/mutation_score.h"

namespace samplecheck::harness {

std::string_view MutantsSuiteJson() {
  return R"json({
  "schema": "samplecheck-suite/1",
  "name": "mutants",
  "description": "Extra cases of the mutant zoo (harness/mutants/src/mutants_suite.cpp): a +1% skew at 2^23 draws, a deep tail below the Gumbel floor, a masked token 0 for u == 0, ties at the top-k boundary",
  "seed": 8,
  "alpha": 1e-4,
  "tv": 0.01,
  "power": 0.99,
  "max_draws": 1048576,
  "min_draws": 20000,
  "corners": {"seed": 31, "max_draws": 8192, "tv": 0.05},
  "cases": [
    {"name": "skew", "row": {"kind": "dyadic", "probs": [0.5, 0.25, 0.125, 0.125]}, "params": {"temperature": 1.0},
     "max_draws": 8388608, "tv": 1e-4},
    {"name": "deep-tail", "row": {"kind": "many_tail", "vocab": 131072, "head": 1, "tail_min_gap": 20.5,
     "tail_max_gap": 23.0}, "params": {"temperature": 1.0}, "max_draws": 16777216, "tv": 1e-4},
    {"name": "u-zero", "row": {"kind": "dyadic", "probs": [0.125, 0.5, 0.375]}, "params": {"top_p": 0.6},
     "max_draws": 134217728, "tv": 1e-5},
    {"name": "V2-ties", "row": {"kind": "dyadic", "vector": "V2"}, "params": {"top_k": 2}},
    {"name": "tied-topk", "row": {"kind": "tied", "vocab": 4096, "levels": 8, "spacing": 0.75},
     "params": {"top_k": 10}},
    {"name": "V1-nonstrict", "row": {"kind": "dyadic", "vector": "V1"}, "params": {"top_p": 0.5}},
    {"name": "sentinel-k0", "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2.0}, "params": {"top_k": 0}},
    {"name": "topp-low", "row": {"kind": "zipf", "vocab": 4096, "exponent": 1.0}, "params": {"top_p": 0.3}},
    {"name": "decode", "decode": true, "max_draws": 4096, "tv": 0.1, "batch": [
      {"row": {"kind": "gaussian", "vocab": 1000, "sigma": 2}, "params": {"top_k": 50}, "copies": 4},
      {"row": {"kind": "zipf", "vocab": 1000}, "params": {"temperature": 0.8, "top_p": 0.9}, "copies": 4}]}
  ]
})json";
}

}  // namespace samplecheck::harness
