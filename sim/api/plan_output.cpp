// @brief What a plan becomes: its files (plan.json, the plots, plan.md, plan.html) and the text `hisparse plan`
// prints (see plan_request.h).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "core/family/model_family.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"
#include "core/memory_budget.h"
#include "sim/advise/advisor.h"
#include "sim/api/plan_request.h"
#include "sim/plan/plan_table.h"
#include "sim/report/fold_line.h"
#include "sim/report/plot_script.h"

namespace hisparse::sim {

namespace {

namespace fs = std::filesystem;

}  // namespace

void write_plan_files(const PlanOutcome& outcome, const std::string& out_dir, bool with_plots) {
  const CapacityPlan& plan = outcome.plan;
  const PlanRunInfo& info = outcome.info;
  create_output_directory(out_dir);
  const fs::path dir(out_dir);
  write_file_atomically((dir / "plan.json").string(), outcome.json());
  std::vector<PlanPlot> plots = plan_plot_list();
  // A model without a sparse indexer has no HiSparse sweeps: scripts/plot_plan.py draws its full-KV panels only.
  if (!plan.hisparse_not_applicable.empty())
    plots.erase(std::remove_if(plots.begin(), plots.end(),
                               [](const PlanPlot& p) { return p.file.rfind("plan_sweep_", 0) == 0; }),
                plots.end());
  if (with_plots) {
    run_plot_script("plot_plan.py", out_dir, "plan");
    for (auto& p : plots) p.png = read_file_or_empty((dir / p.file).string());
  } else {
    // Stale plots of an earlier run must not be mistaken for this one's.
    for (const auto& p : plots) fs::remove(dir / p.file);
  }
  write_file_atomically((dir / "plan.md").string(), plan_to_markdown(plan, info, plots));
  write_file_atomically((dir / "plan.html").string(), plan_to_html(plan, info, plots));
}

std::string plan_console_text(const PlanOutcome& out, bool verbose) {
  const CapacityPlan& plan = out.plan;
  const PlanRunInfo& info = out.info;
  const Scenario& s = out.scenario;
  const DeploymentSpec& d = s.deployment;
  // The flag line first: the deployment's own settings as SGLang launch flags (the plan also sweeps others).
  std::string o = "launch SGLang, as the deployment sets it: " + deployment_sglang_flags(s) + "\n";
  const MemoryBudget& b = plan.budget;
  if (!plan.hisparse_not_applicable.empty()) {
    o += fmt::format("scenario {} ({}): {} rank{} per decode instance; {} attention; HiSparse {}\n", d.name, s.source,
               plan.layout.ranks, plan.layout.ranks == 1 ? "" : "s", b.attention, plan.hisparse_not_applicable);
    if (b.sliding_layer_count > 0)
      o += fmt::format("SGLang SWA pools per GPU: full-attention layers {} tokens (max_total_num_tokens), sliding layers {} "
                 "tokens (swa_full_tokens_ratio {})\n",
                 plan_int(static_cast<int64_t>(b.full_pool_tokens.value)),
                 plan_int(static_cast<int64_t>(b.swa_pool_tokens.value)), d.swa_full_tokens_ratio);
    else
      o += fmt::format("SGLang pool per GPU: max_total_num_tokens {} ({} B per token)\n",
                 plan_int(static_cast<int64_t>(b.full_pool_tokens.value)), b.full_cell_bytes.value);
  } else {
    o += fold_line(fmt::format("scenario {} ({}): {} rank{} per decode instance; miss model: {}", d.name, s.source,
                               plan.layout.ranks, plan.layout.ranks == 1 ? "" : "s", plan.miss_source),
                   verbose) + "\n";
    if (b.model_family().compressed_pools())
      o += fmt::format("SGLang DSV4 pools per GPU: {} = {:.2f} GB\n", dsv4_pools_line(b),
                       b.host_pool_bytes_per_gpu.value * 1e-9);
    else
      o += fmt::format("SGLang pools per GPU: full-KV max_total_num_tokens {}, HiSparse device pool {} (max_total_num_tokens), "
               "logical {}, host pool {} tokens = {:.2f} GB\n",
               plan_int(static_cast<int64_t>(b.full_pool_tokens.value)),
               plan_int(static_cast<int64_t>(b.device_pool_tokens.value)),
               plan_int(static_cast<int64_t>(b.logical_pool_tokens.value)),
               plan_int(static_cast<int64_t>(b.host_pool_tokens.value)), b.host_pool_bytes_per_gpu.value * 1e-9);
  }
  o += fold_line("cost model: " + info.calibration, verbose) + "\n";
  o += plan_table_text(out.table, plan.hisparse_not_applicable);
  if (out.plan.options.strategies.enabled) o += strategies_to_text(plan.strategies);
  for (const auto& w : plan.warnings) o += fmt::format("warning: {}\n", w);
  return o;
}

}  // namespace hisparse::sim
