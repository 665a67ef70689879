// @brief CountingSwapInSession (see replay_cpu_session.h): one staged step of every row through every configuration
// (counting sglang-lru on marked positions, policy objects for the rest).
#include "sim/replay/replay_cpu_session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::sim {

CountingSwapInSession::CountingSwapInSession(SwapInSessionShape shape, int threads, int32_t slots,
                                             int32_t steps_per_slot, bool reference_lru)
    : shape_(std::move(shape)), steps_(steps_per_slot),
      pool_(std::max(1, std::min(threads, std::max(shape_.rows, 1)))) {
  if (slots < 1 || steps_per_slot < 1)
    throw_error("swap-in session: {} slots of {} steps (expected >= 1 each)", slots, steps_per_slot);
  if (shape_.rows < 1 || shape_.top_k < 1)
    throw_error("swap-in session: {} rows of top_k {} (expected >= 1 each)", shape_.rows, shape_.top_k);
  const size_t rows = static_cast<size_t>(shape_.rows), C = shape_.configs.size();
  for (const SessionConfig& c : shape_.configs) {
    if (c.H < shape_.top_k) throw_error("swap-in session: buffer size {} is smaller than top_k {}", c.H, shape_.top_k);
    offline_ = cpu_ref::make_policy(c.policy)->needs_future() || offline_;  // also rejects unknown names
    H_max_ = std::max(H_max_, c.H);
    if (c.policy == "sglang-lru" && !reference_lru) {
      lru_index_.push_back(static_cast<int32_t>(lru_H_.size()));
      lru_H_.push_back(c.H);
    } else {
      lru_index_.push_back(-1);
    }
  }
  lru_.assign(rows, std::vector<replay_detail::LruTokens>(lru_H_.size()));
  policy_.resize(rows);
  for (size_t b = 0; b < rows; ++b) {
    policy_[b].resize(C);
    for (size_t c = 0; c < C; ++c)
      if (lru_index_[c] < 0) policy_[b][c] = cpu_ref::make_policy(shape_.configs[c].policy);
  }
  workers_.resize(static_cast<size_t>(pool_.threads()));
  slots_.assign(static_cast<size_t>(slots),
                HostSessionSlot(rows * static_cast<size_t>(steps_), shape_.top_k, C, /*borrowed_lists=*/true, offline_));
}

void CountingSwapInSession::use_v2_schedules(const cpu_ref::V2Schedules& schedules) {
  for (auto& row : policy_)
    for (size_t c = 0; c < row.size(); ++c)
      if (row[c]) cpu_ref::attach_v2_schedule(*row[c], schedules, shape_.configs[c].policy, shape_.configs[c].H);
}

SessionStaging CountingSwapInSession::staging(int32_t slot) {
  return slots_.at(static_cast<size_t>(slot)).staging();
}

void CountingSwapInSession::step_row(Worker& w, HostSessionSlot& s, size_t b) {  // b: the cell (step * rows + row)
  const size_t C = shape_.configs.size();
  const int32_t K = shape_.top_k;
  const int32_t n = s.seq_len[b];
  const size_t row = b % static_cast<size_t>(shape_.rows);
  for (size_t c = 0; c < C; ++c) s.counts[c][b] = {};
  if (n <= 0) return;  // padding row
  if (s.init[b] == SessionRowInit::kStart) {
    for (size_t k = 0; k < lru_H_.size(); ++k) lru_[row][k].reset(lru_H_[k], shape_.initial);
    for (size_t c = 0; c < C; ++c)
      if (policy_[row][c]) policy_[row][c]->reset(shape_.configs[c].H, shape_.initial);
  }
  // A window of the request starts here (the driver's look-ahead stage): its offline policies take their future.
  if (offline_)
    for (size_t c = 0; c < C; ++c)
      if (auto& f = s.futures[b * C + c]) policy_[row][c]->set_future(std::move(f));
  const int32_t* sel = s.lists[b] ? s.lists[b] : s.selected.data() + b * static_cast<size_t>(K);
  const cpu_ref::StepContext where{s.request[b], s.layer[b], s.step[b]};
  const bool marked = !lru_H_.empty() && w.marks.mark(sel, K, n, K, H_max_);
  for (size_t c = 0; c < C; ++c) {
    SessionRowCounts& out = s.counts[c][b];
    const int32_t H = shape_.configs[c].H;
    if (lru_index_[c] >= 0) {
      replay_detail::LruTokens& st = lru_[row][static_cast<size_t>(lru_index_[c])];
      if (!st.started) {
        // An `empty` request whose first step has n <= H was preloaded whole (SwapInPolicy::step).
        if (st.initial == InitialState::kEmpty && n <= H) st.reset(H, InitialState::kIdentity);
        st.started = true;
      }
      replay_detail::LruCounts k;
      if (!marked || st.span > w.marks.limit()) {
        k = replay_detail::lru_reference_step(st, sel, K, n, K, where, w.scratch, w.plan, w.ref_slot_token, w.ref_lru);
      } else if (n <= H) {
        k = {w.marks.selected, w.marks.newest_hit, 0};  // fast path: nothing moves
      } else {
        k = replay_detail::lru_slow_step(st, sel, K, n, w.marks, where);
      }
      out = {k.selected, k.selected - k.newest_hits - k.misses, k.newest_hits, k.misses};
    } else {
      policy_[row][c]->step({sel, K, n, K, nullptr, shape_.row_bytes}, where, w.plan, w.scratch);
      const SwapInCounters& k = w.plan.counters;
      out = {static_cast<int32_t>(k.selected), static_cast<int32_t>(k.hits), static_cast<int32_t>(k.newest_hits),
             static_cast<int32_t>(k.misses)};
    }
  }
  if (marked) w.marks.clear();  // while the list is still there (the next mark() starts from zero bits)
}

void CountingSwapInSession::submit(int32_t slot) {
  const auto t0 = std::chrono::steady_clock::now();
  HostSessionSlot& s = slots_.at(static_cast<size_t>(slot));
  // Rows are taken in increasing order by whichever worker is free (rows differ in cost: some layers miss more).
  // Each row goes through all the slot's steps before the next row: its states stay in cache meanwhile. A rejected
  // row stops the taking; the rows below it were all taken before it and finish, so the error thrown is that of the
  // lowest rejected row whatever the thread count.
  const size_t rows = static_cast<size_t>(shape_.rows), T = workers_.size(), W = static_cast<size_t>(steps_);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  size_t error_row = rows;
  std::exception_ptr error;
  pool_.run(T, [&](size_t t) {
    for (size_t b = next++; b < rows && !stop; b = next++) {
      try {
        for (size_t j = 0; j < W; ++j) step_row(workers_[t], s, j * rows + b);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (b < error_row) {
          error_row = b;
          error = std::current_exception();
        }
        stop = true;
      }
    }
  });
  if (error) std::rethrow_exception(error);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const SessionRowCounts* CountingSwapInSession::counts(int32_t slot, size_t config) const {
  return slots_.at(static_cast<size_t>(slot)).counts.at(config).data();
}

size_t CountingSwapInSession::staging_bytes() const {
  size_t b = 0;
  for (const HostSessionSlot& s : slots_) b += s.staging_bytes();
  return b;
}

}  // namespace hisparse::sim
