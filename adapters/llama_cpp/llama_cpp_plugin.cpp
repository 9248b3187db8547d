// The llama.cpp adapter: llama.cpp's own sampler chain, loaded at run time from its shipped libllama, behind the
// samplecheck plugin ABI (docs/plugin-abi.md). Nothing of llama.cpp is compiled in: this file declares the few C
// types and functions of include/llama.h it calls (checked against llama.h of ggml-org/llama.cpp, 2026) and
// resolves them with dlsym. README.md beside it says what is real and what the adapter decides.
//
// Per row, the chain of common/sampling.cpp's default order for the samplers samplecheck has parameters for:
//   top-k (llama_sampler_init_top_k), typical (p = 1: disabled), top-p (min_keep 0), min-p (min_keep 0),
//   temperature (llama_sampler_init_temp_ext(T, 0, 1)), dist (llama_sampler_init_dist(seed32))
// applied with llama_sampler_apply to a freshly initialised llama_token_data_array {id, logit, p = 0} in token-id
// order (what llama_sampler_sample builds), the token = data[selected].id.
//
// Seeds: llama.cpp's dist sampler takes a 32-bit seed for its std::mt19937. Draw (seed, offset) uses
//   seed32 = high 32 bits of SplitMix64(SplitMix64(seed) ^ offset), 0xFFFFFFFF (LLAMA_DEFAULT_SEED: "random")
//   mapped to 0xFFFFFFFE,
// a fresh dist sampler per draw: the draw depends on (row, params, seed, offset) only, and draw i of count_draws is
// the draw of sample at offset + i. One draw of a row sees at most 2^32 distinct uniforms: N draws of one row carry
// an extra relative variance of about N / 2^32 (2.4e-4 at 2^20 draws).
//
// Config (comma-separated, all optional):
//   lib=<path>       libllama (a .so, or the folder holding libllama.v0.5.0.so); default $SAMPLECHECK_LLAMA_CPP_LIB,
//                    else the folder scripts/setup unpacks into (.engines/llama-cpp-3.22.1 of this source tree)
//   rows=guard|raw   guard (default): a row with a NaN logit or no logit above -inf is refused (token -1, the ABI's
//                    unsamplable row) before the engine sees it; raw: every row goes to the engine as it is
//   threads=<n>      count_draws spreads its draws over n threads (default: the machine's cores, at most 8); each
//                    draw's seed depends on its offset only, so the histogram is the same for every n
//   chain=split|full split (default): count_draws runs the deterministic part of the chain (every sampler but
//                    dist) once per row and call, and each draw applies a fresh dist sampler to a fresh copy of
//                    the array it left (the same function of the row and the seed as the whole chain: the
//                    filters draw no randoms; tested token for token); full: a fresh whole chain on a fresh array
//                    per draw
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"

#ifndef SAMPLECHECK_LLAMA_CPP_DEFAULT_LIB
#define SAMPLECHECK_LLAMA_CPP_DEFAULT_LIB ""
#endif

namespace {

// ---- include/llama.h: the declarations this adapter uses (C ABI, x86-64) ----
struct llama_token_data {
  int32_t id;   // llama_token
  float logit;
  float p;
};
struct llama_token_data_array {
  llama_token_data* data;
  size_t size;
  int64_t selected;  // index into data, not a token id
  bool sorted;
};
struct llama_sampler_chain_params {
  bool no_perf;
};
struct llama_sampler;  // opaque

constexpr uint32_t kLlamaDefaultSeed = 0xFFFFFFFFu;  // LLAMA_DEFAULT_SEED: the dist sampler seeds itself randomly

struct LlamaApi {
  void* handle = nullptr;
  llama_sampler_chain_params (*chain_default_params)() = nullptr;
  llama_sampler* (*chain_init)(llama_sampler_chain_params) = nullptr;
  void (*chain_add)(llama_sampler*, llama_sampler*) = nullptr;
  llama_sampler* (*init_top_k)(int32_t) = nullptr;
  llama_sampler* (*init_typical)(float, size_t) = nullptr;
  llama_sampler* (*init_top_p)(float, size_t) = nullptr;
  llama_sampler* (*init_min_p)(float, size_t) = nullptr;
  llama_sampler* (*init_temp_ext)(float, float, float) = nullptr;
  llama_sampler* (*init_dist)(uint32_t) = nullptr;
  void (*apply)(llama_sampler*, llama_token_data_array*) = nullptr;
  void (*free)(llama_sampler*) = nullptr;
};

void Write(char* err, size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  std::snprintf(err, err_len, "%s", message.c_str());
}

template <typename F>
bool Resolve(void* handle, const char* name, F* out, std::string& error) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) error = std::string("libllama has no symbol ") + name + " (not the llama.cpp C API this adapter declares)";
  return *out != nullptr;
}

