// @brief The memory arithmetic against values computed by hand (the arithmetic is written before each check).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"

using namespace hisparse;

TEST_CASE("memory budget: dsv32-8xh200-1tb by hand") {
  const MemoryBudget b = compute_memory_budget(load_scenario("dsv32-8xh200-1tb"));
  // Per token: 62 KV layers (61 + 1 MTP); latent 62 × 1152 = 71,424 B; indexer 62 × 132 = 8,184 B.
  CHECK(b.kv_layers.value == 62);
  CHECK(b.latent_bytes_per_token.value == 71424);
  CHECK(b.indexer_bytes_per_token.value == 8184);
  // Cells: full 62 × (1152 + 132) = 79,608; HiSparse 62 × (1152 + 5 × 132) = 62 × 1812 = 112,344.
  CHECK(b.full_cell_bytes.value == 79608);
  CHECK(b.hisparse_cell_bytes.value == 112344);
  // HBM 143771 MiB = 150,754,820,096 B. Weights per GPU with dp_attention = tp = 8:
  // (690e9 − 14.3e9) / 8 + 14.3e9 = 84.4625e9 + 14.3e9 = 98.7625e9.
  CHECK(b.hbm_bytes.value == 150754820096.0);
  CHECK(b.weights_per_gpu_bytes.value == doctest::Approx(98.7625e9));
  // KV budget = 150,754,820,096 × 0.85 − 98.7625e9 = 128,141,597,081.6 − 98,762,500,000 = 29,379,097,081.6.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(29379097081.6));
  // Device pool = floor(29,379,097,081.6 / 112,344) = 261,510 → whole pages of 64: 4,086 × 64 = 261,504.
  CHECK(b.device_pool_tokens.value == 261504);
  // Full-KV pool = floor(29,379,097,081.6 / 79,608) = 369,047 → 5,766 × 64 = 369,024.
  CHECK(b.full_pool_tokens.value == 369024);
  // Logical and indexer pools = 261,504 × 5 = 1,307,520.
  CHECK(b.logical_pool_tokens.value == 1307520);
  CHECK(b.indexer_pool_tokens.value == 1307520);
  // Indexer bytes = 1,307,520 × 8,184 = 10,700,743,680; device latent = 261,504 × 71,424 = 18,677,661,696.
  CHECK(b.indexer_pool_bytes.value == 10700743680.0);
  CHECK(b.device_latent_pool_bytes.value == 18677661696.0);
  // Both fit in the budget: 10.70e9 + 18.68e9 = 29.378e9 ≤ 29.379e9.
  CHECK(b.indexer_pool_bytes.value + b.device_latent_pool_bytes.value <= b.kv_budget_bytes.value);
  // Host pool = (floor(1,307,520 / 64) + 1) × 64 = (20,430 + 1) × 64 = 1,307,584 tokens;
  // × 71,424 = 93,392,879,616 B per GPU; × 8 = 747,143,036,928 B per node; 1 TiB − that = 352,368,590,848 B.
  CHECK(b.host_pool_tokens.value == 1307584);
  CHECK(b.host_pool_bytes_per_gpu.value == 93392879616.0);
  CHECK(b.host_pool_bytes_per_node.value == 747143036928.0);
  CHECK(b.host_dram_left_bytes.value == 352368590848.0);
  // Device buffer = (4096 + 64) × 62 × 1152 = 4160 × 71,424 = 297,123,840 B; floor(261,504 / 4,160) = 62 buffers.
  CHECK(b.device_buffer_tokens.value == 4160);
  CHECK(b.device_buffer_bytes.value == 297123840.0);
  CHECK(b.max_buffers_per_device_pool.value == 62);

  REQUIRE(b.per_seq_len.size() == 4);
  // Full KV of one request: 16,384 × 79,608 = 1,304,297,472; 32,768 × 79,608 = 2,608,594,944;
  // 65,536 × 79,608 = 5,217,189,888; 131,072 × 79,608 = 10,434,379,776.
  CHECK(b.per_seq_len[0].seq_len == 16384);
  CHECK(b.per_seq_len[0].full_kv_bytes.value == 1304297472.0);
  CHECK(b.per_seq_len[1].full_kv_bytes.value == 2608594944.0);
  CHECK(b.per_seq_len[2].full_kv_bytes.value == 5217189888.0);
  CHECK(b.per_seq_len[3].full_kv_bytes.value == 10434379776.0);
  // 128K split: latent 131,072 × 71,424 = 9,361,686,528; indexer 131,072 × 8,184 = 1,072,693,248.
  CHECK(b.per_seq_len[3].full_latent_bytes.value == 9361686528.0);
  CHECK(b.per_seq_len[3].full_indexer_bytes.value == 1072693248.0);
  // HiSparse HBM at 128K = buffer 297,123,840 + indexer 1,072,693,248 = 1,369,817,088.
  CHECK(b.per_seq_len[3].hisparse_hbm_bytes.value == 1369817088.0);
  CHECK(b.per_seq_len[3].hisparse_host_bytes.value == 9361686528.0);
  // A PD decode server keeps R = 512 tokens per running request (SGLang's num_reserved_decode_tokens).
  CHECK(b.reserved_decode_tokens.value == 512);
  // Max requests at 16K: full floor((369,024 + 512) / (16,384 + 512)) = floor(369,536 / 16,896) = 21; HiSparse
  // min(floor(261,504 / 4,160) = 62, floor((1,307,520 + 512) / 16,896) = 77) = 62. At 128K: full
  // floor(369,536 / 131,584) = 2; HiSparse min(62, floor(1,308,032 / 131,584) = 9) = 9.
  CHECK(b.per_seq_len[0].max_requests_full.value == 21);
  CHECK(b.per_seq_len[0].max_requests_hisparse.value == 62);
  CHECK(b.per_seq_len[3].max_requests_full.value == 2);
  CHECK(b.per_seq_len[3].max_requests_hisparse.value == 9);
  // Every figure carries a formula.
  for (const Figure* f : b.figures()) {
    CAPTURE(f->key);
    CHECK_FALSE(f->formula.empty());
  }
  CHECK(b.device_pool_tokens.formula.find("112344") != std::string::npos);
}

