/* The samplecheck plugin C ABI, version 2: what a shared library exports so that `--sampler plugin:<lib.so>[:config]`
 * can check it. Pure C (C99), no samplecheck types: a plugin includes this one header and nothing else of
 * samplecheck. docs/plugin-abi.md is the full contract; examples/plugin/exact_plugin.cpp is a complete plugin.
 *
 * Required exports (the harness refuses a library that lacks one, naming it):
 *   int   samplecheck_plugin_abi_version(void);                            must return SAMPLECHECK_PLUGIN_ABI_VERSION
 *   void* samplecheck_plugin_create(const char* config, char* err, size_t err_len);
 *   void  samplecheck_plugin_destroy(void* handle);
 *   int   samplecheck_plugin_sample(void* handle, const samplecheck_plugin_batch* batch,
 *                                   const samplecheck_plugin_params* params, int32_t* tokens_out,
 *                                   char* err, size_t err_len);
 * Optional exports (looked up by name; absent = capability absent):
 *   const char* samplecheck_plugin_name(void* handle);        short name for reports ("flashinfer-topk")
 *   const char* samplecheck_plugin_profile(void* handle);     semantics profile it claims ("vllm"), or "" / NULL
 *   uint32_t    samplecheck_plugin_flags(void* handle);       SAMPLECHECK_PLUGIN_FLAG_* bits
 *   int samplecheck_plugin_processed_distribution(void* handle, const float* row, int64_t vocab,
 *                                                 const samplecheck_plugin_params* params, double* probs_out,
 *                                                 char* err, size_t err_len);
 *   int samplecheck_plugin_count_draws(void* handle, const float* row, int64_t vocab,
 *                                      const samplecheck_plugin_params* params, uint64_t draws,
 *                                      uint64_t* histogram, uint64_t* invalid_draws, char* err, size_t err_len);
 *   int samplecheck_plugin_verify_chain(void* handle, const samplecheck_plugin_verify_request* requests,
 *                                       int64_t count, char* err, size_t err_len);            (version 2)
 *       a speculative-decoding chain verifier (docs/speculative.md): `--verifier plugin:<lib.so>[:config]`.
 *
 * Version 1 plugins (no verify_chain, no samplecheck_plugin_verify_request) still load and work as samplers; a
 * plugin of either version without verify_chain cannot be used as a verifier.
 *
 * Rules: every function returns (nothing throws or longjmps across the ABI); every pointer is host memory owned by
 * the caller and valid only during the call; one handle is used by one thread at a time (different handles may be
 * used concurrently); `err` (err_len bytes, err_len >= 1) receives a NUL-terminated message when a function fails.
 */
#ifndef SAMPLECHECK_HARNESS_PLUGIN_ABI_H_
#define SAMPLECHECK_HARNESS_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAMPLECHECK_PLUGIN_ABI_VERSION 2
/* The oldest version a harness of this header still loads (as a sampler). */
#define SAMPLECHECK_PLUGIN_ABI_VERSION_MIN 1

/* Return codes of sample, processed_distribution and count_draws. */
#define SAMPLECHECK_PLUGIN_OK 0
#define SAMPLECHECK_PLUGIN_INVALID_ARGUMENT 1 /* a parameter the plugin's semantics reject (top_p = 0 in vllm) */
#define SAMPLECHECK_PLUGIN_UNSUPPORTED 2      /* the plugin cannot do this (a vocab too large, a dtype, ...) */
#define SAMPLECHECK_PLUGIN_ERROR 3            /* anything else (CUDA error, out of memory, a bug) */
#define SAMPLECHECK_PLUGIN_INVALID_ROW 4      /* processed_distribution only: the row cannot be sampled */

/* The token a plugin returns for a row it cannot sample (NaN logits, every logit -inf). */
#define SAMPLECHECK_PLUGIN_INVALID_TOKEN (-1)

/* Bits of samplecheck_plugin_flags. */
#define SAMPLECHECK_PLUGIN_FLAG_NONDETERMINISTIC 1u /* the same (seed, offset) may give different tokens */
#define SAMPLECHECK_PLUGIN_FLAG_VERIFY_SCRIPTED 2u  /* verify_chain honours samplecheck_plugin_verify_request::uniforms */

/* A batch of fp32 logits rows in host memory: row r is logits[r * row_stride + 0 .. vocab - 1]. */
typedef struct samplecheck_plugin_batch {
  const float* logits;
  int64_t rows;
  int64_t vocab;      /* >= 1 */
  int64_t row_stride; /* in elements, >= vocab */
} samplecheck_plugin_batch;

