// @brief `advise --layouts`: TP / DP attention + EP, colocated / PD, HiSparse off / on (see layout_comparison.h).
#include "sim/advise/layout_comparison.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

std::vector<LayoutWorkload> default_layout_workloads() {
  return {{"short prompts (1,024 in / 512 out)", 1024, 512}, {"long prompts (65,536 in / 1,024 out)", 65536, 1024}};
}

namespace {

InstanceSpec instance(int gpus, bool dp) {
  InstanceSpec i;
  i.count = 1;
  i.gpus = gpus;
  i.tp = gpus;
  i.dp_attention = dp ? gpus : 1;
  i.ep = gpus;  // experts split over the instance's GPUs (DeepEP under DP attention; TP-sharded otherwise)
  i.pp = 1;
  return i;
}

LayoutRow make_row(const Scenario& s, int G, bool dp, bool pd, bool hisparse) {
  LayoutRow r;
  const int D = pd ? G / 2 : G;
  r.pd = pd;
  r.hisparse = hisparse;
  r.gpus = G;
  r.prefill_gpus = pd ? G - D : G;
  r.layout = fmt::format("{}{}", dp ? fmt::format("DP{0} attention + EP{0} (DeepEP)", D) : fmt::format("TP{}", D),
                         pd ? fmt::format(", PD: {} decode + {} prefill GPUs", D, G - D) : std::string(" colocated"));
  r.scenario = s;
  DeploymentSpec& d = r.scenario.deployment;
  d.decode = instance(D, dp);
  d.pd_disaggregation = pd;
  d.prefill = instance(r.prefill_gpus, false);
  d.prefill.count = 0;  // priced here, not simulated
  d.deepep_mode = "auto";
  d.hisparse_enabled = hisparse;
  d.max_running_requests = 0;
  if (pd && G < 2) r.not_applicable = fmt::format("PD needs at least 2 GPUs (got {})", G);
  if (hisparse && !s.model.has_sparse_indexer())
    r.not_applicable = fmt::format("HiSparse: {} has no sparse indexer", s.model.name);
  if (s.deployment.decode.pp > 1) r.not_applicable = "the deployment is pipelined; layouts compare pp 1 only";
  return r;
}

}  // namespace

namespace {

/// The user's GPUs: every decode instance's, and the prefill instances' of a PD deployment that models them.
int deployment_gpus(const Scenario& s) {
  const DeploymentSpec& d = s.deployment;
  return d.decode.count * d.decode.gpus + (d.pd_disaggregation ? d.prefill.count * d.prefill.gpus : 0);
}

}  // namespace

std::vector<LayoutRow> layout_rows(const Scenario& s) {
  const int G = deployment_gpus(s);
  std::vector<LayoutRow> rows;
  for (bool pd : {false, true})
    for (bool dp : {false, true})
      for (bool hs : {false, true}) rows.push_back(make_row(s, G, dp, pd, hs));
  return rows;
}

namespace {

void evaluate_row(LayoutRow& r, const LayoutWorkload& w, const MissCurves& misses, const AdviseOptions& o) {
  const DeploymentSpec& d = r.scenario.deployment;
  const ContextMix mix = ContextMix::single(w.input_tokens + w.output_tokens / 2);
  r.decode = evaluate_candidate(r.scenario, mix, misses, r.hisparse ? KvMode::kHiSparse : KvMode::kFull,
                                r.hisparse ? d.hisparse.device_buffer_size : 0,
                                r.hisparse ? d.hisparse.host_to_device_ratio : 0, o);
  // Prefill on the prefill GPUs (colocated: the decode instance's own), one request at a time.
  Scenario ps = r.scenario;
  ps.deployment.prefill.count = 1;
  const DecodeCostModel prefill(ps, o.cost, false);
  r.prefill_s = ns_to_seconds(prefill.prefill_time(w.input_tokens));
  const double D = r.decode.goodput;
  r.decode_s = D > 0 ? static_cast<double>(w.output_tokens) / D : 0;
  if (D <= 0 || !(r.prefill_s > 0)) {
    r.binding = D <= 0 ? fmt::format("decode ({}: no request fits{})", r.decode.binding_limit,
                                     r.decode.binding_limit == "hbm" ? ", the weights leave no KV" : "")
                       : "prefill";
    return;
  }
  const std::string decode_binds = fmt::format("decode ({})", r.decode.binding_limit);
  if (r.pd) {
    const double rp = 1.0 / r.prefill_s, rd = D / static_cast<double>(w.output_tokens);
    r.requests_per_s = std::min(rp, rd);
    r.binding = rp < rd ? "prefill" : decode_binds;
  } else {
    r.requests_per_s = 1.0 / (r.prefill_s + r.decode_s);
    r.binding = r.prefill_s > r.decode_s ? "prefill" : decode_binds;
  }
  r.tokens_per_s_per_gpu = r.requests_per_s * static_cast<double>(w.output_tokens) / r.gpus;
}

}  // namespace

