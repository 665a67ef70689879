// @brief The printed table, JSON, CSV, Markdown and HTML of a fidelity run (see fidelity_report.h).
#include "sim/fidelity/fidelity_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/io/output_file.h"
#include "core/io/read_file.h"
#include "sim/report/plot_script.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

namespace {

namespace fs = std::filesystem;

std::string value_text(FieldMetric m, double v) {
  switch (m) {
    case FieldMetric::kTpotMs: return fmt::format("{:.2f}", v);
    case FieldMetric::kGain: return fmt::format("{:.2f}", v);
    case FieldMetric::kTokensPerS:
    case FieldMetric::kMaxConcurrency: return fmt::format("{:.0f}", v);
  }
  return "?";
}

std::string published_text(const FieldPoint& p) {
  if (p.published) return value_text(p.metric, *p.published);
  return value_text(p.metric, p.published_range->first) + "-" + value_text(p.metric, p.published_range->second);
}

std::string opt_pct(const std::optional<double>& v) { return v ? fmt::format("{:+.1f}", *v) : "-"; }

std::string point_where(const PointResult& p) {
  std::string w = p.point.metric == FieldMetric::kGain ? "gain" : to_string(p.point.mode);
  if (p.point.metric != FieldMetric::kMaxConcurrency) w += fmt::format(" c{}", p.point.concurrency);
  return w + fmt::format(" n{}", p.point.context);
}

std::string summary_line(const FidelityReport& r) {
  const auto [within, total] = count_within_band(r.runs);
  const size_t worse = check_failures(r.runs).size();
  const BandCounts b = count_within_band_by_fit(r.runs);
  return fmt::format("{} of {} points within their band ({} of {} held out, {} of {} fitted: a cost term or an override was read off them); "
                     "{} worse than recorded (or unrecorded)",
                     within, total, b.held_out_within, b.held_out, b.fitted_within, b.fitted, worse);
}

std::string fitted_terms_json(const std::vector<std::string>& terms) {
  std::string o;
  for (const std::string& t : terms) o += (o.empty() ? "" : ", ") + json_quote(t);
  return o;
}

std::string json_opt(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "null"; }

}  // namespace

std::string fidelity_console_text(const FidelityReport& r) {
  // Columns as wide as the longest run name, point id and "at" text, so long names keep the table aligned.
  size_t wr = 3, wp = 5, wa = 2;
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      wr = std::max(wr, run.run.name.size());
      wp = std::max(wp, p.point.id.size());
      wa = std::max(wa, point_where(p).size());
    }
  auto row = [&](const std::string& run, const std::string& point, const std::string& metric, const std::string& at,
                 const std::string& pub, const std::string& plan, const std::string& sim, const std::string& err,
                 const std::string& pvs, const std::string& rec, const std::string& status) {
    return fmt::format("{:<{}}  {:<{}}  {:<15} {:<{}}  {:>11} {:>10} {:>10} {:>8} {:>8} {:>9}  {}\n", run, wr, point, wp,
                       metric, at, wa, pub, plan, sim, err, pvs, rec, status);
  };
  std::string o = row("run", "point", "metric", "at", "published", "plan", "simulate", "error %", "plan-sim",
                      "recorded", "status");
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points)
      o += row(run.run.name, p.point.id, to_string(p.point.metric), point_where(p), published_text(p.point),
               value_text(p.point.metric, p.plan), p.simulate ? value_text(p.point.metric, *p.simulate) : "-",
               fmt::format("{:+.1f}", p.error_pct), opt_pct(p.plan_vs_sim_pct), opt_pct(p.point.recorded_error_pct),
               p.status_text());
  o += "\n";
  for (const RunResult& run : r.runs) {
    o += fmt::format("{} ({}): {}\n  cost model: {}\n  term kinds: {}\n", run.run.name, run.scenario, run.run.title,
                     run.cost_line, term_kinds_summary(run.terms));
    if (!run.simulate_note.empty()) o += "  " + run.simulate_note + "\n";
  }
  o += "\n" + summary_line(r) + "\n";
  return o;
}

