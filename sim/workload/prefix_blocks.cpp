// @brief Prefix block ids of prompts that extend one another (prefix_blocks.h).
#include "sim/workload/prefix_blocks.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

int64_t shared_block_count(int64_t base_blocks, int64_t base_tokens, int64_t tokens, int64_t agree_tokens,
                           int32_t block_tokens) {
  if (block_tokens < 1) throw_error("prefix blocks: block of {} tokens, expected >= 1", block_tokens);
  if (agree_tokens < 0 || agree_tokens > std::min(base_tokens, tokens))
    throw_error("prefix blocks: {} agreeing tokens, expected 0 to min({}, {})", agree_tokens, base_tokens, tokens);
  // Identical prompts share every block, their partial last one included: same tokens up to the same end.
  if (agree_tokens == base_tokens && agree_tokens == tokens) return base_blocks;
  return std::min(base_blocks, agree_tokens / block_tokens);
}

std::vector<uint64_t> extend_blocks(const std::vector<uint64_t>& base, int64_t base_tokens, int64_t tokens,
                                    int64_t agree_tokens, int32_t block_tokens, BlockIdSource& ids) {
  const int64_t shared =
      shared_block_count(static_cast<int64_t>(base.size()), base_tokens, tokens, agree_tokens, block_tokens);
  const int64_t blocks = (tokens + block_tokens - 1) / block_tokens;
  std::vector<uint64_t> out(base.begin(), base.begin() + shared);
  while (static_cast<int64_t>(out.size()) < blocks) out.push_back(ids.next());
  return out;
}

}  // namespace hisparse::sim
