// Generated cases: a seeded generator over the space the property generators cover (row kinds, V from 1 to
// 262144, -inf masks, ties, every filter and sentinel value alone and combined, corners such as top_p < 1 with a
// top_k at or above the number of finite logits). `standard` holds a fixed-seed block of them, `nightly` fresh ones
// every night, and `samplecheck run --generated N` adds N to any suite. A failing generated case is written out as
// a one-case suite that replays it (report/failing_case_suite.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/reference/profile.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// Where a case of a campaign came from. Its name says it (a report stores names only): the names of generated and
// corner cases are made by CaseName and read back by OriginOfCase, here and nowhere else.
enum class CaseOrigin {
  kSuite,        // a case the suite file lists: any name without the prefixes below
  kGenerated,    // "gen/<i>": the suite's generated block (`"generated": N`), or a replay suite's
  kCommandLine,  // "cli-gen/<i>": `run --generated N`
  kCorner,       // "corner/<i>", "corner/refuse-<field>": the corner design of a suite's `"corners"`
};
// "<prefix of origin>/<rest>" ("gen/3", "corner/refuse-top_p"); kSuite: `rest` itself.
std::string CaseName(CaseOrigin origin, std::string_view rest);
CaseOrigin OriginOfCase(std::string_view name);
// A generated or corner case (one a failure is written out for as a one-case suite that replays it).
inline bool MadeByGenerator(CaseOrigin origin) { return origin != CaseOrigin::kSuite; }

// `count` cases named CaseName(origin, "<i>"), deterministic in `seed`, every one's parameters valid under
// `profile` (a generated case is never skipped). origin: kGenerated or kCommandLine.
std::vector<CaseSpec> GenerateCases(uint64_t seed, size_t count, const Profile& profile,
                                    CaseOrigin origin = CaseOrigin::kGenerated);

}  // namespace samplecheck::harness
