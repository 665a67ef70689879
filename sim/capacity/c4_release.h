// @brief DeepSeek-V4's HBM released by HiSparse against host_to_device_ratio under each C4 device-pool sizing rule
// (sglang #33979): the circular rule SGLang runs (C4 device = full / (4 × ratio), the full pool growing with what the
// C4 term frees) and the request-capacity rule of PR #33979 (C4 device = request slots × (H + page / 4) entries,
// fixed). `hisparse check` prints it under the pools; docs/capacity.md "hisparse check" reads one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"

namespace hisparse::sim {

struct C4ReleaseRow {
  int ratio = 1;
  // Circular rule: the full (logical) pool, the C4 device pool and its bytes, the bytes released against HiSparse
  // off, and the release a user expects from the ratio alone (C4 bytes off × (1 − 1 / ratio)).
  int64_t circular_full_tokens = 0, circular_c4_entries = 0;
  double circular_c4_bytes = 0, circular_released = 0, expected_released = 0;
  // Request-capacity rule (only with max_running_requests set): the same three figures.
  bool request_capacity = false;
  int64_t rc_full_tokens = 0;
  double rc_c4_bytes = 0, rc_released = 0;
};

/// One row per ratio (ascending, each >= 1) of the deployment (DeepSeek-V4 only; throws otherwise).
std::vector<C4ReleaseRow> c4_release_by_ratio(const Scenario& scenario, std::vector<int> ratios);

/// The table with its header, formulas and labels.
std::string c4_release_text(const Scenario& scenario, const std::vector<C4ReleaseRow>& rows);

}  // namespace hisparse::sim
