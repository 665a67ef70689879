// @brief The simulated server's admission pools from the memory budget, and DeepSeek-V4's other pools with their
// ledger (admission_pools.h).
#include "sim/capacity/admission_pools.h"

#include <algorithm>

#include "core/dsv4_pool_budget.h"
#include "core/error.h"

namespace hisparse::sim {

AdmissionPools admission_pools(const MemoryBudget& b, bool hisparse, int tokens_per_entry) {
  AdmissionPools p;
  if (!hisparse) {
    p.logical = static_cast<int64_t>(b.full_pool_tokens.value);
    return p;
  }
  p.device = static_cast<int64_t>(b.device_pool_tokens.value) * tokens_per_entry;
  p.logical = static_cast<int64_t>(b.logical_pool_tokens.value);
  p.host = static_cast<int64_t>(b.host_pool_tokens.value) * tokens_per_entry;
  return p;
}

const char* Dsv4Pools::name(int k) {
  static const char* names[kCount] = {"swa_pool", "c128_pool", "c4_indexer_pool", "c4_state_rows"};
  return names[k];
}

Dsv4Pools dsv4_admission_pools(const Scenario& scenario, bool hisparse) {
  Dsv4Pools p;
  if (!scenario.model.is_compressed()) return p;
  Scenario s = scenario;
  s.deployment.hisparse_enabled = hisparse;
  const Dsv4PoolBudget b = compute_dsv4_pool_budget(s);
  const auto full = static_cast<int64_t>(b.full_tokens.value);
  p.units[0] = static_cast<int64_t>(b.swa_tokens.value);
  p.units[1] = static_cast<int64_t>(b.c128_entries.value);
  p.units[2] = full / 4;  // the indexer term of bytes_per_full_token: indexer × n_c4 / 4 per full token
  p.units[3] = static_cast<int64_t>(b.c4_state_rows.value);
  return p;
}

Dsv4Pools dsv4_request_need(const Scenario& scenario, int64_t tokens) {
  Dsv4Pools n;
  if (!scenario.model.is_compressed()) return n;
  const int page = std::max(1, scenario.deployment.page_size);
  const int W = std::max(1, scenario.model.window_size);
  const int64_t paged = round_up_to_page(tokens, page);
  const int64_t window = round_up_to_page(std::min<int64_t>(tokens, W + page), page);
  n.units[0] = window;
  n.units[1] = (paged + 127) / 128;
  n.units[2] = paged / 4;
  n.units[3] = window / W * dsv4_state_rows(scenario.model).c4_ring;
  return n;
}

int Dsv4PoolLedger::short_pool(const Dsv4Pools& need) const {
  for (int k = 0; k < Dsv4Pools::kCount; ++k)
    if (need.units[k] > sizes_.units[k] - used_[k]) return k;
  return -1;
}

int Dsv4PoolLedger::never_fits(const Dsv4Pools& need) const {
  for (int k = 0; k < Dsv4Pools::kCount; ++k)
    if (need.units[k] > sizes_.units[k]) return k;
  return -1;
}

void Dsv4PoolLedger::take(int64_t owner, const Dsv4Pools& need) {
  const int k = short_pool(need);
  if (k >= 0)
    throw_error("DeepSeek-V4 pools: request {} needs {} of {} but {} of {} are free", owner, need.units[k],
                Dsv4Pools::name(k), sizes_.units[k] - used_[k], sizes_.units[k]);
  for (int j = 0; j < Dsv4Pools::kCount; ++j) used_[j] += need.units[j];
  held_.emplace_back(owner, need);
}

void Dsv4PoolLedger::release(int64_t owner) {
  for (size_t i = 0; i < held_.size(); ++i)
    if (held_[i].first == owner) {
      for (int j = 0; j < Dsv4Pools::kCount; ++j) used_[j] -= held_[i].second.units[j];
      held_[i] = held_.back();
      held_.pop_back();
      return;
    }
}

}  // namespace hisparse::sim