/* The sampling parameters of one row: 48 bytes, no padding, the same values as samplecheck::SamplingParams.
 * Which values disable a filter or mean greedy is the semantics profile's business (docs/semantics.md):
 * the harness passes the user's values through unchanged. */
typedef struct samplecheck_plugin_params {
  double temperature; /* logits are divided by it; 0 (or below the profile's threshold) is greedy */
  int64_t top_k;      /* keep the k most probable tokens; -1 (and 0 in most profiles) = disabled */
  double top_p;       /* nucleus mass; 1 = disabled */
  double min_p;       /* keep p >= min_p * max p; 0 = disabled */
  uint64_t seed;      /* RNG key of the row */
  uint64_t offset;    /* RNG counter of the row's (first) draw */
} samplecheck_plugin_params;

/* ---- Version 2: the chain verifier (docs/speculative.md, "The contract" and "The uniform stream") ---- */

/* The most draft positions g of one request. */
#define SAMPLECHECK_PLUGIN_MAX_DRAFT 16

/* How the draft distribution q_j is given. */
#define SAMPLECHECK_PLUGIN_DRAFT_PROBABILITIES 0 /* g rows of vocab fp32 probabilities (normalize them) */
#define SAMPLECHECK_PLUGIN_DRAFT_LOGITS 1        /* g rows of draft logits, processed under draft_params */
#define SAMPLECHECK_PLUGIN_DRAFT_ONE_HOT 2       /* no rows: q_j is the point mass on the draft token */

/* One request, verified `trials` times: trial i verifies draft_tokens[i g .. i g + g) with the stream at
 * (params.seed, params.offset + i (g + 1)) (or the scripted uniforms) and writes accepted[i] (0..g) and
 * emitted[i (g + 1) .. i (g + 1) + accepted[i]] (the accepted drafts, then the residual or bonus token; -1 when a
 * target row cannot be sampled). Slots of emitted past accepted[i] are not read. 168 bytes on LP64, no padding. */
typedef struct samplecheck_plugin_verify_request {
  const float* target;                    /* g + 1 rows of vocab fp32 logits, row j at target + j * vocab */
  int64_t vocab;                          /* >= 1 */
  int32_t g;                              /* 0..SAMPLECHECK_PLUGIN_MAX_DRAFT */
  int32_t draft_form;                     /* SAMPLECHECK_PLUGIN_DRAFT_* */
  const float* draft;                     /* g rows of vocab (PROBABILITIES, LOGITS); NULL for ONE_HOT */
  samplecheck_plugin_params params;       /* the target's processing; seed, offset: trial 0's stream */
  samplecheck_plugin_params draft_params; /* LOGITS: the draft's processing (seed, offset unused) */
  int64_t trials;                         /* >= 1 */
  const int32_t* draft_tokens;            /* trials * g tokens */
  const double* uniforms;                 /* NULL: Philox; else 2 (g + 1) values in [0, 1) used by every trial:
                                           * slot 2 (j - 1) the coin u_j, slot 2 (j - 1) + 1 the draw uniform d_j */
  int32_t* accepted;                      /* out: trials values */
  int32_t* emitted;                       /* out: trials * (g + 1) values */
} samplecheck_plugin_verify_request;

/* Function types of the exports, for dlsym. */
typedef int (*samplecheck_plugin_abi_version_fn)(void);
typedef void* (*samplecheck_plugin_create_fn)(const char* config, char* err, size_t err_len);
typedef void (*samplecheck_plugin_destroy_fn)(void* handle);
typedef int (*samplecheck_plugin_sample_fn)(void* handle, const samplecheck_plugin_batch* batch,
                                            const samplecheck_plugin_params* params, int32_t* tokens_out, char* err,
                                            size_t err_len);
typedef const char* (*samplecheck_plugin_name_fn)(void* handle);
typedef const char* (*samplecheck_plugin_profile_fn)(void* handle);
typedef uint32_t (*samplecheck_plugin_flags_fn)(void* handle);
typedef int (*samplecheck_plugin_processed_distribution_fn)(void* handle, const float* row, int64_t vocab,
                                                            const samplecheck_plugin_params* params,
                                                            double* probs_out, char* err, size_t err_len);
typedef int (*samplecheck_plugin_count_draws_fn)(void* handle, const float* row, int64_t vocab,
                                                 const samplecheck_plugin_params* params, uint64_t draws,
                                                 uint64_t* histogram, uint64_t* invalid_draws, char* err,
                                                 size_t err_len);
typedef int (*samplecheck_plugin_verify_chain_fn)(void* handle, const samplecheck_plugin_verify_request* requests,
                                                  int64_t count, char* err, size_t err_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SAMPLECHECK_HARNESS_PLUGIN_ABI_H_ */