TEST_CASE("memory budget: dsv32-2x8xh20-pd (attention TP, ratio 10) by hand") {
  const MemoryBudget b = compute_memory_budget(load_scenario("dsv32-2x8xh20-pd"));
  // Weights with dp_attention 1: everything sharded over tp 8: 690e9 / 8 = 86.25e9.
  CHECK(b.weights_per_gpu_bytes.value == doctest::Approx(86.25e9));
  // Budget = 97871 MiB × 0.92 − 86.25e9 = 102,625,181,696 × 0.92 − 86.25e9 = 94,415,167,160.32 − 86.25e9
  //        = 8,165,167,160.32.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(8165167160.32));
  // Cell = 62 × (1152 + 10 × 132) = 62 × 2472 = 153,264; floor(8,165,167,160.32 / 153,264) = 53,275 → 832 × 64 = 53,248.
  CHECK(b.hisparse_cell_bytes.value == 153264);
  CHECK(b.device_pool_tokens.value == 53248);
  // Logical 532,480; host (8,320 + 1) × 64 = 532,544 tokens; × 71,424 = 38,036,422,656 B per GPU;
  // × 8 GPUs = 304,291,381,248 B.
  CHECK(b.logical_pool_tokens.value == 532480);
  CHECK(b.host_pool_tokens.value == 532544);
  CHECK(b.host_pool_bytes_per_node.value == 304291381248.0);
}

