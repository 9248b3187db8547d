// LD_PRELOAD shim for the fault-injection tests of tests/tools/robustness_test.sh: write(2) on a file whose path
// contains $SAMPLECHECK_FAIL_WRITES_MATCH fails with ENOSPC ("No space left on device") once
// $SAMPLECHECK_FAIL_WRITES_AFTER bytes have been written to such files, as a full disk does mid-write.
// Everything else is passed to the real write.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);

WriteFn RealWrite() {
  static WriteFn real = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  return real;
}

std::atomic<long long> written{0};

bool Matches(int fd, const char* pattern) {
  char link[64];
  char path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return std::strstr(path, pattern) != nullptr;
}

}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t count) {
  const char* pattern = std::getenv("SAMPLECHECK_FAIL_WRITES_MATCH");
  const char* after = std::getenv("SAMPLECHECK_FAIL_WRITES_AFTER");
  if (pattern == nullptr || after == nullptr || !Matches(fd, pattern)) return RealWrite()(fd, buf, count);
  const long long limit = std::atoll(after);
  const long long done = written.load();
  if (done >= limit) {
    errno = ENOSPC;
    return -1;
  }
  const size_t allowed = static_cast<size_t>(limit - done) < count ? static_cast<size_t>(limit - done) : count;
  const ssize_t n = RealWrite()(fd, buf, allowed);
  if (n > 0) written += n;
  return n;
}
