// @brief LinkModel: links with a capacity, flows across them; answers "when does the next flow finish?" and
// "advance to t". Two models: max-min fair sharing and a constant-rate baseline (no contention).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

using FlowId = int64_t;

/// A transfer: `latency` first (no bandwidth used), then `bytes` at the rate the model grants.
struct FlowSpec {
  double bytes = 0;
  SimTime latency = 0;                 // ns before the bytes start to move (per-operation cost)
  double max_rate = 0;                 // bytes/s cap of the flow itself (e.g. small-row PCIe rate); 0 = none
  std::array<int32_t, 4> links{};      // links crossed (PCIe, host DRAM, NIC, ...)
  int32_t num_links = 0;
  void add_link(int32_t link) { links[static_cast<size_t>(num_links++)] = link; }
};

struct FlowDone {
  FlowId id = 0;
  SimTime start = 0;   // when start() was called
  SimTime end = 0;     // when the last byte arrived
  double bytes = 0;
};

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  /// Returns the link's index.
  int32_t add_link(const std::string& name, double bytes_per_s);
  /// Starts a flow at `now` (>= the last time advanced to).
  virtual FlowId start(SimTime now, const FlowSpec& spec) = 0;
  /// Earliest time something changes (a flow finishes or leaves its latency phase); kNever if idle.
  virtual SimTime next_event() const = 0;
  /// Moves every flow to time t, appending the flows that finished by t to `done` (in finish order).
  virtual void advance_to(SimTime t, std::vector<FlowDone>& done) = 0;
  virtual size_t active_flows() const = 0;

  int32_t num_links() const { return static_cast<int32_t>(capacity_.size()); }
  const std::string& link_name(int32_t l) const { return names_[static_cast<size_t>(l)]; }
  double capacity(int32_t l) const { return capacity_[static_cast<size_t>(l)]; }
  /// Bytes carried by a link over all finished flows (for utilisation = bytes / (capacity × time)).
  double carried_bytes(int32_t l) const { return carried_[static_cast<size_t>(l)]; }

 protected:
  void account(const FlowSpec& spec);
  void check_spec(const FlowSpec& spec) const;
  std::vector<std::string> names_;
  std::vector<double> capacity_;
  std::vector<double> carried_;
};

/// Flows crossing a link share it max-min fairly (sim/network/maxmin_solver.h), re-solved whenever a flow starts or ends.
std::unique_ptr<LinkModel> make_shared_link_model();
/// Baseline: every flow runs at the smallest capacity on its path as if alone (no contention at all).
std::unique_ptr<LinkModel> make_constant_rate_link_model();
/// Explicit registration list: "maxmin" or "constant".
std::unique_ptr<LinkModel> make_link_model(const std::string& type);

}  // namespace hisparse::sim
