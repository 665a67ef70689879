// @brief A request's prompt as the page keys of the radix prefix cache (radix_cache.h): whole pages only (SGLang's
// page_align_keys drops a partial last page), each named by the prefix block holding it and its place in the block,
// so two prompts get the same key exactly where their blocks say they agree.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/serving/prefix/radix_cache.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

/// The page keys of `r`'s prompt at `page_tokens` tokens a page, its blocks `block_tokens` long (the workload's).
/// Block b covers prompt tokens [b × block_tokens, min((b + 1) × block_tokens, input)); page j of it is the key
/// (block id, j). A page must not straddle two blocks: page_tokens divides block_tokens (SGLang's page sizes 1, 16,
/// 32 and 64 all divide Mooncake's 512), else an error naming both. No blocks: no keys (nothing can be shared).
std::vector<RadixCache::Key> prompt_pages(const RequestSpec& r, int32_t block_tokens, int32_t page_tokens);

/// The page keys a finished request inserts (cache_finished_req): with sequence_blocks, the whole pages of its
/// prompt and answer whose KV was written (input + output − 1 tokens: the last token is sampled, never fed back);
/// without, its prompt's (prompt_pages).
std::vector<RadixCache::Key> finished_pages(const RequestSpec& r, int32_t block_tokens, int32_t page_tokens);

}  // namespace hisparse::sim
