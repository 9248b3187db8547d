// A samplecheck plugin (harness/plugin_abi.h) whose every answer is read from a script: the fuzz input of
// plugin_abi_fuzzer, passed hex-encoded as the plugin config. It breaks the ABI contract in every way a C function
// can without touching memory it was not given: bad return codes, tokens outside [-1, vocab) or never written,
// probabilities that are NaN, negative or do not sum to 1, histograms that do not add up (or wrap 2^64), error
// messages that fill the whole buffer without a terminating NUL, NULL or odd names and profiles, a failing create.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samplecheck/samplers/plugin_abi.h"

namespace {

struct Script {
  std::vector<uint8_t> bytes;
  size_t at = 0;
  std::string name;
  std::string profile;

  uint8_t U8() { return at < bytes.size() ? bytes[at++] : 0; }
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{U8()} << (8 * i);
    return v;
  }
  std::string Str() {
    const size_t n = U8() % 24;
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(U8() | 1));  // no embedded NUL
    return s;
  }
  // Writes an error message: empty, terminated, or filling the whole buffer with no NUL.
  void Err(char* err, size_t err_len) {
    switch (U8() % 3) {
      case 0: break;
      case 1: {
        const std::string s = Str();
        std::snprintf(err, err_len, "%s", s.c_str());
        break;
      }
      default: std::memset(err, 'x', err_len); break;
    }
  }
  int Rc() {
    const uint8_t r = U8();
    if (r < 160) return SAMPLECHECK_PLUGIN_OK;
    if (r < 250) return (r % 5);  // every defined code
    return static_cast<int>(r) - 300;  // undefined codes
  }
};

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

extern "C" {

int samplecheck_plugin_abi_version(void) { return SAMPLECHECK_PLUGIN_ABI_VERSION; }

void* samplecheck_plugin_create(const char* config, char* err, size_t err_len) {
  auto* s = new Script;
  for (size_t i = 0; config && config[i] && config[i + 1]; i += 2) {
    const int hi = Hex(config[i]), lo = Hex(config[i + 1]);
    if (hi < 0 || lo < 0) break;
    s->bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  if (s->U8() == 0xEE) {  // refuse the config
    s->Err(err, err_len);
    delete s;
    return nullptr;
  }
  s->name = s->Str();
  s->profile = s->Str();
  return s;
}

void samplecheck_plugin_destroy(void* handle) { delete static_cast<Script*>(handle); }

const char* samplecheck_plugin_name(void* handle) {
  auto* s = static_cast<Script*>(handle);
  return s->name.empty() ? nullptr : s->name.c_str();
}

const char* samplecheck_plugin_profile(void* handle) {
  auto* s = static_cast<Script*>(handle);
  return s->profile.size() == 1 ? nullptr : s->profile.c_str();
}

uint32_t samplecheck_plugin_flags(void* handle) { return static_cast<uint32_t>(static_cast<Script*>(handle)->U64()); }

int samplecheck_plugin_sample(void* handle, const samplecheck_plugin_batch* batch,
                              const samplecheck_plugin_params* /*params*/, int32_t* tokens_out, char* err,
                              size_t err_len) {
  auto* s = static_cast<Script*>(handle);
  const int rc = s->Rc();
  if (rc != SAMPLECHECK_PLUGIN_OK) {
    s->Err(err, err_len);
    return rc;
  }
  for (int64_t r = 0; r < batch->rows; ++r) {
    switch (s->U8() % 8) {
      case 0: tokens_out[r] = SAMPLECHECK_PLUGIN_INVALID_TOKEN; break;
      case 1: tokens_out[r] = static_cast<int32_t>(batch->vocab); break;
      case 2: tokens_out[r] = static_cast<int32_t>(s->U64()); break;
      case 3: break;  // never written
      case 4: tokens_out[r] = std::numeric_limits<int32_t>::min(); break;
      default: tokens_out[r] = static_cast<int32_t>(s->U8() % batch->vocab); break;
    }
  }
  return SAMPLECHECK_PLUGIN_OK;
}

int samplecheck_plugin_processed_distribution(void* handle, const float* /*row*/, int64_t vocab,
                                              const samplecheck_plugin_params* /*params*/, double* probs_out,
                                              char* err, size_t err_len) {
  auto* s = static_cast<Script*>(handle);
  const int rc = s->Rc();
  if (rc != SAMPLECHECK_PLUGIN_OK) {
    s->Err(err, err_len);
    return rc;
  }
  const bool write_all = s->U8() != 0x55;
  for (int64_t t = 0; t < vocab; ++t) {
    if (!write_all && t == vocab - 1) break;  // leave the last entry unwritten
    switch (s->U8() % 8) {
      case 0: probs_out[t] = std::numeric_limits<double>::quiet_NaN(); break;
      case 1: probs_out[t] = -1.0 / static_cast<double>(vocab); break;
      case 2: probs_out[t] = std::numeric_limits<double>::infinity(); break;
      case 3: {
        const uint64_t bits = s->U64();
        std::memcpy(&probs_out[t], &bits, sizeof bits);
        break;
      }
      default: probs_out[t] = 1.0 / static_cast<double>(vocab); break;
    }
  }
  return SAMPLECHECK_PLUGIN_OK;
}

int samplecheck_plugin_count_draws(void* handle, const float* /*row*/, int64_t vocab,
                                   const samplecheck_plugin_params* /*params*/, uint64_t draws, uint64_t* histogram,
                                   uint64_t* invalid_draws, char* err, size_t err_len) {
  auto* s = static_cast<Script*>(handle);
  const int rc = s->Rc();
  if (rc != SAMPLECHECK_PLUGIN_OK) {
    s->Err(err, err_len);
    return rc;
  }
  uint64_t left = draws;
  const uint8_t invalid_kind = s->U8() % 4;
  *invalid_draws = invalid_kind == 0 ? s->U64() : invalid_kind == 1 ? 1 : 0;
  left -= *invalid_draws;
  for (int64_t t = 0; t < vocab; ++t) {
    uint64_t c;
    switch (s->U8() % 6) {
      case 0: c = s->U64(); break;
      case 1: c = std::numeric_limits<uint64_t>::max() - (s->U8() % 4); break;
      case 2: c = left + 1; break;
      default: c = t + 1 == vocab ? left : left / 2; break;  // adds up exactly (modulo 2^64)
    }
    histogram[t] = c;
    left -= c;
  }
  return SAMPLECHECK_PLUGIN_OK;
}

}  // extern "C"
