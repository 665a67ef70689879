// @brief Encoding of one layer's list as a difference against the same layer's previous step (FORMAT.md §4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/byte_io.h"

namespace hisparse::traces {

/// Per (request, layer) coder state: the previous step's selection as a sorted set, plus scratch space.
struct LayerCoder {
  std::vector<int32_t> prev;     // sorted set of the previous step (empty at a request's first step)
  std::vector<int32_t> sorted;   // scratch: this step's set
  std::vector<int32_t> removed;  // scratch: ranks in prev / positions
  std::vector<int32_t> added;
  void reset() { prev.clear(); }
};

/// Appends the record of `row[0..width)` (already validated: -1 or distinct positions) and advances `coder`.
void encode_layer(const int32_t* row, int32_t width, LayerCoder& coder, std::vector<uint8_t>& out);

/// Reads one record into `row[0..width)`, advancing `coder`; checks every count, rank and position
/// (positions < seq_len, no duplicates, at most `top_k` valid). Throws hisparse::Error prefixed with `where`.
void decode_layer(ByteReader& in, int32_t width, int32_t top_k, int32_t seq_len, LayerCoder& coder, int32_t* row,
                  const std::string& where);

}  // namespace hisparse::traces
