// @brief HiSparseConfig: SGLang's defaults and messages, the --hisparse-config JSON string, unknown keys rejected,
// vLLM's host_pool_gib / host_pool_sharing.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/hisparse_config.h"

using hisparse::Error;
using hisparse::HiSparseConfig;

namespace {
std::string error_of(const std::string& json) {
  try {
    HiSparseConfig::from_json(json);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("hisparse config: SGLang defaults when keys are absent") {
  // Expected: top_k 2048, device_buffer_size 2 × 2048, host_to_device_ratio 2.
  const HiSparseConfig c = HiSparseConfig::from_json("{}");
  CHECK(c.top_k == 2048);
  CHECK(c.device_buffer_size == 4096);
  CHECK(c.host_to_device_ratio == 2);
  CHECK(c.swap_in_block_size == 512);
}

TEST_CASE("hisparse config: device_buffer_size defaults to twice the given top_k") {
  // Expected: top_k 1024 → device_buffer_size 2048 (SGLang reads top_k first, then defaults H to 2 × top_k).
  const HiSparseConfig c = HiSparseConfig::from_json(R"({"top_k": 1024})");
  CHECK(c.top_k == 1024);
  CHECK(c.device_buffer_size == 2048);
}

TEST_CASE("hisparse config: the JSON string from SGLang's HiSparse guide") {
  const HiSparseConfig c = HiSparseConfig::from_json(
      R"({"top_k": 2048, "device_buffer_size": 6144, "host_to_device_ratio": 10, "swap_in_block_size": 512})");
  CHECK(c.top_k == 2048);
  CHECK(c.device_buffer_size == 6144);
  CHECK(c.host_to_device_ratio == 10);
  CHECK(c.swap_in_block_size == 512);
  const HiSparseConfig o = HiSparseConfig::from_json(
      R"({"algorithm": "dsa", "backend": "flashmla", "min_sparse_prompt_len": 4096, "page_size": 64})");
  CHECK(o.algorithm == "dsa");
  CHECK(o.backend == "flashmla");
  CHECK(o.min_sparse_prompt_len == 4096);
  CHECK(o.page_size == 64);
}

TEST_CASE("hisparse config: SGLang's message when the buffer is smaller than top_k") {
  const std::string e = error_of(R"({"top_k": 2048, "device_buffer_size": 1024})");
  CHECK(e == "--hisparse-config: device_buffer_size (1024) must be no smaller than top_k (2048)");
  // H == K is allowed.
  CHECK(HiSparseConfig::from_json(R"({"top_k": 2048, "device_buffer_size": 2048})").device_buffer_size == 2048);
}

TEST_CASE("hisparse config: sizes must be positive, swap_in_block_size within [1, 1024]") {
  CHECK(error_of(R"({"top_k": 0})").find("top_k (0) must be positive") != std::string::npos);
  CHECK(error_of(R"({"top_k": -5, "device_buffer_size": 10})").find("top_k (-5) must be positive") != std::string::npos);
  CHECK(error_of(R"({"device_buffer_size": 0, "top_k": 1})").find("device_buffer_size (0) must be positive") !=
        std::string::npos);
  CHECK(error_of(R"({"host_to_device_ratio": 0})").find("host_to_device_ratio (0) must be positive") !=
        std::string::npos);
  CHECK(error_of(R"({"swap_in_block_size": 1025})").find("swap_in_block_size (1025) must be in the range [1, 1024]") !=
        std::string::npos);
  CHECK(error_of(R"({"swap_in_block_size": 0})").find("swap_in_block_size (0) must be in the range [1, 1024]") !=
        std::string::npos);

  HiSparseConfig c;
  c.host_to_device_ratio = -1;
  CHECK_THROWS_WITH_AS(c.validate("deployment x"), "deployment x: host_to_device_ratio (-1) must be positive", Error);
}

TEST_CASE("hisparse config: unknown keys, wrong types and bad JSON are errors naming the key and value") {
  const std::string unknown = error_of(R"({"top_k": 2048, "device_bufer_size": 4096})");
  CHECK(unknown.find("unknown key 'device_bufer_size'") != std::string::npos);
  CHECK(unknown.find("device_buffer_size") != std::string::npos);  // lists the known keys

  const std::string wrong = error_of(R"({"top_k": "many"})");
  CHECK(wrong.find("--hisparse-config: top_k") != std::string::npos);
  CHECK(wrong.find("'many'") != std::string::npos);
  CHECK(wrong.find("an integer") != std::string::npos);

  CHECK(error_of(R"({"top_k": 2048.5})").find("'2048.5'") != std::string::npos);
  CHECK(error_of(R"({"top_k": true})").find("'true'") != std::string::npos);
  CHECK(error_of(R"({"top_k": [1, 2]})").find("a list") != std::string::npos);
  CHECK(error_of("[1, 2]").find("expected a JSON object") != std::string::npos);
  CHECK(error_of(R"({"top_k": 2048)").find("not valid YAML/JSON") != std::string::npos);
}

TEST_CASE("hisparse config: host_pool_gib excludes host_to_device_ratio; sharing is per_rank or shared") {
  // Expected: both keys → an error naming both; non-positive GiB and unknown sharing → errors naming field and value.
  const HiSparseConfig c = HiSparseConfig::from_json(R"({"host_pool_gib": 160, "host_pool_sharing": "shared"})");
  CHECK(c.host_pool_gib == 160);
  CHECK(c.host_pool_sharing == "shared");
  CHECK(HiSparseConfig::from_json("{}").host_pool_sharing == "per_rank");
  CHECK(error_of(R"({"host_pool_gib": 160, "host_to_device_ratio": 4})")
            .find("host_pool_gib and host_to_device_ratio both given; expected one of them") != std::string::npos);
  CHECK(error_of(R"({"host_pool_gib": 0})").find("host_pool_gib: got 0, expected a positive number of GiB") !=
        std::string::npos);
  CHECK(error_of(R"({"host_pool_gib": -3})").find("host_pool_gib") != std::string::npos);
  CHECK(error_of(R"({"host_pool_sharing": "node"})").find("host_pool_sharing") != std::string::npos);
  CHECK(error_of(R"({"host_pool_sharing": "node"})").find("per_rank, shared") != std::string::npos);
}
