// The plugin sampler: dlopen + dlsym of the exports of plugin_abi.h, and the checks that turn a plugin's contract
// breaks into kPlugin errors.
#include "samplecheck/samplers/plugin_sampler.h"

#include <dlfcn.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"

namespace samplecheck::harness {
namespace {

Error PluginError(std::string message) { return {ErrorCode::kPlugin, std::move(message)}; }

// A dlopen handle, closed last (after the plugin handle is destroyed).
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  void* Symbol(const char* name) const { return dlsym(handle_, name); }

 private:
  void* handle_;
};

struct Exports {
  samplecheck_plugin_abi_version_fn abi_version = nullptr;
  samplecheck_plugin_create_fn create = nullptr;
  samplecheck_plugin_destroy_fn destroy = nullptr;
  samplecheck_plugin_sample_fn sample = nullptr;
  samplecheck_plugin_name_fn name = nullptr;
  samplecheck_plugin_profile_fn profile = nullptr;
  samplecheck_plugin_flags_fn flags = nullptr;
  samplecheck_plugin_processed_distribution_fn processed_distribution = nullptr;
  samplecheck_plugin_count_draws_fn count_draws = nullptr;
};

template <class Fn>
Fn Lookup(const Library& lib, const char* name) {
  return reinterpret_cast<Fn>(lib.Symbol(name));
}

// The message buffer handed to the plugin; always NUL-terminated after a call.
struct ErrBuf {
  std::array<char, 2048> text{};
  std::string Take(const char* fallback) {
    text.back() = '\0';
    return text[0] != '\0' ? std::string(text.data()) : std::string(fallback);
  }
};

samplecheck_plugin_params ToPluginParams(const SamplingParams& p) {
  return {p.temperature, p.top_k, p.top_p, p.min_p, p.seed, p.offset};
}

std::string Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

class PluginSampler final : public Sampler {
 public:
  PluginSampler(std::unique_ptr<Library> lib, Exports fns, void* handle, std::string name)
      : lib_(std::move(lib)), fns_(fns), handle_(handle), name_(std::move(name)) {}

  ~PluginSampler() override {
    if (handle_) fns_.destroy(handle_);
  }

