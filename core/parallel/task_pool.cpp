// @brief TaskPool and parallel_for (see task_pool.h).
#include "core/parallel/task_pool.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse {

TaskPool::TaskPool(int threads, const std::string& command) {
  if (threads < 1) throw_error("{}: --threads {} must be >= 1", command, threads);
  for (int t = 1; t < threads; ++t) threads_.emplace_back([this] { loop(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& th : threads_) th.join();
}

void TaskPool::work() {
  // Indices are taken one at a time under the lock: the project's tasks are coarse (a step record, a layer, a
  // validation case), so the lock is not what limits.
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

void TaskPool::loop() {
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

void TaskPool::run(size_t n, const std::function<void(size_t)>& task) {
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

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  const size_t wanted = std::max<size_t>(1, std::min<size_t>(n, static_cast<size_t>(std::max(1, threads))));
  if (wanted == 1) {
    // The same contract without a thread: every index runs, the lowest failure is the one reported.
    std::exception_ptr first;
    for (size_t i = 0; i < n; ++i) {
      try {
        task(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  TaskPool pool(static_cast<int>(wanted));
  pool.run(n, task);
}

int hardware_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace hisparse
