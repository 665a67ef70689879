// @brief The rates behind estimate_serving_work, each measured, and the sum of a run's decode tokens.
#include "sim/serving/run_estimate.h"

#include <algorithm>

namespace hisparse::sim {

namespace {

// Measured 2026-11-28 with the release build on the 2-core development machine (shared with other jobs), on
// dsv32-8xh200-1tb with mooncake_conversation: the wall time `simulate` prints per run ("s wall") against the
// summary's decode_tokens and decode_steps.
//   closed loop, per decode token: 4096 clients × 4096 requests (1,413,606 tokens, 3,956 steps): hisparse 4.16 s,
//     full 2.20 s; dynamic at 512 clients × 2048 requests (721,465 tokens): 3.50 s.
//   per lockstep step (one client, 64 requests: 23,183 tokens, one a step): hisparse 0.66 s, full 0.38 s, less the
//     per-token share above.
//   open loop, per decode token (arrivals, prefill and admission events included): the whole workload (4,110,017
//     tokens): hisparse 26.0 s, full 12.2 s; dynamic scaled from hisparse by the closed-loop ratio (3.50 / 2.23 s at
//     512 clients, where hisparse took 2.23 s).
struct Rates {
  double closed_per_token, open_per_token, per_step;
};

Rates rates(KvMode mode) {
  switch (mode) {
    case KvMode::kFull: return {2.20 / 1413606, 12.2 / 4110017, (0.38 - 23183 * 2.20 / 1413606) / 23183};
    case KvMode::kDynamic: return {3.50 / 721465, 26.0 / 4110017 * 3.50 / 2.23, (0.66 - 23183 * 4.16 / 1413606) / 23183};
    case KvMode::kHiSparse: break;
  }
  return {4.16 / 1413606, 26.0 / 4110017, (0.66 - 23183 * 4.16 / 1413606) / 23183};
}

}  // namespace

const char* serving_work_basis() {
  return "rate measured: simulate's wall time per decode token and per step, dsv32-8xh200-1tb on mooncake_conversation, "
         "2 cores (sim/serving/run_estimate.cpp); within a factor of about 2";
}

ServingWork estimate_serving_work(const Workload& workload, KvMode mode, const ClientSpec& clients) {
  ServingWork w;
  const auto& reqs = workload.requests;
  double all = 0;
  for (const RequestSpec& r : reqs) all += r.output_tokens;
  const bool closed = clients.concurrency > 0;
  w.requests = closed && clients.requests > 0 ? clients.requests : static_cast<int64_t>(reqs.size());
  if (!closed || reqs.empty()) {
    w.decode_tokens = all;
  } else {
    // Closed-loop clients cycle through the workload's lengths in order.
    const int64_t n = static_cast<int64_t>(reqs.size());
    w.decode_tokens = static_cast<double>(w.requests / n) * all;
    for (int64_t i = 0; i < w.requests % n; ++i) w.decode_tokens += reqs[static_cast<size_t>(i)].output_tokens;
  }
  const Rates r = rates(mode);
  if (closed) {
    const double steps = w.decode_tokens / std::max<double>(1, clients.concurrency);
    w.seconds = w.decode_tokens * r.closed_per_token + steps * r.per_step;
  } else {
    w.seconds = w.decode_tokens * r.open_per_token;
  }
  return w;
}

}  // namespace hisparse::sim
