// @brief Upper bounds every reader checks before allocating from a size read out of a file.
#pragma once

#include <cstdint>

namespace hisparse::traces {

constexpr int32_t kMaxLayers = 4096;                // DeepSeek-V3.2 has 61
constexpr int32_t kMaxTopK = 1 << 20;               // DeepSeek-V3.2 selects 2048
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// Fuzzing: a step of a few-KB input refitted to a large top_k from its metadata (layers 1,000 x top_k 65,536) would
// allocate, zero and validate 256 MB per step; a cap as fuzz_replay's keeps every execution cheap, the checks the same.
constexpr int64_t kMaxStepEntries = int64_t{1} << 16;
#else
constexpr int64_t kMaxStepEntries = int64_t{1} << 26;  // layers * top_k of one step record (256 MB as int32)
#endif
// Context length: above any real model's (DeepSeek-V3.2: 163,840; the longest published contexts: 10M). Replay memory
// does not depend on it: the swap-in scratch and the offline policies' futures are sized by K + H and by the entries
// recorded, not by positions (cpu_ref/swap_in.h, cpu_ref/policies/layer_future.h).
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr int32_t kMaxSeqLen = 1 << 16;  // fuzzing: the same checks, at a size a million executions can afford
#else
constexpr int32_t kMaxSeqLen = 1 << 24;
#endif
// A generated trace's size: requests and steps per request (a larger trace is a typo, not a workload).
constexpr int64_t kMaxGeneratedRequests = int64_t{1} << 20;
constexpr int64_t kMaxGeneratedSteps = int64_t{1} << 20;

}  // namespace hisparse::traces
