// @brief TaskPool and parallel_for (core/parallel/task_pool.h), the project's one way to run tasks on threads: every
// index runs exactly once per run on any thread count, runs can follow each other many times, and the error reported
// is the lowest index's whatever the timing.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/parallel/task_pool.h"
#include "sim/replay/replay_cuda_pool.h"

using hisparse::TaskPool;

TEST_CASE("TaskPool: every index once, on every thread count, run after run") {
  // Expected: for n in 0..12 and 1, 2 or 5 threads, each index's counter is exactly 1 after each run.
  for (const int threads : {1, 2, 5}) {
    TaskPool pool(threads);
    CHECK(pool.threads() == threads);
    for (int round = 0; round < 200; ++round) {
      const size_t n = static_cast<size_t>(round % 13);  // 0 and 1 included
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
    }
  }
}

TEST_CASE("TaskPool: the lowest failing index's error, the other tasks still run, the pool stays usable") {
  // Expected: indices 7, 16, 25, 34 throw; the message is always task 7's, all 40 tasks ran, and a later run works.
  TaskPool pool(4);
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

TEST_CASE("TaskPool: fewer than one thread is refused, naming the command") {
  // Expected: the message names the command and the flag as the user typed them.
  CHECK_THROWS_WITH_AS(TaskPool(0), "parallel_for: --threads 0 must be >= 1", std::exception);
  CHECK_THROWS_WITH_AS(TaskPool(-3, "select"), "select: --threads -3 must be >= 1", std::exception);
  CHECK_THROWS_WITH_AS(hisparse::sim::replay_detail::ReplayTaskPool(0), "replay: --threads 0 must be >= 1",
                       std::exception);
}

TEST_CASE("parallel_for: the same contract with a one-shot pool, and on one thread without any") {
  // Expected: every index once for 1, 2 and 8 threads (8 > n uses n threads); the lowest failure wins even on one
  // thread, where the indices run in order and a later failure must not replace the first.
  for (const int threads : {1, 2, 8}) {
    std::vector<std::atomic<int>> hits(5);
    hisparse::parallel_for(5, threads, [&](size_t i) { hits[i].fetch_add(1); });
    for (auto& h : hits) CHECK(h.load() == 1);
    std::string what;
    try {
      hisparse::parallel_for(6, threads, [&](size_t i) {
        if (i == 2 || i == 4) throw std::runtime_error("index " + std::to_string(i));
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what == "index 2");
  }
  hisparse::parallel_for(0, 4, [](size_t) { FAIL("no index to run"); });
  CHECK(hisparse::hardware_threads() >= 1);
}
