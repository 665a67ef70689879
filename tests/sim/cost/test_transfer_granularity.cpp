// @brief Transfer granularity: one batched all-layer offload after prefill vs per-layer loads in decode, and the
// NUMA placement of the host pool, on a hand-made hardware spec.
#include <doctest/doctest.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/cost/transfer_granularity.h"

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
