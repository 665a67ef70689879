// @brief CapacityPlan: for each sequence length, full-KV vs HiSparse — HBM and host memory per request, the largest
// number of concurrent decode requests under each limit (HBM, pools, host DRAM, PCIe within the TPOT SLO, the SLO
// itself), which limit binds, throughput against batch size, and sweeps of device_buffer_size and
// host_to_device_ratio (docs/capacity.md). The limits of each row are the capacity model's (sim/capacity/capacity.h);
// this file adds what a plan prints around them. Pure computation: apps/plan.cpp reads options and writes the reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/memory_budget.h"
#include "sim/capacity/capacity_limit.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/plan/cache_strategies.h"
#include "sim/miss/miss_curve.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/cost/step/kv_mode.h"

namespace hisparse::sim {

struct PlanOptions {
  std::vector<int64_t> seq_lens = default_seq_lens();
  CostParams cost;
  std::vector<int32_t> sweep_buffer_sizes;  // device_buffer_size values (each >= top_k)
  std::vector<int32_t> sweep_ratios;        // host_to_device_ratio values (each >= 1)
  double host_reserve_bytes = 0;            // per decode node: DRAM kept for the OS and the server process
  int64_t batch_cap = 65536;                // largest batch per rank the SLO search looks at
  int curve_points = 40;                    // batch sizes per throughput curve (plus the marked limits)
  bool memory_only = false;                 // `--limits memory`: only count caps and memory limit concurrency (no PCIe,
                                            // no SLO); the step time at that concurrency is still reported
  StrategyOptions strategies;               // `--strategies`: the cache-strategy section (off by default)
};

/// binding_limit of a HiSparse row when the model has no sparse indexer (GQA / MHA models).
inline constexpr const char* kNotApplicable = "not applicable";

/// A plan row's limits are the capacity model's (sim/capacity/capacity_limit.h).
using PlanLimit = CapacityLimit;

struct PlanRow {
  int64_t seq_len = 0;
  KvMode mode = KvMode::kFull;
  int64_t max_per_rank = 0;          // requests per dp rank
  int64_t max_concurrency = 0;       // requests per decode instance = max_per_rank × ranks
  std::string binding_limit;
  double decode_tokens_per_s = 0;    // per instance at max_concurrency
  Figure hbm_per_request;            // per GPU holding the request
  Figure host_per_request;           // per GPU holding the request (0 in full-KV mode)
  Figure gpu_latent_per_request;     // full: the whole latent; HiSparse: the device buffer
  Figure gpu_indexer_per_request;
  std::vector<PlanLimit> limits;     // every key of limit_keys(), in that order
  StepEstimate at_max;               // the step at max_per_rank
  // Transfer granularity (HiSparse and dynamic rows; sim/cost/terms/transfer_granularity.h): at_max's misses loaded one
  // layer at a time, and one request's prompt offloaded to the host pool in one batched all-layer copy.
  TransferCost decode_transfer, prefill_offload;
  double misses_per_request_step = 0;
  double miss_fraction = 0;          // per-layer fraction used at this n (HiSparse, n > H)
  std::string slo_note;              // what the step is made of just past the SLO limit
  // HBM per GPU at max concurrency, inside the KV budget (bytes).
  double latent_pool_bytes = 0, indexer_pool_bytes = 0;  // the pools as allocated
  double latent_used_bytes = 0, indexer_used_bytes = 0;
  double host_used_bytes_per_gpu = 0;
  int64_t resident_per_rank = -1;    // dynamic residency: the largest batch per rank that stays resident (-1: other modes)
};

struct CurvePoint {
  int64_t batch_per_rank = 0;
  int64_t batch = 0;                 // per instance
  double tpot_ms = 0;
  double tokens_per_s = 0;           // per instance
  double h2d_ms = 0;                 // exposed H2D copy in the step
  bool within_slo = false;
};

struct ThroughputCurve {
  int64_t seq_len = 0;
  KvMode mode = KvMode::kFull;
  int64_t memory_limit_per_rank = 0;  // the curve stops at the smallest limit other than PCIe and the SLO
  std::vector<CurvePoint> points;
};

struct SweepRow {
  std::string param;                 // "device_buffer_size" | "host_to_device_ratio"
  int64_t value = 0;
  bool is_current = false;           // the scenario's own setting
  int64_t seq_len = 0;
  int64_t max_concurrency = 0;       // HiSparse, per instance
  std::string binding_limit;
  double tpot_ms = 0, decode_tokens_per_s = 0;
  double misses_per_request_step = 0, h2d_bytes_per_step = 0, miss_fraction = 0;
  int64_t device_pool_tokens = 0, logical_pool_tokens = 0;
  double device_buffer_bytes = 0, hbm_per_request = 0, host_pool_bytes_per_node = 0, host_dram_left_bytes = 0;
};

struct HbmSplit {
  double hbm = 0, weights = 0, activation_reserve = 0, kv_budget = 0;
  double outside_static = 0;         // HBM − weights − reserve − KV budget (the 1 − mem_fraction_static share)
};

struct CapacityPlan {
  Scenario scenario;
  PlanOptions options;
  MemoryBudget budget;
  RankLayout layout;
  HbmSplit hbm;
  std::string miss_source;
  double h2d_rate = 0, d2h_rate = 0;     // bytes/s per GPU used for misses and backups
  double host_dram_per_gpu = 0;          // (host DRAM − reserve) / GPUs per node
  std::vector<PlanRow> rows;             // per seq_len: full, then hisparse
  // Dynamic residency (SGLang's hisparse_dynamic.py), per seq_len: HiSparse's memory limits (any request can be
  // demoted to its buffer), the step of the resident graph while every request fits, else of the swap graph with the
  // longest requests demoted (sim/cost/step/dynamic_residency.h). Empty without a sparse indexer.
  std::vector<PlanRow> dynamic_rows;
  std::vector<ThroughputCurve> curves;   // same order as rows (no curve for a "not applicable" HiSparse row)
  std::vector<SweepRow> sweep_buffer, sweep_ratio;
  std::vector<std::string> warnings;
  StrategyTable strategies;              // filled only when options.strategies.enabled (sim/plan/cache_strategies.h)
  // Non-empty when the model has no sparse indexer: why every HiSparse row reads "not applicable" (its rows keep
  // their place after each full-KV row; no HiSparse curve and no sweep is computed).
  std::string hisparse_not_applicable;
};

/// `misses` must hold a curve for the scenario's device_buffer_size and every sweep buffer size.
CapacityPlan compute_capacity_plan(const Scenario& scenario, const PlanOptions& options, const MissCurves& misses);

/// Default sweep values around a scenario's setting (the setting itself included).
std::vector<int32_t> default_buffer_sweep(const Scenario& scenario);
std::vector<int32_t> default_ratio_sweep(const Scenario& scenario);

}  // namespace hisparse::sim
