// @brief Prompt → page keys of the prefix cache (prefix_pages.h).
#include "sim/serving/prefix/prefix_pages.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

std::vector<RadixCache::Key> prompt_pages(const RequestSpec& r, int32_t block_tokens, int32_t page_tokens) {
  std::vector<RadixCache::Key> keys;
  if (r.prefix_blocks.empty()) return keys;
  if (page_tokens < 1 || block_tokens < 1 || block_tokens % page_tokens != 0)
    throw_error("prefix cache: page of {} tokens does not divide the workload's {}-token prefix blocks (expected a "
                "divisor, e.g. 1, 16, 32 or 64 for 512)",
                page_tokens, block_tokens);
  const int64_t per_block = block_tokens / page_tokens;
  // A key packs the block id and the page's index in it: ids above 2^44 would collide, and no trace comes near.
  constexpr int kIndexBits = 20;
  for (size_t b = 0; b < r.prefix_blocks.size(); ++b) {
    const int64_t start = static_cast<int64_t>(b) * block_tokens;
    const int64_t tokens = std::min<int64_t>(block_tokens, r.input_tokens - start);
    const int64_t whole = tokens / page_tokens;
    if (r.prefix_blocks[b] >> (64 - kIndexBits))
      throw_error("prefix cache: request {}: block id {} is above 2^{} (ids name blocks, not content)", r.id,
                  r.prefix_blocks[b], 64 - kIndexBits);
    for (int64_t j = 0; j < whole && j < per_block; ++j)
      keys.push_back((r.prefix_blocks[b] << kIndexBits) | static_cast<RadixCache::Key>(j));
    if (whole < per_block) break;  // a partial block ends the prompt
  }
  return keys;
}

}  // namespace hisparse::sim
