// @brief The advice as terminal text, JSON, Markdown and HTML (see advice_report.h). Numbers are printed with
// fixed precision so the files are byte-identical from run to run.
#include "sim/advise/advice_report.h"
#include "sim/advise/advice_table.h"
#include "sim/advise/robustness_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/plan/plan_report.h"
#include "sim/report/fold_line.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

namespace {

constexpr JsonWriter::Layout kInline = JsonWriter::Layout::kInline;

std::string upper_first(std::string t) {
  if (!t.empty() && t[0] >= 'a' && t[0] <= 'z') t[0] = static_cast<char>(t[0] - 'a' + 'A');
  return t;
}

std::string len_name(int64_t n) { return n % 1024 == 0 ? fmt::format("{}K", n / 1024) : plan_int(n); }
std::string tps(double v) { return plan_int(static_cast<int64_t>(std::llround(v))); }
std::string ratio_text(double r) { return r > 0 ? fmt::format("{:.2f}×", r) : "—"; }

const Candidate* at(const Advice& a, int i) { return i >= 0 ? &a.candidates[static_cast<size_t>(i)] : nullptr; }

std::string mix_text(const ContextMix& m) {
  if (m.classes.size() == 1) return fmt::format("every request at {} tokens", plan_int(m.classes[0].seq_len));
  std::string o = fmt::format("{} classes, mean {} tokens:", m.classes.size(), plan_int(std::llround(m.mean_seq_len())));
  for (const auto& c : m.classes) o += fmt::format(" {} ({:.1f}%)", plan_int(c.seq_len), 100 * c.weight);
  return o;
}

std::string pays_text(const BreakEven& be, int ranks) {
  std::string o;
  if (be.pays_from_batch_per_rank > 0)
    o = fmt::format("{} gives more tokens/s than full KV from {} requests per rank ({} per instance) on", be.hisparse_setting,
                    be.pays_from_batch_per_rank, be.pays_from_batch_per_rank * ranks);
  else
    o = fmt::format("{} never gives more tokens/s than full KV at any concurrency scanned", be.hisparse_setting);
  o += fmt::format("; at batch 1 and 2 it gives {} and {} of full KV's tokens/s; its best ratio is {} at {} per rank",
                   ratio_text(be.ratio_at_batch_1), ratio_text(be.ratio_at_batch_2), ratio_text(be.best_ratio),
                   be.best_ratio_batch_per_rank);
  if (be.pays_from_seq_len > 0) {
    o += fmt::format(". By context length (each mode at its own best concurrency) it wins from {}", len_name(be.pays_from_seq_len));
    if (be.loses_again_from_seq_len > 0) o += fmt::format(" and loses again from {}", len_name(be.loses_again_from_seq_len));
  } else if (!be.by_seq_len.empty()) {
    o += ". By context length it wins at no scanned length";
  }
  return o + ".";
}

// What the advice's goodput is, in words (every advice prints it under the recommendation).
std::string figure_meaning(const Candidate& rec) {
  return fmt::format("decode-only steady state at full batch: every dp rank holding {} requests of the mix, no "
                     "prefill, no admission waits, no ramp-down (modelled)",
                     rec.per_rank);
}

// The simulated figures beside the advice's (sim/api/advise_simulation.h), one line per simulated setting.
std::vector<std::string> simulated_lines(const Advice& a) {
  std::vector<std::string> out;
  if (!a.simulated_note.empty()) out.push_back(a.simulated_note);
  for (const SimulatedRun& r : a.simulated)
    out.push_back(fmt::format(
        "{} at {} closed-loop clients, {} requests: {} tok/s while every client had a request in flight ({} of the "
        "advised {}; {:.1f} requests per rank of {}), {} tok/s over the whole run, ramp-down included (modelled; `{}`)",
        r.setting, plan_int(r.clients), plan_int(r.requests), tps(r.steady_tokens_per_s),
        ratio_text(r.advised_goodput > 0 ? r.steady_tokens_per_s / r.advised_goodput : 0), tps(r.advised_goodput),
        r.steady_batch_per_rank, r.advised_per_rank, tps(r.tokens_per_s), r.command));
  if (a.simulated.size() == 2 && a.simulated[1].steady_tokens_per_s > 0 && a.simulated[1].tokens_per_s > 0)
    out.push_back(fmt::format("{} against {}: {} while every client is in flight, {} over the whole run "
                              "(advised: {})",
                              a.simulated[0].setting, a.simulated[1].setting,
                              ratio_text(a.simulated[0].steady_tokens_per_s / a.simulated[1].steady_tokens_per_s),
                              ratio_text(a.simulated[0].tokens_per_s / a.simulated[1].tokens_per_s),
                              ratio_text(a.simulated[1].advised_goodput > 0
                                             ? a.simulated[0].advised_goodput / a.simulated[1].advised_goodput
                                             : 0)));
  return out;
}

void simulated_json(JsonWriter& j, const Advice& a) {
  j.begin_object(kInline).member("note", a.simulated_note).key("runs").begin_array(kInline);
  for (const SimulatedRun& r : a.simulated) {
    j.begin_object(kInline).member("setting", r.setting).member("clients", r.clients).member("requests", r.requests);
    j.key("tokens_per_s").fixed(r.tokens_per_s, 3).key("steady_tokens_per_s").fixed(r.steady_tokens_per_s, 3);
    j.key("steady_batch_per_rank").fixed(r.steady_batch_per_rank, 3).key("tpot_p50_ms").fixed(r.tpot_p50_ms, 4);
    j.member("advised_per_rank", r.advised_per_rank).key("advised_goodput_tokens_per_s").fixed(r.advised_goodput, 3);
    j.member("command", r.command).end_object();
  }
  j.end_array().end_object();
}

void candidate_json(JsonWriter& j, const Candidate& c, const Scenario& s) {
  j.begin_object(kInline).member("setting", c.name()).member("mode", to_string(c.mode));
  j.member("device_buffer_size", c.buffer_size).member("host_to_device_ratio", c.ratio).member("per_rank", c.per_rank);
  j.member("concurrency", c.concurrency).member("max_running_requests", c.per_rank * rank_layout(s).ranks);
  j.member("binding_limit", c.binding_limit).key("goodput_tokens_per_s").fixed(c.goodput, 3);
  j.key("tpot_ms").fixed(c.tpot_ms, 4).key("hbm_bytes_per_request").fixed(c.hbm_per_request, 0);
  j.key("host_bytes_per_request").fixed(c.host_per_request, 0);
  j.key("host_pool_bytes_per_node").fixed(c.host_pool_bytes_per_node, 0).member("pool_tokens", c.pool_tokens);
  j.member("logical_pool_tokens", c.logical_pool_tokens).member("host_pool_tokens", c.host_pool_tokens);
  j.key("misses_per_request_step").fixed(c.misses_per_request_step, 3);
  j.key("h2d_bytes_per_step").fixed(c.h2d_bytes_per_step, 0);
  j.member("pareto_tpot", c.pareto_tpot).member("pareto_hbm", c.pareto_hbm).member("sglang_flags", sglang_flags(c, s));
  j.key("limits").begin_array(kInline);
  for (const auto& l : c.limits)
    j.begin_object(kInline).member("key", l.key).member("per_rank", l.per_rank).member("formula", l.formula).end_object();
  j.end_array().end_object();
}

std::vector<DocCell> summary_column(const Candidate* c, const Scenario& s) {
  auto cell = [](std::string t, bool strong = false) { return DocCell{std::move(t), strong, false, false}; };
  if (!c) return std::vector<DocCell>(11, cell("—"));
  return {cell(c->name(), true),
          DocCell{sglang_flags(*c, s), false, true, false},
          cell(tps(c->goodput), true),
          cell(fmt::format("{:.2f}", c->tpot_ms)),
          cell(plan_int(c->concurrency)),
          cell(c->binding_limit),
          cell(plan_bytes(c->hbm_per_request)),
          cell(c->host_per_request > 0 ? plan_bytes(c->host_per_request) : "—"),
          cell(c->host_pool_bytes_per_node > 0 ? plan_bytes(c->host_pool_bytes_per_node) : "—"),
          cell(fmt::format("{:.0f}", c->misses_per_request_step)),
          cell(plan_bytes(c->h2d_bytes_per_step))};
}

void add_heading(std::vector<DocBlock>& doc, int level, std::string text, std::string id = "") {
  DocBlock b;
  b.kind = DocBlock::kHeading;
  b.level = level;
  b.text = std::move(text);
  b.id = std::move(id);
  doc.push_back(b);
}

void add_para(std::vector<DocBlock>& doc, std::string text, DocBlock::Kind kind = DocBlock::kParagraph) {
  DocBlock b;
  b.kind = kind;
  b.text = std::move(text);
  doc.push_back(b);
}

void add_introduction(std::vector<DocBlock>& doc, const Scenario& s, const std::vector<Advice>& advices,
                      const AdviceRunInfo& info, const RankLayout& lay) {
  add_heading(doc, 1, "HiSparse advice — " + s.deployment.name);
  add_para(doc, fmt::format("`{}`", info.command_line));
  add_para(doc,
           fmt::format("Deployment {}: model {}, {} × {} per decode instance, {} dp rank{}, top_k {}, TPOT SLO {} ms, "
                       "host DRAM {} per node. The advisor evaluates full KV and every (device_buffer_size, "
                       "host_to_device_ratio) of the sweep at the largest batch per rank that meets every limit, under "
                       "every miss source and assumed cost range, and recommends by the decision rule {} (ties: full KV, "
                       "then the smaller host pool, then the smaller HBM footprint).",
                       s.deployment.name, s.model.name, lay.gpus, s.hardware.name, lay.ranks, lay.ranks == 1 ? "" : "s",
                       s.deployment.hisparse.top_k, s.deployment.tpot_slo_ms, plan_bytes(s.deployment.host_dram_bytes),
                       advices.empty() ? "" : decision_rule_text(advices.front().robustness.rule)));
  DocBlock labels;
  labels.kind = DocBlock::kList;
  labels.items = {"goodput, TPOT, concurrency: " + info.cost_label,
                  "misses per request and step: " + info.miss_label + " — " + info.miss_source,
                  "HBM, host memory, pool sizes: derived from SGLang's pool arithmetic (core/memory_budget.cpp)"};
  doc.push_back(labels);
  for (const auto& w : info.warnings) add_para(doc, w, DocBlock::kWarning);
}

/// The recommendation beside the runner-up, the best full KV, the HiSparse setting the later sections describe and
/// the best under the default miss source.
DocBlock summary_table(const Advice& a, const Candidate* rec, const Scenario& s) {
  DocBlock t;
  t.kind = DocBlock::kTable;
  t.headers = {"", "recommended", "runner-up", "best full KV", "HiSparse compared below",
               "best if the miss model is " + (a.robustness.cases.empty() ? std::string("the default")
                                                                          : a.robustness.cases.front().name)};
  const std::vector<std::string> rows = {"setting", "SGLang flags", "goodput, tokens/s", "TPOT ms", "concurrency",
                                         "binding limit", "HBM per request", "host per request", "host pools per node",
                                         "rows loaded per request-step", "H2D bytes per step and GPU"};
  const std::vector<DocCell> cols[5] = {summary_column(rec, s), summary_column(at(a, a.runner_up), s),
                                        summary_column(at(a, a.best_full), s), summary_column(at(a, a.best_hisparse), s),
                                        summary_column(at(a, a.best_default_source), s)};
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<DocCell> row = {DocCell{rows[r]}};
    for (const auto& col : cols) row.push_back(col[r]);
    t.rows.push_back(row);
  }
  return t;
}

