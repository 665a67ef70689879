// @brief Backend: the one interface the CPU reference and the CUDA kernels both implement (same data, same results).
// All views hold HOST pointers; a device backend uploads, runs and downloads, so `hisparse validate` can hand the
// same arrays to both and compare them byte for byte. The attention, indexer and top-k operations take the plain
// views of core/numerics/ (the same structs the kernels take with device pointers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_layout.h"
#include "core/numerics/deltakv_args.h"
#include "core/numerics/indexer_args.h"
#include "core/numerics/sparse_attention_args.h"
#include "core/numerics/topk_args.h"
#include "core/swap_in_types.h"

namespace hisparse {

/// A batch of swap-in steps: B rows, each one (request, layer) pair with its own state of H slots.
/// Row b's device KV rows are device_kv[(b*(H+1) + slot) * row_bytes]; slot H is the reserved newest slot.
struct SwapInBatchView {
  int32_t batch = 0;                 // B
  int32_t H = 0;                     // device_buffer_size (slots per row, excluding the reserved slot)
  int32_t top_k = 0;                 // K = width of each row of `selected` (H >= K)
  int32_t* slot_token = nullptr;     // [B][H]  updated in place
  int32_t* lru = nullptr;            // [B][H]  updated in place
  const int32_t* selected = nullptr; // [B][K]  token positions, -1 = padding anywhere in the row
  const int32_t* seq_len = nullptr;  // [B]     n of each row; n <= 0 marks a padded batch row (left untouched)
  const int64_t* host_loc = nullptr; // [B][host_loc_stride] host pool row of token t of row b, -1 = no copy;
                                     // nullptr: token t lives at host row t
  int64_t host_loc_stride = 0;
  int64_t row_bytes = 0;             // bytes of one KV row (1152 for a bf16 576-wide latent); a multiple of 16
  // Optional copy of the loads (both null: plan only).
  const uint8_t* host_pool = nullptr;  // [host_rows][row_bytes]
  int64_t host_rows = 0;
  uint8_t* device_kv = nullptr;        // [B][H+1][row_bytes]  (host mirror of the device buffer)
  // Optional naming for error messages (nullptr: the row index is used).
  const int64_t* request = nullptr;  // [B]
  const int32_t* layer = nullptr;    // [B]
  int64_t step = 0;
};

/// What a batched swap-in produces, row by row (rows are independent).
struct SwapInBatchResult {
  std::vector<int32_t> slot_of;          // [B][K]  slot of each entry (H = reserved), -1 for padding/padded rows
  std::vector<int32_t> load_count;       // [B]     M of each row
  std::vector<int64_t> load_host;        // [B][K]  first load_count[b] entries valid, in miss order
  std::vector<int32_t> load_slot;        // [B][K]  likewise
  std::vector<SwapInCounters> counters;  // [B]     zero for padded rows
};

/// Scattered row copy between a host pool and a device pool: dst[dst_row[i]] = src[src_row[i]].
/// gather: host → device (loads of a plan); backup: device → host (newest token of each request, all layers).
struct RowCopyView {
  int64_t count = 0;                   // rows to copy
  int64_t row_bytes = 0;               // multiple of 16
  const int64_t* host_row = nullptr;   // [count] row index in host_pool
  const int64_t* device_row = nullptr; // [count] row index in device_pool
  uint8_t* host_pool = nullptr;        // [host_rows][row_bytes]
  int64_t host_rows = 0;
  uint8_t* device_pool = nullptr;      // [device_rows][row_bytes] (host mirror of the device pool)
  int64_t device_rows = 0;
};

/// How a device backend moves rows; the CPU reference ignores it (memcpy).
enum class CopyMode {
  kFused,       // swap-in kernel copies its own misses (one block per row)
  kSeparate,    // swap-in kernel plans, a multi-block copy kernel moves the rows
  kCopyEngine,  // cudaMemcpyAsync per run of rows (hosts where kernel reads of host memory are slow)
};
const char* copy_mode_name(CopyMode mode);

/// Which sparse-attention implementation a backend runs (docs/numerics.md: "two kinds of GPU kernel").
enum class AttentionVariant {
  kExact,  // the fixed fp32 order of core/numerics/online_softmax.h: identical bits on every backend
  kFast,   // the backend's fastest path (tensor cores on CUDA): within the stated tolerance only; the CPU
           // reference has no faster path and runs the exact order (which meets any tolerance the fast one does)
};
const char* attention_variant_name(AttentionVariant variant);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  /// Batched swap-in (docs/swap_in.md) for every row; executes the loads when host_pool/device_kv are given.
  /// Rows with invalid input are left untouched, the others are processed; then the first invalid row's error
  /// is thrown (hisparse::Error naming request, layer, step and value).
  virtual void swap_in(const SwapInBatchView& batch, SwapInBatchResult& out) = 0;

  /// host → device scattered copy.
  virtual void gather(const RowCopyView& rows) = 0;

  /// device → host scattered copy (eager backup of the newest token: all requests × all layers at once).
  virtual void backup(const RowCopyView& rows) = 0;

  /// Sparse MLA decode attention (SparseAttentionArgs, host pointers): checks shapes and indices (hisparse::Error
  /// naming the field), writes out and lse. A row whose entries are all -1 gives o = 0 and lse = -inf.
  /// Thread-safe: `hisparse validate` calls it from several threads at once.
  virtual void sparse_attention(const SparseAttentionArgs& args, AttentionVariant variant) = 0;

  /// Lightning-indexer scores (IndexerArgs, host pointers) in the fixed order of core/numerics/indexer_args.h for
  /// args.dtype: bf16 q and keys, or fp8 E4M3 q and keys with one fp32 scale per key row.
  /// Thread-safe.
  virtual void indexer_scores(const IndexerArgs& args) = 0;

  /// Top-k positions (TopkArgs, host pointers): K largest keys, ties to the smaller position, ascending output,
  /// rows shorter than K padded with -1. Thread-safe.
  virtual void topk(const TopkArgs& args) = 0;

  /// Layout-aware copies between a host pool in one of SGLang's three layouts and the layer-first device pool
  /// (core/host_layout.h): gather host → device over the view's layers, backup device → host. Thread-safe.
  virtual void layout_gather(const LayoutCopyView& view) = 0;
  virtual void layout_backup(const LayoutCopyView& view) = 0;

  /// DeltaKV reconstruction (core/numerics/deltakv_args.h): reference mean plus scaled residual, bit exact.
  /// Thread-safe.
  virtual void deltakv_reconstruct(const DeltaKvArgs& args) = 0;

  /// Device backends honour it; the CPU reference accepts any mode.
  virtual void set_copy_mode(CopyMode mode) { copy_mode_ = mode; }
  CopyMode copy_mode() const { return copy_mode_; }

 protected:
  CopyMode copy_mode_ = CopyMode::kFused;
};

/// Checks the shapes every backend relies on (H >= K >= 0, row_bytes % 16, non-null arrays); throws hisparse::Error.
void check_swap_in_batch(const SwapInBatchView& batch);
void check_row_copy(const RowCopyView& rows, const char* what);

}  // namespace hisparse
