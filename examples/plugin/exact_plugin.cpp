// An example samplecheck plugin: a small, standalone, correct sampler for the `vllm` profile (docs/semantics.md
// §1.2), written against plugin_abi.h only, the way an engine team would wrap its own sampler.
//
//   temperature  logits / T; T < 1e-5 is greedy (argmax of the raw logits, lowest id on ties)
//   min-p        on the full softmax of the T-scaled logits: keep p >= min_p * max p
//   top-k        on the min-p survivors: keep every token whose logit is >= the k-th largest (ties kept);
//                k = 0 or -1 (or k >= the survivors) disables it
//   top-p        on the survivors renormalized: descending probability (lowest id first on ties), keep a token
//                iff the mass strictly above it is < top_p
//   draw         inverse CDF in ascending token id over the kept tokens with the Philox uniform of
//                reference/philox.h, so its draws match `--sampler exact` token for token
//   valid params T in [0, 2], top_k >= -1, top_p in (0, 1], min_p in [0, 1], no NaN
//
// Config (comma-separated): "" or "vllm" = the correct sampler; one "bug=<name>" injects a fault to show what a
// failing plugin looks like:
//   bug=no-renorm     top-p sees the full softmax instead of the distribution renormalized after min-p and top-k
//   bug=out-of-range  every draw returns token `vocab` (a contract break: the harness reports kPlugin)
//   bug=error         sample and count_draws fail with a message
//   bug=miscount      count_draws loses one draw (the harness checks that the histogram adds up)
//   bug=coin-edge     the chain verifier accepts iff u q(x) <= p(x) (not <): u = 0 accepts a draft the target
//                     gives probability 0 (docs/speculative.md, the coin-edge class)
//
// It is also a chain verifier (samplecheck_plugin_verify_chain, plugin ABI version 2; docs/speculative.md): the
// target processed as above, q from the draft's probabilities (normalized), its logits (processed as above under
// the draft's params) or one-hot; accept x_j iff u_j q_j(x_j) < p_j(x_j), on the first rejection a draw from
// normalize(max(0, p_j - q_j)), all accepted a bonus draw from p_{g+1}; greedy targets accept iff x_j is the argmax.
// The uniforms follow the Philox discipline of reference/speculative.h (coin: words 2, 3 of the block at counter
// offset + j - 1; draw: words 0, 1), or the scripted stream when one is given, so it reproduces
// `--verifier exact` token for token (up to rounding at CDF boundaries).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"

namespace {

// ---- Philox4x32-10 and the uniform of a draw (the definition in reference/philox.h) ----
struct Block {
  uint32_t v[4];
};

Block Philox4x32_10(Block counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kM0} * counter.v[0];
    const uint64_t p1 = uint64_t{kM1} * counter.v[2];
    counter = {{static_cast<uint32_t>(p1 >> 32) ^ counter.v[1] ^ key0, static_cast<uint32_t>(p1),
                static_cast<uint32_t>(p0 >> 32) ^ counter.v[3] ^ key1, static_cast<uint32_t>(p0)}};
    key0 += kW0;
    key1 += kW1;
  }
  return counter;
}