DocBlock buffer_sweep_table(const Advice& a, const Candidate* rec) {
  DocBlock sw;
  sw.kind = DocBlock::kTable;
  sw.text = "Buffer sweep (each device_buffer_size at its best host_to_device_ratio; H = — is full KV):";
  sw.headers = {"device_buffer_size", "ratio", "concurrency", "binding limit", "goodput tok/s", "vs recommended",
                "TPOT ms", "HBM/request", "rows loaded/request-step"};
  for (int idx : buffer_sweep(a)) {
    const Candidate& c = a.candidates[static_cast<size_t>(idx)];
    const bool is_rec = idx == a.best;
    sw.rows.push_back({DocCell{c.mode == KvMode::kFull ? "— (full KV)" : plan_int(c.buffer_size), is_rec},
                       DocCell{c.ratio > 0 ? std::to_string(c.ratio) : "—"}, DocCell{plan_int(c.concurrency)},
                       DocCell{c.binding_limit}, DocCell{tps(c.goodput), is_rec},
                       DocCell{ratio_text(rec->goodput > 0 ? c.goodput / rec->goodput : 0)},
                       DocCell{fmt::format("{:.2f}", c.tpot_ms)}, DocCell{plan_bytes(c.hbm_per_request)},
                       DocCell{fmt::format("{:.0f}", c.misses_per_request_step)}});
  }
  return sw;
}

