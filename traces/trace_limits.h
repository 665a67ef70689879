// @brief Upper bounds every reader checks before allocating from a size read out of a file.
#pragma once

#include <cstdint>

namespace hisparse::traces {

constexpr int32_t kMaxLayers = 4096;                // DeepSeek-V3.2 has 61
constexpr int32_t kMaxTopK = 1 << 20;               // DeepSeek-V3.2 selects 2048
constexpr int64_t kMaxStepEntries = int64_t{1} << 26;  // layers * top_k of one step record (256 MB as int32)

}  // namespace hisparse::traces
