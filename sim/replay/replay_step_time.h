// @brief `replay --scenario S`: the modelled decode-step time of every replayed decode step, from the planner's step
// model (sim/cost/step/step_time_model.h) fed with that step's replayed misses, and its p50/p99 against the deployment's
// TPOT SLO. Modelled, not measured: the replay counts misses; what a step costs is the cost model's.
//
// What is assumed (stated in the table and replay.json): every decode step of the trace is priced as a step of a
// batch of `batch` requests per DP rank, each at that step's context length with that step's misses (the step model
// prices a homogeneous batch); the caller picks the batch and says why (apps/replay.cpp: the deployment's
// max_running_requests, else the concurrency the advice recommends, else 1). The replayed misses of a step are summed
// over the trace's layers and applied to the model's layers as a per-layer fraction of the K - 1 selections that can
// miss.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

struct ReplayStepTime {
  std::string policy;
  int32_t buffer_size = 0;           // as replayed (trace units)
  int32_t scenario_buffer_size = 0;  // device_buffer_size the step is priced at (the same H/K at the scenario's K)
  int64_t steps = 0;                 // decode steps priced
  double mean_ms = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;  // over every step
  // Apart: the steady state and the cold start (a request's first step and warm-up, cold_start_step at the replayed H).
  int64_t cold_steps = 0;
  double steady_p50_ms = 0, steady_p99_ms = 0, cold_p99_ms = 0;  // 0 without steps of that phase
  int64_t over_slo = 0;              // steps longer than the TPOT SLO
};

struct ReplayStepTimeReport {
  std::string deployment;
  double slo_ms = 0;
  int64_t batch = 1;       // requests per DP rank the step is priced for
  std::string assumption;  // the batch assumption in words
  std::vector<ReplayStepTime> configs;  // ReplayResult::configs order
};

/// Prices every decode step of every configuration of `r` (which must carry ReplayConfigStats::step_misses). A trace
/// recorded at another top_k is priced at the same H/K on the scenario (as `--rescale-trace-top-k` applies it).
/// `batch` (>= 1) requests per DP rank; `assumption` says where that batch comes from (printed and stored).
ReplayStepTimeReport model_replay_step_times(const Scenario& scenario, const CostParams& cost, const ReplayResult& r,
                                             int64_t batch, const std::string& assumption);

/// Lines for the replay table (labelled modelled, with the assumption).
std::string format_step_times(const ReplayStepTimeReport& report);
/// The value of replay.json's "step_time" key.
std::string step_times_json(const ReplayStepTimeReport& report);

}  // namespace hisparse::sim