void add_break_even(std::vector<DocBlock>& doc, const Advice& a, size_t i, int ranks) {
  if (a.break_even.by_concurrency.empty()) return;
  add_heading(doc, 3, "Break-even", fmt::format("break-even-{}", i));
  add_para(doc, pays_text(a.break_even, ranks));
  DocBlock bt;
  bt.kind = DocBlock::kTable;
  bt.headers = {"batch per rank", "concurrency", "full KV tok/s", "HiSparse tok/s", "HiSparse / full"};
  for (const auto& p : a.break_even.by_concurrency)
    bt.rows.push_back({DocCell{plan_int(p.batch_per_rank)}, DocCell{plan_int(p.concurrency)},
                       DocCell{tps(p.full_tokens_per_s)}, DocCell{tps(p.hisparse_tokens_per_s)},
                       DocCell{ratio_text(p.ratio), p.ratio > 1}});
  doc.push_back(bt);
  DocBlock lt;
  lt.kind = DocBlock::kTable;
  lt.text = "By context length (each mode at its own largest concurrency within every limit):";
  lt.headers = {"seq_len", "full KV conc.", "full KV tok/s", "full binding", "HiSparse conc.", "HiSparse tok/s",
                "HiSparse binding", "HiSparse / full"};
  for (const auto& p : a.break_even.by_seq_len)
    lt.rows.push_back({DocCell{len_name(p.seq_len)}, DocCell{plan_int(p.full_concurrency)}, DocCell{tps(p.full_goodput)},
                       DocCell{p.full_binding}, DocCell{plan_int(p.hisparse_concurrency)},
                       DocCell{tps(p.hisparse_goodput)}, DocCell{p.hisparse_binding},
                       DocCell{ratio_text(p.ratio), p.ratio > 1}});
  doc.push_back(lt);
}

