// @brief What the rows of `plan --strategies` share (sim/plan/cache_strategies.cpp builds them, one function per
// strategy; DeepSeek-V4's own arithmetic is in sim/plan/dsv4_cache_strategies.cpp): the table's context and the two
// helpers that copy a plan row and set a strategy's limits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sim/cost/step/step_time_model.h"
#include "sim/plan/cache_strategies.h"
#include "sim/plan/capacity_plan.h"

namespace hisparse::sim {

/// One table's inputs: the plan, the options, the table being filled and the two step models (full KV; full KV with
/// the model's top_k set to the deployment's K, for masking).
struct StrategyContext {
  StrategyContext(const CapacityPlan& plan, const StrategyOptions& options, StrategyTable& table,
                  const StepTimeModel& full_model, const StepTimeModel& masked_model);
  const CapacityPlan& p;
  const StrategyOptions& opt;
  StrategyTable& t;
  const Scenario& s;
  const DeploymentSpec& d;
  const MemoryBudget& b;
  const StepTimeModel& full;
  const StepTimeModel& masked;
  int page = 1;
  double L = 0, row = 0, idx = 0;  // kv_layers, latent (KV entry) row bytes, indexer key bytes
  int64_t K = 0, model_k = 0;      // the deployment's top_k; the model's (0 = dense)
  bool compressed = false;         // DeepSeek-V4 (ModelSpec::is_compressed)
  /// Rows a selection chooses among for n tokens: n, or n / 4 C4 entries (DeepSeek-V4).
  int64_t entries(int64_t n) const;
  /// Rows attended per layer: min(entries(n), k), every entry when k = 0.
  double attended(int64_t n, int64_t k) const;
  StrategyRecall recall(const std::string& key) const;
};

/// A plan row copied into a strategy row.
StrategyRow from_plan(const PlanRow& r, const std::string& key, const std::string& name, const std::string& def);

/// Concurrency of a strategy limited by the cap, its HBM limit and the SLO: `step_ns(B)` must be non-decreasing.
void set_limits(StrategyRow& o, const CapacityPlan& p, int64_t hbm_limit, const std::string& hbm_formula,
                const std::function<SimTime(int64_t)>& step_ns, const std::function<double(int64_t)>& tokens_per_s);

// DeepSeek-V4 (sim/plan/dsv4_cache_strategies.cpp).
/// HiSparse's PCIe bytes per request and step: the misses' entries plus the newest C4 entry's backup, one entry per
/// 4 tokens (c4_layers × row / 4 per step on average).
double dsv4_hisparse_pcie_bytes(const StrategyContext& c, const PlanRow& hisparse_row);
/// Eviction at `kept` tokens: the full-KV request of that many tokens in every V4 pool (sets `e.hbm_per_request`);
/// returns the requests the pools admit, its arithmetic in `formula`.
int64_t dsv4_eviction_memory(const StrategyContext& c, int64_t kept, StrategyRow& e, std::string* formula);
/// Compression: the full-KV bytes of `tokens` less what compressing the C4 entries past the S + R tokens' saves.
double dsv4_compressed_request_bytes(const StrategyContext& c, int64_t tokens);
/// The table's note on what E, K and the rows mean for DeepSeek-V4.
std::string dsv4_strategy_note(const StrategyContext& c);

}  // namespace hisparse::sim
