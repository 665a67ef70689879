// @brief The advice's robustness check (see robustness.h): the cases, the re-evaluation, the rule and the verdict.
#include "sim/advise/robustness.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/advise/advisor.h"
#include "sim/miss/miss_surface.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {

namespace {

constexpr double kTie = 1e-9;  // relative: goodputs closer than this are equal (as the advisor's own choice)

bool more(double a, double b) { return a > b * (1 + kTie) + 1e-12; }

// The stated range of an assumed time-valued term: the one the plan's cost-terms table prints its sensitivity over.
constexpr double kAssumedLow = 0.5, kAssumedHigh = 1.5;

std::vector<std::string> shipped_surfaces() {
  std::set<std::string> names;
  for (const std::string& dir : scenario_dirs()) {
    const std::filesystem::path d = std::filesystem::path(dir) / "miss_models";
    if (!std::filesystem::is_directory(d)) continue;
    for (const auto& e : std::filesystem::directory_iterator(d))
      if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
  }
  return {names.begin(), names.end()};
}

// The best candidate under goodputs `g`: the most goodput, ties to the advisor's order on the nominal figures.
int best_under(const std::vector<double>& g, const std::vector<Candidate>& c) {
  int best = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(g[i] > 0)) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const double b = g[static_cast<size_t>(best)];
    if (more(g[i], b) || (!more(b, g[i]) && better_candidate(c[i], c[static_cast<size_t>(best)]))) best = static_cast<int>(i);
  }
  return best;
}

double rule_score(const Robustness& r, size_t i, DecisionRule rule) {
  switch (rule) {
    case DecisionRule::kDefaultSource: return r.cases.front().goodput[i];
    case DecisionRule::kWorstCase: {
      double lo = std::numeric_limits<double>::infinity();
      for (const auto& c : r.cases) lo = std::min(lo, c.goodput[i]);
      return lo;
    }
    case DecisionRule::kExpected: {
      double sum = 0;
      for (const auto& c : r.cases) sum += c.goodput[i];
      return sum / static_cast<double>(r.cases.size());
    }
    case DecisionRule::kMinRegret: {
      double worst = 0;
      for (const auto& c : r.cases) {
        const double top = c.best >= 0 ? c.goodput[static_cast<size_t>(c.best)] : 0;
        if (top > 0) worst = std::max(worst, 1 - c.goodput[i] / top);
      }
      return -worst;
    }
  }
  return 0;
}

std::string tps(double v) { return plan_int(std::llround(v)); }

}  // namespace

bool rule_prefers(const Robustness& r, const std::vector<Candidate>& c, int a, int b) {
  const double x = r.score[static_cast<size_t>(a)], y = r.score[static_cast<size_t>(b)];
  // Scores are goodputs (or negative regrets): compare them as the advisor compares goodputs.
  const double scale = std::max(std::fabs(x), std::fabs(y));
  if (std::fabs(x - y) > scale * kTie + 1e-12) return x > y;
  return better_candidate(c[static_cast<size_t>(a)], c[static_cast<size_t>(b)]);
}

DecisionRule parse_decision_rule(const std::string& text, const std::string& where) {
  if (text == "worst-case") return DecisionRule::kWorstCase;
  if (text == "expected") return DecisionRule::kExpected;
  if (text == "min-regret") return DecisionRule::kMinRegret;
  if (text == "default-source") return DecisionRule::kDefaultSource;
  throw_error("{}: decision rule '{}' is unknown (expected worst-case, expected, min-regret or default-source)", where,
              text);
}

const char* to_string(DecisionRule r) {
  switch (r) {
    case DecisionRule::kWorstCase: return "worst-case";
    case DecisionRule::kExpected: return "expected";
    case DecisionRule::kMinRegret: return "min-regret";
    case DecisionRule::kDefaultSource: return "default-source";
  }
  return "?";
}

std::string decision_rule_text(DecisionRule r) {
  switch (r) {
    case DecisionRule::kWorstCase:
      return "worst-case: the setting whose lowest goodput over the cases is highest";
    case DecisionRule::kExpected:
      return "expected: the setting with the highest mean goodput over the cases, each weighted equally";
    case DecisionRule::kMinRegret:
      return "min-regret: the setting whose largest shortfall against the best setting of each case is smallest";
    case DecisionRule::kDefaultSource:
      return "default-source: the highest goodput under the advice's own miss source and nominal cost terms; the "
             "other cases are reported only";
  }
  return "";
}

std::vector<UncertaintyCase> uncertainty_cases(const Scenario& s, const CostParams& cost,
                                               const std::string& primary_surface, const std::string& policy,
                                               const std::vector<std::string>& extra_surfaces) {
  std::vector<UncertaintyCase> out;
  std::vector<std::string> surfaces = shipped_surfaces();
  for (const auto& e : extra_surfaces)
    if (std::find(surfaces.begin(), surfaces.end(), e) == surfaces.end()) surfaces.push_back(e);
  const int32_t K = s.deployment.hisparse.top_k;
  const std::string primary = primary_surface.empty() ? "" : load_miss_surface(primary_surface).name;
  for (const auto& name : surfaces) {
    const MissSurface surface = load_miss_surface(name);
    if (surface.name == primary || !surface.has_policy(policy)) continue;
    UncertaintyCase c;
    c.name = surface.name;
    c.kind = "miss source";
    c.label = surface.source_label(surface.label());
    c.misses = std::make_shared<const MissCurves>(MissCurves::from_surface(surface, policy, K));
    c.cost = cost;
    out.push_back(std::move(c));
  }
  for (const TermSource& t : cost.sources) {
    if (t.kind != "assumed") continue;
    SimTime CostParams::*member = cost_time_term(t.term);
    if (!member || cost.*member == 0) continue;  // not time-valued, or nothing to scale
    for (double f : {kAssumedLow, kAssumedHigh}) {
      UncertaintyCase c;
      c.name = fmt::format("{} ×{:g}", t.term, f);
      c.kind = "cost term";
      c.label = fmt::format("assumed {} ({}) at ×{:g}: the end of its stated ±50 % range", t.term, t.value, f);
      c.cost = cost;
      c.cost.*member = static_cast<SimTime>(static_cast<double>(cost.*member) * f);
      out.push_back(std::move(c));
    }
  }
  return out;
}

