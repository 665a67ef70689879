// @brief The printed table, JSON, CSV, Markdown and HTML of a fidelity run (see fidelity_report.h).
#include "sim/fidelity/fidelity_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/io/json_writer.h"
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
    case FieldMetric::kMaxConcurrency:
    case FieldMetric::kPoolTokens: return fmt::format("{:.0f}", v);
  }
  return "?";
}

std::string published_text(const FieldPoint& p) {
  if (p.published) return value_text(p.metric, *p.published);
  return value_text(p.metric, p.published_range->first) + "-" + value_text(p.metric, p.published_range->second);
}

std::string opt_pct(const std::optional<double>& v) { return v ? fmt::format("{:+.1f}", *v) : "-"; }

std::string point_where(const FieldPoint& p) {
  std::string w = p.metric == FieldMetric::kGain ? "gain" : to_string(p.mode);
  if (!is_capacity_metric(p.metric)) w += fmt::format(" c{}", p.concurrency);
  return w + fmt::format(" n{}", p.context);
}

std::string point_where(const PointResult& p) { return point_where(p.point); }

std::string summary_line(const FidelityReport& r) {
  const size_t worse = check_failures(r.runs).size();
  const BandCounts b = count_within_band_by_fit(r.runs);
  return fmt::format("{} held out, scored by their leave-one-out error: {} within band, {} expected misses (with "
                     "their reason), {} out of band; {} fitted (role: fitted: the figure set a deployment field); {} "
                     "worse than recorded (or unrecorded)",
                     b.held_out, b.held_out_within, b.expected_miss, b.out_of_band, b.fitted, worse) +
         (r.pending.empty() ? "" : fmt::format("; {} pending (declared, not scored: each listed with its reason)",
                                               r.pending.size()));
}

/// The points declared but not scored yet, one line each with the reason.
std::string pending_text(const FidelityReport& r) {
  std::string o;
  for (const PendingPoint& p : r.pending)
    o += fmt::format("  {}/{} ({} {}, published {}): NOT SCORED: {}\n", p.run, p.point.id, to_string(p.point.metric),
                     point_where(p.point), published_text(p.point), p.point.pending);
  return o.empty() ? o : "pending points (declared in their field files, not scored until the tool can):\n" + o;
}

/// Each DP-attention run's step by term, as lines.
std::string breakdown_text(const FidelityReport& r) {
  std::string o;
  for (const RunResult& run : r.runs)
    for (const StepBreakdown& b : run.step_breakdowns())
      for (const std::string& line : breakdown_lines(b)) o += "  " + (line.rfind("  ", 0) == 0 ? "" : run.run.name + " ") + line + "\n";
  return o.empty() ? o
                   : "step breakdown of each DP-attention run (the busiest rank's step, every term labelled measured "
                     "with its op table, or modelled / assumed):\n" + o;
}

/// A scored error with its unit: % of the figure, or pp of overhead for a same-batch gain.
std::string error_text(const PointResult& p, double e) {
  return fmt::format("{:+.1f}{}", e, p.scoring == Scoring::kOverheadPp ? "pp" : "");
}

std::string band_text(const PointResult& p) {
  return fmt::format("±{:g}{}", p.band, p.scoring == Scoring::kOverheadPp ? "pp" : "%");
}

std::string verdict_text(const PointResult& p) {
  std::string v = to_string(p.verdict());
  if (p.status == PointStatus::kWorseThanRecorded) v += ", worse-than-recorded";
  return v;
}

