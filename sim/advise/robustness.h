// @brief How far to trust a recommendation: every candidate of an advice re-evaluated under every applicable miss
// source (the one the advice uses, every shipped miss surface, surfaces the user adds) and under each cost term
// labelled assumed at both ends of its stated range (±50 %, the range sim/cost/step/term_sensitivity.h prints), one
// uncertainty at a time around the advice's own model. A decision rule turns the goodputs into the recommendation
// (default: the best worst-case goodput); the report gives the recommendation's goodput range, its regret under each
// case, and a one-line verdict: robust, or which source or term decides it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/miss/miss_curve.h"

namespace hisparse::sim {

struct Candidate;      // sim/advise/advisor.h
struct AdviseOptions;  // sim/advise/advisor.h

/// How the goodputs under the cases become one recommendation.
enum class DecisionRule {
  kWorstCase,      // the highest goodput in the case least favourable to it (max-min)
  kExpected,       // the highest mean goodput over the cases, each weighted equally
  kMinRegret,      // the smallest largest shortfall against the best candidate of each case (min-max relative regret)
  kDefaultSource,  // the highest goodput under the advice's own miss source and nominal cost terms only
};

DecisionRule parse_decision_rule(const std::string& text, const std::string& where);
const char* to_string(DecisionRule rule);
/// One sentence stating the rule, for the reports.
std::string decision_rule_text(DecisionRule rule);

/// One alternative to the advice's own model: another miss source at the nominal cost terms, or the advice's miss
/// source with one assumed cost term at an end of its stated range.
struct UncertaintyCase {
  std::string name;                          // "synthetic-dsv32", "sampling ×1.5"
  std::string kind;                          // "miss source" | "cost term"
  std::string label;                         // where it comes from, as the reports print it
  std::shared_ptr<const MissCurves> misses;  // miss source cases; null: the advice's own
  CostParams cost;                           // cost term cases: the nominal terms with this one scaled
};

/// The goodput of every candidate under one case.
struct CaseGoodput {
  std::string name, kind, label;
  std::vector<double> goodput;  // per candidate (0 where it fits nothing)
  int best = -1;                // best candidate under this case (-1: nothing fits)
};

struct Robustness {
  DecisionRule rule = DecisionRule::kWorstCase;
  std::vector<CaseGoodput> cases;  // [0]: the advice's own miss source at the nominal cost terms
  std::vector<double> score;       // per candidate, under the rule (higher is better)
  int chosen = -1;                 // the recommendation under the rule
  double low = 0, high = 0;        // its goodput range over the cases
  std::vector<double> regret;      // per case: 1 − its goodput / the case's best (0 where it is the best)
  std::vector<int> shortlist;      // candidates the per-case table shows: chosen first, then each case's best
  bool robust = false;             // best (within rounding) under every case
  int deciding = -1;               // the case with the largest regret when not robust
  std::string verdict;             // the one line every report prints
  std::vector<std::string> inert_terms;  // assumed terms whose range moves no candidate's goodput (cases dropped)
  bool evaluated() const { return !cases.empty(); }
};

/// The cases of an advice: every shipped miss surface (scenarios/miss_models/*.yaml in scenario_dirs(), the first
/// of each name) and every surface in `extra_surfaces` (names or .yaml paths, e.g. fitted from the user's
/// counters), each but `primary_surface` (the one the advice already reads; "" when it reads a trace or a given
/// fraction), for `policy` (surfaces without it are skipped); then each time-valued cost term of `cost` labelled
/// assumed and not zero, at 0.5× and 1.5×.
std::vector<UncertaintyCase> uncertainty_cases(const Scenario& scenario, const CostParams& cost,
                                               const std::string& primary_surface, const std::string& policy,
                                               const std::vector<std::string>& extra_surfaces);

/// Whether the rule prefers candidate `a` to `b` (scores of `r`; equal scores: the advisor's order, better_candidate).
bool rule_prefers(const Robustness& r, const std::vector<Candidate>& candidates, int a, int b);

/// Evaluates every candidate under every case of `options.uncertainty` (the nominal goodputs of `candidates` are
/// case 0, named `primary_name`), picks the recommendation by `options.rule` (ties: the advisor's own order), and
/// writes the range, regrets, shortlist and verdict.
Robustness assess_robustness(const Scenario& scenario, const ContextMix& mix, const MissCurves& misses,
                             const std::vector<Candidate>& candidates, const AdviseOptions& options);

}  // namespace hisparse::sim
