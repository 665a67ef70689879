// @brief check_pools (pool_check.h): the pools of one dp rank as core/ sizes them, what the longest request needs of
// each, and the mistakes SGLang users met: a prompt over a pool (#30401), a start-up the engine version cannot make
// (PR #28752), pools that do not all fit HBM or host DRAM. The fixes named are the knobs the arithmetic reads.
#include "sim/capacity/pool_check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "core/engine_version.h"
#include "core/error.h"
#include "core/pipeline_stages.h"
#include "core/family/model_family.h"
#include "core/memory_budget.h"
#include "core/text_format.h"

namespace hisparse::sim {

namespace {

int64_t as_int(const Figure& f) { return static_cast<int64_t>(f.value); }

void add_pool(PoolCheck& c, const std::string& pool, const std::string& unit, const Figure& cap, int64_t need,
              const std::string& need_formula) {
  c.pools.push_back({pool, unit, as_int(cap), cap.formula, need, need_formula});
}

// MLA (+ DSA) and GQA: SGLang's token pools; HiSparse adds the logical, host and indexer pools.
void token_pools(PoolCheck& c, const MemoryBudget& b, int64_t n) {
  const int page = std::max(1, b.page_size);
  const int64_t paged = round_up_to_page(n, page);
  const std::string pf = fmt::format("paged(prompt + output) = paged({})", n);
  if (!c.hisparse) {
    add_pool(c, "full", "tokens", b.full_pool_tokens, paged, pf);
    if (b.sliding_layer_count > 0 && b.swa_pool_tokens.value > 0)
      add_pool(c, "SWA", "tokens", b.swa_pool_tokens, round_up_to_page(sliding_tokens_kept(b, n), page),
               "paged(min(n, window + page))");
    return;
  }
  const int64_t buf = as_int(b.device_buffer_tokens);
  add_pool(c, "device", "tokens", b.device_pool_tokens, std::min(paged, buf),
           fmt::format("min(paged n, H + page) = min({}, {})", paged, buf));
  add_pool(c, "logical", "tokens", b.logical_pool_tokens, paged, pf);
  add_pool(c, "host", "tokens", b.host_pool_tokens, paged, pf);
  if (b.sparse_indexer) add_pool(c, "indexer", "tokens", b.indexer_pool_tokens, paged, pf);
}

// DeepSeek-V4: the full (logical) pool, the sliding-window pool, the C4 device / host / indexer pools, C128.
void dsv4_pools(PoolCheck& c, const Scenario& s, const MemoryBudget& b, int64_t prompt, int64_t n) {
  const int page = std::max(1, b.page_size);
  const Dsv4RequestLimits x = n > 0 ? dsv4_request_limits(b, n, c.hisparse) : Dsv4RequestLimits{};
  const int64_t paged = round_up_to_page(n, page);
  const bool swa_cap = c.hisparse && engine_version_rules(s.deployment.engine_version).dsv4_prompt_capped_by_swa_pool;
  const Figure& full = c.hisparse ? b.logical_pool_tokens : b.full_pool_tokens;
  const Figure& swa = c.hisparse ? b.hisparse_swa_pool_tokens : b.swa_pool_tokens;
  add_pool(c, c.hisparse ? "logical" : "full", "tokens", full, paged, fmt::format("paged(prompt + output) = paged({})", n));
  add_pool(c, "SWA", "tokens", swa, swa_cap ? round_up_to_page(prompt, page) : x.swa_tokens,
           swa_cap ? fmt::format("paged(prompt) = paged({}): {} caps the prompt at this pool (#30401)", prompt,
                                 s.deployment.engine_version)
                   : std::string("paged(min(n, window + page))"));
  Figure c4idx = full;
  c4idx.value = std::floor(full.value / 4);
  c4idx.formula = fmt::format("floor(full / 4) = floor({} / 4)", as_int(full));
  if (c.hisparse) {
    add_pool(c, "C4 device", "entries", b.device_pool_tokens, x.device_slots,
             fmt::format("min(paged n / 4, H + page / 4) = {}", x.device_slots));
    add_pool(c, "C4 host", "entries", b.host_pool_tokens, x.c4_entries, fmt::format("paged n / 4 = {}", x.c4_entries));
  } else {
    add_pool(c, "C4 device", "entries", c4idx, x.c4_entries, fmt::format("paged n / 4 = {}", x.c4_entries));
  }
  add_pool(c, "C4 indexer", "entries", c4idx, x.c4_entries, fmt::format("paged n / 4 = {}", x.c4_entries));
  const Dsv4PoolBudget p = compute_dsv4_pool_budget(pipeline_stage_scenario(s));
  c.notes.push_back(fmt::format("full-token usage an empty pool reports: {:.1f} % before sglang PR #30909 ({}), {:.0f} % "
                                "after (logical_available alone); the pools above are each pool's own capacity",
                                100 * p.usage_empty_before.value, p.usage_empty_before.formula,
                                100 * p.usage_empty_after.value));
}

std::string fix_for(const PoolCapacity& p, const Scenario& s, bool hisparse) {
  const DeploymentSpec& d = s.deployment;
  if (p.pool == "SWA" && hisparse && engine_version_rules(d.engine_version).dsv4_prompt_capped_by_swa_pool) {
    return fmt::format("run an engine where #30401 is fixed (engine_version: sglang-main), or raise "
                       "swa_full_tokens_ratio above {} × {} / {} so the window pool holds the prompt",
                       d.swa_full_tokens_ratio, p.need, p.capacity);
  }
  if (p.pool == "device" || p.pool == "C4 device")
    return "lower device_buffer_size, or raise mem_fraction_static / the GPUs per rank";
  if (hisparse)
    return fmt::format("raise host_to_device_ratio (now {}) or mem_fraction_static, or cap prompts at the pool",
                       d.hisparse.host_to_device_ratio);
  return "enable HiSparse (its logical pool is host_to_device_ratio times larger), raise mem_fraction_static, or cap "
         "prompts at the pool";
}

// PR #28752: before it, the configurator budgeted the indexer once while the pool allocated it × ratio.
void startup_problems(PoolCheck& c, const Scenario& s, const MemoryBudget& b) {
  const DeploymentSpec& d = s.deployment;
  const double budget = b.kv_budget_bytes.value;
  if (budget <= 0) {
    c.problems.push_back({"HBM", fmt::format("the KV budget is {} B ({}): the weights leave no memory for KV; raise "
                                             "mem_fraction_static or spread the model over more GPUs",
                                             formula_number(budget), b.kv_budget_bytes.formula)});
    return;
  }
  const int ratio = d.hisparse.host_to_device_ratio;
  const OffloadShape offload = b.model_family().offload(s.model);
  if (c.hisparse && offload.indexer_per_logical_token && d.hisparse.host_pool_gib <= 0 && ratio > 1 &&
      !engine_version_rules(d.engine_version).indexer_budget_times_ratio) {
    const double L = b.kv_layers.value, row = b.latent_row_bytes.value, Li = b.indexer_cache_layers.value,
                 idx = b.indexer_key_bytes.value;
    const int64_t sized = pool_tokens(budget, L * row + Li * idx, b.page_size);
    const double alloc = static_cast<double>(sized) * (L * row + ratio * Li * idx);
    c.notes.push_back(fmt::format("{} sizes the HiSparse device pool at {} tokens: floor(kv_budget / (kv_layers × "
                                  "latent_row + indexer_layers × indexer_key) / page) × page, the indexer once",
                                  d.engine_version, group_digits(sized)));
    if (alloc > budget)
      c.problems.push_back(
          {"indexer", fmt::format("cannot start under {}: the pool allocates {} × ({} × {} + {} × {} × {}) = {} B "
                                  "against a KV budget of {} B (indexer buffer × host_to_device_ratio, budgeted × 1; "
                                  "sglang PR #28752); fix: an engine with PR #28752 (engine_version: sglang-main), "
                                  "--max-total-tokens {} (the pool the fixed rule sizes), or host_to_device_ratio 1",
                                  d.engine_version, sized, L, row, ratio, Li, idx, formula_number(alloc),
                                  formula_number(budget), as_int(b.device_pool_tokens))});
  }
  if (!c.hisparse) return;
  const int64_t buf = as_int(b.device_buffer_tokens), dev = as_int(b.device_pool_tokens);
  if (dev < buf)
    c.problems.push_back({offload.device_pool,
                          fmt::format("the device pool ({} {}) is smaller than one request's buffer ({}: {}); lower "
                                      "device_buffer_size or host_to_device_ratio", dev,
                                      offload.unit, buf, b.device_buffer_tokens.formula)});
  if (b.host_dram_bytes.value > 0 && b.host_dram_left_bytes.value < 0)
    c.problems.push_back({"host DRAM", fmt::format("the host pools of a decode node take {} B but host DRAM is {} B ({}); "
                                              "lower host_to_device_ratio (now {}) or give the node more DRAM",
                                              formula_number(b.host_pool_bytes_per_node.value),
                                              formula_number(b.host_dram_bytes.value), b.host_dram_left_bytes.formula,
                                              ratio)});
}

}  // namespace

PoolCheck check_pools(const Scenario& s, int64_t longest_prompt, int64_t longest_request) {
  const DeploymentSpec& d = s.deployment;
  PoolCheck c;
  const EngineVersionRules& rules = engine_version_rules(d.engine_version);
  c.engine_version = rules.name;
  c.engine_source = rules.source;
  c.longest_prompt = longest_prompt;
  c.longest_request = std::max(longest_request, longest_prompt);
  const MemoryBudget b = compute_memory_budget(s, {});
  c.hisparse = d.hisparse_enabled && b.sparse_indexer;
  if (b.model_family().compressed_pools()) dsv4_pools(c, s, b, longest_prompt, c.longest_request);
  else token_pools(c, b, c.longest_request);
  startup_problems(c, s, b);
  if (c.longest_request <= 0) return c;
  if (c.longest_request > d.context_length)
    c.problems.push_back({"context", fmt::format("the longest request ({} tokens) is over context_length ({}); raise "
                                                 "context_length or cap the workload", c.longest_request,
                                                 d.context_length)});
  for (const PoolCapacity& p : c.pools)
    if (p.need > p.capacity)
      c.problems.push_back({p.pool, fmt::format("the longest request needs {} {} of the {} pool ({}) but it holds {} "
                                                "({}); fix: {}", group_digits(p.need), p.unit, p.pool, p.need_formula,
                                                group_digits(p.capacity), p.capacity_formula, fix_for(p, s, c.hisparse))});
  return c;
}

std::string pool_check_text(const PoolCheck& c) {
  std::string out = fmt::format("engine_version {} ({})\n", c.engine_version, c.engine_source);
  out += fmt::format("mode: {}; longest request {} tokens (prompt {}){}\n", c.hisparse ? "HiSparse" : "full KV",
                     group_digits(c.longest_request), group_digits(c.longest_prompt),
                     c.longest_request > 0 ? "" : " (no workload: start-up and allocation checks only)");
  out += "pools per dp rank (modelled: SGLang's pool arithmetic, docs/capacity.md)\n";
  out += fmt::format("  {:<12} {:>14} {:<8} {:>14}  {}\n", "pool", "capacity", "unit", "longest needs", "capacity formula");
  for (const PoolCapacity& p : c.pools)
    out += fmt::format("  {:<12} {:>14} {:<8} {:>14}  {}\n", p.pool, group_digits(p.capacity), p.unit,
                       c.longest_request > 0 ? group_digits(p.need) : "-", p.capacity_formula);
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  if (c.problems.empty()) out += "check: no problem found\n";
  for (const CheckProblem& p : c.problems) out += fmt::format("PROBLEM [{}]: {}\n", p.pool, p.message);
  return out;
}

void require_no_pool_problem(const PoolCheck& c, const Scenario& s, const std::string& command) {
  // Host pools over host DRAM stay plan's warning and advise's filter (CapacityOptions::host_pools_must_fit): plan
  // reports a deployment as given, advise chooses among ratios; `hisparse check` alone stops on it.
  std::vector<const CheckProblem*> stop;
  for (const CheckProblem& p : c.problems)
    if (p.pool != "host DRAM") stop.push_back(&p);
  if (stop.empty()) return;
  std::string msg = fmt::format("{}: {}: {} pool problem(s) found before anything is simulated (hisparse check):",
                                command, s.source, stop.size());
  for (const CheckProblem* p : stop) msg += fmt::format("\n  [{}] {}", p->pool, p->message);
  throw_error("{}", msg);
}

}  // namespace hisparse::sim
