// @brief Every shipped scenario loads; names and paths resolve; $HISPARSE_SCENARIO_DIR is searched first; a name not
// found says where it looked and what exists, also when nothing exists; the bundled directory can be replaced.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/not_found_error.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {
const fs::path kScenarios = fs::path(HISPARSE_SOURCE_DIR) / "scenarios";

std::vector<fs::path> yaml_in(const std::string& kind) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kScenarios / kind))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  return files;
}
}  // namespace

TEST_CASE("every shipped model, hardware and deployment loads") {
  const auto models = yaml_in("models");
  const auto hardware = yaml_in("hardware");
  const auto deployments = yaml_in("deployments");
  CHECK(models.size() >= 2);
  CHECK(hardware.size() >= 3);
  CHECK(deployments.size() >= 2);
  for (const auto& p : models) {
    CAPTURE(p.string());
    const ModelSpec m = load_model_spec(p.string());
    CHECK(m.name == p.stem().string());
    CHECK(m.latent_row_bytes == 2 * m.cache_row_width());
    CHECK(m.weight_bytes > 0);
  }
  for (const auto& p : hardware) {
    CAPTURE(p.string());
    const HardwareSpec h = load_hardware_spec(p.string());
    CHECK(h.name == p.stem().string());
    CHECK(h.pcie.h2d_bulk_bytes_per_s == doctest::Approx(55.3e9));
    CHECK(h.pcie.gather_row_bytes_per_s == doctest::Approx(50e9));
    CHECK(h.nic.bits_per_s == doctest::Approx(400e9));
  }
  for (const auto& p : deployments) {
    CAPTURE(p.string());
    const Scenario s = load_scenario(p.string());
    CHECK(s.deployment.name == p.stem().string());
    CHECK(s.deployment.hisparse.device_buffer_size >= s.deployment.hisparse.top_k);
    // And by name, through the compiled-in scenario directory.
    CHECK(load_scenario(p.stem().string()).source == (kScenarios / "deployments" / p.filename()).string());
  }
}

TEST_CASE("shipped figures: DeepSeek-V3.2, GLM-5 and the three GPUs") {
  const ModelSpec ds = load_model_spec((kScenarios / "models/deepseek-v3.2.yaml").string());
  CHECK(ds.layers == 61);
  CHECK(ds.mtp_layers == 1);
  CHECK(ds.latent_row_bytes == 1152);
  CHECK(ds.latent_row_bytes_fp8 == 656);
  CHECK(ds.indexer_heads == 64);
  CHECK(ds.indexer_head_dim == 128);
  CHECK(ds.indexer_key_bytes == 132);
  CHECK(ds.attention_heads == 128);
  CHECK(ds.top_k == 2048);
  CHECK(ds.weight_bytes == 690e9);
  CHECK(ds.hidden_size == 7168);
  CHECK(ds.dense_layers == 3);
  CHECK(ds.routed_experts == 256);
  CHECK(ds.experts_per_token == 8);
  CHECK(ds.shared_experts == 1);
  CHECK(ds.moe_intermediate_size == 2048);
  CHECK(ds.dense_intermediate_size == 18432);
  CHECK(ds.q_lora_rank == 1536);
  CHECK(ds.qk_nope_head_dim == 128);
  CHECK(ds.v_head_dim == 128);
  CHECK(ds.active_params == 37e9);

  const ModelSpec glm = load_model_spec((kScenarios / "models/glm-5.yaml").string());
  CHECK(glm.layers == 78);
  CHECK(glm.attention_heads == 64);
  CHECK(glm.cache_row_width() == 576);
  CHECK(glm.indexer_heads == 32);
  CHECK(glm.indexer_head_dim == 128);
  CHECK(glm.top_k == 2048);

  const HardwareSpec h200 = load_hardware_spec((kScenarios / "hardware/h200.yaml").string());
  CHECK(h200.hbm_bytes == 143771.0 * 1048576.0);
  CHECK(h200.hbm_bytes_per_s == 4.8e12);
  const HardwareSpec h100 = load_hardware_spec((kScenarios / "hardware/h100-sxm.yaml").string());
  CHECK(h100.hbm_bytes == 81559.0 * 1048576.0);
  CHECK(h100.hbm_bytes_per_s == 3.35e12);
  const HardwareSpec h20 = load_hardware_spec((kScenarios / "hardware/h20.yaml").string());
  CHECK(h20.hbm_bytes == 97871.0 * 1048576.0);
  CHECK(h20.hbm_bytes_per_s == 4.0e12);
  CHECK(h20.bf16_flops == 148e12);
}