LayoutComparison compare_layouts(const Scenario& s, const LayoutWorkload& w, const MissCurves& misses,
                                 const AdviseOptions& o) {
  if (w.input_tokens <= 0 || w.output_tokens <= 0)
    throw_error("advise --layouts: workload {}: {} in / {} out, expected both > 0", w.label, w.input_tokens,
                w.output_tokens);
  LayoutComparison c;
  c.workload = w;
  c.rows = layout_rows(s);
  for (size_t i = 0; i < c.rows.size(); ++i) {
    LayoutRow& r = c.rows[i];
    if (!r.not_applicable.empty()) continue;
    evaluate_row(r, w, misses, o);
    const auto better = [&](int k) {
      return k < 0 || r.tokens_per_s_per_gpu > c.rows[static_cast<size_t>(k)].tokens_per_s_per_gpu * (1 + 1e-9);
    };
    if (better(c.winner)) {
      c.runner_up = c.winner;
      c.winner = static_cast<int>(i);
    } else if (better(c.runner_up)) {
      c.runner_up = static_cast<int>(i);
    }
  }
  if (c.winner < 0 || c.rows[static_cast<size_t>(c.winner)].tokens_per_s_per_gpu <= 0) {
    c.why = "no layout serves this workload within the TPOT SLO and memory";
    return c;
  }
  const LayoutRow& win = c.rows[static_cast<size_t>(c.winner)];
  c.why = fmt::format("{} with HiSparse {} wins: {:.1f} output tok/s per GPU, {} binds (prefill {:.3f} s, decode "
                      "{:.3f} s of instance time per request; batch {} per rank at TPOT {:.1f} ms)",
                      win.layout, win.hisparse ? "on" : "off", win.tokens_per_s_per_gpu, win.binding, win.prefill_s,
                      win.decode_s, win.decode.per_rank, win.decode.tpot_ms);
  if (c.runner_up >= 0) {
    const LayoutRow& ru = c.rows[static_cast<size_t>(c.runner_up)];
    c.why += fmt::format("; runner-up {} with HiSparse {} at {:.1f} ({:+.0f} %), where {} binds", ru.layout,
                         ru.hisparse ? "on" : "off", ru.tokens_per_s_per_gpu,
                         ru.tokens_per_s_per_gpu > 0 ? (win.tokens_per_s_per_gpu / ru.tokens_per_s_per_gpu - 1) * 100
                                                     : 0.0,
                         ru.binding);
  }
  return c;
}

namespace {

/// Row `i` of comparison `c` as printed: the text and Python's rows both read it.
LayoutTableRow table_row(const LayoutComparison& c, size_t i) {
  const LayoutRow& r = c.rows[i];
  LayoutTableRow t;
  t.workload = c.workload.label;
  t.input_tokens = c.workload.input_tokens;
  t.output_tokens = c.workload.output_tokens;
  t.layout = r.layout;
  t.hisparse = r.hisparse;
  t.applicable = r.not_applicable.empty();
  t.not_applicable = r.not_applicable;
  t.gpus = r.gpus;
  t.prefill_gpus = r.prefill_gpus;
  t.pd = r.pd;
  if (t.applicable) {
    t.batch_per_rank = r.decode.per_rank;
    t.tpot_ms = r.decode.tpot_ms;
    t.prefill_s = r.prefill_s;
    t.requests_per_s = r.requests_per_s;
    t.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
    t.binding = r.binding;
  }
  t.winner = static_cast<int>(i) == c.winner;
  return t;
}

}  // namespace

std::string layouts_to_text(const Scenario& s, const std::vector<LayoutComparison>& cs) {
  std::string out = fmt::format(
      "layouts of {} × {} for {} (modelled: decode by the planner's step model at its best batch within the TPOT SLO "
      "of {} ms; prefill by the cost model's prefill pass; colocated shares the GPUs' time, PD gives half the GPUs to "
      "each)\n",
      deployment_gpus(s), s.hardware.name, s.model.name, s.deployment.tpot_slo_ms);
  for (const LayoutComparison& c : cs) {
    out += fmt::format("\n{}\n", c.workload.label);
    out += fmt::format("  {:<62} {:>8} {:>10} {:>9} {:>9} {:>11}  {}\n", "layout", "HiSparse", "batch/rank",
                       "TPOT ms", "prefill s", "tok/s/GPU", "binds");
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const LayoutTableRow r = table_row(c, i);
      if (!r.applicable) {
        out += fmt::format("  {:<62} {:>8} {}\n", r.layout, r.hisparse ? "on" : "off",
                           "not applicable: " + r.not_applicable);
        continue;
      }
      out += fmt::format("  {:<62} {:>8} {:>10} {:>9.1f} {:>9.3f} {:>11.1f}  {}{}\n", r.layout, r.hisparse ? "on" : "off",
                         r.batch_per_rank, r.tpot_ms, r.prefill_s, r.tokens_per_s_per_gpu, r.binding,
                         r.winner ? " <- wins" : "");
    }
    out += fmt::format("  {}\n", c.why);
  }
  return out;
}

std::vector<LayoutTableRow> layout_table(const std::vector<LayoutComparison>& cs) {
  std::vector<LayoutTableRow> out;
  for (const LayoutComparison& c : cs)
    for (size_t i = 0; i < c.rows.size(); ++i) out.push_back(table_row(c, i));
  return out;
}

}  // namespace hisparse::sim
