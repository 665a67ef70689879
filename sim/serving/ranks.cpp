// @brief Ranks, the rank scenario and the collective link of a decode instance (see ranks.h).
#include "sim/serving/ranks.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

ServingRanks serving_ranks(const Scenario& s) {
  ServingRanks r;
  r.layout = rank_layout(s);
  if (r.layout.gpus % r.layout.ranks != 0)
    throw_error("{}: decode.gpus {} is not a multiple of decode.dp_attention {}: every dp rank needs the same GPUs",
                s.source, r.layout.gpus, r.layout.ranks);
  r.gpus_per_rank = r.layout.gpus / r.layout.ranks;
  // The step estimate's rank scenario (heads / attention TP, the collective link's rate as nvlink_bytes_per_s,
  // sim/cost/layout/rank_layout.h), so plan and simulate compute the same attention and all-to-all per GPU.
  r.rank_scenario = sim::rank_scenario(s);
  const CollectiveLink link = collective_link(s);
  r.nodes = link.nodes;
  r.collective_bytes_per_s = link.bytes_per_s;
  r.collective_link = link.label;
  return r;
}

SimTime attention_allreduce_ns(const ServingRanks& r, const CostParams& p, int64_t batch) {
  return attention_allreduce_ns(r.gpus_per_rank, r.collective_bytes_per_s, r.nodes > 1, r.rank_scenario.model, p, batch);
}

}  // namespace hisparse::sim
