// @brief Collectives by where they run: DeepEP's published table (interpolation, its own consistency, intranode vs
// internode instances), the all-reduce by site, the new cost-file keys' errors, the split step overhead, HiSparse's
// per-layer output clear, and the sensitivity the cost-terms table prints.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/cost/terms/collective_cost.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/cost/step/term_sensitivity.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kShipped = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/cost_model/sglang-hopper.yaml";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

const std::string kDeepEpHead =
    "deepep_low_latency:\n  tokens_per_rank: 128\n  hidden: 7168\n  topk: 8\n  gpus_per_node: 8\n"
    "  nvlink_bytes_per_s: 160GB/s\n  rdma_bytes_per_s: 50GB/s\n  kind: modelled\n  source: x\n";

/// Loads `text` written to a temporary file named `name` (leniently, as a user's partial file).
CostParams load_text(const std::string& name, const std::string& text) {
  const CostParams base;
  return load_cost_params(write_temp(name, text), base);
}

}  // namespace

TEST_CASE("DeepEP table: the shipped rows are DeepEP's published figures, each time consistent with its bandwidth") {
  const CostParams p = load_cost_params(kShipped, CostParams{}, true);
  const DeepEpTable& t = p.deepep;
  REQUIRE(t.rows.size() == 6);
  CHECK(t.rows.front().ep == 8);
  CHECK(t.rows.front().dispatch_us == 77);
  CHECK(t.rows.front().combine_us == 114);
  CHECK(t.rows.back().ep == 256);
  // Published GB/s × us is the payload of 128 tokens × top-8 copies of 7,168: fp8 plus one fp32 scale per 128
  // (dispatch), bf16 (combine). Every row agrees within 3 %, so the table was transcribed consistently.
  const double copies = 128.0 * 8;
  for (const DeepEpRow& r : t.rows) {
    CAPTURE(r.ep);
    CHECK(r.dispatch_gb_per_s * r.dispatch_us * 1e3 == doctest::Approx(copies * (7168 + 7168 / 128 * 4)).epsilon(0.03));
    CHECK(r.combine_gb_per_s * r.combine_us * 1e3 == doctest::Approx(copies * 7168 * 2).epsilon(0.03));
  }
}

TEST_CASE("DeepEP table: log-linear between published EP sizes, the end rows beyond them") {
  const DeepEpTable t = load_cost_params(kShipped, CostParams{}, true).deepep;
  CHECK(deepep_published_us(t, ExpertOp::kDispatch, 16) == 118);
  CHECK(deepep_published_us(t, ExpertOp::kCombine, 32) == 273);
  // EP 24 lies log2(24 / 16) = 0.585 of the way from EP16 to EP32.
  CHECK(deepep_published_us(t, ExpertOp::kDispatch, 24) == doctest::Approx(118 + std::log2(1.5) * (155 - 118)));
  CHECK(deepep_published_us(t, ExpertOp::kDispatch, 4) == 77);     // below the table: its first row
  CHECK(deepep_published_us(t, ExpertOp::kCombine, 1024) == 360);  // above it: its last row
}

TEST_CASE("DeepEP dispatch/combine: the published time at the published setting, the payload part scaling with it") {
  const DeepEpTable t = load_cost_params(kShipped, CostParams{}, true).deepep;
  // On the publishing fabric (link = 160 GB/s intranode, 50 GB/s internode) at 128 tokens, hidden 7168, top-8,
  // whatever the fixed latency, one dispatch costs the published time.
  const CollectiveSite intra{false, 20000, 160e9}, inter{true, 30000, 50e9};
  CHECK(deepep_ns(t, ExpertOp::kDispatch, 8, 128, 7168, 8, intra) == 77000);
  CHECK(deepep_ns(t, ExpertOp::kCombine, 16, 128, 7168, 8, inter) == 195000);
  // An EP8 instance inside a node against an EP16 one across nodes, same model and tokens: their dispatch + combine
  // differ by the published difference, (118 + 195) − (77 + 114) = 122 us.
  const SimTime one_node = deepep_ns(t, ExpertOp::kDispatch, 8, 128, 7168, 8, intra) +
                           deepep_ns(t, ExpertOp::kCombine, 8, 128, 7168, 8, intra);
  const SimTime two_nodes = deepep_ns(t, ExpertOp::kDispatch, 16, 128, 7168, 8, inter) +
                            deepep_ns(t, ExpertOp::kCombine, 16, 128, 7168, 8, inter);
  CHECK(two_nodes - one_node == 122000);
  // Half the tokens move half the payload: latency + (77 − 20) / 2 us; a link 2.8× faster divides the payload part.
  CHECK(deepep_ns(t, ExpertOp::kDispatch, 8, 64, 7168, 8, intra) == 20000 + 28500);
  CHECK(deepep_ns(t, ExpertOp::kDispatch, 8, 128, 7168, 8, CollectiveSite{false, 20000, 450e9}) ==
        20000 + static_cast<SimTime>(std::ceil(57000 * 160.0 / 450)));
  // No EP, or no tokens: nothing.
  CHECK(deepep_ns(t, ExpertOp::kDispatch, 1, 128, 7168, 8, intra) == 0);
  CHECK(deepep_ns(t, ExpertOp::kDispatch, 8, 0, 7168, 8, intra) == 0);
}

