// The identity of a case as it was planned (its name, row, row seed, profile, parameters and place in a batch): a
// journal line carries its hash, --resume and the gate compare a stored case with the case planned again.
#pragma once

#include <cstdint>
#include <string>

#include "samplecheck/checks/result.h"

namespace samplecheck::harness {

// What fixes a case's draws: its name, row spec, row seed, parameters (with the sampler's seed and offset), judged
// profile and place in a batch. Two runs that agree on it draw the same tokens for the same draw count; a journal
// keeps it per case (journal.h) so that a resumed run never reuses a case the suite has changed since.
uint64_t CaseSpecHash(const CaseResult& c);
// "" when `stored` and `planned` are the same case spec, else what differs ("its row", "its parameters", ...).
std::string CaseSpecDifference(const CaseResult& stored, const CaseResult& planned);

// Where a case draws and with what, for a finding: "row gaussian(V=1024, sigma=2); T 0.7, top_k 50, top_p 0.9,
// min_p 0", a batch row led by its place ("batch b1 row 3 of 8, gaussian(...); ...").
std::string DescribeCaseRow(const CaseResult& c);

}  // namespace samplecheck::harness