TEST_CASE("memory budget: fp8 rows, small pools, overrides and the short-sequence buffer") {
  Scenario s;
  s.model.layers = 3;
  s.model.mtp_layers = 0;
  s.model.kv_lora_rank = 512;
  s.model.qk_rope_head_dim = 64;
  s.model.latent_row_bytes = 1152;
  s.model.latent_row_bytes_fp8 = 656;
  s.model.indexer_head_dim = 128;
  s.model.indexer_key_bytes = 132;
  s.model.weight_bytes = 1000;
  s.model.dp_replicated_weight_bytes = 200;
  s.hardware.hbm_bytes = 10000000;
  s.hardware.gpus_per_node = 8;
  s.deployment.decode.gpus = 4;
  s.deployment.decode.tp = 4;
  s.deployment.decode.dp_attention = 2;
  s.deployment.kv_dtype = KvDtype::kFp8;
  s.deployment.mem_fraction_static = 0.5;
  s.deployment.page_size = 16;
  s.deployment.activation_reserve_bytes = 100;
  s.deployment.host_dram_bytes = 1e9;
  s.deployment.hisparse.top_k = 32;
  s.deployment.hisparse.device_buffer_size = 48;
  s.deployment.hisparse.host_to_device_ratio = 3;

  const MemoryBudget b = compute_memory_budget(s, {40, 100});
  // fp8 row 656; cell = 3 × (656 + 3 × 132) = 3 × 1052 = 3,156.
  CHECK(b.latent_row_bytes.value == 656);
  CHECK(b.hisparse_cell_bytes.value == 3156);
  // Weights: (1000 − 200) / 4 + 200 × 2 / 4 = 200 + 100 = 300. Budget = 1e7 × 0.5 − 300 − 100 = 4,999,600.
  CHECK(b.weights_per_gpu_bytes.value == 300);
  CHECK(b.kv_budget_bytes.value == 4999600);
  // Device pool: floor(4,999,600 / 3,156) = 1,584 → 99 pages of 16 = 1,584. Logical 4,752.
  CHECK(b.device_pool_tokens.value == 1584);
  CHECK(b.logical_pool_tokens.value == 4752);
  // Host pools of 4 GPUs: (floor(4752 / 16) + 1) × 16 = 4,768 tokens × 3 × 656 = 9,383,424 B × 4 = 37,533,696.
  CHECK(b.host_pool_tokens.value == 4768);
  CHECK(b.host_pool_bytes_per_node.value == 37533696);
  // seq 40 ≤ H = 48: the buffer holds the paged sequence (48 slots), seq 100 > H: H + page = 64 slots.
  // HBM at 40 = 48 × 3 × 656 + 40 × 3 × 132 = 94,464 + 15,840 = 110,304.
  CHECK(b.per_seq_len[0].hisparse_hbm_bytes.value == 110304);
  // Max HiSparse at 40: min(floor(1584 / 48) = 33, floor(4752 / 48) = 99) = 33;
  // at 100 (paged 112): min(floor(1584 / 64) = 24, floor(4752 / 112) = 42) = 24.
  CHECK(b.per_seq_len[0].max_requests_hisparse.value == 33);
  CHECK(b.per_seq_len[1].max_requests_hisparse.value == 24);

  // Overrides replace derivations and say so.
  s.deployment.memory.device_pool_tokens = 640;
  s.deployment.memory.host_pool_tokens = 5000;
  s.deployment.max_running_requests = 7;
  const MemoryBudget o = compute_memory_budget(s, {40});
  CHECK(o.device_pool_tokens.value == 640);
  CHECK(o.device_pool_tokens.formula.find("override") != std::string::npos);
  CHECK(o.logical_pool_tokens.value == 1920);
  CHECK(o.host_pool_tokens.value == 5000);
  // min(floor(640 / 48) = 13, floor(1920 / 48) = 40) = 13, capped at max_running_requests 7.
  CHECK(o.per_seq_len[0].max_requests_hisparse.value == 7);
}

