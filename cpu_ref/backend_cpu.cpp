// @brief CpuBackend: rows one after another through the single-row reference; copies are plain memcpy.
#include "cpu_ref/backend_cpu.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "cpu_ref/indexer.h"
#include "cpu_ref/sparse_attention.h"
#include "cpu_ref/swap_in.h"
#include "cpu_ref/topk.h"
#include "cpu_ref/deltakv.h"
#include "cpu_ref/memory/host_layout_copy.h"

namespace hisparse::cpu_ref {

void CpuBackend::swap_in(const SwapInBatchView& v, SwapInBatchResult& out) {
  check_swap_in_batch(v);
  const int64_t B = v.batch, K = v.top_k, H = v.H;
  out.slot_of.assign(static_cast<size_t>(B * K), -1);
  out.load_count.assign(static_cast<size_t>(B), 0);
  out.load_host.assign(static_cast<size_t>(B * K), -1);
  out.load_slot.assign(static_cast<size_t>(B * K), -1);
  out.counters.assign(static_cast<size_t>(B), SwapInCounters{});
  // The first invalid row is reported only after every row ran, so valid rows advance exactly as on the GPU,
  // where all rows run at once.
  std::optional<Error> first_error;
  SwapInPlan plan;
  std::vector<int32_t> saved_tokens, saved_lru;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t n = v.seq_len[b];
    if (n <= 0) continue;  // padded batch row: state untouched, outputs stay -1 / 0
    const StepContext where{v.request ? v.request[b] : b, v.layer ? v.layer[b] : 0, v.step};
    SwapInStateView state{v.slot_token + b * H, v.lru + b * H, v.H};
    if (v.host_pool) {
      // The host rows a plan loads are known only once it is made; keep the row's state to put it back if one of
      // them lies outside the pool (the contract: an invalid row is left untouched, as the CUDA kernel leaves it).
      saved_tokens.assign(state.slot_token, state.slot_token + H);
      saved_lru.assign(state.lru, state.lru + H);
    }
    try {
      cpu_ref::swap_in(state, v.selected + b * K, v.top_k, n, v.top_k,
                       v.host_loc ? v.host_loc + b * v.host_loc_stride : nullptr, v.row_bytes, where, plan);
    } catch (const Error& e) {
      if (!first_error) first_error = e;
      continue;
    }
    if (v.host_pool) {
      const auto bad = std::find_if(plan.load_host.begin(), plan.load_host.end(),
                                    [&](int64_t src) { return src < 0 || src >= v.host_rows; });
      if (bad != plan.load_host.end()) {
        std::copy(saved_tokens.begin(), saved_tokens.end(), state.slot_token);
        std::copy(saved_lru.begin(), saved_lru.end(), state.lru);
        if (!first_error)
          first_error = Error(fmt::format("swap_in: request {}, layer {}, step {} (batch row {}): load {} reads host "
                                          "row {}, outside the host pool of {} rows (docs/swap_in.md)",
                                          where.request, where.layer, where.step, b, bad - plan.load_host.begin(),
                                          *bad, v.host_rows));
        continue;
      }
    }
    std::memcpy(&out.slot_of[b * K], plan.slot_of.data(), plan.slot_of.size() * sizeof(int32_t));
    const int64_t M = static_cast<int64_t>(plan.load_host.size());
    out.load_count[b] = static_cast<int32_t>(M);
    for (int64_t m = 0; m < M; ++m) {
      out.load_host[b * K + m] = plan.load_host[m];
      out.load_slot[b * K + m] = plan.load_slot[m];
    }
    out.counters[b] = plan.counters;
    if (!v.host_pool) continue;
    for (int64_t m = 0; m < M; ++m) {
      const int64_t src = plan.load_host[m];  // inside the pool: checked above, before the state was kept
      std::memcpy(v.device_kv + (b * (H + 1) + plan.load_slot[m]) * v.row_bytes, v.host_pool + src * v.row_bytes,
                  static_cast<size_t>(v.row_bytes));
    }
  }
  if (first_error) throw *first_error;
}

void CpuBackend::gather(const RowCopyView& r) {
  check_row_copy(r, "gather");
  for (int64_t i = 0; i < r.count; ++i)
    std::memcpy(r.device_pool + r.device_row[i] * r.row_bytes, r.host_pool + r.host_row[i] * r.row_bytes,
                static_cast<size_t>(r.row_bytes));
}

void CpuBackend::backup(const RowCopyView& r) {
  check_row_copy(r, "backup");
  for (int64_t i = 0; i < r.count; ++i)
    std::memcpy(r.host_pool + r.host_row[i] * r.row_bytes, r.device_pool + r.device_row[i] * r.row_bytes,
                static_cast<size_t>(r.row_bytes));
}

void CpuBackend::sparse_attention(const SparseAttentionArgs& args, AttentionVariant) {
  cpu_ref::sparse_attention(args);
}

void CpuBackend::indexer_scores(const IndexerArgs& args) { cpu_ref::indexer_scores(args); }

void CpuBackend::topk(const TopkArgs& args) { cpu_ref::topk(args); }

void CpuBackend::layout_gather(const LayoutCopyView& view) { cpu_ref::layout_gather(view); }
void CpuBackend::layout_backup(const LayoutCopyView& view) { cpu_ref::layout_backup(view); }
void CpuBackend::deltakv_reconstruct(const DeltaKvArgs& args) { cpu_ref::deltakv_reconstruct(args); }

}  // namespace hisparse::cpu_ref
