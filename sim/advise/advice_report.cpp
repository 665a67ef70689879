// @brief The advice as terminal text, JSON, Markdown and HTML (see advice_report.h). Numbers are printed with
// fixed precision so the files are byte-identical from run to run.
#include "sim/advise/advice_report.h"
#include "sim/advise/robustness_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/io/output_file.h"
#include "sim/plan/plan_report.h"
#include "sim/report/fold_line.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

namespace {

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

std::string simulated_json(const Advice& a) {
  std::string runs;
  for (const SimulatedRun& r : a.simulated)
    runs += fmt::format("{}{{\"setting\": {}, \"clients\": {}, \"requests\": {}, \"tokens_per_s\": {:.3f}, "
                        "\"steady_tokens_per_s\": {:.3f}, \"steady_batch_per_rank\": {:.3f}, \"tpot_p50_ms\": {:.4f}, "
                        "\"advised_per_rank\": {}, \"advised_goodput_tokens_per_s\": {:.3f}, \"command\": {}}}",
                        runs.empty() ? "" : ", ", json_quote(r.setting), r.clients, r.requests, r.tokens_per_s,
                        r.steady_tokens_per_s, r.steady_batch_per_rank, r.tpot_p50_ms, r.advised_per_rank,
                        r.advised_goodput, json_quote(r.command));
  return fmt::format("{{\"note\": {}, \"runs\": [{}]}}", json_quote(a.simulated_note), runs);
}

std::string candidate_json(const Candidate& c, const Scenario& s) {
  std::string limits;
  for (const auto& l : c.limits)
    limits += fmt::format("{}{{\"key\": {}, \"per_rank\": {}, \"formula\": {}}}", limits.empty() ? "" : ", ", json_quote(l.key),
                          l.per_rank, json_quote(l.formula));
  return fmt::format(
      "{{\"setting\": {}, \"mode\": \"{}\", \"device_buffer_size\": {}, \"host_to_device_ratio\": {}, \"per_rank\": {}, "
      "\"concurrency\": {}, \"max_running_requests\": {}, \"binding_limit\": {}, \"goodput_tokens_per_s\": {:.3f}, "
      "\"tpot_ms\": {:.4f}, \"hbm_bytes_per_request\": {:.0f}, \"host_bytes_per_request\": {:.0f}, "
      "\"host_pool_bytes_per_node\": {:.0f}, \"pool_tokens\": {}, \"logical_pool_tokens\": {}, \"host_pool_tokens\": {}, "
      "\"misses_per_request_step\": {:.3f}, \"h2d_bytes_per_step\": {:.0f}, \"pareto_tpot\": {}, \"pareto_hbm\": {}, "
      "\"sglang_flags\": {}, \"limits\": [{}]}}",
      json_quote(c.name()), to_string(c.mode), c.buffer_size, c.ratio, c.per_rank, c.concurrency,
      c.per_rank * rank_layout(s).ranks, json_quote(c.binding_limit), c.goodput, c.tpot_ms, c.hbm_per_request,
      c.host_per_request, c.host_pool_bytes_per_node, c.pool_tokens, c.logical_pool_tokens, c.host_pool_tokens,
      c.misses_per_request_step, c.h2d_bytes_per_step, c.pareto_tpot ? "true" : "false", c.pareto_hbm ? "true" : "false",
      json_quote(sglang_flags(c, s)), limits);
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
    o += fmt::format("recommended: {}: {} tok/s at concurrency {} (TPOT {:.2f} ms, bound by {})\n  SGLang flags: {}\n",
                     rec->name(), tps(rec->goodput), plan_int(rec->concurrency), rec->tpot_ms, rec->binding_limit,
                     sglang_flags(*rec, s));
    o += "  that figure: " + figure_meaning(*rec) + "\n";
    for (const std::string& l : simulated_lines(a)) o += "  simulated:   " + l + "\n";
    if (const Candidate* r = at(a, a.runner_up))
      o += fmt::format("runner-up:   {}: {} tok/s at concurrency {} ({} of the recommendation; by rule {}: {} against "
                       "{})\n",
                       r->name(), tps(r->goodput), plan_int(r->concurrency),
                       ratio_text(rec->goodput > 0 ? r->goodput / rec->goodput : 0), to_string(a.robustness.rule),
                       rule_score_text(a.robustness, a.runner_up), rule_score_text(a.robustness, a.best));
    if (const std::string why = default_source_text(a); !why.empty()) o += "why:         " + why + "\n";
    o += robustness_text(a);
    o += fmt::format("  {:>18} {:>6} {:>11} {:<21} {:>12} {:>8} {:>9} {:>11}\n", "device_buffer_size", "ratio",
                     "concurrency", "binding limit", "goodput", "vs rec", "TPOT ms", "HBM/req");
    for (int idx : buffer_sweep(a)) {
      const Candidate& c = a.candidates[static_cast<size_t>(idx)];
      o += fmt::format("  {:>18} {:>6} {:>11} {:<21} {:>12} {:>8} {:>9.2f} {:>11}{}\n",
                       c.mode == KvMode::kFull ? "full KV" : std::to_string(c.buffer_size),
                       c.ratio > 0 ? std::to_string(c.ratio) : "-", plan_int(c.concurrency), c.binding_limit, tps(c.goodput),
                       ratio_text(rec->goodput > 0 ? c.goodput / rec->goodput : 0), c.tpot_ms, plan_bytes(c.hbm_per_request),
                       idx == a.best ? "  <- recommended" : "");
    }
    if (!a.break_even.by_concurrency.empty()) o += "break-even: " + pays_text(a.break_even, lay.ranks) + "\n";
    if (const std::string d = dynamic_text(a.dynamic, lay.ranks); !d.empty()) o += d + "\n";
    o += mtp_comparison_text(a.mtp);
  }
  return o;
}

