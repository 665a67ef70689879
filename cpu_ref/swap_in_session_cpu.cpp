// @brief CpuSwapInSession (see swap_in_session_cpu.h).
#include "cpu_ref/swap_in_session_cpu.h"

#include <chrono>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {

CpuSwapInSession::CpuSwapInSession(SwapInSessionShape shape, int32_t slots) : shape_(std::move(shape)) {
  if (slots < 1) throw_error("swap-in session: {} slots (expected >= 1)", slots);
  if (shape_.rows < 1 || shape_.top_k < 1)
    throw_error("swap-in session: {} rows of top_k {} (expected >= 1 each)", shape_.rows, shape_.top_k);
  const size_t rows = static_cast<size_t>(shape_.rows);
  for (const SessionConfig& c : shape_.configs) {
    if (c.H < shape_.top_k)
      throw_error("swap-in session: buffer size {} is smaller than top_k {}", c.H, shape_.top_k);
    std::vector<std::unique_ptr<SwapInPolicy>> per_row(rows);
    for (auto& p : per_row) {
      p = make_policy(c.policy);  // rejects unknown names
      if (p->needs_future())
        throw_error("swap-in session: policy '{}' needs each request's future (an offline policy); a session steps "
                    "one step at a time without it; the replay's counting session takes the driver's look-ahead "
                    "(sim/replay/replay_cpu_session.h)",
                    c.policy);
      p->reset(c.H, shape_.initial);
    }
    states_.push_back(std::move(per_row));
  }
  slots_.assign(static_cast<size_t>(slots), HostSessionSlot(rows, shape_.top_k, shape_.configs.size(), false));
}

SessionStaging CpuSwapInSession::staging(int32_t slot) {
  return slots_.at(static_cast<size_t>(slot)).staging();
}

void CpuSwapInSession::submit(int32_t slot) {
  const auto t0 = std::chrono::steady_clock::now();
  HostSessionSlot& s = slots_.at(static_cast<size_t>(slot));
  const int32_t K = shape_.top_k;
  for (size_t c = 0; c < states_.size(); ++c) {
    for (size_t b = 0; b < static_cast<size_t>(shape_.rows); ++b) {
      SessionRowCounts& out = s.counts[c][b];
      out = {};
      const int32_t n = s.seq_len[b];
      if (n <= 0) continue;  // padding row
      SwapInPolicy& p = *states_[c][b];
      if (s.init[b] == SessionRowInit::kStart) p.reset(shape_.configs[c].H, shape_.initial);
      p.step({s.selected.data() + b * static_cast<size_t>(K), K, n, K, nullptr, shape_.row_bytes},
             {s.request[b], s.layer[b], s.step[b]}, plan_, scratch_);
      const SwapInCounters& k = plan_.counters;
      out = {static_cast<int32_t>(k.selected), static_cast<int32_t>(k.hits), static_cast<int32_t>(k.newest_hits),
             static_cast<int32_t>(k.misses)};
    }
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const SessionRowCounts* CpuSwapInSession::counts(int32_t slot, size_t config) const {
  return slots_.at(static_cast<size_t>(slot)).counts.at(config).data();
}

size_t CpuSwapInSession::staging_bytes() const {
  size_t b = 0;
  for (const HostSessionSlot& s : slots_) b += s.staging_bytes();
  return b;
}

}  // namespace hisparse::cpu_ref