/// The fits, the leave-one-out values, the overhead-scored ratios, the expected misses and the setup ranges, as
/// lines under the table.
std::string detail_text(const FidelityReport& r) {
  std::string o;
  if (!r.fits.empty()) {
    o += fmt::format("fits ({}; bisection for the root of the named points' mean signed error, a value already at "
                     "the minimum within 0.05 kept):\n", r.fits_file);
    for (const FitResult& f : r.fits) {
      if (!f.applies) {
        o += fmt::format("  {}: not refitted (its points' runs are not all loaded)\n", f.fit.label());
        continue;
      }
      o += fmt::format("  {} [{}] from {}: file {} (mean error {:+.2f}), refit {} (mean error {:+.2f}, {} evaluations"
                       "{}{}); without its points: {} ({})\n",
                       f.fit.parameter, to_string(f.fit.kind), fmt::join(f.fit.points, ", "),
                       fitted_value_text(f.fit, f.file_value), f.file_error, fitted_value_text(f.fit, f.refit),
                       f.refit_error, f.evaluations, f.at_bound ? ", at the bound of its range" : "",
                       f.kept ? ", the file's value kept" : "", fitted_value_text(f.fit, f.fit.prior),
                       f.fit.prior_reason);
    }
  }
  std::string loo, overhead, misses, ranges;
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      const std::string id = run.run.name + "/" + p.point.id;
      if (p.loo_error_pct)
        loo += fmt::format("  {}: in-fit {}, LOO {} with {}\n", id, error_text(p, p.error_pct),
                           error_text(p, *p.loo_error_pct), p.loo_note);
      if (p.scoring == Scoring::kOverheadPp) {
        const double pub = p.point.published ? *p.point.published : p.point.published_range->first;
        overhead += fmt::format("  {}: both modes at the offered batch, so scored on the overhead: published {:.3g} = "
                                "{:.1f} % overhead, tool {:.3g} = {:.1f} %\n",
                                id, pub, (1 - pub) * 100, p.plan, (1 - p.plan) * 100);
      }
      if (p.point.role_fitted) misses += fmt::format("  {}: fitted: {}\n", id, p.point.role_reason);
      if (!p.point.expected_miss.empty())
        misses += fmt::format("  {}: expected miss ({}): {}\n", id, error_text(p, p.scored_error()),
                              p.point.expected_miss);
      if (p.range)
        ranges += fmt::format("  {}: over {} ({} setups): tool {}-{}, published {} {}; central (the file's settings) "
                              "{}, error {}\n",
                              id, fmt::join(p.range->items, " x "), p.range->combos,
                              value_text(p.point.metric, p.range->min), value_text(p.point.metric, p.range->max),
                              published_text(p.point), p.range->covers ? "inside" : "OUTSIDE",
                              value_text(p.point.metric, p.tool()), error_text(p, p.error_pct));
    }
  if (!loo.empty()) o += "leave-one-out (each point a fit uses, scored with the fit redone without it):\n" + loo;
  if (!overhead.empty()) o += "ratios scored on their overhead (band ±3 pp):\n" + overhead;
  if (!misses.empty()) o += "points not held out, and held-out points outside their band with the measured reason:\n" + misses;
  if (!ranges.empty()) o += "setup ranges (plausible: sets the publication leaves open; plan values, simulate's where a run is scored "
                                   "on simulate):\n" + ranges;
  o += pending_text(r);
  return o;
}

constexpr JsonWriter::Layout kInline = JsonWriter::Layout::kInline;

void strings_json(JsonWriter& j, const std::vector<std::string>& terms) {
  j.begin_array(kInline);
  for (const std::string& t : terms) j.string(t);
  j.end_array();
}

/// A figure at six significant digits, or null when absent.
void opt_json(JsonWriter& j, const std::optional<double>& v) {
  if (v) j.general(*v, 6); else j.null();
}

void point_json(JsonWriter& j, const PointResult& p) {
  const FieldPoint& q = p.point;
  j.begin_object(kInline).member("id", q.id).member("metric", to_string(q.metric));
  j.member("mode", q.metric == FieldMetric::kGain ? "hisparse/full" : to_string(q.mode));
  j.member("concurrency", q.concurrency).member("context", q.context).key("published");
  opt_json(j, q.published);
  j.key("published_range");
  if (q.published_range)
    j.begin_array(kInline).general(q.published_range->first, 6).general(q.published_range->second, 6).end_array();
  else
    j.null();
  j.key("plan").general(p.plan, 6).key("simulate");
  opt_json(j, p.simulate);
  j.key("error_pct").general(p.error_pct, 4).key("plan_vs_sim_pct");
  opt_json(j, p.plan_vs_sim_pct);
  j.member("tolerance_pct", q.tolerance_pct).key("recorded_error_pct");
  opt_json(j, q.recorded_error_pct);
  j.member("status", to_string(p.status)).key("fitted_by");
  strings_json(j, p.fitted_by);
  j.member("label", p.label).member("note", p.note);
  j.member("scoring", p.scoring == Scoring::kOverheadPp ? "overhead_pp" : "relative_pct").member("band", p.band);
  j.key("loo_error");
  opt_json(j, p.loo_error_pct);
  j.key("scored_error").general(p.scored_error(), 4).member("loo_note", p.loo_note);
  j.member("verdict", to_string(p.verdict())).member("role", q.role_fitted ? "fitted" : "held_out");
  j.member("expected_miss", q.expected_miss).key("range");
  if (p.range)
    j.begin_object(kInline).key("min").general(p.range->min, 6).key("max").general(p.range->max, 6)
        .member("combos", p.range->combos).member("covers", p.range->covers).end_object();
  else
    j.null();
  j.end_object();
}

