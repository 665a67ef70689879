// @brief Event: one scheduled occurrence, and EventLater, the only comparator that orders events.
#pragma once

#include <cstdint>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// A plain record (no heap allocation per event): the handler index and two small arguments say what happens.
struct Event {
  SimTime time = 0;     // when it fires (ns)
  uint64_t seq = 0;     // order of scheduling; breaks ties so equal-time events fire first-scheduled-first
  uint32_t handler = 0; // index into Simulator's handler table
  uint32_t kind = 0;    // handler-defined
  int64_t arg = 0;      // handler-defined (request id, GPU index, generation, ...)
};

/// The single definition of event order: (time, seq), earliest first. Written as "a fires after b" because
/// std heaps keep the greatest element on top.
struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

}  // namespace hisparse::sim