  std::string Name() const override { return name_; }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = fns_.processed_distribution != nullptr;
    caps.count_draws = fns_.count_draws != nullptr;
    caps.deterministic = !(fns_.flags && (fns_.flags(handle_) & SAMPLECHECK_PLUGIN_FLAG_NONDETERMINISTIC));
    if (fns_.profile) {
      const char* profile = fns_.profile(handle_);
      if (profile) caps.profile = profile;
    }
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckBatchShape(batch, params.size(), tokens.size(), /*min_vocab=*/1); !st.ok()) return st;
    if (batch.rows == 0) return Status::Ok();
    std::vector<samplecheck_plugin_params> plugin_params(params.size());
    for (size_t r = 0; r < params.size(); ++r) plugin_params[r] = ToPluginParams(params[r]);
    // A sentinel no plugin writes on purpose: a slot still holding it after success was never written.
    constexpr int32_t kUnwritten = std::numeric_limits<int32_t>::min();
    std::fill(tokens.begin(), tokens.end(), kUnwritten);
    const samplecheck_plugin_batch plugin_batch{batch.logits, batch.rows, batch.vocab, batch.row_stride};
    ErrBuf err;
    const int rc = fns_.sample(handle_, &plugin_batch, plugin_params.data(), tokens.data(), err.text.data(),
                               err.text.size());
    if (rc != SAMPLECHECK_PLUGIN_OK) return CallError("sample", rc, err);
    for (size_t r = 0; r < tokens.size(); ++r) {
      const int32_t t = tokens[r];
      if (t == kInvalidToken || (t >= 0 && t < batch.vocab)) continue;
      const std::string allowed = "; a token must be in [-1, " + std::to_string(batch.vocab) +
                                  ") (vocab " + std::to_string(batch.vocab) +
                                  "; -1 marks a row that cannot be sampled)";
      if (t == kUnwritten) {
        return PluginError(name_ + ": sample returned success but the token of row " + std::to_string(r) +
                           " is -2147483648 (INT32_MIN), the value the harness writes into every token slot "
                           "before the call: the plugin returned INT32_MIN or left the token unwritten" + allowed);
      }
      return PluginError(name_ + ": sample returned token " + std::to_string(t) + " for row " + std::to_string(r) +
                         allowed);
    }
    return Status::Ok();
  }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (!fns_.processed_distribution) return Sampler::ProcessedDistribution(row, params);
    if (row.empty()) return Error{ErrorCode::kInvalidRow, "empty row"};
    const samplecheck_plugin_params plugin_params = ToPluginParams(params);
    std::vector<double> probs(row.size(), std::numeric_limits<double>::quiet_NaN());
    ErrBuf err;
    const int rc = fns_.processed_distribution(handle_, row.data(), static_cast<int64_t>(row.size()), &plugin_params,
                                               probs.data(), err.text.data(), err.text.size());
    if (rc == SAMPLECHECK_PLUGIN_INVALID_ROW) {
      return Error{ErrorCode::kInvalidRow, name_ + ": " + err.Take("the plugin cannot sample this row")};
    }
    if (rc != SAMPLECHECK_PLUGIN_OK) return CallError("processed_distribution", rc, err);
    double sum = 0.0;
    for (size_t t = 0; t < probs.size(); ++t) {
      if (!std::isfinite(probs[t]) || probs[t] < 0.0) {
        return PluginError(name_ + ": processed_distribution returned probability " + std::to_string(probs[t]) +
                           " for token " + std::to_string(t) + " (every entry must be finite and >= 0)");
      }
      sum += probs[t];
    }
    if (std::abs(sum - 1.0) > kDistributionSumTolerance) {
      return PluginError(name_ + ": processed_distribution sums to " + std::to_string(sum) +
                         ", not 1 (tolerance 1e-3)");
    }
    return probs;
  }

  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    if (!fns_.count_draws) return Sampler::CountDraws(row, params, draws, histogram, invalid_draws);
    if (row.empty() || histogram.size() != row.size()) {
      return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                             std::to_string(row.size()) + " tokens (at least 1)");
    }
    const samplecheck_plugin_params plugin_params = ToPluginParams(params);
    std::vector<uint64_t> counted(row.size(), 0);
    uint64_t invalid = 0;
    ErrBuf err;
    const int rc = fns_.count_draws(handle_, row.data(), static_cast<int64_t>(row.size()), &plugin_params, draws,
                                    counted.data(), &invalid, err.text.data(), err.text.size());
    if (rc != SAMPLECHECK_PLUGIN_OK) return CallError("count_draws", rc, err);
    // The histogram and the invalid count must account for every draw, exactly once.
    // Overflow-free: total never exceeds draws, so counts that wrap 2^64 cannot add up to draws.
    bool exceeded = invalid > draws;
    uint64_t total = exceeded ? draws : invalid;
    for (uint64_t c : counted) {
      if (c > draws - total) {
        exceeded = true;
      } else {
        total += c;
      }
    }
    if (exceeded || total != draws) {
      return PluginError(name_ + ": count_draws was asked for " + std::to_string(draws) + " draws but counted " +
                         (exceeded ? "more" : std::to_string(total)) + " (" + std::to_string(invalid) +
                         " of them invalid)");
    }
    for (size_t t = 0; t < counted.size(); ++t) histogram[t] += counted[t];
    if (invalid_draws) *invalid_draws += invalid;
    return Status::Ok();
  }

 private:
  static constexpr double kDistributionSumTolerance = 1e-3;

  Error CallError(const char* what, int rc, ErrBuf& err) const {
    std::string message = name_ + ": " + what + " failed: " + err.Take("(the plugin gave no message)");
    switch (rc) {
      case SAMPLECHECK_PLUGIN_INVALID_ARGUMENT: return InvalidArgument(message);
      case SAMPLECHECK_PLUGIN_UNSUPPORTED: return Unsupported(message);
      case SAMPLECHECK_PLUGIN_ERROR: return PluginError(message);
      default:
        return PluginError(name_ + ": " + what + " returned " + std::to_string(rc) +
                           ", not one of the codes of plugin_abi.h (" + err.Take("no message") + ")");
    }
  }

  std::unique_ptr<Library> lib_;  // declared first: destroyed after the handle
  Exports fns_;
  void* handle_;
  std::string name_;
};

}  // namespace

