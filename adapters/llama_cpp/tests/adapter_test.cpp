// The llama.cpp adapter against the real libllama (ctest engine_llama_cpp_adapter, label engine): what the
// statistical suites cannot see. Exits 77 (Skipped) when libllama is not unpacked.
//   1. chain=split draws exactly what chain=full draws (the same histogram for the same seeds and offsets): running
//      the deterministic samplers once per row is the same function of the row and the seed as the whole chain.
//   2. count_draws draw i is the draw of sample at offset + i.
//   3. deterministic facts of llama.cpp's chain: T = 0 and top_k = 1 return the maximal token; the engines.md check
//      (top-k 3, top-p 0.9 on log[.5, .25, .125, .0625, .0625]) never draws tokens 3 and 4.
//   4. rows=guard answers -1 for NaN / all -inf rows; rows=raw shows what the engine itself does with them.
//   5. parameters the llama-cpp profile refuses are INVALID_ARGUMENT with the value named.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

struct Plugin {
  void* lib = nullptr;
  samplecheck_plugin_create_fn create = nullptr;
  samplecheck_plugin_destroy_fn destroy = nullptr;
  samplecheck_plugin_sample_fn sample = nullptr;
  samplecheck_plugin_count_draws_fn count = nullptr;
  samplecheck_plugin_processed_distribution_fn processed = nullptr;
};

struct Handle {
  const Plugin& p;
  void* h;
  Handle(const Plugin& plugin, const std::string& config) : p(plugin) {
    char err[512] = {};
    h = p.create(config.c_str(), err, sizeof err);
    if (h == nullptr) std::printf("FAIL: create(%s): %s\n", config.c_str(), err);
  }
  ~Handle() {
    if (h != nullptr) p.destroy(h);
  }
  std::vector<uint64_t> Count(const std::vector<float>& row, samplecheck_plugin_params params, uint64_t draws,
                              uint64_t* invalid) {
    std::vector<uint64_t> histogram(row.size(), 0);
    char err[512] = {};
    *invalid = 0;
    const int rc = p.count(h, row.data(), static_cast<int64_t>(row.size()), &params, draws, histogram.data(), invalid,
                           err, sizeof err);
    Check(rc == SAMPLECHECK_PLUGIN_OK, std::string("count_draws: ") + err);
    return histogram;
  }
  int32_t Sample(const std::vector<float>& row, samplecheck_plugin_params params, int* rc_out = nullptr,
                 std::string* message = nullptr) {
    const samplecheck_plugin_batch batch{row.data(), 1, static_cast<int64_t>(row.size()),
                                         static_cast<int64_t>(row.size())};
    int32_t token = std::numeric_limits<int32_t>::min();
    char err[512] = {};
    const int rc = p.sample(h, &batch, &params, &token, err, sizeof err);
    if (rc_out != nullptr) *rc_out = rc;
    if (message != nullptr) *message = err;
    if (rc_out == nullptr) Check(rc == SAMPLECHECK_PLUGIN_OK, std::string("sample: ") + err);
    return token;
  }
};

samplecheck_plugin_params Params(double t, int64_t k, double p, double m, uint64_t seed = 7, uint64_t offset = 0) {
  return {t, k, p, m, seed, offset};
}

std::vector<float> Gaussian(int vocab, double sigma, uint64_t seed) {
  std::vector<float> row;
  uint64_t s = seed;
  auto next = [&]() {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return ((z ^ (z >> 31)) >> 11) * 0x1p-53;
  };
  for (int i = 0; i < vocab; ++i) {
    const double u1 = next() + 0x1p-54, u2 = next();
    row.push_back(static_cast<float>(sigma * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2)));
  }
  return row;
}

