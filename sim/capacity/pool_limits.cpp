// @brief The token-pool limits of the capacity model (pool_limits.h): SGLang's full-KV pools (MHATokenToKVPool,
// the sliding-window SWAKVPool, the Mamba slots' cap; core/memory_budget.cpp cites the sizing) and HiSparse's
// device, logical and host pools (HiSparseTokenToKVPoolAllocator, HostKVCache). A request past H holds H + page
// device slots, a shorter one its paged length (managers/hisparse_coordinator.py, core/memory_budget.cpp).
#include "sim/capacity/pool_limits.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim::capacity_detail {

const SeqLenBudget& PoolContext::at(int64_t n) const {
  for (const SeqLenBudget& q : b.per_seq_len)
    if (q.seq_len == n) return q;
  throw_error("capacity: no memory budget for seq_len {} (compute the budget with every length of the mix)", n);
}

int64_t fit_count(double pool, double per_request) {
  if (!(per_request > 0)) return 0;
  return static_cast<int64_t>(std::floor(pool / per_request + 1e-9));
}

std::string plain_number(double v) {
  if (std::fabs(v) >= 1e6 || v == std::floor(v)) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

int64_t full_pool_limit(const PoolContext& c, std::string* formula) {
  const MemoryBudget& b = c.b;
  // One length: core's per-length arithmetic, the count `hisparse info` prints as max_requests_full.
  if (c.one) return full_pool_requests(b, c.first_len(), formula);
  const int page = std::max(1, b.page_size);
  const double R = b.reserved_decode_tokens.value;
  const double paged = c.expect([&](int64_t n) { return static_cast<double>(round_up_to_page(n, page)); });
  std::string f;
  int64_t out = requests_in_pool(b.full_pool_tokens.value, paged, R, "full_pool", &f);
  if (b.sliding_layer_count > 0) {
    // A sliding layer keeps at most window + page tokens of a request (sliding_tokens_kept).
    const double kept =
        c.expect([&](int64_t n) { return static_cast<double>(round_up_to_page(sliding_tokens_kept(b, n), page)); });
    std::string f_swa;
    out = std::min(out, requests_in_pool(b.swa_pool_tokens.value, kept, R, "swa_pool", &f_swa));
    f = fmt::format("min({}, {}) with E[paged seq_len] of the sliding pool = E[paged(min(seq_len, window + page))]", f,
                    f_swa);
  }
  if (b.mamba_request_cap > 0 && b.mamba_request_cap < out) {
    out = b.mamba_request_cap;
    f += fmt::format(", capped by the Mamba slots: floor(mamba_slots / 3) = {}", b.mamba_request_cap);
  }
  if (formula) *formula = f;
  return out;
}

void full_kv_limits(const PoolContext& c, Capacity& out) {
  find_limit(out.limits, "hbm").per_rank = full_pool_limit(c, &find_limit(out.limits, "hbm").formula);
  for (const char* key : {"logical_pool", "host_pool", "host_dram"}) find_limit(out.limits, key).formula = "full KV: no host pool";
  out.pool_tokens = static_cast<int64_t>(c.b.full_pool_tokens.value);
  out.hbm_per_request = c.expect([&](int64_t n) { return c.at(n).full_kv_bytes.value; });
}

void hisparse_limits(const PoolContext& c, Capacity& out) {
  const MemoryBudget& b = c.b;
  auto lim = [&](const char* key) -> CapacityLimit& { return find_limit(out.limits, key); };
  const int page = std::max(1, b.page_size);
  const int64_t H = c.s.deployment.hisparse.device_buffer_size;
  const double L = b.kv_layers.value, row = b.latent_row_bytes.value;
  const double dev = b.device_pool_tokens.value, logical = b.logical_pool_tokens.value, host = b.host_pool_tokens.value;
  auto paged_of = [&](int64_t n) { return static_cast<double>(round_up_to_page(n, page)); };
  // buffer_slots: past H the buffer is H + page slots; up to H it grows page by page (the paged length).
  auto slots_of = [&](int64_t n) { return n <= H ? paged_of(n) : static_cast<double>(H + page); };
  const double paged = c.expect(paged_of), slots = c.expect(slots_of);
  const double R = b.reserved_decode_tokens.value;
  lim("hbm").per_rank = fit_count(dev, slots);
  lim("logical_pool").per_rank = c.one ? requests_in_pool(static_cast<int64_t>(logical), static_cast<int64_t>(paged),
                                                          static_cast<int64_t>(R), "logical_pool", &lim("logical_pool").formula)
                                       : requests_in_pool(logical, paged, R, "logical_pool", &lim("logical_pool").formula);
  lim("host_pool").per_rank = fit_count(host, paged);
  lim("host_dram").per_rank = fit_count(c.dram_per_gpu, paged * L * row);
  if (c.one) {
    const int64_t n = c.first_len();
    lim("hbm").formula = fmt::format("floor(device_pool / buffer_slots) = floor({:.0f} / {:.0f}); buffer_slots = {}", dev,
                                     slots, n <= H ? "paged seq_len (n ≤ H)" : "H + page_size");
    lim("host_pool").formula = fmt::format("floor(host_pool / paged_seq_len) = floor({:.0f} / {:.0f})", host, paged);
    lim("host_dram").formula = fmt::format(
        "floor((host_dram − reserve) / GPUs_per_node / (paged_seq_len × kv_layers × latent_row_bytes)) = "
        "floor({} / {} / ({:.0f} × {:.0f} × {}))",
        plain_number(c.dram_usable), c.gpus_per_node, paged, L, plain_number(row));
  } else {
    lim("hbm").formula = fmt::format("floor(device_pool / E[buffer_slots]) = floor({:.0f} / {:.1f})", dev, slots);
    lim("host_pool").formula = fmt::format("floor(host_pool / E[paged seq_len]) = floor({:.0f} / {:.1f})", host, paged);
    lim("host_dram").formula = fmt::format("floor((host_dram − reserve) / GPUs_per_node / (E[paged seq_len] × "
                                           "kv_layers × latent_row_bytes)) = floor({:.4g} / {:.1f} / {:.0f})",
                                           c.dram_usable, paged * L * row, 1.0 * std::max(1, c.gpus_per_node));
  }
  out.pool_tokens = static_cast<int64_t>(dev);
  out.logical_pool_tokens = static_cast<int64_t>(logical);
  out.host_pool_tokens = static_cast<int64_t>(host);
  out.host_pool_bytes_per_node = b.host_pool_bytes_per_node.value;
  out.hbm_per_request = c.expect([&](int64_t n) { return c.at(n).hisparse_hbm_bytes.value; });
  out.host_per_request = paged * L * row;
}

}  // namespace hisparse::sim::capacity_detail
