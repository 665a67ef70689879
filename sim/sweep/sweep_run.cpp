// @brief What one sweep work item computes, through the sim/ APIs the subcommands use (sweep_run.h): a capacity plan
// at the point's settings (as `hisparse plan`), a replay of the point's policy and buffer size over a request shard
// (as `hisparse replay`), a serving simulation (as `hisparse simulate`).
#include "sim/sweep/sweep_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/api/plan_request.h"
#include "sim/api/simulate_outcome.h"
#include "sim/plan/capacity_plan.h"
#include "sim/replay/replay_engine.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/serving_simulation.h"
#include "sim/sweep/replay_shards.h"
#include "traces/trace_source.h"

namespace hisparse::sim::sweep {

namespace {

/// Fixed formats: a row is compared byte for byte between a local and an MPI run.
std::string f3(double v) { return fmt::format("{:.3f}", v); }
std::string f6(double v) { return fmt::format("{:.6f}", v); }
std::string i64(int64_t v) { return fmt::format("{}", v); }

std::string metrics_text(const std::vector<Metric>& m) {
  std::string s = "metrics\n";
  for (const auto& x : m) s += x.key + "\t" + x.value + "\n";
  return s;
}

std::vector<Metric> parse_metrics(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "metrics") throw_error("{}: malformed metrics text (no header)", where);
  std::vector<Metric> out;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw_error("{}: malformed metrics line '{}'", where, line);
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

/// The point's HiSparse settings as overrides of its scenario (0: the deployment's own), on the hardware's own cost
/// terms and calibrations.
ScenarioChoice point_choice(const GridPoint& p) {
  ScenarioChoice c;
  c.scenario = p.scenario;
  if (p.device_buffer_size) c.overrides.device_buffer_size = p.device_buffer_size;
  if (p.host_to_device_ratio) c.overrides.host_to_device_ratio = p.host_to_device_ratio;
  return c;
}

std::string run_plan_point(const GridPoint& p) {
  PlanRequest req;
  req.setup = point_choice(p);
  req.misses.surface = p.settings.miss_curve;
  req.misses.policy = p.policy;
  req.memory_only = p.settings.limits == "memory";
  req.seq_lens = {p.context};
  // One point is one setting: the plan's own sweeps shrink to it.
  req.single_setting = true;
  req.command = fmt::format("sweep {}", describe_point(p));
  const PlanOutcome out = run_plan(req);
  const Scenario& s = out.scenario;
  const CapacityPlan& plan = out.plan;
  const PlanRow* full = nullptr;
  const PlanRow* hs = nullptr;
  for (const auto& r : plan.rows) (r.mode == KvMode::kFull ? full : hs) = &r;
  if (!full || !hs) throw_error("sweep {}: the plan holds no full-KV and HiSparse row", describe_point(p));
  std::vector<Metric> m = {
      {"device_buffer_size_used", i64(s.deployment.hisparse.device_buffer_size)},
      {"host_to_device_ratio_used", i64(s.deployment.hisparse.host_to_device_ratio)},
      {"full_max_concurrency", i64(full->max_concurrency)},
      {"full_binding_limit", full->binding_limit},
      {"full_tpot_ms", f3(static_cast<double>(full->at_max.tpot_ns) * 1e-6)},
      {"full_tokens_per_s", f3(full->decode_tokens_per_s)},
      {"hisparse_max_concurrency", i64(hs->max_concurrency)},
      {"hisparse_binding_limit", hs->binding_limit},
      {"hisparse_tpot_ms", f3(static_cast<double>(hs->at_max.tpot_ns) * 1e-6)},
      {"hisparse_tokens_per_s", f3(hs->decode_tokens_per_s)},
      {"hisparse_vs_full_tokens", f3(full->decode_tokens_per_s > 0 ? hs->decode_tokens_per_s / full->decode_tokens_per_s : 0)},
      {"hisparse_hbm_bytes_per_request", i64(std::llround(hs->hbm_per_request.value))},
      {"hisparse_host_bytes_per_request", i64(std::llround(hs->host_per_request.value))},
      {"miss_fraction", f6(hs->miss_fraction)},
  };
  return metrics_text(m);
}

int64_t replay_row_bytes(const GridPoint& p) {
  if (p.settings.row_bytes > 0) return p.settings.row_bytes;
  if (!p.scenario.empty()) {
    const Scenario s = load_scenario(p.scenario);
    return latent_row_bytes(s.model, s.deployment.kv_dtype);
  }
  return 1152;  // `hisparse replay`'s default: DeepSeek-V3.2's bf16 MLA latent row
}

std::string run_replay_item(const Grid& grid, const WorkItem& item) {
  const GridPoint& p = grid.points[static_cast<size_t>(item.point)];
  std::unique_ptr<traces::TraceSource> src = traces::open_trace(p.trace_path);
  if (item.requests > 0) src = request_range_source(std::move(src), item.first_request, item.requests);
  ReplayOptions o;
  o.policies = {p.policy};
  for (int64_t q : item.points) {  // the group's buffer sizes, each once, in grid order
    const int32_t H = grid.points[static_cast<size_t>(q)].device_buffer_size;
    if (std::find(o.buffer_sizes.begin(), o.buffer_sizes.end(), H) == o.buffer_sizes.end()) o.buffer_sizes.push_back(H);
  }
  o.row_bytes = replay_row_bytes(p);
  o.threads = 1;  // the pool's parallelism is its processes
  o.lookahead_bytes = static_cast<size_t>(p.settings.lookahead_mb) << 20;
  return replay_counters_text(run_replay(*src, o));
}

/// One `hisparse simulate` run through run_simulate (sim/api/simulate_outcome.h): the point's mode (dynamic
/// included) at its closed-loop level, no timeline, the sweep's own estimate instead of simulate's.
std::string run_simulate_point(const GridPoint& p) {
  SimulateRequest req;
  req.setup = point_choice(p);
  req.workload = p.workload;
  if (p.settings.duration_s > 0) req.duration_s = p.settings.duration_s;
  req.misses.surface = p.settings.miss_curve;
  req.misses.policy = p.policy;
  req.mode = p.mode;
  if (p.concurrency > 0) {
    req.concurrency = {p.concurrency};
    req.num_requests = p.settings.num_requests;
  }
  req.timeline_length_s = 0;
  req.check_work = false;
  const SimulateOutcome out = run_simulate(req, {}, fmt::format("sweep {}", describe_point(p)));
  const SimulateRun& run = out.runs.at(0);
  const ServingResult& r = run.result;
  const ServingSummary& sm = run.summary;
  const bool ttft = ttft_modelled(r);
  std::vector<Metric> m = {
      {"finished", i64(r.finished)},
      {"rejected", i64(r.rejected)},
      {"tokens_per_s", f3(sm.tokens_per_s)},
      {"tpot_p50_ms", f3(sm.tpot_ms.p50)},
      {"tpot_p99_ms", f3(sm.tpot_ms.p99)},
      {"ttft_p50_ms", ttft ? f3(sm.ttft_ms.p50) : "not modelled"},
      {"ttft_p99_ms", ttft ? f3(sm.ttft_ms.p99) : "not modelled"},
      {"batch_per_rank_mean", f3(sm.batch_per_gpu.mean)},
      {"sim_hit_rate", f6(sm.hit_rate)},
      {"tpot_slo_attainment", f6(sm.tpot_slo_attainment)},
  };
  return metrics_text(m);
}

/// The point's own configuration among its group's.
const ReplayConfigStats& point_config(const GridPoint& p, const ReplayResult& r) {
  for (const auto& c : r.configs)
    if (c.policy == p.policy && c.buffer_size == p.device_buffer_size) return c;
  throw_error("sweep {}: its replay holds no {} H={} configuration", describe_point(p), p.policy, p.device_buffer_size);
}

std::vector<Metric> replay_metrics(const GridPoint& p, const ReplayResult& r) {
  const ReplayConfigStats& c = point_config(p, r);
  return {
      {"row_bytes", i64(replay_row_bytes(p))},
      {"requests", i64(r.requests)},
      {"decode_steps", i64(r.decode_steps)},
      {"selected", i64(c.selected)},
      {"misses", i64(c.misses)},
      {"h2d_bytes", i64(c.h2d_bytes)},
      {"hit_rate", f6(c.hit_rate())},
      {"misses_per_step_layer", f3(c.mean_misses_per_step_layer())},
      {"misses_p50", i64(histogram_quantile(c.miss_hist, 0.5))},
      {"misses_p99", i64(histogram_quantile(c.miss_hist, 0.99))},
      {"h2d_bytes_per_decode_step",
       f3(c.decode_steps ? static_cast<double>(c.h2d_bytes) / static_cast<double>(c.decode_steps) : 0)},
      {"fast_path_fraction", f6(c.fast_path_fraction())},
      {"lookahead_cut_requests", i64(r.lookahead_cut_requests)},
  };
}

}  // namespace

const std::vector<std::string>& metric_columns(JobKind kind) {
  static const std::map<JobKind, std::vector<std::string>> cols = {
      {JobKind::kPlan,
       {"device_buffer_size_used", "host_to_device_ratio_used", "full_max_concurrency", "full_binding_limit",
        "full_tpot_ms", "full_tokens_per_s", "hisparse_max_concurrency", "hisparse_binding_limit", "hisparse_tpot_ms",
        "hisparse_tokens_per_s", "hisparse_vs_full_tokens", "hisparse_hbm_bytes_per_request",
        "hisparse_host_bytes_per_request", "miss_fraction"}},
      {JobKind::kReplay,
       {"row_bytes", "requests", "decode_steps", "selected", "misses", "h2d_bytes", "hit_rate",
        "misses_per_step_layer", "misses_p50", "misses_p99", "h2d_bytes_per_decode_step", "fast_path_fraction",
        "lookahead_cut_requests"}},
      {JobKind::kSimulate,
       {"finished", "rejected", "tokens_per_s", "tpot_p50_ms", "tpot_p99_ms", "ttft_p50_ms", "ttft_p99_ms",
        "batch_per_rank_mean", "sim_hit_rate", "tpot_slo_attainment"}},
  };
  return cols.at(kind);
}

std::vector<WorkItem> plan_work(const Grid& grid) {
  // Points in grid order, replay points of the same trace, policy and settings gathered into one group (up to
  // kMaxBuffersPerReplay buffer sizes): everything a replay item reads besides H is in the key.
  std::vector<std::vector<int64_t>> groups;
  std::map<std::string, size_t> open_group;
  for (const GridPoint& p : grid.points) {
    if (p.kind != JobKind::kReplay) {
      groups.push_back({p.index});
      continue;
    }
    const std::string key = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", p.trace_path, p.policy, p.scenario,
                                        p.settings.row_bytes, p.settings.lookahead_mb, p.settings.shard_requests);
    const auto it = open_group.find(key);
    if (it != open_group.end() && groups[it->second].size() < kMaxBuffersPerReplay) {
      groups[it->second].push_back(p.index);
    } else {
      open_group[key] = groups.size();
      groups.push_back({p.index});
    }
  }
  std::vector<WorkItem> out;
  std::map<std::string, int64_t> requests_of;
  for (const std::vector<int64_t>& g : groups) {
    const GridPoint& p = grid.points[static_cast<size_t>(g.front())];
    WorkItem whole;
    whole.point = p.index;
    whole.points = g;
    if (p.kind != JobKind::kReplay) {
      out.push_back(whole);
      continue;
    }
    auto it = requests_of.find(p.trace_path);
    if (it == requests_of.end())
      it = requests_of
               .emplace(p.trace_path, static_cast<int64_t>(traces::open_trace(p.trace_path)->request_ids().size()))
               .first;
    const int64_t per = p.settings.shard_requests > 0 ? p.settings.shard_requests : grid.replay_shard_requests;
    if (it->second <= per) {
      out.push_back(whole);
      continue;
    }
    const auto shards = request_shards(it->second, per);
    for (size_t s = 0; s < shards.size(); ++s) {
      WorkItem w = whole;
      w.shard = static_cast<int32_t>(s);
      w.shards = static_cast<int32_t>(shards.size());
      w.first_request = shards[s].first;
      w.requests = shards[s].second;
      out.push_back(std::move(w));
    }
  }
  return out;
}

