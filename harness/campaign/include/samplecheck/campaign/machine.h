// The environment a report records (report_stage.cpp): the machine, its GPUs and the source revision samplecheck was
// built from. No external program runs.
#pragma once

#include <optional>
#include <string>

#include "samplecheck/checks/result.h"

namespace samplecheck::harness {

// Environment of the report: hostname, OS, CPU; the GPUs from the CUDA runtime and NVML (samplers/devices.h; nullopt
// without one); the git revision of the source tree samplecheck was built from, taken at build time (nullopt when
// the tree had no git). No external program runs.
MachineInfo DetectMachine();
std::optional<std::string> DetectGpu();
std::optional<std::string> DetectGitRevision();
std::string NowIso8601();

}  // namespace samplecheck::harness
