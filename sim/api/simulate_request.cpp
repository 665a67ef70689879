// @brief load_simulation and simulate (see simulate_request.h).
#include "sim/api/simulate_request.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "sim/miss/miss_surface.h"
#include "sim/network/link_model.h"
#include "traces/trace_source.h"

namespace hisparse::sim {

namespace {

std::unique_ptr<MissModel> serving_miss_model(const SimulateRequest& r, const Scenario& sc, const std::string& command) {
  const MissChoice& m = r.misses;
  const int32_t H = sc.deployment.hisparse.device_buffer_size;
  if (m.fraction && !(*m.fraction >= 0 && *m.fraction <= 1))
    throw_error("{}: --miss-fraction {} (expected in [0, 1])", command, *m.fraction);
  if (!m.trace.empty()) {
    // A trace of another top_k would describe another selection width: its misses are not this deployment's.
    const int32_t trace_k = traces::open_trace(m.trace)->meta().top_k;
    if (trace_k != sc.deployment.hisparse.top_k)
      throw_error("--miss-trace {} has top_k {} but scenario {} runs top_k {}; record a trace at top_k {} (or plan with "
                  "`hisparse plan --trace T --rescale-trace-top-k`, which applies it at the same H/K)",
                  m.trace, trace_k, sc.deployment.name, sc.deployment.hisparse.top_k, sc.deployment.hisparse.top_k);
  }
  const int32_t layers = sc.model.offload_layers();  // DeepSeek-V4: its C4 layers
  if (r.miss_model == "trace") {
    if (m.trace.empty()) throw_error("--miss-model trace needs --miss-trace PATH");
    return make_trace_miss_model(m.trace, m.policy, H, layers, sc.model.latent_row_bytes);
  }
  if (r.miss_model == "statistical") {
    StatisticalMissParams p;
    if (!m.trace.empty())
      p = fit_statistical_miss_model(m.trace, m.policy, H, layers, sc.model.latent_row_bytes);
    else if (m.fraction) p = placeholder_miss_params(sc);  // only layers, K, H matter: the fraction is given
    else p = miss_params_from_surface(sc, load_miss_surface(m.surface.empty() ? default_miss_surface(sc.deployment.hisparse.top_k) : m.surface), m.policy);
    if (m.fraction) {
      p.by_ratio = {{1.0, *m.fraction}};
      p.warmup_steps = 0;  // the given fraction holds from the first step on
      p.fitted_from = fmt::format("--miss-fraction {}", *m.fraction);
    }
    return make_statistical_miss_model(p);
  }
  if (r.miss_model == "placeholder") {
    StatisticalMissParams p = placeholder_miss_params(sc);
    if (m.fraction) p.by_ratio = {{1.0, *m.fraction}};
    return make_statistical_miss_model(p);
  }
  throw_error("--miss-model '{}' is unknown (expected statistical, trace or placeholder)", r.miss_model);
}

}  // namespace

SimulationSetup load_simulation(const SimulateRequest& r, const std::string& command) {
  SimulationSetup out;
  ScenarioSetup setup = load_scenario_setup(r.setup, command);
  Scenario& sc = setup.scenario;
  for (const std::string& w : setup.warnings) out.notes.push_back("warning: " + w);
  if (r.prefill_instances) {
    const int32_t n = *r.prefill_instances;
    if (n < 1) throw_error("--prefill-instances must be >= 1, got {}", n);
    if (!sc.deployment.pd_disaggregation)
      throw_error("--prefill-instances: {} is colocated (pd_disaggregation false): prefill runs on its decode GPUs",
                  sc.source);
    if (sc.deployment.prefill.count == 0) {
      // The deployment has no prefill section: the instances are the decode instance's shape, and the report says so.
      sc.deployment.prefill = sc.deployment.decode;
      out.notes.push_back(fmt::format("prefill: {} instance(s) shaped like the decode instance ({} GPUs, tp {}), from "
                                      "--prefill-instances",
                                      n, sc.deployment.prefill.gpus, sc.deployment.prefill.tp));
    }
    sc.deployment.prefill.count = n;
  }
  if (sc.deployment.pd_disaggregation && sc.deployment.prefill.count == 0)
    out.notes.push_back(fmt::format(
        "prefill: {} is PD-disaggregated without a prefill section: TTFT is not modelled (the KV leaves the prefill "
        "nodes at each request's arrival; TPOT counts from there); add a prefill: section or --prefill-instances",
        sc.deployment.name));
  out.admission = parse_admission_check(r.admission, "--admission");
  out.v2_coordinator = cpu_ref::parse_v2_coordinator(r.v2_coordinator, "simulate: --v2-coordinator");
  if (out.admission == AdmissionCheck::kV2) {
    const bool current = out.v2_coordinator == V2Coordinator::kCurrent;
    out.notes.push_back(fmt::format(
        "admission: v2 as {} (HiSparse mode; --v2-coordinator {})",
        current ? fmt::format("SGLang's current V2 coordinator (hisparse_v2_coordinator.py admit_request at {}: "
                              "standard when the prefix is shorter than H or host, indexer pages or the temp buffer "
                              "run out)", kV2CurrentCommit)
                : std::string("the HiCache-backing one-home-per-token ledger (hisparse_hicache_admission.py, PR "
                              "#35488: standard when the prefix is shorter than H + page)"),
        current ? "current" : "older"));
  }
  // SGLang's default: a colocated server keeps its radix cache (disable_radix_cache is false by default); a PD decode
  // server is forced to a chunk cache (sim/serving/prefix_cache.cpp cites where).
  if (r.prefix_cache == "auto") {
    out.prefix_cache = !sc.deployment.pd_disaggregation;
    out.prefix_cache_why = out.prefix_cache ? "SGLang's default on a colocated server"
                                            : "SGLang's default on a PD decode server: a chunk cache";
  } else if (r.prefix_cache == "on" || r.prefix_cache == "off") {
    out.prefix_cache = r.prefix_cache == "on";
    out.prefix_cache_why = "--prefix-cache " + r.prefix_cache;
  } else {
    throw_error("--prefix-cache '{}' is unknown (expected auto, on or off)", r.prefix_cache);
  }
  out.max_retries = r.max_retries;
  out.cost = setup.cost;
  out.cost_line = setup.cost_line;
  if (!r.link_model.empty()) {
    make_link_model(r.link_model);  // validates the name
    out.cost.link_model = r.link_model;
  }
  if (r.fixed_input_tokens > 0 && r.fixed_output_tokens > 0) {
    out.workload.name = fmt::format("fixed {} in / {} out", r.fixed_input_tokens, r.fixed_output_tokens);
    out.workload.source = command;
    out.workload.requests.push_back(RequestSpec{0, 0, r.fixed_input_tokens, r.fixed_output_tokens});
  } else {
    out.workload = load_workload(r.workload);
  }
  if (r.duration_s) {
    const double s = *r.duration_s;
    if (!(s >= 0 && s <= kMaxFlagSeconds))
      throw_error("--duration {}: expected seconds in [0, {:g}] (simulated time counts int64 nanoseconds; a longer "
                  "duration keeps the whole workload, as leaving the flag out does)",
                  s, kMaxFlagSeconds);
    truncate_workload(out.workload, static_cast<SimTime>(std::llround(s * 1e9)));
  }
  if (out.workload.requests.empty())
    throw_error("workload {}: no request arrives within --duration {} s", out.workload.name, r.duration_s.value_or(0));
  out.miss = serving_miss_model(r, sc, command);
  out.scenario = std::move(sc);
  return out;
}

ServingResult simulate(const SimulationSetup& setup, KvMode mode, OverlapMode overlap, const ClientSpec& clients,
                       bool record_steps, ChromeTrace* timeline, const std::function<void(int64_t)>& on_request_done) {
  ServingOptions opt;
  opt.mode = mode;
  opt.cost = setup.cost;
  opt.cost.overlap = overlap;
  opt.miss_model = setup.miss.get();
  opt.admission = setup.admission;
  opt.v2_coordinator = setup.v2_coordinator;
  opt.max_retries = setup.max_retries;
  opt.clients = clients;
  opt.prefix_cache = setup.prefix_cache;
  opt.record_steps = record_steps;
  opt.on_request_done = on_request_done;
  return run_serving(setup.scenario, setup.workload, opt, timeline);
}

int64_t requests_sent(const SimulationSetup& setup, const ClientSpec& clients) {
  if (clients.concurrency > 0 && clients.requests > 0) return clients.requests;
  return static_cast<int64_t>(setup.workload.requests.size());
}

}  // namespace hisparse::sim
