// @brief Transfer granularity: one batched all-layer offload after prefill vs per-layer loads in decode, and the
// NUMA placement of the host pool, on a hand-made hardware spec; then the step model's use of them on a shipped
// deployment (per-layer miss copies, one staging copy, the remote pool's rate).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/cost/terms/transfer_granularity.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {
HardwareSpec hw() {
  HardwareSpec h;
  h.name = "test";
  h.pcie.h2d_bulk_bytes_per_s = 50e9;
  h.pcie.d2h_bulk_bytes_per_s = 40e9;
  h.pcie.latency_ns = 2000;
  h.host_dram_bytes_per_s_per_numa = 300e9;
  h.numa_nodes = 2;
  h.numa_cross_node_factor = 0.5;
  return h;
}
}  // namespace

TEST_CASE("transfer granularity: the offload after prefill is one copy, decode pays one copy per layer") {
  const NumaPlacement local{1, true};
  // 1000 tokens × 10 layers × 1000 B = 1e7 B at 40 GB/s = 250 us, plus one 2 us latency.
  const TransferCost off = prefill_offload_cost(hw(), 1000, 10, 1000, local);
  CHECK(off.transfers == 1);
  CHECK(off.ns == 252000);
  // 100 misses per layer × 10 layers × 1000 B = 1e6 B at 50 GB/s = 20 us, plus ten 2 us latencies.
  const TransferCost dec = decode_per_layer_cost(hw(), 100, 10, 1000, local);
  CHECK(dec.transfers == 10);
  CHECK(dec.ns == 40000);
  MESSAGE("no misses, no copy");
  CHECK(decode_per_layer_cost(hw(), 0, 10, 1000, local).ns == 0);
  CHECK_THROWS_AS(decode_per_layer_cost(hw(), 1, 0, 1000, local), Error);
}

TEST_CASE("transfer granularity: a GPU's host path is its link or its share of the node's DRAM, whichever is less") {
  // Expectation: one GPU alone is link-bound (50 GB/s < 300 GB/s); 8 GPUs on a node share 300 GB/s: 37.5 GB/s each;
  // reading the other node's pool halves that share (cross_node_factor 0.5): 18.75 GB/s.
  CHECK(host_path_bytes_per_s(hw(), true, {1, true}) == doctest::Approx(50e9));
  CHECK(host_path_bytes_per_s(hw(), true, {8, true}) == doctest::Approx(37.5e9));
  CHECK(host_path_bytes_per_s(hw(), true, {8, false}) == doctest::Approx(18.75e9));
  CHECK(host_path_bytes_per_s(hw(), true, {4, false}) == doctest::Approx(37.5e9));
}

