// Errors are values: the one error vocabulary of samplecheck's host code (stats/, reference/, harness/, properties/,
// tools/). Every function that can fail on user input returns Status or Result<T>; nothing throws across a library
// boundary and nothing aborts on user input. The message names the bad value and what is allowed
// ("top_p = 1.5 is outside (0, 1] for profile vllm"). kernels/ keeps its own status at the CUDA boundary
// (kernels/sampling.h); the cuda sampler converts it in one place (harness/samplers/src/cuda/cuda_sampler.cpp).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace samplecheck {

enum class ErrorCode {
  kInvalidArgument,  // a parameter or option outside its allowed range
  kInvalidRow,       // a logits row that cannot be sampled (NaN, all -inf, empty)
  kUnsupported,      // an optional capability the sampler does not have
  kIo,               // a file could not be read or written
  kParse,            // a malformed file or message (suite, report, .npy, protocol)
  kPlugin,           // an external sampler (plugin, process) failed or broke its contract
  kCuda,             // a CUDA runtime error
  kInternal,         // a bug in samplecheck
};

const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  std::string ToString() const { return std::string(ErrorCodeName(code)) + ": " + message; }
  // The same error with "context: " in front of its message ("case topk: row: vocab = 0 is outside [1, 2^20]").
  Error WithContext(const std::string& context) const { return {code, context + ": " + message}; }
};

// Status: ok, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }

  bool ok() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

// Result<T>: a T, or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  Result(Status status) : v_(status.error()) {}  // NOLINT: only from a failed Status

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

inline Error InvalidArgument(std::string message) { return {ErrorCode::kInvalidArgument, std::move(message)}; }
inline Error Unsupported(std::string message) { return {ErrorCode::kUnsupported, std::move(message)}; }
inline Error InternalError(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }
inline Error ParseError(std::string message) { return {ErrorCode::kParse, std::move(message)}; }
inline Error PluginError(std::string message) { return {ErrorCode::kPlugin, std::move(message)}; }

}  // namespace samplecheck