Block BlockAt(uint64_t seed, uint64_t offset) {
  return Philox4x32_10({{static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), 0, 0}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// A uniform in [2^-53, 1 - 2^-53] from two words of a block.
double UniformOf(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (uint64_t{hi} << 32 | lo) >> 12;
  return (static_cast<double>(bits) + 0.5) * 0x1p-52;
}

double UniformForDraw(uint64_t seed, uint64_t offset) {
  const Block b = BlockAt(seed, offset);
  return UniformOf(b.v[0], b.v[1]);
}

// ---- The sampler ----
enum class Bug { kNone, kNoRenorm, kOutOfRange, kError, kMiscount, kCoinEdge };

struct Plugin {
  Bug bug = Bug::kNone;
  std::string name = "exact-vllm";
};

void SetError(char* err, size_t err_len, const std::string& message) {
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", message.c_str());
}

// Empty string when valid, else the message.
std::string Validate(const samplecheck_plugin_params& p) {
  char buf[160];
  if (!(p.temperature >= 0.0 && p.temperature <= 2.0)) {
    std::snprintf(buf, sizeof buf, "temperature = %g is outside [0, 2] for profile vllm", p.temperature);
    return buf;
  }
  if (p.top_k < -1) {
    std::snprintf(buf, sizeof buf, "top_k = %lld is below -1 for profile vllm", static_cast<long long>(p.top_k));
    return buf;
  }
  if (!(p.top_p > 0.0 && p.top_p <= 1.0)) {
    std::snprintf(buf, sizeof buf, "top_p = %g is outside (0, 1] for profile vllm", p.top_p);
    return buf;
  }
  if (!(p.min_p >= 0.0 && p.min_p <= 1.0)) {
    std::snprintf(buf, sizeof buf, "min_p = %g is outside [0, 1] for profile vllm", p.min_p);
    return buf;
  }
  return {};
}

// The kept tokens (ascending id) and their probabilities; empty when the row cannot be sampled.
struct Kept {
  std::vector<int32_t> token;
  std::vector<long double> prob;
};

// Rows a and b hold the same logits (bit for bit) and p and q the same filter parameters (seeds may differ).
bool SameRowAndFilters(const float* a, const float* b, int64_t vocab, const samplecheck_plugin_params& p,
                       const samplecheck_plugin_params& q) {
  if (p.temperature != q.temperature || p.top_k != q.top_k || p.top_p != q.top_p || p.min_p != q.min_p) return false;
  return a == b || std::memcmp(a, b, static_cast<size_t>(vocab) * sizeof(float)) == 0;
}

Kept Process(const float* row, int64_t vocab, const samplecheck_plugin_params& p, Bug bug) {
  Kept kept;
  bool any_finite_or_pos_inf = false;
  for (int64_t i = 0; i < vocab; ++i) {
    if (std::isnan(row[i])) return kept;
    if (row[i] != -std::numeric_limits<float>::infinity()) any_finite_or_pos_inf = true;
  }
  if (!any_finite_or_pos_inf) return kept;

  if (p.temperature < 1e-5) {  // greedy: the argmax of the raw logits, lowest id on ties
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i) {
      if (row[i] > row[best]) best = i;
    }
    kept.token.push_back(static_cast<int32_t>(best));
    kept.prob.push_back(1.0L);
    return kept;
  }

  // Unnormalized probabilities w_i = exp(x_i - x_max) of the T-scaled logits (+inf logits share the mass).
  bool has_pos_inf = false;
  long double x_max = -std::numeric_limits<long double>::infinity();
  for (int64_t i = 0; i < vocab; ++i) {
    if (row[i] == std::numeric_limits<float>::infinity()) has_pos_inf = true;
    x_max = std::max(x_max, static_cast<long double>(row[i]) / p.temperature);
  }
  std::vector<long double> w(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    if (has_pos_inf) {
      w[i] = row[i] == std::numeric_limits<float>::infinity() ? 1.0L : 0.0L;
    } else {
      w[i] = std::exp(static_cast<long double>(row[i]) / p.temperature - x_max);
    }
  }
  long double full_sum = 0.0L;
  for (long double v : w) full_sum += v;

  // min-p on the full distribution (max w is 1).
  std::vector<char> alive(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) alive[i] = w[i] > 0.0L && w[i] >= static_cast<long double>(p.min_p);

  // top-k on the survivors, ties kept.
  std::vector<int32_t> order;
  for (int64_t i = 0; i < vocab; ++i) {
    if (alive[i]) order.push_back(static_cast<int32_t>(i));
  }
  auto by_prob = [&](int32_t a, int32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); };
  std::stable_sort(order.begin(), order.end(), by_prob);
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < order.size()) {
    const long double kth = w[order[static_cast<size_t>(p.top_k) - 1]];
    size_t keep = static_cast<size_t>(p.top_k);
    while (keep < order.size() && w[order[keep]] == kth) ++keep;
    for (size_t j = keep; j < order.size(); ++j) alive[order[j]] = 0;
    order.resize(keep);
  }

  // top-p on the renormalized survivors (bug=no-renorm: on the full softmax), strict, ties cut by position.
  long double survivors_sum = 0.0L;
  for (int32_t t : order) survivors_sum += w[t];
  const long double denom = bug == Bug::kNoRenorm ? full_sum : survivors_sum;
  // top_p = 1 disables top-p: a rounded cumulative sum can reach 1 before the deepest tail tokens are added.
  size_t keep = order.size();
  if (p.top_p < 1.0) {
    long double mass_above = 0.0L;
    keep = 0;
    while (keep < order.size() && mass_above < static_cast<long double>(p.top_p)) {
      mass_above += w[order[keep]] / denom;
      ++keep;
    }
  }
  for (size_t j = keep; j < order.size(); ++j) alive[order[j]] = 0;

  long double kept_sum = 0.0L;
  for (int64_t i = 0; i < vocab; ++i) {
    if (alive[i]) kept_sum += w[i];
  }
  for (int64_t i = 0; i < vocab; ++i) {
    if (alive[i]) {
      kept.token.push_back(static_cast<int32_t>(i));
      kept.prob.push_back(w[i] / kept_sum);
    }
  }
  return kept;
}