Robustness assess_robustness(const Scenario& s, const ContextMix& mix, const MissCurves& misses,
                             const std::vector<Candidate>& cands, const AdviseOptions& o) {
  Robustness r;
  r.rule = o.rule;
  CaseGoodput own{o.own_source, "miss source", "the advice's own miss model and nominal cost terms", {}, -1};
  for (const auto& c : cands) own.goodput.push_back(c.goodput);
  own.best = best_under(own.goodput, cands);
  r.cases.push_back(std::move(own));
  AdviseOptions plain = o;
  plain.uncertainty.clear();
  for (const UncertaintyCase& u : o.uncertainty) {
    plain.cost = u.cost;
    const MissCurves& m = u.misses ? *u.misses : misses;
    CaseGoodput g{u.name, u.kind, u.label, {}, -1};
    bool moves = u.kind != "cost term";
    for (size_t i = 0; i < cands.size(); ++i) {
      const Candidate& c = cands[i];
      g.goodput.push_back(evaluate_candidate(s, mix, m, c.mode, c.buffer_size, c.ratio, plain).goodput);
      moves = moves || more(g.goodput.back(), c.goodput) || more(c.goodput, g.goodput.back());
    }
    if (!moves) {
      const std::string term = u.name.substr(0, u.name.find(' '));
      if (r.inert_terms.empty() || r.inert_terms.back() != term) r.inert_terms.push_back(term);
      continue;
    }
    g.best = best_under(g.goodput, cands);
    r.cases.push_back(std::move(g));
  }
  // Inert at one end but not the other is still a live term: keep only terms inert at both ends.
  r.inert_terms.erase(std::remove_if(r.inert_terms.begin(), r.inert_terms.end(),
                                     [&r](const std::string& t) {
                                       for (const auto& c : r.cases)
                                         if (c.name.rfind(t + " ", 0) == 0) return true;
                                       return false;
                                     }),
                      r.inert_terms.end());

  for (size_t i = 0; i < cands.size(); ++i) r.score.push_back(rule_score(r, i, r.rule));
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].feasible() && (r.chosen < 0 || rule_prefers(r, cands, static_cast<int>(i), r.chosen)))
      r.chosen = static_cast<int>(i);
  if (r.chosen < 0) {
    r.verdict = "no setting fits a request under the advice's own model";
    return r;
  }
  const size_t ch = static_cast<size_t>(r.chosen);
  r.low = std::numeric_limits<double>::infinity();
  r.shortlist.push_back(r.chosen);
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const CaseGoodput& c = r.cases[k];
    r.low = std::min(r.low, c.goodput[ch]);
    r.high = std::max(r.high, c.goodput[ch]);
    const double top = c.best >= 0 ? c.goodput[static_cast<size_t>(c.best)] : 0;
    r.regret.push_back(top > 0 && more(top, c.goodput[ch]) ? 1 - c.goodput[ch] / top : 0);
    if (c.best >= 0 && std::find(r.shortlist.begin(), r.shortlist.end(), c.best) == r.shortlist.end())
      r.shortlist.push_back(c.best);
  }
  // The deciding case: the largest regret among the cases that disagree on their own account. A cost-term case runs
  // the advice's own miss source, so where it prefers what that source prefers, the source decides, not the term.
  double worst_regret = 0;
  for (size_t k = 0; k < r.cases.size(); ++k) {
    const bool echo = r.cases[k].kind == "cost term" && r.cases[k].best == r.cases[0].best && r.regret[0] > 0;
    if (!echo && r.regret[k] > worst_regret) {
      worst_regret = r.regret[k];
      r.deciding = static_cast<int>(k);
    }
  }
  const Candidate& rec = cands[ch];
  r.robust = r.deciding < 0;
  const std::string range = fmt::format("goodput {}–{} tok/s over {} case{}", tps(r.low), tps(r.high), r.cases.size(),
                                        r.cases.size() == 1 ? "" : "s");
  if (r.robust) {
    r.verdict = fmt::format("robust: {} is best under every source and assumed range ({})", rec.name(), range);
    return r;
  }
  const CaseGoodput& d = r.cases[static_cast<size_t>(r.deciding)];
  const Candidate& alt = cands[static_cast<size_t>(d.best)];
  std::string agree;
  for (size_t k = 0; k < r.cases.size(); ++k)
    if (r.regret[k] == 0) agree += (agree.empty() ? "" : ", ") + r.cases[k].name;
  const double top = d.goodput[static_cast<size_t>(d.best)];
  const std::string versus = d.goodput[ch] > 0
                                 ? fmt::format("{:.1f}% more than the recommended {} ({})",
                                               100 * (top / d.goodput[ch] - 1), rec.name(), tps(d.goodput[ch]))
                                 : fmt::format("where the recommended {} fits nothing", rec.name());
  r.verdict = fmt::format("decided by {} ({}): under it {} gives {} tok/s, {}; the recommendation is best under {}; "
                          "{}; rule {}",
                          d.name, d.kind, alt.name(), tps(top), versus, agree.empty() ? "no case" : agree, range,
                          to_string(r.rule));
  return r;
}

}  // namespace hisparse::sim
