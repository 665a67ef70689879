// @brief simulate_advice (see advise_simulation.h).
#include "sim/api/advise_simulation.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/api/simulate_request.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/steady_window.h"

namespace hisparse::sim {

namespace {

SimulatedRun run_one(const AdviseRequest& r, const Candidate& c, int ranks) {
  SimulateRequest q;
  q.setup = r.setup;
  q.setup.require_sparse_indexer = true;
  q.workload = r.workload;
  q.misses = r.misses;
  ScenarioOverrides& o = q.setup.overrides;
  const int64_t mrr = c.per_rank * ranks;
  o.max_running_requests = static_cast<int32_t>(mrr);
  if (c.mode == KvMode::kHiSparse) {
    o.device_buffer_size = c.buffer_size;
    o.host_to_device_ratio = c.ratio;
  }
  const SimulationSetup setup = load_simulation(q, "advise: simulating " + c.name());
  ClientSpec clients;
  clients.concurrency = static_cast<int32_t>(c.concurrency);
  clients.requests = std::max<int64_t>(64, 4 * c.concurrency);  // simulate's default for --concurrency N
  const OverlapMode overlap = setup.cost.overlap;
  const ServingResult res = simulate(setup, c.mode, overlap, clients);
  const ServingSummary sum = summarize(res, setup.scenario);
  const SteadyWindow w = steady_window(res);
  SimulatedRun run;
  run.setting = c.name();
  run.clients = clients.concurrency;
  run.requests = clients.requests;
  run.tokens_per_s = sum.tokens_per_s;
  run.steady_tokens_per_s = w.tokens_per_s;
  run.steady_batch_per_rank = w.batch_per_rank;
  run.tpot_p50_ms = sum.tpot_ms.p50;
  run.advised_per_rank = c.per_rank;
  run.advised_goodput = c.goodput;
  run.command = fmt::format("hisparse simulate --scenario {} --workload {} --mode {} --concurrency {} "
                            "--max-running-requests {}{}",
                            r.setup.scenario, r.workload, c.mode == KvMode::kFull ? "full" : "hisparse",
                            clients.concurrency, mrr,
                            c.mode == KvMode::kHiSparse ? fmt::format(" --device-buffer-size {} --host-to-device-ratio {}",
                                                                      c.buffer_size, c.ratio)
                                                        : std::string());
  return run;
}

}  // namespace

void simulate_advice(const AdviseRequest& r, Advice& a) {
  const Candidate* rec = a.recommended();
  if (!rec || r.workload.empty()) return;
  const int ranks = rec->per_rank > 0 ? static_cast<int>(rec->concurrency / rec->per_rank) : 1;
  try {
    a.simulated.push_back(run_one(r, *rec, ranks));
    if (rec->mode != KvMode::kFull && a.best_full >= 0)
      a.simulated.push_back(run_one(r, a.candidates[static_cast<size_t>(a.best_full)], ranks));
  } catch (const Error& e) {
    a.simulated.clear();
    a.simulated_note = fmt::format("not simulated: {}", e.what());
  }
}

}  // namespace hisparse::sim