void add_dynamic(std::vector<DocBlock>& doc, const Advice& a, size_t i, int ranks) {
  const std::string dt = dynamic_text(a.dynamic, ranks);
  if (dt.empty()) return;
  add_heading(doc, 3, "Dynamic residency", fmt::format("dynamic-{}", i));
  add_para(doc, dt + " Not among the recommendations: its SGLang pull requests are open. Each request keeps its full "
                "KV on the GPU (backed up to the host one token a step) until the device pool runs short; then the "
                "longest are demoted to the buffer, and a rank's batch runs HiSparse's swap graph once one of its "
                "requests is demoted.");
  DocBlock dt_table;
  dt_table.kind = DocBlock::kTable;
  dt_table.headers = {"batch per rank", "concurrency", "full KV tok/s", "HiSparse tok/s", "dynamic tok/s",
                      "demoted per rank"};
  for (const auto& p : a.dynamic.by_concurrency)
    dt_table.rows.push_back({DocCell{plan_int(p.batch_per_rank)}, DocCell{plan_int(p.concurrency)},
                             DocCell{tps(p.full_tokens_per_s)}, DocCell{tps(p.hisparse_tokens_per_s)},
                             DocCell{tps(p.dynamic_tokens_per_s),
                                     p.dynamic_tokens_per_s > std::max(p.full_tokens_per_s, p.hisparse_tokens_per_s)},
                             DocCell{plan_int(p.swap_per_rank)}});
  doc.push_back(dt_table);
}

