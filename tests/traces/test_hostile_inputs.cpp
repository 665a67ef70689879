// @brief Hostile input to every reader: each case is a hisparse::Error that says where, never a crash or hang.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/traces/trace_test_util.h"
#include "traces/byte_io.h"
#include "traces/native_format.h"
#include "traces/native_trace.h"
#include "traces/npy_array.h"
#include "traces/trace_generator.h"

namespace hisparse::traces {
namespace {

using testing::read_all;
using testing::scratch_dir;
using testing::slurp;
using testing::spit;

/// Opens and reads everything; returns the error text ("" if the input was accepted).
std::string read_error(const std::string& path) {
  try {
    auto src = open_trace(path);
    read_all(*src);
    for (int64_t id : src->request_ids()) src->seek_request(id);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

/// The error reading `path` contains `needle`.
void check_error(const std::string& path, const std::string& needle) {
  const std::string err = read_error(path);
  INFO("error: " << err);
  CHECK(err.find(needle) != std::string::npos);
}

std::string tiny_native(const std::string& dir, bool compress) {
  auto gen = make_generated_trace(generator_preset("tiny"));
  const std::string path = dir + (compress ? "/z.hstrace" : "/raw.hstrace");
  TraceWriteOptions o;
  o.compress = compress;
  o.chunk_bytes = 200;
  testing::write_trace(*gen, path, TraceFormat::kNative, o);
  return path;
}

void put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
}
uint32_t get32(const std::string& s, size_t at) { return get_u32(reinterpret_cast<const uint8_t*>(s.data() + at)); }
void fix_header_crc(std::string& s) {
  put32(s, kFileHeaderBytes - 4, crc32(reinterpret_cast<const uint8_t*>(s.data()), kFileHeaderBytes - 4));
}
/// Recomputes the checksum of the chunk at `at` after a deliberate edit (so the edit reaches the decoder).
void fix_chunk_crc(std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + at);
  const uint32_t stored = get32(s, at + 32);
  put32(s, at + 36, crc32(p + kChunkHeaderBytes, stored, crc32(p, kChunkHeaderBytes - 4)));
}

TEST_CASE("native: every truncation is an error") {
  const std::string dir = scratch_dir("hostile_truncate");
  const std::string good = slurp(tiny_native(dir, true));
  CHECK(read_error(dir + "/z.hstrace").empty());
  for (size_t n = 0; n < good.size(); ++n) {
    spit(dir + "/cut", good.substr(0, n));
    const std::string err = read_error(dir + "/cut");
    INFO("cut at " << n << " of " << good.size());
    CHECK(!err.empty());
  }
  spit(dir + "/cut", good.substr(0, good.size() - 1));
  check_error(dir + "/cut", "truncated");
}

TEST_CASE("native: bad magic, unknown version, checksums, absurd sizes") {
  const std::string dir = scratch_dir("hostile_native");
  const std::string good = slurp(tiny_native(dir, false));
  std::string s = good;
  s[1] = 'X';
  spit(dir + "/t", s);
  CHECK_THROWS_WITH_AS(open_native_trace(dir + "/t", {}), doctest::Contains("bad magic"), Error);
  check_error(dir + "/t", "not a trace");

  s = good;
  put32(s, 8, 2);
  spit(dir + "/t", s);
  check_error(dir + "/t", "format version 2 not supported");

  s = good;
  put32(s, 16, 7);  // layers changed, checksum not updated
  spit(dir + "/t", s);
  check_error(dir + "/t", "file header checksum mismatch");

  s = good;
  put32(s, 16, 1000000000);  // absurd layers, checksum updated: the limit check must catch it
  fix_header_crc(s);
  spit(dir + "/t", s);
  check_error(dir + "/t", "header declares layers 1000000000");

  s = good;
  s[kFileHeaderBytes + kChunkHeaderBytes + 3] ^= 0x40;  // payload byte of the first chunk
  spit(dir + "/t", s);
  check_error(dir + "/t", "checksum mismatch in the chunk at offset 48 (request 0");

  s = good;
  put32(s, kFileHeaderBytes + 28, 0x7fffffff);  // absurd decoded length
  spit(dir + "/t", s);
  check_error(dir + "/t", "corrupt header");

  s = good;
  put32(s, kFileHeaderBytes + 32, 1u << 20);  // stored length beyond the file
  put32(s, kFileHeaderBytes + 28, 1u << 20);
  spit(dir + "/t", s);
  check_error(dir + "/t", "truncated file");
}

TEST_CASE("native: invalid content behind a valid checksum names request, step and layer") {
  const std::string dir = scratch_dir("hostile_native_content");
  const std::string good = slurp(tiny_native(dir, false));
  // First step's record starts with zigzag(seq_len) = 80 (seq_len 40); claim seq_len 5 instead.
  const size_t payload = kFileHeaderBytes + kChunkHeaderBytes;
  REQUIRE(static_cast<uint8_t>(good[payload]) == 80);
  std::string s = good;
  s[payload] = 10;
  fix_chunk_crc(s, kFileHeaderBytes);
  spit(dir + "/t", s);
  const std::string err = read_error(dir + "/t");
  INFO("error: " << err);
  CHECK(err.find("request 0, step 0, layer 0") != std::string::npos);
  CHECK(err.find(">= seq_len 5") != std::string::npos);

  // Every single-byte change in the payload behind a fixed checksum: accepted or a clean error.
  for (size_t at = payload; at < payload + 120 && at < good.size(); ++at) {
    for (int v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      s = good;
      s[at] = static_cast<char>(v);
      fix_chunk_crc(s, kFileHeaderBytes);
      spit(dir + "/t", s);
      read_error(dir + "/t");  // must not crash, hang or throw anything but Error
    }
  }
}

TEST_CASE("native: bit flips anywhere in a compressed file never crash") {
  const std::string dir = scratch_dir("hostile_flips");
  const std::string good = slurp(tiny_native(dir, true));
  size_t rejected = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    std::string s = good;
    s[at] ^= 0x10;
    spit(dir + "/t", s);
    if (!read_error(dir + "/t").empty()) ++rejected;
  }
  // Checksums cover header, chunks and index; only the footer's padding-free fields could slip through.
  CHECK(rejected == good.size());
}

void write_npy(const std::string& path, int32_t itemsize, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& values) {
  std::string s = format_npy_header(itemsize, shape);
  for (int64_t v : values) {
    for (int32_t i = 0; i < itemsize; ++i) s.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  spit(path, s);
}

TEST_CASE("npy: hostile directories") {
  const std::string dir = scratch_dir("hostile_npy");
  auto fresh = [&](const std::vector<int64_t>& topk, const std::vector<int64_t>& seq_lens) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_npy(dir + "/req_4_topk.npy", 4, {static_cast<int64_t>(seq_lens.size()), 2, 3}, topk);
    write_npy(dir + "/req_4_seq_lens.npy", 8, {static_cast<int64_t>(seq_lens.size())}, seq_lens);
  };
  fresh({0, 1, 2, 3, 4, -1, /**/ 0, 1, 2, 5, 4, 3}, {6, 7});
  CHECK(read_error(dir) == "");
  fresh({0, 1, 2, 3, 4, -1, /**/ 0, 1, 2, 7, 4, 3}, {6, 7});
  check_error(dir, "request 4, step 1, layer 1: position 7 at index 0 is >= seq_len 7");
  fresh({0, 1, 2, 3, 4, -1, /**/ 0, 1, 2, 5, 4, 5}, {6, 7});
  check_error(dir, "request 4, step 1, layer 1: position 5 appears more than once");
  fresh({0, 1, 2, 3, 4, -2, /**/ 0, 1, 2, 5, 4, 3}, {6, 7});
  check_error(dir, "request 4, step 0, layer 1: position -2");
  fresh({0, 1, 2, 3, 4, -1, /**/ 0, 1, 2, 5, 4, 3}, {6, 0});
  check_error(dir, "seq_len 0 out of range");
  fresh({0, 1, 2, 3, 4, -1, /**/ 0, 1, 2, 5, 4, 3}, {6, 7});
  spit(dir + "/meta.json", "{\"top_k\": 2}");
  check_error(dir, "request 4, step 0, layer 0: more than top_k = 2");
  spit(dir + "/meta.json", "{\"initial_state\": \"warm\"}");
  check_error(dir, "'warm' is not an initial state");
  spit(dir + "/meta.json", "{\"top_k\": ");
  check_error(dir, "invalid JSON");
  std::filesystem::remove(dir + "/meta.json");

  const std::string good = slurp(dir + "/req_4_topk.npy");
  spit(dir + "/req_4_topk.npy", good.substr(0, good.size() - 4));
  check_error(dir, "needs 48 data bytes, the file has 44");
  spit(dir + "/req_4_topk.npy", good.substr(0, 7));
  check_error(dir, "truncated .npy");
  std::string s = good;
  s[1] = 'M';
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "bad magic");
  s = good;
  s[6] = 9;
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "unsupported .npy format version 9");
  s = good;
  s.replace(s.find("<i4"), 3, "<f4");
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "dtype '<f4' not supported");
  s = good;
  s.replace(s.find("(2, 2, 3)"), 9, "(9999999999999, 2, 3)");
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "bad .npy header");
  s = good;
  s.replace(s.find("(2, 2, 3)"), 9, "(99999999999, 2, 3)");
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "implies more data than the file holds");
  s = good;
  s[8] = static_cast<char>(0xff);  // header length beyond the file
  s[9] = static_cast<char>(0xff);
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "does not fit the file");
  s = good;
  s.replace(s.find("False"), 5, "True ");
  spit(dir + "/req_4_topk.npy", s);
  check_error(dir, "Fortran-order");

  spit(dir + "/req_4_topk.npy", good);
  write_npy(dir + "/req_4_seq_lens.npy", 8, {3}, {6, 7, 8});
  check_error(dir, "has 2 steps");
  std::filesystem::remove(dir + "/req_4_seq_lens.npy");
  check_error(dir, "missing");
}

}  // namespace
}  // namespace hisparse::traces
