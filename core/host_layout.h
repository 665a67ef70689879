// @brief The host KV pool's three layouts (SGLang's HostKVCache `layer_first`, `page_first`, `page_head`) and the
// index math of the layout-aware copies, shared by cpu_ref/ and cuda/ (HS_HOST_DEVICE): where chunk (layer, token,
// head) of the host pool and of the device pool starts.
//
// Source: SGLang python/sglang/srt/mem_cache/memory_pool_host.py, MHATokenToKVPoolHost.init_kv_buffer (per K or V
// half): layer_first [layer][token][head][head_dim], page_first [token][layer][head][head_dim], page_head
// [page][head][token in page][layer][head_dim]; the MLA pool has one "head" (the latent row) and no page_head. The
// device pool is layer-first ([layer][token][head][head_dim], one buffer per layer), so SGLang's transfer kernels
// (sgl-kernel/csrc/kvcacheio/transfer.cu) load per layer (`transfer_kv_per_layer`, `_pf_lf`, `_ph_lf`) and back up
// all layers at once (`transfer_kv_all_layer`, `_lf_pf`, `_lf_ph`). Here a chunk is `head_bytes` bytes (head_dim ×
// dtype bytes; an MLA row when heads = 1), and a K/V pair is two pools of the same shape.
#pragma once

#include <cstdint>
#include <string>

#include "core/hs_host_device.h"

namespace hisparse {

enum class HostLayout : int32_t { kLayerFirst = 0, kPageFirst = 1, kPageHead = 2 };

/// Shape of a host pool: `size` tokens (a multiple of page_size), `layers` × `heads` chunks of `head_bytes` each.
struct HostLayoutShape {
  int64_t size = 0;
  int64_t page_size = 1;
  int64_t layers = 0;
  int64_t heads = 1;
  int64_t head_bytes = 0;
  HS_HOST_DEVICE int64_t token_layer_bytes() const { return heads * head_bytes; }  // one token, one layer
  HS_HOST_DEVICE int64_t total_bytes() const { return size * layers * heads * head_bytes; }
};

/// Byte offset of chunk (layer, loc, head) in the host pool.
HS_HOST_DEVICE int64_t host_chunk_offset(HostLayout layout, const HostLayoutShape& s, int64_t layer, int64_t loc,
                                         int64_t head) {
  switch (layout) {
    case HostLayout::kPageFirst:
      return ((loc * s.layers + layer) * s.heads + head) * s.head_bytes;
    case HostLayout::kPageHead: {
      const int64_t page = loc / s.page_size, in_page = loc % s.page_size;
      return (((page * s.heads + head) * s.page_size + in_page) * s.layers + layer) * s.head_bytes;
    }
    case HostLayout::kLayerFirst:
    default:
      return ((layer * s.size + loc) * s.heads + head) * s.head_bytes;
  }
}

/// Byte offset of chunk (layer, loc, head) in the layer-first device pool of `device_rows` tokens per layer.
HS_HOST_DEVICE int64_t device_chunk_offset(const HostLayoutShape& s, int64_t device_rows, int64_t layer, int64_t loc,
                                           int64_t head) {
  return ((layer * device_rows + loc) * s.heads + head) * s.head_bytes;
}

/// A layout-aware copy of `count` tokens over layers [layer_begin, layer_begin + layer_count), every head:
/// gather (host → device; SGLang loads one layer at a time in decode) or backup (device → host; all layers at once
/// after prefill and for the newest token). Host pointers in the Backend interface (core/backend.h).
struct LayoutCopyView {
  HostLayout layout = HostLayout::kLayerFirst;
  HostLayoutShape shape;
  int64_t count = 0;
  const int64_t* host_loc = nullptr;    // [count] token index in the host pool
  const int64_t* device_loc = nullptr;  // [count] token index in the device pool
  int64_t layer_begin = 0;
  int64_t layer_count = 0;
  uint8_t* host_pool = nullptr;         // [shape.total_bytes()]
  uint8_t* device_pool = nullptr;       // [shape.layers][device_rows][heads][head_bytes]
  int64_t device_rows = 0;
  int64_t device_bytes() const { return shape.layers * device_rows * shape.token_layer_bytes(); }
  int64_t bytes_moved() const { return count * layer_count * shape.token_layer_bytes(); }
};

/// The host pool layout a deployment serves with (deployment YAML `host_layout`, SGLang's --hicache-mem-layout names),
/// with the IO backend it goes with, as the step model prices its copies (sim/cost/terms/transfer_granularity.h):
/// layer_first and page_first copy any rows of a call with one kernel (io_backend kernel: transfer_kv_per_layer_mla,
/// transfer_kv_per_layer_mla_pf_lf, transfer_kv_all_layer_mla*); page_first_direct with one cudaMemcpyAsync per page
/// per layer (io_backend direct: transfer_kv_page_first_direct_impl, sgl-kernel/csrc/kvcacheio/transfer.cu at
/// 1243cf3d; the layouts in python/sglang/srt/mem_cache/memory_pool_host.py at 00343773, DeepSeekV4PagedHostPool).
/// SGLang's HiSparse allocates its host pool layer_first and copies with io_backend kernel
/// (managers/hisparse_coordinator.py:79-86 and :98-105 at 009e640a), the default here.
enum class HostPoolLayout : int32_t { kLayerFirst = 0, kPageFirst = 1, kPageFirstDirect = 2 };
const char* host_pool_layout_name(HostPoolLayout layout);  // layer_first | page_first | page_first_direct
/// Whether the layout's copies are one cudaMemcpyAsync per page per layer (io_backend direct).
inline bool copies_per_page(HostPoolLayout layout) { return layout == HostPoolLayout::kPageFirstDirect; }

const char* host_layout_name(HostLayout layout);  // layer_first | page_first | page_head
/// Throws hisparse::Error naming `what` and the value when `name` is none of the three.
HostLayout parse_host_layout(const std::string& name, const std::string& what);
/// Shapes, ranges, a multiple-of-16 head_bytes, indices in range; `backup` also requires distinct host tokens (two
/// writers of one chunk race). Throws hisparse::Error naming the field.
void check_layout_copy(const LayoutCopyView& v, const char* what, bool backup);

}  // namespace hisparse
