// @brief with_v2_schedules and format_v2_session (see replay_v2_session.h).
#include "sim/replay/replay_v2_session.h"

#include <fmt/format.h>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::sim {
namespace {

/// Each request's first sequence length and number of steps, in file order.
std::vector<cpu_ref::V2RequestSteps> request_steps(traces::TraceSource& source) {
  std::vector<cpu_ref::V2RequestSteps> out;
  traces::StepRecord rec;
  while (source.next(rec)) {
    if (out.empty() || out.back().id != rec.request_id) {
      out.push_back({rec.request_id, rec.seq_len, 0});
    }
    ++out.back().steps;  // one record per step, every layer in it
  }
  return out;
}

}  // namespace

ReplayOptions with_v2_schedules(const ReplayOptions& options, const traces::TraceMeta& meta) {
  ReplayOptions out = options;
  if (!options.v2_pools) return out;
  if (!options.open_trace)
    throw_error("replay: the hisparse-v2 session needs a second cursor on trace {} (ReplayOptions::open_trace)",
                meta.source);
  std::vector<cpu_ref::V2RequestSteps> steps;
  for (const auto& p : options.policies) {
    const std::string spec = cpu_ref::with_v2_coordinator(p, options.v2_coordinator);
    const size_t colon = spec.find(':');
    if (spec.substr(0, colon) != "hisparse-v2") continue;
    const cpu_ref::HisparseV2Spec v2 = cpu_ref::parse_hisparse_v2_arg(spec.substr(colon + 1));
    if (steps.empty()) {
      auto cursor = options.open_trace();
      steps = request_steps(*cursor);
    }
    for (const int32_t H : options.buffer_sizes) {
      out.v2_schedules[{spec, H}] = std::make_shared<const cpu_ref::V2Schedule>(
          cpu_ref::plan_v2_session(steps, H, v2.page, v2.rules, *options.v2_pools));
    }
  }
  if (out.v2_schedules.empty())
    throw_error("replay: V2 session pools given (--v2-device-pool-tokens) but no hisparse-v2 policy to replay; add "
                "--policy hisparse-v2");
  return out;
}

std::string format_v2_session(const ReplayOptions& options) {
  std::string out;
  if (!options.v2_pools || options.v2_schedules.empty()) return out;
  const cpu_ref::V2SessionPools& p = *options.v2_pools;
  out += fmt::format(
      "hisparse-v2 session (modelled: the trace's requests as one batch in trace order): device pool {} tokens, host "
      "{}, indexer pages {}, radix nodes of {} tokens (assumed)\n",
      p.device_pool_tokens, p.host_pool_tokens > 0 ? fmt::format("{} tokens", p.host_pool_tokens) : "unbounded",
      p.indexer_pages >= 0 ? fmt::format("{}", p.indexer_pages) : "unbounded",
      p.node_tokens > 0 ? fmt::format("{}", p.node_tokens) : "the whole prefix");
  for (const auto& [key, sched] : options.v2_schedules) {
    const cpu_ref::V2SessionCounts& c = sched->counts;
    const auto n = [&](cpu_ref::V2Admit a) { return c.admissions[static_cast<size_t>(a)]; };
    out += fmt::format(
        "  {} H {}: admitted V2 {}, standard {} (no whole page {}, shorter than H {}, host capacity {}, indexer pages "
        "{}, temp buffer {}); retractions {}, re-admissions {}; on the host at the last step {} of {} prefix tokens, "
        "{} V2 requests partly evicted\n",
        key.first, key.second, n(cpu_ref::V2Admit::kV2), c.fallbacks(), n(cpu_ref::V2Admit::kNoWholePage),
        n(cpu_ref::V2Admit::kShorterThanBuffer), n(cpu_ref::V2Admit::kHostCapacity),
        n(cpu_ref::V2Admit::kIndexerPages), n(cpu_ref::V2Admit::kTempBuffer), c.retractions, c.readmissions,
        c.evicted_tokens, c.prefix_tokens, c.v2_requests_partly_evicted);
  }
  return out;
}

}  // namespace hisparse::sim