/// One context mix's section: the recommendation, its robustness, the tables, break-even, dynamic, MTP and plots.
void add_mix_section(std::vector<DocBlock>& doc, const Scenario& s, const Advice& a, size_t i,
                     const std::vector<AdvicePlot>& plots, int ranks) {
  add_heading(doc, 2, "Context " + a.mix.label, fmt::format("mix-{}", i));
  add_para(doc, "Mix: " + mix_text(a.mix) + ".");
  for (const auto& n : a.notes) add_para(doc, n, DocBlock::kWarning);
  const Candidate* rec = a.recommended();
  if (!rec) return;
  add_para(doc, fmt::format("Recommended: {} — `{}`", rec->name(), sglang_flags(*rec, s)));
  add_para(doc, fmt::format("Its goodput, {} tok/s, is a {}.", tps(rec->goodput), figure_meaning(*rec)));
  for (const std::string& l : simulated_lines(a)) add_para(doc, "Simulated: " + l + ".");
  for (DocBlock& b : robustness_blocks(a)) doc.push_back(std::move(b));
  if (const std::string why = default_source_text(a); !why.empty()) add_para(doc, upper_first(why) + ".");
  doc.push_back(summary_table(a, rec, s));
  doc.push_back(buffer_sweep_table(a, rec));
  add_break_even(doc, a, i, ranks);
  add_dynamic(doc, a, i, ranks);
  if (!a.mtp.empty()) {
    add_heading(doc, 3, "MTP vs HiSparse", fmt::format("mtp-{}", i));
    for (DocBlock& b : mtp_comparison_blocks(a.mtp)) doc.push_back(std::move(b));
  }
  for (size_t k = 0; k < plots.size(); ++k) {
    if (plots[k].file.find(fmt::format("advise_{}_", i)) != 0) continue;
    DocBlock p;
    p.kind = DocBlock::kPlot;
    p.plot = static_cast<int>(k);
    doc.push_back(p);
  }
}

DocBlock method_list() {
  DocBlock m;
  m.kind = DocBlock::kList;
  m.items = {
      "A candidate's batch per rank is the smallest of: HBM (device pool ÷ expected buffer slots, or full pool ÷ expected "
      "paged length), the logical and host pools (÷ expected paged length), host DRAM, the PCIe copy of the batch's "
      "misses within the SLO (one link per GPU, shared by the whole batch), and the TPOT SLO on the modelled step.",
      "Goodput = batch × dp ranks ÷ step time at that batch; the step time grows affinely with the batch, so the "
      "largest feasible batch is each candidate's best point, and becomes --max-running-requests (SGLang divides it by "
      "dp_size per rank).",
      "A mix holds requests in proportion to their decode time (Little's law), each at lengths spread over its decode; "
      "sums over the batch are expectations over the mix.",
      "The miss fraction at each device_buffer_size comes from the miss model named above, re-evaluated at every H of "
      "the sweep (steady state: warm-up steps are excluded by rule).",
      "Robustness: every setting is evaluated again under each other applicable miss source (every shipped miss "
      "surface, and those added with --compare-miss-curves) at the nominal cost terms, and under each time-valued cost "
      "term labelled assumed at 0.5× and 1.5× (its stated ±50 % range) with the advice's own miss model, one "
      "uncertainty at a time; the decision rule (--decision-rule) picks the recommendation from those goodputs; the "
      "regret under a case is 1 − the recommendation's goodput ÷ the best goodput under that case."};
  return m;
}

std::vector<DocBlock> build_document(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info,
                                     const std::vector<AdvicePlot>& plots) {
  std::vector<DocBlock> doc;
  const RankLayout lay = rank_layout(s);
  add_introduction(doc, s, advices, info, lay);
  for (size_t i = 0; i < advices.size(); ++i) add_mix_section(doc, s, advices[i], i, plots, lay.ranks);
  add_heading(doc, 2, "Method", "method");
  doc.push_back(method_list());
  return doc;
}

}  // namespace

