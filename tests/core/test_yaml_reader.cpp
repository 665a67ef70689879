// @brief Strict YAML: quantities with units, and errors naming file, key path, value and expectation.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/not_found_error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

/// Writes `text` to a fresh file under the build tree and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "yaml_reader";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kSource = HISPARSE_SOURCE_DIR;

}  // namespace

TEST_CASE("parse_quantity: plain numbers and unit suffixes") {
  double v = 0;
  CHECK(parse_quantity("1152", Unit::kBytes, &v));
  CHECK(v == 1152);
  CHECK(parse_quantity("141GB", Unit::kBytes, &v));
  CHECK(v == 141e9);
  CHECK(parse_quantity("143771MiB", Unit::kBytes, &v));
  CHECK(v == 143771.0 * 1048576.0);  // 150,754,820,096
  CHECK(parse_quantity("1TiB", Unit::kBytes, &v));
  CHECK(v == 1099511627776.0);
  CHECK(parse_quantity("55.3GB/s", Unit::kBytesPerSecond, &v));
  CHECK(v == doctest::Approx(55.3e9));
  CHECK(parse_quantity("400Gb/s", Unit::kBitsPerSecond, &v));
  CHECK(v == 400e9);
  CHECK(parse_quantity("148TFLOP/s", Unit::kFlopsPerSecond, &v));
  CHECK(v == 148e12);
  CHECK(parse_quantity("2us", Unit::kNanoseconds, &v));
  CHECK(v == 2000);
  CHECK(parse_quantity("1.5ms", Unit::kNanoseconds, &v));
  CHECK(v == 1.5e6);
  CHECK(parse_quantity("55.3e9", Unit::kBytesPerSecond, &v));
  CHECK(v == doctest::Approx(55.3e9));
  // A unit of the wrong kind, a bare unit, words and non-finite values are rejected.
  CHECK_FALSE(parse_quantity("55.3GB", Unit::kBytesPerSecond, &v));
  CHECK_FALSE(parse_quantity("400Gb/s", Unit::kBytesPerSecond, &v));
  CHECK_FALSE(parse_quantity("GB", Unit::kBytes, &v));
  CHECK_FALSE(parse_quantity("fast", Unit::kBytesPerSecond, &v));
  CHECK_FALSE(parse_quantity("nan", Unit::kNone, &v));
  CHECK_FALSE(parse_quantity("inf", Unit::kBytes, &v));
  CHECK_FALSE(parse_quantity("12 apples", Unit::kBytes, &v));
  CHECK_FALSE(parse_quantity("5GB", Unit::kNone, &v));
}

TEST_CASE("parse_quantity: byte sizes as people type them (issue 40): GB = 10^9 B, GiB = 2^30 B, any case, B optional") {
  // Before, only the exact spellings "141GB" / "141GiB" were bytes: "141G", "141 gib" or "2tb" were refused.
  double v = 0;
  for (const char* text : {"141GB", "141G", "141gb", "141 GB", "141 g", "141e9", "141e9B", "141e9 bytes"}) {
    CAPTURE(text);
    REQUIRE(parse_quantity(text, Unit::kBytes, &v));
    CHECK(v == 141e9);
  }
  for (const char* text : {"140GiB", "140Gi", "140 GiB", "140gib", "140 gi"}) {
    CAPTURE(text);
    REQUIRE(parse_quantity(text, Unit::kBytes, &v));
    CHECK(v == 140.0 * 1073741824.0);
  }
  CHECK((parse_quantity("2TB", Unit::kBytes, &v) && v == 2e12));
  CHECK((parse_quantity("2tb", Unit::kBytes, &v) && v == 2e12));
  CHECK((parse_quantity("2TiB", Unit::kBytes, &v) && v == 2.0 * 1099511627776.0));
  CHECK((parse_quantity("1 tib", Unit::kBytes, &v) && v == 1099511627776.0));
  CHECK((parse_quantity("64KiB", Unit::kBytes, &v) && v == 65536));
  CHECK((parse_quantity("64kB", Unit::kBytes, &v) && v == 64000));
  // Still refused: another unit's suffix, a prefix that is none, words.
  for (const char* text : {"141GB/s", "141 GBs", "141 X", "141 gigabytes", "141 iB", "5 Gbit"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_quantity(text, Unit::kBytes, &v));
  }
  // The case rule is for bytes only: a lower-case b is still bits in a rate.
  CHECK_FALSE(parse_quantity("400Gb/s", Unit::kBytesPerSecond, &v));
  // parse_byte_size: the same, with the flag and the units named when it fails.
  CHECK(parse_byte_size("143771MiB", "--hbm-bytes") == 143771.0 * 1048576.0);
  try {
    parse_byte_size("141 gigs", "plan: --hbm-bytes");
    FAIL("expected an error");
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    CHECK(msg.find("plan: --hbm-bytes '141 gigs' is not a byte size") != std::string::npos);
    CHECK(msg.find("GB = 10^9 B") != std::string::npos);
    CHECK(msg.find("GiB = 2^30 B") != std::string::npos);
  }
}

