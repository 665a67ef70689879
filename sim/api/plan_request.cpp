// @brief run_plan (see plan_request.h).
#include "sim/api/plan_request.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"
#include "core/not_found_error.h"
#include "core/io/read_file.h"
#include "core/memory_budget.h"
#include "sim/api/check_request.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

namespace {

namespace fs = std::filesystem;

int64_t quantile(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}


/// Reads the select file the recall column comes from (the flags' own ranges are the CLI's to check).
void read_recall(StrategyOptions& st, const std::string& command) {
  if (st.recall_file.empty()) return;
  if (!fs::is_regular_file(st.recall_file)) throw_not_found("{}: --recall-from {}: no such file", command, st.recall_file);
  st.recall_json = read_file_or_empty(st.recall_file);
  if (st.recall_json.empty()) throw_error("{}: --recall-from {}: empty or unreadable", command, st.recall_file);
}

}  // namespace

PlanOutcome run_plan(const PlanRequest& r) {
  PlanOutcome out;
  ScenarioSetup setup = load_scenario_setup(r.setup, r.command);
  Scenario& s = setup.scenario;
  const DeploymentSpec& d = s.deployment;
  require_pools_fit(s, r.workload, r.command);  // `hisparse check` first: nothing is planned on pools that fail
  PlanOptions opt;
  opt.cost = setup.cost;
  opt.host_reserve_bytes = setup.host_reserve_bytes;
  if (r.batch_cap) opt.batch_cap = *r.batch_cap;
  opt.memory_only = r.memory_only;
  opt.strategies = r.strategies;
  read_recall(opt.strategies, r.command);
  for (int32_t h : r.sweep_buffer_sizes)
    if (h < 1) throw_error("{}: --sweep-buffer-sizes: {} (expected >= 1)", r.command, h);
  for (int32_t x : r.sweep_ratios)
    if (x < 1) throw_error("{}: --sweep-ratios: {} (expected >= 1)", r.command, x);
  opt.sweep_buffer_sizes = r.sweep_buffer_sizes;
  opt.sweep_ratios = r.sweep_ratios;
  std::sort(opt.sweep_buffer_sizes.begin(), opt.sweep_buffer_sizes.end());
  std::sort(opt.sweep_ratios.begin(), opt.sweep_ratios.end());
  if (r.single_setting) {
    opt.sweep_buffer_sizes = {d.hisparse.device_buffer_size};
    opt.sweep_ratios = {d.hisparse.host_to_device_ratio};
  }
  out.info.command_line = r.command_line;
  out.info.calibration = setup.cost_line;
  for (int64_t n : r.seq_lens)
    if (n < 1) throw_error("{}: --seq-lens: {} (expected >= 1)", r.command, n);
  if (!r.seq_lens.empty()) opt.seq_lens = r.seq_lens;
  if (!r.workload.empty()) {
    const Workload w = load_workload(r.workload);
    if (w.requests.empty()) throw_error("{}: workload {} holds no request", r.command, r.workload);
    std::vector<int64_t> total, in, outl;
    for (const auto& q : w.requests) {
      in.push_back(q.input_tokens);
      outl.push_back(q.output_tokens);
      total.push_back(int64_t{q.input_tokens} + q.output_tokens);
    }
    const int64_t p50 = quantile(total, 0.5), p90 = quantile(total, 0.9), p99 = quantile(total, 0.99),
                  mx = quantile(total, 1.0);
    out.info.workload = fmt::format("{} ({}): {} requests; input p50 {} / p99 {}; output p50 {} / p99 {}; input + "
                                    "output p50 {} / p90 {} / p99 {} / max {}",
                                    w.name, w.source, w.requests.size(), quantile(in, 0.5), quantile(in, 0.99),
                                    quantile(outl, 0.5), quantile(outl, 0.99), p50, p90, p99, mx);
    if (r.seq_lens.empty()) {
      opt.seq_lens.clear();
      for (int64_t v : {p50, p90, p99, mx}) {
        const int64_t paged = round_up_to_page(std::max<int64_t>(v, 1), d.page_size);
        if (std::find(opt.seq_lens.begin(), opt.seq_lens.end(), paged) == opt.seq_lens.end())
          opt.seq_lens.push_back(paged);
      }
      out.info.workload += " → planned at p50, p90, p99, max (rounded up to pages)";
    }
  }
  if (!s.model.has_sparse_indexer() && !r.misses.trace.empty())
    throw_error("{}: --trace {}: model {} has no sparse indexer, so no top-k trace drives its cache (HiSparse is not "
                "applicable)", r.command, r.misses.trace, s.model.name);
  const auto t0 = std::chrono::steady_clock::now();
  // The surface varies with H/K and n/H, so the buffer sweep differs per H even without a trace.
  std::vector<int32_t> hs = opt.sweep_buffer_sizes.empty() ? default_buffer_sweep(s) : opt.sweep_buffer_sizes;
  hs.push_back(d.hisparse.device_buffer_size);
  std::sort(hs.begin(), hs.end());
  hs.erase(std::unique(hs.begin(), hs.end()), hs.end());
  const LoadedMisses misses = load_miss_curves(r.misses, s, hs, r.command);
  out.plan = compute_capacity_plan(s, opt, *misses.curves);
  out.plan.warnings.insert(out.plan.warnings.begin(), setup.warnings.begin(), setup.warnings.end());
  out.table = plan_table(out.plan);
  out.info.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.scenario = std::move(s);
  return out;
}

}  // namespace hisparse::sim