TEST_CASE("memory budget: building blocks") {
  CHECK(pool_tokens(1000, 10, 16) == 96);   // floor(100 / 16) × 16
  CHECK(pool_tokens(-5, 10, 16) == 0);
  CHECK(host_pool_tokens(128, 64) == 192);  // SGLang adds a page even when aligned: (2 + 1) × 64
  CHECK(host_pool_tokens(130, 64) == 192);
  CHECK(round_up_to_page(65, 64) == 128);
  CHECK(round_up_to_page(64, 64) == 64);
  // Without a reserve a pool of 1,000 holds floor(1000 / 100) = 10 requests of 100 tokens.
  CHECK(requests_in_pool(int64_t{1000}, int64_t{100}, int64_t{0}, "pool") == 10);
  // With 50 reserved per admitted request: floor((1000 + 50) / (100 + 50)) = 7; the 7th is admitted because
  // 6 × (100 + 50) + 100 = 1,000 ≤ 1,000, and an 8th would need 7 × 150 + 100 = 1,150 > 1,000.
  std::string f;
  CHECK(requests_in_pool(int64_t{1000}, int64_t{100}, int64_t{50}, "pool", &f) == 7);
  CHECK(f == "floor((pool + reserved) / (paged_seq_len + reserved)) = floor((1000 + 50) / (100 + 50))");
  // A request of no tokens is an error, not a division by zero.
  CHECK_THROWS_AS(requests_in_pool(int64_t{1000}, int64_t{0}, int64_t{0}, "pool"), Error);
  // Over expected (mix-averaged) lengths, as `advise` asks: whole arguments give the integer answers above.
  CHECK(requests_in_pool(1000.0, 100.0, 0.0, "pool") == 10);
  CHECK(requests_in_pool(1000.0, 100.0, 50.0, "pool", &f) == 7);
  CHECK(f == "floor((pool + reserved) / (E[paged seq_len] + reserved)) = floor((1000 + 50) / (100.0 + 50))");
  // A mix whose expected request is 137.5 tokens: floor(1050 / 187.5) = floor(5.6) = 5 (not rounded to 6).
  CHECK(requests_in_pool(1000.0, 137.5, 50.0, "pool") == 5);
  // A quotient that is whole up to rounding counts whole: 3 / (0.1 + 0.2) is 9.999999999999998 in doubles.
  CHECK(requests_in_pool(3.0, 0.1 + 0.2, 0.0, "pool", &f) == 10);
  CHECK(f == "floor(pool / E[paged seq_len]) = floor(3 / 0.3)");
  CHECK_THROWS_AS(requests_in_pool(1000.0, 0.0, 0.0, "pool"), Error);
}

// ---- GQA / MHA and sliding-window hybrids (SGLang's MHATokenToKVPool and SWAKVPool; docs/capacity.md) ----

TEST_CASE("memory budget: llama31-8b-1xh100 (MHA pool) by hand") {
  const Scenario s = load_scenario("llama31-8b-1xh100");
  const MemoryBudget b = compute_memory_budget(s);
  CHECK(b.attention == "gqa");
  CHECK_FALSE(b.sparse_indexer);
  // KV heads per GPU = max(1, 8 / 1) = 8; K + V row = 2 × 8 × 128 × 2 (bf16) = 4,096 B per token per layer.
  CHECK(b.kv_heads_per_rank.value == 8);
  CHECK(b.latent_row_bytes.value == 4096);
  CHECK(b.latent_row_bytes.key == "kv_row_bytes");
  // Cell = 32 layers × 4,096 = 131,072 B per token (no indexer).
  CHECK(b.full_cell_bytes.value == 131072);
  CHECK(b.indexer_key_bytes.value == 0);
  // KV budget = 85,520,809,984 × 0.85 − 16,060,522,496 (bf16 weights, tp 1) = 56,632,165,990.4 B.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(56632165990.4));
  // max_total_num_tokens = floor(56,632,165,990.4 / 131,072) = 432,069 (page 1).
  CHECK(b.full_pool_tokens.value == 432069);
  // HiSparse pools: not applicable, zero, and said so.
  CHECK(b.device_pool_tokens.value == 0);
  CHECK(b.device_pool_tokens.formula.find("not applicable") != std::string::npos);
  // Per request at 16K: 16,384 × 32 × 4,096 = 2,147,483,648 B; floor(432,069 / 16,384) = 26 requests;
  // at 128K: 17,179,869,184 B and floor(432,069 / 131,072) = 3.
  REQUIRE(b.per_seq_len.size() == 4);
  CHECK(b.per_seq_len[0].full_kv_bytes.value == 2147483648.0);
  CHECK(b.per_seq_len[0].max_requests_full.value == 26);
  CHECK(b.per_seq_len[3].full_kv_bytes.value == 17179869184.0);
  CHECK(b.per_seq_len[3].max_requests_full.value == 3);
  // Every figure printed carries its formula.
  for (const Figure* f : b.figures()) {
    CAPTURE(f->key);
    CHECK_FALSE(f->formula.empty());
  }
}

