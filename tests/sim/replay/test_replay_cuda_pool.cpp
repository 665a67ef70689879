// @brief ReplayTaskPool (sim/replay/replay_cuda_pool.h), the host threads of `replay --backend cuda`: every index runs
// exactly once per run on any thread count, runs can follow each other many times, and the error reported is the
// lowest index's whatever the timing.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/replay/replay_cuda_pool.h"

using hisparse::sim::replay_detail::ReplayTaskPool;

TEST_CASE("ReplayTaskPool: every index once, on every thread count, run after run") {
  for (const int threads : {1, 2, 5}) {
    ReplayTaskPool pool(threads);
    CHECK(pool.threads() == threads);
    for (int round = 0; round < 200; ++round) {
      const size_t n = static_cast<size_t>(round % 13);  // 0 and 1 included
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
    }
  }
}

TEST_CASE("ReplayTaskPool: the lowest failing index's error, the other tasks still run, the pool stays usable") {
  ReplayTaskPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> ran{0};
    std::string what;
    try {
      pool.run(40, [&](size_t i) {
        ran.fetch_add(1);
        if (i % 9 == 7) throw std::runtime_error("task " + std::to_string(i));
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what == "task 7");
    CHECK(ran.load() == 40);
  }
  std::atomic<int> sum{0};
  pool.run(10, [&](size_t i) { sum.fetch_add(static_cast<int>(i)); });
  CHECK(sum.load() == 45);
}

TEST_CASE("ReplayTaskPool: no thread is refused") {
  CHECK_THROWS_WITH_AS(ReplayTaskPool(0), "replay: --threads 0 must be >= 1", std::exception);
}
