// @brief ServingSimulation: requests arrive, prefill on prefill instances, move their KV by RDMA into the
// decode node, and decode step by step on data-parallel GPUs in lockstep (expert all-to-all), in full-KV or
// HiSparse mode — one engine, one switch.
//
// Granularity (chosen for speed, see docs/cost_model.md): a decode step is a handful of events per GPU, not per
// layer. Per GPU: [indexer + top-k + hit detection of all layers] → [host→device copy of all layers' misses,
// one flow on the shared links] → [attention of all layers] → barrier over the instance's GPUs → [MoE, all-to-all,
// LM head of all layers] → step end. Exact for one GPU on an uncontended link in `none` mode; under contention
// the copies of one step are one flow at the fair rate instead of 61 bursts, and the per-layer barrier of the
// all-to-all is taken once per step (the slowest GPU's step sum, not the sum of per-layer maxima).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/chrome_trace.h"
#include "sim/cost_params.h"
#include "sim/miss_model.h"
#include "sim/sim_time.h"
#include "sim/step_cost.h"
#include "sim/workload.h"

namespace hisparse::sim {

enum class KvMode { kFull, kHiSparse };
const char* to_string(KvMode mode);

struct ServingOptions {
  KvMode mode = KvMode::kHiSparse;
  CostParams cost;
  const MissModel* miss_model = nullptr;  // HiSparse mode; null = statistical defaults from the scenario
  SimTime trace_begin = 0, trace_end = 0;  // Chrome-trace window; empty = none
  bool record_steps = true;                // keep one StepRow per instance step
  SimTime stop_after = kNever;             // safety: stop the clock here even if requests remain (then conservation fails)
};

struct RequestOutcome {
  int64_t id = 0;
  int32_t input_tokens = 0, output_tokens = 0;
  int32_t gpu = -1;          // global decode GPU index
  SimTime arrival = 0, admitted = -1, prefill_start = -1, first_token = -1, ready = -1, finish = -1;
  int64_t selected = 0, misses = 0;  // over all its decode steps and layers
  int32_t decoded = 0;       // tokens produced by decode steps
  bool rejected = false;     // could never fit on an empty GPU
};

struct StepRow {
  int32_t instance = 0;
  int64_t index = 0;
  SimTime start = 0, end = 0;
  int32_t requests = 0;      // over the instance's GPUs
  int64_t selected = 0, misses = 0;
  double h2d_bytes = 0, backup_bytes = 0;
  StepCost slowest;          // the critical GPU's breakdown (its sum is the step length)
};

struct LinkUsage {
  std::string name;
  double capacity = 0;       // bytes/s
  double bytes = 0;          // carried
};

struct ServingResult {
  std::string scenario, workload, miss_model;
  KvMode mode = KvMode::kHiSparse;
  OverlapMode overlap = OverlapMode::kNone;
  std::string link_model;
  int32_t decode_gpus = 0, decode_instances = 0, prefill_instances = 0;
  int64_t arrivals = 0, admitted = 0, finished = 0, rejected = 0;
  SimTime last_arrival = 0, makespan = 0;
  uint64_t events = 0;
  std::vector<RequestOutcome> requests;
  std::vector<StepRow> steps;
  StepCost gpu_cost_total;       // summed over all GPU-steps where the GPU had requests
  int64_t gpu_steps_busy = 0;    // GPU-steps with requests
  int64_t decode_tokens = 0;
  int64_t selected = 0, misses = 0;
  double miss_flow_bytes = 0;    // bytes the miss copies carried (conservation: = misses × row_bytes)
  double admission_h2d_bytes = 0, backup_bytes = 0, rdma_bytes = 0;
  double row_bytes = 0;
  std::vector<LinkUsage> links;
  // Pool sizes used for admission, per GPU.
  int64_t device_pool_tokens = 0, logical_pool_tokens = 0;
};

/// Runs the workload to completion (every admitted request finishes) and checks conservation; throws
/// hisparse::Error if a conservation check fails.
ServingResult run_serving(const Scenario& scenario, const Workload& workload, const ServingOptions& options,
                          ChromeTrace* trace = nullptr);

/// The default statistical miss model for a scenario (layers, K, H from it; warm-up and steady curve from the
/// measured miss surface kDefaultMissSurface at the scenario's H/K, policy sglang-lru; see sim/miss_surface.h).
StatisticalMissParams default_miss_params(const Scenario& scenario);

}  // namespace hisparse::sim
