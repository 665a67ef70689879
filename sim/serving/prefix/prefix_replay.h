// @brief A workload's prompts through the radix prefix cache alone, in arrival order, as if each request were
// prefilled at its arrival and cached at once (no request holds a lock past its own insert): the hit rate and the
// prefill tokens a cache of a given size saves, before any serving run. A lower bound on SGLang's hits where the trace
// names only prompt blocks: SGLang also caches each request's output tokens (cache_finished_req inserts input +
// output), which the next turn's new block ids cannot be matched to.
#pragma once

#include <cstdint>

#include "sim/workload/workload.h"

namespace hisparse::sim {

struct PrefixReplayOptions {
  int32_t page_tokens = 64;    // SGLang's --page-size for the deployment (DeepSeek-V3.2's FlashMLA: 64)
  int64_t capacity_pages = 0;  // pages the cache may hold; 0: unbounded
};

struct PrefixReplayResult {
  int64_t requests = 0;
  int64_t input_tokens = 0;    // every prompt's tokens
  int64_t hit_tokens = 0;      // of them, found in the cache (whole pages): prefill tokens saved
  int64_t evicted_pages = 0;
  int64_t peak_pages = 0;      // most pages held at once
  double hit_rate() const { return input_tokens > 0 ? static_cast<double>(hit_tokens) / input_tokens : 0.0; }
};

PrefixReplayResult replay_prefix_cache(const Workload& w, const PrefixReplayOptions& o);

}  // namespace hisparse::sim