TEST_CASE("collectives by site: the same instance on one node and across two differs by the latency difference") {
  // GLM-5.1 under attention TP 8 on one node, and the same with its 8 GPUs spread over two 4-GPU nodes whose NICs give
  // each GPU the NVLink rate (so only the site changes): every all-reduce (78 attention, 75 MoE, 3 dense) pays
  // internode − intranode latency more.
  Scenario one = load_scenario("glm51-8xh200-tp8-r11");
  Scenario two = one;
  two.hardware.gpus_per_node = 4;
  two.hardware.nic.count = 4;
  two.hardware.nic.bits_per_s = one.hardware.nvlink_bytes_per_s * 8;
  REQUIRE(collective_link(one).nodes == 1);
  REQUIRE(collective_link(two).nodes == 2);
  REQUIRE(collective_link(two).bytes_per_s == collective_link(one).bytes_per_s);
  CostParams p;
  p.all_reduce_latency_intranode_ns = 10000;
  p.all_reduce_latency_internode_ns = 35000;
  CHECK(collective_site(one, p, false).latency_ns == 10000);
  CHECK(collective_site(two, p, false).internode);
  CHECK(collective_site(two, p, true).latency_ns == p.all_to_all_latency_internode_ns);
  const int64_t B = 4;
  const double link = collective_link(one).bytes_per_s;
  CHECK(attention_allreduce_ns(8, link, true, one.model, p, B) - attention_allreduce_ns(8, link, false, one.model, p, B) ==
        78 * 25000);
  const auto m1 = DecodeCostModel(rank_scenario(one), p, false).moe_phase(B, B / 8.0);
  const auto m2 = DecodeCostModel(rank_scenario(two), p, false).moe_phase(B, B / 8.0);
  CHECK(m2.all_to_all - m1.all_to_all == (75 + 3) * 25000);
  CHECK(m2.compute == m1.compute);
  // One GPU: no collective at all.
  Scenario single = load_scenario("gptoss-120b-1xh200");
  CHECK(collective_site(single, p, false).latency_ns == 0);
}

TEST_CASE("MoE collectives: DeepEP dispatch + combine under attention DP with EP, one all-reduce under attention TP") {
  const CostParams p = load_cost_params(kShipped, CostParams{}, true);
  // DeepSeek-V3.2 on 8 × H200, attention DP 8, EP 8: per MoE layer the DeepEP EP8 dispatch and combine of the GPU's
  // tokens at the intranode latency, the payload over this node's 450 GB/s NVLink.
  const Scenario dp = load_scenario("dsv32-8xh200-1tb");
  const CollectiveSite site = collective_site(dp, p, true);
  CHECK_FALSE(site.internode);
  const int moe_layers = dp.model.layers - dp.model.dense_layers;
  const auto m = DecodeCostModel(rank_scenario(dp), p, false).moe_phase(8 * 16, 16);
  const SimTime per_layer = deepep_ns(p.deepep, ExpertOp::kDispatch, 8, 16, dp.model.hidden_size, 8, site) +
                            deepep_ns(p.deepep, ExpertOp::kCombine, 8, 16, dp.model.hidden_size, 8, site);
  const SimTime dense = dp.model.dense_layers *
                        allreduce_ns(8 * 16 * dp.model.hidden_size * 2.0, 8, collective_site(dp, p, false),
                                     p.efficiency.nvlink);
  CHECK(m.all_to_all == per_layer * moe_layers + dense);
  // GLM-5.1 under attention TP 8 (EP 8 without DeepEP): every GPU holds every token, one all-reduce per MoE layer.
  const Scenario tp = load_scenario("glm51-8xh200-tp8-r11");
  const auto t = DecodeCostModel(rank_scenario(tp), p, false).moe_phase(4, 0.5);
  const SimTime ar = allreduce_ns(4 * tp.model.hidden_size * 2.0, 8, collective_site(tp, p, false), p.efficiency.nvlink);
  CHECK(t.all_to_all == ar * tp.model.layers);  // 75 MoE + 3 dense layers
}

