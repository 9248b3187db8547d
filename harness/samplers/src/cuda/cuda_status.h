// Inside the cuda sampler and verifier: CUDA runtime and kernels/ statuses as the harness's Status.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "samplecheck/core/error.h"
#include "samplecheck/kernels/sampling.h"

namespace samplecheck::harness::cuda_status {

inline Error CudaFailure(cudaError_t err, const char* what) {
  return {ErrorCode::kCuda, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")"};
}

inline Status FromKernels(const kernels::Status& st) {
  if (st.ok()) return Status::Ok();
  return Error{st.code == kernels::ErrorCode::kInvalidArgument ? ErrorCode::kInvalidArgument : ErrorCode::kCuda,
               st.message};
}

}  // namespace samplecheck::harness::cuda_status

// Returns the CUDA failure of `call` (a cudaError_t expression) from the enclosing function.
#define SC_CUDA(call)                                                                \
  do {                                                                               \
    const cudaError_t sc_err = (call);                                               \
    if (sc_err != cudaSuccess) return ::samplecheck::harness::cuda_status::CudaFailure(sc_err, #call); \
  } while (0)
