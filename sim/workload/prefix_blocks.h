// @brief Prefix block ids for prompts that extend one another (a conversation's turns, an agent's steps, sessions
// behind one system prompt), in the Mooncake `hash_ids` sense RequestSpec::prefix_blocks documents.
#pragma once

#include <cstdint>
#include <vector>

namespace hisparse::sim {

/// Hands out block ids never used before in one workload, so that only blocks named on purpose are shared.
class BlockIdSource {
 public:
  uint64_t next() { return next_++; }

 private:
  uint64_t next_ = 0;
};

/// How many of `base`'s blocks a prompt of `tokens` tokens shares when its first `agree_tokens` tokens are those of
/// the base prompt (`base_tokens` long, its blocks `base_blocks`): block b covers [b × block_tokens, (b + 1) ×
/// block_tokens) and is shared only when both prompts hold all of it and agree on all of it, i.e. (b + 1) × block_tokens
/// <= agree_tokens; the one exception is a last, partial block both prompts end on with the same tokens (identical
/// prompts). So the base's partial last block is not shared by a prompt that goes on past it.
int64_t shared_block_count(int64_t base_blocks, int64_t base_tokens, int64_t tokens, int64_t agree_tokens,
                           int32_t block_tokens);

/// The block ids of a prompt of `tokens` tokens whose first `agree_tokens` tokens are those of the prompt `base`
/// (`base_tokens` long): `base`'s ids where shared_block_count says, fresh ids from `ids` after, ceil(tokens /
/// block_tokens) in all.
std::vector<uint64_t> extend_blocks(const std::vector<uint64_t>& base, int64_t base_tokens, int64_t tokens,
                                    int64_t agree_tokens, int32_t block_tokens, BlockIdSource& ids);

}  // namespace hisparse::sim
