// @brief Prompt → page keys of the prefix cache (prefix_pages.h).
#include "sim/serving/prefix/prefix_pages.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

namespace {

/// The whole pages of the first `tokens` tokens covered by `blocks` (block b: tokens [b × block_tokens, ...)).
std::vector<RadixCache::Key> block_pages(const std::vector<uint64_t>& blocks, int64_t tokens, int64_t request,
                                         int32_t block_tokens, int32_t page_tokens) {
  std::vector<RadixCache::Key> keys;
  if (blocks.empty()) return keys;
  if (page_tokens < 1 || block_tokens < 1 || block_tokens % page_tokens != 0)
    throw_error("prefix cache: page of {} tokens does not divide the workload's {}-token prefix blocks (expected a "
                "divisor, e.g. 1, 16, 32 or 64 for 512)",
                page_tokens, block_tokens);
  const int64_t per_block = block_tokens / page_tokens;
  // A key packs the block id and the page's index in it: ids above 2^44 would collide, and no trace comes near.
  constexpr int kIndexBits = 20;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t start = static_cast<int64_t>(b) * block_tokens;
    const int64_t in_block = std::min<int64_t>(block_tokens, tokens - start);
    const int64_t whole = std::max<int64_t>(0, in_block) / page_tokens;
    if (blocks[b] >> (64 - kIndexBits))
      throw_error("prefix cache: request {}: block id {} is above 2^{} (ids name blocks, not content)", request,
                  blocks[b], 64 - kIndexBits);
    for (int64_t j = 0; j < whole && j < per_block; ++j)
      keys.push_back((blocks[b] << kIndexBits) | static_cast<RadixCache::Key>(j));
    if (whole < per_block) break;  // a partial block ends the sequence
  }
  return keys;
}

}  // namespace

std::vector<RadixCache::Key> prompt_pages(const RequestSpec& r, int32_t block_tokens, int32_t page_tokens) {
  return block_pages(r.prefix_blocks, r.input_tokens, r.id, block_tokens, page_tokens);
}

std::vector<RadixCache::Key> finished_pages(const RequestSpec& r, int32_t block_tokens, int32_t page_tokens) {
  if (r.sequence_blocks.empty()) return prompt_pages(r, block_tokens, page_tokens);
  const int64_t written = int64_t{r.input_tokens} + std::max(0, r.output_tokens - 1);
  return block_pages(r.sequence_blocks, written, r.id, block_tokens, page_tokens);
}

}  // namespace hisparse::sim