TEST_CASE("hardware files: every shipped GPU has a numa block with its cross-node factor") {
  for (const char* name : {"h200", "h100-sxm", "h20", "h20-3e", "b200", "rtx-pro-6000"}) {
    const HardwareSpec h = load_hardware_spec(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/hardware/" + name + ".yaml");
    INFO(name);
    // Expectation: nodes, DRAM per node and a factor in (0, 1] are read from the `numa:` block.
    CHECK(h.numa_nodes == 2);
    CHECK(h.host_dram_bytes_per_s_per_numa == doctest::Approx(307.2e9));
    CHECK(h.numa_cross_node_factor == doctest::Approx(0.5));
  }
}

TEST_CASE("the step model prices its copies at these granularities, and a remote host pool at cross_node_factor") {
  // DeepSeek-V3.2 on 8 × H200 without calibrations: 61 decoder layers, 62 KV layers (MTP), rows of 1,152 B,
  // pcie.latency_ns 2,000 (assumed), h2d and d2h bulk 55.3 GB/s, 307.2 GB/s DRAM per NUMA node shared by 4 GPUs.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  load_cost_terms("auto", s, &p);
  apply_calibrations("none", "none", &s, &p);
  const StepEstimator local(s, p, KvMode::kHiSparse);
  // Decode: 6,100 misses over 61 layers = 100 rows per layer, one copy per layer: 61 transfers; the miss copy's fixed
  // part is those 61 × 2,000 ns = 122,000 ns.
  const TransferCost dec = local.decode_transfer(6100);
  CHECK(dec.transfers == 61);
  CHECK(dec.bytes == 6100.0 * 1152);
  CHECK(local.miss_copy(4, 6100).latency == 61 * 2000);
  // Prefill: a 1,000-token prompt leaves in one copy of 1,000 × 62 × 1,152 = 71,424,000 B.
  const TransferCost off = local.prefill_offload(1000);
  CHECK(off.transfers == 1);
  CHECK(off.bytes == 71424000.0);
  // Local pool: min(55.3, 307.2 / 4 = 76.8) = 55.3 GB/s both ways.
  CHECK(local.h2d_link() == doctest::Approx(55.3e9));
  CHECK(local.d2h_rate() == doctest::Approx(55.3e9));
  // Remote pool (host_pool_numa: remote): min(55.3, 76.8 × 0.5 = 38.4) = 38.4 GB/s, and the step's copy is slower.
  Scenario r = s;
  r.deployment.host_pool_remote_numa = true;
  const StepEstimator remote(r, p, KvMode::kHiSparse);
  CHECK(remote.h2d_link() == doctest::Approx(38.4e9));
  CHECK(remote.d2h_rate() == doctest::Approx(38.4e9));
  CHECK_FALSE(remote.numa_placement().local);
  GpuBatch b;
  for (int i = 0; i < 16; ++i) remote.add_request(b, 32768);
  const StepEstimate sl = local.closed_form(b, 16 * 6100.0), sr = remote.closed_form(b, 16 * 6100.0);
  CHECK(sr.h2d_transfer_ns > sl.h2d_transfer_ns);
  CHECK(sr.step_ns > sl.step_ns);
}

TEST_CASE("host_pool_numa is read from the deployment, local by default, and checked") {
  CHECK_FALSE(load_scenario("dsv32-8xh200-1tb").deployment.host_pool_remote_numa);
  const auto dir = std::filesystem::path(HISPARSE_BINARY_DIR) / "test_tmp" / "numa_binding";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "remote.yaml") << "model: deepseek-v3.2\nhardware: h200\nhost_dram_bytes: 1TB\nhost_pool_numa: remote\n";
  CHECK(load_scenario((dir / "remote.yaml").string()).deployment.host_pool_remote_numa);
  // Expected: a value other than local / remote is refused, naming the field.
  std::ofstream(dir / "bad.yaml") << "model: deepseek-v3.2\nhardware: h200\nhost_dram_bytes: 1TB\nhost_pool_numa: far\n";
  CHECK_THROWS_WITH_AS(load_scenario((dir / "bad.yaml").string()), doctest::Contains("host_pool_numa"), Error);
}

TEST_CASE("simulate counts the per-layer miss loads and one all-layer staging copy per colocated request") {
  // One HiSparse request of 10,000 prompt tokens, 3 output tokens, on the 8 × H200 DeepSeek-V3.2 node.
  Scenario sc = dsv32_node();
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  const int64_t L = sc.model.layers;
  // PD: the KV arrives by RDMA, no staging copy; the first step misses (empty buffer), so at least one rank-step
  // loads its misses in L per-layer copies, and every loading rank-step in exactly L.
  const ServingResult pd = run_serving(sc, one_request(10000, 3), opt);
  CHECK(pd.staging_copies == 0);
  CHECK(pd.miss_transfers >= L);
  CHECK(pd.miss_transfers % L == 0);
  // Colocated: the prompt is backed up in one batched copy of every KV layer: 10,000 × 62 × 1,152 B.
  sc.deployment.pd_disaggregation = false;
  const ServingResult co = run_serving(sc, one_request(10000, 3), opt);
  CHECK(co.staging_copies == 1);
  CHECK(co.staging_bytes == doctest::Approx(10000.0 * 62 * 1152));
}

TEST_CASE("host layout: the kernel layouts copy per call, page_first_direct per page per layer; the bytes are equal") {
  const NumaPlacement local{1, true};
  // Expectation (core/host_layout.h): layer_first and page_first move any rows of a call with one kernel, so a decode
  // load of 100 rows in each of 10 layers is 10 calls and a prefill offload of 1,000 tokens one call; page_first_direct
  // copies each page of each layer on its own: 100 × 10 = 1,000 decode calls (a missed row is its own page run) and
  // ceil(1,000 / 64) = 16 pages × 10 layers = 160 offload calls. The bytes are 1e6 B and 1e7 B in every layout.
  for (HostPoolLayout l : {HostPoolLayout::kLayerFirst, HostPoolLayout::kPageFirst, HostPoolLayout::kPageFirstDirect}) {
    CAPTURE(host_pool_layout_name(l));
    const bool direct = l == HostPoolLayout::kPageFirstDirect;
    const TransferCost dec = decode_per_layer_cost(hw(), 100, 10, 1000, local, l);
    CHECK(dec.transfers == (direct ? 1000 : 10));
    CHECK(dec.bytes == 1e6);
    const TransferCost off = prefill_offload_cost(hw(), 1000, 10, 1000, local, l, 64);
    CHECK(off.transfers == (direct ? 160 : 1));
    CHECK(off.bytes == 1e7);
    // Decode at 50 GB/s: 20 us of bytes plus 2 us per call; no rows, no call.
    CHECK(dec.ns == 20000 + dec.transfers * 2000);
    CHECK(host_copy_calls(l, 0, 10, true) == 0);
  }
  CHECK_THROWS_AS(prefill_offload_cost(hw(), 1000, 10, 1000, local, HostPoolLayout::kLayerFirst, 0), Error);
}

