// @brief HiSparseV2Session: SGLang's V2 coordinator over the requests of a multi-request trace, as integer
// bookkeeping (docs/swap_in.md, "Admission over a trace"): each request is admitted after its prefill through
// HiSparseV2Admission (the short-prefix gate, host capacity, indexer pages, temp buffer), a device pool that runs out
// makes HiCache evict the V2 requests' prefixes (per radix node, leaf first under the current rules: only a prefix's
// tail; the whole prefix under the older ones, core/hisparse_v2.h v2_evicted_begin), and a step that finds nothing
// left to evict retracts a request, which comes back later with its prefix recomputed and an empty buffer. The result
// is a V2Schedule: per request, from which step on which positions are on the host, and where its buffer starts empty.
// The replay's hisparse-v2 policy reads it (cpu_ref/policies/hisparse_v2.cpp); simulate's V2 admission uses
// HiSparseV2Admission directly.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cpu_ref/memory/hisparse_v2_admission.h"
#include "cpu_ref/policies/policy.h"

namespace hisparse::cpu_ref {

/// The pools a session runs in (the buffer size H and the rules are the policy's).
struct V2SessionPools {
  int64_t device_pool_tokens = 0;   // the device KV pool the requests share, tokens (> 0)
  int64_t host_pool_tokens = 0;     // host capacity for admitted prefixes; 0: unbounded (no host pool attached)
  int64_t indexer_pages = -1;       // expanded indexer pages; -1: unbounded
  int32_t node_tokens = 0;          // radix node length of a prefix (a node per prefill chunk); <= 0: one node
};

/// One request of the trace: its decode steps have sequence lengths first_n, first_n + 1, ... (steps of them).
struct V2RequestSteps {
  int64_t id = 0;
  int32_t first_n = 0;
  int64_t steps = 0;
};

/// What the coordinator decided for a request from the step of sequence length from_n on (until the next phase).
struct V2Phase {
  int32_t from_n = 0;
  V2Admit outcome = V2Admit::kV2;
  int32_t evicted_begin = 0;  // [evicted_begin, evicted_end) is on the host only; empty for a standard request
  int32_t evicted_end = 0;
  bool fresh_buffer = false;  // the buffer starts empty at this step (an admission or a re-admission)
};

/// Counts of one session: admissions by outcome (first admissions and re-admissions), retractions, and how much of
/// the admitted prefixes was on the host at their requests' last steps.
struct V2SessionCounts {
  std::array<int64_t, 6> admissions{};  // indexed by V2Admit
  int64_t retractions = 0;
  int64_t readmissions = 0;
  int64_t v2_requests_partly_evicted = 0;  // V2 at their last step with 0 < evicted tokens < their prefix
  int64_t prefix_tokens = 0;               // Σ evicted_end at the last step of V2 requests
  int64_t evicted_tokens = 0;              // Σ (evicted_end - evicted_begin) there
  int64_t fallbacks() const;               // admissions that ran as standard
};

struct V2Schedule {
  std::map<int64_t, std::vector<V2Phase>> phases;  // per request, from_n ascending
  V2SessionCounts counts;

  /// The phase of request `id` at sequence length n (the last with from_n <= n), nullptr for a request the session
  /// did not see or a step before its first phase; *index that phase's index (a new index with fresh_buffer set: the
  /// buffer restarts empty).
  const V2Phase* phase(int64_t id, int32_t n, int32_t* index = nullptr) const;
};

/// A replay's schedules, one per (hisparse-v2 policy spec with its rules, buffer size H).
using V2Schedules = std::map<std::pair<std::string, int32_t>, std::shared_ptr<const V2Schedule>>;

/// Gives `policy` the schedule of (spec, H) when there is one (the replay's hook; a no-op otherwise).
inline void attach_v2_schedule(SwapInPolicy& policy, const V2Schedules& schedules, const std::string& spec,
                               int32_t H) {
  const auto it = schedules.find({spec, H});
  if (it != schedules.end()) policy.use_v2_schedule(it->second);
}

/// Runs the requests as one batch in lockstep: admitted in trace order (first come, first served, a request waits
/// until its prefill fits), every running request decoding one token per step. Throws hisparse::Error naming the
/// request when the pool cannot hold it even alone, and for invalid sizes.
V2Schedule plan_v2_session(const std::vector<V2RequestSteps>& requests, int32_t H, int32_t page, V2Coordinator rules,
                           const V2SessionPools& pools);

}  // namespace hisparse::cpu_ref
