// @brief The checks every reader applies to every step: positions in range, distinct, at most top_k valid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Where a record came from, for error messages ("file F: request R, step S, layer L: ...").
std::string where(const std::string& source, int64_t request, int64_t step, int32_t layer = -1);

/// Whether list[0..count) is strictly ascending (true for count < 2). Vectorised (AVX2 where the CPU has it): every
/// reader and the replay run it on every list.
bool strictly_ascending(const int32_t* list, int32_t count);

/// Throws unless every entry of `list[0..width)` is -1 or in [0, seq_len), valid entries are distinct and at most
/// `top_k` are valid. `scratch` is reused between calls to avoid allocating per layer.
void validate_layer(const int32_t* list, int32_t width, int32_t top_k, int32_t seq_len, const std::string& source,
                    int64_t request, int64_t step, int32_t layer, std::vector<int32_t>& scratch);

/// validate_layer for every layer of `rec` (width = meta.top_k), plus seq_len >= 1.
void validate_step(const TraceMeta& meta, const StepRecord& rec, std::vector<int32_t>& scratch);

/// Re-lays `positions` ([layers * from_width]) to width `to_width`: a wider row gets trailing -1; a narrower one
/// keeps its valid entries in order (error if there are more than `to_width`). Used for a top_k override.
void refit_width(std::vector<int32_t>& positions, int32_t layers, int32_t from_width, int32_t to_width,
                 const std::string& source, int64_t request, int64_t step);

}  // namespace hisparse::traces