std::string fidelity_json(const FidelityReport& r) {
  std::string o = fmt::format("{{\n\"command_line\": {},\n\"seconds\": {:.3f},\n\"record_slack_pct\": {},\n\"runs\": [\n",
                              json_quote(r.command_line), r.seconds, kRecordSlackPct);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunResult& run = r.runs[i];
    const FieldRun& f = run.run;
    o += fmt::format("{{\"name\": {}, \"title\": {}, \"file\": {}, \"deployment\": {},\n \"source\": {{\"publication\": "
                     "{}, \"url\": {}, \"date\": {}, \"quote\": {}}},\n \"workload\": {{\"input_tokens\": {}, "
                     "\"output_tokens\": {}, \"closed_loop\": {}}},\n",
                     json_quote(f.name), json_quote(f.title), json_quote(f.file), json_quote(run.scenario),
                     json_quote(f.source.publication), json_quote(f.source.url), json_quote(f.source.date),
                     json_quote(f.source.quote), f.input_tokens, f.output_tokens, f.closed_loop ? "true" : "false");
    o += " \"assumed\": [";
    for (size_t k = 0; k < f.assumed.size(); ++k) o += (k ? ", " : "") + json_quote(f.assumed[k]);
    o += fmt::format("],\n \"cost_line\": {}, \"cost_terms_file\": {}, \"miss_model\": {}, \"simulate\": {},\n "
                     "\"terms\": [",
                     json_quote(run.cost_line), json_quote(run.cost_terms_file), json_quote(run.miss_label),
                     json_quote(run.simulate_note));
    for (size_t k = 0; k < run.terms.size(); ++k) {
      const TermSource& t = run.terms[k];
      o += fmt::format("{}\n  {{\"term\": {}, \"value\": {}, \"kind\": {}, \"source\": {}}}", k ? "," : "",
                       json_quote(t.term), json_quote(t.value), json_quote(t.kind), json_quote(t.source));
    }
    o += "],\n \"points\": [";
    for (size_t k = 0; k < run.points.size(); ++k) {
      const PointResult& p = run.points[k];
      const FieldPoint& q = p.point;
      o += fmt::format(
          "{}\n  {{\"id\": {}, \"metric\": {}, \"mode\": {}, \"concurrency\": {}, \"context\": {}, \"published\": {}, "
          "\"published_range\": {}, \"plan\": {:.6g}, \"simulate\": {}, \"error_pct\": {:.4g}, \"plan_vs_sim_pct\": "
          "{}, \"tolerance_pct\": {}, \"recorded_error_pct\": {}, \"status\": {}, \"fitted_by\": [{}], \"label\": {}, "
          "\"note\": {}}}",
          k ? "," : "", json_quote(q.id), json_quote(to_string(q.metric)),
          json_quote(q.metric == FieldMetric::kGain ? "hisparse/full" : to_string(q.mode)), q.concurrency, q.context,
          json_opt(q.published),
          q.published_range ? fmt::format("[{:.6g}, {:.6g}]", q.published_range->first, q.published_range->second)
                            : "null",
          p.plan, json_opt(p.simulate), p.error_pct, json_opt(p.plan_vs_sim_pct), q.tolerance_pct,
          json_opt(q.recorded_error_pct), json_quote(to_string(p.status)), fitted_terms_json(p.fitted_by), json_quote(p.label), json_quote(p.note));
    }
    o += fmt::format("]}}{}\n", i + 1 < r.runs.size() ? "," : "");
  }
  const auto [within, total] = count_within_band(r.runs);
  o += fmt::format("],\n\"within_band\": {},\n\"points\": {},\n\"worse_than_recorded\": {}\n}}\n", within, total,
                   check_failures(r.runs).size());
  return o;
}

std::string fidelity_csv(const FidelityReport& r) {
  auto q = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
  std::string o = "run,point,metric,mode,concurrency,context,published,published_low,published_high,plan,simulate,"
                  "error_pct,plan_vs_sim_pct,tolerance_pct,recorded_error_pct,status\n";
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      const FieldPoint& f = p.point;
      o += fmt::format("{},{},{},{},{},{},{},{},{},{:.6g},{},{:.4g},{},{},{},{}\n", q(run.run.name), q(f.id),
                       to_string(f.metric), f.metric == FieldMetric::kGain ? "hisparse/full" : to_string(f.mode),
                       f.concurrency, f.context, num(f.published),
                       f.published_range ? fmt::format("{:.6g}", f.published_range->first) : "",
                       f.published_range ? fmt::format("{:.6g}", f.published_range->second) : "", p.plan,
                       num(p.simulate), p.error_pct, num(p.plan_vs_sim_pct), f.tolerance_pct,
                       num(f.recorded_error_pct), p.status_text());
    }
  return o;
}

