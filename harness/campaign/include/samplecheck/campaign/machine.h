// The environment a report records (report_stage.cpp): the machine, its GPUs and the source revision samplecheck was
// built from. No external program runs.
#pragma once

#include <optional>
#include <string>

#include "samplecheck/checks/result.h"

namespace samplecheck::harness {

// Environment of the report: hostname, OS, CPU; the GPUs from the CUDA runtime and NVML (samplers/devices.h; nullopt
// without one); the git revision of the source tree samplecheck was built from, taken at build time (nullopt when
// the tree had no git); the fingerprint of the campaign sources it was built from (the git trees of core/,
// reference/, stats/, harness/, kernels/, tools/ and their uncommitted diff: equal for builds of two commits that
// change none of them; nullopt without git), which a journal's identity compares. No external program runs.
MachineInfo DetectMachine();
std::optional<std::string> DetectGpu();
std::optional<std::string> DetectGitRevision();
std::optional<std::string> DetectSourceFingerprint();
std::string NowIso8601();

}  // namespace samplecheck::harness
