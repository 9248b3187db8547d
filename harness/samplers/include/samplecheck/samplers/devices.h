// The GPUs this program can use, for reports: asked of the CUDA runtime and NVML (loaded with dlopen when
// present), never of an external program. nullopt when this build has no CUDA or no device is usable.
#pragma once

#include <optional>
#include <string>

namespace samplecheck::harness {

// "NVIDIA H200, 580.159.04" (name, driver version; GPUs separated by ";"). The driver version comes from NVML;
// without NVML it is the CUDA version the driver supports ("CUDA 13.0").
std::optional<std::string> DescribeGpus();

// The CUDA devices this program can use (0 in a build without CUDA, or without a usable driver or device).
int UsableCudaDevices();

}  // namespace samplecheck::harness
