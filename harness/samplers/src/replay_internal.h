// Inside the samplers library: what the replay sources (replay_source.h) share with the CUDA source
// (src/cuda/cuda_replay.cpp) and the process source (src/process_replay.cpp). Internal.
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/core/error.h"
#include "samplecheck/samplers/replay_source.h"

namespace samplecheck::harness {

// The batch is well formed (CheckBatchShape, vocab >= 1), it has one label per row or none, every label is kNoLabel
// or in [0, vocab), and every row's parameters are valid under `profile` (the first bad row named).
Status CheckReplayBatch(const ReplayBatch& batch, const Profile& profile);

// process:<command> (src/process_sampler.cpp): LOGPROBS_BATCH over the process protocol; kInvalidArgument when the
// client's HELLO does not set the LOGPROBS_BATCH bit, the errors of MakeProcessSampler otherwise.
Result<std::unique_ptr<ReplaySource>> MakeProcessReplaySource(std::string_view command);

// cuda[:profile] (src/cuda/cuda_replay.cpp), in a build with CUDA only (without, the kind is not available).
Result<std::unique_ptr<ReplaySource>> MakeCudaReplaySource(std::string_view profile);

}  // namespace samplecheck::harness
