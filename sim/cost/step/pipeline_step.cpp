// @brief The pipelined decode cycle and its stage-to-stage transfer (see pipeline_step.h).
#include "sim/cost/step/pipeline_step.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/cost/layout/rank_layout.h"

namespace hisparse::sim {

int64_t micro_batch_size(int pp, int64_t batch) {
  const int64_t p = std::max(1, pp);
  return batch <= 0 ? 0 : (batch + p - 1) / p;
}

PipelineCycle pipeline_cycle(int pp, int64_t batch, SimTime stage_ns, SimTime hop_ns, SimTime return_ns) {
  if (pp < 1) throw_error("pipeline_cycle: pp {}: expected at least 1", pp);
  PipelineCycle c;
  c.stages = pp;
  c.batch = batch;
  if (batch <= 0) return c;
  c.micro_batches = std::min<int64_t>(pp, batch);
  c.micro_batch = micro_batch_size(pp, batch);
  c.stage_ns = stage_ns;
  c.hop_ns = pp > 1 ? hop_ns : 0;
  c.return_ns = pp > 1 ? return_ns : 0;
  c.latency_ns = pp * stage_ns + (pp - 1) * c.hop_ns + c.return_ns;
  c.occupancy_ns = c.micro_batches * (stage_ns + c.hop_ns);
  c.cycle_ns = std::max(c.latency_ns, c.occupancy_ns);
  c.bubble = c.cycle_ns > 0 ? 1.0 - static_cast<double>(c.micro_batches * stage_ns) / static_cast<double>(c.cycle_ns)
                            : 0.0;
  return c;
}

StageLink stage_link(const Scenario& s, const CostParams& p) {
  StageLink l;
  const CollectiveLink c = collective_link(s);  // the whole instance: across nodes when it spans them
  l.bytes_per_s = c.bytes_per_s;
  l.internode = c.nodes > 1;
  l.latency_ns = l.internode ? s.hardware.nic.per_message_ns : p.all_reduce_latency_ns(false);
  l.gather_latency_ns = p.all_reduce_latency_ns(false);
  l.nvlink_bytes_per_s = s.hardware.nvlink_bytes_per_s > 0 ? s.hardware.nvlink_bytes_per_s : c.bytes_per_s;
  l.label = fmt::format("stage to stage over {}", c.label);
  return l;
}

double stage_activation_bytes(const ModelSpec& m, int64_t micro_batch) {
  return static_cast<double>(micro_batch) * m.hidden_size * 2.0 * 2.0;
}

SimTime stage_hop_ns(const StageLink& l, double bytes, int tp) {
  const int t = std::max(1, tp);
  if (!(l.bytes_per_s > 0)) throw_error("stage_hop_ns: the stage link has no rate");
  double ns = static_cast<double>(l.latency_ns) + bytes / t / l.bytes_per_s * 1e9;
  if (t > 1) ns += static_cast<double>(l.gather_latency_ns) + bytes * (t - 1) / t / l.nvlink_bytes_per_s * 1e9;
  return static_cast<SimTime>(std::llround(ns));
}

}  // namespace hisparse::sim
