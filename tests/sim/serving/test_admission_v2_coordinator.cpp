// @brief `--admission v2 --v2-coordinator current` (the default v2): simulate's admission as SGLang's current V2
// coordinator runs it (admit_request at 09f8170, through cpu_ref's HiSparseV2Admission): the short-prefix gate, each
// fallback to standard (host capacity, indexer pages, temp buffer), retraction and re-admission with a recomputed
// prefix, and the partial leaf-first eviction of the prefixes staging leaves in device rows, each worked by hand on the
// shipped DeepSeek-V3.2 node as one TP8 rank (H 4,096, K 2,048, page 64).
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/memory/hisparse_v2_admission.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;
using cpu_ref::V2Admit;

namespace {

constexpr int64_t kH = 4096, kPage = 64;

/// The shipped node as one rank, colocated prefill, its pools pinned (0 keeps the capacity model's).
Scenario one_rank(int64_t device_pool, int64_t host_pool, double ratio) {
  Scenario sc = dsv32_node();
  sc.deployment.pd_disaggregation = false;
  sc.deployment.decode.dp_attention = 1;
  if (device_pool > 0) sc.deployment.memory.device_pool_tokens = device_pool;
  if (host_pool > 0) sc.deployment.memory.host_pool_tokens = host_pool;
  if (ratio > 0) sc.deployment.hisparse.host_to_device_ratio = ratio;
  return sc;
}

ServingOptions v2(V2Coordinator rules) {
  ServingOptions o;
  o.mode = KvMode::kHiSparse;
  o.admission = AdmissionCheck::kV2;
  o.v2_coordinator = rules;
  return o;
}

int64_t admitted_as(const ServingResult& r, V2Admit a) { return r.v2_admissions[static_cast<size_t>(a)]; }

}  // namespace

TEST_CASE("v2 current: the 4,043-token prompt runs as standard (its prefix 4,032 < H 4,096), 4,096 runs as V2") {
  const Scenario sc = one_rank(0, 0, 0);
  REQUIRE(sc.deployment.hisparse.device_buffer_size == kH);  // the case's premise
  // floor(4,043 / 64) × 64 = 4,032 < 4,096: admit_request returns standard. Its KV stays in device rows: no staging
  // copy, no backup, and every selected entry is resident, so 0 misses at every step (SGLang: 0; the older project
  // rule evicted [0, 4,032) and loaded 1,925 rows at the first step, docs/swap_in.md).
  const ServingResult cur = run_serving(sc, one_request(4043, 64), v2(V2Coordinator::kCurrent));
  CHECK(cur.v2_coordinator == "current");
  CHECK(cur.finished == 1);
  CHECK(admitted_as(cur, V2Admit::kShorterThanBuffer) == 1);
  CHECK(admitted_as(cur, V2Admit::kV2) == 0);
  CHECK(cur.misses == 0);
  CHECK(cur.staging_copies == 0);
  CHECK(cur.backup_bytes == 0);
  CHECK(cur.selected > 0);
  // 4,096 tokens: tree_len 4,096 is not shorter than H: V2 (its prefix staged to the host once).
  const ServingResult at_h = run_serving(sc, one_request(4096, 64), v2(V2Coordinator::kCurrent));
  CHECK(admitted_as(at_h, V2Admit::kV2) == 1);
  CHECK(at_h.staging_copies == 1);
  // PD (the shipped node's own mode, prefill outside the scenario): the standard request's KV arrives by RDMA in HBM,
  // so nothing is copied host → device at admission; the V2 one lands in the host pool and copies its indexer keys.
  Scenario pd = sc;
  pd.deployment.pd_disaggregation = true;
  const ServingResult pd_std = run_serving(pd, one_request(4043, 64), v2(V2Coordinator::kCurrent));
  const ServingResult pd_v2 = run_serving(pd, one_request(4096, 64), v2(V2Coordinator::kCurrent));
  CHECK(pd_std.prefill_mode == "pd-external");
  CHECK(admitted_as(pd_std, V2Admit::kShorterThanBuffer) == 1);
  CHECK(pd_std.misses == 0);
  CHECK(pd_std.admission_h2d_bytes == 0);
  CHECK(admitted_as(pd_v2, V2Admit::kV2) == 1);
  CHECK(pd_v2.admission_h2d_bytes > 0);
  // The older rules (the ledger, unchanged): its gate is tree_len >= H + page = 4,160, so the request claims nothing
  // either, but the engine still stages its prompt to the host and prices every step through the swap-in's miss
  // model (the statistical model's warm-up loads at least), as the project did before: misses > 0 where SGLang has
  // none. Both select the same entries: K 2,048 per layer at each of the 63 decode steps (64 outputs, the first from
  // prefill).
  const ServingResult old = run_serving(sc, one_request(4043, 64), v2(V2Coordinator::kOlder));
  CHECK(old.v2_coordinator == "older");
  CHECK(old.finished == 1);
  CHECK(admitted_as(old, V2Admit::kV2) + admitted_as(old, V2Admit::kShorterThanBuffer) == 0);
  CHECK(old.staging_copies == 1);
  CHECK(old.misses > 0);
  CHECK(old.selected == cur.selected);
  CHECK(cur.selected % (int64_t{2048} * 63) == 0);
}

