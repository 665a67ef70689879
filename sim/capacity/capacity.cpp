// @brief The capacity model's entry (capacity.h): the count cap, the memory limits of the scenario's pool layout
// (pool_limits.h), the host pools' start-up check, PCIe within the TPOT SLO, the SLO, and the binding limit.
#include "sim/capacity/capacity.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/model_family.h"
#include "sim/capacity/pool_limits.h"
#include "sim/cost/layout/rank_layout.h"

namespace hisparse::sim {

using capacity_detail::plain_number;
using capacity_detail::PoolContext;

namespace {

std::string ms(SimTime t) { return fmt::format("{:.3f} ms", static_cast<double>(t) * 1e-6); }
std::string gbs(double rate) { return fmt::format("{:.4g} GB/s", rate * 1e-9); }

void cap_limit(const DeploymentSpec& d, Capacity& out) {
  CapacityLimit& l = find_limit(out.limits, "max_running_requests");
  if (d.max_running_requests > 0) {
    l.per_rank = d.max_running_requests;
    l.formula = fmt::format("deployment max_running_requests = {}", d.max_running_requests);
  } else {
    l.formula = "not set (0 = unlimited)";
  }
}

// SGLang allocates the host pools at start-up: a setting whose pools exceed host DRAM does not launch.
void host_pools_fit(const PoolContext& c, Capacity& out) {
  if (!(c.b.host_pool_bytes_per_node.value > c.dram_usable)) return;
  CapacityLimit& l = find_limit(out.limits, "host_dram");
  l.per_rank = 0;
  l.formula = fmt::format("the host pools need {:.1f} GB per node, host DRAM less the reserve is {:.1f} GB: the server "
                          "would fail to start", c.b.host_pool_bytes_per_node.value * 1e-9, c.dram_usable * 1e-9);
}

// The batch's misses share the GPU's one PCIe link: the largest batch whose miss copy and backup fit the SLO.
void pcie_limit(const PoolContext& c, const StepTimeModel& model, SimTime slo, const CapacityOptions& o,
                Capacity& out) {
  CapacityLimit& l = find_limit(out.limits, "pcie");
  if (!c.hs) {
    l.formula = "full KV: nothing crosses PCIe per step";
    return;
  }
  const double row = c.b.latent_row_bytes.value, slo_ms = c.s.deployment.tpot_slo_ms;
  const bool c4 = c.b.model_family().compressed_pools();
  out.misses_per_request_step = c.expect([&](int64_t n) { return model.misses_per_request(n); });
  if (o.memory_only) {
    l.formula = "not applied (--limits memory)";
  } else if (out.misses_per_request_step > 0) {
    l.per_rank = model.max_batch_io_within(c.mix, slo, o.batch_cap);
    l.formula = c.one ? fmt::format("largest B with fixed + B × misses_per_request × row / rate ≤ SLO and the backup ≤ "
                                    "SLO: {} + B × {:.0f} × {} B / {}{} ≤ {} ms",
                                    ms(model.h2d_fixed_ns()), out.misses_per_request_step, plain_number(row),
                                    gbs(model.h2d_rate()), o.calibrated_swap_in ? " (calibrated: rate depends on B)" : "",
                                    plain_number(slo_ms))
                      : fmt::format("largest B whose miss copy ({:.0f} rows per request and step, {:.0f} B each) and "
                                    "backup each fit the SLO of {} ms on one PCIe link",
                                    out.misses_per_request_step, row, slo_ms);
  } else if (c.one) {
    l.formula = fmt::format("unbounded: {} = {} ≤ H = {}, every selection stays resident", c4 ? "C4 entries n / 4" : "n",
                            model.estimator().entries(c.first_len()), c.s.deployment.hisparse.device_buffer_size);
  } else {
    l.formula = c4 ? "every length of the mix fits the buffer (n / 4 C4 entries ≤ H): nothing is loaded"
                   : "every length of the mix fits the buffer (n ≤ H): nothing is loaded";
  }
}

// The largest batch whose step stays within the TPOT SLO (the step time grows with the batch).
void slo_limit(const PoolContext& c, const StepTimeModel& model, SimTime slo, const CapacityOptions& o, Capacity& out) {
  CapacityLimit& l = find_limit(out.limits, "slo");
  const double slo_ms = c.s.deployment.tpot_slo_ms;
  const int64_t b = model.max_batch_within(c.mix, slo, o.batch_cap);
  auto step = [&](int64_t batch) { return model.step(batch, c.mix).tpot_ns; };
  if (o.memory_only) {
    l.formula = fmt::format("not applied (--limits memory); largest B within the SLO would be {}", b);
    if (!std::any_of(out.limits.begin(), out.limits.end(), [](const CapacityLimit& x) { return x.per_rank >= 0; })) {
      // No memory limit applies (full KV with no cap cannot happen: HBM always applies); keep the search cap.
      l.per_rank = o.batch_cap;
      l.formula = "no memory limit applies: the search cap";
    }
    return;
  }
  l.per_rank = b;
  if (!c.one)
    l.formula = b == 0 ? fmt::format("one request alone takes {:.3f} ms > SLO {} ms", step(1) * 1e-6, slo_ms)
                       : fmt::format("largest B with step_time(B) ≤ SLO {} ms: step({}) = {:.3f} ms", slo_ms, b,
                                     step(b) * 1e-6);
  else if (b == 0)
    l.formula = fmt::format("one request alone takes {} > SLO {} ms", ms(step(1)), plain_number(slo_ms));
  else if (b >= o.batch_cap)
    l.formula = fmt::format("step({}) = {} ≤ SLO {} ms (search cap reached)", b, ms(step(b)), plain_number(slo_ms));
  else
    l.formula = fmt::format("largest B with step_time(B) ≤ SLO: step({}) = {} ≤ {} ms < step({}) = {}", b, ms(step(b)),
                            plain_number(slo_ms), b + 1, ms(step(b + 1)));
}

}  // namespace

double host_dram_per_gpu(const Scenario& s, double host_reserve_bytes) {
  const int per_node = std::max(1, std::min(rank_layout(s).gpus, s.hardware.gpus_per_node));
  return std::max(0.0, s.deployment.host_dram_bytes - host_reserve_bytes) / per_node;
}

Capacity capacity_limits(const Scenario& s, const MemoryBudget& b, const ContextMix& mix, KvMode mode,
                         const StepTimeModel& model, const CapacityOptions& o) {
  mix.validate("capacity");
  const DeploymentSpec& d = s.deployment;
  PoolContext c{s, b, mix};
  c.hs = uses_host_pool(mode);
  c.one = mix.classes.size() == 1;
  c.dram_per_gpu = host_dram_per_gpu(s, o.host_reserve_bytes);
  c.dram_usable = d.host_dram_bytes - o.host_reserve_bytes;
  c.gpus_per_node = std::min(rank_layout(s).gpus, s.hardware.gpus_per_node);
  if (c.hs && !b.sparse_indexer)
    throw_error("{}: model {} has no sparse indexer ({} attention): HiSparse's modes do not apply", s.source,
                s.model.name, b.attention);
  Capacity out;
  out.limits = unset_limits();
  out.host_dram_per_gpu = c.dram_per_gpu;
  cap_limit(d, out);
  if (!c.hs) capacity_detail::full_kv_limits(c, out);
  else if (b.model_family().compressed_pools()) capacity_detail::dsv4_hisparse_limits(c, out);
  else capacity_detail::hisparse_limits(c, out);
  if (c.hs && o.host_pools_must_fit) host_pools_fit(c, out);
  const SimTime slo = static_cast<SimTime>(std::llround(d.tpot_slo_ms * 1e6));
  pcie_limit(c, model, slo, o, out);
  slo_limit(c, model, slo, o, out);
  const CapacityLimit& bind = binding_limit(out.limits);
  out.binding_limit = bind.key;
  out.per_rank = std::max<int64_t>(0, bind.per_rank);
  return out;
}

}  // namespace hisparse::sim
