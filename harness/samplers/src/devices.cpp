#include "samplecheck/samplers/devices.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

namespace samplecheck::harness {

#ifdef SAMPLECHECK_HAVE_CUDA
namespace {

// The display driver's version from NVML (libnvidia-ml ships with the driver); "" when NVML is not there.
std::string NvmlDriverVersion() {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return "";
  using InitFn = int (*)();
  using VersionFn = int (*)(char*, unsigned int);
  using ShutdownFn = int (*)();
  auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  auto version = reinterpret_cast<VersionFn>(dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(nvml, "nvmlShutdown"));
  std::string out;
  if (init != nullptr && version != nullptr && init() == 0) {
    char buf[96] = {};
    if (version(buf, sizeof buf) == 0) out = buf;
    if (shutdown != nullptr) shutdown();
  }
  dlclose(nvml);
  return out;
}

}  // namespace

int UsableCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess) return count;
  cudaGetLastError();  // clear the sticky "no device" error
  return 0;
}

std::optional<std::string> DescribeGpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    cudaGetLastError();  // clear the sticky "no device" error for later callers
    return std::nullopt;
  }
  std::string driver = NvmlDriverVersion();
  if (driver.empty()) {
    int version = 0;
    if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) {
      driver = "CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    }
  }
  std::string out;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    if (!out.empty()) out += ";";
    out += std::string(prop.name) + (driver.empty() ? "" : ", " + driver);
  }
  if (out.empty()) return std::nullopt;
  return out;
}
#else
std::optional<std::string> DescribeGpus() { return std::nullopt; }
int UsableCudaDevices() { return 0; }
#endif

}  // namespace samplecheck::harness
