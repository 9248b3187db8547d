// The Report stage's stamp: what every report states about its run (campaign_work.h, StampReport) and the machine
// it ran on (campaign.h).
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "build_info.h"
#include "campaign_work.h"
#include "samplecheck/campaign/machine.h"
#include "samplecheck/core/format.h"
#include "samplecheck/samplers/devices.h"

namespace samplecheck::harness {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

}  // namespace

std::string OpeningProfile(const std::string& option, const std::string& suite) {
  return !option.empty() ? option : !suite.empty() ? suite : "vllm";
}

Result<std::string> JudgedProfile(const std::string& option, const std::string& suite, const std::string& claim,
                                  const std::string& source) {
  if (!option.empty() || !suite.empty()) return OpeningProfile(option, suite);
  if (claim.empty()) return std::string("vllm");
  if (FindProfile(claim) == nullptr) {
    return InvalidArgument(source + " says it implements profile \"" + claim +
                           "\", which this samplecheck does not know (samplecheck list --profiles): give --profile");
  }
  return claim;
}

void StampReport(CampaignReport& report, const SuiteIdentity& suite, const CampaignBasics& options,
                 const std::string& profile) {
  report.samplecheck_version = options.version;
  report.suite = suite.name;
  report.suite_source = suite.source;
  report.profile = profile;
  report.alpha = suite.alpha;
  report.tv = suite.tv;
  report.power = suite.power;
  report.machine = DetectMachine();
  report.gpu = DetectGpu();
  report.git_revision = DetectGitRevision();
  report.started = NowIso8601();
  report.command_line = options.command_line;
  report.evidence = options.evidence;
}

std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_./:=+,@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

std::string ReproduceBase(const CampaignReport& report, const CampaignBasics& options, const std::string& flag,
                          const std::string& spec) {
  const std::string builtin = "builtin:";
  const std::string suite =
      report.suite_source.rfind(builtin, 0) == 0 ? report.suite_source.substr(builtin.size()) : report.suite_source;
  std::string line = "samplecheck run --suite " + ShellWord(suite) + " " + flag + " " + ShellWord(spec) +
                     " --profile " + ShellWord(report.profile) + " --seed " + std::to_string(report.seed);
  if (options.tv) line += " --tv " + FormatShortest(*options.tv);
  return line;
}

MachineInfo DetectMachine() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.hostname = host;
  struct utsname u {};
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = Trim(line.substr(line.find(':') + 1));
      break;
    }
  }
  m.cores = std::thread::hardware_concurrency();
  return m;
}

std::optional<std::string> DetectGpu() { return DescribeGpus(); }

std::optional<std::string> DetectGitRevision() {
  const std::string revision = BuildGitRevision();
  if (revision.empty()) return std::nullopt;
  return revision;
}

std::optional<std::string> DetectSourceFingerprint() {
  const std::string fingerprint = BuildSourceFingerprint();
  if (fingerprint.empty()) return std::nullopt;
  return fingerprint;
}

std::string NowIso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace samplecheck::harness