TEST_CASE("strict YAML: an unknown key names the file, the key path and the keys allowed") {
  std::string text = read_file(kSource + "/scenarios/hardware/h200.yaml");
  text += "\n";
  const std::string pos = "  latency_ns:";
  text.insert(text.find(pos), "  h2d_bulk_byte_per_s: 55.3GB/s\n");
  const std::string path = write_temp("unknown_key.yaml", text);
  const std::string e = error_of([&] { load_hardware_spec(path); });
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("unknown key 'pcie.h2d_bulk_byte_per_s'") != std::string::npos);
  CHECK(e.find("h2d_bulk_bytes_per_s") != std::string::npos);
  CHECK(e.find("line ") != std::string::npos);

  const std::string top = write_temp("unknown_top.yaml", read_file(kSource + "/scenarios/models/glm-5.yaml") + "layer: 3\n");
  const std::string e2 = error_of([&] { load_model_spec(top); });
  CHECK(e2.find("unknown key 'layer'") != std::string::npos);
}

TEST_CASE("strict YAML: a key given twice is an error naming both lines, not a silently dropped value") {
  // tpot_slo_ms twice: yaml-cpp would answer with the first value and drop the second.
  std::string text = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  text += "tpot_slo_ms: 80\n";
  const std::string path = write_temp("duplicate_key.yaml", text);
  const std::string e = error_of([&] { load_deployment_spec(path); });
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("tpot_slo_ms") != std::string::npos);
  CHECK(e.find("appears twice") != std::string::npos);
  // Nested: a key repeated inside hisparse:.
  std::string nested = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  nested.insert(nested.find("  host_to_device_ratio:"), "  top_k: 1024\n");
  const std::string e2 = error_of([&] { load_deployment_spec(write_temp("duplicate_nested.yaml", nested)); });
  CHECK(e2.find("hisparse.top_k") != std::string::npos);
  CHECK(e2.find("appears twice") != std::string::npos);
}