std::vector<int> buffer_sweep(const Advice& a) {
  std::map<int32_t, int> best;  // H (0 = full) → candidate
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    const Candidate& c = a.candidates[i];
    auto it = best.find(c.buffer_size);
    if (it == best.end()) {
      best[c.buffer_size] = static_cast<int>(i);
      continue;
    }
    const Candidate& o = a.candidates[static_cast<size_t>(it->second)];
    // Same preference as the recommendation within one H: goodput, then the smaller host pool.
    if (c.goodput > o.goodput * (1 + 1e-9) ||
        (c.goodput >= o.goodput * (1 - 1e-9) && c.host_pool_bytes_per_node < o.host_pool_bytes_per_node))
      it->second = static_cast<int>(i);
  }
  std::vector<int> out;
  for (const auto& [h, i] : best) out.push_back(i);
  return out;
}

std::vector<AdvicePlot> advice_plot_list(size_t count) {
  std::vector<AdvicePlot> v;
  for (size_t i = 0; i < count; ++i) {
    v.push_back({fmt::format("advise_{}_pareto.png", i),
                 "Every setting at its best batch: goodput against TPOT and against HBM per request (Pareto front "
                 "joined, recommendation starred), and tokens/s against TPOT as the batch grows",
                 ""});
    v.push_back({fmt::format("advise_{}_break_even.png", i),
                 "Break-even: tokens/s of full KV and HiSparse against concurrency, and each mode's goodput against "
                 "context length",
                 ""});
  }
  return v;
}

std::string advice_table_text(const std::vector<AdviceTableRow>& rows) {
  std::string o = fmt::format("  {:>18} {:>6} {:>11} {:<21} {:>12} {:>8} {:>9} {:>11}\n", "device_buffer_size", "ratio",
                              "concurrency", "binding limit", "goodput", "vs rec", "TPOT ms", "HBM/req");
  for (const AdviceTableRow& c : rows)
    o += fmt::format("  {:>18} {:>6} {:>11} {:<21} {:>12} {:>8} {:>9.2f} {:>11}{}\n",
                     c.mode == to_string(KvMode::kFull) ? "full KV" : std::to_string(c.device_buffer_size),
                     c.host_to_device_ratio > 0 ? std::to_string(c.host_to_device_ratio) : "-", plan_int(c.concurrency),
                     c.binding_limit, tps(c.goodput_tokens_per_s), ratio_text(c.vs_recommended), c.tpot_ms,
                     plan_bytes(c.hbm_bytes_per_request), c.recommended ? "  <- recommended" : "");
  return o;
}

std::string advice_to_text(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info) {
  const RankLayout lay = rank_layout(s);
  std::string o = fmt::format("scenario {}: {} dp rank{}, top_k {}, TPOT SLO {} ms\n", s.deployment.name, lay.ranks,
                              lay.ranks == 1 ? "" : "s", s.deployment.hisparse.top_k, s.deployment.tpot_slo_ms);
  o += fold_line(fmt::format("miss model: {} — {}", info.miss_label, info.miss_source), info.verbose) + "\n";
  o += fold_line("cost: " + info.cost_label, info.verbose) + "\n";
  if (!advices.empty()) o += "decision rule: " + decision_rule_text(advices.front().robustness.rule) + "\n";
  for (const auto& w : info.warnings) o += "warning: " + w + "\n";
  for (const Advice& a : advices) {
    o += fmt::format("\n== context {} ({})\n", a.mix.label, mix_text(a.mix));
    for (const auto& n : a.notes) o += "note: " + n + "\n";
    const Candidate* rec = a.recommended();
    if (!rec) continue;
    const AdviceRecommendation r = advice_recommendation(a, s);
    o += fmt::format("recommended: {}: {} tok/s at concurrency {} (TPOT {:.2f} ms, bound by {})\n  SGLang flags: {}\n",
                     r.setting, tps(r.goodput_tokens_per_s), plan_int(r.concurrency), r.tpot_ms, r.binding_limit,
                     r.sglang_flags);
    o += "  that figure: " + figure_meaning(*rec) + "\n";
    for (const std::string& l : simulated_lines(a)) o += "  simulated:   " + l + "\n";
    if (const Candidate* u = at(a, a.runner_up))
      o += fmt::format("runner-up:   {}: {} tok/s at concurrency {} ({} of the recommendation; by rule {}: {} against "
                       "{})\n",
                       u->name(), tps(u->goodput), plan_int(u->concurrency),
                       ratio_text(rec->goodput > 0 ? u->goodput / rec->goodput : 0), to_string(a.robustness.rule),
                       rule_score_text(a.robustness, a.runner_up), rule_score_text(a.robustness, a.best));
    if (const std::string why = default_source_text(a); !why.empty()) o += "why:         " + why + "\n";
    o += robustness_text(a);
    o += advice_table_text(advice_table(a));
    if (!a.break_even.by_concurrency.empty()) o += "break-even: " + pays_text(a.break_even, lay.ranks) + "\n";
    if (const std::string d = dynamic_text(a.dynamic, lay.ranks); !d.empty()) o += d + "\n";
    o += mtp_comparison_text(a.mtp);
  }
  return o;
}

