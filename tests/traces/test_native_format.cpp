// @brief Native format: lossless round trips (order, padding, ids), chunking, seek, and the compression target.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/traces/trace_test_util.h"
#include "traces/trace_generator.h"
#include "traces/trace_source.h"

namespace hisparse::traces {
namespace {

using testing::read_all;
using testing::scratch_dir;
using testing::VectorTrace;
using testing::write_trace;

TraceMeta small_meta(int32_t layers, int32_t top_k) {
  TraceMeta m;
  m.layers = layers;
  m.top_k = top_k;
  m.source = "hand-made";
  return m;
}

/// Two requests with the awkward cases: unsorted lists, -1 in the middle, empty layers, shrinking lists,
/// a negative request id and a seq_len that jumps.
std::vector<StepRecord> awkward_records() {
  std::vector<StepRecord> r;
  r.push_back({-7, 0, 10, {3, 1, 9, -1, /**/ -1, -1, -1, -1, /**/ 0, 1, 2, 3}});
  r.push_back({-7, 1, 11, {1, -1, 10, 3, /**/ 5, -1, -1, -1, /**/ 3, 2, 1, 0}});
  r.push_back({-7, 2, 40, {39, 38, 1, 0, /**/ -1, 5, -1, 7, /**/ 0, 1, 2, 3}});
  r.push_back({12, 0, 5, {4, -1, -1, -1, /**/ 0, 1, 2, 3, /**/ -1, -1, -1, -1}});
  r.push_back({12, 1, 6, {4, 5, -1, -1, /**/ 3, 2, 5, 0, /**/ -1, -1, -1, 5}});
  return r;
}

void check_same(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].request_id == b[i].request_id);
    CHECK(a[i].step == b[i].step);
    CHECK(a[i].seq_len == b[i].seq_len);
    CHECK(a[i].positions == b[i].positions);
  }
}

TEST_CASE("native round trip keeps order, padding pattern and ids of hand-made records") {
  const std::string dir = scratch_dir("native_awkward");
  for (bool compress : {true, false}) {
    VectorTrace src(small_meta(3, 4), awkward_records());
    const std::string path = dir + (compress ? "/z.hstrace" : "/raw.hstrace");
    TraceWriteOptions opt;
    opt.compress = compress;
    opt.chunk_bytes = 1;  // one step per chunk: continuation across chunks is exercised
    write_trace(src, path, TraceFormat::kNative, opt);
    auto back = open_trace(path);
    CHECK(back->meta().layers == 3);
    CHECK(back->meta().top_k == 4);
    CHECK(back->request_ids() == std::vector<int64_t>{-7, 12});
    check_same(read_all(*back), awkward_records());
  }
}

TEST_CASE("native round trip of a generated trace, seek to a request, meta flags") {
  GeneratorOptions g = generator_preset("tiny");
  g.requests = 3;
  g.shuffle = true;
  g.initial_state = InitialState::kEmpty;
  auto gen = make_generated_trace(g);
  const auto expected = read_all(*gen);
  gen->seek_request(0);
  const std::string path = scratch_dir("native_gen") + "/t.hstrace";
  TraceWriteOptions opt;
  opt.chunk_bytes = 64;
  write_trace(*gen, path, TraceFormat::kNative, opt);
  auto back = open_trace(path);
  CHECK(back->meta().initial_state == InitialState::kEmpty);
  check_same(read_all(*back), expected);

  // Seek into the middle, then back to the start: each yields that request's steps from 0 on.
  back->seek_request(1);
  StepRecord rec;
  REQUIRE(back->next(rec));
  CHECK(rec.request_id == 1);
  CHECK(rec.step == 0);
  CHECK(rec.positions == expected[static_cast<size_t>(g.steps)].positions);
  back->seek_request(2);
  auto rest = read_all(*back);
  CHECK(rest.size() == static_cast<size_t>(g.steps));
  back->seek_request(0);
  check_same(read_all(*back), expected);
  CHECK_THROWS_WITH_AS(back->seek_request(99), doctest::Contains("no request 99"), Error);

  TraceOpenOptions o;
  o.initial_state = InitialState::kIdentity;
  CHECK(open_trace(path, o)->meta().initial_state == InitialState::kIdentity);
}

TEST_CASE("native format is at least 8x smaller than raw int32 at 85% adjacent overlap") {
  GeneratorOptions g;  // preset "default": K 2048, 85% overlap
  g.requests = 2;
  g.steps = 48;
  g.layers = 8;
  auto gen = make_generated_trace(g);
  const std::string path = scratch_dir("native_ratio") + "/t.hstrace";
  write_trace(*gen, path, TraceFormat::kNative);
  const double raw = static_cast<double>(g.requests * g.steps * g.layers * g.top_k * 4);
  const double ratio = raw / static_cast<double>(std::filesystem::file_size(path));
  MESSAGE("native / raw int32 compression ratio at 85% overlap, K 2048: " << ratio);
  CHECK(ratio >= 8.0);

  // Score order costs a permutation per list; it must still round-trip (no ratio promised).
  g.shuffle = true;
  g.steps = 6;
  auto shuffled = make_generated_trace(g);
  const auto expected = read_all(*shuffled);
  shuffled->seek_request(0);
  const std::string p2 = scratch_dir("native_ratio_shuffled") + "/t.hstrace";
  write_trace(*shuffled, p2, TraceFormat::kNative);
  auto back = open_trace(p2);
  check_same(read_all(*back), expected);
}

TEST_CASE("writer rejects records out of order and invalid lists") {
  const std::string dir = scratch_dir("native_writer_errors");
  auto w = make_native_writer(dir + "/a.hstrace", small_meta(1, 2));
  w->write({5, 0, 3, {0, 1}});
  CHECK_THROWS_WITH_AS(w->write({5, 2, 3, {0, 1}}), doctest::Contains("step 2 follows step 0"), Error);
  w->write({6, 0, 3, {2, -1}});
  CHECK_THROWS_WITH_AS(w->write({5, 0, 3, {0, 1}}), doctest::Contains("request 5 appears twice"), Error);
  CHECK_THROWS_WITH_AS(w->write({6, 1, 3, {1, 1}}), doctest::Contains("request 6, step 1, layer 0: position 1 appears more than once"), Error);
  CHECK_THROWS_WITH_AS(w->write({6, 1, 3, {3, 1}}), doctest::Contains("position 3 at index 0 is >= seq_len 3"), Error);
  w.reset();  // unfinished: nothing left at the path
  CHECK_FALSE(std::filesystem::exists(dir + "/a.hstrace"));
}

}  // namespace
}  // namespace hisparse::traces
