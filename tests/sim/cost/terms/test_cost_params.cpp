// @brief Cost-model terms: the shipped files set every term with a kind and a source, strict and lenient reading,
// the hardware's file is what runs load, the roofline uses compute and memory efficiencies separately, and the
// zero-copy swap-in's SM time is charged in two-batch mode (closed form and serving engine alike).
#include <doctest/doctest.h>

// GCC 12 at -O2 reports the vectors of a CostParams{} temporary inside doctest's CHECK_THROWS as maybe-uninitialized
// (a known false positive of inlined std::vector destructors); nothing here reads uninitialized memory (ASan/UBSan
// run this file too).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/cost/terms/zero_copy_sm_share.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

const std::string kShipped = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/cost_model/sglang-hopper.yaml";

}  // namespace

TEST_CASE("cost model: the shipped file sets every term, each with a kind and a non-empty source") {
  const CostParams p = load_cost_params(kShipped, CostParams{}, /*require_every_term=*/true);
  std::set<std::string> seen;
  for (const TermSource& t : p.sources) {
    CAPTURE(t.term);
    CHECK(!t.source.empty());
    CHECK((t.kind == "measured" || t.kind == "modelled" || t.kind == "assumed" || t.kind == "calibrated" ||
           t.kind == "fitted"));
    seen.insert(t.term);
  }
  for (const std::string& name : cost_term_names()) {
    CAPTURE(name);
    CHECK(seen.count(name) == 1);
  }
  // The published figures the file cites, as fractions (FlashMLA sparse decode 410 of 989 TFLOP/s; DeepGEMM masked
  // grouped GEMM 2,064 of 3,350 GB/s; SGLang's chunked prefill for GPUs under 160 GB).
  CHECK(p.efficiency.attention.compute == doctest::Approx(410.0 / 989).epsilon(0.002));
  CHECK(p.efficiency.moe.memory == doctest::Approx(2064.0 / 3350).epsilon(0.002));
  CHECK(p.prefill_chunk_tokens == 8192);
  CHECK(p.terms_file == kShipped);
}

TEST_CASE("cost model: every shipped cost-model file (Hopper, SM100, SM120) sets every term with a kind and a source") {
  // The Blackwell files carry the Hopper values over as fractions of their own GPU's peaks and say so: assumed, or
  // modelled / fitted where the Hopper file's reasoning carries over or a field point pins the value.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/cost_model")) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    CAPTURE(e.path().string());
    const CostParams p = load_cost_params(e.path().string(), CostParams{}, /*require_every_term=*/true);
    // Every named term, and the optional efficiency_scale where the file scales its efficiencies.
    CHECK(p.sources.size() == cost_term_names().size() + (p.efficiency_scale != 1.0 ? 1 : 0));
    if (e.path().stem() != "sglang-hopper")
      for (const TermSource& t : p.sources)
        if (t.term != "prefill_chunk_tokens") {
          CAPTURE(t.term);
          CHECK((t.kind == "assumed" || t.kind == "modelled" || t.kind == "fitted"));
          if (t.kind != "fitted") CHECK(t.source.find("sglang-hopper.yaml") != std::string::npos);
        }
  }
  CHECK(files >= 3);
}

TEST_CASE("cost model: every shipped hardware file names a cost-model file, and runs load it") {
  for (const std::string& hw : list_scenarios("hardware")) {
    CAPTURE(hw);
    const HardwareSpec h = load_hardware_spec(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/hardware/" + hw + ".yaml");
    CHECK(!h.cost_model.empty());
  }
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  const std::string line = load_cost_terms("auto", s, &p);
  CHECK(line.find("sglang-hopper.yaml") != std::string::npos);
  CHECK(p.sources.size() == cost_term_names().size());
  // The per-op calibration's measured graph gap replaces the file's, and the provenance says so.
  apply_calibrations("none", "auto", const_cast<Scenario*>(&s), &p);
  bool replaced = false;
  for (const TermSource& t : p.sources)
    if (t.term == "graph_kernel_gap") replaced = t.kind == "measured" && t.source.find("per-op calibration") != std::string::npos;
  CHECK(replaced);
}

TEST_CASE("cost model: strict reading rejects bare values, missing terms, retired keys; lenient reading takes them") {
  const std::string bare = write_temp("hs_cost_bare.yaml", "efficiency: {indexer: 0.5}\nsampling: 1ms\n");
  const CostParams lenient = load_cost_params(bare);
  CHECK(lenient.efficiency.indexer.compute == 0.5);
  CHECK(lenient.efficiency.indexer.memory == 0.5);
  CHECK(lenient.sampling_ns == 1000000);
  CHECK_THROWS_WITH_AS(load_cost_params(bare, CostParams{}, true), doctest::Contains("kind and source"), Error);
  const std::string no_source = write_temp(
      "hs_cost_nosource.yaml", "sampling: {value: 1ms, kind: assumed}\n");
  CHECK_THROWS_WITH_AS(load_cost_params(no_source, CostParams{}, true), doctest::Contains("source"), Error);
  const std::string bad_kind = write_temp("hs_cost_kind.yaml", "sampling: {value: 1ms, kind: guessed, source: x}\n");
  CHECK_THROWS_WITH_AS(load_cost_params(bad_kind), doctest::Contains("guessed"), Error);
  const std::string retired = write_temp("hs_cost_retired.yaml", "kernels_per_layer: 12\n");
  CHECK_THROWS_WITH_AS(load_cost_params(retired), doctest::Contains("retired"), Error);
  const std::string half = write_temp("hs_cost_half.yaml",
                                      "efficiency: {attention: {compute: 0.4, kind: modelled, source: x}}\n");
  CHECK_THROWS_WITH_AS(load_cost_params(half), doctest::Contains("memory"), Error);
}

TEST_CASE("cost model: the roofline takes compute and memory efficiency separately") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  p.graph_kernel_gap_ns = 0;
  // Long contexts make the indexer memory bound: halving its memory efficiency doubles its scoring time, halving
  // its compute efficiency leaves it (the indexer's projections are the same in all three).
  GpuBatch b{8, 8 * 65536.0, 8 * 2048.0, 0};
  auto scoring = [&](double compute, double memory) {
    CostParams q = p;
    q.efficiency.indexer = {compute, memory};
    return DecodeCostModel(s, q, false).gpu_phases(b).indexer;
  };
  const SimTime base = scoring(0.8, 0.8);
  CHECK(scoring(0.4, 0.8) == base);
  CHECK(scoring(0.8, 0.4) > base);
}