TEST_CASE("strict YAML: a wrong type names file, key path, value and the expected form") {
  std::string text = read_file(kSource + "/scenarios/hardware/h200.yaml");
  const std::string key = "h2d_bulk_bytes_per_s: 55.3GB/s";
  text.replace(text.find(key), key.size(), "h2d_bulk_bytes_per_s: fast");
  const std::string path = write_temp("wrong_type.yaml", text);
  const std::string e = error_of([&] { load_hardware_spec(path); });
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("pcie.h2d_bulk_bytes_per_s") != std::string::npos);
  CHECK(e.find("got 'fast'") != std::string::npos);
  CHECK(e.find("bytes/s") != std::string::npos);

  // A mapping where a number belongs, and an integer field given a fraction.
  std::string dep = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  dep.replace(dep.find("page_size: 64"), 13, "page_size: 64.5");
  const std::string dpath = write_temp("fraction.yaml", dep);
  const std::string e2 = error_of([&] { load_deployment_spec(dpath); });
  CHECK(e2.find("page_size") != std::string::npos);
  CHECK(e2.find("'64.5'") != std::string::npos);
  CHECK(e2.find("an integer") != std::string::npos);

  std::string dep2 = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  dep2.replace(dep2.find("kv_dtype: bf16"), 14, "kv_dtype: fp16");
  const std::string e3 = error_of([&] { load_deployment_spec(write_temp("dtype.yaml", dep2)); });
  CHECK(e3.find("kv_dtype") != std::string::npos);
  CHECK(e3.find("'fp16'") != std::string::npos);
  CHECK(e3.find("one of: bf16, fp8") != std::string::npos);
}

TEST_CASE("strict YAML: out-of-range values name file, key path, value and the range") {
  std::string dep = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  dep.replace(dep.find("mem_fraction_static: 0.85"), 25, "mem_fraction_static: 1.5");
  const std::string path = write_temp("range.yaml", dep);
  const std::string e = error_of([&] { load_deployment_spec(path); });
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("mem_fraction_static") != std::string::npos);
  CHECK(e.find("got '1.5'") != std::string::npos);
  CHECK(e.find("[0.01, 1]") != std::string::npos);

  // Nested: dp_attention may not exceed tp.
  std::string dep2 = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  dep2.replace(dep2.find("dp_attention: 8"), 15, "dp_attention: 16");
  const std::string e2 = error_of([&] { load_deployment_spec(write_temp("dp.yaml", dep2)); });
  CHECK(e2.find("decode.dp_attention") != std::string::npos);
  CHECK(e2.find("'16'") != std::string::npos);
  CHECK(e2.find("[1, 8]") != std::string::npos);

  // A HiSparse knob in the deployment gets SGLang's message, located in the file.
  std::string dep3 = read_file(kSource + "/scenarios/deployments/dsv32-8xh200-1tb.yaml");
  dep3.replace(dep3.find("device_buffer_size: 4096"), 24, "device_buffer_size: 1000");
  const std::string p3 = write_temp("buffer.yaml", dep3);
  const std::string e3 = error_of([&] { load_deployment_spec(p3); });
  CHECK(e3 == p3 + ": hisparse: device_buffer_size (1000) must be no smaller than top_k (2048)");

  // A cross-field check: the bf16 row must be (kv_lora_rank + rope) × 2.
  std::string model = read_file(kSource + "/scenarios/models/deepseek-v3.2.yaml");
  model.replace(model.find("latent_row_bytes: 1152"), 22, "latent_row_bytes: 1024");
  const std::string e4 = error_of([&] { load_model_spec(write_temp("row.yaml", model)); });
  CHECK(e4.find("latent_row_bytes: got 1024") != std::string::npos);
  CHECK(e4.find("= 1152") != std::string::npos);
}

TEST_CASE("strict YAML: syntax errors and missing files name the file") {
  const std::string path = write_temp("broken.yaml", "layers: [1, 2\n");
  const std::string e = error_of([&] { load_model_spec(path); });
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("not valid YAML") != std::string::npos);
  // Expected: a file that does not exist is a NotFoundError (Python's FileNotFoundError) naming it.
  CHECK(error_of([] { load_model_spec("/nonexistent/x.yaml"); }).find("/nonexistent/x.yaml: no such file") !=
        std::string::npos);
  CHECK_THROWS_AS(load_model_spec("/nonexistent/x.yaml"), NotFoundError);
  const std::string missing = write_temp("missing.yaml", "layers: 3\n");
  CHECK(error_of([&] { load_model_spec(missing); }).find("missing required key 'kv_lora_rank'") != std::string::npos);
}