/// One element of `runs`: the head on its line, then each block on a line indented 1, its elements 2.
void run_json(JsonWriter& j, const RunResult& run) {
  const FieldRun& f = run.run;
  j.begin_object(kInline).member("name", f.name).member("title", f.title).member("file", f.file);
  j.member("deployment", run.scenario).new_line(1).key("source").begin_object(kInline);
  j.member("publication", f.source.publication).member("url", f.source.url).member("date", f.source.date);
  j.member("quote", f.source.quote).end_object().new_line(1).key("workload").begin_object(kInline);
  j.member("input_tokens", f.input_tokens).member("output_tokens", f.output_tokens);
  j.member("closed_loop", f.closed_loop).end_object().new_line(1).key("assumed");
  strings_json(j, f.assumed);
  j.new_line(1).member("cost_line", run.cost_line).member("cost_terms_file", run.cost_terms_file);
  j.member("miss_model", run.miss_label).member("simulate", run.simulate_note);
  j.new_line(1).key("terms").begin_array(kInline);
  for (const TermSource& t : run.terms)
    j.new_line(2).begin_object(kInline).member("term", t.term).member("value", t.value).member("kind", t.kind)
        .member("source", t.source).end_object();
  j.end_array().new_line(1).key("points").begin_array(kInline);
  for (const PointResult& p : run.points) point_json(j.new_line(2), p);
  j.end_array().new_line(1).key("breakdowns").begin_array(kInline);
  for (const StepBreakdown& b : run.step_breakdowns()) breakdown_json(j.new_line(2), b);
  j.end_array().end_object();
}

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
                 const std::string& loo, const std::string& band, const std::string& pvs, const std::string& rec,
                 const std::string& verdict) {
    return fmt::format("{:<{}}  {:<{}}  {:<15} {:<{}}  {:>11} {:>10} {:>10} {:>8} {:>8} {:>6} {:>8} {:>9}  {}\n", run,
                       wr, point, wp, metric, at, wa, pub, plan, sim, err, loo, band, pvs, rec, verdict);
  };
  std::string o = row("run", "point", "metric", "at", "published", "plan", "simulate", "in-fit", "LOO", "band",
                      "plan-sim", "recorded", "verdict");
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points)
      o += row(run.run.name, p.point.id, to_string(p.point.metric), point_where(p), published_text(p.point),
               value_text(p.point.metric, p.plan), p.simulate ? value_text(p.point.metric, *p.simulate) : "-",
               error_text(p, p.error_pct), error_text(p, p.scored_error()), band_text(p), opt_pct(p.plan_vs_sim_pct),
               opt_pct(p.point.recorded_error_pct), verdict_text(p));
  o += "\n" + detail_text(r) + "\n";
  if (const std::string b = breakdown_text(r); !b.empty()) o += b + "\n";
  for (const RunResult& run : r.runs) {
    o += fmt::format("{} ({}): {}\n  cost model: {}\n  term kinds: {}\n", run.run.name, run.scenario, run.run.title,
                     run.cost_line, term_kinds_summary(run.terms));
    if (!run.simulate_note.empty()) o += "  " + run.simulate_note + "\n";
  }
  o += "\n" + summary_line(r) + "\n";
  return o;
}

