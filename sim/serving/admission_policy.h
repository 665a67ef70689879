// @brief Admission as an interface (after Vidur's schedulers): what a request asks of a rank's pools, whether it can
// ever fit, whether it fits a rank now, what it takes there, and how its KV takes pages as it lands. Three
// implementations, one per `--admission` check (sim/serving/serving_simulation.h, AdmissionCheck): `pools` (every
// pool, host pages included, checked and taken up front), `logical` (SGLang's scheduler before the fix: the logical
// and device pools only, host pages as the KV lands, which can fail) and `v2`, by the V2 coordinator's rules:
// `current` (SGLang's V2 coordinator at 09f8170: cpu_ref's HiSparseV2Admission decides V2 or standard per request)
// or `older` (the one-home-per-token ledger of PR #35488, sim/serving/admission_ledger.h). The engine asks; the
// policy and the rank's pools decide.
// Internal to sim/serving/.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/serving/pools.h"
#include "sim/serving/serving_simulation.h"

namespace hisparse::sim::serving {

class Rank;

/// One request's ask: the pages of each pool it takes at admission and, under v2, the prompt it claims in the ledger.
struct AdmissionAsk {
  PoolNeed need;        // taken at admission (host 0 when the policy takes host pages as the KV lands)
  PoolNeed check;       // checked against the pools (the host part only where the policy checks it)
  bool claim = false;   // v2 older: an eligible request claims its page-aligned prompt
  int64_t tree = 0;     // v2 older: the claimed tokens
  int64_t seq = 0;      // v2 current: the tokens prefilled before admit_request (prompt, plus decoded after a retraction)
  int64_t standard_device = 0;  // v2 current: device tokens when it runs as standard (its whole KV in device rows)
};

/// What take() did: whether the pools gave the pages and, under v2 current, admit_request's outcome
/// (cpu_ref::V2Admit as an int; -1 under the other policies).
struct AdmissionTaken {
  bool ok = false;
  int v2_outcome = -1;
};

class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;
  virtual AdmissionCheck check() const = 0;
  /// The ask of a request of `input_tokens` whose pool need (every pool, whole request) is `need`; `page` rounds.
  virtual AdmissionAsk ask(const PoolNeed& need, int64_t input_tokens, int64_t output_tokens, const Rank& any,
                           int64_t page) const = 0;
  /// Whether the ask exceeds an empty rank of these sizes (the request is rejected, never admitted).
  virtual bool never_fits(const AdmissionAsk& a, const PoolSizes& sizes, const Rank& any) const = 0;
  /// Whether rank `g` has room now; `room` is the ask's check with the device part a policy-independent caller may
  /// have lowered (dynamic residency counts reclaimable resident KV).
  virtual bool fits(const Rank& g, const AdmissionAsk& a, const PoolNeed& room) const = 0;
  /// Takes the ask's pages (and v2's claim or quotas) for request `i` on rank `g`; ok false when the pools refused.
  virtual AdmissionTaken take(Rank& g, int64_t i, const AdmissionAsk& a, int64_t output_tokens) const = 0;
  /// Request `i` left rank `g` (finished, aborted or retracted): gives back what the policy holds beyond the pools.
  virtual void release(Rank& g, int64_t i) const;
  /// Whether request `i` keeps its prompt's device rows after staging (a v2 standard request), not just the buffer.
  virtual bool keeps_device_rows(const Rank& g, int64_t i) const;
  /// Whether request `i` runs with its whole KV resident (v2 current, standard): no staging copy, backup or miss.
  virtual bool all_resident(const Rank&, int64_t) const { return false; }
  /// Host pages for `tokens` of request `i` as its KV lands (prefill target, staging, decode backup): the pages no
  /// pool had (0 = done).
  virtual int64_t land(Rank& g, int64_t i, int64_t tokens) const = 0;
  /// Whether the decode backup takes host pages step by step (and can fail) rather than at admission.
  virtual bool lands_in_decode() const = 0;
};

/// `v2` under the current rules (admission_v2_coordinator.cpp): each rank's Rank::v2() quotas must be set.
std::unique_ptr<AdmissionPolicy> make_v2_coordinator_admission();

/// The policy of `check` (full KV: every check is the logical and device pools, the host pool unused); `rules` picks
/// v2's.
std::unique_ptr<AdmissionPolicy> make_admission_policy(AdmissionCheck check, bool hisparse,
                                                       V2Coordinator rules = V2Coordinator::kCurrent);

}  // namespace hisparse::sim::serving
