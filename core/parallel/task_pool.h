// @brief TaskPool and parallel_for: the project's one way to spread independent tasks over threads. A fixed set of
// threads (the caller's included) takes task indices one at a time; a failure is reported as the exception of the
// lowest failing index, so the message does not depend on which thread got there first (determinism), and the other
// tasks still run. Results must be written per index by the tasks themselves: the order in which indices run is not
// defined, only that each runs exactly once per call.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hisparse {

class TaskPool {
 public:
  /// `threads` (>= 1) threads in all, the caller's included. `command` names who asked, for the error when threads
  /// is below 1 ("<command>: --threads 0 must be >= 1").
  explicit TaskPool(int threads, const std::string& command = "parallel_for");
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Runs task(i) for every i in [0, n), spread over the threads, and returns when all have run. If some threw,
  /// rethrows the exception of the lowest i. Persistent threads: a pool is cheap to run many times (a replay runs
  /// one call per batch of requests), where spawning threads per call would cost more than a small call's work.
  void run(size_t n, const std::function<void(size_t)>& task);
  int threads() const { return static_cast<int>(threads_.size()) + 1; }

 private:
  void loop();
  void work();

  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t n_ = 0, next_ = 0;
  int busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  size_t error_index_ = 0;
  std::exception_ptr error_;
};

/// One-shot form: task(i) for i in [0, n) on min(threads, n) threads (at least 1), as TaskPool::run.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& task);

/// The machine's hardware threads, at least 1 (std::thread::hardware_concurrency may say 0).
int hardware_threads();

}  // namespace hisparse
