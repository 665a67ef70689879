// @brief Decode retraction (SGLang) and recompute preemption (vLLM) in the serving engine: a hand-worked two-request
// case on a ten-page pool, and today's whole-request admission kept when the deployment does not retract.
#include <doctest/doctest.h>

#include <string>
#include <tuple>

#include "core/error.h"

#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

/// The shipped node as one TP8 rank, colocated prefill, a full pool of 640 tokens (10 pages of 64).
Scenario small_pool(const std::string& engine, double reserve_ratio) {
  Scenario sc = dsv32_node();
  sc.deployment.pd_disaggregation = false;
  sc.deployment.decode.dp_attention = 1;
  sc.deployment.memory.full_pool_tokens = 640;
  sc.deployment.engine = engine;
  sc.deployment.decode_reserve_ratio = reserve_ratio;
  return sc;
}

ServingResult run_two(const Scenario& sc) {
  ServingOptions opt;
  opt.mode = KvMode::kFull;
  return run_serving(sc, burst(2, 192, 200), opt);
}

}  // namespace

// Hand-worked: A and B (192-token prompts = 3 pages, 200 output tokens) are admitted on their prompts alone (3 + 3 of
// 10 pages). A's prefill pass runs first, so A decodes one step ahead of B: at a step A has n = B's n + 1 (n: the
// length after the step). Pages are taken as n crosses 193, 257 (4 and 5 pages each): 10 − 6 − 2 − 2 = 0 free. At
// A's n = 321 (decoded 128) A needs a 6th page, none is free, B (n = 320, decoded 127) needs none: retract.
// SGLang sorts by (decoded, −prompt) descending and pops the last: B (127 < 128). vLLM pops the last running request:
// B (it joined after A). B frees its 5 pages, A takes one; B waits (its 192 + 127 = 319 tokens need 5 pages, 4 are
// free, then 3 once A takes its 7th at n = 385) until A finishes (decoded 199), then prefills 319 tokens again and
// decodes its last 200 − 1 − 127 = 72 tokens (its 7 pages fit the empty pool: no second retraction).
TEST_CASE("retraction under memory pressure: the hand-worked two-request case, SGLang and vLLM") {
  for (const auto& [engine, ratio, rule] :
       {std::tuple<std::string, double, std::string>{"sglang", 0.0, "sglang retract_decode"},
        std::tuple<std::string, double, std::string>{"vllm", 1.0, "vllm recompute preemption"}}) {
    CAPTURE(engine);
    const ServingResult r = run_two(small_pool(engine, ratio));
    REQUIRE(r.logical_pool_tokens == 640);  // the case's premise: ten pages
    CHECK(r.retraction == rule);
    CHECK(r.finished == 2);
    CHECK(r.rejected == 0);
    CHECK(r.retractions == 1);
    CHECK(r.requests[0].retractions == 0);
    CHECK(r.requests[1].retractions == 1);
    CHECK(r.retracted_tokens == 192 + 127);
    CHECK(r.recomputed_tokens == 192 + 127);
    CHECK(r.recompute_ns > 0);
    // Both decode their whole output; no decoded token is lost (B keeps its 127).
    CHECK(r.requests[1].decoded == 199);
    CHECK(r.decode_tokens == 2 * 199);
    // Prefill: both prompts once, then B's prompt and decoded tokens again.
    CHECK(r.prefill_tokens == 192 + 192 + 319);
    // Re-admission: B starts again only after A has finished; its first token is its first prefill's.
    CHECK(r.requests[1].finish > r.requests[0].finish);
    CHECK(r.requests[1].first_token < r.requests[0].finish);
  }
}

// Without retraction (SGLang, decode_reserve_ratio 1: the default) admission reserves each whole request,
// 192 + 200 = 392 tokens → 7 pages: A and B need 14 of 10, so B waits at the head of the line and nothing is retracted.
TEST_CASE("whole-request admission: the request that does not fit waits, nothing is retracted") {
  const ServingResult r = run_two(small_pool("sglang", 1.0));
  CHECK(r.retraction == "none");
  CHECK(r.retractions == 0);
  CHECK(r.finished == 2);
  CHECK(r.requests[1].admitted >= r.requests[0].finish);
  CHECK(r.prefill_tokens == 192 + 192);
}

TEST_CASE("retraction is refused outside full-KV colocated serving, naming the setting") {
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  CHECK_THROWS_WITH_AS(run_serving(small_pool("vllm", 1.0), burst(1, 192, 8), opt),
                       doctest::Contains("engine: vllm"), hisparse::Error);
}

// Hand-worked, vLLM's chunk-by-chunk blocks (token budget 128 = 2 pages): A and B have 448-token prompts (7 pages)
// and 8 output tokens (A's 456 tokens: 8 pages). Whole-request admission would hold B back until A finishes (8 + 8 >
// 10 pages); vLLM schedules B on its first chunk alone (2 + 2 of 10), so B starts before A finishes. A, first in the
// prefill queue, prefills its 4 chunks (7 pages) and takes its 8th page at its first decode step: 8 + 2 = 10, none
// free. B's second chunk then needs 2 more pages; B is the most recently scheduled request, so it preempts itself,
// dropping the 128 tokens of its first chunk, and is scheduled again on its first chunk (2 pages free) until A is done.
// Every preemption is B's and drops exactly that one chunk, so the tokens dropped and recomputed are 128 per
// preemption; A is never preempted, and both finish.
TEST_CASE("vLLM schedules a long prompt a chunk at a time: the newest request preempts itself when blocks run out") {
  ServingOptions opt;
  opt.mode = KvMode::kFull;
  opt.cost.prefill_chunk_tokens = 128;
  const ServingResult r = run_serving(small_pool("vllm", 1.0), burst(2, 448, 8), opt);
  REQUIRE(r.logical_pool_tokens == 640);  // the case's premise: ten pages
  CHECK(r.finished == 2);
  CHECK(r.requests[1].admitted < r.requests[0].finish);
  CHECK(r.requests[0].retractions == 0);
  CHECK(r.retractions >= 1);
  CHECK(r.requests[1].retractions == r.retractions);
  CHECK(r.retracted_tokens == 128 * r.retractions);
  CHECK(r.recomputed_tokens == 128 * r.retractions);
  CHECK(r.requests[1].decoded == 7);
}
