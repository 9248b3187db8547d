// Isolated plugins (plugin_sampler.h): the plugin host found by its rule and run as a process sampler.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "process_sampler_internal.h"
#include "samplecheck/samplers/plugin_sampler.h"

#ifndef SAMPLECHECK_BUILT_PLUGIN_HOST
#define SAMPLECHECK_BUILT_PLUGIN_HOST ""
#endif

namespace samplecheck::harness {
namespace {

// "" when `path` is an executable regular file, else why not.
std::string NotExecutable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (access(path.c_str(), X_OK) != 0) return std::strerror(errno);
  return "";
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

PluginHostSearch PluginHostSearchOfThisProcess() {
  PluginHostSearch search;
  if (const char* env = std::getenv(kPluginHostEnv)) search.env = env;
  char exe[PATH_MAX + 1];
  const ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX);
  if (n > 0) search.executable.assign(exe, static_cast<size_t>(n));
  search.built = SAMPLECHECK_BUILT_PLUGIN_HOST;
  return search;
}

Result<std::string> FindPluginHost(const PluginHostSearch& search) {
  const std::string remedies = std::string("; set ") + kPluginHostEnv + " to the path of " + kPluginHostProgram +
                               ", or use plugin-inproc:<path.so>[:config] to load the plugin into samplecheck "
                               "itself (docs/plugin-abi.md)";
  if (search.env) {
    const std::string& path = *search.env;
    const std::string why = path.empty() ? "it is empty" : NotExecutable(path);
    if (!why.empty()) {
      return InvalidArgument(std::string(kPluginHostEnv) + " = '" + path + "' does not name an executable file (" +
                             why + "); set it to the path of " + kPluginHostProgram + ", or unset it");
    }
    return path;
  }
  std::string looked;
  if (!search.executable.empty()) {
    const std::string beside = DirectoryOf(search.executable) + "/" + kPluginHostProgram;
    const std::string why = NotExecutable(beside);
    if (why.empty()) return beside;
    looked += "next to this program (" + beside + ": " + why + ")";
  }
  if (!search.built.empty()) {
    const std::string why = NotExecutable(search.built);
    if (why.empty()) return search.built;
    looked += std::string(looked.empty() ? "" : " and ") + "in the build tree (" + search.built + ": " + why + ")";
  }
  return Error{ErrorCode::kPlugin, std::string("cannot find the plugin host ") + kPluginHostProgram +
                                       ", which runs plugin: samplers isolated: " + kPluginHostEnv +
                                       " is not set, and it is not " + (looked.empty() ? "anywhere known" : looked) +
                                       remedies};
}

namespace {

// What the plugin host is started with for plugin:<path>[:config]: its argv, the library and the fallback name.
struct HostLaunch {
  std::vector<std::string> argv;
  std::string library;
  std::string fallback_name;
};

Result<HostLaunch> PlanHostLaunch(std::string_view path, std::string_view config) {
  if (path.empty()) return InvalidArgument("plugin spec has an empty library path (plugin:<path.so>[:config])");
  auto host = FindPluginHost();
  if (!host.ok()) return host.error();
  HostLaunch launch;
  launch.library = std::string(path);
  launch.fallback_name = "plugin:" + Basename(path);
  if (!config.empty()) launch.fallback_name.append(":").append(config);
  launch.argv = {*host, launch.library, std::string(config)};
  return launch;
}

}  // namespace

Result<std::unique_ptr<Sampler>> MakeIsolatedPluginSampler(std::string_view path, std::string_view config,
                                                           const ProcessSamplerOptions& options) {
  auto launch = PlanHostLaunch(path, config);
  if (!launch.ok()) return launch.error();
  return process_internal::MakePluginHostSampler(launch->argv, launch->library, std::move(launch->fallback_name),
                                                 options);
}

Result<std::unique_ptr<Verifier>> MakeIsolatedPluginVerifier(std::string_view path, std::string_view config,
                                                             const ProcessSamplerOptions& options) {
  auto launch = PlanHostLaunch(path, config);
  if (!launch.ok()) return launch.error();
  return process_internal::MakePluginHostVerifier(launch->argv, launch->library, std::move(launch->fallback_name),
                                                  options);
}

}  // namespace samplecheck::harness
