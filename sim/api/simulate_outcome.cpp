// @brief prepare_simulate, check_simulate_work and run_simulate_runs (see simulate_outcome.h).
#include "sim/api/simulate_outcome.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/work_estimate.h"
#include "sim/serving/run_estimate.h"
#include "sim/serving/steady_window.h"

namespace hisparse::sim {

namespace {

SimTime seconds_flag(double s, const char* name) {
  if (!(s >= 0 && s <= kMaxFlagSeconds))
    throw_error("--{} {}: expected seconds in [0, {:g}] (simulated time counts int64 nanoseconds)", name, s,
                kMaxFlagSeconds);
  return static_cast<SimTime>(std::llround(s * 1e9));
}

std::vector<KvMode> parse_modes(const std::string& mode) {
  std::vector<KvMode> modes;
  if (mode == "full" || mode == "both" || mode == "all") modes.push_back(KvMode::kFull);
  if (mode == "hisparse" || mode == "both" || mode == "all") modes.push_back(KvMode::kHiSparse);
  if (mode == "dynamic" || mode == "all") modes.push_back(KvMode::kDynamic);
  if (modes.empty()) throw_error("--mode '{}' is unknown (expected full, hisparse, dynamic, both or all)", mode);
  return modes;
}

/// The closed-loop clients of one level: the request count given, else 4 per client and at least 64.
ClientSpec clients_for(const SimulateRequest& r, int32_t level, SimTime think) {
  ClientSpec c;
  c.concurrency = level;
  c.think_time = think;
  c.requests = r.num_requests > 0 ? r.num_requests : std::max<int64_t>(64, 4 * static_cast<int64_t>(level));
  return c;
}

/// Checks the closed-loop fields of the request (the flags' names in the errors).
void check_clients(const SimulateRequest& r) {
  for (size_t i = 0; i < r.concurrency.size(); ++i)
    if (r.concurrency[i] < 1 || (i > 0 && r.concurrency[i] <= r.concurrency[i - 1]))
      throw_error("--concurrency: level {} at position {} (expected ascending levels, each >= 1)", r.concurrency[i],
                  i + 1);
  if ((r.think_time_s != 0 || r.num_requests != 0) && r.concurrency.empty())
    throw_error("--think-time and --num-requests apply to closed-loop clients: give --concurrency");
  if (r.num_requests != 0) check_num_requests(r.num_requests);
}

}  // namespace

SweepPoint sweep_point(const SimulateRun& run) {
  const ServingSummary& s = run.summary;
  const ServingResult& r = run.result;
  SweepPoint p;
  p.concurrency = run.clients.concurrency;
  p.mode = run.mode;
  p.tokens_per_s = s.tokens_per_s;
  p.tpot_p50_ms = s.tpot_ms.p50;
  p.tpot_p99_ms = s.tpot_ms.p99;
  p.wait_p50_ms = s.wait_ms.p50;
  p.wait_p99_ms = s.wait_ms.p99;
  if (ttft_modelled(r)) {
    p.ttft_p50_ms = s.ttft_ms.p50;
    p.ttft_p99_ms = s.ttft_ms.p99;
  }
  p.batch_per_rank = s.batch_per_gpu.mean;
  p.steady_tokens_per_s = run.steady_tokens_per_s;
  p.finished = r.finished;
  p.rejected = r.rejected;
  p.host_alloc_failures = r.aborts;
  return p;
}

void check_num_requests(int64_t n) {
  // Each request sent keeps its outcome record (requests_*.csv) in memory: 10^8 of them are already gigabytes.
  constexpr int64_t kMaxRequests = 100'000'000;
  if (n < 1 || n > kMaxRequests)
    throw_error("--num-requests {}: expected an integer in [1, {}] (each request keeps a {}-byte outcome record in "
                "memory until the run's CSV is written)",
                n, kMaxRequests, sizeof(RequestOutcome));
}

int64_t SimulateOutcome::requests_total() const {
  int64_t n = 0;
  for (const SimulateRun& r : runs) n += requests_sent(setup, r.clients);
  return n;
}

SimulateOutcome prepare_simulate(const SimulateRequest& request, const std::string& command) {
  SimulateOutcome out;
  out.modes = parse_modes(request.mode);
  check_clients(request);
  const SimTime think = seconds_flag(request.think_time_s, "think-time");
  out.setup = load_simulation(request, command);
  out.levels = request.concurrency;
  out.overlaps = {out.setup.cost.overlap};
  if (request.both_overlaps) out.overlaps = {OverlapMode::kNone, OverlapMode::kTwoBatch};
  const double span_s = ns_to_seconds(out.setup.workload.requests.back().arrival);
  out.timeline_begin = seconds_flag(request.timeline_start_s.value_or(std::min(60.0, span_s / 2)), "timeline-start");
  out.timeline_end = out.timeline_begin + seconds_flag(request.timeline_length_s, "timeline-length");
  auto add = [&](KvMode m, OverlapMode ov, const ClientSpec& c) {
    SimulateRun run;
    run.mode = m;
    run.overlap = ov;
    run.clients = c;
    run.tag = fmt::format("{}_{}", to_string(m), to_string(ov));
    out.runs.push_back(std::move(run));
  };
  if (out.is_sweep()) {
    for (int32_t level : out.levels)
      for (KvMode m : out.modes) add(m, out.overlaps.front(), clients_for(request, level, think));
  } else {
    const ClientSpec c = out.levels.empty() ? ClientSpec{} : clients_for(request, out.levels.front(), think);
    for (KvMode m : out.modes)
      for (OverlapMode ov : out.overlaps) add(m, ov, c);
  }
  return out;
}

void check_simulate_work(const SimulateOutcome& outcome, bool force) {
  double requests = 0, tokens = 0, seconds = 0;
  for (const SimulateRun& run : outcome.runs) {
    const ServingWork w = estimate_serving_work(outcome.setup.workload, run.mode, run.clients);
    requests += static_cast<double>(w.requests);
    tokens += w.decode_tokens;
    seconds += w.seconds;
  }
  check_work_estimate({"simulate",
                       fmt::format("{} requests decoding {} tokens over {} run(s)", format_work_count(requests),
                                   format_work_count(tokens), outcome.runs.size()),
                       seconds, serving_work_basis(), ""},
                      force);
}

void run_simulate_runs(SimulateOutcome& outcome, const SimulateHooks& hooks) {
  const Scenario& sc = outcome.setup.scenario;
  int64_t earlier_runs = 0;
  for (SimulateRun& run : outcome.runs) {
    // A sweep's runs keep no timeline (as the CLI always did): their figures are the table's.
    if (!outcome.is_sweep()) run.timeline = ChromeTrace(outcome.timeline_begin, outcome.timeline_end);
    const auto t0 = std::chrono::steady_clock::now();
    run.result = simulate(outcome.setup, run.mode, run.overlap, run.clients, /*record_steps=*/true,
                          outcome.is_sweep() ? nullptr : &run.timeline, [&](int64_t done) {
                            if (hooks.on_progress) hooks.on_progress(earlier_runs + done);
                          });
    run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    earlier_runs += requests_sent(outcome.setup, run.clients);
    run.summary = summarize(run.result, sc);
    run.summary_json = summary_json(run.result, sc);
    run.steady_tokens_per_s = steady_window(run.result).tokens_per_s;
    run.done = true;
    if (outcome.is_sweep()) {
      if (!outcome.sweep) {
        SweepTable t;
        t.scenario = sc.deployment.name;
        t.workload = outcome.setup.workload.name;
        t.overlap = to_string(outcome.overlaps.front());
        t.think_time = run.clients.think_time;
        t.tpot_slo_ms = sc.deployment.tpot_slo_ms;
        outcome.sweep = std::move(t);
      }
      outcome.sweep->points.push_back(sweep_point(run));
    }
    if (hooks.on_run) hooks.on_run(outcome, run);
    if (!hooks.keep_results) {
      run.result = ServingResult{};
      run.timeline = ChromeTrace{};
    }
  }
  if (outcome.sweep) outcome.sweep->crossover = find_crossover(outcome.sweep->points, outcome.sweep->tpot_slo_ms);
}

SimulateOutcome run_simulate(const SimulateRequest& request, const SimulateHooks& hooks, const std::string& command) {
  SimulateOutcome out = prepare_simulate(request, command);
  if (request.check_work) check_simulate_work(out, request.force);
  run_simulate_runs(out, hooks);
  return out;
}

}  // namespace hisparse::sim