bool IsDirectory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool LoadApi(std::string path, LlamaApi& api, std::string& error) {
  if (path.empty()) {
    error = "no libllama given: set lib=<path> in the config or $SAMPLECHECK_LLAMA_CPP_LIB, or run scripts/setup "
            "(it unpacks @node-llama-cpp/linux-x64 3.22.1 into .engines/)";
    return false;
  }
  if (IsDirectory(path)) path += "/libllama.v0.5.0.so";
  api.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) {
    const char* why = dlerror();
    error = "cannot load libllama " + path + ": " + (why != nullptr ? why : "unknown error") +
            " (run scripts/setup to unpack it, or give lib=<path>)";
    return false;
  }
  void* h = api.handle;
  return Resolve(h, "llama_sampler_chain_default_params", &api.chain_default_params, error) &&
         Resolve(h, "llama_sampler_chain_init", &api.chain_init, error) &&
         Resolve(h, "llama_sampler_chain_add", &api.chain_add, error) &&
         Resolve(h, "llama_sampler_init_top_k", &api.init_top_k, error) &&
         Resolve(h, "llama_sampler_init_typical", &api.init_typical, error) &&
         Resolve(h, "llama_sampler_init_top_p", &api.init_top_p, error) &&
         Resolve(h, "llama_sampler_init_min_p", &api.init_min_p, error) &&
         Resolve(h, "llama_sampler_init_temp_ext", &api.init_temp_ext, error) &&
         Resolve(h, "llama_sampler_init_dist", &api.init_dist, error) &&
         Resolve(h, "llama_sampler_apply", &api.apply, error) &&
         Resolve(h, "llama_sampler_free", &api.free, error);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The 32-bit seed of llama.cpp's dist sampler for draw (seed, offset); never LLAMA_DEFAULT_SEED.
uint32_t DistSeed(uint64_t seed, uint64_t offset) {
  const uint32_t s = static_cast<uint32_t>(SplitMix64(SplitMix64(seed) ^ offset) >> 32);
  return s == kLlamaDefaultSeed ? kLlamaDefaultSeed - 1 : s;
}

enum class Rows { kGuard, kRaw };
enum class Chain { kSplit, kFull };

struct Adapter {
  LlamaApi api;
  Rows rows = Rows::kGuard;
  Chain chain = Chain::kSplit;
  int threads = 1;
  std::string name;
  std::vector<llama_token_data> array;     // the array the chain works on
  std::vector<llama_token_data> filtered;  // split: what the deterministic samplers left
};

// NaN anywhere, or no logit above -inf: the engine would still return a token (its dist falls back to the last
// candidate when the sums are NaN); the ABI wants -1 for such a row.
bool Unsamplable(const float* row, int64_t vocab) {
  bool any_alive = false;
  for (int64_t i = 0; i < vocab; ++i) {
    if (std::isnan(row[i])) return true;
    if (row[i] > -std::numeric_limits<float>::infinity()) any_alive = true;
  }
  return !any_alive;
}