TEST_CASE("cost file: the new keys' errors name the key, the retired ones say what replaced them") {
  for (const char* retired : {"all_to_all_latency: 20us\n", "step_overhead: 2ms\n"}) {
    CAPTURE(retired);
    CHECK_THROWS_WITH_AS(load_text("hs_cost_retired2.yaml", retired),
                         doctest::Contains("retired"), Error);
  }
  const std::string ok = kDeepEpHead + "  rows:\n    - {ep: 8, dispatch_us: 77, dispatch_gb_per_s: 98, combine_us: 114, "
                                       "combine_gb_per_s: 127}\n";
  CHECK(load_text("hs_deepep_ok.yaml", ok).deepep.rows.size() == 1);
  const std::string descending =
      ok + "    - {ep: 4, dispatch_us: 70, dispatch_gb_per_s: 98, combine_us: 100, combine_gb_per_s: 127}\n";
  CHECK_THROWS_WITH_AS(load_text("hs_deepep_desc.yaml", descending),
                       doctest::Contains("ascending"), Error);
  const std::string unknown = kDeepEpHead + "  rows:\n    - {ep: 8, dispatch_us: 77, dispatch_gb_per_s: 98, "
                                            "combine_us: 114, combine_gb_per_s: 127, latency_us: 3}\n";
  CHECK_THROWS_WITH_AS(load_text("hs_deepep_unknown.yaml", unknown),
                       doctest::Contains("rows[0].latency_us"), Error);
  const std::string no_rows = kDeepEpHead;
  CHECK_THROWS_WITH_AS(load_text("hs_deepep_norows.yaml", no_rows), doctest::Contains("rows"), Error);
  CHECK_THROWS_WITH_AS(load_text("hs_deepep_bare.yaml", "deepep_low_latency: 77\n"),
                       doctest::Contains("deepep_low_latency"), Error);
  const std::string zero = kDeepEpHead + "  rows:\n    - {ep: 8, dispatch_us: 77, dispatch_gb_per_s: 0, combine_us: 114, "
                                         "combine_gb_per_s: 127}\n";
  CHECK_THROWS_AS(load_text("hs_deepep_zero.yaml", zero), Error);
  CHECK_THROWS_WITH_AS(load_text("hs_cost_ar.yaml", "all_reduce_latency_internode: fast\n"),
                       doctest::Contains("all_reduce_latency_internode"), Error);
}

TEST_CASE("step overhead: the named terms add up, the batch-size sync only under attention DP") {
  const CostParams p = load_cost_params(kShipped, CostParams{}, true);
  const SimTime base = p.graph_launch_ns + p.step_sync_ns + p.sampling_ns + p.scheduler_exposed_ns;
  CHECK(p.step_overhead_ns(false) == base);
  CHECK(p.step_overhead_ns(true) == base + p.dp_batch_sync_ns);
  // The former 2 ms assumption is gone: graph launch 5.4 us and step sync 14.8 us (measured on an H200), sampling
  // 100 us (assumed), scheduler_exposed 0 (modelled: the overlap scheduler hides the host work) = 120.2 us.
  CHECK(p.scheduler_exposed_ns == 0);
  CHECK(base == 5400 + 14800 + 24000);
}

TEST_CASE("sensitivity: ±50 % of a per-step term moves TPOT by half of it, of a collective latency by its count") {
  const Scenario tp = load_scenario("glm51-8xh200-tp8-r11");
  const CostParams p = load_cost_params(kShipped, CostParams{}, true);
  CHECK(term_sensitivity_ns(tp, p, true, "sampling", 1, 32768) == p.sampling_ns / 2);
  CHECK(term_sensitivity_ns(tp, p, true, "dp_batch_sync", 1, 32768) == 0);  // attention TP: not charged
  // Attention TP 8 on one node: 78 attention + 75 MoE + 3 dense all-reduces per step, each paying the intranode latency.
  CHECK(term_sensitivity_ns(tp, p, true, "all_reduce_latency_intranode", 1, 32768) ==
        156 * p.all_reduce_latency_intranode_ns / 2);
  CHECK(term_sensitivity_ns(tp, p, true, "all_reduce_latency_internode", 1, 32768) == 0);
  CHECK(term_sensitivity_ns(tp, p, true, "efficiency.moe", 1, 32768) == -1);  // not a time
}

TEST_CASE("HiSparse per layer: the coordinator's clear of the B × K output slots is one more kernel per layer") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  GpuBatch b;
  b.requests = 4;
  b.sum_n = 4 * 65536.0;
  b.sum_attended = 4 * 2048.0;
  b.slow_path = 4;  // n > H: hit detection walks the LRU
  const DecodeCostModel hs(s, p, true);
  // Without a swap-in calibration: the plan kernel (selections + slot ids, and the slow path's LRU walk) plus the
  // memset of B × K int32, each a roofline kernel with its graph gap, every layer.
  const double K = s.deployment.hisparse.top_k, H = s.deployment.hisparse.device_buffer_size;
  auto kernel = [&](double bytes, const RooflineEfficiency& e) {
    return seconds_to_ns_ceil(std::max(0.0, bytes / (s.hardware.hbm_bytes_per_s * e.memory))) + p.graph_kernel_gap_ns;
  };
  const SimTime plan = kernel(4 * K * 8.0 + 4 * H * 8.0, p.efficiency.swap_in);
  const SimTime clear = kernel(4 * K * 4.0, p.efficiency.dense);
  CHECK(hs.gpu_phases(b).swap_in == (plan + clear) * s.model.layers);
  CHECK(hs.hisparse_output_clear_ns(4) == clear * s.model.layers);
  CHECK(DecodeCostModel(s, p, false).gpu_phases(b).swap_in == 0);
}
