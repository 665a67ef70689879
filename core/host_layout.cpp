// @brief Layout names and the checks of a layout-aware copy (core/host_layout.h).
#include "core/host_layout.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace hisparse {

const char* host_layout_name(HostLayout layout) {
  switch (layout) {
    case HostLayout::kPageFirst: return "page_first";
    case HostLayout::kPageHead: return "page_head";
    case HostLayout::kLayerFirst: break;
  }
  return "layer_first";
}

const char* host_pool_layout_name(HostPoolLayout layout) {
  switch (layout) {
    case HostPoolLayout::kPageFirst: return "page_first";
    case HostPoolLayout::kPageFirstDirect: return "page_first_direct";
    case HostPoolLayout::kLayerFirst: break;
  }
  return "layer_first";
}

HostLayout parse_host_layout(const std::string& name, const std::string& what) {
  for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead})
    if (name == host_layout_name(l)) return l;
  throw_error("{}: layout '{}', expected layer_first, page_first or page_head", what, name);
}

void check_layout_copy(const LayoutCopyView& v, const char* what, bool backup) {
  const HostLayoutShape& s = v.shape;
  if (s.size <= 0 || s.page_size <= 0 || s.size % s.page_size != 0 || s.layers <= 0 || s.heads <= 0)
    throw_error("{}: host pool shape size {}, page_size {}, layers {}, heads {}: expected positive, size a multiple "
                "of page_size", what, s.size, s.page_size, s.layers, s.heads);
  if (s.head_bytes < 16 || s.head_bytes % 16 != 0)
    throw_error("{}: head_bytes = {}, expected a positive multiple of 16", what, s.head_bytes);
  if (v.count < 0 || v.device_rows <= 0)
    throw_error("{}: count {} / device_rows {}: expected count >= 0, device_rows > 0", what, v.count, v.device_rows);
  if (v.layer_begin < 0 || v.layer_count < 0 || v.layer_begin + v.layer_count > s.layers)
    throw_error("{}: layers [{}, {}) outside the pool's {} layers", what, v.layer_begin, v.layer_begin + v.layer_count,
                s.layers);
  if (v.count == 0) return;
  if (!v.host_loc || !v.device_loc || !v.host_pool || !v.device_pool)
    throw_error("{}: null host_loc, device_loc, host_pool or device_pool", what);
  for (int64_t i = 0; i < v.count; ++i) {
    if (v.host_loc[i] < 0 || v.host_loc[i] >= s.size)
      throw_error("{}: host_loc[{}] = {} outside [0, {})", what, i, v.host_loc[i], s.size);
    if (v.device_loc[i] < 0 || v.device_loc[i] >= v.device_rows)
      throw_error("{}: device_loc[{}] = {} outside [0, {})", what, i, v.device_loc[i], v.device_rows);
  }
  // The written side must not repeat a token: two writers of one chunk race on the GPU.
  const int64_t* written = backup ? v.host_loc : v.device_loc;
  std::vector<int64_t> sorted(written, written + v.count);
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    throw_error("{}: {} token {} appears twice (each written token must be distinct)", what,
                backup ? "host_loc" : "device_loc", *dup);
}

}  // namespace hisparse
