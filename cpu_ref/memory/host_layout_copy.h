// @brief The reference layout-aware copies between a host pool in SGLang's layer_first, page_first or page_head
// layout and the layer-first device pool (core/host_layout.h): gather (host → device) and backup (device → host).
#pragma once

#include "core/host_layout.h"

namespace hisparse::cpu_ref {

/// For each token i, layer l of the view's range and head h: device chunk (l, device_loc[i], h) <- host chunk
/// (l, host_loc[i], h). Checks the view first (check_layout_copy).
void layout_gather(const LayoutCopyView& view);
/// The reverse: host chunk (l, host_loc[i], h) <- device chunk (l, device_loc[i], h); host tokens must be distinct.
void layout_backup(const LayoutCopyView& view);

}  // namespace hisparse::cpu_ref
