// @brief DeepSeek-V4's pool arithmetic against hand-computed values: the shipped dsv4-flash-8xh200 deployment, the
// pool sizes of sglang PR #30909 (the "full token usage" of an empty HiSparse pool) and the request-capacity sizing
// of sglang PR #33979, each with its derivation written before the check; and the model loader's refusals.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/dsv4_pool_budget.h"
#include "core/error.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

const fs::path kScenarios = fs::path(HISPARSE_SOURCE_DIR) / "scenarios";

fs::path write_file(const std::string& sub, const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "dsv4" / sub;
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return p;
}

/// The shipped deployment with `extra` lines appended (later keys are not allowed to repeat, so callers only add).
Scenario flash_with(const std::string& name, const std::string& extra, const std::string& replace_from = "",
                    const std::string& replace_to = "") {
  std::ifstream in(kScenarios / "deployments" / "dsv4-flash-8xh200.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!replace_from.empty()) text.replace(text.find(replace_from), replace_from.size(), replace_to);
  text += extra;
  // Models and hardware resolve next to the deployment (../models) first, then in the shipped directories.
  return load_scenario(write_file("deployments", name, text).string());
}

std::string model_error(const std::string& name, const std::string& text) {
  try {
    load_model_spec(write_file("models", name, text).string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("dsv4: DeepSeek-V4-Flash and -Pro layer counts and entry rows from the config") {
  const ModelSpec flash = load_model_spec((kScenarios / "models" / "deepseek-v4-flash.yaml").string());
  // Flash compress_ratios: 2 × 0, 20 × (4, 128), one 4, the MTP 0 → 21 C4, 20 C128 over the 43 main layers.
  CHECK(flash.compressed_layer_count(4) == 21);
  CHECK(flash.compressed_layer_count(128) == 20);
  CHECK(flash.compressed_layer_count(0) == 2);
  CHECK(flash.top_k == 512);
  const ModelSpec pro = load_model_spec((kScenarios / "models" / "deepseek-v4-pro.yaml").string());
  // Pro: C128 on layers 0, 1, 3, …, 59 (31), C4 on 2, 4, …, 60 (30), no sliding-only layer; top_k 1024.
  CHECK(pro.compressed_layer_count(4) == 30);
  CHECK(pro.compressed_layer_count(128) == 31);
  CHECK(pro.compressed_layer_count(0) == 0);
  CHECK(pro.top_k == 1024);
  // Entry rows: bf16 (448 + 64) × 2 = 1024; fp8 448 + 64 × 2 + 8 = 584; NVFP4 416 (#35237); indexer 128 + 4 = 132.
  const auto rows = dsv4_row_sizes(flash);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].main_bytes == 1024);
  CHECK(rows[1].main_bytes == 584);
  CHECK(rows[2].main_bytes == 416);
  for (const auto& r : rows) CHECK(r.indexer_bytes == 132);
}

TEST_CASE("dsv4: dsv4-flash-8xh200 pools by hand (SGLang DSV4PoolConfigurator)") {
  const Dsv4PoolBudget v = compute_dsv4_pool_budget(load_scenario("dsv4-flash-8xh200"));
  // fp8 entry 584 B; ratio 0.1; HiSparse shrink 5; ring 16 (MTP draft); window 128;
  // states 2 × 2 × 512 × 4 = 8,192 and 2 × 2 × 128 × 4 = 2,048 B.
  // Terms: swa 0.1 × 584 × 43 = 2,511.2; c4 584 × 21 / 20 = 613.2; c128 584 × 20 / 128 = 91.25;
  // indexer 132 × 21 / 4 = 693; states 0.1 × 16 / 128 × 10,240 × 21 = 2,688; sum 6,596.65;
  // × 44 / 43 (MTP draft) = 6,750.0605 B per full token.
  CHECK(v.swa_term.value == doctest::Approx(2511.2));
  CHECK(v.c4_term.value == doctest::Approx(613.2));
  CHECK(v.c128_term.value == doctest::Approx(91.25));
  CHECK(v.indexer_term.value == doctest::Approx(693));
  CHECK(v.c4_state_term.value == doctest::Approx(2688));
  CHECK(v.bytes_per_full_token.value == doctest::Approx(6596.65 * 44 / 43));
  // KV budget: 150,754,820,096 × 0.85 − ((157e9 − 5.5e9) / 8 + 5.5e9) = 128,141,597,081.6 − 24,437,500,000
  // = 103,704,097,081.6 B.
  CHECK(v.hbm.kv_budget_bytes.value == doctest::Approx(103704097081.6));
  // C128 states (pool_configurator.py _get_c128_state_fixed_bytes): slots 64 + 0 + 1 = 65, ring 256 (MTP draft);
  // rows 65 × 256 + 256 + 1 = 16,897 → 133 × 128 = 17,024; × 2 × 512 × 4 = 4,096 B × 20 C128 layers
  // = 1,394,606,080 B, taken off the budget before the split.
  CHECK(v.c128_state_ring.value == 256);
  CHECK(v.c128_state_bytes.value == 4096);
  CHECK(v.c128_state_fixed_bytes.value == 1394606080.0);
  // full = floor((103,704,097,081.6 − 1,394,606,080) / 6,750.0605) = 15,156,825 → pages of 256: 15,156,736.
  CHECK(v.full_tokens.value == 15156736);
  // swa = floor(15,156,736 × 0.1) = 1,515,673 → 1,515,520; C4 device = floor(15,156,736 / 20) = 757,836;
  // C128 = 15,156,736 / 128 = 118,412; state rows = floor(1,515,520 / 128) × 16 = 189,440;
  // host C4 = 15,156,736 / 4 = 3,789,184 entries × 21 × 584 = 46,470,552,576 B.
  CHECK(v.swa_tokens.value == 1515520);
  CHECK(v.c4_device_entries.value == 757836);
  CHECK(v.c128_entries.value == 118412);
  CHECK(v.c4_state_rows.value == 189440);
  CHECK(v.c4_host_entries.value == 3789184);
  CHECK(v.c4_host_bytes.value == 46470552576.0);
}

TEST_CASE("dsv4: golden sglang PR #30909, the full token usage of an empty HiSparse pool") {
  // The PR's pools: full logical capacity 5,445,376 tokens, C4 device capacity 272,268 entries, ratio 4. They are
  // SGLang's sizing at host_to_device_ratio 5: floor(5,445,376 / (4 × 5)) = floor(272,268.8) = 272,268.
  const Scenario s = flash_with("dsv4_30909", "memory:\n  full_pool_tokens: 5445376\n");
  const Dsv4PoolBudget v = compute_dsv4_pool_budget(s);
  CHECK(v.full_tokens.value == 5445376);
  CHECK(v.c4_device_entries.value == 272268);
  // Before the fix the reported capacity was min(logical, c4_device × 4) = min(5,445,376, 1,089,072) = 1,089,072,
  // so an empty pool looked 1 − 1,089,072 / 5,445,376 = 0.8000006 used ("approximately 80% occupied").
  CHECK(dsv4_reported_full_capacity_before_fix(5445376, 272268, 4) == 1089072);
  CHECK(v.usage_capacity_before.value == 1089072);
  CHECK(v.usage_empty_before.value == doctest::Approx(1.0 - 1089072.0 / 5445376.0));
  CHECK(v.usage_empty_before.value > 0.79);
  // After it the capacity is the logical pool: usage 0.
  CHECK(v.usage_empty_after.value == 0);
  // Without HiSparse (shrink 1) the C4 pool covers every logical token: floor(5,445,376 / 4) × 4 = 5,445,376, and
  // the old formula reported no usage either — the defect needs HiSparse's shrink.
  const Scenario off = flash_with("dsv4_30909_off", "memory:\n  full_pool_tokens: 5445376\n", "hisparse_enabled: true",
                                  "hisparse_enabled: false");
  CHECK(compute_dsv4_pool_budget(off).usage_empty_before.value == 0);
}

TEST_CASE("dsv4: golden sglang PR #33979, the C4 device pool by request capacity") {
  const Dsv4PoolBudget v = compute_dsv4_pool_budget(load_scenario("dsv4-flash-8xh200"));
  REQUIRE(v.request_capacity_applicable);
  // Q = device_buffer_size + c4_page_size = 1024 + 256 / 4 = 1,088 entries; N = M + E + 1 = 64 + 0 + 1 = 65 = R.
  CHECK(v.rc_entries_per_request.value == 1088);
  CHECK(v.rc_request_slots.value == 65);
  // C4 device = R × Q = 70,720 entries; fixed bytes 70,720 × 21 × 584 = 867,310,080 B.
  CHECK(v.rc_c4_device_entries.value == 70720);
  CHECK(v.rc_c4_device_bytes.value == 867310080.0);
  // Base bytes per full token = 6,750.0605 − 613.2 × 44 / 43 = 6,122.6; full = floor((103,704,097,081.6 −
  // 1,394,606,080 (C128 states) − 867,310,080) / 6,122.6) = 16,568,480 → pages of 256: 16,568,320 (9.3 % more than
  // 15,156,736).
  CHECK(v.rc_base_bytes_per_full_token.value == doctest::Approx(6122.6));
  CHECK(v.rc_full_tokens.value == 16568320);
  // The PR's point: the C4 device pool no longer grows with host_to_device_ratio. At ratio 10 today's C4 pool
  // follows the larger full pool, the request-capacity one stays R × Q.
  const Dsv4PoolBudget r10 = compute_dsv4_pool_budget(
      flash_with("dsv4_33979_r10", "", "host_to_device_ratio: 5", "host_to_device_ratio: 10"));
  CHECK(r10.rc_c4_device_entries.value == 70720);
  CHECK(r10.full_tokens.value > v.full_tokens.value);
  // Without max_running_requests there is no request count to size by.
  const Dsv4PoolBudget none =
      compute_dsv4_pool_budget(flash_with("dsv4_33979_none", "", "max_running_requests: 64", "max_running_requests: 0"));
  CHECK_FALSE(none.request_capacity_applicable);
}

TEST_CASE("dsv4: the loader refuses a malformed compressed-attention model or page size") {
  const std::string base =
      "layers: 3\nmtp_layers: 1\nkv_lora_rank: 448\nqk_rope_head_dim: 64\nindexer_heads: 4\nindexer_head_dim: 128\n"
      "attention_heads: 8\ntop_k: 64\nweight_bytes: 1e9\nwindow_size: 128\n";
  // One entry per main and MTP layer: 3 + 1 = 4 expected.
  CHECK(model_error("short", base + "compress_ratios: [0, 4, 128]\n").find("got 3 entries, expected one per layer") !=
        std::string::npos);
  // Ratios are 0, 4 or 128.
  CHECK(model_error("bad", base + "compress_ratios: [0, 4, 8, 0]\n").find("got '8', expected 0") != std::string::npos);
  // No C4 layer: nothing for the indexer (and HiSparse) to work on.
  CHECK(model_error("noc4", base + "compress_ratios: [0, 128, 128, 0]\n").find("no layer has ratio 4") !=
        std::string::npos);
  // The grouped output projection needs both its fields, and groups that divide the heads.
  const std::string ok = base + "compress_ratios: [0, 4, 128, 0]\n";
  CHECK(model_error("ogroups", ok + "o_groups: 2\n").find("got one without the other") != std::string::npos);
  CHECK(model_error("ogroups3", ok + "o_groups: 3\no_lora_rank: 64\n").find("expected a divisor of attention_heads 8") !=
        std::string::npos);
  CHECK(model_error("ogroups_ok", ok + "o_groups: 2\no_lora_rank: 64\n").empty());
  // window_size without compress_ratios is a mistake, not a no-op.
  CHECK(model_error("window", "layers: 3\nkv_lora_rank: 512\nindexer_heads: 4\nindexer_head_dim: 128\n"
                              "attention_heads: 8\ntop_k: 64\nweight_bytes: 1e9\nwindow_size: 128\n")
            .find("expected compress_ratios with it") != std::string::npos);
  // SGLang asserts pages of whole 128-token blocks.
  std::string msg;
  try {
    flash_with("dsv4_page64", "", "page_size: 256", "page_size: 64");
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("page_size: got 64, expected a multiple of 128") != std::string::npos);
}
