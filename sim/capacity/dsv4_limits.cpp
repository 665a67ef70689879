// @brief DeepSeek-V4's HiSparse limits in the capacity model (pool_limits.h): HiSparse offloads the C4 entries (one
// per 4 tokens) of the C4 layers; every layer's sliding window, the C128 pool, the C4 indexer keys and the compress
// states stay on the GPU (core/dsv4_pool_budget.h cites SGLang's DSV4 pool configurator). One length reads
// dsv4_request_limits, the per-length arithmetic `hisparse info` prints; a mix its expectation per request.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "sim/capacity/pool_limits.h"

namespace hisparse::sim::capacity_detail {

namespace {

// One length: the requests of each pool as dsv4_request_limits counts them, with its formulas.
void dsv4_one_length(const PoolContext& c, Capacity& out) {
  auto lim = [&](const char* key) -> CapacityLimit& { return find_limit(out.limits, key); };
  const Dsv4RequestLimits x = dsv4_request_limits(c.b, c.first_len(), true);
  lim("hbm").per_rank = x.hbm;
  lim("hbm").formula = x.hbm_formula;
  lim("logical_pool").per_rank = x.logical;
  lim("logical_pool").formula = x.logical_formula;
  lim("host_pool").per_rank = x.host;
  lim("host_pool").formula = x.host_formula;
  const double kv = c.b.latent_row_bytes.value;
  const double per_req_host = static_cast<double>(x.c4_entries) * c.b.c4_layers * kv;
  lim("host_dram").per_rank = fit_count(c.dram_per_gpu, per_req_host);
  lim("host_dram").formula = fmt::format(
      "floor((host_dram − reserve) / GPUs_per_node / (paged_seq_len / 4 × c4_layers × kv)) = floor({} / {} / ({} × {} "
      "× {}))", plain_number(c.dram_usable), c.gpus_per_node, x.c4_entries, c.b.c4_layers, plain_number(kv));
  out.host_per_request = per_req_host;
}

// A mix: the same pools at the mix's expected use per request.
void dsv4_mix(const PoolContext& c, Capacity& out) {
  const MemoryBudget& b = c.b;
  auto lim = [&](const char* key) -> CapacityLimit& { return find_limit(out.limits, key); };
  auto expect = [&](int64_t Dsv4RequestLimits::*field) {
    return c.expect([&](int64_t n) { return static_cast<double>(dsv4_request_limits(b, n, true).*field); });
  };
  const int page = std::max(1, b.page_size);
  const double R = b.reserved_decode_tokens.value;
  const double paged = c.expect([&](int64_t n) { return static_cast<double>(round_up_to_page(n, page)); });
  const double kept = expect(&Dsv4RequestLimits::swa_tokens), entries = expect(&Dsv4RequestLimits::c4_entries);
  const double slots = expect(&Dsv4RequestLimits::device_slots);
  std::string swa_formula;
  const int64_t by_swa = requests_in_pool(b.hisparse_swa_pool_tokens.value, kept, R, "swa_pool", &swa_formula);
  const double dev = b.device_pool_tokens.value, host = b.host_pool_tokens.value;
  lim("hbm").per_rank = std::min(fit_count(dev, slots), by_swa);
  lim("hbm").formula = fmt::format("min(floor(c4_device_pool / E[c4_slots]) = floor({:.0f} / {:.1f}), {})", dev, slots,
                                   swa_formula);
  lim("logical_pool").per_rank =
      requests_in_pool(b.logical_pool_tokens.value, paged, R, "logical_pool", &lim("logical_pool").formula);
  lim("host_pool").per_rank = fit_count(host, entries);
  lim("host_pool").formula = fmt::format("floor(c4_host_pool / E[paged seq_len / 4]) = floor({:.0f} / {:.1f})", host, entries);
  const double host_req = entries * b.c4_layers * b.latent_row_bytes.value;
  lim("host_dram").per_rank = fit_count(c.dram_per_gpu, host_req);
  lim("host_dram").formula = fmt::format("floor((host_dram − reserve) / GPUs_per_node / (E[paged / 4] × c4_layers × kv)) = "
                                         "floor({:.4g} / {:.4g})", c.dram_per_gpu, host_req);
  out.host_per_request = host_req;
}

}  // namespace

void dsv4_hisparse_limits(const PoolContext& c, Capacity& out) {
  if (c.one) dsv4_one_length(c, out);
  else dsv4_mix(c, out);
  out.pool_tokens = static_cast<int64_t>(c.b.device_pool_tokens.value);
  out.logical_pool_tokens = static_cast<int64_t>(c.b.logical_pool_tokens.value);
  out.host_pool_tokens = static_cast<int64_t>(c.b.host_pool_tokens.value);
  out.host_pool_bytes_per_node = c.b.host_pool_bytes_per_node.value;
  out.hbm_per_request = c.expect([&](int64_t n) { return c.at(n).hisparse_hbm_bytes.value; });
}

}  // namespace hisparse::sim::capacity_detail