// The values the llama-cpp profile refuses (docs/semantics.md): llama.cpp itself takes any float / int32 (top_k <= 0,
// top_p >= 1 and min_p <= 0 disable their sampler), so this is the adapter's front-end check, not the engine's.
bool Validate(const samplecheck_plugin_params& p, std::string& error) {
  char buf[256];
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    std::snprintf(buf, sizeof buf, "temperature = %.17g is outside [0, inf) for profile llama-cpp", p.temperature);
  } else if (p.top_k < -1) {
    std::snprintf(buf, sizeof buf, "top_k = %lld is not -1 (disabled), 0 (disabled), or an integer >= 1 for profile "
                  "llama-cpp", static_cast<long long>(p.top_k));
  } else if (!(p.top_p >= 0 && p.top_p <= 1)) {
    std::snprintf(buf, sizeof buf, "top_p = %.17g is outside [0, 1] (0 = greedy) for profile llama-cpp", p.top_p);
  } else if (!(p.min_p >= 0 && p.min_p <= 1)) {
    std::snprintf(buf, sizeof buf, "min_p = %.17g is outside [0, 1] for profile llama-cpp", p.min_p);
  } else {
    return true;
  }
  error = buf;
  return false;
}

// The chain of common_sampler_init for these parameters, every sampler but dist (the deterministic part).
llama_sampler* FilterChain(const LlamaApi& api, const samplecheck_plugin_params& p) {
  llama_sampler_chain_params chain_params = api.chain_default_params();
  chain_params.no_perf = true;
  llama_sampler* chain = api.chain_init(chain_params);
  const int32_t k = p.top_k > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max()
                                                                   : static_cast<int32_t>(p.top_k);
  constexpr size_t kMinKeep = 0;  // common_params_sampling::min_keep
  api.chain_add(chain, api.init_top_k(k));
  api.chain_add(chain, api.init_typical(1.0f, kMinKeep));  // typ_p = 1: disabled (common's default)
  api.chain_add(chain, api.init_top_p(static_cast<float>(p.top_p), kMinKeep));
  api.chain_add(chain, api.init_min_p(static_cast<float>(p.min_p), kMinKeep));
  api.chain_add(chain, api.init_temp_ext(static_cast<float>(p.temperature), 0.0f, 1.0f));  // dynatemp off
  return chain;
}

void FreshArray(const float* row, int64_t vocab, std::vector<llama_token_data>& array) {
  array.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) array[static_cast<size_t>(i)] = {static_cast<int32_t>(i), row[i], 0.0f};
}

// Applies `sampler` to `array` as llama_sampler_sample does; returns the token (or -1 when dist selected nothing).
int32_t ApplyAndSelect(const LlamaApi& api, llama_sampler* sampler, std::vector<llama_token_data>& array,
                       size_t size, bool sorted) {
  llama_token_data_array cur{array.data(), size, -1, sorted};
  api.apply(sampler, &cur);
  if (cur.selected < 0 || static_cast<size_t>(cur.selected) >= cur.size) return -1;
  return cur.data[cur.selected].id;
}

// One draw through the whole chain on a fresh array.
int32_t DrawFull(Adapter& a, const float* row, int64_t vocab, const samplecheck_plugin_params& p, uint64_t offset) {
  FreshArray(row, vocab, a.array);
  llama_sampler* chain = FilterChain(a.api, p);
  a.api.chain_add(chain, a.api.init_dist(DistSeed(p.seed, offset)));
  const int32_t token = ApplyAndSelect(a.api, chain, a.array, a.array.size(), false);
  a.api.free(chain);
  return token;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) { return SAMPLECHECK_PLUGIN_ABI_VERSION; }

