// The plugin sampler: dlopen + dlsym of the exports of plugin_abi.h, and the checks that turn a plugin's contract
// breaks into kPlugin errors.
#include "samplecheck/samplers/plugin_sampler.h"

#include <dlfcn.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {
namespace {

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
  samplecheck_plugin_verify_chain_fn verify_chain = nullptr;  // version 2 only
  int version = 0;
};

static_assert(sizeof(samplecheck_plugin_params) == 48, "plugin_abi.h: samplecheck_plugin_params must be 48 bytes");
static_assert(sizeof(void*) != 8 || sizeof(samplecheck_plugin_verify_request) == 168,
              "plugin_abi.h: samplecheck_plugin_verify_request must be 168 bytes on LP64");
static_assert(SAMPLECHECK_PLUGIN_MAX_DRAFT == kMaxSpecDraft, "plugin_abi.h and verifier.h disagree on the most g");

// One loaded library and one plugin handle, shared by the sampler and the verifier made from it (the plugin host
// serves both from one handle). The handle is destroyed before the library is closed.
struct Loaded {
  std::unique_ptr<Library> lib;
  Exports fns;
  void* handle = nullptr;
  std::string name;  // "plugin:<name>[:config]"
  std::string path;
  Loaded() = default;
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
  ~Loaded() {
    if (handle) fns.destroy(handle);
  }
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
  explicit PluginSampler(std::shared_ptr<Loaded> loaded)
      : loaded_(std::move(loaded)), fns_(loaded_->fns), handle_(loaded_->handle), name_(loaded_->name) {}

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

  Error CallError(const char* what, int rc, ErrBuf& err) const;

  std::shared_ptr<Loaded> loaded_;
  const Exports& fns_;
  void* handle_;
  std::string name_;
};

Error CallErrorOf(const std::string& name, const char* what, int rc, ErrBuf& err) {
  std::string message = name + ": " + what + " failed: " + err.Take("(the plugin gave no message)");
  switch (rc) {
    case SAMPLECHECK_PLUGIN_INVALID_ARGUMENT: return InvalidArgument(message);
    case SAMPLECHECK_PLUGIN_UNSUPPORTED: return Unsupported(message);
    case SAMPLECHECK_PLUGIN_ERROR: return PluginError(message);
    default:
      return PluginError(name + ": " + what + " returned " + std::to_string(rc) +
                         ", not one of the codes of plugin_abi.h (" + err.Take("no message") + ")");
  }
}

int32_t PluginDraftForm(DraftForm form) {
  switch (form) {
    case DraftForm::kProbabilities: return SAMPLECHECK_PLUGIN_DRAFT_PROBABILITIES;
    case DraftForm::kLogits: return SAMPLECHECK_PLUGIN_DRAFT_LOGITS;
    case DraftForm::kOneHot: return SAMPLECHECK_PLUGIN_DRAFT_ONE_HOT;
  }
  return -1;
}

