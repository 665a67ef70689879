// @brief Concurrency sweep: closed-loop clients at each level, full KV vs HiSparse; the table, its JSON/CSV and the
// crossover (the level from which HiSparse gives more decode tokens/s than full KV at every higher level, counting only
// levels where HiSparse meets the TPOT SLO).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/serving/serving_simulation.h"

namespace hisparse::sim {

struct SweepPoint {
  int32_t concurrency = 0;
  KvMode mode = KvMode::kFull;
  double tokens_per_s = 0;            // decode tokens of finished requests / makespan, whole system
  double tpot_p50_ms = 0, tpot_p99_ms = 0;  // decode time per output token once decoding (ServingSummary::tpot_ms)
  double wait_p50_ms = 0, wait_p99_ms = 0;  // arrival until the request joins decode (ServingSummary::wait_ms)
  double ttft_p50_ms = -1, ttft_p99_ms = -1;  // -1: not modelled (PD without a prefill section)
  double batch_per_rank = 0;          // mean over steps that decode
  // Over the steps while every client had a request in flight (sim/serving/steady_window.h): the figure comparable
  // with advise's full-batch goodput, the ramp-down apart; 0 when no such step was recorded.
  double steady_tokens_per_s = 0;
  int64_t finished = 0, rejected = 0, host_alloc_failures = 0;
};

struct SweepTable {
  std::string scenario, workload, overlap;
  SimTime think_time = 0;
  double tpot_slo_ms = 0;             // the deployment's; only levels where HiSparse's TPOT p50 meets it count
  std::vector<SweepPoint> points;     // every level in both modes (a level missing one mode has no ratio)
  int32_t crossover = -1;             // -1: HiSparse never keeps the lead
};

/// Smallest level from which HiSparse's tokens/s exceed full KV's at that level and every higher level measured in
/// both modes, counting only levels where HiSparse's TPOT p50 <= tpot_slo_ms (elsewhere neither mode is an operating
/// point HiSparse could win); -1 if none.
int32_t find_crossover(const std::vector<SweepPoint>& points, double tpot_slo_ms);
/// Parses "1,2,4,8" (ascending, each >= 1), naming `flag` in errors.
std::vector<int32_t> parse_concurrency_levels(const std::string& text, const std::string& flag);

std::string sweep_text(const SweepTable& t);   // the printed table and the crossover line
std::string sweep_json(const SweepTable& t);
std::string sweep_csv(const SweepTable& t);

}  // namespace hisparse::sim