TEST_CASE("v2 current: host capacity runs the second prefix as standard") {
  // Host pool pinned to 8,192 tokens. Two 6,000-token prompts (tree_len 5,952 >= H each): the first reserves 5,952;
  // the second would need 5,952 + 5,952 = 11,904 > 8,192: standard. Both finish, the standard one with no miss.
  const Scenario sc = one_rank(0, 8192, 0);
  const ServingResult r = run_serving(sc, burst(2, 6000, 32), v2(V2Coordinator::kCurrent));
  REQUIRE(r.host_pool_tokens == 8192);
  CHECK(r.finished == 2);
  CHECK(r.aborts == 0);
  CHECK(admitted_as(r, V2Admit::kV2) == 1);
  CHECK(admitted_as(r, V2Admit::kHostCapacity) == 1);
  CHECK(r.staging_copies == 1);
}

TEST_CASE("v2 current: too few expanded indexer pages run the second prefix as standard") {
  // 100 indexer pages. A 6,000-token prompt takes 5,952 / 64 = 93; the second needs 93 > 100 − 93 = 7: standard.
  ServingOptions o = v2(V2Coordinator::kCurrent);
  o.v2_indexer_pages = 100;
  const ServingResult r = run_serving(one_rank(0, 0, 0), burst(2, 6000, 32), o);
  CHECK(r.finished == 2);
  CHECK(admitted_as(r, V2Admit::kV2) == 1);
  CHECK(admitted_as(r, V2Admit::kIndexerPages) == 1);
  // With 186 = 2 × 93 pages both run as V2.
  o.v2_indexer_pages = 186;
  CHECK(admitted_as(run_serving(one_rank(0, 0, 0), burst(2, 6000, 32), o), V2Admit::kV2) == 2);
}

TEST_CASE("v2 current: no room for the temp buffer runs the request as standard") {
  // Device pool pinned to 10,240 tokens. An 8,192-token prompt (tree_len 8,192 >= H) leaves 10,240 − 8,192 = 2,048
  // device tokens once its prefill rows are in: fewer than the H = 4,096 of the temp buffer, so standard, its whole
  // KV (8,192 + 16 → 8,256 tokens) in device rows: it fits, and decodes with no miss.
  const ServingResult r = run_serving(one_rank(10240, 0, 0), one_request(8192, 16), v2(V2Coordinator::kCurrent));
  REQUIRE(r.device_pool_tokens == 10240);
  CHECK(r.finished == 1);
  CHECK(admitted_as(r, V2Admit::kTempBuffer) == 1);
  CHECK(r.misses == 0);
  // 2,048 more device tokens (12,288 − 8,192 = 4,096 = H): room for the buffer, V2.
  const ServingResult roomy = run_serving(one_rank(12288, 0, 0), one_request(8192, 16), v2(V2Coordinator::kCurrent));
  CHECK(admitted_as(roomy, V2Admit::kV2) == 1);
}