// The chain verifier of a version-2 plugin (samplecheck_plugin_verify_chain). Its answers are checked: an accepted
// length outside 0..g or a token outside [-1, vocab) (or a slot left unwritten) is kPlugin naming the request, the
// trial and the value; whether the tokens follow the chain's laws is the spec campaign's business.
class PluginVerifier final : public Verifier {
 public:
  explicit PluginVerifier(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

  std::string Name() const override { return loaded_->name; }

  VerifierCapabilities GetCapabilities() const override {
    VerifierCapabilities caps;
    const uint32_t flags = loaded_->fns.flags ? loaded_->fns.flags(loaded_->handle) : 0u;
    caps.deterministic = (flags & SAMPLECHECK_PLUGIN_FLAG_NONDETERMINISTIC) == 0;
    caps.scripted_uniforms = (flags & SAMPLECHECK_PLUGIN_FLAG_VERIFY_SCRIPTED) != 0;
    caps.draft_logits = true;
    caps.parallel_instances = true;  // the ABI: different handles may be used concurrently
    if (loaded_->fns.profile) {
      const char* profile = loaded_->fns.profile(loaded_->handle);
      if (profile) caps.profile = profile;
    }
    return caps;
  }

  Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) override {
    if (Status st = CheckVerifyRequests(requests, results.size()); !st.ok()) return st;
    std::vector<Trials> trials(requests.size());
    for (size_t r = 0; r < requests.size(); ++r) {
      trials[r] = {requests[r], std::span<const int32_t>(requests[r].draft_tokens, static_cast<size_t>(requests[r].g)),
                   results.subspan(r, 1)};
    }
    return Call(trials);
  }

  Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                        std::span<VerifyResult> results) override {
    VerifyRequest first;
    if (Status st = CheckVerifyRepeated(request, draft_tokens, results.size(), &first); !st.ok()) return st;
    if (results.empty()) return Status::Ok();
    Trials one{first, draft_tokens, results};
    return Call({&one, 1});
  }

 private:
  struct Trials {
    VerifyRequest request;
    std::span<const int32_t> draft_tokens;  // results.size() * g
    std::span<VerifyResult> results;
  };

  Status Call(std::span<const Trials> all) {
    const std::string& name = loaded_->name;
    constexpr int32_t kUnwritten = std::numeric_limits<int32_t>::min();
    std::vector<samplecheck_plugin_verify_request> plugin(all.size());
    std::vector<std::vector<int32_t>> accepted(all.size()), emitted(all.size());
    for (size_t r = 0; r < all.size(); ++r) {
      const VerifyRequest& q = all[r].request;
      if (!q.uniforms.empty() && !GetCapabilities().scripted_uniforms) {
        return Unsupported(name + ": a scripted uniform stream was given, but the plugin does not set "
                                  "SAMPLECHECK_PLUGIN_FLAG_VERIFY_SCRIPTED");
      }
      const size_t n = all[r].results.size();
      accepted[r].assign(n, kUnwritten);
      emitted[r].assign(n * static_cast<size_t>(q.g + 1), kUnwritten);
      samplecheck_plugin_verify_request& p = plugin[r];
      p.target = q.target;
      p.vocab = q.vocab;
      p.g = q.g;
      p.draft_form = PluginDraftForm(q.draft_form);
      p.draft = q.draft_form == DraftForm::kOneHot ? nullptr : q.draft;
      p.params = ToPluginParams(q.params);
      p.draft_params = ToPluginParams(q.draft_params);
      p.trials = static_cast<int64_t>(n);
      p.draft_tokens = all[r].draft_tokens.data();
      p.uniforms = q.uniforms.empty() ? nullptr : q.uniforms.data();
      p.accepted = accepted[r].data();
      p.emitted = emitted[r].data();
    }
    ErrBuf err;
    const int rc = loaded_->fns.verify_chain(loaded_->handle, plugin.data(), static_cast<int64_t>(plugin.size()),
                                             err.text.data(), err.text.size());
    if (rc != SAMPLECHECK_PLUGIN_OK) return CallErrorOf(name, "verify_chain", rc, err);
    for (size_t r = 0; r < all.size(); ++r) {
      const VerifyRequest& q = all[r].request;
      const size_t stride = static_cast<size_t>(q.g + 1);
      for (size_t i = 0; i < all[r].results.size(); ++i) {
        const std::string where = "request " + std::to_string(r) + ", trial " + std::to_string(i);
        const int32_t a = accepted[r][i];
        if (a < 0 || a > q.g) {
          return PluginError(name + ": verify_chain returned accepted length " + std::to_string(a) + " for " + where +
                             (a == kUnwritten ? " (INT32_MIN, the value the harness writes before the call: left "
                                                "unwritten?)"
                                              : "") +
                             "; allowed: 0..g = 0.." + std::to_string(q.g));
        }
        VerifyResult& out = all[r].results[i];
        out.emitted.fill(kInvalidToken);
        for (int32_t j = 0; j <= a; ++j) {
          const int32_t t = emitted[r][i * stride + static_cast<size_t>(j)];
          if (t != kInvalidToken && (t < 0 || t >= q.vocab)) {
            return PluginError(name + ": verify_chain returned token " + std::to_string(t) + " at emitted slot " +
                               std::to_string(j) + " of " + where + " (accepted length " + std::to_string(a) +
                               (t == kUnwritten ? "; INT32_MIN: left unwritten?" : "") +
                               "); a token must be in [-1, " + std::to_string(q.vocab) + ")");
          }
          out.emitted[static_cast<size_t>(j)] = t;
        }
        out.accepted = a;
      }
    }
    return Status::Ok();
  }

  std::shared_ptr<Loaded> loaded_;
};