// Inverse CDF in ascending token id: the first kept token whose inclusive cumulative probability exceeds u.
int32_t Draw(const Kept& kept, double u) {
  long double cdf = 0.0L;
  for (size_t j = 0; j < kept.token.size(); ++j) {
    cdf += kept.prob[j];
    if (cdf > u) return kept.token[j];
  }
  return kept.token.back();  // rounding shortfall: the last kept token
}

// ---- The chain verifier ----
// One position: the target's kept tokens and probabilities, the draft's dense q, and the residual
// normalize(max(0, p - q)) (p itself when p = q: then no rejection can happen).
struct Position {
  Kept p;
  bool greedy = false;
  std::vector<long double> q;  // dense, vocab entries (empty for one-hot drafts: q is the point mass on the token)
  Kept residual;
};

long double ProbOf(const Kept& k, int32_t token) {
  const auto it = std::lower_bound(k.token.begin(), k.token.end(), token);
  return it != k.token.end() && *it == token ? k.prob[static_cast<size_t>(it - k.token.begin())] : 0.0L;
}

Kept Residual(const Kept& p, const std::vector<long double>& q, int32_t one_hot) {
  Kept r;
  long double mass = 0.0L;
  for (size_t i = 0; i < p.token.size(); ++i) {
    const int32_t t = p.token[i];
    const long double qt = one_hot >= 0 ? (t == one_hot ? 1.0L : 0.0L) : q[static_cast<size_t>(t)];
    const long double d = p.prob[i] - qt;
    if (d > 0.0L) {
      r.token.push_back(t);
      r.prob.push_back(d);
      mass += d;
    }
  }
  if (mass <= 0.0L) return p;
  for (long double& v : r.prob) v /= mass;
  return r;
}

