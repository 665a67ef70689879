// @brief Host-side argument checks of the attention, indexer and top-k operations (shared by every backend).
#include "core/error.h"
#include "core/numerics/deltakv_args.h"
#include "core/numerics/indexer_args.h"
#include "core/numerics/sparse_attention_args.h"
#include "core/numerics/topk_args.h"

namespace hisparse {

void check_sparse_attention_args(const SparseAttentionArgs& a) {
  if (a.tokens < 0) throw_error("sparse_attention: tokens = {}, expected >= 0", a.tokens);
  if (!attention_heads_supported(a.heads)) throw_error("sparse_attention: heads = {}, expected 64 or 128", a.heads);
  if (a.top_k < 1) throw_error("sparse_attention: top_k = {}, expected >= 1", a.top_k);
  if (a.slots < 0) throw_error("sparse_attention: slots = {}, expected >= 0", a.slots);
  if (!(a.sm_scale > 0.0f) || a.sm_scale == num::hs_inf())
    throw_error("sparse_attention: sm_scale = {}, expected a finite positive number", a.sm_scale);
  if (a.tokens == 0) return;
  if (!a.q || !a.indices || !a.out || !a.lse || (a.slots > 0 && !a.kv))
    throw_error("sparse_attention: q, kv, indices, out and lse must all be given (a null pointer was passed)");
}

void check_sparse_attention_indices(const SparseAttentionArgs& a) {
  for (int64_t i = 0; i < int64_t(a.tokens) * a.top_k; ++i) {
    const int32_t v = a.indices[i];
    if (v < -1 || v >= a.slots)
      throw_error("sparse_attention: indices[token {}][entry {}] = {}, expected -1 or a slot in [0, {})",
                  i / a.top_k, i % a.top_k, v, a.slots);
  }
}

const char* indexer_dtype_name(IndexerDtype dtype) {
  switch (dtype) {
    case IndexerDtype::kBf16: return "bf16";
    case IndexerDtype::kFp8E4m3: return "fp8-e4m3";
  }
  return "unknown";
}

void check_indexer_args(const IndexerArgs& a) {
  if (a.dtype != IndexerDtype::kBf16 && a.dtype != IndexerDtype::kFp8E4m3)
    throw_error("indexer: dtype = {}, expected bf16 (0) or fp8-e4m3 (1)", int32_t(a.dtype));
  if (a.tokens < 0) throw_error("indexer: tokens = {}, expected >= 0", a.tokens);
  if (a.max_len < 0) throw_error("indexer: max_len = {}, expected >= 0", a.max_len);
  if (a.tokens == 0 || a.max_len == 0) return;
  if (a.dtype == IndexerDtype::kFp8E4m3) {
    if (!a.q_fp8 || !a.weights || !a.key_start || !a.seq_len || !a.scores ||
        (a.key_rows > 0 && (!a.keys_fp8 || !a.key_scale)))
      throw_error("indexer (fp8-e4m3): q_fp8, weights, keys_fp8, key_scale, key_start, seq_len and scores must all "
                  "be given");
    return;
  }
  if (!a.q || !a.weights || !a.key_start || !a.seq_len || !a.scores || (a.key_rows > 0 && !a.keys))
    throw_error("indexer: q, weights, keys, key_start, seq_len and scores must all be given");
}

void check_indexer_ranges(const IndexerArgs& a) {
  for (int32_t t = 0; t < a.tokens; ++t) {
    const int32_t n = a.seq_len[t];
    if (n < 0 || n > a.max_len) throw_error("indexer: seq_len[{}] = {}, expected 0 .. max_len {}", t, n, a.max_len);
    const int64_t s = a.key_start[t];
    if (n > 0 && (s < 0 || s + n > a.key_rows))
      throw_error("indexer: token {} scores key rows [{}, {}), outside the {} key rows", t, s, s + n, a.key_rows);
  }
}

void check_topk_args(const TopkArgs& a) {
  if (a.rows < 0) throw_error("topk: rows = {}, expected >= 0", a.rows);
  if (a.k < 1 || a.k > kTopkMaxK) throw_error("topk: k = {}, expected 1 .. {}", a.k, kTopkMaxK);
  if (a.stride < 0 || a.stride > (int64_t(1) << 31) - 1)
    throw_error("topk: stride = {}, expected 0 .. 2^31-1 (positions are int32)", a.stride);
  if (a.rows == 0) return;
  if (!a.length || !a.out || (a.stride > 0 && !a.scores)) throw_error("topk: scores, length and out must be given");
}

void check_topk_lengths(const TopkArgs& a) {
  for (int32_t r = 0; r < a.rows; ++r)
    if (a.length[r] < 0 || a.length[r] > a.stride)
      throw_error("topk: length[{}] = {}, expected 0 .. stride {}", r, a.length[r], a.stride);
}

void check_deltakv_args(const DeltaKvArgs& a) {
  if (a.rows < 0 || a.dim <= 0 || a.pool_rows <= 0)
    throw_error("deltakv: rows {}, dim {}, pool_rows {}: expected rows >= 0, dim and pool_rows > 0", a.rows, a.dim,
                a.pool_rows);
  if (a.refs < 1 || a.refs > kDeltaKvMaxRefs) throw_error("deltakv: refs = {}, expected 1 .. {}", a.refs, kDeltaKvMaxRefs);
  if (a.rows == 0) return;
  if (!a.ref_pool || !a.ref_index || !a.residual || !a.residual_scale || !a.out)
    throw_error("deltakv: ref_pool, ref_index, residual, residual_scale and out must all be given");
  for (int64_t i = 0; i < a.rows * a.refs; ++i)
    if (a.ref_index[i] < 0 || a.ref_index[i] >= a.pool_rows)
      throw_error("deltakv: ref_index[{}][{}] = {}, outside the {} reference rows", i / a.refs, i % a.refs,
                  a.ref_index[i], a.pool_rows);
}

}  // namespace hisparse