namespace {

void break_even_json(JsonWriter& j, const BreakEven& be) {
  j.begin_object(kInline).member("hisparse_setting", be.hisparse_setting);
  j.member("pays_from_batch_per_rank", be.pays_from_batch_per_rank);
  j.key("ratio_at_batch_1").fixed(be.ratio_at_batch_1, 4).key("ratio_at_batch_2").fixed(be.ratio_at_batch_2, 4);
  j.key("best_ratio").fixed(be.best_ratio, 4).member("best_ratio_batch_per_rank", be.best_ratio_batch_per_rank);
  j.member("pays_from_seq_len", be.pays_from_seq_len).member("loses_again_from_seq_len", be.loses_again_from_seq_len);
  j.key("by_concurrency").begin_array(kInline);
  for (const auto& p : be.by_concurrency) {
    j.begin_object(kInline).member("batch_per_rank", p.batch_per_rank).member("concurrency", p.concurrency);
    j.key("full_tokens_per_s").fixed(p.full_tokens_per_s, 3).key("hisparse_tokens_per_s").fixed(p.hisparse_tokens_per_s, 3);
    j.key("ratio").fixed(p.ratio, 4).end_object();
  }
  j.end_array().key("by_seq_len").begin_array(kInline);
  for (const auto& p : be.by_seq_len) {
    j.begin_object(kInline).member("seq_len", p.seq_len).key("full_goodput").fixed(p.full_goodput, 3);
    j.key("hisparse_goodput").fixed(p.hisparse_goodput, 3).member("full_concurrency", p.full_concurrency);
    j.member("hisparse_concurrency", p.hisparse_concurrency).member("full_binding", p.full_binding);
    j.member("hisparse_binding", p.hisparse_binding).key("ratio").fixed(p.ratio, 4).end_object();
  }
  j.end_array().end_object();
}

void dynamic_json(JsonWriter& j, const Advice& a, const Scenario& s) {
  if (a.dynamic.candidate.mode != KvMode::kDynamic) {
    j.null();
    return;
  }
  j.begin_object(kInline).key("candidate");
  candidate_json(j, a.dynamic.candidate, s);
  j.member("resident_per_rank", a.dynamic.resident_per_rank);
  j.key("ratio_to_full_at_batch_1").fixed(a.dynamic.ratio_to_full_at_batch_1, 4);
  j.member("best_from_batch_per_rank", a.dynamic.best_from).member("best_to_batch_per_rank", a.dynamic.best_to);
  j.key("by_concurrency").begin_array(kInline);
  for (const auto& p : a.dynamic.by_concurrency) {
    j.begin_object(kInline).member("batch_per_rank", p.batch_per_rank).member("concurrency", p.concurrency);
    j.key("full_tokens_per_s").fixed(p.full_tokens_per_s, 3).key("hisparse_tokens_per_s").fixed(p.hisparse_tokens_per_s, 3);
    j.key("dynamic_tokens_per_s").fixed(p.dynamic_tokens_per_s, 3).member("swap_per_rank", p.swap_per_rank).end_object();
  }
  j.end_array().end_object();
}

/// One element of `advice`: the head on one line, then each nested block on a line indented 5 spaces.
void advice_json(JsonWriter& j, const Scenario& s, const Advice& a) {
  const Candidate* rec = a.recommended();
  j.begin_object(kInline).member("label", a.mix.label).key("mix").begin_array(kInline);
  for (const auto& c : a.mix.classes)
    j.begin_object(kInline).member("seq_len", c.seq_len).key("weight").fixed(c.weight, 6).end_object();
  j.end_array().key("recommended");
  if (rec) candidate_json(j, *rec, s); else j.null();
  j.member("recommended_index", a.best).member("runner_up", a.runner_up).member("best_full", a.best_full);
  j.member("best_hisparse", a.best_hisparse).member("best_default_source", a.best_default_source).key("sglang_flags");
  if (rec) j.string(sglang_flags(*rec, s)); else j.null();
  j.key("buffer_sweep").begin_array(kInline);
  for (int idx : buffer_sweep(a)) j.number(idx);
  j.end_array().key("notes").begin_array(kInline);
  for (const auto& n : a.notes) j.string(n);
  j.end_array().new_line(5).key("robustness");
  robustness_json(j, a);
  j.new_line(5).key("break_even");
  break_even_json(j, a.break_even);
  j.new_line(5).key("figure");
  if (rec) j.string(figure_meaning(*rec)); else j.null();
  j.key("simulated");
  simulated_json(j, a);
  j.new_line(5).key("dynamic_residency");
  dynamic_json(j, a, s);
  j.new_line(5).key("mtp");
  if (a.mtp.empty()) j.null(); else mtp_comparison_json(j, a.mtp);
  j.new_line(5).key("curves").begin_array(kInline);
  for (const auto& t : a.curves) {
    j.begin_object(kInline).member("setting", t.setting).key("points").begin_array(kInline);
    for (const auto& p : t.points)
      j.begin_array(kInline).number(p.batch).fixed(p.tpot_ms, 4).fixed(p.tokens_per_s, 3).boolean(p.within_slo).end_array();
    j.end_array().end_object();
  }
  j.end_array().new_line(5).key("candidates").begin_array(kInline);
  for (const auto& c : a.candidates) candidate_json(j.new_line(6), c, s);
  j.end_array().end_object();
}

}  // namespace

