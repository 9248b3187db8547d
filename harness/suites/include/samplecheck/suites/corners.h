// Corner coverage (issue 31; docs/suites.md, "corners"): a covering design over the sentinels and boundaries of the
// sampling parameters, rows and vocabularies, with every pair of values of two factors in at least one case and the
// interactions the field found covered at a live temperature (CornerRequirements). A
// suite's "corners" block adds its cases (`standard`: a fixed design, cheap cases of few draws each; `nightly`: a
// fresh design every run). A corner case whose parameters the judged profile calls invalid is a refusal case: the
// sampler must refuse them with an error naming the field (check refusal), never draw. Four refusal probes (a value
// invalid under every profile, one field each) end the block.
//
// Factors and levels (the symbolic ones resolved on the case's own row, built as the campaign will build it):
//   temperature  0, 1e-6 (tiny), 1, 4 (large: beyond vllm's 2, a refusal there)
//   top_k        -1, 0, 1, #finite, #finite + 1, V + 3 (>= V)
//   top_p        1e-7 (tiny), boundary (the tempered cumulative mass of the top half of the finite tokens, exactly:
//                a tie at the cut), 1
//   min_p        0, 1e-6 (tiny), 1
//   row          plain (gaussian sigma 2), masked (half the tokens -inf), tied (4 levels)
//   V            1, 2, 1001 (not a multiple of 4), 65537 (> 32768)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

struct CornerFactor {
  std::string name;
  std::vector<std::string> levels;
};
const std::vector<CornerFactor>& CornerFactors();

// A requirement of a covering design: a partial row, (factor, level) entries; a design row covers it when it matches
// every entry.
using CornerTuple = std::vector<std::pair<size_t, uint32_t>>;

// A covering design over factors of levels[f] levels: rows of level indices covering every requirement. Greedy
// (AETG): each row is the best of 32 candidates grown from an uncovered requirement, every other factor taking the
// level that completes most uncovered requirements; deterministic in `seed`.
std::vector<std::vector<uint32_t>> CoveringDesign(const std::vector<size_t>& levels,
                                                  std::vector<CornerTuple> requirements, uint64_t seed);
// The pairwise design: every pair of levels of two factors.
std::vector<std::vector<uint32_t>> PairwiseDesign(const std::vector<size_t>& levels, uint64_t seed);
// The corner design's requirements: every pair of the six factors, and at temperature 1 (live: the greedy and the
// refused temperatures mask every filter) every (row, top_k, top_p) and every (V, min_p): the interactions of the
// field (a top-p request on a row with fewer finite logits than its top_k, a tiny top_p, top_k >= V with top_p,
// min-p above 32768 tokens).
std::vector<CornerTuple> CornerRequirements();

// The corner cases "corner/<i>" of the design of `design_seed` and the refusal probes "corner/refuse-<field>", each
// capped at max_draws and planned for `tv`; their symbolic levels resolved on the rows the campaign of seed
// `campaign_seed` builds for them (CaseRowSeed).
Result<std::vector<CaseSpec>> CornerCases(uint64_t design_seed, uint64_t campaign_seed, uint64_t max_draws, double tv);

}  // namespace samplecheck::harness