TEST_CASE("host layout: read from the deployment, layer_first by default (SGLang HiSparse's), priced by the step model") {
  // Expectation: every shipped deployment leaves host_layout out, so it is layer_first, what SGLang's HiSparse
  // allocates (hisparse_coordinator.py:79-86, :98-105 at 009e640a); a value outside the three is refused by name.
  CHECK(load_scenario("dsv32-8xh200-1tb").deployment.host_layout == HostPoolLayout::kLayerFirst);
  const auto dir = std::filesystem::path(HISPARSE_BINARY_DIR) / "test_tmp" / "host_layout";
  std::filesystem::create_directories(dir);
  const std::string head = "model: deepseek-v3.2\nhardware: h200\nhost_dram_bytes: 1TB\n";
  std::ofstream(dir / "direct.yaml") << head << "host_layout: page_first_direct\n";
  CHECK(load_scenario((dir / "direct.yaml").string()).deployment.host_layout == HostPoolLayout::kPageFirstDirect);
  std::ofstream(dir / "bad.yaml") << head << "host_layout: page_head\n";  // MHA only in SGLang; HiSparse rows are MLA
  CHECK_THROWS_WITH_AS(load_scenario((dir / "bad.yaml").string()), doctest::Contains("host_layout"), Error);

  // The step model on DeepSeek-V3.2 (61 offloaded layers, 62 KV layers, 1,152 B rows, pcie.latency_ns 2,000 assumed),
  // uncalibrated: 6,100 misses = 100 rows per layer.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p;
  load_cost_terms("auto", s, &p);
  apply_calibrations("none", "none", &s, &p);
  Scenario pf = s, direct = s;
  pf.deployment.host_layout = HostPoolLayout::kPageFirst;
  direct.deployment.host_layout = HostPoolLayout::kPageFirstDirect;
  const StepEstimator lf_est(s, p, KvMode::kHiSparse), pf_est(pf, p, KvMode::kHiSparse),
      direct_est(direct, p, KvMode::kHiSparse);
  // page_first: one kernel per layer as layer_first: the same 61 calls, the same miss copy, backup and step.
  CHECK(pf_est.decode_transfer(6100).transfers == 61);
  CHECK(pf_est.miss_copy(4, 6100).latency == lf_est.miss_copy(4, 6100).latency);
  CHECK(pf_est.backup(16).latency == lf_est.backup(16).latency);
  // page_first_direct: 100 × 61 = 6,100 calls, so the miss copy's fixed part is 6,100 × 2,000 ns = 12.2 ms; the
  // backup of 16 requests' previous token is 16 × 62 rows = 992 calls = 1,984,000 ns (layer_first: one, 2,000 ns);
  // the bytes do not change.
  CHECK(direct_est.decode_transfer(6100).transfers == 6100);
  CHECK(direct_est.miss_copy(4, 6100).latency == 6100 * 2000);
  CHECK(direct_est.miss_copy(4, 6100).bytes == lf_est.miss_copy(4, 6100).bytes);
  CHECK(lf_est.backup(16).latency == 2000);
  CHECK(direct_est.backup(16).latency == 992 * 2000);
  CHECK(direct_est.backup(16).bytes == lf_est.backup(16).bytes);
  // Prefill: 1,000 tokens in pages of 64 (the deployment's page_size): 16 pages × 62 layers = 992 calls.
  CHECK(direct_est.prefill_offload(1000).transfers == 16 * 62);
  CHECK(direct_est.prefill_offload(1000).bytes == lf_est.prefill_offload(1000).bytes);
  // A closed-form step with 16 requests of 32,768 tokens is slower with the direct copies.
  GpuBatch b;
  for (int i = 0; i < 16; ++i) lf_est.add_request(b, 32768);
  CHECK(direct_est.closed_form(b, 16 * 6100.0).step_ns > lf_est.closed_form(b, 16 * 6100.0).step_ns);
  CHECK(pf_est.closed_form(b, 16 * 6100.0).step_ns == lf_est.closed_form(b, 16 * 6100.0).step_ns);
}
