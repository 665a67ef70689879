// @brief The plan's table (sim/plan/plan_table.h): the rows the CLI prints, plan.json's `rows` and
// `dynamic_residency`, and Python's PlanResult all come from it, so it must carry each PlanRow's figures in the
// printed order.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"
#include "sim/plan/plan_table.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("plan table: per length full, HiSparse, then dynamic residency, each with its PlanRow's figures") {
  // dsv32-8xh200-1tb has a sparse indexer, so the planner computes a dynamic row per length beside the pair.
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  PlanOptions o;
  o.seq_lens = {16384, 131072};
  const CapacityPlan p = compute_capacity_plan(s, o, default_miss_curves(s));
  REQUIRE(p.rows.size() == 4);
  REQUIRE(p.dynamic_rows.size() == 2);
  const std::vector<PlanTableRow> t = plan_table(p);
  // Expected: 3 rows per length, in the order the CLI prints them.
  REQUIRE(t.size() == 6);
  const PlanRow* source[] = {&p.rows[0], &p.rows[1], &p.dynamic_rows[0], &p.rows[2], &p.rows[3], &p.dynamic_rows[1]};
  const char* modes[] = {"full", "hisparse", "dynamic", "full", "hisparse", "dynamic"};
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(i);
    const PlanRow& r = *source[i];
    CHECK(t[i].mode == modes[i]);
    CHECK(t[i].seq_len == r.seq_len);
    CHECK(t[i].applicable);
    CHECK(t[i].max_per_rank == r.max_per_rank);
    CHECK(t[i].max_concurrency == r.max_concurrency);
    CHECK(t[i].binding_limit == r.binding_limit);
    CHECK(t[i].decode_tokens_per_s == r.decode_tokens_per_s);
    CHECK(t[i].hbm_bytes_per_request == r.hbm_per_request.value);
    CHECK(t[i].host_bytes_per_request == r.host_per_request.value);
    CHECK(t[i].resident_per_rank == r.resident_per_rank);
    // TPOT (the step over the tokens a request accepts per step) in every mode, dynamic residency included.
    CHECK(t[i].tpot_ms == static_cast<double>(r.at_max.tpot_ns) * 1e-6);
  }
  // Expected: the text has a header and one line per row; the dynamic lines say up to which batch they stay resident.
  const std::string text = plan_table_text(t, p.hisparse_not_applicable);
  CHECK(std::count(text.begin(), text.end(), '\n') == 7);
  CHECK(text.find("resident (full-KV step) up to") != std::string::npos);
}

TEST_CASE("plan table: a model without a sparse indexer has HiSparse rows marked not applicable and no dynamic row") {
  const Scenario s = load_scenario("llama31-8b-1xh100");
  PlanOptions o;
  o.seq_lens = {16384};
  const CapacityPlan p = compute_capacity_plan(s, o, default_miss_curves(s));
  const std::vector<PlanTableRow> t = plan_table(p);
  REQUIRE(t.size() == 2);
  CHECK(t[0].applicable);
  CHECK_FALSE(t[1].applicable);
  CHECK(t[1].binding_limit == kNotApplicable);
  // Expected: the CLI's line names why, in place of the figures.
  CHECK(plan_table_text(t, p.hisparse_not_applicable).find("hisparse           - " + p.hisparse_not_applicable) !=
        std::string::npos);
}

TEST_CASE("plan table: with MTP every mode's TPOT is its step over the accepted tokens, dynamic residency too") {
  // Expected: 2 draft tokens at acceptance 0.7 accept 1 + 0.7 + 0.49 = 2.19 tokens per request-step, so each row's
  // TPOT is its step / 2.19 (rounded to the ns), below the step; before this the dynamic row printed the step.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.mtp_draft_tokens = 2;
  s.deployment.mtp_acceptance = 0.7;
  PlanOptions o;
  o.seq_lens = {65536};
  const CapacityPlan p = compute_capacity_plan(s, o, default_miss_curves(s));
  REQUIRE(p.dynamic_rows.size() == 1);
  const PlanRow& d = p.dynamic_rows[0];
  REQUIRE(d.max_per_rank > 0);
  CHECK(d.at_max.tpot_ns == doctest::Approx(static_cast<double>(d.at_max.step_ns) / 2.19).epsilon(1e-3));
  const std::vector<PlanTableRow> t = plan_table(p);
  CHECK(t.back().mode == "dynamic");
  CHECK(t.back().tpot_ms == static_cast<double>(d.at_max.tpot_ns) * 1e-6);
  CHECK(t.back().tpot_ms < static_cast<double>(d.at_max.step_ns) * 1e-6);
}
