// @brief `--admission v2 --v2-coordinator older` (SGLang's one-home-per-token ledger): its arithmetic by hand, and the
// two failure modes the comments of SGLang's hisparse_hicache_admission.py record, reproduced against the older
// rules. The current coordinator's admission is tests/sim/serving/test_admission_v2_coordinator.cpp.
#include <doctest/doctest.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/serving/admission_ledger.h"
#include "sim/serving/serving_simulation.h"
#include "sim/workload/workload.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("the v2 ledger: reservable = host + usable device − claimed, eligibility by the temp buffer (hand-derived)") {
  // Host 100,000, device 50,000, temp buffer H + page = 4,096 + 64, page 64, no prefill chunk (PD).
  AdmissionLedger L(LedgerSizes{100000, 50000, 4160, 64, 0});
  // Empty: usable device = 50,000 − 1 × (4,160 + 64) = 45,776; reservable = 100,000 + 45,776.
  CHECK(L.usable_device() == 45776);
  CHECK(L.reservable_left() == 145776);
  // tree_len is the page-aligned prompt (floor); a prompt under the temp buffer is not eligible (net capacity loss).
  CHECK(L.tree_len(10000) == 9984);
  CHECK(L.eligible(10000));
  CHECK(L.eligible(4160));
  CHECK_FALSE(L.eligible(4159));  // tree_len 4,096 < 4,160
  CHECK_FALSE(L.eligible(63));    // no whole page
  // One claim of 9,984 tokens with 3,000 output tokens: usable device = 50,000 − 2 × 4,224 − 3,000 = 38,552;
  // reservable = 100,000 + 38,552 − 9,984 = 128,568.
  L.claim(7, 9984, 3000);
  CHECK(L.claimed(7));
  CHECK(L.live() == 1);
  CHECK(L.usable_device() == 38552);
  CHECK(L.reservable_left() == 128568);
  CHECK_THROWS_AS(L.claim(7, 64, 0), Error);
  L.release(7);
  L.release(7);  // a request without a claim is left alone
  CHECK(L.reservable_left() == 145776);
  // A colocated chunk comes off the device term: 50,000 − 4,224 − 16,384.
  CHECK(AdmissionLedger(LedgerSizes{0, 50000, 4160, 64, 16384}).usable_device() == 29392);
  // The device term never goes negative.
  CHECK(AdmissionLedger(LedgerSizes{1000, 100, 4160, 64, 0}).reservable_left() == 1000);
  CHECK_THROWS_AS(AdmissionLedger(LedgerSizes{1, 1, 1, 0, 0}), Error);
}

TEST_CASE("v2 avoids both failure modes SGLang records: over-admission aborts (logical) and an idle pool (pools)") {
  // The field shape of test_serving_deploy.cpp: GLM-5.1, TP 8, ratio 11, four clients with 46–63K prompts and 3,000
  // output tokens, the host pool pinned to 3 × 65,536 = 196,608 tokens, below the logical pool (over a million).
  Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  s.deployment.memory.host_pool_tokens = 3 * 65536;
  const Workload mix = glm_field_prompts();
  auto run = [&](AdmissionCheck a) {
    ServingOptions o = glm_field_clients(a);
    o.v2_coordinator = V2Coordinator::kOlder;  // the ledger
    return run_serving(s, mix, o);  // checks conservation, every pool back to empty included
  };
  const ServingResult logical = run(AdmissionCheck::kLogicalOnly), pools = run(AdmissionCheck::kPools),
                      v2 = run(AdmissionCheck::kV2);
  // Over-admission: the logical rule admits all four, host allocation fails as the KV lands: attempts are aborted
  // and sent round again.
  CHECK(logical.aborts > 0);
  int retried = 0;
  for (const auto& o : logical.requests) retried += o.retries > 0;
  CHECK(retried > 0);
  // Too strict: a host slot for every token caps admission at the host pool (231,168 host tokens for all four >
  // 196,608), so never four at once, while the device pool (tens of thousands of tokens) holds three buffers of 4,160.
  CHECK(pools.aborts == 0);
  CHECK(pools.device_pool_tokens > 40000);
  CHECK(max_step_requests(pools) < 4);
  // v2: one home per token. The four prompts' tree_len (218,880) exceed the host pool, so some tokens stay on the
  // device: all four run at once, nothing aborts, and the same eight requests finish sooner than under `pools`.
  CHECK(v2.admission == AdmissionCheck::kV2);
  CHECK(v2.aborts == 0);
  CHECK(v2.finished == 8);
  CHECK(v2.wasted_decode_tokens == 0);
  CHECK(max_step_requests(v2) == 4);
  CHECK(v2.makespan < pools.makespan);
}

TEST_CASE("v2 runs short prompts as standard requests and parses as 'v2'") {
  // A prompt under the temp buffer (H + page = 4,160) claims nothing: it keeps its KV in device rows and never
  // touches the host pool, so a host pool of one page is enough, colocated prefill included.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.pd_disaggregation = false;
  s.deployment.memory.host_pool_tokens = 64;
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  opt.admission = AdmissionCheck::kV2;
  opt.v2_coordinator = V2Coordinator::kOlder;
  const ServingResult r = run_serving(s, burst(6, 2000, 200), opt);
  CHECK(r.finished == 6);
  CHECK(r.aborts == 0);
  CHECK(parse_admission_check("v2", "--admission") == AdmissionCheck::kV2);
  CHECK(std::string(to_string(AdmissionCheck::kV2)) == "v2");
  CHECK_THROWS_WITH_AS(parse_admission_check("v3", "--admission"),
                       doctest::Contains("expected pools, logical or v2"), Error);
}

TEST_CASE("v2 paces admission at the write-back drain rate: a slower d2h link delays admissions, never aborts one") {
  // Colocated prefill: a prompt keeps its device rows until its staging copy (device → host, at the d2h link's rate)
  // finishes, and v2 admits only when those rows fit next to the ledger's ceiling. With the link 20 × slower the same
  // burst still runs without a host-pool abort, but the requests wait longer for admission.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.pd_disaggregation = false;
  // 16 prompts of 30,000 tokens per rank: the device pool (261,504 tokens) holds about 8 of them before staging.
  const Workload w = burst(128, 30000, 16);
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  opt.admission = AdmissionCheck::kV2;
  opt.v2_coordinator = V2Coordinator::kOlder;
  const ServingResult fast = run_serving(s, w, opt);
  s.hardware.pcie.d2h_bulk_bytes_per_s /= 20;
  const ServingResult slow = run_serving(s, w, opt);
  auto mean_admission_wait = [](const ServingResult& r) {
    double sum = 0;
    for (const auto& o : r.requests) sum += static_cast<double>(o.admitted - o.arrival);
    return sum / static_cast<double>(r.requests.size());
  };
  CHECK(fast.finished == 128);
  CHECK(slow.finished == 128);
  CHECK(fast.aborts == 0);
  CHECK(slow.aborts == 0);
  CHECK(mean_admission_wait(fast) > 0);
  CHECK(mean_admission_wait(slow) > mean_admission_wait(fast));
}