std::string advice_to_json(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info) {
  const RankLayout lay = rank_layout(s);
  JsonWriter j(2);
  j.begin_object().member("command_line", info.command_line).member("scenario", s.deployment.name);
  j.member("model", s.model.name).member("hardware", s.hardware.name).member("ranks", lay.ranks);
  j.member("top_k", s.deployment.hisparse.top_k).member("tpot_slo_ms", s.deployment.tpot_slo_ms);
  j.key("miss_model").begin_object(kInline).member("label", info.miss_label).member("source", info.miss_source);
  j.end_object().member("cost", info.cost_label).key("warnings").begin_array(kInline);
  for (const auto& w : info.warnings) j.string(w);
  j.end_array().key("advice").begin_array();
  for (const Advice& a : advices) advice_json(j, s, a);
  j.end_array().end_object();
  return j.str() + "\n";
}

std::string advice_to_markdown(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info,
                               const std::vector<AdvicePlot>& plots) {
  return document_to_markdown(build_document(s, advices, info, plots), plots);
}

std::string advice_to_html(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info,
                           const std::vector<AdvicePlot>& plots) {
  std::vector<std::pair<std::string, std::string>> nav;
  for (size_t i = 0; i < advices.size(); ++i) nav.emplace_back(fmt::format("mix-{}", i), advices[i].mix.label);
  nav.emplace_back("method", "Method");
  return document_to_html("HiSparse advice — " + s.deployment.name, nav, build_document(s, advices, info, plots), plots);
}

}  // namespace hisparse::sim