TEST_CASE("zero-copy SM share: cluster rows up to Bc, a block per row above, the separate copy all SMs") {
  SwapInCopyCost c;
  CHECK(zero_copy_sm_share("fused", c, 4, 0) == 0);  // SM count unknown: not charged
  CHECK(zero_copy_sm_share("fused", c, 33, 132) == doctest::Approx(0.25));
  CHECK(zero_copy_sm_share("fused", c, 500, 132) == 1);
  c.calibrated = true;
  c.small_batch_max = 16;  // 132 / 8-block clusters
  CHECK(zero_copy_sm_share("fused", c, 4, 132) == doctest::Approx(0.25));
  CHECK(zero_copy_sm_share("fused", c, 17, 132) == doctest::Approx(17.0 / 132));
  CHECK(zero_copy_sm_share("separate", c, 4, 132) == 1);
}

TEST_CASE("two-batch mode charges the zero-copy swap-in's SM time while it overlaps compute") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  p.overlap = OverlapMode::kTwoBatch;
  const auto flat = [](int64_t) { return 0.01; };  // few misses: compute, not the copy, ends the GPU part
  Scenario no_sms = s;
  no_sms.hardware.sm_count = 0;
  const StepTimeModel charged(s, p, true, flat), free_sms(no_sms, p, true, flat);
  const StepEstimate a = charged.step(64, 65536), b = free_sms.step(64, 65536);
  REQUIRE(a.h2d_bytes > 0);
  CHECK(a.cost.critical_path() == a.step_ns);
  // 32 requests per micro-batch hold 32 of 132 SMs: the compute the copy overlaps stretches by that share.
  CHECK(a.step_ns > b.step_ns);
  const double compute = static_cast<double>(b.cost.indexer + b.cost.topk + b.cost.swap_in + b.cost.attention);
  CHECK(static_cast<double>(a.step_ns - b.step_ns) <= compute * 32.0 / 132 + 1);
  // In `none` mode nothing overlaps the copy: the SM count changes nothing.
  p.overlap = OverlapMode::kNone;
  const StepTimeModel n1(s, p, true, flat), n2(no_sms, p, true, flat);
  CHECK(n1.step(64, 65536).step_ns == n2.step(64, 65536).step_ns);
}

TEST_CASE("cost model: efficiency_scale multiplies every efficiency the file sets, and a trial rescales them") {
  // Expectation: the MI350X file holds the Blackwell file's efficiencies and efficiency_scale 0.12, so each loaded
  // efficiency (compute, memory, nvlink) is the Blackwell value × 0.12; set_efficiency_scale(0.24) doubles them all,
  // and a scale of 0 is refused.
  const std::string dir = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/cost_model/";
  const CostParams blackwell = load_cost_params(dir + "sglang-sm100.yaml", CostParams{}, true);
  CostParams mi350x = load_cost_params(dir + "vllm-rocm-gfx950.yaml", CostParams{}, true);
  CHECK(mi350x.efficiency_scale == doctest::Approx(0.12));
  const auto same_scaled = [](const Efficiency& a, const Efficiency& b, double f) {
    for (const auto& [x, y] : {std::pair{a.indexer, b.indexer}, {a.topk, b.topk}, {a.swap_in, b.swap_in},
                               {a.attention, b.attention}, {a.moe, b.moe}, {a.dense, b.dense}, {a.prefill, b.prefill}}) {
      CHECK(x.compute == doctest::Approx(y.compute * f));
      CHECK(x.memory == doctest::Approx(y.memory * f));
    }
    CHECK(a.nvlink == doctest::Approx(b.nvlink * f));
  };
  same_scaled(mi350x.efficiency, blackwell.efficiency, 0.12);
  bool fitted = false;
  for (const TermSource& t : mi350x.sources) fitted = fitted || (t.term == kEfficiencyScaleTerm && t.kind == "fitted");
  CHECK(fitted);
  set_efficiency_scale(mi350x, 0.24);
  same_scaled(mi350x.efficiency, blackwell.efficiency, 0.24);
  CHECK_THROWS_AS(set_efficiency_scale(mi350x, 0), Error);
  // A file without the term leaves the scale at 1.
  CHECK(blackwell.efficiency_scale == 1.0);
}