Error PluginSampler::CallError(const char* what, int rc, ErrBuf& err) const {
  return CallErrorOf(name_, what, rc, err);
}

}  // namespace

namespace {

Result<std::shared_ptr<Loaded>> Load(std::string_view path, std::string_view config) {
  const std::string path_str(path);
  const std::string where = "plugin " + path_str;
  if (path_str.empty()) return InvalidArgument("plugin spec has an empty library path (plugin:<path.so>[:config])");
  dlerror();
  void* raw = dlopen(path_str.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (raw == nullptr) {
    const char* why = dlerror();
    return PluginError("cannot load " + where + ": " + (why ? why : "dlopen failed"));
  }
  auto loaded = std::make_shared<Loaded>();
  loaded->lib = std::make_unique<Library>(raw);
  loaded->path = path_str;
  const Library* lib = loaded->lib.get();
  Exports& fns = loaded->fns;
  fns.abi_version = Lookup<samplecheck_plugin_abi_version_fn>(*lib, "samplecheck_plugin_abi_version");
  if (!fns.abi_version) {
    return PluginError(where + " does not export samplecheck_plugin_abi_version: not a samplecheck plugin (see "
                               "docs/plugin-abi.md)");
  }
  const int version = fns.abi_version();
  if (version < SAMPLECHECK_PLUGIN_ABI_VERSION_MIN || version > SAMPLECHECK_PLUGIN_ABI_VERSION) {
    return PluginError(where + " speaks plugin ABI version " + std::to_string(version) + "; this samplecheck speaks " +
                       std::to_string(SAMPLECHECK_PLUGIN_ABI_VERSION_MIN) + " to " +
                       std::to_string(SAMPLECHECK_PLUGIN_ABI_VERSION) + " (rebuild it against this plugin_abi.h)");
  }
  fns.version = version;
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
  // A version-1 plugin has no verifier, whatever it exports under that name.
  if (version >= 2) fns.verify_chain = Lookup<samplecheck_plugin_verify_chain_fn>(*lib, "samplecheck_plugin_verify_chain");

  const std::string config_str(config);
  ErrBuf err;
  void* handle = fns.create(config_str.c_str(), err.text.data(), err.text.size());
  if (handle == nullptr) {
    return PluginError(where + " refused config '" + config_str + "': " + err.Take("(no message)"));
  }
  loaded->handle = handle;
  std::string name = "plugin:" + Basename(path);
  if (fns.name) {
    const char* plugin_name = fns.name(handle);
    if (plugin_name && plugin_name[0]) name = std::string("plugin:") + plugin_name;
  }
  if (!config_str.empty()) name += ":" + config_str;
  loaded->name = std::move(name);
  return loaded;
}

Error NoVerifier(const Loaded& loaded) {
  return InvalidArgument(
      loaded.name + " (" + loaded.path + ", plugin ABI version " + std::to_string(loaded.fns.version) +
      ") cannot be used as --verifier: it does not export samplecheck_plugin_verify_chain (an optional export of "
      "plugin ABI version 2, docs/plugin-abi.md); it can still be checked as a sampler (--sampler plugin:...)");
}

}  // namespace

Result<std::unique_ptr<Sampler>> MakePluginSampler(std::string_view path, std::string_view config) {
  auto loaded = Load(path, config);
  if (!loaded.ok()) return loaded.error();
  return std::unique_ptr<Sampler>(std::make_unique<PluginSampler>(std::move(loaded).value()));
}

Result<std::unique_ptr<Verifier>> MakePluginVerifier(std::string_view path, std::string_view config) {
  auto loaded = Load(path, config);
  if (!loaded.ok()) return loaded.error();
  if (!(*loaded)->fns.verify_chain) return NoVerifier(**loaded);
  return std::unique_ptr<Verifier>(std::make_unique<PluginVerifier>(std::move(loaded).value()));
}

Result<PluginPair> LoadPluginPair(std::string_view path, std::string_view config) {
  auto loaded = Load(path, config);
  if (!loaded.ok()) return loaded.error();
  PluginPair pair;
  if ((*loaded)->fns.verify_chain) pair.verifier = std::make_unique<PluginVerifier>(*loaded);
  pair.sampler = std::make_unique<PluginSampler>(std::move(loaded).value());
  return pair;
}

}  // namespace samplecheck::harness
