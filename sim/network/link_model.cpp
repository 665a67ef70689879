// @brief LinkModel bookkeeping shared by every model, and the registration list of models.
#include "sim/network/link_model.h"

#include "core/error.h"

namespace hisparse::sim {

int32_t LinkModel::add_link(const std::string& name, double bytes_per_s) {
  if (!(bytes_per_s > 0)) throw_error("link '{}': capacity must be > 0 bytes/s, got {}", name, bytes_per_s);
  names_.push_back(name);
  capacity_.push_back(bytes_per_s);
  carried_.push_back(0.0);
  return static_cast<int32_t>(capacity_.size() - 1);
}

void LinkModel::check_spec(const FlowSpec& spec) const {
  if (!(spec.bytes >= 0)) throw_error("flow: bytes must be >= 0, got {}", spec.bytes);
  if (spec.latency < 0) throw_error("flow: latency must be >= 0 ns, got {}", spec.latency);
  if (spec.num_links == 0 && !(spec.max_rate > 0))
    throw_error("flow: crosses no link and has no rate cap, so it would never finish");
  for (int32_t i = 0; i < spec.num_links; ++i)
    if (spec.links[static_cast<size_t>(i)] < 0 || spec.links[static_cast<size_t>(i)] >= num_links())
      throw_error("flow: unknown link index {}", spec.links[static_cast<size_t>(i)]);
}

void LinkModel::account(const FlowSpec& spec) {
  for (int32_t i = 0; i < spec.num_links; ++i) carried_[static_cast<size_t>(spec.links[static_cast<size_t>(i)])] += spec.bytes;
}

std::unique_ptr<LinkModel> make_link_model(const std::string& type) {
  if (type == "maxmin") return make_shared_link_model();
  if (type == "constant") return make_constant_rate_link_model();
  throw_error("link model type '{}' is unknown (expected maxmin or constant)", type);
}

}  // namespace hisparse::sim