// "" or the reason the request cannot be verified (the return code in *code).
std::string VerifyOne(const Plugin& plugin, const samplecheck_plugin_verify_request& q, int* code) {
  *code = SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
  if (q.g < 0 || q.g > SAMPLECHECK_PLUGIN_MAX_DRAFT) return "g = " + std::to_string(q.g) + " is outside 0..16";
  if (q.vocab < 1) return "vocab = " + std::to_string(q.vocab) + " is below 1";
  if (q.trials < 1) return "trials = " + std::to_string(q.trials) + " is below 1";
  if (q.draft_form < SAMPLECHECK_PLUGIN_DRAFT_PROBABILITIES || q.draft_form > SAMPLECHECK_PLUGIN_DRAFT_ONE_HOT) {
    return "draft form " + std::to_string(q.draft_form) + " is not one of SAMPLECHECK_PLUGIN_DRAFT_*";
  }
  if (std::string bad = Validate(q.params); !bad.empty()) return "target params: " + bad;
  const bool one_hot = q.draft_form == SAMPLECHECK_PLUGIN_DRAFT_ONE_HOT;
  if (q.draft_form == SAMPLECHECK_PLUGIN_DRAFT_LOGITS) {
    if (std::string bad = Validate(q.draft_params); !bad.empty()) return "draft params: " + bad;
  }
  const int32_t g = q.g;
  const size_t stride = static_cast<size_t>(g + 1);
  const size_t V = static_cast<size_t>(q.vocab);
  std::vector<Position> pos(stride);
  for (int32_t j = 0; j <= g; ++j) {
    pos[j].p = Process(q.target + static_cast<size_t>(j) * V, q.vocab, q.params, Bug::kNone);
    if (pos[j].p.token.empty()) {  // a target row that cannot be sampled: nothing is verified
      for (int64_t i = 0; i < q.trials; ++i) {
        q.accepted[i] = 0;
        q.emitted[static_cast<size_t>(i) * stride] = SAMPLECHECK_PLUGIN_INVALID_TOKEN;
      }
      return "";
    }
    pos[j].greedy = q.params.temperature < 1e-5;
  }
  for (int32_t j = 0; j < g && !one_hot; ++j) {
    const float* row = q.draft + static_cast<size_t>(j) * V;
    std::vector<long double>& qd = pos[j].q;
    qd.assign(V, 0.0L);
    if (q.draft_form == SAMPLECHECK_PLUGIN_DRAFT_PROBABILITIES) {
      long double sum = 0.0L;
      for (size_t t = 0; t < V; ++t) {
        if (!std::isfinite(row[t]) || row[t] < 0.0f) {
          return "draft row " + std::to_string(j) + ": probability " + std::to_string(row[t]) + " of token " +
                 std::to_string(t) + " is not finite and >= 0";
        }
        sum += row[t];
      }
      if (std::fabs(static_cast<double>(sum) - 1.0) > 1e-3) {
        return "draft row " + std::to_string(j) + " sums to " + std::to_string(static_cast<double>(sum)) +
               ", not 1 (tolerance 1e-3)";
      }
      for (size_t t = 0; t < V; ++t) qd[t] = row[t] / sum;
    } else {
      const Kept d = Process(row, q.vocab, q.draft_params, Bug::kNone);
      if (d.token.empty()) return "draft row " + std::to_string(j) + " cannot be sampled (NaN or all -inf)";
      for (size_t i = 0; i < d.token.size(); ++i) qd[static_cast<size_t>(d.token[i])] = d.prob[i];
    }
    pos[j].residual = Residual(pos[j].p, qd, -1);
  }
  const double* scripted = q.uniforms;
  if (scripted) {
    for (size_t i = 0; i < 2 * stride; ++i) {
      if (!(scripted[i] >= 0.0 && scripted[i] < 1.0)) {
        return "scripted uniform " + std::to_string(i) + " = " + std::to_string(scripted[i]) + " is outside [0, 1)";
      }
    }
  }
  for (int64_t i = 0; i < q.trials; ++i) {
    const int32_t* x = q.draft_tokens + static_cast<size_t>(i) * static_cast<size_t>(g);
    int32_t* out = q.emitted + static_cast<size_t>(i) * stride;
    const uint64_t offset = q.params.offset + static_cast<uint64_t>(i) * stride;
    int32_t j = 0;
    for (; j <= g; ++j) {
      double coin = 0, draw = 0;
      if (scripted) {
        coin = scripted[2 * j];
        draw = scripted[2 * j + 1];
      } else {
        const Block b = BlockAt(q.params.seed, offset + static_cast<uint64_t>(j));
        draw = UniformOf(b.v[0], b.v[1]);
        coin = UniformOf(b.v[2], b.v[3]);
      }
      const Position& at = pos[j];
      if (j == g) {  // every draft accepted: the bonus token from p_{g+1}
        out[j] = Draw(at.p, draw);
        break;
      }
      if (x[j] < 0 || x[j] >= q.vocab) {
        return "trial " + std::to_string(i) + ": draft token " + std::to_string(x[j]) + " is outside [0, vocab)";
      }
      const long double qx = one_hot ? 1.0L : at.q[static_cast<size_t>(x[j])];
      if (!(qx > 0.0L)) {
        return "trial " + std::to_string(i) + ": draft token " + std::to_string(x[j]) + " at position " +
               std::to_string(j + 1) + " has draft probability 0";
      }
      const long double px = ProbOf(at.p, x[j]);
      const long double u = coin;
      const bool accept = at.greedy ? x[j] == at.p.token.front()
                          : plugin.bug == Bug::kCoinEdge ? u * qx <= px
                                                         : u * qx < px;
      if (accept) {
        out[j] = x[j];
        continue;
      }
      if (at.greedy) {
        out[j] = at.p.token.front();
      } else if (one_hot) {
        out[j] = Draw(Residual(at.p, {}, x[j]), draw);
      } else {
        out[j] = Draw(at.residual, draw);
      }
      break;
    }
    q.accepted[i] = std::min(j, g);
  }
  *code = SAMPLECHECK_PLUGIN_OK;
  return "";
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) {
  return SAMPLECHECK_PLUGIN_ABI_VERSION;
}

