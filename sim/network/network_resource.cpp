// @brief NetworkResource: one live wake-up per model; stale wake-ups are skipped by generation number.
#include "sim/network/network_resource.h"

namespace hisparse::sim {

NetworkResource::NetworkResource(Simulator& sim, std::unique_ptr<LinkModel> model)
    : sim_(sim), model_(std::move(model)) {
  handler_ = sim_.add_handler(this);
}

FlowId NetworkResource::start(const FlowSpec& spec, FlowListener* listener, int64_t cookie) {
  // Flows due exactly now (their wake-up may still sit in the queue behind this event) end before the new
  // one starts, so the model's clock is at now() when it admits the new flow.
  collect_and_notify();
  const FlowId id = model_->start(sim_.now(), spec);
  if (listener) waiters_.emplace(id, Waiter{listener, cookie});
  rearm();
  return id;
}

void NetworkResource::on_event(Simulator&, const Event& event) {
  if (event.arg != generation_) return;
  armed_at_ = kNever;
  collect_and_notify();
  rearm();
}

void NetworkResource::collect_and_notify() {
  std::vector<FlowDone> local;
  model_->advance_to(sim_.now(), local);
  for (const auto& d : local) {
    auto it = waiters_.find(d.id);
    if (it == waiters_.end()) continue;
    const Waiter w = it->second;
    waiters_.erase(it);
    w.listener->on_flow_done(sim_, w.cookie, d);  // may start new flows (re-entrant start is fine)
  }
}

void NetworkResource::rearm() {
  const SimTime next = model_->next_event();
  if (next == armed_at_) return;
  ++generation_;
  armed_at_ = next;
  if (next != kNever) sim_.schedule(next, handler_, 0, generation_);
}

}  // namespace hisparse::sim
