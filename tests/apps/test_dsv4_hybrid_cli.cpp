// @brief `hisparse info` end to end on the DeepSeek-V4-Flash and hybrid Qwen3-Coder-Next deployments: the pool
// arithmetic with its formulas (text and JSON), plan on the hybrid saying what HiSparse could offload, and plan,
// advise and simulate (a short run) on both shipped DeepSeek-V4 deployments.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;

TEST_CASE("info on dsv4-flash-8xh200: DSV4 pools, #33979 and #30909 with formulas") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_info");
  const Run r = run("info --scenario dsv4-flash-8xh200", dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  // The figures of tests/core/test_dsv4_pool_budget.cpp, each next to its formula.
  for (const char* s : {"nvfp4  main   416 B + C4 indexer  132 B", "15,156,736 tokens", "floor(full / (4 × shrink))",
                        "757,836 entries", "R × Q = 65 × 1088", "16,568,320 tokens", "ceil((65 × 256 + 256 + 1) / 128)",
                        "min(logical_available, c4_device × 4)", "HiSparse offloads the C4 main KV only"}) {
    CAPTURE(s);
    CHECK(r.out.find(s) != std::string::npos);
  }
  const Run j = run("info --scenario dsv4-flash-8xh200 --json", dir);
  REQUIRE(j.status == 0);
  CHECK(j.out.find("\"attention\": \"dsv4-compressed\"") != std::string::npos);
  CHECK(j.out.find("\"key\": \"rc_c4_device_entries\"") != std::string::npos);
}

TEST_CASE("plan, advise and simulate run on the DeepSeek-V4 deployments") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_commands");
  for (const char* scenario : {"dsv4-flash-8xh200", "dsv4-pro-8xb200"}) {
    const std::string sc = scenario;
    for (const std::string& cmd :
         {"plan --scenario " + sc + " --seq-lens 16K,128K --no-plots --out ",
          "advise --scenario " + sc + " --seq-lens 64K --no-plots --out ",
          "simulate --scenario " + sc + " --workload synthetic_poisson --mode both --concurrency 4 --num-requests 8 "
          "--timeline-length 0 --out "}) {
      CAPTURE(cmd);
      const Run p = run(cmd + (dir / "out").string(), dir);
      CAPTURE(p.err);
      CHECK(p.status == 0);
    }
  }
  // Expected: plan names the DSV4 pools (C4 device and host pools in entries) and says what stays on the GPU.
  const Run p = run("plan --scenario dsv4-flash-8xh200 --seq-lens 128K --no-plots --out " + (dir / "p").string(), dir);
  REQUIRE(p.status == 0);
  CHECK(p.out.find("SGLang DSV4 pools per GPU") != std::string::npos);
  CHECK(p.out.find("C4 device pool 757,836 entries") != std::string::npos);
  CHECK(p.out.find("the C128 pool, the C4 indexer keys and the compress states stay on the GPU") != std::string::npos);
  // Expected: no warning of unpriced state reads (the compress states are read and priced every step).
  CHECK(p.out.find("not priced") == std::string::npos);
  // Expected: NVFP4 KV runs, and says its attention is not the measured table's.
  const Run nv = run("plan --scenario dsv4-flash-8xh200 --kv-dtype nvfp4 --seq-lens 128K --no-plots --out " +
                         (dir / "nv").string(), dir);
  REQUIRE(nv.status == 0);
  CHECK(nv.out.find("NVFP4 KV: the measured FlashMLA table holds no NVFP4 kernel") != std::string::npos);
  // --strategies on V4: tests/apps/test_dsv4_everywhere_cli.cpp.
}

TEST_CASE("info and plan on qwen3next-2xh200-tp2: Mamba pools, KV for the attention layers only") {
  const fs::path dir = hisparse::test::scratch_dir("hybrid_info");
  const Run r = run("info --scenario qwen3next-2xh200-tp2", dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  // tests/core/test_hybrid_budget.cpp: 594 Mamba slots, cap 198, KV pool 2,076,685 tokens over 12 layers.
  for (const char* s : {"594 slots", "198 requests", "2,076,685 tokens", "HybridLinearKVPool",
                        "36 of 48 layers are linear attention"}) {
    CAPTURE(s);
    CHECK(r.out.find(s) != std::string::npos);
  }
  const Run p = run("plan --scenario qwen3next-2xh200-tp2 --seq-lens 16K --no-plots --out " + (dir / "plan").string(), dir);
  CAPTURE(p.err);
  REQUIRE(p.status == 0);
  CHECK(p.out.find("only the 12 full-attention ones hold KV HiSparse could offload") != std::string::npos);
}
