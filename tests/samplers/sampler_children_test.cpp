// No child outlives samplecheck (sampler_children.h). Each test forks a stand-in for samplecheck that starts a
// sampler whose child is busy (a shell that ignores SIGTERM and never answers, a plugin stuck in sample), then
// ends that stand-in: SIGKILL (the parent-death signal must take the child down), or SIGTERM with a handler that
// calls KillSamplerChildren (the child's whole process group must go). This test process is made a child subreaper,
// so the orphans become its children: it reaps them and sees how they died.
#include "samplecheck/samplers/sampler_children.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/process_sampler.h"

namespace samplecheck::harness {
namespace {

using Clock = std::chrono::steady_clock;

// Generous: a loaded 2-core CI machine may take a while to start a shell, but the kernel kills at once.
constexpr auto kPatience = std::chrono::seconds(60);

std::string Scratch(const std::string& name) {
  const std::string path = ::testing::TempDir() + "sampler_children_" + std::to_string(getpid()) + "_" + name;
  std::remove(path.c_str());
  return path;
}

// The pid a child wrote to `path`, waiting for it; 0 when none came.
pid_t WaitForPid(const std::string& path) {
  const auto end = Clock::now() + kPatience;
  while (Clock::now() < end) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// Reaps `pid` (an orphan this subreaper adopted) within the patience; its wait status, or -1 when it lives on.
int ReapOrphan(pid_t pid) {
  const auto end = Clock::now() + kPatience;
  while (Clock::now() < end) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -2;  // not our child: cannot tell (the subreaper setting failed)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);  // do not leave it behind the failed test
  waitpid(pid, nullptr, 0);
  return -1;
}

std::string Describe(int status) {
  if (status == -1) return "still running after 60 s";
  if (status == -2) return "not adopted by the test";
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

class SamplerChildren : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }

  // Forks the stand-in for samplecheck: it runs `body` (which starts a sampler and blocks in it) and never returns.
  template <class Body>
  pid_t Fork(Body body) {
    const pid_t pid = fork();
    if (pid == 0) {
      body();
      _exit(0);
    }
    return pid;
  }

  static void EndStandIn(pid_t stand_in, int signal) {
    ASSERT_EQ(kill(stand_in, signal), 0);
    int status = 0;
    ASSERT_EQ(waitpid(stand_in, &status, 0), stand_in);
  }
};

// A shell that writes its pid, ignores SIGTERM and SIGINT, and never answers the HELLO: the stand-in blocks in the
// handshake (60 s default), busy. SIGKILL the stand-in: nothing of samplecheck runs, the kernel must kill the shell.
TEST_F(SamplerChildren, ABusyProcessSamplerDiesWithAKilledSamplecheck) {
  const std::string pidfile = Scratch("busy_shell.pid");
  const pid_t stand_in = Fork([&] {
    (void)MakeProcessSampler("echo $$ > '" + pidfile + "'; trap '' TERM INT HUP; while :; do sleep 1; done");
  });
  const pid_t shell = WaitForPid(pidfile);
  ASSERT_GT(shell, 0) << "the process sampler's shell never started";
  EndStandIn(stand_in, SIGKILL);
  const int status = ReapOrphan(shell);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the shell of a busy process sampler outlived samplecheck: " << Describe(status);
}

// An isolated plugin stuck inside sample (its host does not read its stdin, so no end of input reaches it).
TEST_F(SamplerChildren, APluginHostStuckInThePluginDiesWithAKilledSamplecheck) {
  const std::string pidfile = Scratch("stuck_host.pid");
  const pid_t stand_in = Fork([&] {
    auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "hang-in-sample,pid=" + pidfile);
    if (!plugin.ok()) _exit(3);
    std::vector<float> row(4, 0.0f);
    std::vector<SamplingParams> params(1);
    std::vector<int32_t> tokens(1);
    (void)(*plugin)->Sample({row.data(), 1, 4, 4}, params, tokens);  // hangs until the 300 s deadline
  });
  const pid_t host = WaitForPid(pidfile);
  ASSERT_GT(host, 0) << "the plugin host never loaded the plugin";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the stand-in send its SAMPLE
  EndStandIn(stand_in, SIGKILL);
  const int status = ReapOrphan(host);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the plugin host outlived samplecheck: " << Describe(status);
}

void KillChildrenAndExit(int) {
  KillSamplerChildren();
  _exit(0);
}

// samplecheck's SIGTERM handler calls KillSamplerChildren: the child's whole process group goes, also what the
// child started (a background `sleep`, which the parent-death signal alone would not reach).
TEST_F(SamplerChildren, KillSamplerChildrenFromASignalHandlerKillsTheWholeGroup) {
  const std::string shell_pidfile = Scratch("group_shell.pid");
  const std::string sleep_pidfile = Scratch("group_sleep.pid");
  const pid_t stand_in = Fork([&] {
    struct sigaction action {};
    action.sa_handler = KillChildrenAndExit;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    (void)MakeProcessSampler("sleep 600 & echo $! > '" + sleep_pidfile + "'; echo $$ > '" + shell_pidfile +
                             "'; trap '' TERM INT HUP; wait");
  });
  const pid_t shell = WaitForPid(shell_pidfile);
  const pid_t sleeper = WaitForPid(sleep_pidfile);
  ASSERT_GT(shell, 0);
  ASSERT_GT(sleeper, 0);
  ASSERT_EQ(kill(stand_in, SIGTERM), 0);
  int stand_in_status = 0;
  ASSERT_EQ(waitpid(stand_in, &stand_in_status, 0), stand_in);
  EXPECT_TRUE(WIFEXITED(stand_in_status) && WEXITSTATUS(stand_in_status) == 0) << Describe(stand_in_status);
  for (const pid_t pid : {shell, sleeper}) {
    const int status = ReapOrphan(pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "pid " << pid << (pid == shell ? " (the shell)" : " (its background sleep)") << ": " << Describe(status);
  }
}

// In this process: the registry counts the live children, KillSamplerChildren fails the sampler with the signal,
// and the sampler still reaps its child and leaves the registry.
TEST_F(SamplerChildren, KilledChildrenFailTheirSamplerAndLeaveTheRegistry) {
  const size_t before = LiveSamplerChildren();
  {
    auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "none-in-sample");
    ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
    EXPECT_EQ(LiveSamplerChildren(), before + 1);
    KillSamplerChildren();
    std::vector<float> row(4, 0.0f);
    std::vector<SamplingParams> params(1);
    std::vector<int32_t> tokens(1);
    Status st = (*plugin)->Sample({row.data(), 1, 4, 4}, params, tokens);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
    EXPECT_NE(st.error().message.find("killed by signal 9"), std::string::npos) << st.error().message;
    EXPECT_EQ(LiveSamplerChildren(), before);
  }
  EXPECT_EQ(LiveSamplerChildren(), before);
}

}  // namespace
}  // namespace samplecheck::harness
