// @brief ReplayTaskPool (see replay_cuda_pool.h).
#include "sim/replay/replay_cuda_pool.h"

#include "core/error.h"

namespace hisparse::sim::replay_detail {

ReplayTaskPool::ReplayTaskPool(int threads) {
  if (threads < 1) throw_error("replay: --threads {} must be >= 1", threads);
  for (int t = 1; t < threads; ++t) threads_.emplace_back([this] { loop(); });
}

ReplayTaskPool::~ReplayTaskPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& th : threads_) th.join();
}

void ReplayTaskPool::work() {
  // Indices are taken one at a time under the lock: tasks here read a whole step record (hundreds of KiB), so the
  // lock is not what limits.
  while (true) {
    size_t i;
    const std::function<void(size_t)>* task;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (next_ >= n_) return;
      i = next_++;
      task = task_;
    }
    try {
      (*task)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      if (!error_ || i < error_index_) {
        error_ = std::current_exception();
        error_index_ = i;
      }
    }
  }
}

void ReplayTaskPool::loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++busy_;
    }
    work();
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ReplayTaskPool::run(size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  {
    std::lock_guard<std::mutex> lock(m_);
    task_ = &task;
    n_ = n;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  // A single task needs no other thread.
  if (n > 1) wake_.notify_all();
  work();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(m_);
    // Every index has been taken once work() returns; wait for the threads still running theirs.
    done_.wait(lock, [&] { return busy_ == 0; });
    task_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace hisparse::sim::replay_detail
