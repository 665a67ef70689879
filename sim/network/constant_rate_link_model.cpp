// @brief Constant-rate baseline link model: each flow runs alone at its path's smallest capacity (no sharing).
#include <algorithm>

#include "sim/network/link_model.h"

namespace hisparse::sim {
namespace {

class ConstantRateLinkModel final : public LinkModel {
 public:
  FlowId start(SimTime now, const FlowSpec& spec) override {
    check_spec(spec);
    double rate = spec.max_rate > 0 ? spec.max_rate : 0;
    for (int32_t i = 0; i < spec.num_links; ++i) {
      const double c = capacity_[static_cast<size_t>(spec.links[static_cast<size_t>(i)])];
      rate = rate > 0 ? std::min(rate, c) : c;
    }
    const SimTime end = now + spec.latency + transfer_ns(spec.bytes, rate);
    pending_.push_back(Pending{end, next_id_, now, spec});
    std::push_heap(pending_.begin(), pending_.end(), Later{});
    return next_id_++;
  }
  SimTime next_event() const override { return pending_.empty() ? kNever : pending_.front().end; }
  size_t active_flows() const override { return pending_.size(); }
  void advance_to(SimTime t, std::vector<FlowDone>& done) override {
    while (!pending_.empty() && pending_.front().end <= t) {
      std::pop_heap(pending_.begin(), pending_.end(), Later{});
      const Pending p = pending_.back();
      pending_.pop_back();
      account(p.spec);
      done.push_back(FlowDone{p.id, p.started, p.end, p.spec.bytes});
    }
  }

 private:
  struct Pending {
    SimTime end;
    FlowId id;
    SimTime started;
    FlowSpec spec;
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const { return a.end != b.end ? a.end > b.end : a.id > b.id; }
  };
  std::vector<Pending> pending_;
  FlowId next_id_ = 0;
};

}  // namespace

std::unique_ptr<LinkModel> make_constant_rate_link_model() { return std::make_unique<ConstantRateLinkModel>(); }

}  // namespace hisparse::sim
