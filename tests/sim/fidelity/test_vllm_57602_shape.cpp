// @brief The vLLM #57602 field point (scenarios/field/vllm-57602-glm-mi350x-no-offload.yaml): its no-offload
// throughput declines between the upper concurrencies only because vLLM preempts and recomputes; the same deployment
// with whole-request admission (nothing preempted) holds its throughput instead.
#include <doctest/doctest.h>

#include <string>

#include "sim/api/settings_table.h"
#include "sim/api/simulate_request.h"
#include "sim/fidelity/field_set.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kField = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/field/vllm-57602-glm-mi350x-no-offload.yaml";

struct Served {
  double total_tokens_per_s = 0;  // prompt + output tokens of the finished requests over the makespan (the field's)
  int64_t retractions = 0;
  int64_t finished = 0, requests = 0;
};

/// The field file's set-up (deployment, overrides, fixed lengths) with `clients` closed-loop clients sending 4 waves;
/// `preempt` false swaps vLLM's scheduler for whole-request admission (engine sglang, decode_reserve_ratio 1).
Served serve(bool preempt, int32_t clients) {
  const FieldRun run = load_field_run(kField);
  SimulateRequest q;
  q.setup.scenario = run.deployment;
  read_settings_yaml(run.overrides, run.file, "overrides", q.setup);
  q.fixed_input_tokens = run.input_tokens;
  q.fixed_output_tokens = run.output_tokens;
  SimulationSetup s = load_simulation(q, "test");
  if (!preempt) {
    s.scenario.deployment.engine = "sglang";
    s.scenario.deployment.decode_reserve_ratio = 1;
  }
  ClientSpec c;
  c.concurrency = clients;
  c.requests = 4 * int64_t{clients};
  const ServingResult r = simulate(s, KvMode::kFull, s.cost.overlap, c, /*record_steps=*/false);
  Served out;
  int64_t tokens = 0;
  for (const RequestOutcome& o : r.requests)
    if (o.finish >= 0) tokens += int64_t{o.input_tokens} + o.output_tokens;
  out.total_tokens_per_s = static_cast<double>(tokens) / (static_cast<double>(r.makespan) * 1e-9);
  out.retractions = r.retractions;
  out.finished = r.finished;
  out.requests = c.requests;
  return out;
}

}  // namespace

TEST_CASE("vLLM #57602: the no-offload decline from 8 to 16 clients is recompute preemption, and goes without it") {
  // Expectation, from the file's set-up: the pool (BF16 checkpoint, utilization 0.9) holds 672,000 tokens, 8 requests
  // of 74,000 + 1,024. At 1 client nothing is under pressure: no preemption, and both schedulers give the same
  // throughput. At 8 every client fits: still none. At 16, vLLM schedules the 9th and later requests on their first
  // chunk, they take the blocks the running ones grow into, and the newest are preempted and prefilled again: there are
  // preemptions, and the throughput falls below 8 clients'. Whole-request admission queues the 8 that do not fit and
  // runs 8 either way: no preemption, and 16 clients give 8's throughput (within 5 %), more than vLLM's at 16.
  const Served v1 = serve(true, 1), v8 = serve(true, 8), v16 = serve(true, 16);
  const Served w1 = serve(false, 1), w8 = serve(false, 8), w16 = serve(false, 16);
  for (const Served* s : {&v1, &v8, &v16, &w1, &w8, &w16}) CHECK(s->finished == s->requests);
  CHECK(v1.retractions == 0);
  CHECK(v8.retractions == 0);
  CHECK(v16.retractions > 0);
  CHECK(v16.total_tokens_per_s < v8.total_tokens_per_s);
  CHECK(w1.retractions + w8.retractions + w16.retractions == 0);
  CHECK(w1.total_tokens_per_s == doctest::Approx(v1.total_tokens_per_s).epsilon(0.01));
  CHECK(w16.total_tokens_per_s == doctest::Approx(w8.total_tokens_per_s).epsilon(0.05));
  CHECK(w16.total_tokens_per_s > v16.total_tokens_per_s);
}
