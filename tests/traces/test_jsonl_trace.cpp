// @brief JSON-lines traces (DeepSeek-V3.2 hook layout): grouping, ordering, conversion and hostile records.
#include <doctest/doctest.h>

#include "tests/traces/trace_test_util.h"

namespace hisparse::traces {
namespace {

using testing::read_all;
using testing::scratch_dir;
using testing::spit;

std::string rec(int64_t r, int64_t s, int l, int n, const std::string& pos) {
  return "{\"request_id\": " + std::to_string(r) + ", \"step_idx\": " + std::to_string(s) + ", \"layer_id\": " +
         std::to_string(l) + ", \"seq_len\": " + std::to_string(n) + ", \"selected_token_pos\": [" + pos + "]}\n";
}

std::string error_of(const std::string& path) {
  try {
    auto src = open_trace(path);
    read_all(*src);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST_CASE("jsonl: records in any order are grouped by request, steps ascending, layers in place") {
  const std::string dir = scratch_dir("jsonl_basic");
  // Request 7 appears first; its steps come out of order and interleaved with request 2.
  const std::string text = rec(7, 11, 1, 9, "8, 3") + rec(2, 0, 0, 4, "3") + rec(7, 10, 0, 8, "5, 1, 7") +
                           "\n" + rec(7, 10, 1, 8, "0") + rec(2, 0, 1, 4, "") + rec(7, 11, 0, 9, "1, 5, 7");
  spit(dir + "/t.jsonl", text);
  auto src = open_trace(dir + "/t.jsonl");
  CHECK(src->meta().layers == 2);
  CHECK(src->meta().top_k == 3);
  CHECK(src->request_ids() == std::vector<int64_t>{7, 2});
  const auto recs = read_all(*src);
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].request_id == 7);
  CHECK(recs[0].step == 0);
  CHECK(recs[0].seq_len == 8);
  CHECK(recs[0].positions == std::vector<int32_t>{5, 1, 7, 0, -1, -1});
  CHECK(recs[1].step == 1);
  CHECK(recs[1].positions == std::vector<int32_t>{1, 5, 7, 8, 3, -1});
  CHECK(recs[2].request_id == 2);
  CHECK(recs[2].positions == std::vector<int32_t>{3, -1, -1, -1, -1, -1});

  src->seek_request(2);
  StepRecord r;
  REQUIRE(src->next(r));
  CHECK(r.request_id == 2);

  // jsonl -> native keeps everything.
  src->seek_request(7);
  testing::write_trace(*src, dir + "/t.hstrace", TraceFormat::kNative);
  auto back = open_trace(dir + "/t.hstrace");
  const auto again = read_all(*back);
  REQUIRE(again.size() == recs.size());
  for (size_t i = 0; i < recs.size(); ++i) CHECK(again[i].positions == recs[i].positions);

  TraceOpenOptions o;
  o.top_k = 2048;
  o.initial_state = InitialState::kEmpty;
  auto wide = open_trace(dir + "/t.jsonl", o);
  CHECK(wide->meta().top_k == 2048);
  CHECK(wide->meta().initial_state == InitialState::kEmpty);
}

TEST_CASE("jsonl: hostile records") {
  const std::string dir = scratch_dir("jsonl_hostile");
  const std::string p = dir + "/t.jsonl";
  auto expect = [&](const std::string& text, const std::string& needle) {
    spit(p, text);
    const std::string err = error_of(p);
    INFO("error: " << err);
    CHECK(err.find(needle) != std::string::npos);
  };
  expect(rec(1, 0, 0, 5, "0, 5"), "request 1, step 0, layer 0: position 5 at index 1 is >= seq_len 5");
  expect(rec(1, 0, 0, 5, "2, 2"), "request 1, step 0, layer 0: position 2 appears more than once");
  expect(rec(1, 0, 0, 5, "1") + rec(1, 0, 0, 5, "2"), "request 1, step_idx 0, layer 0: a second record");
  expect(rec(1, 0, 0, 5, "1") + rec(1, 0, 2, 5, "2"), "request 1, step_idx 0: no record for layer 1");
  expect(rec(1, 0, 0, 5, "1") + rec(1, 0, 1, 6, "2"), "seq_len 6 but layer 0 of this step says 5");
  expect(rec(1, 0, 0, 5, "1.5"), "selected_token_pos[0] is not a position");
  expect(rec(1, 0, 0, 0, "1"), "\"seq_len\" must be an integer in 1..");
  expect("{\"request_id\": 1, \"step_idx\": 0}\n", "missing \"layer_id\"");
  expect("{\"request_id\": 1,,}\n", "invalid JSON");
  expect(std::string(100, '[') + "\n", "not a trace");
  expect("{\"a\": " + std::string(100, '[') + "\n", "nesting deeper than 64");
  expect(rec(1, 0, 0, 5, "0, 1, 2"), "");  // sanity: the helper reports success as ""
  spit(p, rec(1, 0, 0, 5, "0, 1, 2"));
  TraceOpenOptions o;
  o.top_k = 2;
  CHECK_THROWS_WITH_AS(read_all(*open_trace(p, o)), doctest::Contains("request 1, step 0, layer 0: more than top_k = 2"),
                       Error);
}

}  // namespace
}  // namespace hisparse::traces
