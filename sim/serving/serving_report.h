// @brief Turns a ServingResult into the reported figures (percentiles, utilisation, breakdown) and writes
// them as JSON (summary) and CSV (per request, per step). Deterministic text: same result → same bytes.
#pragma once

#include <string>

#include "core/deployment_spec.h"
#include "sim/serving/serving_simulation.h"

namespace hisparse::sim {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
  int64_t count = 0;
};
/// Nearest-rank percentiles of `v` (sorted internally).
Percentiles percentiles(std::vector<double> v);

struct ServingSummary {
  Percentiles ttft_ms, tpot_ms, step_ms, batch_per_gpu;  // batch_per_gpu: per dp rank, over steps that decode
  double tokens_per_s_per_gpu = 0, tokens_per_s_per_instance = 0, tokens_per_s = 0;  // tokens of finished attempts
  double hit_rate = 1;
  double pcie_h2d_util = 0, pcie_d2h_util = 0, host_dram_util = 0, rdma_util = 0;  // mean over links, over the makespan
  double io_stall_s = 0, io_stall_fraction = 0;   // exposed h2d + stall, summed over GPU-steps; share of busy GPU time
  double tpot_slo_attainment = 0;                 // share of decoded requests with TPOT <= the deployment's SLO
  StepCost mean_step;                             // per busy GPU-step, ns
};
ServingSummary summarize(const ServingResult& r, const Scenario& scenario);
/// Where a request's TPOT is measured from: its first token, or (PD without a prefill section: TTFT not modelled)
/// its arrival, when the prefill nodes outside the scenario send its KV.
SimTime tpot_origin(const RequestOutcome& o);
bool ttft_modelled(const ServingResult& r);

/// JSON object (no trailing newline) with the run's identity, counts, summary and conservation figures.
std::string summary_json(const ServingResult& r, const Scenario& scenario);
std::string requests_csv(const ServingResult& r);
std::string steps_csv(const ServingResult& r);

}  // namespace hisparse::sim
