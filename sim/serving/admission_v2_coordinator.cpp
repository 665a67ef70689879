// @brief `--admission v2 --v2-coordinator current` (the default v2): simulate's admission as SGLang's current V2
// coordinator runs it (sgl-project/sglang python/sglang/srt/managers/hisparse_v2_coordinator.py, admit_request, at
// 09f8170; docs/swap_in.md, "Admission fallbacks"). The rule is cpu_ref's HiSparseV2Admission, the one the replay's
// session runs (cpu_ref/memory/hisparse_v2_admission.h), called here, not restated: run as V2 (page-aligned prefix
// to the host, an H-token buffer, a host reservation of tree_len, tree_len / page indexer pages) or as standard,
// when the prefix has no whole page, is shorter than H, or host capacity, indexer pages or the temp buffer run out.
// A standard request keeps its whole KV in device rows and is read there: no staging copy, no backup, no miss.
//
// Modelled (assumed, docs/cost_model.md): admit_request runs after prefill in SGLang; here it runs when the engine
// admits the request, as the scheduler's HiSparseV2AdmitBudget predicts it, with the device room it would see then
// (the free device pool less the prompt's rows the prefill writes, plus what evicting the tree could free: the other
// V2 requests' prefixes still in device rows, sim/serving/v2_prefix_eviction.h). When the pool is short, the
// admission evicts those prefixes, oldest first and leaf first, before it takes its pages. A V2 request's host pages cover its tree_len (the
// reservation); its unaligned tail and decode tokens stay on the device inside the buffer's pages (the engine's
// H + page shape). A retraction finishes the request's quotas (SGLang's retract_req calls request_finished); it comes
// back with prompt + decoded tokens prefilled again, so admit_request sees the recomputed prefix, and an empty buffer.
#include <algorithm>

#include "cpu_ref/memory/hisparse_v2_admission.h"
#include "sim/serving/admission_policy.h"
#include "sim/serving/rank.h"

namespace hisparse::sim::serving {

namespace {

int64_t paged(int64_t tokens, int64_t page) { return (tokens + page - 1) / page * page; }

class V2CoordinatorAdmission : public AdmissionPolicy {
 public:
  AdmissionCheck check() const override { return AdmissionCheck::kV2; }
  AdmissionAsk ask(const PoolNeed& need, int64_t seq, int64_t output, const Rank&, int64_t page) const override {
    AdmissionAsk a;
    a.need = a.check = need;
    a.need.host = a.check.host = 0;  // host pages as the prefix lands, within the reservation admit_request checked
    a.seq = seq;
    a.standard_device = std::max(need.device, paged(seq + output, page));
    return a;
  }
  bool never_fits(const AdmissionAsk& a, const PoolSizes& s, const Rank& any) const override {
    if (a.check.logical > s.logical) return true;
    const cpu_ref::HiSparseV2Admission empty(any.v2()->sizes());
    return device_need(a, empty.decide(a.seq, room(s.device, a, any))) > s.device;
  }
  bool fits(const Rank& g, const AdmissionAsk& a, const PoolNeed& free_room) const override {
    PoolNeed r = free_room;  // dynamic residency lowered the device part by what it can reclaim: keep that credit
    const int64_t credit = a.check.device - free_room.device;
    r.device = std::max<int64_t>(0, device_need(a, decide(g, a)) - credit - evictable(g));
    return g.pools().fits(r, false);
  }
  AdmissionTaken take(Rank& g, int64_t i, const AdmissionAsk& a, int64_t) const override {
    const cpu_ref::V2AdmitResult d = g.v2()->admit(i, a.seq, room(g.pools().free_tokens(1) + evictable(g), a, g));
    PoolNeed n = a.need;
    n.device = device_need(a, d);
    // HiCache evicts the staged V2 prefixes, oldest first, leaf first, until the pages fit (SGLang evicts the tree
    // before it allocates: evict_from_tree_cache).
    if (g.v2_prefixes() && n.device > g.pools().free_tokens(1))
      g.v2_prefixes()->evict(n.device - g.pools().free_tokens(1), g.pools());
    if (!g.pools().take(i, n)) {
      g.v2()->finish(i);
      return {};
    }
    return {true, static_cast<int>(d.outcome)};
  }
  int64_t land(Rank& g, int64_t i, int64_t tokens) const override {
    const int64_t tree = g.v2()->tree_len(i);
    if (tree == 0) return 0;  // standard: its KV stays in device rows
    return g.pools().grow_host(i, std::min(tokens, tree));
  }
  bool lands_in_decode() const override { return true; }
  void release(Rank& g, int64_t i) const override {
    g.v2()->finish(i);
    if (g.v2_prefixes()) g.v2_prefixes()->release(i);
  }
  bool keeps_device_rows(const Rank& g, int64_t i) const override { return !g.v2()->admitted(i); }
  bool all_resident(const Rank& g, int64_t i) const override { return !g.v2()->admitted(i); }

 private:
  /// The device room admit_request sees for the temp buffer: what the pool has free once the prompt's rows are in.
  static int64_t room(int64_t free_device, const AdmissionAsk& a, const Rank& g) {
    return std::max<int64_t>(0, free_device - paged(a.seq, g.pools().sizes().page));
  }
  static cpu_ref::V2AdmitResult decide(const Rank& g, const AdmissionAsk& a) {
    return g.v2()->decide(a.seq, room(g.pools().free_tokens(1) + evictable(g), a, g));
  }
  /// Device tokens evicting the rank's staged V2 prefixes could free (0 when they go to the host whole at staging).
  static int64_t evictable(const Rank& g) { return g.v2_prefixes() ? g.v2_prefixes()->evictable() : 0; }
  /// V2: the engine's HiSparse device shape (the buffer, or the prompt's rows until staging); standard: the whole KV.
  static int64_t device_need(const AdmissionAsk& a, const cpu_ref::V2AdmitResult& d) {
    return d.outcome == cpu_ref::V2Admit::kV2 ? a.need.device : a.standard_device;
  }
};

}  // namespace

std::unique_ptr<AdmissionPolicy> make_v2_coordinator_admission() { return std::make_unique<V2CoordinatorAdmission>(); }

}  // namespace hisparse::sim::serving
