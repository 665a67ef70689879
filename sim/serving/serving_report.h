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
  // tpot_ms: per request, decode time per output token once it decodes (tpot_origin), queueing apart; wait_ms: per
  // request, arrival until it joins decode (admission queue, prefill, KV transfer). batch_per_gpu: per dp rank, over
  // steps that decode. `hisparse fidelity` reads tpot_ms.p50 as simulate's TPOT.
  Percentiles ttft_ms, tpot_ms, wait_ms, step_ms, batch_per_gpu;
  double tokens_per_s_per_gpu = 0, tokens_per_s_per_instance = 0, tokens_per_s = 0;  // tokens of finished attempts
  // Decode-side throughput per instance: over instance steps that decoded, requests ÷ step length. Its p50 is the
  // steady decode throughput a "decode-side" benchmark reports (no refill gaps, no prefill on PD).
  Percentiles decode_tokens_per_s;
  double hit_rate = 1;
  double pcie_h2d_util = 0, pcie_d2h_util = 0, host_dram_util = 0, rdma_util = 0;  // mean over links, over the makespan
  double io_stall_s = 0, io_stall_fraction = 0;   // exposed h2d + stall, summed over GPU-steps; share of busy GPU time
  double tpot_slo_attainment = 0;                 // share of decoded requests with TPOT <= the deployment's SLO
  StepCost mean_step;                             // per busy GPU-step, ns
};
ServingSummary summarize(const ServingResult& r, const Scenario& scenario);
/// The prefix cache's hit rate: hit tokens / input tokens of finished requests (0 without input).
double prefix_hit_rate(const ServingResult& r);
/// Where a request's TPOT is measured from: its first token (as SGLang's bench_serving: (latency - TTFT) / (output -
/// 1)), or, PD without a prefill section (no first token modelled), when its KV has arrived and it joins decode; never
/// its arrival, so queueing for admission stays out of TPOT (it is in wait_ms).
SimTime tpot_origin(const RequestOutcome& o);
bool ttft_modelled(const ServingResult& r);
/// Tokens a request gained per decode step over the run (1 without MTP; with MTP ≈ 1 + a + … + a^d, less where a
/// request's last step had fewer tokens left).
double tokens_per_request_step(const ServingResult& r);

/// JSON object (no trailing newline) with the run's identity, counts, summary and conservation figures.
std::string summary_json(const ServingResult& r, const Scenario& scenario);
std::string requests_csv(const ServingResult& r);
std::string steps_csv(const ServingResult& r);

}  // namespace hisparse::sim
