// The git revision of the source tree this library was built from (cmake/SamplecheckBuildInfo.cmake writes it at
// build time): "" when the tree had no git, "<sha>-dirty" when it had uncommitted changes.
#pragma once

namespace samplecheck::harness {
const char* BuildGitRevision();
}  // namespace samplecheck::harness
