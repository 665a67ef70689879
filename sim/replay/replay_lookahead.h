// @brief The replay driver's look-ahead stage (sim/replay/replay_driver.h) for offline policies (belady): a window of
// one request's next step records, read ahead of the steps staged from it, and each layer's future over the window
// (cpu_ref::build_layer_future, one per distinct offline buffer size), which the driver stages with the first step of
// the window for the session to hand to the policies (SessionStaging::futures).
//
// Window: at most `steps` records (ReplayOptions::lookahead_bytes over a record plus one next-use index per offline
// size, >= 2). A request that fits is replayed with its whole future, exactly; a longer one has the first half of its
// window staged, then the window slides (the rest moves to the front, the records after it are read) and the futures
// are built anew, so every decision sees at least half a window ahead: belady is then the optimum for that look-ahead,
// an upper bound on the true optimum's misses (the request is counted as cut).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cpu_ref/policies/layer_future.h"
#include "traces/trace_source.h"

namespace hisparse::sim::replay_detail {

/// How a window is sized and its records checked.
struct LookAheadShape {
  int32_t layers = 0;
  int32_t top_k = 0;
  std::vector<int32_t> offline_H;  // distinct buffer sizes of the offline configurations
  size_t steps = 2;                // records per window (>= 2, so that it can slide)
  /// Checks a record of the request (throws the driver's message for a bad seq_len or width).
  std::function<void(const traces::StepRecord&)> check;
};

/// Records per window for a look-ahead budget of `bytes` (records + one next-use index per offline size).
size_t lookahead_steps(size_t bytes, int32_t layers, int32_t top_k, size_t offline_sizes);

/// Bytes a future holds (its vectors' capacities), for the measured peak.
size_t future_bytes(const cpu_ref::LayerFuture& f);

class LookAheadWindow {
 public:
  /// Starts request `id` on `src` (already positioned at its first step): reads its first window. False for a request
  /// without a record.
  bool start(const LookAheadShape& shape, traces::TraceSource& src, int64_t id);
  /// The request's next step to stage, sliding the window when its staged part is done; nullptr once the request's
  /// last step was handed out.
  const traces::StepRecord* next(traces::TraceSource& src);
  /// True between the slide (or start) and build_futures(): the next step begins a window whose futures are owed.
  bool needs_futures() const { return owed_; }
  /// Builds layer `l`'s futures over the window (one per offline size); layers may be built on separate threads.
  void build_futures(int32_t l);
  /// After every layer's build: the futures to stage with the window's first step ([layer][offline size]; the driver
  /// moves them into the staging, then calls futures_staged()), and the bytes the window holds (records + next-use
  /// indexes, the old futures already handed on not counted).
  std::vector<std::vector<std::shared_ptr<const cpu_ref::LayerFuture>>>& futures() { return futures_; }
  void futures_staged() { owed_ = false; }
  size_t held_bytes() const;
  /// Whether the request has been longer than a window.
  bool cut() const { return cut_; }

 private:
  bool read(traces::TraceSource& src);  // the next record into pending_, if it is the request's
  void fill(traces::TraceSource& src);  // tops the window up to shape steps and decides how much of it to stage

  const LookAheadShape* shape_ = nullptr;
  int64_t id_ = -1;
  std::vector<traces::StepRecord> recs_;  // recs_[0..nbuf_) is the window
  traces::StepRecord pending_;             // the request's record after the window, when have_pending_
  bool have_pending_ = false;
  size_t nbuf_ = 0, pos_ = 0, stage_ = 0;  // window size, next to hand out, steps handed out before it slides
  bool owed_ = false, cut_ = false;
  std::vector<std::vector<std::shared_ptr<const cpu_ref::LayerFuture>>> futures_;  // [layer][offline size]
  std::vector<size_t> layer_bytes_;                                                // [layer] next-use bytes
};

}  // namespace hisparse::sim::replay_detail
