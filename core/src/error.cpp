#include "samplecheck/core/error.h"

namespace samplecheck {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidRow: return "invalid row";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kPlugin: return "plugin error";
    case ErrorCode::kCuda: return "cuda error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

}  // namespace samplecheck
