// --case NAME (run, run --verifier, verify, explain): the cases of a suite a run draws, by name. A run of selected
// cases plans the whole suite first (its alpha split, seeds and draws are the full run's: a case's seeds come from
// its name alone, case_seed.h) and then keeps the selected ones, so a failing case reproduces with the same draws.
#pragma once

#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// The names of --case as given: repeatable, each may hold several separated by commas. kInvalidArgument for an
// empty name ("--case a,,b").
Result<std::vector<std::string>> ParseCaseNames(const std::vector<std::string>& given);

// Whether the suite entry `entry` is selected: no selection selects everything; otherwise a name equal to the entry,
// one of its rows ("entry/...": a batch's row, a speculative case's position) selecting it whole, or the name an
// expanded entry came from ("c" selects "c/r0/p1", every row and parameter set of suite entry c).
bool EntrySelected(const std::vector<std::string>& selection, const std::string& entry);

// kInvalidArgument for a selected name that selects no entry of `entries`: "--case NAME: suite S has no case of
// that name (nearest: a, b, c)", the nearest by edit distance.
Status CheckSelection(const std::vector<std::string>& selection, const std::vector<std::string>& entries,
                      const std::string& suite);

// The `limit` names of `candidates` nearest to `name` (Levenshtein distance, ties in candidate order).
std::vector<std::string> NearestNames(const std::string& name, const std::vector<std::string>& candidates,
                                      size_t limit = 3);

}  // namespace samplecheck::harness
