// @brief NetworkResource: puts a LinkModel on the Simulator's clock; wakes at the model's next change and
// tells each flow's listener when it finished.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/network/link_model.h"
#include "sim/engine/simulator.h"

namespace hisparse::sim {

class FlowListener {
 public:
  virtual ~FlowListener() = default;
  /// Called at the simulated instant the flow finished (sim.now() == done.end).
  virtual void on_flow_done(Simulator& sim, int64_t cookie, const FlowDone& done) = 0;
};

class NetworkResource final : public EventHandler {
 public:
  NetworkResource(Simulator& sim, std::unique_ptr<LinkModel> model);

  LinkModel& model() { return *model_; }
  const LinkModel& model() const { return *model_; }

  /// Starts a flow now; `listener->on_flow_done(cookie)` fires when it ends (listener may be null).
  FlowId start(const FlowSpec& spec, FlowListener* listener, int64_t cookie);

  void on_event(Simulator& sim, const Event& event) override;

 private:
  void collect_and_notify();
  void rearm();

  struct Waiter {
    FlowListener* listener;
    int64_t cookie;
  };
  Simulator& sim_;
  std::unique_ptr<LinkModel> model_;
  uint32_t handler_ = 0;
  SimTime armed_at_ = kNever;  // time of the one live wake-up event
  int64_t generation_ = 0;     // wake-ups carrying an older generation are stale and ignored
  std::unordered_map<FlowId, Waiter> waiters_;
};

}  // namespace hisparse::sim
