// @brief c4_release_by_ratio (c4_release.h): compute_dsv4_pool_budget at each ratio with HiSparse on, against the
// same deployment with HiSparse off (C4 device = full / 4, the memory HiSparse can release).
#include "sim/capacity/c4_release.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "core/error.h"
#include "core/pipeline_stages.h"
#include "core/family/family_registry.h"
#include "core/text_format.h"

namespace hisparse::sim {

std::vector<C4ReleaseRow> c4_release_by_ratio(const Scenario& s, std::vector<int> ratios) {
  if (!family_of(s).compressed_pools())
    throw_error("{}: model {}: the C4 release table applies to DeepSeek-V4 (compress_ratios) only", s.source,
                s.model.name);
  std::sort(ratios.begin(), ratios.end());
  // Pipeline parallelism: one GPU holds the binding stage's layers (core/pipeline_stages.h).
  Scenario off = pipeline_stage_scenario(s);
  off.deployment.hisparse_enabled = false;
  const Dsv4PoolBudget base = compute_dsv4_pool_budget(off);
  const double per_entry = base.c4_layers.value * base.kv_row_bytes.value;
  const double off_bytes = base.c4_device_entries.value * per_entry;
  std::vector<C4ReleaseRow> rows;
  for (int r : ratios) {
    if (r < 1) throw_error("{}: host_to_device_ratio {} in the C4 release table (expected >= 1)", s.source, r);
    Scenario on = pipeline_stage_scenario(s);
    on.deployment.hisparse_enabled = true;
    on.deployment.hisparse.host_to_device_ratio = r;
    const Dsv4PoolBudget b = compute_dsv4_pool_budget(on);
    C4ReleaseRow row;
    row.ratio = r;
    row.circular_full_tokens = static_cast<int64_t>(b.full_tokens.value);
    row.circular_c4_entries = static_cast<int64_t>(b.c4_device_entries.value);
    row.circular_c4_bytes = b.c4_device_entries.value * per_entry;
    row.circular_released = off_bytes - row.circular_c4_bytes;
    row.expected_released = off_bytes * (1.0 - 1.0 / r);
    row.request_capacity = b.request_capacity_applicable;
    if (row.request_capacity) {
      row.rc_full_tokens = static_cast<int64_t>(b.rc_full_tokens.value);
      row.rc_c4_bytes = b.rc_c4_device_bytes.value;
      row.rc_released = off_bytes - row.rc_c4_bytes;
    }
    rows.push_back(row);
  }
  return rows;
}

std::string c4_release_text(const Scenario& s, const std::vector<C4ReleaseRow>& rows) {
  Scenario off = pipeline_stage_scenario(s);
  off.deployment.hisparse_enabled = false;
  const Dsv4PoolBudget base = compute_dsv4_pool_budget(off);
  const auto off_entries = static_cast<int64_t>(base.c4_device_entries.value);
  std::string out = fmt::format(
      "HBM released by HiSparse per GPU against host_to_device_ratio (sglang #33979; modelled: core/dsv4_pool_budget)\n"
      "  HiSparse off: full pool {} tokens, C4 device pool {} entries (full / 4) = {:.2f} GB ({} × c4_layers {} × kv {} "
      "B)\n"
      "  released = C4 device bytes off − on; expected = C4 bytes off × (1 − 1 / ratio); circular = SGLang's rule (C4 "
      "device = full / (4 × ratio), the full pool grows into what it frees); request capacity = PR #33979 (C4 device = "
      "(M + 1) × (H + page / 4) entries, inferred from the PR's aim); full = the full (logical) pool each rule sizes\n",
      group_digits(static_cast<int64_t>(base.full_tokens.value)), group_digits(off_entries),
      base.c4_device_entries.value * base.c4_layers.value * base.kv_row_bytes.value / 1e9, off_entries,
      static_cast<int64_t>(base.c4_layers.value), static_cast<int64_t>(base.kv_row_bytes.value));
  out += fmt::format("  {:>5}  {:>11}  {:>11}  {:>10}  {:>12}  {:>11}  {:>12}  {:>10}\n", "", "expected", "circular",
                     "circular /", "circular", "req. cap.", "req. cap.", "req. cap.");
  out += fmt::format("  {:>5}  {:>11}  {:>11}  {:>10}  {:>12}  {:>11}  {:>12}  {:>10}\n", "ratio", "released GB",
                     "released GB", "expected", "full tokens", "released GB", "full tokens", "C4 GB");
  for (const C4ReleaseRow& r : rows) {
    const std::string share =
        r.expected_released > 0 ? fmt::format("{:.0f} %", 100 * r.circular_released / r.expected_released) : "-";
    out += fmt::format("  {:>5}  {:>11.2f}  {:>11.2f}  {:>10}  {:>12}  {:>11}  {:>12}  {:>10}\n", r.ratio,
                       r.expected_released / 1e9, r.circular_released / 1e9, share, group_digits(r.circular_full_tokens),
                       r.request_capacity ? fmt::format("{:.2f}", r.rc_released / 1e9) : "-",
                       r.request_capacity ? group_digits(r.rc_full_tokens) : "-",
                       r.request_capacity ? fmt::format("{:.2f}", r.rc_c4_bytes / 1e9) : "-");
  }
  if (!rows.empty() && !rows.front().request_capacity)
    out += "  request capacity: needs max_running_requests in the deployment (the slots it sizes by)\n";
  return out;
}

}  // namespace hisparse::sim
