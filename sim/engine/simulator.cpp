// @brief The event loop: pop the earliest event, move the clock (never backwards), dispatch.
#include "sim/engine/simulator.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

uint32_t Simulator::add_handler(EventHandler* handler) {
  handlers_.push_back(handler);
  return static_cast<uint32_t>(handlers_.size() - 1);
}

void Simulator::schedule(SimTime at, uint32_t handler, uint32_t kind, int64_t arg) {
  if (at < now_) throw_error("simulator: event scheduled in the past (at {} ns, now {} ns, handler {}, kind {})", at, now_, handler, kind);
  if (handler >= handlers_.size()) throw_error("simulator: event for unknown handler {}", handler);
  queue_.push_back(Event{at, next_seq_++, handler, kind, arg});
  std::push_heap(queue_.begin(), queue_.end(), EventLater{});
}

void Simulator::pop(Event& out) {
  std::pop_heap(queue_.begin(), queue_.end(), EventLater{});
  out = queue_.back();
  queue_.pop_back();
}

bool Simulator::step() {
  if (queue_.empty()) return false;
  Event e;
  pop(e);
  // schedule() refuses past times, so this only fires if the heap itself were broken; cheap enough to keep.
  if (e.time < now_) throw_error("simulator: time went backwards ({} ns after {} ns)", e.time, now_);
  now_ = e.time;
  ++processed_;
  handlers_[e.handler]->on_event(*this, e);
  return true;
}

uint64_t Simulator::run(SimTime until) {
  const uint64_t before = processed_;
  while (!queue_.empty() && queue_.front().time <= until) step();
  // Nothing is left before `until`, so the clock may stand there (later events still lie ahead of it).
  if (until != kNever && until > now_) now_ = until;
  return processed_ - before;
}

}  // namespace hisparse::sim
