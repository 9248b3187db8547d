// The git revision of the source tree this library was built from (cmake/SamplecheckBuildInfo.cmake writes it at
// build time): "" when the tree had no git, "<sha>-dirty" when it had uncommitted changes. The campaign-source
// fingerprint: 16 hex digits of a hash of the git trees of core/, reference/, stats/, harness/, kernels/ and tools/
// and of their uncommitted diff ("-dirty" after it when there is one), "" when the tree had no git.
#pragma once

namespace samplecheck::harness {
const char* BuildGitRevision();
const char* BuildSourceFingerprint();
}  // namespace samplecheck::harness
