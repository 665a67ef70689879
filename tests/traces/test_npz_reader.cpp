// @brief The .npy / .npz reader (traces/npz_reader.h): deflated and stored members and a directory of .npy files
// read the same arrays; truncated, corrupt and malformed input is refused with the file and the member named.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/error_of.h"
#include "tests/traces/trace_test_util.h"
#include "traces/npz_reader.h"

namespace hisparse::traces {
namespace {

using test::error_of;

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/traces/data/npz";

std::string scratch_file(const std::string& name) { return testing::scratch_dir("npz_" + name) + "/" + name; }

/// The fixture pattern of make_npz_fixtures.py: flat index i -> ((i % 17) - 8) / 8.
float pattern(int64_t i) { return static_cast<float>((i % 17) - 8) / 8.0f; }

TEST_CASE("half_to_float is exact on normal, subnormal and special values") {
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x3555) == 0.333251953125f);
  CHECK(std::isinf(half_to_float(0x7C00)));
  CHECK(std::isnan(half_to_float(0x7E00)));
}

TEST_CASE("npz deflated, npz stored and a .npy directory read the same arrays") {
  const auto a = read_arrays(kData + "/kq_deflate.npz");
  const auto b = read_arrays(kData + "/kq_stored.npz");
  const auto c = read_arrays(kData + "/kq_dir");
  REQUIRE(a.size() == 5);
  for (const auto& [name, arr] : a) {
    INFO(name);
    REQUIRE(b.count(name));
    REQUIRE(c.count(name));
    CHECK(arr.dtype == b.at(name).dtype);
    CHECK(arr.shape == c.at(name).shape);
    CHECK(arr.bytes == b.at(name).bytes);
    CHECK(arr.bytes == c.at(name).bytes);
  }
  const NumArray& keys = a.at("keys");
  CHECK(keys.dtype == "<f2");
  CHECK(keys.shape == std::vector<int64_t>{2, 40, 1, 4});
  const auto kv = keys.to_float();
  for (int64_t i = 0; i < keys.elements(); ++i) REQUIRE(kv[i] == pattern(i));
}

TEST_CASE("truncated, corrupt and malformed .npz input is refused with the file and member named") {
  const std::string good = testing::slurp(kData + "/kq_deflate.npz");
  const std::string stored = testing::slurp(kData + "/kq_stored.npz");
  REQUIRE(good.size() > 200);

  const std::string trunc = scratch_file("trunc.npz");
  testing::spit(trunc, good.substr(0, good.size() / 2));
  std::string e = error_of([&] { read_arrays(trunc); });
  CHECK(e.find(trunc) != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);

  // The central directory intact, a member's data cut off: the member is named.
  const std::string cut = scratch_file("cut.npz");
  testing::spit(cut, std::string(good.size() - 40, '\0') + good.substr(good.size() - 40));
  e = error_of([&] { read_arrays(cut); });
  CHECK(!e.empty());

  // One flipped byte inside the stored keys array: the CRC check names keys.npy.
  std::string flipped = stored;
  const size_t at = stored.find("keys.npy") + 8 + 200;  // inside the keys member's data (local header + 768 bytes)
  flipped[at] = static_cast<char>(flipped[at] ^ 0x5A);
  const std::string crc = scratch_file("crc.npz");
  testing::spit(crc, flipped);
  e = error_of([&] { read_arrays(crc); });
  CHECK(e.find("keys.npy") != std::string::npos);
  CHECK(e.find("CRC") != std::string::npos);

  // Garbage in a deflated member: zlib's error or the CRC, with the member named.
  std::string bad = good;
  const size_t kat = good.find("keys.npy") + 8 + 40;
  for (size_t i = kat; i < kat + 30; ++i) bad[i] = static_cast<char>(0xFF);
  const std::string badz = scratch_file("bad.npz");
  testing::spit(badz, bad);
  e = error_of([&] { read_arrays(badz); });
  CHECK(e.find(badz) != std::string::npos);

  const std::string text = scratch_file("text.npz");
  testing::spit(text, "this is not a zip file at all, just text long enough");
  e = error_of([&] { read_arrays(text); });
  CHECK(e.find("not a zip") != std::string::npos);

  e = error_of([&] { read_arrays(scratch_file("missing.npz")); });
  CHECK(e.find("no such file") != std::string::npos);
}


}  // namespace
}  // namespace hisparse::traces