std::string run_work_item(const Grid& grid, const WorkItem& item) {
  if (item.point < 0 || item.point >= static_cast<int64_t>(grid.points.size()))
    throw_error("sweep: work item names point {} of a grid of {}", item.point, grid.points.size());
  const GridPoint& p = grid.points[static_cast<size_t>(item.point)];
  switch (p.kind) {
    case JobKind::kPlan: return run_plan_point(p);
    case JobKind::kReplay: return run_replay_item(grid, item);
    case JobKind::kSimulate: return run_simulate_point(p);
  }
  return "";
}

PointRow finish_point(const Grid& grid, const GridPoint& point, const std::vector<std::string>& item_texts) {
  (void)grid;
  PointRow row;
  row.point = point.index;
  row.ok = true;
  const std::string where = fmt::format("sweep {}", describe_point(point));
  if (item_texts.empty()) throw_error("{}: no result came back", where);
  if (point.kind == JobKind::kReplay) {
    ReplayResult merged;
    for (size_t i = 0; i < item_texts.size(); ++i)
      merge_replay_result(merged, parse_replay_counters(item_texts[i], fmt::format("{} shard {}", where, i)));
    row.basis = "measured (trace replay)";
    row.metrics = replay_metrics(point, merged);
  } else {
    if (item_texts.size() != 1) throw_error("{}: {} results for an unsharded point", where, item_texts.size());
    row.basis = "modelled";
    row.metrics = parse_metrics(item_texts.front(), where);
  }
  return row;
}

PointRow failed_point(const GridPoint& point, const std::string& error) {
  PointRow row;
  row.point = point.index;
  row.ok = false;
  row.error = error;
  row.basis = point.kind == JobKind::kReplay ? "measured (trace replay)" : "modelled";
  return row;
}

}  // namespace hisparse::sim::sweep
