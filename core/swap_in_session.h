// @brief SwapInSession: the buffer states of a batch of rows (one row = one request x layer), for one or more
// (policy, device_buffer_size) configurations, stepped with each row's next top-k list; only the counters a replay
// needs come back. The CPU reference (cpu_ref/swap_in_session_cpu.h) and the CUDA kernels
// (sim/replay/cuda/swap_in_session_cuda.h) implement it, so one replay driver (sim/replay/replay_driver.h) runs a
// trace through either and a policy replayed on one can be compared bit for bit with the other. Offline policies
// (belady) step in a session too: the driver reads each request ahead and stages each layer's future with the step
// where it applies (SessionStaging::futures; the CPU's counting session takes them, sim/replay/replay_cpu_session.h).
//
// Pipelined by construction: a session owns `slots()` staging areas. The driver fills a slot, submit()s it and goes
// on filling the next one; wait(slot) hands the slot back with its counters readable. A synchronous backend (the CPU)
// does the work in submit() and has nothing to wait for; the GPU uploads and runs a slot while the host stages the
// next. A slot holds steps_per_slot() consecutive steps of every row (the GPU takes one; the CPU takes many, so that a
// row's states stay in cache across its steps). Steps of one row are applied
// in order: within a slot by step index, across slots in submit order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/swap_in_types.h"

namespace hisparse {

namespace cpu_ref {
struct LayerFuture;  // cpu_ref/policies/layer_future.h: what an offline policy is handed (only pointers pass here)
}

/// What a row's state is before this step (one code per row, staged with the step).
enum class SessionRowInit : int8_t {
  kKeep = 0,   // continue from the row's previous step
  kStart = 1,  // a new request: the session's initial state (an `empty` request whose first step has n <= H starts
               // as identity: the whole context was preloaded, SwapInPolicy::step's rule)
};

/// One configuration a session steps every row through.
struct SessionConfig {
  std::string policy;  // registry name (cpu_ref/policies/registry.h)
  int32_t H = 0;       // device_buffer_size, >= top_k
};

struct SwapInSessionShape {
  int32_t rows = 0;   // batch rows (requests side by side x layers)
  int32_t top_k = 0;  // width of every row's list (-1 = padding anywhere)
  std::vector<SessionConfig> configs;
  InitialState initial = InitialState::kIdentity;
  int64_t row_bytes = 0;  // bytes of one KV row (policies receive it; the counters do not depend on it)
};

/// Host staging of one slot, writable between wait(slot) (or construction) and submit(slot). Every array has one
/// block per step of the slot: [steps_per_slot][rows]...
struct SessionStaging {
  int32_t* selected = nullptr;  // [steps][rows][top_k]
  int32_t* seq_len = nullptr;   // [steps][rows]; <= 0: padding row, its state untouched and its counters zero
  SessionRowInit* init = nullptr;  // [steps][rows]
  // Where each row comes from, for error messages ("request R, layer L, step S").
  int64_t* request = nullptr;  // [steps][rows]
  int32_t* layer = nullptr;    // [steps][rows]
  int64_t* step = nullptr;     // [steps][rows]
  /// Sessions that borrow lists (borrows_lists()): [steps][rows] pointers to each row's top_k entries, set by the
  /// driver instead of copying into `selected`, valid until submit() returns.
  const int32_t** lists = nullptr;
  /// Sessions that step an offline policy (takes_futures()): [steps][rows][configs] the row's future from this step
  /// on, staged by the driver's look-ahead stage where a window of the row's request starts (its first step, and
  /// each slide of the window); null elsewhere and for online configurations. The session moves it into the policy
  /// when it steps the cell, so the array is all null again after submit().
  std::shared_ptr<const cpu_ref::LayerFuture>* futures = nullptr;
};

/// Counters of one row at one step (the contract's definitions, SwapInCounters).
struct SessionRowCounts {
  int32_t selected = 0;
  int32_t hits = 0;
  int32_t newest_hits = 0;
  int32_t misses = 0;
};

/// One slot of a synchronous session kept in host memory (the CPU sessions): its staging and its counters, for
/// `cells` = steps_per_slot × rows rows. `borrowed_lists` gives the slot the list pointers a session that borrows
/// lists reads.
struct HostSessionSlot {
  std::vector<int32_t> selected, seq_len, layer;
  std::vector<const int32_t*> lists;  // [cells] when borrowed, else empty
  std::vector<SessionRowInit> init;
  std::vector<int64_t> request, step;
  std::vector<std::vector<SessionRowCounts>> counts;  // [config][cell]
  std::vector<std::shared_ptr<const cpu_ref::LayerFuture>> futures;  // [cells][configs] with offline ones, else empty

  HostSessionSlot(size_t cells, int32_t top_k, size_t configs, bool borrowed_lists, bool with_futures = false)
      : selected(cells * static_cast<size_t>(top_k), -1),
        seq_len(cells, 0),
        layer(cells, 0),
        lists(borrowed_lists ? cells : 0, nullptr),
        init(cells, SessionRowInit::kKeep),
        request(cells, 0),
        step(cells, 0),
        counts(configs, std::vector<SessionRowCounts>(cells)),
        futures(with_futures ? cells * configs : 0) {}

  SessionStaging staging() {
    return {selected.data(), seq_len.data(), init.data(), request.data(), layer.data(), step.data(),
            lists.empty() ? nullptr : lists.data(), futures.empty() ? nullptr : futures.data()};
  }
  /// The staged inputs' bytes (the borrowed list pointers are the driver's records, not counted).
  size_t staging_bytes() const {
    return selected.size() * 4 + seq_len.size() * 4 + layer.size() * 4 + init.size() + request.size() * 8 +
           step.size() * 8;
  }
};

class SwapInSession {
 public:
  virtual ~SwapInSession() = default;
  virtual std::string name() const = 0;
  virtual const SwapInSessionShape& shape() const = 0;
  /// Slots that may be in flight at once (staging areas).
  virtual int32_t slots() const = 0;
  /// Consecutive steps of every row one slot holds (>= 1).
  virtual int32_t steps_per_slot() const { return 1; }
  /// True for a session that reads each row's list through SessionStaging::lists during submit() (a synchronous
  /// one): the driver then hands it the records it read instead of a copy.
  virtual bool borrows_lists() const { return false; }
  /// True for a session that steps offline policies: it reads SessionStaging::futures, which the driver's look-ahead
  /// stage fills (sessions without it refuse offline policies when they are built).
  virtual bool takes_futures() const { return false; }
  virtual SessionStaging staging(int32_t slot) = 0;
  /// Queues the slot's steps for every row and every configuration. May run them at once (and throw here).
  virtual void submit(int32_t slot) = 0;
  /// Blocks until the slot's step is done. Throws hisparse::Error on a rejected row (the first in row order, named
  /// with the staged request, layer and step): every backend rejects the same input.
  virtual void wait(int32_t slot) = 0;
  /// After wait(slot): [steps_per_slot][rows] counters of configuration `config` (shape().configs order).
  virtual const SessionRowCounts* counts(int32_t slot, size_t config) const = 0;
  /// Bytes the session holds for steps in flight (staging), for the replay's memory line.
  virtual size_t staging_bytes() const = 0;
  /// Seconds the backend spent stepping rows, as it measures them (GPU: the kernels' events; CPU: submit()).
  virtual double backend_seconds() const = 0;
};

}  // namespace hisparse
