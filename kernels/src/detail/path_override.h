// Which kernels a launch uses (host-only; the tests and benchmarks set it): kAuto, the policy of
// ChooseRowSplit (launch.h); the single-block kernels; or the split-row kernels with a fixed cluster size (1, 2, 4,
// 8 or 16 CTAs per row; a size whose slices do not fit in shared memory, or that the GPU cannot run, falls back to
// the single-block kernels). The environment variable SAMPLECHECK_KERNELS_PATH=single|split-N sets the value the
// process starts with. Results never depend on it (tests/kernels/split_row_test.cpp checks token for token).
#pragma once

namespace samplecheck::kernels::detail {

inline constexpr int kPathAuto = 0;
inline constexpr int kPathSingleBlock = -1;

// kPathAuto, kPathSingleBlock or a cluster size.
int PathOverride();
void SetPathOverride(int value);

}  // namespace samplecheck::kernels::detail
