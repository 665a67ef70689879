// @brief Max-min shared links: flows progress at solver rates; re-solved only when the set of moving flows changes.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sim/network/link_model.h"
#include "sim/network/maxmin_solver.h"

namespace hisparse::sim {
namespace {

class SharedLinkModel final : public LinkModel {
 public:
  FlowId start(SimTime now, const FlowSpec& spec) override {
    check_spec(spec);
    // Finishes due by `now` must have been collected by the caller's advance_to(now), or they would be lost.
    if (next_ <= now) throw_error("shared link model: start() at {} ns before advance_to() collected the change at {} ns", now, next_);
    progress(now);
    Flow f;
    f.id = next_id_++;
    f.spec = spec;
    f.started = now;
    f.activate_at = now + spec.latency;
    f.remaining = spec.bytes;
    flows_.push_back(f);
    if (spec.latency == 0) resolve(now);
    else next_ = std::min(next_, f.activate_at);
    return f.id;
  }

  SimTime next_event() const override { return next_; }
  size_t active_flows() const override { return flows_.size(); }

  void advance_to(SimTime t, std::vector<FlowDone>& done) override {
    // Step through every intermediate change so rates are right between them.
    while (next_ <= t) step_to(next_, done);
    progress(t);
  }

 private:
  struct Flow {
    FlowId id = 0;
    FlowSpec spec;
    SimTime started = 0;
    SimTime activate_at = 0;  // end of the latency phase
    double remaining = 0;     // bytes still to move
    double rate = 0;          // bytes/s granted by the last solve
    SimTime finish_at = kNever;
    bool moving = false;
  };

  void progress(SimTime t) {
    if (t <= last_) return;
    const double dt = static_cast<double>(t - last_) * 1e-9;
    for (auto& f : flows_)
      if (f.moving) f.remaining -= f.rate * dt;
    last_ = t;
  }

  void step_to(SimTime t, std::vector<FlowDone>& done) {
    progress(t);
    // Finish flows in (finish time, id) order so the output never depends on container order.
    size_t first_done = done.size();
    for (auto& f : flows_) {
      if (f.moving && f.finish_at <= t) {
        account(f.spec);
        done.push_back(FlowDone{f.id, f.started, f.finish_at, f.spec.bytes});
        f.id = -1;
      }
    }
    std::sort(done.begin() + static_cast<std::ptrdiff_t>(first_done), done.end(),
              [](const FlowDone& a, const FlowDone& b) { return a.end != b.end ? a.end < b.end : a.id < b.id; });
    flows_.erase(std::remove_if(flows_.begin(), flows_.end(), [](const Flow& f) { return f.id < 0; }), flows_.end());
    resolve(t);
  }

  // Starts flows whose latency ended, then re-solves rates and finish times of all moving flows.
  void resolve(SimTime t) {
    for (auto& f : flows_)
      if (!f.moving && f.activate_at <= t) f.moving = true;
    scratch_flows_.clear();
    for (auto& f : flows_)
      if (f.moving) scratch_flows_.push_back(MaxMinFlow{f.spec.links.data(), f.spec.num_links, f.spec.max_rate});
    solve_max_min(capacity_, scratch_flows_, scratch_rates_);
    size_t k = 0;
    next_ = kNever;
    for (auto& f : flows_) {
      if (!f.moving) { next_ = std::min(next_, f.activate_at); continue; }
      f.rate = scratch_rates_[k++];
      // Rounding up keeps remaining <= 0 at finish_at, so a flow never needs a second look.
      if (f.remaining <= 0) f.finish_at = t;
      else f.finish_at = t + static_cast<SimTime>(std::ceil(f.remaining / f.rate * 1e9));
      next_ = std::min(next_, f.finish_at);
    }
  }

  std::vector<Flow> flows_;
  std::vector<MaxMinFlow> scratch_flows_;
  std::vector<double> scratch_rates_;
  FlowId next_id_ = 0;
  SimTime last_ = 0;
  SimTime next_ = kNever;
};

}  // namespace

std::unique_ptr<LinkModel> make_shared_link_model() { return std::make_unique<SharedLinkModel>(); }

}  // namespace hisparse::sim