TEST_CASE("the 8 x H200 decode node as the issue states it") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const DeploymentSpec& d = s.deployment;
  CHECK(s.model.name == "deepseek-v3.2");
  CHECK(s.hardware.name == "h200");
  CHECK(d.decode.gpus == 8);
  CHECK(d.decode.tp == 8);
  CHECK(d.decode.dp_attention == 8);
  CHECK(d.prefill.count == 0);
  CHECK(d.host_dram_bytes == 1099511627776.0);
  CHECK(d.mem_fraction_static == 0.85);
  CHECK(d.page_size == 64);
  CHECK(d.kv_dtype == KvDtype::kBf16);
  CHECK(d.hisparse.top_k == 2048);
  CHECK(d.hisparse.device_buffer_size == 4096);
  CHECK(d.hisparse.host_to_device_ratio == 5);

  const Scenario pd = load_scenario("dsv32-2x8xh20-pd");
  CHECK(pd.deployment.pd_disaggregation);
  CHECK(pd.deployment.prefill.count == 1);
  CHECK(pd.deployment.hisparse.host_to_device_ratio == 10);  // from the hisparse_config JSON string
}

TEST_CASE("unknown scenario names list what exists; HISPARSE_SCENARIO_DIR is searched first") {
  std::string e;
  try {
    load_scenario("no-such-deployment");
  } catch (const Error& err) {
    e = err.what();
  }
  CHECK(e.find("'no-such-deployment' not found") != std::string::npos);
  CHECK(e.find("dsv32-8xh200-1tb") != std::string::npos);
  CHECK_THROWS_AS(load_scenario("/nonexistent/dep.yaml"), Error);

  // A private directory holding only a deployment: its model/hardware still come from the bundled directory.
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "scenario_dir";
  fs::create_directories(dir / "deployments");
  std::ofstream(dir / "deployments" / "mine.yaml")
      << "model: glm-5\nhardware: h100-sxm\nhost_dram_bytes: 512GiB\nhisparse:\n  host_to_device_ratio: 3\n";
  setenv("HISPARSE_SCENARIO_DIR", dir.c_str(), 1);
  const Scenario s = load_scenario("mine");
  unsetenv("HISPARSE_SCENARIO_DIR");
  CHECK(s.model.name == "glm-5");
  CHECK(s.hardware.name == "h100-sxm");
  CHECK(s.deployment.hisparse.device_buffer_size == 4096);  // 2 × top_k default
  CHECK(s.deployment.hisparse.host_to_device_ratio == 3);
  CHECK(s.deployment.host_dram_bytes == 512.0 * 1073741824.0);

  // The model's top_k wins in SGLang, so a different hisparse.top_k is refused.
  std::ofstream(dir / "deployments" / "mismatch.yaml")
      << "model: glm-5\nhardware: h100-sxm\nhost_dram_bytes: 1TB\nhisparse:\n  top_k: 1024\n";
  CHECK_THROWS_WITH_AS(load_scenario((dir / "deployments" / "mismatch.yaml").string()),
                       doctest::Contains("hisparse.top_k: got 1024, expected the model's top_k 2048"), Error);
  // Both forms of the knobs at once is ambiguous.
  std::ofstream(dir / "deployments" / "both.yaml")
      << "model: glm-5\nhardware: h100-sxm\nhost_dram_bytes: 1TB\nhisparse: {}\nhisparse_config: '{}'\n";
  CHECK_THROWS_WITH_AS(load_deployment_spec((dir / "deployments" / "both.yaml").string()),
                       doctest::Contains("both 'hisparse' and 'hisparse_config'"), Error);
}

TEST_CASE("a name not found names every place looked at, even when no scenario directory exists") {
  const std::string bundled = scenario_dir_candidates().back();
  const fs::path empty = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "no_scenarios_here";
  fs::create_directories(empty);
  const fs::path cwd = fs::current_path();
  fs::current_path(empty);
  // Expected: with the bundled directory moved away (a source clone deleted after install) and no ./scenarios, the
  // message lists both places, marked missing, and says that nothing is available, instead of an empty list.
  set_bundled_scenario_dir((empty / "gone" / "scenarios").string());
  std::string e;
  try {
    load_scenario("dsv32-8xh200-1tb");
  } catch (const NotFoundError& err) {
    e = err.what();
  }
  CHECK(e.find("deployment 'dsv32-8xh200-1tb' not found: looked for dsv32-8xh200-1tb.yaml in ") != std::string::npos);
  CHECK(e.find((empty / "scenarios" / "deployments").string() + " (missing)") != std::string::npos);
  CHECK(e.find((empty / "gone" / "scenarios" / "deployments").string() + " (missing)") != std::string::npos);
  CHECK(e.find("available: none, no scenario directory holds any") != std::string::npos);
  // Expected: pointing the bundled directory at a copy of the scenarios (the Python package's data) finds them.
  set_bundled_scenario_dir(kScenarios.string());
  CHECK(load_scenario("dsv32-8xh200-1tb").source == (kScenarios / "deployments" / "dsv32-8xh200-1tb.yaml").string());
  fs::current_path(cwd);
  set_bundled_scenario_dir(bundled);
  // Expected: a missing path is a NotFoundError too (Python's FileNotFoundError).
  CHECK_THROWS_AS(load_scenario("/nonexistent/dep.yaml"), NotFoundError);
}
