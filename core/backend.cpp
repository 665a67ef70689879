// @brief Shape checks shared by every Backend implementation, so both reject the same malformed calls.
#include "core/backend.h"

#include "core/error.h"

namespace hisparse {

const char* copy_mode_name(CopyMode mode) {
  switch (mode) {
    case CopyMode::kFused: return "fused";
    case CopyMode::kSeparate: return "separate";
    case CopyMode::kCopyEngine: return "copy-engine";
  }
  return "?";
}

const char* attention_variant_name(AttentionVariant variant) {
  return variant == AttentionVariant::kExact ? "exact" : "fast";
}

void check_swap_in_batch(const SwapInBatchView& b) {
  if (b.batch < 0) throw_error("swap_in: batch = {}, expected >= 0", b.batch);
  if (b.H < 1) throw_error("swap_in: device_buffer_size H = {}, expected >= 1", b.H);
  if (b.top_k < 0 || b.top_k > b.H)
    throw_error("swap_in: top_k = {} with device_buffer_size H = {}; the contract requires 0 <= top_k <= H",
                b.top_k, b.H);
  if (b.batch == 0) return;
  if (!b.slot_token || !b.lru || !b.seq_len || (b.top_k > 0 && !b.selected))
    throw_error("swap_in: slot_token, lru, selected and seq_len must all be given");
  if (b.host_loc && b.host_loc_stride < 1)
    throw_error("swap_in: host_loc_stride = {}, expected >= 1 when host_loc is given", b.host_loc_stride);
  if (b.row_bytes < 16 || b.row_bytes % 16 != 0)
    throw_error("swap_in: row_bytes = {}, expected a positive multiple of 16", b.row_bytes);
  if ((b.host_pool == nullptr) != (b.device_kv == nullptr))
    throw_error("swap_in: give both host_pool and device_kv (copy the loads) or neither (plan only)");
  if (b.host_pool && b.host_rows < 1) throw_error("swap_in: host_rows = {}, expected >= 1", b.host_rows);
  if (b.host_loc)
    for (int32_t r = 0; r < b.batch; ++r)
      if (b.seq_len[r] > b.host_loc_stride)
        throw_error("swap_in: row {} has seq_len {} but host_loc holds only {} tokens per row", r, b.seq_len[r],
                    b.host_loc_stride);
}

void check_row_copy(const RowCopyView& r, const char* what) {
  if (r.count < 0) throw_error("{}: count = {}, expected >= 0", what, r.count);
  if (r.row_bytes < 16 || r.row_bytes % 16 != 0)
    throw_error("{}: row_bytes = {}, expected a positive multiple of 16", what, r.row_bytes);
  if (r.count == 0) return;
  if (!r.host_row || !r.device_row || !r.host_pool || !r.device_pool)
    throw_error("{}: host_row, device_row, host_pool and device_pool must all be given", what);
  for (int64_t i = 0; i < r.count; ++i) {
    if (r.host_row[i] < 0 || r.host_row[i] >= r.host_rows)
      throw_error("{}: host_row[{}] = {}, expected 0 <= row < {}", what, i, r.host_row[i], r.host_rows);
    if (r.device_row[i] < 0 || r.device_row[i] >= r.device_rows)
      throw_error("{}: device_row[{}] = {}, expected 0 <= row < {}", what, i, r.device_row[i], r.device_rows);
  }
}

}  // namespace hisparse
