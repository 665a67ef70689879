// @brief The host threads of `replay --backend cuda` (--threads): a persistent fork-join pool that reads the step
// records of the lanes side by side. Kept apart from the CPU engine's pool (sim/replay/replay_engine.cpp), which runs
// one job per thread; this one hands out task indices, and reports the error of the lowest index so that the message
// does not depend on which thread got there first.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hisparse::sim::replay_detail {

class ReplayTaskPool {
 public:
  /// `threads` (>= 1) threads in all, the caller's included.
  explicit ReplayTaskPool(int threads);
  ~ReplayTaskPool();
  ReplayTaskPool(const ReplayTaskPool&) = delete;
  ReplayTaskPool& operator=(const ReplayTaskPool&) = delete;

  /// Runs task(i) for every i in [0, n), spread over the threads, and returns when all have run. If some threw,
  /// rethrows the exception of the lowest i (the others still ran).
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

}  // namespace hisparse::sim::replay_detail
