// @brief Reference layout-aware copies: one memcpy per (token, layer, head) chunk at the offsets of
// core/host_layout.h, the same index math the CUDA kernels run.
#include "cpu_ref/memory/host_layout_copy.h"

#include <cstring>

namespace hisparse::cpu_ref {
namespace {

void copy_chunks(const LayoutCopyView& v, bool to_device) {
  const HostLayoutShape& s = v.shape;
  for (int64_t i = 0; i < v.count; ++i)
    for (int64_t l = v.layer_begin; l < v.layer_begin + v.layer_count; ++l)
      for (int64_t h = 0; h < s.heads; ++h) {
        uint8_t* host = v.host_pool + host_chunk_offset(v.layout, s, l, v.host_loc[i], h);
        uint8_t* dev = v.device_pool + device_chunk_offset(s, v.device_rows, l, v.device_loc[i], h);
        if (to_device)
          std::memcpy(dev, host, static_cast<size_t>(s.head_bytes));
        else
          std::memcpy(host, dev, static_cast<size_t>(s.head_bytes));
      }
}

}  // namespace

void layout_gather(const LayoutCopyView& v) {
  check_layout_copy(v, "layout gather", false);
  copy_chunks(v, true);
}

void layout_backup(const LayoutCopyView& v) {
  check_layout_copy(v, "layout backup", true);
  copy_chunks(v, false);
}

}  // namespace hisparse::cpu_ref
