// @brief Simulator: owns the clock and the event queue; dispatches events to registered handlers in (time, seq) order.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/event.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

class Simulator;

/// Anything that reacts to events. Handlers schedule the events they cause through the Simulator.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(Simulator& sim, const Event& event) = 0;
};

class Simulator {
 public:
  /// Registers a handler (not owned) and returns the index events name it by.
  uint32_t add_handler(EventHandler* handler);

  /// Schedules an event at absolute time `at`; `at` earlier than now() is a broken invariant (throws).
  void schedule(SimTime at, uint32_t handler, uint32_t kind, int64_t arg = 0);
  void schedule_in(SimTime delay, uint32_t handler, uint32_t kind, int64_t arg = 0) {
    schedule(now_ + delay, handler, kind, arg);
  }

  /// Runs events until the queue is empty or the next event lies beyond `until`; returns events processed.
  uint64_t run(SimTime until = kNever);
  /// Processes exactly one event if any; false when the queue is empty.
  bool step();

  SimTime now() const { return now_; }
  uint64_t events_processed() const { return processed_; }
  size_t pending() const { return queue_.size(); }
  SimTime next_time() const { return queue_.empty() ? kNever : queue_.front().time; }

 private:
  void pop(Event& out);

  SimTime now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t processed_ = 0;
  std::vector<Event> queue_;  // binary heap ordered by EventLater
  std::vector<EventHandler*> handlers_;
};

}  // namespace hisparse::sim
