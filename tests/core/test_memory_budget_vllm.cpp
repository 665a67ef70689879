// @brief vLLM's HiSparse host pool: host_pool_gib instead of host_to_device_ratio and host_pool_sharing (per_rank /
// shared), by hand on the shipped dsv32-8xh200-vllm-tp8 scenario; the loader's minimum pool (the config's own errors
// are in test_hisparse_config.cpp).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"

using namespace hisparse;

TEST_CASE("memory budget: dsv32-8xh200-vllm-tp8 (host_pool_gib 200, shared over attention TP 8) by hand") {
  const Scenario s = load_scenario("dsv32-8xh200-vllm-tp8");
  const MemoryBudget b = compute_memory_budget(s);
  // Weights per GPU under tp 8, dp_attention 1: 690e9 / 8 = 86.25e9; KV budget = 150,754,820,096 × 0.85 − 86.25e9
  // = 41,891,597,081.6.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(41891597081.6));
  // Host pool: blocks of 64 × 62 × 1,152 = 4,571,136 B; floor(200 × 2^30 / 4,571,136) = 46,979 blocks = 3,006,656 tokens.
  CHECK(b.host_pool_tokens.value == 3006656);
  CHECK(b.host_pool_tokens.formula.find("host_pool_gib") != std::string::npos);
  // Every host token keeps its indexer key on the GPU: logical = indexer pool = host pool.
  CHECK(b.logical_pool_tokens.value == 3006656);
  CHECK(b.indexer_pool_tokens.value == 3006656);
  // Device pool = floor((41,891,597,081.6 − 3,006,656 × 8,184) / 71,424 / 64) × 64 = floor(242,008.6 / 64) × 64
  // = 241,984; the cell is the latent only (62 × 1,152 = 71,424).
  CHECK(b.hisparse_cell_bytes.value == 71424);
  CHECK(b.device_pool_tokens.value == 241984);
  CHECK(b.indexer_pool_bytes.value + b.device_latent_pool_bytes.value <= b.kv_budget_bytes.value);
  // One pool holds 3,006,656 × 71,424 = 214,747,398,144 B. Shared: one copy per node for the rank's 8 GPUs, so
  // 26,843,424,768 B per GPU and 214,747,398,144 B per node; 2 TiB − that = 1,984,275,857,408 B left.
  CHECK(b.host_pool_bytes_per_gpu.value == doctest::Approx(214747398144.0 / 8));
  CHECK(b.host_pool_bytes_per_node.value == doctest::Approx(214747398144.0));
  CHECK(b.host_dram_left_bytes.value == doctest::Approx(1984275857408.0));
  CHECK(b.host_pool_bytes_per_gpu.formula.find("min(attention_tp, GPUs per node) = min(8, 8)") != std::string::npos);
  // per_rank: every GPU its own copy, 8 × 214,747,398,144 = 1,717,979,185,152 B per node, 481,044,070,400 B left;
  // the pool's token count (what admission sees) does not change.
  Scenario p = s;
  p.deployment.hisparse.host_pool_sharing = "per_rank";
  const MemoryBudget bp = compute_memory_budget(p);
  CHECK(bp.host_pool_tokens.value == b.host_pool_tokens.value);
  CHECK(bp.host_pool_bytes_per_node.value == doctest::Approx(1717979185152.0));
  CHECK(bp.host_dram_left_bytes.value == doctest::Approx(481044070400.0));
  // Attention DP (8 ranks of one GPU): nothing to share, both modes hold 8 pools per node.
  Scenario dp = s;
  dp.deployment.decode.dp_attention = 8;
  Scenario dp_private = dp;
  dp_private.deployment.hisparse.host_pool_sharing = "per_rank";
  CHECK(compute_memory_budget(dp).host_pool_bytes_per_node.value ==
        doctest::Approx(compute_memory_budget(dp_private).host_pool_bytes_per_node.value));
}

TEST_CASE("scenario loader: a host_pool_gib too small for one context_length request is refused, as vLLM does") {
  // 0.1 GiB = floor(107,374,182.4 / 4,571,136) = 23 blocks; context 163,840 needs 163,840 / 64 + 2 = 2,562.
  const std::filesystem::path dir = std::filesystem::path(HISPARSE_BINARY_DIR) / "test_tmp" / "vllm_host_pool";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tiny.yaml").string();
  {
    std::ofstream out(path);
    out << "name: tiny\nmodel: deepseek-v3.2\nhardware: h200\nhost_dram_bytes: 1TiB\npd_disaggregation: true\n"
           "hisparse:\n  host_pool_gib: 0.1\n";
  }
  std::string err;
  try {
    load_scenario(path);
  } catch (const Error& e) {
    err = e.what();
  }
  CHECK(err.find("hisparse.host_pool_gib: got 0.1 GiB (23 blocks of 64 tokens), expected at least 2562 blocks") !=
        std::string::npos);
}
