// @brief HiSparseCoordinator (memory side): per-request device buffers, admission, decode growth, eager backup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/swap_in_types.h"
#include "cpu_ref/memory/hisparse_allocator.h"
#include "cpu_ref/memory/host_pool.h"
#include "cpu_ref/memory/req_to_token_pool.h"

namespace hisparse::cpu_ref {

/// Row copies between the device pool and the host pool, for all layers; a plan, executed elsewhere.
struct TransferPlan {
  std::vector<int64_t> host;    // [M] host rows
  std::vector<int64_t> device;  // [M] device rows (same order)
  bool empty() const { return host.empty(); }
};

/// What admission did: the staging backup (device → host) or the direct-admission preload (host → device).
struct AdmitPlan {
  TransferPlan backup;   // staged admission: every prefill token device → host
  TransferPlan preload;  // direct admission with seq_len <= H: every token host → its buffer slot
  InitialState initial = InitialState::kIdentity;
};

/// What one decode step did for one request.
struct DecodePlan {
  int64_t logical_loc = 0;   // the new token's logical index (written to req_to_token)
  int64_t device_loc = 0;    // device row its KV is written to (buffer slot min(n-1, H))
  TransferPlan backup;       // eager backup of token n-2 (empty on the first step after admission)
  int64_t grown_slots = 0;   // device rows added to the buffer this step
};

/// Per request slot: the device buffer of HiSparse as SGLang manages it. While seq_len <= H the buffer grows page
/// by page (capacity min(ceil(n / page) × page, H)); once it would reach H it takes H + page slots, slot H being
/// the reserved newest-token slot (docs/swap_in.md). Requests are identified by their request slot,
/// which is also the owner of every index they hold in every pool.
///
/// Lifecycle: add_request → extend (colocated prefill, possibly chunked) → admit_staged, or add_request →
/// extend_logical_only (KV written straight to the host pool) → admit_direct; then decode steps; finish.
/// Every step checks all it needs first and throws (OutOfMemoryError included) without changing anything.
class HiSparseCoordinator {
 public:
  HiSparseCoordinator(ReqToTokenPool& req_to_token, HiSparseTokenToKVPoolAllocator& allocator, HostPool& host,
                      int64_t device_buffer_size);

  int64_t device_buffer_size() const { return H_; }
  int64_t padded_buffer_size() const { return H_ + page_size_; }
  /// Buffer capacity for a request of n tokens (0 for n == 0).
  int64_t capacity_for(int64_t n) const;

  int64_t add_request();
  std::vector<int64_t> extend(int64_t req, int64_t tokens);
  std::vector<int64_t> extend_logical_only(int64_t req, int64_t tokens);
  AdmitPlan admit_staged(int64_t req);
  AdmitPlan admit_direct(int64_t req);
  DecodePlan decode(int64_t req);
  /// Frees the device buffer, the mapping, the host rows, the logical indices and the request slot.
  void finish(int64_t req);

  bool active(int64_t req) const;
  bool admitted(int64_t req) const;
  int64_t seq_len(int64_t req) const;
  /// Device rows of the buffer, [capacity]; slot H (when present) is the reserved newest-token slot.
  const std::vector<int64_t>& buffer(int64_t req) const;
  /// Initial token of each of the H slots (identity or -1), what init_swap_in_state starts from.
  const std::vector<int32_t>& slot_token(int64_t req) const;

  /// Everything still held anywhere (request slots, logical/device indices, mappings, host pages), one line
  /// each; empty means no leak.
  std::vector<std::string> leaks() const;
  void check_invariants() const;

 private:
  struct RequestState {
    bool active = false;
    bool admitted = false;
    bool logical_only = false;
    bool skip_first_backup = false;
    int64_t seq_len = 0;
    std::vector<int64_t> buffer;      // device rows, [capacity]
    std::vector<int32_t> slot_token;  // [H] when admitted
  };
  RequestState& state(int64_t req, const char* what);
  const RequestState& state(int64_t req, const char* what) const;
  std::vector<int64_t> do_extend(int64_t req, int64_t tokens, bool logical_only);

  ReqToTokenPool& req_to_token_;
  HiSparseTokenToKVPoolAllocator& allocator_;
  HostPool& host_;
  int64_t H_;
  int64_t page_size_;
  std::vector<RequestState> requests_;  // [req_to_token.size()]
};

}  // namespace hisparse::cpu_ref