__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char* config, char* err, size_t err_len) {
  try {
    auto adapter = std::make_unique<Adapter>();
    const unsigned cores = std::thread::hardware_concurrency();
    adapter->threads = static_cast<int>(cores == 0 ? 1 : (cores > 8 ? 8 : cores));
    const char* env = std::getenv("SAMPLECHECK_LLAMA_CPP_LIB");
    std::string lib = env != nullptr && *env != '\0' ? env : SAMPLECHECK_LLAMA_CPP_DEFAULT_LIB;
    std::string text = config != nullptr ? config : "";
    std::string tags;
    size_t start = 0;
    while (start <= text.size() && !text.empty()) {
      const size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? text.size() + 1 : comma + 1;
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key == "lib" && !value.empty()) {
        lib = value;
      } else if (key == "rows" && (value == "guard" || value == "raw")) {
        adapter->rows = value == "raw" ? Rows::kRaw : Rows::kGuard;
        if (value == "raw") tags += ",rows=raw";
      } else if (key == "threads" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos &&
                 value.size() <= 3 && std::stoi(value) >= 1 && std::stoi(value) <= 256) {
        adapter->threads = std::stoi(value);
      } else if (key == "chain" && (value == "split" || value == "full")) {
        adapter->chain = value == "full" ? Chain::kFull : Chain::kSplit;
        if (value == "full") tags += ",chain=full";
      } else {
        Write(err, err_len, "llama.cpp adapter: unknown config item '" + item +
                                "'; allowed: lib=<path>, rows=guard|raw, threads=<1..256>, chain=split|full "
                                "(comma-separated)");
        return nullptr;
      }
    }
    std::string error;
    if (!LoadApi(lib, adapter->api, error)) {
      Write(err, err_len, "llama.cpp adapter: " + error);
      if (adapter->api.handle != nullptr) dlclose(adapter->api.handle);
      return nullptr;
    }
    adapter->name = "llama.cpp" + tags;
    return adapter.release();
  } catch (...) {
    Write(err, err_len, "llama.cpp adapter: create failed (out of memory?)");
    return nullptr;
  }
}

__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void* handle) {
  auto* adapter = static_cast<Adapter*>(handle);
  if (adapter == nullptr) return;
  void* lib = adapter->api.handle;
  delete adapter;
  // libllama stays loaded: unloading a C++ library with static state (ggml's backend registry) at exit is not worth
  // the risk, and the process ends soon after.
  (void)lib;
}

__attribute__((visibility("default"))) const char* samplecheck_plugin_name(void* handle) {
  return static_cast<Adapter*>(handle)->name.c_str();
}

__attribute__((visibility("default"))) const char* samplecheck_plugin_profile(void*) { return "llama-cpp"; }

__attribute__((visibility("default"))) uint32_t samplecheck_plugin_flags(void*) { return 0; }

