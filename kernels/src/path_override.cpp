// The kernels' path override (detail/path_override.h).
#include "detail/path_override.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace samplecheck::kernels::detail {
namespace {

std::atomic<int>& Value() {
  static std::atomic<int> value = [] {
    const char* env = std::getenv("SAMPLECHECK_KERNELS_PATH");
    if (env == nullptr) return kPathAuto;
    const std::string v(env);
    if (v == "single") return kPathSingleBlock;
    if (v.rfind("split-", 0) == 0) return std::atoi(v.c_str() + 6);
    return kPathAuto;
  }();
  return value;
}

}  // namespace

int PathOverride() { return Value().load(std::memory_order_relaxed); }
void SetPathOverride(int value) { Value().store(value, std::memory_order_relaxed); }

}  // namespace samplecheck::kernels::detail