TEST_CASE("memory budget: qwen3-32b-2xh200-tp2 splits the KV heads over attention TP") {
  const Scenario s = load_scenario("qwen3-32b-2xh200-tp2");
  const MemoryBudget b = compute_memory_budget(s);
  // 8 KV heads over tp 2 → 4 per GPU; row = 2 × 4 × 128 × 2 = 2,048 B; cell = 64 × 2,048 = 131,072 B.
  CHECK(b.kv_heads_per_rank.value == 4);
  CHECK(b.latent_row_bytes.value == 2048);
  CHECK(b.full_cell_bytes.value == 131072);
  // Weights per GPU = 65,524,246,528 / 2 = 32,762,123,264; budget = 150,754,820,096 × 0.85 − that
  // = 128,141,597,081.6 − 32,762,123,264 = 95,379,473,817.6; pool = floor(/ 131,072) = 727,687.
  CHECK(b.weights_per_gpu_bytes.value == doctest::Approx(32762123264.0));
  CHECK(b.kv_budget_bytes.value == doctest::Approx(95379473817.6));
  CHECK(b.full_pool_tokens.value == 727687);
  // Per request on one GPU at 32K: 32,768 × 64 × 2,048 = 4,294,967,296 B; floor(727,687 / 32,768) = 22.
  CHECK(b.per_seq_len[1].full_kv_bytes.value == 4294967296.0);
  CHECK(b.per_seq_len[1].max_requests_full.value == 22);
}

TEST_CASE("memory budget: KV heads are replicated when attention TP exceeds them") {
  Scenario s = load_scenario("llama31-8b-1xh100");
  s.deployment.decode.gpus = s.deployment.decode.tp = 16;
  // get_num_kv_heads(16) = max(1, 8 / 16) = 1: each GPU keeps one whole KV head; row = 2 × 1 × 128 × 2 = 512 B.
  const MemoryBudget b = compute_memory_budget(s);
  CHECK(b.kv_heads_per_rank.value == 1);
  CHECK(b.latent_row_bytes.value == 512);
  CHECK(b.kv_heads_per_rank.formula.find("replicated") != std::string::npos);
  // fp8 KV halves the row: 2 × 8 × 128 × 1 = 2,048 B at tp 1.
  Scenario f = load_scenario("llama31-8b-1xh100");
  f.deployment.kv_dtype = KvDtype::kFp8;
  CHECK(compute_memory_budget(f).latent_row_bytes.value == 2048);
}

TEST_CASE("memory budget: gptoss-120b-1xh200 SWA pools by hand") {
  const Scenario s = load_scenario("gptoss-120b-1xh200");
  const MemoryBudget b = compute_memory_budget(s);
  CHECK(b.attention == "gqa+swa");
  // 36 layers alternating sliding / full: 18 + 18; window 128.
  CHECK(b.full_layers == 18);
  CHECK(b.sliding_layer_count == 18);
  CHECK(b.sliding_window == 128);
  // Row = 2 × 8 × 64 × 2 = 2,048 B; profile cell = 36 × 2,048 = 73,728 B.
  CHECK(b.latent_row_bytes.value == 2048);
  CHECK(b.full_cell_bytes.value == 73728);
  // Budget = 128,141,597,081.6 − 65.1e9 = 63,041,597,081.6; profiled max_total_num_tokens = floor(/ 73,728) = 855,056.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(63041597081.6));
  CHECK(b.profile_pool_tokens.value == 855056);
  // set_num_tokens_hybrid_swa: total = 855,056 × 73,728 = 63,041,568,768 B; denominator = 2,048 × 18 + 0.8 × 2,048 × 18
  // = 66,355.2; full = int(63,041,568,768 / 66,355.2) = 950,062; swa = int(950,062 × 0.8) = 760,049 (page 1).
  CHECK(b.swa_full_tokens_ratio.value == doctest::Approx(0.8));
  CHECK(b.full_pool_tokens.value == 950062);
  CHECK(b.swa_pool_tokens.value == 760049);
  // The two pools never exceed the profiled memory: 950,062 × 18 × 2,048 + 760,049 × 18 × 2,048 ≤ 63,041,568,768.
  CHECK(b.full_pool_tokens.value * 18 * 2048 + b.swa_pool_tokens.value * 18 * 2048 <= 63041568768.0);
  // Per request at 16K: full layers 16,384 × 18 × 2,048 + sliding min(16,384, 128 + 1) = 129 × 18 × 2,048
  // = 603,979,776 + 4,755,456 = 608,735,232 B; requests = min(floor(950,062 / 16,384), floor(760,049 / 129)) = 57.
  CHECK(b.per_seq_len[0].swa_tokens.value == 129);
  CHECK(b.per_seq_len[0].full_kv_bytes.value == 608735232.0);
  CHECK(b.per_seq_len[0].max_requests_full.value == 57);
  // At 128K: (131,072 × 18 + 129 × 18) × 2,048 = 4,836,593,664 B; floor(950,062 / 131,072) = 7.
  CHECK(b.per_seq_len[3].full_kv_bytes.value == 4836593664.0);
  CHECK(b.per_seq_len[3].max_requests_full.value == 7);
  // A request shorter than the window keeps all of it on every layer: 100 tokens × 36 × 2,048.
  CHECK(full_kv_request_bytes(b, 100) == 100.0 * 36 * 2048);
}