__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char* config, char* err,
                                                                        size_t err_len) {
  try {
    auto plugin = std::make_unique<Plugin>();
    std::string items = config ? config : "";
    size_t start = 0;
    while (start <= items.size()) {
      const size_t comma = std::min(items.find(',', start), items.size());
      const std::string item = items.substr(start, comma - start);
      start = comma + 1;
      if (item.empty() || item == "vllm") continue;
      if (item == "bug=no-renorm") {
        plugin->bug = Bug::kNoRenorm;
      } else if (item == "bug=out-of-range") {
        plugin->bug = Bug::kOutOfRange;
      } else if (item == "bug=error") {
        plugin->bug = Bug::kError;
      } else if (item == "bug=miscount") {
        plugin->bug = Bug::kMiscount;
      } else if (item == "bug=coin-edge") {
        plugin->bug = Bug::kCoinEdge;
      } else {
        SetError(err, err_len, "unknown config item '" + item +
                                   "' (known: vllm, bug=no-renorm, bug=out-of-range, bug=error, bug=miscount, "
                                   "bug=coin-edge)");
        return nullptr;
      }
    }
    return plugin.release();
  } catch (...) {
    SetError(err, err_len, "out of memory");
    return nullptr;
  }
}

__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void* handle) {
  delete static_cast<Plugin*>(handle);
}

__attribute__((visibility("default"))) const char* samplecheck_plugin_name(void* handle) {
  return static_cast<Plugin*>(handle)->name.c_str();
}

__attribute__((visibility("default"))) const char* samplecheck_plugin_profile(void*) { return "vllm"; }

__attribute__((visibility("default"))) uint32_t samplecheck_plugin_flags(void*) {
  return SAMPLECHECK_PLUGIN_FLAG_VERIFY_SCRIPTED;
}

