// @brief `.npy` directory traces: numpy's header layout, int32/int64, overrides, `.npy -> native -> .npy` bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "tests/traces/trace_test_util.h"
#include "traces/npy_array.h"
#include "traces/trace_generator.h"

namespace hisparse::traces {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::scratch_dir;
using testing::slurp;
using testing::write_trace;

const std::string kFixture = std::string(HISPARSE_SOURCE_DIR) + "/tests/traces/data/npy_numpy";

/// Every file of directory `a` equals the same-named file of `b`, and both list the same names.
void check_same_dir(const std::string& a, const std::string& b) {
  std::vector<std::string> names_a, names_b;
  for (const auto& e : fs::directory_iterator(a)) names_a.push_back(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(b)) names_b.push_back(e.path().filename().string());
  std::sort(names_a.begin(), names_a.end());
  std::sort(names_b.begin(), names_b.end());
  REQUIRE(names_a == names_b);
  for (const auto& n : names_a) {
    INFO("file " << n);
    CHECK(slurp(a + "/" + n) == slurp(b + "/" + n));
  }
}

TEST_CASE("npy header matches numpy 1.24 np.save byte for byte") {
  // Expected: what python3 -c "np.save(f, np.zeros((3,2,4), np.int32))" writes (header 118 + 10 bytes).
  const std::string h = format_npy_header(4, {3, 2, 4});
  CHECK(h.size() == 128);
  CHECK(h.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2, 4), }";
  CHECK(h.substr(10, dict.size()) == dict);
  CHECK(h.find_first_not_of(' ', 10 + dict.size()) == h.size() - 1);
  CHECK(h.back() == '\n');
  CHECK(format_npy_header(8, {5}).size() == 128);
  CHECK(format_npy_header(8, {5}).find("'shape': (5,), }") != std::string::npos);
  // The growth padding keeps the length when the first axis gets more digits (the writer patches in place).
  CHECK(format_npy_header(4, {0, 61, 2048}).size() == format_npy_header(4, {123456789, 61, 2048}).size());
}

TEST_CASE("numpy-written int64 fixture: values, padding, order, meta.json") {
  auto src = open_trace(kFixture);
  CHECK(src->meta().layers == 2);
  CHECK(src->meta().top_k == 4);
  CHECK(src->meta().initial_state == InitialState::kEmpty);
  CHECK(src->meta().topk_dtype_bytes == 8);
  CHECK(src->meta().seq_lens_dtype_bytes == 8);
  CHECK(src->request_ids() == std::vector<int64_t>{3, 10});
  const auto recs = read_all(*src);
  REQUIRE(recs.size() == 4);
  CHECK(recs[0].request_id == 3);
  CHECK(recs[0].seq_len == 6);
  CHECK(recs[0].positions == std::vector<int32_t>{5, 1, 3, -1, 0, 2, -1, -1});
  CHECK(recs[2].step == 2);
  CHECK(recs[2].positions == std::vector<int32_t>{7, -1, 1, 5, -1, -1, -1, -1});
  CHECK(recs[3].request_id == 10);
  CHECK(recs[3].step == 0);
  CHECK(recs[3].seq_len == 9);

  TraceOpenOptions o;
  o.initial_state = InitialState::kIdentity;
  o.top_k = 6;  // wider: rows gain trailing -1
  auto wide = open_trace(kFixture, o);
  CHECK(wide->meta().initial_state == InitialState::kIdentity);
  StepRecord r;
  REQUIRE(wide->next(r));
  CHECK(r.positions == std::vector<int32_t>{5, 1, 3, -1, -1, -1, 0, 2, -1, -1, -1, -1});
  o.top_k = 3;  // narrower: fits every row except request 3 step 1 layer 0 (4 valid)
  auto narrow = open_trace(kFixture, o);
  REQUIRE(narrow->next(r));
  CHECK(r.positions == std::vector<int32_t>{5, 1, 3, 0, 2, -1});
  CHECK_THROWS_WITH_AS(narrow->next(r), doctest::Contains("request 3, step 1, layer 0: more than top_k = 3"), Error);
}

TEST_CASE(".npy -> native -> .npy is byte-identical (numpy-written int64 fixture)") {
  const std::string dir = scratch_dir("npy_fixture_roundtrip");
  {
    auto src = open_trace(kFixture);
    write_trace(*src, dir + "/t.hstrace", TraceFormat::kNative);
  }
  auto native = open_trace(dir + "/t.hstrace");
  write_trace(*native, dir + "/back", TraceFormat::kNpy);
  check_same_dir(kFixture, dir + "/back");
}

TEST_CASE(".npy -> native -> .npy is byte-identical (generated int32, score order, padding)") {
  const std::string dir = scratch_dir("npy_gen_roundtrip");
  GeneratorOptions g = generator_preset("tiny");
  g.prompt_len = 10;  // shorter than top_k at first: rows are -1 padded
  g.shuffle = true;
  auto gen = make_generated_trace(g);
  write_trace(*gen, dir + "/a", TraceFormat::kNpy);
  auto npy = open_trace(dir + "/a");
  CHECK(npy->meta().topk_dtype_bytes == 4);
  gen->seek_request(0);
  const auto expected = read_all(*gen);
  const auto got = read_all(*npy);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].positions == expected[i].positions);
  CHECK(std::count(got[0].positions.begin(), got[0].positions.end(), -1) > 0);

  npy->seek_request(0);
  write_trace(*npy, dir + "/t.hstrace", TraceFormat::kNative);
  auto native = open_trace(dir + "/t.hstrace");
  write_trace(*native, dir + "/b", TraceFormat::kNpy);
  check_same_dir(dir + "/a", dir + "/b");
}

TEST_CASE("npy seek and directory errors") {
  auto src = open_trace(kFixture);
  src->seek_request(10);
  StepRecord r;
  REQUIRE(src->next(r));
  CHECK(r.request_id == 10);
  CHECK_FALSE(src->next(r));
  src->seek_request(3);
  REQUIRE(src->next(r));
  CHECK(r.request_id == 3);
  CHECK_THROWS_WITH_AS(src->seek_request(4), doctest::Contains("no request 4"), Error);

  const std::string empty = scratch_dir("npy_empty");
  CHECK_THROWS_WITH_AS(open_trace(empty), doctest::Contains("no req_<id>_topk.npy"), Error);
  const std::string dir = scratch_dir("npy_out_exists");
  testing::spit(dir + "/other", "x");
  TraceMeta m;
  m.layers = 1;
  m.top_k = 1;
  CHECK_THROWS_WITH_AS(make_npy_writer(dir, m), doctest::Contains("not an empty directory"), Error);
}

}  // namespace
}  // namespace hisparse::traces