TEST_CASE("memory budget: SWA pools round each pool down to whole pages, and follow the ratio") {
  Scenario s = load_scenario("gptoss-120b-1xh200");
  s.deployment.page_size = 64;
  const MemoryBudget b = compute_memory_budget(s);
  // Profiled = floor(855,056.38 / 64) × 64 = 855,040; total = 855,040 × 73,728 = 63,040,389,120;
  // full = int(/ 66,355.2) = 950,044 → 950,016 (pages); swa = int(950,044 × 0.8) = 760,035 → 760,000.
  CHECK(b.profile_pool_tokens.value == 855040);
  CHECK(b.full_pool_tokens.value == 950016);
  CHECK(b.swa_pool_tokens.value == 760000);
  // A sliding layer keeps window + page = 128 + 64 = 192 tokens of a long request.
  CHECK(sliding_tokens_kept(b, 16384) == 192);
  Scenario r = load_scenario("gptoss-120b-1xh200");
  r.deployment.swa_full_tokens_ratio = 0.5;
  // Denominator 2,048 × 18 × 1.5 = 55,296: full = int(63,041,568,768 / 55,296) = 1,140,074; swa = 570,037.
  const MemoryBudget h = compute_memory_budget(r);
  CHECK(h.full_pool_tokens.value == 1140074);
  CHECK(h.swa_pool_tokens.value == 570037);
}

TEST_CASE("memory budget: a GQA deployment cannot pin HiSparse pools") {
  Scenario s = load_scenario("llama31-8b-1xh100");
  s.deployment.memory.device_pool_tokens = 1000;
  CHECK_THROWS_WITH_AS(compute_memory_budget(s), doctest::Contains("memory.device_pool_tokens"), Error);
}

TEST_CASE("memory budget: the decode-token reserve follows the deployment") {
  // Colocated (pd_disaggregation false): SGLang's scheduler reserves through new_token_ratio instead, so R = 0 and a
  // pool holds floor(pool / paged) requests.
  Scenario colocated = load_scenario("glm51-8xh200-colocated");
  REQUIRE_FALSE(colocated.deployment.pd_disaggregation);
  const MemoryBudget c = compute_memory_budget(colocated, {32768});
  CHECK(c.reserved_decode_tokens.value == 0);
  const auto full = static_cast<int64_t>(c.full_pool_tokens.value);
  CHECK(c.per_seq_len[0].max_requests_full.value == static_cast<double>(std::min<int64_t>(full / 32768, 60)));
  // An explicit num_reserved_decode_tokens wins over the default, colocated or not.
  colocated.deployment.num_reserved_decode_tokens = 1024;
  const MemoryBudget r = compute_memory_budget(colocated, {32768});
  CHECK(r.reserved_decode_tokens.value == 1024);
  CHECK(r.reserved_decode_tokens.formula == "deployment num_reserved_decode_tokens = 1024");
  CHECK(r.per_seq_len[0].max_requests_full.value ==
        static_cast<double>(std::min<int64_t>((full + 1024) / (32768 + 1024), 60)));
}
