// @brief What a simulate outcome prints and writes: the header, each run's lines, the sweep's table, report.json and
// the per-run files (see simulate_outcome.h).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/advise/advisor.h"
#include "sim/api/simulate_outcome.h"
#include "sim/cost/step/speculative.h"
#include "sim/report/fold_line.h"
#include "sim/report/plot_script.h"
#include "sim/serving/ranks.h"

namespace hisparse::sim {

namespace {

std::string ranks_line(const Scenario& sc) {
  const ServingRanks rk = serving_ranks(sc);
  return fmt::format("ranks: {} per decode instance × {} GPU(s) each (attention {}), collectives on {}; prefill {}\n",
                     rk.layout.ranks, rk.gpus_per_rank, rk.gpus_per_rank > 1 ? "TP, all-reduce per layer" : "DP",
                     rk.collective_link,
                     !sc.deployment.pd_disaggregation ? "colocated (chunked, on the decode GPUs, staging backup)"
                     : sc.deployment.prefill.count > 0
                         ? fmt::format("on {} prefill instance(s), KV by RDMA", sc.deployment.prefill.count)
                         : std::string("outside the scenario (TTFT not modelled)"));
}

/// Under pipeline parallelism, how a step is made of stages (docs/cost_model.md "Pipeline parallelism"); "" without.
std::string pipeline_line(const Scenario& sc) {
  if (sc.deployment.decode.pp <= 1) return "";
  return fmt::format("pipeline: pp {} stages of {} GPUs (each step is one stage's on the largest micro-batch, the "
                     "cycle adds the other stages and the stage-to-stage hops: docs/cost_model.md \"Pipeline "
                     "parallelism\"); a stage's collectives run inside it, the hops on {}\n",
                     sc.deployment.decode.pp, sc.deployment.decode.gpus / sc.deployment.decode.pp,
                     serving_ranks(sc).collective_link);
}

/// One single-level run's first line: its counts and figures (modelled) and its wall time (measured).
std::string run_line(const SimulateRun& run) {
  const ServingResult& r = run.result;
  const ServingSummary& s = run.summary;
  const std::string ttft = ttft_modelled(r) ? fmt::format("TTFT p50 {:.1f} ms p99 {:.1f} ms", s.ttft_ms.p50, s.ttft_ms.p99)
                                            : std::string("TTFT not modelled");
  std::string o = fmt::format(
      "{:<20} requests {}/{} (rejected {}, host-pool aborts {})  {}  TPOT p50 {:.2f} ms p99 {:.2f} ms  "
      "wait p50 {:.1f} ms p99 {:.1f} ms  "
      "{:.1f} tok/s/GPU  batch/rank mean {:.1f}  hit {:.4f}  PCIe h2d {:.1f}%  IO stall {:.1f}%  "
      "({} events, {:.2f} s wall; modelled)\n",
      run.tag, r.finished, r.arrivals, r.rejected, r.aborts, ttft, s.tpot_ms.p50, s.tpot_ms.p99, s.wait_ms.p50,
      s.wait_ms.p99, s.tokens_per_s_per_gpu, s.batch_per_gpu.mean, s.hit_rate, 100 * s.pcie_h2d_util,
      100 * s.io_stall_fraction, r.events, run.wall_s);
  if (!r.first_abort.empty()) o += fmt::format("  first host-pool failure: {}\n", r.first_abort);
  if (r.v2_coordinator == "current") {
    const auto& a = r.v2_admissions;
    o += fmt::format("  v2 admissions (current coordinator, modelled): {} as V2; standard: {} no whole page, {} prefix "
                     "shorter than H, {} host capacity, {} indexer pages, {} temp buffer\n",
                     a[0], a[1], a[2], a[3], a[4], a[5]);
    if (r.v2_partial_eviction)
      o += fmt::format("  v2 prefix eviction (modelled, leaf first in whole radix nodes, sim/serving/v2_prefix_eviction.h): "
                       "{} evictions, {} prefix tokens evicted, mean evicted share {:.3f} of a V2 prefix at release\n",
                       r.v2_evictions, r.v2_evicted_tokens, r.v2_evicted_share_mean);
  }
  if (r.prefix_cache)
    o += fmt::format("  prefix cache (modelled, sim/serving/prefix/): hit {:.1f} % of input tokens ({} of {}), prefill "
                     "tokens saved {}; TTFT mean {:.1f} ms p50 {:.1f} ms p99 {:.1f} ms; {} pool held by the cache per "
                     "rank: peak {:.2f} GB, mean {:.2f} GB ({} pages inserted, {} evicted)\n",
                     100 * prefix_hit_rate(r), r.prefix_hit_tokens, r.prefix_input_tokens, r.prefix_hit_tokens,
                     s.ttft_ms.mean, s.ttft_ms.p50, s.ttft_ms.p99, r.prefix_cache_pool,
                     static_cast<double>(r.prefix_peak_tokens_per_rank) * r.prefix_bytes_per_token * 1e-9,
                     r.prefix_mean_tokens_per_rank * r.prefix_bytes_per_token * 1e-9, r.prefix_inserted_pages,
                     r.prefix_evicted_pages);
  if (r.sessions > 0 && run.clients.concurrency > 0)
    o += fmt::format("  sessions: {} multi-turn sessions run by the {} closed-loop clients, one at a time per client, "
                     "each turn sent its think time after the previous turn ended\n",
                     r.sessions, run.clients.concurrency);
  else if (r.sessions > 0)
    o += fmt::format("  sessions: {} multi-turn sessions, {} turns held until the previous turn's end + think time\n",
                     r.sessions, r.held_turns);
  if (r.retraction != "none")
    o += fmt::format("  {} (modelled, sim/serving/retraction.cpp): {} retractions, {} prompt + decoded tokens dropped, {} "
                     "recomputed in {:.3f} GPU-s of prefill\n",
                     r.retraction, r.retractions, r.retracted_tokens, r.recomputed_tokens, ns_to_seconds(r.recompute_ns));
  return o;
}

/// HiSparse's transfers, IndexShare's and MTP's step make-up, and MTP's accepted tokens, where they apply.
std::string run_detail_lines(const Scenario& sc, const SimulateRun& run) {
  const ServingResult& r = run.result;
  std::string o;
  if (run.mode != KvMode::kFull) {
    // The copy calls follow the host layout (sim/cost/terms/transfer_granularity.h): the kernel layouts load each
    // layer's misses in one call and offload a prompt in one all-layer call; page_first_direct copies page by page.
    const bool direct = copies_per_page(sc.deployment.host_layout);
    o += fmt::format("  transfers (modelled, sim/cost/terms/transfer_granularity.h): decode loads {}, {} {} over {} busy "
                     "rank-steps (pcie.latency_ns {} each, or as a swap-in calibration measured the call); prefill → host "
                     "pool: {} {} ({}), host path {}\n",
                     direct ? "each missed row of each layer in its own copy (host_layout page_first_direct)"
                            : "each layer's misses in its own copy",
                     r.miss_transfers, direct ? "row loads" : "per-layer loads", r.gpu_steps_busy,
                     sc.hardware.pcie.latency_ns, r.staging_copies,
                     direct ? "copies of a page of one layer each" : "batched all-layer copies",
                     sc.deployment.pd_disaggregation ? "PD: the prefill instances write the host pool by RDMA instead"
                     : direct                        ? "colocated staging, one per page per layer of each request"
                                                     : "colocated staging, one per request",
                     sc.deployment.host_pool_remote_numa ? "cross-NUMA (numa.cross_node_factor applies)" : "NUMA-local");
  }
  const ModelSpec& model = sc.model;
  if (model.topk_anchor_layers() < model.layers || sc.deployment.mtp_draft_tokens > 0) {
    // IndexShare and MTP change the step's make-up: its terms, mean per busy GPU-step (modelled).
    const StepCost& c = run.summary.mean_step;
    o += fmt::format("  step (mean per GPU-step, ms; modelled): indexer {:.3f} + topk {:.3f} ({} of {} layers select) + "
                     "swap_in {:.3f} + h2d {:.3f} + attention {:.3f} + moe {:.3f} + draft {:.3f} + stall {:.3f} + sync "
                     "{:.3f}; prefetch_hidden {:.3f} (the shared layers' copy under compute)\n",
                     c.indexer * 1e-6, c.topk * 1e-6, model.topk_anchor_layers(), model.layers, c.swap_in * 1e-6,
                     c.h2d * 1e-6, c.attention * 1e-6, c.moe * 1e-6, c.draft * 1e-6, c.stall * 1e-6, c.sync * 1e-6,
                     c.prefetch_hidden * 1e-6);
  }
  if (sc.deployment.mtp_draft_tokens > 0)
    o += fmt::format("  MTP: {} draft tokens at acceptance {:g}: {:.3f} accepted tokens per request-step in the run "
                     "(expected 1 + a + ... + a^d = {:.3f}; requests' last steps take only what they have left)\n",
                     sc.deployment.mtp_draft_tokens, sc.deployment.mtp_acceptance, tokens_per_request_step(r),
                     mtp_accepted_tokens(sc.deployment.mtp_draft_tokens, sc.deployment.mtp_acceptance));
  return o;
}

}  // namespace

std::string simulate_header_text(const SimulateOutcome& outcome, bool verbose) {
  const SimulationSetup& setup = outcome.setup;
  const Scenario& sc = setup.scenario;
  // The flag line first: the settings of the modes run as SGLang launch flags. HiSparse's flags follow the modes, not
  // the deployment's own switch: a full-KV deployment run with --mode hisparse was simulated with HiSparse on.
  const auto ran = [&outcome](bool host_pool) {
    return std::any_of(outcome.modes.begin(), outcome.modes.end(),
                       [host_pool](KvMode m) { return uses_host_pool(m) == host_pool; });
  };
  Scenario as_run = sc;
  as_run.deployment.hisparse_enabled = ran(true);
  const std::string flags = deployment_sglang_flags(as_run);
  const bool both = flags.rfind("--enable-hisparse", 0) == 0 && ran(false);
  std::string o = fmt::format("launch SGLang, as simulated: {}{}\n", flags,
                              both ? " (the full-KV runs without --enable-hisparse and --hisparse-config)" : "");
  for (const auto& note : setup.notes) o += fold_line(note, verbose) + "\n";
  o += ranks_line(sc);
  o += pipeline_line(sc);
  o += fold_line("cost model: " + setup.cost_line, verbose) + "\n";
  return o;
}

std::string simulate_run_text(const SimulateOutcome& outcome, const SimulateRun& run) {
  if (outcome.is_sweep())
    return fmt::format("  level {:>5} {:<8} {} requests, {:.0f} tok/s, TPOT p50 {:.2f} ms\n", run.clients.concurrency,
                       to_string(run.mode), run.result.finished, run.summary.tokens_per_s, run.summary.tpot_ms.p50);
  return run_line(run) + run_detail_lines(outcome.setup.scenario, run);
}

std::string simulate_footer_text(const SimulateOutcome& outcome) {
  return outcome.sweep ? sweep_text(*outcome.sweep) : std::string();
}

std::string simulate_console_text(const SimulateOutcome& outcome, bool verbose) {
  std::string o = simulate_header_text(outcome, verbose);
  for (const SimulateRun& run : outcome.runs)
    if (run.done) o += simulate_run_text(outcome, run);
  return o + simulate_footer_text(outcome);
}

std::string simulate_wrote_text(const SimulateOutcome& outcome, const std::string& out_dir, bool plots) {
  if (outcome.is_sweep()) return fmt::format("wrote {}/sweep.json, sweep.csv{}\n", out_dir, plots ? ", sweep.png" : "");
  return fmt::format("wrote {}/report.json and per-run summary_*.json, requests_*.csv, steps_*.csv, timeline_*.json\n",
                     out_dir);
}

void write_simulate_run_files(const SimulateRun& run, const std::string& out_dir) {
  write_file_atomically(out_dir + "/summary_" + run.tag + ".json", run.summary_json + "\n");
  write_file_atomically(out_dir + "/requests_" + run.tag + ".csv", requests_csv(run.result));
  write_file_atomically(out_dir + "/steps_" + run.tag + ".csv", steps_csv(run.result));
  if (run.timeline.enabled()) run.timeline.write(out_dir + "/timeline_" + run.tag + ".json");
}

std::string simulate_report_json(const SimulateOutcome& outcome) {
  const Workload& w = outcome.setup.workload;
  // Top-level members unindented, each run's summary as summary_json wrote it (the bytes report.json always had).
  JsonWriter j(/*indent=*/0);
  j.begin_object()
      .member("scenario", outcome.setup.scenario.deployment.name)
      .member("workload", w.name)
      .member("workload_source", w.source)
      .member("requests", static_cast<uint64_t>(w.requests.size()));
  j.key("runs").begin_array();
  for (const SimulateRun& run : outcome.runs)
    if (run.done) j.raw(run.summary_json);
  j.end_array().end_object();
  return j.str() + "\n";
}

void write_simulate_files(const SimulateOutcome& outcome, const std::string& out_dir, bool plots, bool runs_written) {
  create_output_directory(out_dir);
  if (outcome.sweep) {
    write_file_atomically(out_dir + "/sweep.json", sweep_json(*outcome.sweep));
    write_file_atomically(out_dir + "/sweep.csv", sweep_csv(*outcome.sweep));
    if (plots) run_plot_script("plot_sweep.py", out_dir, "simulate");
    return;
  }
  if (!runs_written)
    for (const SimulateRun& run : outcome.runs)
      if (run.done) write_simulate_run_files(run, out_dir);
  write_file_atomically(out_dir + "/report.json", simulate_report_json(outcome));
}

}  // namespace hisparse::sim
