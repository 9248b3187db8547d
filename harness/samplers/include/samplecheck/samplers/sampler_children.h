// The child processes the samplers start (`process:` commands and the plugin host of isolated `plugin:` samplers),
// and how samplecheck makes sure none outlives it.
//
// Every child runs in its own process group, and two things stop it when samplecheck goes away:
//   - its parent-death signal is SIGKILL (PR_SET_PDEATHSIG, set in the child between fork and exec; a parent that
//     died before that is caught by checking getppid() after it): when the samplecheck process dies, however it
//     dies (SIGKILL included), the kernel kills the child. The children are forked by one thread that lives as
//     long as the process, since Linux sends the signal when the forking *thread* ends. It reaches the child
//     itself (the shell of a `process:` command, or the program the shell execs, or the plugin host), not
//     processes that child forks;
//   - KillSamplerChildren() sends SIGKILL to the process group of every live child (the child and what it
//     started), for samplecheck's own SIGINT/SIGTERM handler.
// On normal paths a sampler's destructor still ends its child as before (BYE, end of input, SIGKILL after 2 s) and
// reaps it.
#pragma once

#include <cstddef>

namespace samplecheck::harness {

// The most children the samplers keep alive at once; starting one more fails with kPlugin, naming the limit.
inline constexpr size_t kMaxSamplerChildren = 1024;

// SIGKILLs the process group of every child the samplers of this process have started and not yet reaped.
// Async-signal-safe (no allocation, no lock: a fixed array of process-group ids updated with atomics), so a
// signal handler may call it; errno is preserved. The samplers whose children it killed fail their next call with
// kPlugin ("killed by signal 9"); their destructors reap the children as usual.
void KillSamplerChildren() noexcept;

// How many children the samplers of this process have started and not yet reaped (for tests and diagnostics).
size_t LiveSamplerChildren() noexcept;

}  // namespace samplecheck::harness
