// @brief advise against simulate on shipped deployments and a real workload (Mooncake's conversation trace): the
// advice's goodput is a decode-only steady state at full batch, simulate is closed-loop serving; the advice prints a
// simulation of its recommendation beside its figure, and both cost paths agree at the batch the simulation held.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/api/advise_request.h"
#include "sim/api/simulate_request.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/steady_window.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

// The advisor's tokens/s for `c` at a (fractional) batch per rank: its step model, linear between the two integer
// batches around it (tokens/s = B × ranks / step(B) with an affine step: close to linear over one request).
double advised_tokens_at(const AdviseOutcome& out, const Advice& a, const Candidate& c, double batch) {
  const Scenario s = with_setting(out.setup.scenario, c.mode, c.buffer_size, c.ratio);
  const MissCurves& misses = *out.setup.misses;
  const int32_t H = c.buffer_size;
  const StepTimeModel m(s, out.setup.options.cost, c.mode,
                        c.mode == KvMode::kFull ? MissFraction()
                                                : MissFraction([&misses, H](int64_t n) { return misses.fraction(H, n); }));
  const int64_t lo = std::max<int64_t>(1, static_cast<int64_t>(std::floor(batch)));
  const double f = batch - static_cast<double>(lo);
  const double t_lo = m.step(lo, a.mix).tokens_per_s, t_hi = m.step(lo + 1, a.mix).tokens_per_s;
  return t_lo + f * (t_hi - t_lo);
}

}  // namespace

TEST_CASE("advise vs simulate: the advice simulates its recommendation, and the two models agree at the same batch") {
  for (const char* deployment : {"dsv32-8xh200-1tb", "glm51-8xh200-tp8-r11"}) {
    CAPTURE(deployment);
    AdviseRequest r;
    r.setup.scenario = deployment;
    r.workload = "mooncake_conversation";
    const AdviseOutcome out = run_advise(r);
    REQUIRE(out.advices.size() == 1);
    const Advice& a = out.advices.front();
    REQUIRE(a.recommended() != nullptr);
    const Candidate& rec = *a.recommended();
    // The recommendation is simulated as launched (its concurrency as closed-loop clients), and full KV beside it
    // when HiSparse is recommended.
    REQUIRE(a.simulated_note.empty());
    REQUIRE(a.simulated.size() == (rec.mode == KvMode::kFull ? 1u : 2u));
    for (const SimulatedRun& run : a.simulated) {
      CAPTURE(run.setting);
      const Candidate& c = run.setting == rec.name() ? rec : a.candidates[static_cast<size_t>(a.best_full)];
      CHECK(run.clients == c.concurrency);
      // The figure advise prints is simulate's own: the same request through simulate gives the same tokens/s.
      SimulateRequest q;
      q.setup.scenario = deployment;
      q.workload = r.workload;
      q.setup.overrides.max_running_requests = static_cast<int32_t>(c.concurrency);
      if (c.mode == KvMode::kHiSparse) {
        q.setup.overrides.device_buffer_size = c.buffer_size;
        q.setup.overrides.host_to_device_ratio = c.ratio;
      }
      const SimulationSetup setup = load_simulation(q);
      ClientSpec clients;
      clients.concurrency = static_cast<int32_t>(c.concurrency);
      clients.requests = run.requests;
      const ServingResult res = simulate(setup, c.mode, setup.cost.overlap, clients);
      CHECK(summarize(res, setup.scenario).tokens_per_s == doctest::Approx(run.tokens_per_s).epsilon(1e-9));
      const SteadyWindow w = steady_window(res);
      REQUIRE(w.found());
      CHECK(w.tokens_per_s == doctest::Approx(run.steady_tokens_per_s).epsilon(1e-9));
      // Launched with --max-running-requests = the advised concurrency, no rank holds more than the advised batch,
      // so the simulated batch cannot exceed it; the whole run, with its ramp-down, gives less than the steady window.
      CHECK(run.steady_batch_per_rank <= static_cast<double>(c.per_rank) + 1e-9);
      CHECK(run.tokens_per_s < run.steady_tokens_per_s);
      // One answer: at the batch the simulation held while every client was in flight, the advisor's step model and
      // the serving simulation agree within 10 % (the rest of the gap to the advised figure is that batch, which
      // the report prints beside it: requests wait for their rank's pool or cap while others have room).
      const double modelled = advised_tokens_at(out, a, c, run.steady_batch_per_rank);
      MESSAGE(std::string(deployment), " ", run.setting, ": advised ", c.goodput, " at ", c.per_rank, "/rank; simulated steady ",
              run.steady_tokens_per_s, " at ", run.steady_batch_per_rank, "/rank; model there ", modelled,
              "; whole run ", run.tokens_per_s);
      CHECK(run.steady_tokens_per_s == doctest::Approx(modelled).epsilon(0.10));
    }
    // What HiSparse buys over full KV, each at its own advised concurrency: the advised ratio and the simulated one
    // (steady windows) agree within 10 %, so both commands give one answer to "should I turn HiSparse on".
    if (a.simulated.size() == 2) {
      const SimulatedRun &hs = a.simulated[0], &full = a.simulated[1];
      REQUIRE(full.steady_tokens_per_s > 0);
      CHECK(hs.steady_tokens_per_s / full.steady_tokens_per_s ==
            doctest::Approx(hs.advised_goodput / full.advised_goodput).epsilon(0.10));
    }
  }
}