std::string fidelity_json(const FidelityReport& r) {
  JsonWriter j(/*indent=*/0);
  j.begin_object().member("command_line", r.command_line).key("seconds").fixed(r.seconds, 3);
  j.member("record_slack_pct", kRecordSlackPct).key("runs").begin_array();
  for (const RunResult& run : r.runs) run_json(j, run);
  j.end_array();
  const auto [within, total] = count_within_band(r.runs);
  j.key("fits").begin_array(kInline);
  for (const FitResult& f : r.fits) {
    j.new_line(1).begin_object(kInline).member("parameter", f.fit.parameter).member("kind", to_string(f.fit.kind));
    j.member("file", f.fit.file).key("points");
    strings_json(j, f.fit.points);
    j.key("file_value");
    opt_json(j, f.file_value);
    j.key("refit").general(f.refit, 6).key("file_error").general(f.file_error, 4);
    j.key("refit_error").general(f.refit_error, 4).member("evaluations", f.evaluations).member("kept", f.kept);
    j.member("applies", f.applies).key("prior");
    opt_json(j, f.fit.prior);
    j.end_object();
  }
  j.end_array().key("pending").begin_array(kInline);
  for (const PendingPoint& p : r.pending)
    j.new_line(1).begin_object(kInline).member("run", p.run).member("file", p.file).member("id", p.point.id)
        .member("metric", to_string(p.point.metric)).member("at", point_where(p.point))
        .member("published", published_text(p.point)).member("reason", p.point.pending).end_object();
  j.end_array();
  const BandCounts b = count_within_band_by_fit(r.runs);
  j.member("within_band", within).member("points", total).member("held_out", b.held_out);
  j.member("held_out_within_band", b.held_out_within).member("expected_misses", b.expected_miss);
  j.member("out_of_band", b.out_of_band).member("fitted", b.fitted);
  j.member("worse_than_recorded", static_cast<uint64_t>(check_failures(r.runs).size())).end_object();
  return j.str() + "\n";
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
                  "error_pct,plan_vs_sim_pct,tolerance_pct,recorded_error_pct,status,scoring,band,loo_error,verdict\n";
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      const FieldPoint& f = p.point;
      o += fmt::format("{},{},{},{},{},{},{},{},{},{:.6g},{},{:.4g},{},{},{},{},{},{:g},{},{}\n", q(run.run.name), q(f.id),
                       to_string(f.metric), f.metric == FieldMetric::kGain ? "hisparse/full" : to_string(f.mode),
                       f.concurrency, f.context, num(f.published),
                       f.published_range ? fmt::format("{:.6g}", f.published_range->first) : "",
                       f.published_range ? fmt::format("{:.6g}", f.published_range->second) : "", p.plan,
                       num(p.simulate), p.error_pct, num(p.plan_vs_sim_pct), f.tolerance_pct,
                       num(f.recorded_error_pct), p.status_text(),
                       p.scoring == Scoring::kOverheadPp ? "overhead_pp" : "relative_pct", p.band,
                       num(p.loo_error_pct), to_string(p.verdict()));
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
       "published range; a same-batch gain in percentage points of the overhead 1 − r it implies); in-fit with the "
       "values the files hold, LOO with the suite's fits redone without the point; bands apply to LOO; `--check` fails "
       "a point whose |error| exceeds |recorded| + " +
       fmt::format("{}", kRecordSlackPct) + " points, or that has no recorded error. Every tool figure is modelled "
       "from the cost terms each run lists below (measured / calibrated / modelled / assumed as the cost-model file "
       "labels them).");
  if (!r.command_line.empty()) para("Command: `" + r.command_line + "`");
  DocBlock t;
  t.kind = DocBlock::kTable;
  t.headers = {"run", "point", "metric", "at", "published", "plan", "simulate", "in-fit", "LOO", "plan vs sim %",
               "band", "recorded", "verdict"};
  for (const RunResult& run : r.runs)
    for (const PointResult& p : run.points) {
      std::vector<DocCell> row = {{run.run.name}, {p.point.id}, {to_string(p.point.metric)}, {point_where(p)},
                                  {published_text(p.point)}, {value_text(p.point.metric, p.plan)},
                                  {p.simulate ? value_text(p.point.metric, *p.simulate) : "-"},
                                  {error_text(p, p.error_pct)}, {error_text(p, p.scored_error())},
                                  {opt_pct(p.plan_vs_sim_pct)}, {band_text(p)}, {opt_pct(p.point.recorded_error_pct)},
                                  {verdict_text(p)}};
      row.back().strong = p.status == PointStatus::kWorseThanRecorded || p.verdict() == Verdict::kOutOfBand;
      t.rows.push_back(row);
    }
  doc.push_back(t);
  {
    DocBlock d;
    d.kind = DocBlock::kList;
    const std::string text = detail_text(r);
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      d.items.push_back(text.substr(start, end - start));
      start = end == std::string::npos ? text.size() : end + 1;
    }
    if (!d.items.empty()) doc.push_back(d);
  }
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
    for (const PendingPoint& p : r.pending)
      if (p.run == f.name) l.items.push_back(fmt::format("{}: pending, not scored: {}", p.point.id, p.point.pending));
    doc.push_back(l);
    for (const StepBreakdown& b : run.step_breakdowns()) {
      DocBlock d;
      d.kind = DocBlock::kList;
      for (const std::string& line : breakdown_lines(b)) d.items.push_back(line);
      doc.push_back(d);
    }
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
