// @brief The capacity report's content: summary, memory per GPU and per request, SGLang pool sizes, the limits of
// each sequence length with their formulas, throughput against batch size, the two sweeps and the method.
#include "sim/plan/plan_document.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/family/model_family.h"
#include "sim/cost/step/term_sensitivity.h"

namespace hisparse::sim {

namespace {

DocBlock heading(const std::string& text, const std::string& id, int level = 2) {
  DocBlock b;
  b.kind = DocBlock::kHeading;
  b.text = text;
  b.id = id;
  b.level = level;
  return b;
}
DocBlock para(const std::string& text) {
  DocBlock b;
  b.text = text;
  return b;
}
DocBlock list(std::vector<std::string> items) {
  DocBlock b;
  b.kind = DocBlock::kList;
  b.items = std::move(items);
  return b;
}
DocBlock table(std::vector<std::string> headers, std::string caption = "") {
  DocBlock b;
  b.kind = DocBlock::kTable;
  b.headers = std::move(headers);
  b.text = std::move(caption);
  return b;
}
DocCell c(std::string t) { return DocCell{std::move(t), false, false, false}; }
DocCell strong(std::string t) { return DocCell{std::move(t), true, false, false}; }
DocCell formula(std::string t) { return DocCell{std::move(t), false, true, false}; }
DocCell muted(std::string t) { return DocCell{std::move(t), false, false, true}; }

std::string mode_name(KvMode m) {
  return m == KvMode::kFull ? "full KV" : m == KvMode::kHiSparse ? "HiSparse" : "dynamic residency";
}
std::string seq_name(int64_t n) { return n % 1024 == 0 ? fmt::format("{}K", n / 1024) : plan_int(n); }
std::string ms(double v) { return fmt::format("{:.2f} ms", v); }
std::string tps(double v) { return v >= 1e4 ? fmt::format("{:.1f}k", v / 1e3) : fmt::format("{:.0f}", v); }
std::string compact(double v) {
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string figure_value(const Figure& f) {
  if (f.unit == "B") return plan_bytes(f.value);
  const std::string n = f.value == std::floor(f.value) ? plan_int(static_cast<int64_t>(f.value)) : fmt::format("{:.4g}", f.value);
  return f.unit.empty() ? n : n + " " + f.unit;
}

void figure_rows(DocBlock& t, const std::vector<const Figure*>& figs) {
  for (const Figure* f : figs) t.rows.push_back({c(f->label), strong(figure_value(*f)), formula(f->formula)});
}

const PlanRow* find_row(const CapacityPlan& p, int64_t n, KvMode m) {
  for (const auto& r : p.rows)
    if (r.seq_len == n && r.mode == m) return &r;
  return nullptr;
}

void add_plot(std::vector<DocBlock>& doc, const std::vector<PlanPlot>& plots, const std::string& file) {
  for (size_t i = 0; i < plots.size(); ++i) {
    if (plots[i].file != file) continue;
    DocBlock b;
    b.kind = DocBlock::kPlot;
    b.plot = static_cast<int>(i);
    b.text = plots[i].title;
    doc.push_back(b);
  }
}

void summary(std::vector<DocBlock>& doc, const CapacityPlan& p) {
  doc.push_back(heading("Summary", "summary"));
  doc.push_back(para(fmt::format(
      "Largest number of concurrent decode requests per decode instance ({} rank{} × requests per rank), the limit "
      "that binds, and the decode step at that concurrency. Throughput = requests × ranks / step time; "
      "gain = HiSparse ÷ full KV at each mode's own maximum.",
      p.layout.ranks, p.layout.ranks == 1 ? "" : "s")));
  DocBlock t = table({"seq len", "mode", "max concurrency", "binding limit", "TPOT at max", "decode tok/s",
                      "HBM / request", "host / request", "gain"});
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const PlanRow& r = p.rows[i];
    if (r.binding_limit == kNotApplicable) {
      t.rows.push_back({c(seq_name(r.seq_len)), c(mode_name(r.mode)), muted("—"), muted(kNotApplicable), muted("—"),
                        muted("—"), muted("—"), muted("—"), muted("no sparse indexer")});
      continue;
    }
    std::string gain = "";
    if (r.mode == KvMode::kHiSparse && i > 0) {
      const PlanRow& f = p.rows[i - 1];
      const std::string tg = f.decode_tokens_per_s > 0 ? fmt::format("{:.2f}×", r.decode_tokens_per_s / f.decode_tokens_per_s) : "∞";
      const std::string cg = f.max_concurrency > 0 ? fmt::format("{:.2f}×", static_cast<double>(r.max_concurrency) / f.max_concurrency) : "∞";
      gain = fmt::format("{} tok/s, {} requests", tg, cg);
    }
    t.rows.push_back({c(seq_name(r.seq_len)), c(mode_name(r.mode)), strong(plan_int(r.max_concurrency)),
                      strong(r.binding_limit), c(r.max_per_rank > 0 ? ms(r.at_max.tpot_ns * 1e-6) : "—"),
                      strong(tps(r.decode_tokens_per_s)), c(plan_bytes(r.hbm_per_request.value)),
                      c(r.host_per_request.value > 0 ? plan_bytes(r.host_per_request.value) : "—"), c(gain)});
    if (r.mode != KvMode::kHiSparse) continue;
    for (const PlanRow& d : p.dynamic_rows)
      if (d.seq_len == r.seq_len)
        t.rows.push_back({c(seq_name(d.seq_len)), c(mode_name(d.mode)), strong(plan_int(d.max_concurrency)),
                          strong(d.binding_limit), c(d.max_per_rank > 0 ? ms(d.at_max.tpot_ns * 1e-6) : "—"),
                          strong(tps(d.decode_tokens_per_s)), c(plan_bytes(d.hbm_per_request.value)),
                          c(plan_bytes(d.host_per_request.value)),
                          c(fmt::format("resident (full-KV step) up to {} per rank", plan_int(d.resident_per_rank)))});
  }
  doc.push_back(t);
}

void memory(std::vector<DocBlock>& doc, const CapacityPlan& p, const std::vector<PlanPlot>& plots) {
  const MemoryBudget& b = p.budget;
  doc.push_back(heading("HBM per GPU", "hbm"));
  DocBlock t = table({"figure", "value", "formula / source"});
  figure_rows(t, {&b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes, &b.kv_budget_bytes});
  t.rows.push_back({c("outside the static pool (activations, CUDA graphs)"), strong(plan_bytes(p.hbm.outside_static)),
                    formula("HBM − weights − reserve − KV budget")});
  doc.push_back(t);
  add_plot(doc, plots, "plan_memory.png");

  doc.push_back(heading("SGLang pool sizes per GPU — hold them against the server's start-up log", "pools"));
  doc.push_back(para("The device pool is the `max_total_num_tokens` the server logs; the host pool is what "
                     "`HostKVCache` allocates. Override any of them with --full-pool-tokens, --device-pool-tokens, "
                     "--host-pool-tokens, --kv-budget-bytes, --weights-per-gpu-bytes or --hbm-bytes when the log "
                     "disagrees (or under `memory:` in the deployment YAML)."));
  DocBlock u = table({"figure", "value", "formula / source"});
  if (b.model_family().lists_every_pool_figure()) {
    // GQA / MHA: SGLang's MHATokenToKVPool or SWAKVPool; DeepSeek-V4's DSV4 pools: every figure but the HBM ones.
    std::vector<const Figure*> figs;
    for (const Figure* f : b.figures())
      if (f != &b.hbm_bytes && f != &b.weights_per_gpu_bytes && f != &b.activation_reserve_bytes &&
          f != &b.kv_budget_bytes)
        figs.push_back(f);
    figure_rows(u, figs);
    doc.push_back(u);
    return;
  }
  figure_rows(u, {&b.kv_layers, &b.latent_row_bytes, &b.indexer_key_bytes, &b.full_cell_bytes, &b.hisparse_cell_bytes,
                  &b.full_pool_tokens, &b.device_pool_tokens, &b.logical_pool_tokens, &b.indexer_pool_tokens,
                  &b.device_latent_pool_bytes, &b.indexer_pool_bytes, &b.host_pool_tokens, &b.host_pool_bytes_per_gpu,
                  &b.host_pool_bytes_per_node, &b.host_dram_bytes, &b.host_dram_left_bytes, &b.device_buffer_tokens,
                  &b.device_buffer_bytes});
  doc.push_back(u);
}

/// What the op tables price of one step field (CostParams::op_tables): "; op tables: measured q_a, o_proj
/// (engine_ops_….csv); modelled from fewer-GPU measurements ep_dispatch (…)", or "" without tables.
std::string op_table_suffix(const CostParams& cp, const std::string& field) {
  std::map<std::string, std::vector<std::string>> measured, from_ranks;  // file -> terms
  if (!cp.op_tables) return "";
  for (const OpTermStatus& t : cp.op_tables->terms) {
    if (t.field != field || !t.series) continue;
    (t.label == OpLabel::kFromRanks ? from_ranks : measured)[t.series->table->file].push_back(t.term);
  }
  std::string out;
  for (const auto& [file, terms] : measured) out += fmt::format("; measured from op table {}: {}", file, fmt::join(terms, ", "));
  for (const auto& [file, terms] : from_ranks)
    out += fmt::format("; modelled from fewer-GPU measurements ({}): {}", file, fmt::join(terms, ", "));
  return out;
}

/// How one term of the step is obtained under `cp` (the per-op and swap-in calibrations it loaded, or the roofline),
/// with what the op tables price of it.
std::string step_term_kind(const CostParams& cp, const std::string& field);

std::string step_term_kind_base(const CostParams& cp, const std::string& field) {
  const bool step = cp.step != nullptr, swap = cp.swap_in_cost.calibrated;
  if (field == "indexer")
    return step ? "projections calibrated per op; scoring modelled (roofline at efficiency.indexer)" : "modelled (roofline)";
  if (field == "topk") return step ? "calibrated per op" : "modelled (roofline)";
  const std::string kernel = cp.swap_in_kernel == "sglang" ? "SGLang's kernel" : "this project's kernel";
  if (field == "swap_in") return swap ? "calibrated (swap-in plan, " + kernel + ")" : "modelled (roofline)";
  if (field == "h2d")
    return swap ? "calibrated copy cost (" + kernel + ") over the modelled PCIe/DRAM share" : "modelled (PCIe figures)";
  if (field == "attention") {
    const std::string kernel_term = cp.attention.table ? "sparse attention " + cp.attention.label()
                                                       : std::string("sparse attention modelled (efficiency.attention)");
    return step ? "projections, norms, RoPE calibrated per op; " + kernel_term
                : "projections modelled (roofline); " + kernel_term;
  }
  if (field == "moe")
    return step ? "router, shared expert, norms calibrated per op; routed experts, LM head modelled; all-to-all and "
                  "step overhead modelled/assumed (cost terms table)"
                : "modelled (roofline); all-to-all and step overhead modelled/assumed (cost terms table)";
  if (field == "backup") return swap ? "calibrated PCIe d2h figures" : "modelled (PCIe figures)";
  if (field == "draft") return "modelled: d passes of one average decoder layer + the LM head (sim/cost/step/speculative.h)";
  if (field == "prefetch_hidden")
    return "modelled: the shared layers' share of the copy, up to their attention (SGLang #29637's side-stream prefetch)";
  return "modelled";  // stall, sync
}

std::string step_term_kind(const CostParams& cp, const std::string& field) {
  return step_term_kind_base(cp, field) + op_table_suffix(cp, field);
}

/// One sequence length of a model without a sparse indexer: the full-KV row alone.
void full_kv_only(std::vector<DocBlock>& doc, const CapacityPlan& p, const PlanRow& f) {
  DocBlock m = table({"bytes per request", "full KV", "formula"});
  m.rows.push_back({c("K + V on GPU (HBM total)"), strong(plan_bytes(f.hbm_per_request.value)),
                    formula(f.hbm_per_request.formula)});
  doc.push_back(m);
  DocBlock t = table({"limit", "full KV", "formula"});
  for (const PlanLimit& l : f.limits) {
    DocCell x = l.per_rank < 0 ? muted("—") : c(plan_limit_value(l.per_rank));
    if (l.key == f.binding_limit) x.strong = true, x.text += " ← binds";
    t.rows.push_back({c(l.label), x, l.per_rank < 0 ? muted(l.formula) : formula(l.formula)});
  }
  doc.push_back(t);
  DocBlock s = table({"decode step at max concurrency", "full KV", "how it is obtained"});
  s.rows.push_back({c("requests per rank / per instance"), strong(fmt::format("{} / {}", f.max_per_rank, f.max_concurrency)),
                    c("modelled: the binding limit")});
  for (int i = 0; i < kStepCostFieldCount; ++i) {
    const double a = step_cost_field(f.at_max.cost, i) * 1e-6;
    if (a == 0) continue;
    const std::string name = kStepCostFields[i];
    s.rows.push_back({c(name), c(ms(a)),
                      c(name == "attention" ? "modelled (roofline): QKV/O projections, norms, RoPE, K + V read of every "
                                              "attended row (sliding layers window-capped)"
                                            : name == "moe" ? "modelled (roofline): MLP or routed experts, LM head, "
                                                              "all-reduce / all-to-all, step overhead"
                                                            : "modelled")});
  }
  s.rows.push_back({c("step = TPOT"), strong(ms(f.at_max.step_ns * 1e-6)), c("modelled: the sum of the terms above")});
  s.rows.push_back({c("decode tokens/s per instance"), strong(tps(f.decode_tokens_per_s)),
                    c("modelled: requests per instance / TPOT")});
  doc.push_back(s);
  std::vector<std::string> notes = {"HiSparse: " + p.hisparse_not_applicable};
  if (!f.slo_note.empty()) notes.push_back("full KV past the SLO limit: " + f.slo_note);
  doc.push_back(list(notes));
}

void per_seq_len(std::vector<DocBlock>& doc, const CapacityPlan& p) {
  doc.push_back(heading("Limits per sequence length", "limits"));
  doc.push_back(para(fmt::format(
      "Requests per rank under each limit (× {} for the instance). The binding limit is the smallest; ties go to the "
      "first in this order: max_running_requests, hbm, logical_pool, host_pool, host_dram, pcie, slo. PCIe binds when "
      "the miss copy alone would break the TPOT SLO of {} ms one request later.",
      p.layout.ranks, p.scenario.deployment.tpot_slo_ms)));
  for (int64_t n : p.options.seq_lens) {
    const PlanRow* f = find_row(p, n, KvMode::kFull);
    const PlanRow* h = find_row(p, n, KvMode::kHiSparse);
    if (!f || !h) continue;
    doc.push_back(heading(fmt::format("seq_len {} ({} tokens)", seq_name(n), plan_int(n)), fmt::format("n{}", n), 3));
    if (h->binding_limit == kNotApplicable) {
      full_kv_only(doc, p, *f);
      continue;
    }
    DocBlock m = table({"bytes per request", "full KV", "HiSparse", "formula (HiSparse; full KV)"});
    m.rows.push_back({c("latent on GPU"), c(plan_bytes(f->gpu_latent_per_request.value)),
                      c(plan_bytes(h->gpu_latent_per_request.value)),
                      formula(h->gpu_latent_per_request.formula + "; " + f->gpu_latent_per_request.formula)});
    m.rows.push_back({c("indexer keys on GPU"), c(plan_bytes(f->gpu_indexer_per_request.value)),
                      c(plan_bytes(h->gpu_indexer_per_request.value)), formula(h->gpu_indexer_per_request.formula)});
    m.rows.push_back({c("HBM total"), strong(plan_bytes(f->hbm_per_request.value)), strong(plan_bytes(h->hbm_per_request.value)),
                      formula(h->hbm_per_request.formula)});
    m.rows.push_back({c("host DRAM (latent)"), muted("—"), strong(plan_bytes(h->host_per_request.value)),
                      formula(h->host_per_request.formula)});
    doc.push_back(m);
    DocBlock t = table({"limit", "full KV", "formula (full KV)", "HiSparse", "formula (HiSparse)"});
    for (size_t i = 0; i < f->limits.size(); ++i) {
      const PlanLimit& a = f->limits[i];
      const PlanLimit& z = h->limits[i];
      auto val = [](const PlanLimit& l, const PlanRow& r) {
        DocCell x = l.per_rank < 0 ? muted("—") : c(plan_limit_value(l.per_rank));
        if (l.key == r.binding_limit) x.strong = true, x.text += " ← binds";
        return x;
      };
      t.rows.push_back({c(a.label), val(a, *f), a.per_rank < 0 ? muted(a.formula) : formula(a.formula), val(z, *h),
                        z.per_rank < 0 ? muted(z.formula) : formula(z.formula)});
    }
    doc.push_back(t);
    DocBlock s = table({"decode step at max concurrency", "full KV", "HiSparse", "how each term is obtained"});
    const CostParams& cp = p.options.cost;
    s.rows.push_back({c("requests per rank / per instance"), strong(fmt::format("{} / {}", f->max_per_rank, f->max_concurrency)),
                      strong(fmt::format("{} / {}", h->max_per_rank, h->max_concurrency)), c("modelled: the binding limit")});
    for (int i = 0; i < kStepCostFieldCount; ++i) {
      const double a = step_cost_field(f->at_max.cost, i) * 1e-6, z = step_cost_field(h->at_max.cost, i) * 1e-6;
      if (a == 0 && z == 0) continue;
      std::string name = kStepCostFields[i];
      const ModelSpec& m = p.scenario.model;
      if ((name == "indexer" || name == "topk") && m.topk_anchor_layers() < m.layers)
        name += fmt::format(" ({} of {} layers, IndexShare)", m.topk_anchor_layers(), m.layers);
      if (name == "backup") name += " (copy engine, off the critical path)";
      if (name == "prefetch_hidden") name += " (shared layers' copy under compute, off the critical path)";
      s.rows.push_back({c(name), c(ms(a)), c(ms(z)), c(step_term_kind(cp, kStepCostFields[i]))});
    }
    s.rows.push_back({c("step"), strong(ms(f->at_max.step_ns * 1e-6)), strong(ms(h->at_max.step_ns * 1e-6)),
                      c("modelled: the sum of the terms above")});
    if (f->at_max.accepted_tokens > 1 || h->at_max.accepted_tokens > 1)
      s.rows.push_back({c("accepted tokens per step (MTP)"), c(fmt::format("{:.3f}", f->at_max.accepted_tokens)),
                        c(fmt::format("{:.3f}", h->at_max.accepted_tokens)),
                        c("modelled: 1 + a + … + a^d (sim/cost/step/speculative.h)")});
    s.rows.push_back({c("TPOT"), strong(ms(f->at_max.tpot_ns * 1e-6)), strong(ms(h->at_max.tpot_ns * 1e-6)),
                      c("modelled: step / accepted tokens per step")});
    s.rows.push_back({c("misses per request per step (rows, all layers)"), muted("—"),
                      c(fmt::format("{} (fraction {:.4f})", compact(h->misses_per_request_step), h->miss_fraction)),
                      c("modelled: " + p.miss_source)});
    s.rows.push_back({c("H2D bytes per GPU per step"), muted("—"), c(plan_bytes(h->at_max.h2d_bytes)), c("modelled: misses × row bytes")});
    // Transfer granularity (sim/cost/terms/transfer_granularity.h): decode's per-layer loads, prefill's one batched offload.
    if (h->decode_transfer.transfers > 0)
      s.rows.push_back({c(copies_per_page(p.scenario.deployment.host_layout)
                              ? "decode miss loads, one per row per layer (host_layout page_first_direct)"
                              : "decode miss loads, one per layer"),
                        muted("—"),
                        c(fmt::format("{} ({})", ms(h->decode_transfer.ns * 1e-6), h->decode_transfer.formula)),
                        c("modelled: load_to_device_per_layer's granularity, pcie.latency_ns per copy (the hardware file's, "
                          "assumed, or its calibration's); a swap-in calibration prices each call as measured (h2d above)")});
    if (h->prefill_offload.transfers > 0)
      s.rows.push_back({c(copies_per_page(p.scenario.deployment.host_layout)
                              ? "prefill → host offload per request, one copy per page per layer (page_first_direct)"
                              : "prefill → host offload per request, one batched all-layer copy"),
                        muted("—"),
                        c(fmt::format("{} ({})", ms(h->prefill_offload.ns * 1e-6), h->prefill_offload.formula)),
                        c(p.scenario.deployment.pd_disaggregation
                              ? "modelled: backup_from_device_all_layer's granularity; this PD deployment writes the "
                                "host pool by RDMA instead (not on the decode step)"
                              : "modelled: backup_from_device_all_layer's granularity (colocated staging, before the "
                                "request's first decode step)")});
    s.rows.push_back({c("decode tokens/s per instance"), strong(tps(f->decode_tokens_per_s)), strong(tps(h->decode_tokens_per_s)),
                      c("modelled: requests per instance / TPOT")});
    doc.push_back(s);
    std::vector<std::string> notes;
    if (!f->slo_note.empty()) notes.push_back("full KV past the SLO limit: " + f->slo_note);
    if (!h->slo_note.empty()) notes.push_back("HiSparse past the SLO limit: " + h->slo_note);
    if (!notes.empty()) doc.push_back(list(notes));
  }
}

std::string sweep_cell(const SweepRow& w) {
  return fmt::format("{} req ({}) · {:.1f} ms · {} miss", plan_int(w.max_concurrency), w.binding_limit, w.tpot_ms,
                     compact(w.misses_per_request_step));
}

void sweeps(std::vector<DocBlock>& doc, const CapacityPlan& p, const std::vector<PlanPlot>& plots) {
  const auto& lens = p.options.seq_lens;
  if (!p.hisparse_not_applicable.empty()) {
    doc.push_back(heading("Sweep: device_buffer_size H", "sweep-h"));
    doc.push_back(para("HiSparse " + p.hisparse_not_applicable + ": no buffer to sweep."));
    doc.push_back(heading("Sweep: host_to_device_ratio", "sweep-ratio"));
    doc.push_back(para("HiSparse " + p.hisparse_not_applicable + ": no host pool to size."));
    return;
  }
  doc.push_back(heading("Sweep: device_buffer_size H", "sweep-h"));
  doc.push_back(para("A larger buffer costs HBM per request ((H + page) × layers × row bytes) and so fewer requests "
                     "per device pool, and saves misses (PCIe time per step). Each cell: HiSparse max concurrency "
                     "per instance (binding limit) · TPOT at that concurrency · misses per request per step."));
  std::vector<std::string> hh = {"H", "buffer / request"};
  for (int64_t n : lens) hh.push_back("n = " + seq_name(n));
  DocBlock t = table(hh);
  std::map<int64_t, std::vector<const SweepRow*>> by_h;
  for (const auto& w : p.sweep_buffer) by_h[w.value].push_back(&w);
  for (const auto& [H, ws] : by_h) {
    std::vector<DocCell> row = {ws.front()->is_current ? strong(plan_int(H) + " (current)") : c(plan_int(H)),
                                c(plan_bytes(ws.front()->device_buffer_bytes))};
    for (const SweepRow* w : ws) row.push_back(c(sweep_cell(*w)));
    t.rows.push_back(row);
  }
  doc.push_back(t);
  add_plot(doc, plots, "plan_sweep_buffer.png");

  doc.push_back(heading("Sweep: host_to_device_ratio", "sweep-ratio"));
  doc.push_back(para("The ratio sizes the logical and host pools (device pool × ratio) and the indexer key cache, "
                     "which lives in HBM for every logical token: a larger ratio admits longer or more requests but "
                     "shrinks the device pool and needs more host DRAM."));
  std::vector<std::string> rh = {"ratio", "device pool", "logical pool", "host pools / node", "DRAM left"};
  for (int64_t n : lens) rh.push_back("n = " + seq_name(n));
  DocBlock r = table(rh);
  std::map<int64_t, std::vector<const SweepRow*>> by_r;
  for (const auto& w : p.sweep_ratio) by_r[w.value].push_back(&w);
  for (const auto& [R, ws] : by_r) {
    const SweepRow& a = *ws.front();
    std::vector<DocCell> row = {a.is_current ? strong(plan_int(R) + " (current)") : c(plan_int(R)),
                                c(plan_int(a.device_pool_tokens)), c(plan_int(a.logical_pool_tokens)),
                                c(plan_bytes(a.host_pool_bytes_per_node)),
                                a.host_dram_left_bytes < 0 ? strong(plan_bytes(a.host_dram_left_bytes) + " ✗") : c(plan_bytes(a.host_dram_left_bytes))};
    for (const SweepRow* w : ws) row.push_back(c(fmt::format("{} req ({}) · {:.1f} ms", plan_int(w->max_concurrency), w->binding_limit, w->tpot_ms)));
    r.rows.push_back(row);
  }
  doc.push_back(r);
  add_plot(doc, plots, "plan_sweep_ratio.png");
}

/// Every cost term the plan used, with its value, kind and source; each assumed time-valued term with how much TPOT
/// moves per ±50 % of it, at one request per rank of the plan's first sequence length.
DocBlock cost_terms_table(const CapacityPlan& p) {
  const CostParams& cp = p.options.cost;
  const int64_t n = p.rows.empty() ? 0 : p.rows.front().seq_len;
  const bool hisparse = p.hisparse_not_applicable.empty() && p.scenario.deployment.hisparse_enabled;
  DocBlock terms = table({"cost term", "value", "kind", "±50 % → TPOT", "source"},
                         (cp.terms_file.empty() ? "Built-in test defaults (no cost-model file loaded)."
                                                : "From " + cp.terms_file + " (sim/cost/terms/cost_params.h).") +
                             fmt::format(" Sensitivity of an assumed term: TPOT at 1.5× minus at 0.5× of it, halved, "
                                         "for B = 1 per rank at n = {} ({}).", plan_int(n),
                                         hisparse ? "HiSparse, no misses" : "full KV"));
  for (const TermSource& t : cp.sources) {
    std::string sens;
    if (t.kind == "assumed" && n > 0) {
      const SimTime d = term_sensitivity_ns(p.scenario, cp, hisparse, t.term, 1, n);
      if (d >= 0) sens = fmt::format("±{:.3f} ms", d * 1e-6);
    }
    terms.rows.push_back({c(t.term), c(t.value), c(t.kind), c(sens), c(t.source)});
  }
  return terms;
}

void method(std::vector<DocBlock>& doc, const CapacityPlan& p, const PlanRunInfo& info) {
  const Scenario& s = p.scenario;
  const CostParams& cp = p.options.cost;
  doc.push_back(heading("Method and sources", "method"));
  if (!p.hisparse_not_applicable.empty()) {
    doc.push_back(list({
        "Pool sizes follow SGLang's own arithmetic (core/memory_budget.cpp cites the files): cell = Σ layers 2 × "
        "kv_heads_per_rank × head_dim × dtype bytes (MHATokenToKVPool), kv_heads_per_rank = max(1, KV heads / attention "
        "TP); max_total_num_tokens = floor(KV budget / cell / page) × page; with sliding layers SGLang splits that "
        "memory into a full-layer pool and a sliding-layer pool of swa_full_tokens_ratio × its tokens (SWAKVPool), and "
        "a request keeps at most window + page tokens on a sliding layer (modelled bound).",
        "Step time (modelled, roofline at the cost file's efficiencies; no per-op calibration of this model): per layer "
        "the QKV and O projections, norms and RoPE, and the attention kernel reading the K + V row of every attended "
        "token (every token on a full-attention layer, at most the window on a sliding one), then the dense MLP or the "
        "routed experts, the LM head and the step overhead for the instance's B × ranks tokens. TPOT = step time.",
        "HiSparse: " + p.hisparse_not_applicable + ".",
        fmt::format("Cost model: overlap {}; {}. Each cost term, its value, kind and source is in the table below.",
                    to_string(cp.overlap), info.calibration.empty() ? "built-in test defaults" : info.calibration),
        fmt::format("Generated by `{}` in {:.3f} s (plotting excluded).", info.command_line, info.plan_seconds),
    }));
    doc.push_back(cost_terms_table(p));
    return;
  }
  doc.push_back(list({
      "Pool sizes follow SGLang's own arithmetic (core/memory_budget.cpp cites the files): cell size = kv_layers × "
      "(latent row + host_to_device_ratio × indexer key) with HiSparse; device pool = floor(KV budget / cell / page) × page; "
      "logical pool = device pool × ratio; host pool = (floor(logical / page) + 1) × page.",
      "Step time: a homogeneous batch of B requests of n tokens on one rank, built from sim/decode_cost_model (roofline of "
      "each operation) with the serving engine's IO rules: indexer + top-k + hit detection, then the backup wait (stall), "
      "the miss copy (layers × PCIe latency + bytes / rate), attention, then MoE + all-to-all + LM head + step overhead "
      "for the instance's B × ranks tokens. TPOT = step time.",
      fmt::format("Miss copy rate {:.4g} GB/s per GPU = min(gathered-row rate {:.4g} GB/s, PCIe H2D {:.4g} GB/s, host DRAM "
                  "{:.4g} GB/s per NUMA node / {} GPUs{}); backup rate {:.4g} GB/s.",
                  p.h2d_rate * 1e-9, s.hardware.pcie.gather_row_bytes_per_s * 1e-9, s.hardware.pcie.h2d_bulk_bytes_per_s * 1e-9,
                  s.hardware.host_dram_bytes_per_s_per_numa * 1e-9, p.layout.gpus_per_numa,
                  s.deployment.host_pool_remote_numa
                      ? fmt::format(" × cross_node_factor {:g}: host pool on the other socket (host_pool_numa remote; "
                                    "the factor is assumed, docs/cost_model.md gives its sensitivity)",
                                    s.hardware.numa_cross_node_factor)
                      : std::string(", host pool NUMA-local"),
                  p.d2h_rate * 1e-9),
      "Misses: " + p.miss_source + ". Misses per request per step = (min(n, K) − 1) × layers × fraction(n / H) when n > H, else 0.",
      fmt::format("Cost model: overlap {}; {}. Each cost term, its value, kind and source is in the table below.",
                  to_string(cp.overlap), info.calibration.empty() ? "built-in test defaults" : info.calibration),
      fmt::format("Host DRAM per GPU {} = (host DRAM {} − reserve {}) / GPUs per node.", plan_bytes(p.host_dram_per_gpu),
                  plan_bytes(s.deployment.host_dram_bytes), plan_bytes(p.options.host_reserve_bytes)),
      "Not modelled: prefill traffic into the host pool (RDMA writes share host DRAM bandwidth), the first step after "
      "an empty start (every selection misses once), requests of mixed lengths in one batch (use `hisparse simulate`).",
      fmt::format("Generated by `{}` in {:.3f} s (plotting excluded).", info.command_line, info.plan_seconds),
  }));
  if (p.budget.model_family().compressed_pools())
    doc.push_back(list({
        "DeepSeek-V4 (core/dsv4_pool_budget.cpp, sim/cost/step/decode_cost_model_dsv4.cpp; docs/capacity.md and "
        "docs/cost_model.md \"DeepSeek-V4\"): SGLang's DSV4 pools with HiSparse off and on (C4 device pool = full / "
        "(4 × ratio) entries, the C4 host pool every entry, the C128 states per request slot before the split); per "
        "layer type the window attention, the C4 indexer + top-k + sparse attention over top_k entries, C128 dense "
        "attention over n / 128 entries, each compressed layer's compressor and state reads; misses and copies count "
        "C4 entries over the C4 layers (n / 4 in place of n above).",
    }));
  doc.push_back(cost_terms_table(p));
}

void strategies(std::vector<DocBlock>& doc, const CapacityPlan& p) {
  const StrategyTable& t = p.strategies;
  doc.push_back(heading("Cache strategies", "strategies"));
  doc.push_back(para(
      "Five ways to hold the KV cache on this deployment, per request on one GPU holding it. HBM, host memory, PCIe, "
      "concurrency, TPOT and tokens/s are modelled (this plan's memory budget and step model; concurrency = the "
      "smallest of max_running_requests, the strategy's HBM limit and the TPOT SLO). Recall is the share of the "
      "oracle top-K attention mass kept, measured by `hisparse select` (" + t.recall_source +
      ") for the selector standing for the strategy, or not measured. Definitions: docs/capacity.md, \"Cache "
      "strategies\"."));
  DocBlock tb = table({"seq_len", "strategy", "HBM/req", "host/req", "PCIe B/step/req", "attended rows",
                       "max concurrency", "binding", "TPOT", "tokens/s", "recall"});
  for (const StrategyRow& r : t.rows)
    tb.rows.push_back({c(seq_name(r.seq_len)), c(r.name), c(plan_bytes(r.hbm_per_request)),
                       r.host_per_request > 0 ? c(plan_bytes(r.host_per_request)) : muted("—"),
                       r.pcie_bytes_per_step > 0 ? c(plan_bytes(r.pcie_bytes_per_step)) : muted("—"),
                       c(fmt::format("{:.0f}", r.attended_rows)), strong(plan_int(r.max_concurrency)), c(r.binding_limit),
                       c(ms(r.tpot_ms)), c(tps(r.decode_tokens_per_s)),
                       r.recall.known ? c(fmt::format("{:.4f}", r.recall.value)) : muted("not measured")});
  doc.push_back(tb);
  std::vector<std::string> items;
  for (const StrategyRow& r : t.rows)
    if (r.seq_len == t.rows.front().seq_len) items.push_back(r.name + ": " + r.definition + "; recall " + r.recall.text);
  for (const auto& n : t.notes) items.push_back(n);
  doc.push_back(list(items));
}

}  // namespace

std::vector<DocBlock> build_plan_document(const CapacityPlan& p, const PlanRunInfo& info, const std::vector<PlanPlot>& plots) {
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  std::vector<DocBlock> doc;
  doc.push_back(heading("Capacity plan — " + d.name, "top", 1));
  if (!p.hisparse_not_applicable.empty())
    doc.push_back(para(fmt::format(
        "{} ({}) on {} × {} (decode instance: {} GPUs, tp {}, dp_attention {}, ep {}; {} rank{} of {} GPU{}), {} KV, "
        "page {}, mem_fraction_static {}. HiSparse {}. TPOT SLO {} ms.",
        s.model.name, p.budget.attention, p.layout.gpus, s.hardware.name, p.layout.gpus, d.decode.tp,
        d.decode.dp_attention, d.decode.ep, p.layout.ranks, p.layout.ranks == 1 ? "" : "s", p.layout.attention_tp,
        p.layout.attention_tp == 1 ? "" : "s", to_string(d.kv_dtype), d.page_size,
        d.mem_fraction_static, p.hisparse_not_applicable, d.tpot_slo_ms)));
  else
  doc.push_back(para(fmt::format(
      "{} on {} × {} (decode instance: {} GPUs, tp {}, dp_attention {}, ep {}; {} rank{} of {} GPU{}), {} KV, page {}, "
      "mem_fraction_static {}. HiSparse: top_k {}, device_buffer_size {}, host_to_device_ratio {}. Host DRAM {} per node. "
      "TPOT SLO {} ms.",
      s.model.name, p.layout.gpus, s.hardware.name, p.layout.gpus, d.decode.tp, d.decode.dp_attention, d.decode.ep,
      p.layout.ranks, p.layout.ranks == 1 ? "" : "s", p.layout.attention_tp, p.layout.attention_tp == 1 ? "" : "s",
      to_string(d.kv_dtype), d.page_size, d.mem_fraction_static, d.hisparse.top_k,
      d.hisparse.device_buffer_size, d.hisparse.host_to_device_ratio, plan_bytes(d.host_dram_bytes), d.tpot_slo_ms)));
  if (!info.workload.empty()) doc.push_back(para("Workload: " + info.workload));
  if (!info.calibration.empty()) doc.push_back(para("Cost model: " + info.calibration + "."));
  for (const auto& w : p.warnings) {
    DocBlock b;
    b.kind = DocBlock::kWarning;
    b.text = w;
    doc.push_back(b);
  }
  summary(doc, p);
  add_plot(doc, plots, "plan_throughput.png");
  add_plot(doc, plots, "plan_limits.png");
  memory(doc, p, plots);
  per_seq_len(doc, p);
  if (p.options.strategies.enabled) strategies(doc, p);
  sweeps(doc, p, plots);
  method(doc, p, info);
  return doc;
}

std::string plan_to_html(const CapacityPlan& plan, const PlanRunInfo& info, const std::vector<PlanPlot>& plots) {
  std::vector<std::pair<std::string, std::string>> nav = {
      {"summary", "Summary"}, {"hbm", "HBM per GPU"}, {"pools", "SGLang pools"}, {"limits", "Limits"}};
  if (plan.options.strategies.enabled) nav.emplace_back("strategies", "Cache strategies");
  for (auto x : std::vector<std::pair<std::string, std::string>>{
           {"sweep-h", "Buffer sweep"}, {"sweep-ratio", "Ratio sweep"}, {"method", "Method"}})
    nav.push_back(x);
  return document_to_html("Capacity plan — " + plan.scenario.deployment.name, nav,
                          build_plan_document(plan, info, plots), plots);
}

}  // namespace hisparse::sim
