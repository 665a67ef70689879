// @brief The memory limits of the capacity model, one function per pool layout (inside sim/capacity only): SGLang's
// token pools (MLA + DSA with or without HiSparse; MHA, sliding-window and Mamba hybrids in full KV) and DeepSeek-V4's
// compressed pools. Each fills the hbm, logical_pool, host_pool and host_dram limits and the per-request footprint.
#pragma once

#include <cstdint>
#include <string>

#include "sim/capacity/capacity.h"

namespace hisparse::sim::capacity_detail {

/// What a memory limit reads besides the capacity it fills.
struct PoolContext {
  const Scenario& s;
  const MemoryBudget& b;
  const ContextMix& mix;
  bool hs = false;            // a HiSparse mode (a host pool, a device buffer per request)
  bool one = false;           // the mix is one length: exact per-length formulas
  double dram_per_gpu = 0;    // host_dram_per_gpu(s, reserve)
  double dram_usable = 0;     // host DRAM − reserve per node, as printed
  int gpus_per_node = 0;      // min(decode GPUs, GPUs per node), as printed
  /// E[f(seq_len)] over the mix.
  template <class F>
  double expect(const F& f) const { return mix.expect(f); }
  /// The budget's figures of one length of the mix (throws when the budget was computed without it).
  const SeqLenBudget& at(int64_t n) const;
  int64_t first_len() const { return mix.classes.front().seq_len; }
};

/// Requests whose expected footprint `per_request` fits `pool` (0 when nothing is held per request).
int64_t fit_count(double pool, double per_request);
/// A number inside a formula: whole numbers in full, others to 6 significant digits.
std::string plain_number(double v);

/// The full-KV pools of every layout: max_total_num_tokens, the sliding-window pool, the Mamba slots' cap.
int64_t full_pool_limit(const PoolContext& c, std::string* formula);
/// Full KV, every layout (DeepSeek-V4's full and sliding-window pools included): the full-KV pools bound HBM.
void full_kv_limits(const PoolContext& c, Capacity& out);
/// HiSparse on SGLang's token pools (MLA + DSA): the device, logical and host pools and host DRAM.
void hisparse_limits(const PoolContext& c, Capacity& out);
/// HiSparse on DeepSeek-V4's pools (core/dsv4_pool_budget.h): the C4 device and sliding-window pools (hbm), the
/// logical (full) pool, the C4 host pool and host DRAM, in C4 entries (one per 4 tokens).
void dsv4_hisparse_limits(const PoolContext& c, Capacity& out);

}  // namespace hisparse::sim::capacity_detail