std::string advice_to_json(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info) {
  const RankLayout lay = rank_layout(s);
  std::string o = "{\n";
  o += fmt::format("  \"command_line\": {},\n  \"scenario\": {},\n  \"model\": {},\n  \"hardware\": {},\n  \"ranks\": {},\n"
                   "  \"top_k\": {},\n  \"tpot_slo_ms\": {},\n  \"miss_model\": {{\"label\": {}, \"source\": {}}},\n"
                   "  \"cost\": {},\n",
                   json_quote(info.command_line), json_quote(s.deployment.name), json_quote(s.model.name),
                   json_quote(s.hardware.name), lay.ranks, s.deployment.hisparse.top_k, s.deployment.tpot_slo_ms,
                   json_quote(info.miss_label), json_quote(info.miss_source), json_quote(info.cost_label));
  std::string warnings;
  for (const auto& w : info.warnings) warnings += (warnings.empty() ? "" : ", ") + json_quote(w);
  o += "  \"warnings\": [" + warnings + "],\n  \"advice\": [\n";
  for (size_t i = 0; i < advices.size(); ++i) {
    const Advice& a = advices[i];
    std::string classes, cands, sweep, conc, lens, curves, notes;
    for (const auto& c : a.mix.classes)
      classes += fmt::format("{}{{\"seq_len\": {}, \"weight\": {:.6f}}}", classes.empty() ? "" : ", ", c.seq_len, c.weight);
    for (const auto& c : a.candidates) cands += (cands.empty() ? "\n      " : ",\n      ") + candidate_json(c, s);
    for (int idx : buffer_sweep(a)) sweep += fmt::format("{}{}", sweep.empty() ? "" : ", ", idx);
    const BreakEven& be = a.break_even;
    for (const auto& p : be.by_concurrency)
      conc += fmt::format("{}{{\"batch_per_rank\": {}, \"concurrency\": {}, \"full_tokens_per_s\": {:.3f}, "
                          "\"hisparse_tokens_per_s\": {:.3f}, \"ratio\": {:.4f}}}",
                          conc.empty() ? "" : ", ", p.batch_per_rank, p.concurrency, p.full_tokens_per_s,
                          p.hisparse_tokens_per_s, p.ratio);
    for (const auto& p : be.by_seq_len)
      lens += fmt::format("{}{{\"seq_len\": {}, \"full_goodput\": {:.3f}, \"hisparse_goodput\": {:.3f}, "
                          "\"full_concurrency\": {}, \"hisparse_concurrency\": {}, \"full_binding\": {}, "
                          "\"hisparse_binding\": {}, \"ratio\": {:.4f}}}",
                          lens.empty() ? "" : ", ", p.seq_len, p.full_goodput, p.hisparse_goodput, p.full_concurrency,
                          p.hisparse_concurrency, json_quote(p.full_binding), json_quote(p.hisparse_binding), p.ratio);
    for (const auto& t : a.curves) {
      std::string pts;
      for (const auto& p : t.points)
        pts += fmt::format("{}[{}, {:.4f}, {:.3f}, {}]", pts.empty() ? "" : ", ", p.batch, p.tpot_ms, p.tokens_per_s,
                           p.within_slo ? "true" : "false");
      curves += fmt::format("{}{{\"setting\": {}, \"points\": [{}]}}", curves.empty() ? "" : ", ", json_quote(t.setting), pts);
    }
    for (const auto& n : a.notes) notes += (notes.empty() ? "" : ", ") + json_quote(n);
    std::string dyn = "null";
    if (a.dynamic.candidate.mode == KvMode::kDynamic) {
      std::string pts;
      for (const auto& p : a.dynamic.by_concurrency)
        pts += fmt::format("{}{{\"batch_per_rank\": {}, \"concurrency\": {}, \"full_tokens_per_s\": {:.3f}, "
                           "\"hisparse_tokens_per_s\": {:.3f}, \"dynamic_tokens_per_s\": {:.3f}, \"swap_per_rank\": {}}}",
                           pts.empty() ? "" : ", ", p.batch_per_rank, p.concurrency, p.full_tokens_per_s,
                           p.hisparse_tokens_per_s, p.dynamic_tokens_per_s, p.swap_per_rank);
      dyn = fmt::format("{{\"candidate\": {}, \"resident_per_rank\": {}, \"ratio_to_full_at_batch_1\": {:.4f}, "
                        "\"best_from_batch_per_rank\": {}, \"best_to_batch_per_rank\": {}, \"by_concurrency\": [{}]}}",
                        candidate_json(a.dynamic.candidate, s), a.dynamic.resident_per_rank,
                        a.dynamic.ratio_to_full_at_batch_1, a.dynamic.best_from, a.dynamic.best_to, pts);
    }
    o += fmt::format(
        "    {{\"label\": {}, \"mix\": [{}], \"recommended\": {}, \"recommended_index\": {}, \"runner_up\": {}, "
        "\"best_full\": {}, \"best_hisparse\": {}, \"best_default_source\": {}, \"sglang_flags\": {}, \"buffer_sweep\": [{}], \"notes\": [{}],\n"
        "     \"robustness\": {},\n"
        "     \"break_even\": {{\"hisparse_setting\": {}, \"pays_from_batch_per_rank\": {}, \"ratio_at_batch_1\": {:.4f}, "
        "\"ratio_at_batch_2\": {:.4f}, \"best_ratio\": {:.4f}, \"best_ratio_batch_per_rank\": {}, \"pays_from_seq_len\": {}, "
        "\"loses_again_from_seq_len\": {}, \"by_concurrency\": [{}], \"by_seq_len\": [{}]}},\n"
        "     \"figure\": {}, \"simulated\": {},\n"
        "     \"dynamic_residency\": {},\n     \"mtp\": {},\n"
        "     \"curves\": [{}],\n     \"candidates\": [{}]}}{}\n",
        json_quote(a.mix.label), classes, a.recommended() ? candidate_json(*a.recommended(), s) : "null", a.best,
        a.runner_up, a.best_full, a.best_hisparse, a.best_default_source,
        a.recommended() ? json_quote(sglang_flags(*a.recommended(), s)) : "null", sweep, notes, robustness_json(a),
        json_quote(be.hisparse_setting), be.pays_from_batch_per_rank, be.ratio_at_batch_1, be.ratio_at_batch_2,
        be.best_ratio, be.best_ratio_batch_per_rank, be.pays_from_seq_len, be.loses_again_from_seq_len, conc, lens,
        a.recommended() ? json_quote(figure_meaning(*a.recommended())) : "null", simulated_json(a), dyn,
        a.mtp.empty() ? std::string("null") : mtp_comparison_json(a.mtp), curves,
        cands, i + 1 < advices.size() ? "," : "");
  }
  return o + "  ]\n}\n";
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