TEST_CASE("v2 current: a retracted request comes back with its prefix recomputed, here standard first and V2 after") {
  // Device pool 13,248 tokens, host_to_device_ratio 1: a logical pool of 13,248 (207 pages); decode_reserve_ratio 0
  // (SGLang retracts: admission reserves the prompt only). A: 8,192-token prompt, 2,000 output, at 0; B: 4,000 and
  // 1,000, arriving 2 s later, when A is decoding (B must decode fewer tokens than A to be SGLang's victim; arriving
  // together, B, standard, would join decode before A, which waits for its staging copy).
  // A: room 13,248 − 8,192 = 5,056 >= H → V2 (8,192 device tokens; staged, its buffer H + page = 4,160 and its
  // prefix rows 8,192 = 12,352, 896 free). B: tree_len 3,968 < H → standard, its whole KV paged(5,000) = 5,056 device
  // tokens: 4,160 short, so HiCache evicts A's prefix (one radix node: prefill chunks of 16,384 > 8,192) and B fits.
  // Logical: A's 8,192 + B's 4,032 + their growth; 207 − 128 − 63 = 16 pages free when B joins, a page per 64
  // decoded tokens each, so they run out when d_A + d_B is about 16 × 64 = 1,024, long before either finishes. B has
  // decoded fewer: retracted (SGLang pops the fewest decoded), as often as the pool runs out again (B comes back as
  // soon as its 4,000 + d_B tokens fit the logical pool, and the two grow into it again). Every re-admission prefills
  // 4,000 + d_B tokens, whose tree_len (>= 4,096 once d_B >= 96; d_B is about (1,024 − A's lead) / 2 at the first
  // retraction and only grows) is not shorter than H: V2 each time, its buffer empty. A is never the victim.
  Scenario sc = one_rank(13248, 0, 1.0);
  sc.deployment.decode_reserve_ratio = 0;
  Workload w;
  w.name = "two";
  w.requests.push_back(RequestSpec{0, 0, 8192, 2000});
  w.requests.push_back(RequestSpec{1, 2'000'000'000, 4000, 1000});
  const ServingResult r = run_serving(sc, w, v2(V2Coordinator::kCurrent));
  REQUIRE(r.logical_pool_tokens == 13248);
  REQUIRE(r.device_pool_tokens == 13248);
  CHECK(r.retraction == "sglang retract_decode");
  CHECK(r.finished == 2);
  const int64_t n = r.retractions;
  CHECK(n >= 1);
  CHECK(r.requests[0].retractions == 0);
  CHECK(r.requests[1].retractions == n);
  // B's dropped tokens, each time its prompt and the d_B decoded so far, are prefilled again; each is a prefix of at
  // least 4,096 tokens.
  CHECK(r.recomputed_tokens == r.retracted_tokens);
  CHECK(r.retracted_tokens >= 4096 * n);
  CHECK(admitted_as(r, V2Admit::kV2) == 1 + n);             // A, then B at every re-admission
  CHECK(admitted_as(r, V2Admit::kShorterThanBuffer) == 1);  // B's first admission only
  CHECK(r.staging_copies == 1 + n);                         // A's prompt, and B's recomputed ones
  CHECK(r.requests[1].decoded == 1000 - 1);                 // B's output is kept across the retraction
  CHECK(r.v2_evictions >= 1);  // A's staged prefix, evicted for B's first admission (above)
}

TEST_CASE("v2 current: HiSparse retraction needs the current rules; --v2-coordinator parses current and older") {
  // Expected: under the older ledger, HiSparse with decode_reserve_ratio < 1 is refused, naming the rule.
  Scenario sc = one_rank(0, 0, 0);
  sc.deployment.decode_reserve_ratio = 0.5;
  CHECK_THROWS_WITH_AS(run_serving(sc, one_request(8192, 16), v2(V2Coordinator::kOlder)),
                       doctest::Contains("--admission v2 --v2-coordinator current"), Error);
  CHECK(run_serving(sc, one_request(8192, 16), v2(V2Coordinator::kCurrent)).finished == 1);
}

TEST_CASE("v2 current: a device pool with room for both prefixes evicts nothing and charges no miss, older does") {
  // Default pools (the capacity model's: far more than two requests). Two 6,000-token prompts, 32 outputs: tree_len
  // 5,952 >= H each, both V2. Staging keeps each prefix [0, 5,952) in device rows beside its H + page buffer; nothing
  // asks for device room after that, so nothing is evicted: B = E for both. Every selected position below E is in the
  // device-resident head [0, B) (a hit) and every one >= E is a resident page, so the evicted share (E - B) / n is 0
  // and no step loads a row. The older rules put both prefixes on the host at staging and price every step through
  // the miss model: misses > 0 for the same selections.
  const Scenario sc = one_rank(0, 0, 0);
  const ServingResult cur = run_serving(sc, burst(2, 6000, 32), v2(V2Coordinator::kCurrent));
  const ServingResult old = run_serving(sc, burst(2, 6000, 32), v2(V2Coordinator::kOlder));
  REQUIRE(cur.finished == 2);
  REQUIRE(old.finished == 2);
  CHECK(admitted_as(cur, V2Admit::kV2) == 2);
  CHECK(cur.v2_partial_eviction);
  CHECK(cur.v2_evictions == 0);
  CHECK(cur.v2_evicted_tokens == 0);
  CHECK(cur.v2_evicted_share_mean == 0);
  CHECK(cur.misses == 0);
  CHECK(old.misses > 0);
  CHECK(cur.selected == old.selected);
  CHECK_FALSE(old.v2_partial_eviction);  // the older rules are unchanged: no eviction record
}

TEST_CASE("v2 current: a device pool short by d tokens evicts exactly the tail nodes the CPU reference's rule gives") {
  // Radix nodes of 1,024 tokens (a node per prefill chunk: prefill_chunk_tokens 1,024). A: an 8,192-token prompt,
  // 4,000 outputs, at 0: tree_len E = 8,192, V2; staged, it holds its buffer H + page = 4,160 plus its prefix rows
  // 8,192 = 12,352 device tokens. B: a 4,000-token prompt, 1,000 outputs, at 5 s (A decoding): tree_len 3,968 < H,
  // standard, its whole KV paged(5,000) = 5,056 device tokens. The device pool is 12,352 + 5,056 - d with d = 1,536
  // (15,872 tokens): B finds 15,872 - 12,352 = 3,520 free, d = 1,536 short, so HiCache evicts A's prefix leaf first
  // with demand 1,536. The rule (core/hisparse_v2.h v2_evicted_begin, as cpu_ref's plan_v2_session calls it): the
  // last node is [floor(8,191 / 1,024) x 1,024, 8,192) = [7,168, 8,192), 1,024 < 1,536 tokens; the 512 left take
  // ceil(512 / 1,024) = 1 more node, so B_A = 7,168 - 1,024 = 6,144: [6,144, 8,192) evicted, 2,048 tokens, one cut.
  // Nothing asks for device room again (A's buffer is fixed, B's KV is reserved whole): A leaves with an evicted share
  // (8,192 - 6,144) / 8,192 = 0.25, the only V2 prefix, so the mean is 0.25.
  REQUIRE(v2_evicted_begin(8192, 1024, 1536, V2Coordinator::kCurrent) == 6144);  // the rule itself, as worked above
  ServingOptions o = v2(V2Coordinator::kCurrent);
  o.cost.prefill_chunk_tokens = 1024;
  Workload w;
  w.name = "short";
  w.requests.push_back(RequestSpec{0, 0, 8192, 4000});
  w.requests.push_back(RequestSpec{1, 5'000'000'000, 4000, 1000});
  const ServingResult r = run_serving(one_rank(15872, 0, 0), w, o);
  REQUIRE(r.device_pool_tokens == 15872);
  REQUIRE(r.finished == 2);
  REQUIRE(r.retractions == 0);
  // The premise: A was staged (ready) and still decoding when B came.
  REQUIRE(r.requests[0].ready < 5'000'000'000);
  REQUIRE(r.requests[0].finish > 5'000'000'000);
  CHECK(admitted_as(r, V2Admit::kV2) == 1);
  CHECK(admitted_as(r, V2Admit::kShorterThanBuffer) == 1);
  CHECK(r.v2_evictions == 1);
  CHECK(r.v2_evicted_tokens == 2048);
  CHECK(r.v2_evicted_share_mean == doctest::Approx(0.25));
  // d = 0 (a pool of 17,408 = 12,352 + 5,056): B fits beside A's whole prefix, nothing is evicted.
  const ServingResult roomy = run_serving(one_rank(17408, 0, 0), w, o);
  CHECK(roomy.v2_evictions == 0);
  CHECK(roomy.v2_evicted_tokens == 0);
  // The evicted tail is priced: A's misses after the cut are the statistical model's scaled by (E - B) / n > 0, so
  // the short pool loads rows where the roomy one loads none.
  CHECK(roomy.misses == 0);
  CHECK(r.misses > 0);
}