__attribute__((visibility("default"))) int samplecheck_plugin_sample(void* handle,
                                                                      const samplecheck_plugin_batch* batch,
                                                                      const samplecheck_plugin_params* params,
                                                                      int32_t* tokens_out, char* err,
                                                                      size_t err_len) {
  try {
    const Plugin& plugin = *static_cast<Plugin*>(handle);
    if (plugin.bug == Bug::kError) {
      SetError(err, err_len, "injected failure (config bug=error)");
      return SAMPLECHECK_PLUGIN_ERROR;
    }
    for (int64_t r = 0; r < batch->rows; ++r) {  // every row validated before anything is drawn
      const std::string bad = Validate(params[r]);
      if (!bad.empty()) {
        SetError(err, err_len, "row " + std::to_string(r) + ": " + bad);
        return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
      }
    }
    // A replicated batch holds one row many times with other seeds and offsets: a row equal to the one before it,
    // with the same filter parameters, reuses its kept set instead of processing the row again.
    Kept kept;
    for (int64_t r = 0; r < batch->rows; ++r) {
      const float* row = batch->logits + r * batch->row_stride;
      if (r == 0 || !SameRowAndFilters(row, row - batch->row_stride, batch->vocab, params[r], params[r - 1])) {
        kept = Process(row, batch->vocab, params[r], plugin.bug);
      }
      if (kept.token.empty()) {
        tokens_out[r] = SAMPLECHECK_PLUGIN_INVALID_TOKEN;
      } else if (plugin.bug == Bug::kOutOfRange) {
        tokens_out[r] = static_cast<int32_t>(batch->vocab);
      } else {
        tokens_out[r] = Draw(kept, UniformForDraw(params[r].seed, params[r].offset));
      }
    }
    return SAMPLECHECK_PLUGIN_OK;
  } catch (const std::bad_alloc&) {
    SetError(err, err_len, "out of memory");
    return SAMPLECHECK_PLUGIN_ERROR;
  } catch (...) {
    SetError(err, err_len, "unexpected exception");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

__attribute__((visibility("default"))) int samplecheck_plugin_processed_distribution(
    void* handle, const float* row, int64_t vocab, const samplecheck_plugin_params* params, double* probs_out,
    char* err, size_t err_len) {
  try {
    const Plugin& plugin = *static_cast<Plugin*>(handle);
    const std::string bad = Validate(*params);
    if (!bad.empty()) {
      SetError(err, err_len, bad);
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    const Kept kept = Process(row, vocab, *params, plugin.bug);
    if (kept.token.empty()) {
      SetError(err, err_len, "the row has a NaN or every logit is -inf");
      return SAMPLECHECK_PLUGIN_INVALID_ROW;
    }
    std::fill(probs_out, probs_out + vocab, 0.0);
    for (size_t j = 0; j < kept.token.size(); ++j) probs_out[kept.token[j]] = static_cast<double>(kept.prob[j]);
    return SAMPLECHECK_PLUGIN_OK;
  } catch (...) {
    SetError(err, err_len, "unexpected exception");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

__attribute__((visibility("default"))) int samplecheck_plugin_count_draws(void* handle, const float* row,
                                                                           int64_t vocab,
                                                                           const samplecheck_plugin_params* params,
                                                                           uint64_t draws, uint64_t* histogram,
                                                                           uint64_t* invalid_draws, char* err,
                                                                           size_t err_len) {
  try {
    const Plugin& plugin = *static_cast<Plugin*>(handle);
    if (plugin.bug == Bug::kError) {
      SetError(err, err_len, "injected failure (config bug=error)");
      return SAMPLECHECK_PLUGIN_ERROR;
    }
    const std::string bad = Validate(*params);
    if (!bad.empty()) {
      SetError(err, err_len, bad);
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    const Kept kept = Process(row, vocab, *params, plugin.bug);
    if (kept.token.empty() || plugin.bug == Bug::kOutOfRange) {
      *invalid_draws += draws;
      return SAMPLECHECK_PLUGIN_OK;
    }
    // Inclusive CDF once, then a binary search per draw (same answer as Draw, in O(log kept)).
    std::vector<long double> cdf(kept.prob.size());
    long double running = 0.0L;
    for (size_t j = 0; j < cdf.size(); ++j) cdf[j] = running += kept.prob[j];
    const uint64_t counted = plugin.bug == Bug::kMiscount && draws > 0 ? draws - 1 : draws;
    for (uint64_t i = 0; i < counted; ++i) {
      const long double u = UniformForDraw(params->seed, params->offset + i);
      const size_t j = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      ++histogram[kept.token[std::min(j, cdf.size() - 1)]];
    }
    return SAMPLECHECK_PLUGIN_OK;
  } catch (...) {
    SetError(err, err_len, "unexpected exception");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

__attribute__((visibility("default"))) int samplecheck_plugin_verify_chain(
    void* handle, const samplecheck_plugin_verify_request* requests, int64_t count, char* err, size_t err_len) {
  try {
    const Plugin& plugin = *static_cast<Plugin*>(handle);
    for (int64_t r = 0; r < count; ++r) {
      int code = SAMPLECHECK_PLUGIN_OK;
      const std::string bad = VerifyOne(plugin, requests[r], &code);
      if (code != SAMPLECHECK_PLUGIN_OK) {
        SetError(err, err_len, "request " + std::to_string(r) + ": " + bad);
        return code;
      }
    }
    return SAMPLECHECK_PLUGIN_OK;
  } catch (const std::bad_alloc&) {
    SetError(err, err_len, "out of memory");
    return SAMPLECHECK_PLUGIN_ERROR;
  } catch (...) {
    SetError(err, err_len, "unexpected exception");
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

}  // extern "C"