Result<std::unique_ptr<Sampler>> MakePluginSampler(std::string_view path, std::string_view config) {
  const std::string path_str(path);
  const std::string where = "plugin " + path_str;
  if (path_str.empty()) return InvalidArgument("plugin spec has an empty library path (plugin:<path.so>[:config])");
  dlerror();
  void* raw = dlopen(path_str.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (raw == nullptr) {
    const char* why = dlerror();
    return PluginError("cannot load " + where + ": " + (why ? why : "dlopen failed"));
  }
  auto lib = std::make_unique<Library>(raw);

  Exports fns;
  fns.abi_version = Lookup<samplecheck_plugin_abi_version_fn>(*lib, "samplecheck_plugin_abi_version");
  if (!fns.abi_version) {
    return PluginError(where + " does not export samplecheck_plugin_abi_version: not a samplecheck plugin (see "
                               "docs/plugin-abi.md)");
  }
  const int version = fns.abi_version();
  if (version != SAMPLECHECK_PLUGIN_ABI_VERSION) {
    return PluginError(where + " speaks plugin ABI version " + std::to_string(version) + "; this samplecheck speaks " +
                       std::to_string(SAMPLECHECK_PLUGIN_ABI_VERSION) + " (rebuild it against this plugin_abi.h)");
  }
  fns.create = Lookup<samplecheck_plugin_create_fn>(*lib, "samplecheck_plugin_create");
  fns.destroy = Lookup<samplecheck_plugin_destroy_fn>(*lib, "samplecheck_plugin_destroy");
  fns.sample = Lookup<samplecheck_plugin_sample_fn>(*lib, "samplecheck_plugin_sample");
  for (auto [fn, name] : {std::pair<const void*, const char*>{reinterpret_cast<const void*>(fns.create),
                                                               "samplecheck_plugin_create"},
                          {reinterpret_cast<const void*>(fns.destroy), "samplecheck_plugin_destroy"},
                          {reinterpret_cast<const void*>(fns.sample), "samplecheck_plugin_sample"}}) {
    if (fn == nullptr) return PluginError(where + " does not export the required symbol " + name);
  }
  fns.name = Lookup<samplecheck_plugin_name_fn>(*lib, "samplecheck_plugin_name");
  fns.profile = Lookup<samplecheck_plugin_profile_fn>(*lib, "samplecheck_plugin_profile");
  fns.flags = Lookup<samplecheck_plugin_flags_fn>(*lib, "samplecheck_plugin_flags");
  fns.processed_distribution =
      Lookup<samplecheck_plugin_processed_distribution_fn>(*lib, "samplecheck_plugin_processed_distribution");
  fns.count_draws = Lookup<samplecheck_plugin_count_draws_fn>(*lib, "samplecheck_plugin_count_draws");

  const std::string config_str(config);
  ErrBuf err;
  void* handle = fns.create(config_str.c_str(), err.text.data(), err.text.size());
  if (handle == nullptr) {
    return PluginError(where + " refused config '" + config_str + "': " + err.Take("(no message)"));
  }
  std::string name = "plugin:" + Basename(path);
  if (fns.name) {
    const char* plugin_name = fns.name(handle);
    if (plugin_name && plugin_name[0]) name = std::string("plugin:") + plugin_name;
  }
  if (!config_str.empty()) name += ":" + config_str;
  return std::unique_ptr<Sampler>(std::make_unique<PluginSampler>(std::move(lib), fns, handle, std::move(name)));
}

}  // namespace samplecheck::harness
