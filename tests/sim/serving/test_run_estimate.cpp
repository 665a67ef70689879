// @brief A serving run's up-front estimate (sim/serving/run_estimate.h): the decode tokens are the workload's output
// lengths, cycled for closed-loop clients; the time grows with them and, at a small batch, with the steps.
#include <doctest/doctest.h>

#include "sim/serving/run_estimate.h"

using namespace hisparse::sim;

namespace {

Workload three_requests() {
  Workload w;
  w.name = "t";
  for (int i = 0; i < 3; ++i) w.requests.push_back({i, i * 1000, 1024, 100 * (i + 1)});  // outputs 100, 200, 300
  return w;
}

}  // namespace

TEST_CASE("run estimate: tokens are the output lengths, cycled in order for closed-loop clients") {
  const Workload w = three_requests();
  // Open loop: every request once, 100 + 200 + 300.
  const ServingWork open = estimate_serving_work(w, KvMode::kHiSparse, ClientSpec{});
  CHECK(open.requests == 3);
  CHECK(open.decode_tokens == 600);
  // 7 requests by 2 clients: two whole cycles (1,200) and the first request again (100).
  ClientSpec c;
  c.concurrency = 2;
  c.requests = 7;
  const ServingWork closed = estimate_serving_work(w, KvMode::kHiSparse, c);
  CHECK(closed.requests == 7);
  CHECK(closed.decode_tokens == 1300);
  CHECK(closed.seconds > 0);
}

TEST_CASE("run estimate: full KV is cheaper than HiSparse, and one client pays a step per token") {
  const Workload w = three_requests();
  ClientSpec one, many;
  one.concurrency = 1;
  one.requests = 3000;
  many.concurrency = 1000;
  many.requests = 3000;
  const ServingWork hs_one = estimate_serving_work(w, KvMode::kHiSparse, one);
  const ServingWork hs_many = estimate_serving_work(w, KvMode::kHiSparse, many);
  const ServingWork full_many = estimate_serving_work(w, KvMode::kFull, many);
  // The same tokens; at batch 1 every token is its own lockstep step, measured several times a token's share.
  CHECK(hs_one.decode_tokens == hs_many.decode_tokens);
  CHECK(hs_one.seconds > 3 * hs_many.seconds);
  // Measured: full KV ran the same requests in about half HiSparse's time (2.20 s against 4.16 s).
  CHECK(full_many.seconds < hs_many.seconds);
  // A million clients sending four requests each (simulate's default): 1,333,333 cycles of 600 tokens and the first
  // request's 100, about 8e8 tokens; at the measured 4.16 s per 1,413,606 tokens 2,354 s, the step term (800 steps)
  // adding next to nothing.
  ClientSpec huge;
  huge.concurrency = 1000000;
  huge.requests = 4000000;
  const ServingWork big = estimate_serving_work(w, KvMode::kHiSparse, huge);
  CHECK(big.decode_tokens == 1333333.0 * 600 + 100);
  CHECK(big.seconds == doctest::Approx(2354).epsilon(0.01));
}