__attribute__((visibility("default"))) int samplecheck_plugin_sample(void* handle, const samplecheck_plugin_batch* batch,
                                                                     const samplecheck_plugin_params* params,
                                                                     int32_t* tokens_out, char* err, size_t err_len) {
  try {
    auto& a = *static_cast<Adapter*>(handle);
    std::string error;
    for (int64_t r = 0; r < batch->rows; ++r) {
      if (!Validate(params[r], error)) {
        Write(err, err_len, "row " + std::to_string(r) + ": " + error);
        return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
      }
    }
    for (int64_t r = 0; r < batch->rows; ++r) {
      const float* row = batch->logits + r * batch->row_stride;
      if (a.rows == Rows::kGuard && Unsamplable(row, batch->vocab)) {
        tokens_out[r] = SAMPLECHECK_PLUGIN_INVALID_TOKEN;
        continue;
      }
      tokens_out[r] = DrawFull(a, row, batch->vocab, params[r], params[r].offset);
    }
    return SAMPLECHECK_PLUGIN_OK;
  } catch (const std::bad_alloc&) {
    Write(err, err_len, "llama.cpp adapter: out of memory");
    return SAMPLECHECK_PLUGIN_ERROR;
  } catch (...) {
    Write(err, err_len, "llama.cpp adapter: the engine threw");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

// The probabilities llama.cpp draws from: the chain with a dist sampler applied to a fresh array; dist writes the
// normalized probability of every candidate left (its softmax, fp32) into data[i].p.
__attribute__((visibility("default"))) int samplecheck_plugin_processed_distribution(
    void* handle, const float* row, int64_t vocab, const samplecheck_plugin_params* params, double* probs_out,
    char* err, size_t err_len) {
  try {
    auto& a = *static_cast<Adapter*>(handle);
    std::string error;
    if (!Validate(*params, error)) {
      Write(err, err_len, error);
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    if (a.rows == Rows::kGuard && Unsamplable(row, vocab)) {
      Write(err, err_len, "the row has a NaN logit or no logit above -inf");
      return SAMPLECHECK_PLUGIN_INVALID_ROW;
    }
    FreshArray(row, vocab, a.array);
    llama_sampler* chain = FilterChain(a.api, *params);
    a.api.chain_add(chain, a.api.init_dist(DistSeed(params->seed, params->offset)));
    llama_token_data_array cur{a.array.data(), a.array.size(), -1, false};
    a.api.apply(chain, &cur);
    a.api.free(chain);
    for (int64_t i = 0; i < vocab; ++i) probs_out[i] = 0.0;
    for (size_t i = 0; i < cur.size; ++i) probs_out[cur.data[i].id] = static_cast<double>(cur.data[i].p);
    return SAMPLECHECK_PLUGIN_OK;
  } catch (...) {
    Write(err, err_len, "llama.cpp adapter: processed_distribution failed");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

__attribute__((visibility("default"))) int samplecheck_plugin_count_draws(void* handle, const float* row, int64_t vocab,
                                                                          const samplecheck_plugin_params* params,
                                                                          uint64_t draws, uint64_t* histogram,
                                                                          uint64_t* invalid_draws, char* err,
                                                                          size_t err_len) {
  try {
    auto& a = *static_cast<Adapter*>(handle);
    std::string error;
    if (!Validate(*params, error)) {
      Write(err, err_len, error);
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    if (a.rows == Rows::kGuard && Unsamplable(row, vocab)) {
      *invalid_draws += draws;
      return SAMPLECHECK_PLUGIN_OK;
    }
    auto count = [&](int32_t token) {
      if (token >= 0 && token < vocab) {
        ++histogram[token];
      } else {
        ++*invalid_draws;
      }
    };
    if (a.chain == Chain::kFull) {
      for (uint64_t i = 0; i < draws; ++i) count(DrawFull(a, row, vocab, *params, params->offset + i));
      return SAMPLECHECK_PLUGIN_OK;
    }
    // split: the samplers before dist once, on a fresh array; then each draw a fresh copy of what they left.
    FreshArray(row, vocab, a.array);
    llama_sampler* filters = FilterChain(a.api, *params);
    llama_token_data_array cur{a.array.data(), a.array.size(), -1, false};
    a.api.apply(filters, &cur);
    a.api.free(filters);
    const size_t size = cur.size;
    const bool sorted = cur.sorted;
    a.filtered.assign(cur.data, cur.data + size);
    // Draw i uses DistSeed(seed, offset + i) whichever thread runs it: the histogram does not depend on threads.
    const uint64_t workers = std::min<uint64_t>(static_cast<uint64_t>(a.threads), draws / 1024 + 1);
    std::vector<std::vector<uint64_t>> partial(workers, std::vector<uint64_t>(static_cast<size_t>(vocab), 0));
    std::vector<uint64_t> partial_invalid(workers, 0);
    auto work = [&](uint64_t w) {
      std::vector<llama_token_data> scratch;
      const uint64_t begin = draws * w / workers, end = draws * (w + 1) / workers;
      for (uint64_t i = begin; i < end; ++i) {
        scratch.assign(a.filtered.begin(), a.filtered.end());
        llama_sampler* dist = a.api.init_dist(DistSeed(params->seed, params->offset + i));
        const int32_t token = ApplyAndSelect(a.api, dist, scratch, size, sorted);
        a.api.free(dist);
        if (token >= 0 && token < vocab) {
          ++partial[w][static_cast<size_t>(token)];
        } else {
          ++partial_invalid[w];
        }
      }
    };
    std::vector<std::thread> pool;
    for (uint64_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread& t : pool) t.join();
    for (uint64_t w = 0; w < workers; ++w) {
      for (int64_t t = 0; t < vocab; ++t) histogram[t] += partial[w][static_cast<size_t>(t)];
      *invalid_draws += partial_invalid[w];
    }
    return SAMPLECHECK_PLUGIN_OK;
  } catch (const std::bad_alloc&) {
    Write(err, err_len, "llama.cpp adapter: out of memory");
    return SAMPLECHECK_PLUGIN_ERROR;
  } catch (...) {
    Write(err, err_len, "llama.cpp adapter: count_draws failed");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

}  // extern "C"
