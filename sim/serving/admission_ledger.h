// @brief AdmissionLedger: `--admission v2`, SGLang's "one home per token" admission (the HiCache HiSparse backing,
// sgl-project/sglang python/sglang/srt/managers/hisparse_hicache_admission.py, PR #35488), as integer bookkeeping of
// one dp rank, apart from the pools that move pages (sim/serving/pools.h) as SGLang keeps it apart from the coordinator.
//
// Every admitted prompt token needs ONE home, device or host, because the swap-in reads whichever tier holds it:
//   reservable = host capacity + usable device − claimed − pending
//   usable device = device pool − (live + 1) × temp buffer − Σ decode reserves − prefill chunk − (live + 1) × page
// (live = admitted requests holding a claim; the + 1 is the candidate's own buffer and slack page). A request is
// eligible only when its page-aligned prompt is at least the temp buffer (H + page): a smaller prefix makes admission a
// net capacity loss, so it runs as a standard request (its KV in device rows, no claim). Claims bill the full
// footprint from admission on, never crediting a resident match: SGLang's comments record that crediting it let a
// re-hit burst admit about twice as deep and hit a prefill OOM with the pool at 45 % use (write-back drains at a
// bandwidth, admission is instantaneous), and that demanding a host slot for every token (our `pools` rule) left the
// pool about 84 % idle. The simulation has no shared prefixes, so pending and claimed are one map here.
#pragma once

#include <cstdint>
#include <vector>

namespace hisparse::sim {

struct LedgerSizes {
  int64_t host = 0;        // host pool tokens of the rank
  int64_t device = 0;      // device pool tokens of the rank
  int64_t temp_slot = 0;   // device buffer a HiSparse request pins for its lifetime: H + page
  int64_t page = 64;
  int64_t chunk = 0;       // prefill chunk written before admission resolves (colocated); 0 under PD
};

class AdmissionLedger {
 public:
  explicit AdmissionLedger(const LedgerSizes& sizes);

  /// Page-aligned prompt, the span that must keep a home: floor(prompt / page) × page.
  int64_t tree_len(int64_t prompt_tokens) const;
  /// SGLang's eligibility: at least one whole page, and tree_len >= the temp buffer.
  bool eligible(int64_t prompt_tokens) const;
  /// Device tokens that can still home a prompt (never negative).
  int64_t usable_device() const;
  /// Tokens still reservable for new claims.
  int64_t reservable_left() const;
  /// Records an admitted request's claim (tree_len) and its decode reserve (output tokens, device-only).
  void claim(int64_t owner, int64_t tree_len, int64_t decode_reserve);
  bool claimed(int64_t owner) const;
  /// Drops the claim (finished or aborted); a request without one is left alone.
  void release(int64_t owner);
  int64_t live() const { return static_cast<int64_t>(claims_.size()); }
  const LedgerSizes& sizes() const { return sizes_; }

 private:
  struct Claim {
    int64_t owner = -1, tree_len = 0, decode_reserve = 0;
  };
  LedgerSizes sizes_;
  std::vector<Claim> claims_;   // few live requests per rank: a linear search is cheaper than a map
};

}  // namespace hisparse::sim
