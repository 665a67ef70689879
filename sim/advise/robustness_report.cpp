// @brief Text, JSON and report blocks of an advice's robustness check (see robustness_report.h).
#include "sim/advise/robustness_report.h"

#include <cmath>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {

namespace {

// Column heads short enough for a terminal table.
std::string short_name(const Candidate& c) {
  return c.mode == KvMode::kFull ? "full KV" : fmt::format("H={} r={}", c.buffer_size, c.ratio);
}

std::string tps(double v) { return v > 0 ? plan_int(std::llround(v)) : "—"; }

std::string regret_text(double r) { return r > 0 ? fmt::format("−{:.1f}%", 100 * r) : "best"; }

std::string inert_text(const Robustness& r) {
  if (r.inert_terms.empty()) return "";
  std::string list;
  for (const auto& t : r.inert_terms) list += (list.empty() ? "" : ", ") + t;
  return fmt::format("assumed terms whose ±50 % moves no setting's goodput here (left out): {}", list);
}

}  // namespace

std::string rule_score_text(const Robustness& r, int i) {
  const double s = r.score[static_cast<size_t>(i)];
  switch (r.rule) {
    case DecisionRule::kWorstCase: return "lowest goodput " + tps(s) + " tok/s";
    case DecisionRule::kExpected: return "mean goodput " + tps(s) + " tok/s";
    case DecisionRule::kMinRegret: return fmt::format("largest regret {:.1f}%", -100 * s);
    case DecisionRule::kDefaultSource: return "goodput " + tps(s) + " tok/s";
  }
  return "";
}

std::string robustness_text(const Advice& a) {
  const Robustness& r = a.robustness;
  std::string o = "robustness: " + r.verdict + "\n";
  if (r.chosen < 0) return o;
  o += fmt::format("  {:<34} {:<11}", "goodput tok/s under each case", "kind");
  for (int i : r.shortlist) o += fmt::format(" {:>13}", short_name(a.candidates[static_cast<size_t>(i)]));
  o += fmt::format(" {:>9}\n", "rec. regret");
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const CaseGoodput& c = r.cases[k];
    o += fmt::format("  {:<34} {:<11}", c.name, c.kind == "cost term" ? "cost term" : "miss");
    for (int i : r.shortlist)
      o += fmt::format(" {:>13}", tps(c.goodput[static_cast<size_t>(i)]) + (i == c.best ? "*" : " "));
    o += fmt::format(" {:>9}\n", regret_text(r.regret[k]));
  }
  o += "  (* best under that case; the first column is the recommendation)\n";
  if (!r.inert_terms.empty()) o += "  " + inert_text(r) + "\n";
  return o;
}

std::string default_source_text(const Advice& a) {
  const Robustness& r = a.robustness;
  if (a.best < 0 || a.best_default_source < 0 || a.best_default_source == a.best || r.cases.empty()) return "";
  const size_t alt = static_cast<size_t>(a.best_default_source), rec = static_cast<size_t>(a.best);
  const Candidate& c = a.candidates[alt];
  // The case where the alternative falls furthest below the recommendation (its loss relative to it).
  int worst = -1;
  double loss = 0;
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const double g_rec = r.cases[k].goodput[rec], g_alt = r.cases[k].goodput[alt];
    if (!(g_rec > 0)) continue;
    const double l = 1 - g_alt / g_rec;
    if (worst < 0 || l > loss) {
      worst = static_cast<int>(k);
      loss = l;
    }
  }
  std::string o = fmt::format("best if the miss model is {}: {} ({} tok/s, {:.2f}× the recommendation)",
                              r.cases.front().name, c.name(), tps(c.goodput),
                              a.candidates[rec].goodput > 0 ? c.goodput / a.candidates[rec].goodput : 0.0);
  if (worst < 0 || !(loss > 0))
    return o + fmt::format("; recommended instead by rule {}", to_string(r.rule));
  const CaseGoodput& w = r.cases[static_cast<size_t>(worst)];
  return o + fmt::format("; recommended: {}, because under {} {} loses {:.1f} % against it ({} against {} tok/s; rule {})",
                         a.candidates[rec].name(), w.name, c.name(), 100 * loss, tps(w.goodput[alt]),
                         tps(w.goodput[rec]), to_string(r.rule));
}

void robustness_json(JsonWriter& j, const Advice& a) {
  using Layout = JsonWriter::Layout;
  const Robustness& r = a.robustness;
  j.begin_object(Layout::kInline).member("rule", to_string(r.rule)).member("rule_text", decision_rule_text(r.rule));
  j.member("verdict", r.verdict).member("robust", r.robust).member("deciding_case", r.deciding);
  j.key("goodput_low").fixed(r.low, 3).key("goodput_high").fixed(r.high, 3).key("shortlist").begin_array(Layout::kInline);
  for (int i : r.shortlist) j.number(i);
  j.end_array().key("inert_terms").begin_array(Layout::kInline);
  for (const auto& t : r.inert_terms) j.string(t);
  j.end_array().key("cases").begin_array(Layout::kInline);
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const CaseGoodput& c = r.cases[k];
    j.begin_object(Layout::kInline).member("name", c.name).member("kind", c.kind).member("label", c.label);
    j.member("best", c.best).key("recommendation_regret").fixed(k < r.regret.size() ? r.regret[k] : 0.0, 6);
    j.key("goodput_tokens_per_s").begin_array(Layout::kInline);
    for (double x : c.goodput) j.fixed(x, 3);
    j.end_array().end_object();
  }
  j.end_array().end_object();
}

std::vector<DocBlock> robustness_blocks(const Advice& a) {
  const Robustness& r = a.robustness;
  std::vector<DocBlock> out;
  DocBlock v;
  v.kind = r.robust || r.chosen < 0 ? DocBlock::kParagraph : DocBlock::kWarning;
  v.text = "Robustness: " + r.verdict + ".";
  out.push_back(v);
  if (r.chosen < 0) return out;
  DocBlock t;
  t.kind = DocBlock::kTable;
  t.text = "Goodput (tokens/s) of the recommendation (first column) and of each case's best setting under every miss "
           "source and assumed cost range (bold: best under that case):";
  t.headers = {"case", "kind", "from"};
  for (int i : r.shortlist) t.headers.push_back(a.candidates[static_cast<size_t>(i)].name());
  t.headers.push_back("recommendation's regret");
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const CaseGoodput& c = r.cases[k];
    std::vector<DocCell> row = {DocCell{c.name, static_cast<int>(k) == r.deciding}, DocCell{c.kind},
                                DocCell{c.label, false, false, true}};
    for (int i : r.shortlist) row.push_back(DocCell{tps(c.goodput[static_cast<size_t>(i)]), i == c.best});
    row.push_back(DocCell{regret_text(r.regret[k])});
    t.rows.push_back(row);
  }
  out.push_back(t);
  if (!r.inert_terms.empty()) {
    DocBlock n;
    n.text = inert_text(r) + ".";
    out.push_back(n);
  }
  return out;
}

}  // namespace hisparse::sim