std::string Describe(const samplecheck_plugin_params& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "T %g, top_k %lld, top_p %g, min_p %g, seed %llu, offset %llu", p.temperature,
                static_cast<long long>(p.top_k), p.top_p, p.min_p, static_cast<unsigned long long>(p.seed),
                static_cast<unsigned long long>(p.offset));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <libsamplecheck_llama_cpp_plugin.so> <libllama.so>\n", argv[0]);
    return 2;
  }
  struct stat st{};
  if (stat(argv[2], &st) != 0) {
    std::printf("SKIPPED: %s is not there (bash scripts/setup unpacks @node-llama-cpp/linux-x64 3.22.1 when npm can "
                "reach the registry)\n", argv[2]);
    return 77;
  }
  Plugin plugin;
  plugin.lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin.lib == nullptr) {
    std::printf("FAIL: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  plugin.create = reinterpret_cast<samplecheck_plugin_create_fn>(dlsym(plugin.lib, "samplecheck_plugin_create"));
  plugin.destroy = reinterpret_cast<samplecheck_plugin_destroy_fn>(dlsym(plugin.lib, "samplecheck_plugin_destroy"));
  plugin.sample = reinterpret_cast<samplecheck_plugin_sample_fn>(dlsym(plugin.lib, "samplecheck_plugin_sample"));
  plugin.count = reinterpret_cast<samplecheck_plugin_count_draws_fn>(dlsym(plugin.lib, "samplecheck_plugin_count_draws"));
  plugin.processed = reinterpret_cast<samplecheck_plugin_processed_distribution_fn>(
      dlsym(plugin.lib, "samplecheck_plugin_processed_distribution"));
  const std::string lib = std::string("lib=") + argv[2];
  Handle split(plugin, lib);
  Handle full(plugin, lib + ",chain=full");
  Handle raw(plugin, lib + ",rows=raw");
  if (split.h == nullptr || full.h == nullptr || raw.h == nullptr) return 1;

  // 1 and 2: split == full == sample at offset + i, on rows with ties, masks and every filter.
  std::vector<float> tied(300);
  for (size_t i = 0; i < tied.size(); ++i) tied[i] = static_cast<float>(static_cast<int>(i % 5)) * 0.5f;
  std::vector<float> masked = Gaussian(1000, 1.0, 3);
  for (size_t i = 0; i < masked.size(); i += 3) masked[i] = -std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::vector<float>, samplecheck_plugin_params>> cases = {
      {Gaussian(1000, 2.0, 1), Params(1, -1, 1, 0)},
      {Gaussian(1000, 2.0, 1), Params(0.7, 50, 0.9, 0.01, 11, 1000)},
      {Gaussian(2000, 3.0, 2), Params(0.8, 100, 0.95, 0.01, 12, 5)},
      {Gaussian(1500, 1.0, 4), Params(1.3, -1, 0.8, 0, 13, 1ull << 40)},  // > 1024 unsorted: adaptive top-p sort
      {Gaussian(1000, 1.0, 5), Params(0.5, 0, 1, 0.2, 14, 3)},            // min-p alone (unsorted path)
      {tied, Params(1, 7, 0.7, 0, 15, 9)},
      {masked, Params(0.9, -1, 0.9, 0, 16, 0)},
      {Gaussian(1000, 1.0, 6), Params(0, 20, 0.9, 0, 17, 0)},  // T = 0
  };
  for (const auto& [row, params] : cases) {
    constexpr uint64_t kDraws = 3000;
    uint64_t invalid_split = 0, invalid_full = 0;
    const auto a = split.Count(row, params, kDraws, &invalid_split);
    const auto b = full.Count(row, params, kDraws, &invalid_full);
    Check(a == b && invalid_split == invalid_full, "split and full chains draw differently: " + Describe(params));
    std::vector<uint64_t> by_sample(row.size(), 0);
    for (uint64_t i = 0; i < 300; ++i) {
      samplecheck_plugin_params p = params;
      p.offset = params.offset + i;
      const int32_t token = split.Sample(row, p);
      if (token >= 0 && token < static_cast<int32_t>(row.size())) ++by_sample[static_cast<size_t>(token)];
    }
    uint64_t invalid = 0;
    const auto first = split.Count(row, params, 300, &invalid);
    Check(first == by_sample, "count_draws draw i is not sample at offset + i: " + Describe(params));
    uint64_t total = invalid_split;
    for (uint64_t c : a) total += c;
    Check(total == kDraws && invalid_split == 0, "draws lost or invalid: " + Describe(params));
  }

  // 3. deterministic facts.
  {
    const std::vector<float> row = Gaussian(500, 1.0, 8);
    size_t argmax = 0;
    for (size_t i = 1; i < row.size(); ++i) {
      if (row[i] > row[argmax]) argmax = i;
    }
    for (const auto& params : {Params(0, -1, 1, 0), Params(0, 40, 0.9, 0.05), Params(1, 1, 1, 0), Params(1, -1, 0, 0)}) {
      uint64_t invalid = 0;
      const auto h = split.Count(row, params, 500, &invalid);
      Check(h[argmax] == 500, "not always the maximal token: " + Describe(params));
    }
    std::vector<float> halving;
    for (double p : {0.5, 0.25, 0.125, 0.0625, 0.0625}) halving.push_back(static_cast<float>(std::log(p)));
    uint64_t invalid = 0;
    const auto h = split.Count(halving, Params(1, 3, 0.9, 0), 20000, &invalid);
    Check(h[3] == 0 && h[4] == 0 && h[0] > h[1] && h[1] > h[2] && h[2] > 0,
          "top-k 3, top-p 0.9 on log[.5, .25, .125, .0625, .0625] drew outside {0, 1, 2}");
  }

  // 4. unsamplable rows.
  {
    std::vector<float> nan_row = Gaussian(100, 1.0, 9);
    nan_row[37] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> all_masked(100, -std::numeric_limits<float>::infinity());
    for (const std::vector<float>* row : {static_cast<const std::vector<float>*>(&nan_row), &all_masked}) {
      Check(split.Sample(*row, Params(1, -1, 1, 0)) == SAMPLECHECK_PLUGIN_INVALID_TOKEN, "guard: not -1");
      uint64_t invalid = 0;
      split.Count(*row, Params(1, -1, 1, 0), 10, &invalid);
      Check(invalid == 10, "guard: count_draws did not count the row's draws invalid");
      // rows=raw: llama.cpp itself returns a token; its dist sums are NaN, nothing reaches the target, and it falls
      // back to the last candidate (llama_sampler_dist_apply's "fallback to the last token"): token V - 1 here.
      const int32_t token = raw.Sample(*row, Params(1, -1, 1, 0));
      std::printf("rows=raw: llama.cpp returns token %d for a %s row of 100 tokens\n", token,
                  row == &nan_row ? "NaN" : "all -inf");
      Check(token == 99, "rows=raw: llama.cpp no longer returns the last candidate for an unsamplable row");
    }
  }

  // 6. findings: what llama.cpp itself does where the llama-cpp profile defines another answer (docs/conformance.md).
  // Each is pinned: if a new llama.cpp changes it, this test says so and the write-up needs an update.
  {
    // Overflow: temp_impl divides the fp32 logits by T before dist subtracts the maximum; 40 / 1e-37 is +inf in
    // fp32, dist's softmax computes inf - inf = NaN, no running sum reaches the target and the "fallback to the last
    // token" returns token 1, whose probability is exp(-40 / 1e-37) = 0. The reference: token 0 with probability 1.
    const std::vector<float> row = {40.0f, 0.0f};
    uint64_t invalid = 0;
    const auto h = split.Count(row, Params(1e-37, -1, 1, 0), 1000, &invalid);
    std::printf("finding: row [40, 0], T = 1e-37: llama.cpp draws token 1 %llu of 1000 times (the profile: never)\n",
                static_cast<unsigned long long>(h[1]));
    Check(h[1] == 1000, "the T-overflow finding changed: token 1 drawn " + std::to_string(h[1]) + " of 1000 times");
    // +inf logit: the same NaN path. The reference gives the +inf token all the mass.
    const std::vector<float> inf_row = {std::numeric_limits<float>::infinity(), 0.0f, 0.0f};
    const auto g = split.Count(inf_row, Params(1, -1, 1, 0), 1000, &invalid);
    std::printf("finding: row [+inf, 0, 0]: llama.cpp draws token 2 %llu of 1000 times (the profile: token 0 always)\n",
                static_cast<unsigned long long>(g[2]));
    Check(g[2] == 1000, "the +inf finding changed: token 2 drawn " + std::to_string(g[2]) + " of 1000 times");
    // top_k >= V is a distributional no-op that sorts the array, so the same seed selects another token than with
    // top_k = -1 (dist walks the array in its order). Same distribution, different seeded token.
    const std::vector<float> two = {-64.0f, -63.9375f};
    int differ = 0;
    for (uint64_t offset = 0; offset < 200; ++offset) {
      differ += split.Sample(two, Params(1, -1, 1, 0, 0, offset)) != split.Sample(two, Params(1, 2, 1, 0, 0, offset));
    }
    std::printf("finding: row [-64, -63.9375]: top_k = 2 and top_k = -1 draw different tokens at %d of 200 seeds\n",
                differ);
    Check(differ > 0, "the top_k >= V reordering finding changed: the same tokens at every seed");
  }

  // 5. invalid parameters.
  {
    const std::vector<float> row = Gaussian(10, 1.0, 10);
    for (const auto& params : {Params(-1, -1, 1, 0), Params(1, -2, 1, 0), Params(1, -1, 1.5, 0), Params(1, -1, 1, 2),
                               Params(std::nan(""), -1, 1, 0)}) {
      int rc = 0;
      std::string message;
      split.Sample(row, params, &rc, &message);
      Check(rc == SAMPLECHECK_PLUGIN_INVALID_ARGUMENT && message.find("llama-cpp") != std::string::npos,
            "not refused: " + Describe(params) + " (" + message + ")");
    }
  }
  if (failures == 0) std::printf("llama.cpp adapter: every check passed\n");
  return failures == 0 ? 0 : 1;
}
