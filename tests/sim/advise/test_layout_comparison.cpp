// @brief `advise --layouts`: the layouts of a deployment's GPUs, each row's throughput by the colocated / PD formula
// of layout_comparison.h, the winner the row with the most output tokens/s per GPU, and two workloads (short and long
// prompts) on the same GPUs whose winners differ.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/scenario_loader.h"
#include "sim/advise/layout_comparison.h"
#include "sim/miss/miss_curve.h"
#include "tests/sim/advise_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("layouts: TP and DP attention + EP, colocated and PD, HiSparse off and on, on the deployment's 8 GPUs") {
  const Scenario s = bundled();
  const std::vector<LayoutRow> rows = layout_rows(s);
  // Expected: 2 attention layouts × colocated / PD × HiSparse off / on = 8 rows; PD gives 4 GPUs to each side.
  REQUIRE(rows.size() == 8);
  CHECK(rows[0].layout == "TP8 colocated");
  CHECK_FALSE(rows[0].hisparse);
  CHECK(rows[1].hisparse);
  CHECK(rows[2].layout == "DP8 attention + EP8 (DeepEP) colocated");
  CHECK(rows[2].scenario.deployment.decode.dp_attention == 8);
  CHECK(rows[4].layout == "TP4, PD: 4 decode + 4 prefill GPUs");
  CHECK(rows[4].scenario.deployment.decode.gpus == 4);
  CHECK(rows[4].prefill_gpus == 4);
  CHECK(rows[6].scenario.deployment.decode.dp_attention == 4);
  for (const LayoutRow& r : rows) CHECK(r.not_applicable.empty());
}

TEST_CASE("layouts: each row's rate is its formula, and short and long prompts pick different winners") {
  const Scenario s = bundled();
  const MissCurves misses = default_miss_curves(s);
  const AdviseOptions o;
  const std::vector<LayoutWorkload> ws = default_layout_workloads();
  REQUIRE(ws.size() == 2);
  std::vector<LayoutComparison> cs;
  for (const LayoutWorkload& w : ws) cs.push_back(compare_layouts(s, w, misses, o));
  for (const LayoutComparison& c : cs) {
    CAPTURE(c.workload.label);
    const double O = static_cast<double>(c.workload.output_tokens);
    double best = 0;
    for (const LayoutRow& r : c.rows) {
      CAPTURE(r.layout);
      CAPTURE(r.hisparse);
      if (r.decode.goodput <= 0) continue;
      // Expected: colocated R = 1 / (T_p + O / D); PD R = min(1 / T_p, D / O); per GPU R × O / G.
      const double D = r.decode.goodput;
      const double R = r.pd ? std::min(1.0 / r.prefill_s, D / O) : 1.0 / (r.prefill_s + O / D);
      CHECK(r.requests_per_s == doctest::Approx(R));
      CHECK(r.tokens_per_s_per_gpu == doctest::Approx(R * O / 8));
      // What binds is the larger time share (colocated) or the smaller rate (PD).
      const bool prefill_binds = r.pd ? 1.0 / r.prefill_s < D / O : r.prefill_s > O / D;
      CHECK((r.binding == "prefill") == prefill_binds);
      best = std::max(best, r.tokens_per_s_per_gpu);
    }
    REQUIRE(c.winner >= 0);
    CHECK(c.rows[static_cast<size_t>(c.winner)].tokens_per_s_per_gpu == best);
    CHECK(c.why.find("wins") != std::string::npos);
  }
  // Expected: short prompts (1K in) leave the KV small and the prefill cheap; long ones (64K in) fill HBM with KV and
  // make prefill expensive, so the layout or the HiSparse setting that wins is not the same.
  const LayoutRow& a = cs[0].rows[static_cast<size_t>(cs[0].winner)];
  const LayoutRow& b = cs[1].rows[static_cast<size_t>(cs[1].winner)];
  CHECK((a.layout != b.layout || a.hisparse != b.hisparse));
}