namespace {

std::vector<DocBlock> fidelity_document(const FidelityReport& r) {
  std::vector<DocBlock> doc;
  auto heading = [&doc](const std::string& text, const std::string& id, int level = 2) {
    DocBlock b;
    b.kind = DocBlock::kHeading;
    b.text = text;
    b.id = id;
    b.level = level;
    doc.push_back(b);
  };
  auto para = [&doc](const std::string& text) {
    DocBlock b;
    b.text = text;
    doc.push_back(b);
  };
  heading("Does it match the field?", "summary", 1);
  para(summary_line(r) + ". Error = (tool − published) / published × 100 of the plan's closed-form value (0 inside a "
       "published range); `--check` fails a point whose |error| exceeds |recorded| + " +
       fmt::format("{}", kRecordSlackPct) + " points, or that has no recorded error. Every tool figure is modelled "
       "from the cost terms each run lists below (measured / calibrated / modelled / assumed as the cost-model file "
       "labels them).");
  if (!r.command_line.empty()) para("Command: `" + r.command_line + "`");
  DocBlock t;
  t.kind = DocBlock::kTable;
  t.headers = {"run", "point", "metric", "at", "published", "plan", "simulate", "error %", "plan vs sim %", "tolerance",
               "recorded", "status"};
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      std::vector<DocCell> row = {{run.run.name}, {p.point.id}, {to_string(p.point.metric)}, {point_where(p)},
                                  {published_text(p.point)}, {value_text(p.point.metric, p.plan)},
                                  {p.simulate ? value_text(p.point.metric, *p.simulate) : "-"},
                                  {fmt::format("{:+.1f}", p.error_pct)}, {opt_pct(p.plan_vs_sim_pct)},
                                  {fmt::format("±{}", p.point.tolerance_pct)}, {opt_pct(p.point.recorded_error_pct)},
                                  {p.status_text()}};
      row.back().strong = p.status == PointStatus::kWorseThanRecorded;
      t.rows.push_back(row);
    }
  doc.push_back(t);
  DocBlock plot;
  plot.kind = DocBlock::kPlot;
  plot.plot = 0;
  plot.text = "Published vs tool per point, and each error with its ± band";
  doc.push_back(plot);
  heading("Runs", "runs");
  for (const RunResult& run : r.runs) {
    const FieldRun& f = run.run;
    heading(f.name + ": " + f.title, "run-" + f.name, 3);
    DocBlock l;
    l.kind = DocBlock::kList;
    l.items.push_back(fmt::format("source: {} ({}){}: \"{}\"", f.source.publication, f.source.date,
                                  f.source.url.empty() ? "" : ", " + f.source.url, f.source.quote));
    l.items.push_back(fmt::format("deployment: {} (`{}`); workload: {} in / {} out{}", run.scenario, f.deployment,
                                  f.input_tokens, f.output_tokens, f.closed_loop ? ", closed loop" : ""));
    l.items.push_back("cost model: " + run.cost_line);
    l.items.push_back(fmt::format("cost terms file: {}; term kinds: {}",
                                  run.cost_terms_file.empty() ? "built-in defaults" : run.cost_terms_file,
                                  term_kinds_summary(run.terms)));
    if (!run.miss_label.empty()) l.items.push_back("miss fraction: " + run.miss_label);
    if (!run.simulate_note.empty()) l.items.push_back(run.simulate_note);
    for (const std::string& a : f.assumed) l.items.push_back("assumed: " + a);
    for (const PointResult& p : run.points)
      l.items.push_back(fmt::format("{}: {}{}", p.point.id, p.label, p.note.empty() ? "" : "; " + p.note));
    doc.push_back(l);
  }
  return doc;
}

DocPlot fidelity_plot(const std::string& png) { return DocPlot{"fidelity.png", "Published vs tool", png}; }

}  // namespace

std::string fidelity_markdown(const FidelityReport& r, bool with_plot_png) {
  return document_to_markdown(fidelity_document(r), {fidelity_plot(with_plot_png ? "written" : "")});
}

std::string fidelity_html(const FidelityReport& r, const std::string& plot_png) {
  return document_to_html("hisparse fidelity", {{"summary", "Summary"}, {"runs", "Runs"}}, fidelity_document(r),
                          {fidelity_plot(plot_png)});
}

void write_fidelity_files(const FidelityReport& r, const std::string& out_dir, bool plots) {
  fs::create_directories(out_dir);
  const fs::path dir(out_dir);
  write_file_atomically((dir / "fidelity.json").string(), fidelity_json(r));
  write_file_atomically((dir / "fidelity.csv").string(), fidelity_csv(r));
  std::string png;
  if (plots) {
    run_plot_script("plot_fidelity.py", out_dir, "fidelity");
    png = read_file_or_empty((dir / "fidelity.png").string());
  } else {
    fs::remove(dir / "fidelity.png");  // a stale plot must not be taken for this run's
  }
  write_file_atomically((dir / "fidelity.md").string(), fidelity_markdown(r, !png.empty()));
  write_file_atomically((dir / "fidelity.html").string(), fidelity_html(r, png));
}

}  // namespace hisparse::sim
